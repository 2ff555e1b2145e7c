"""The hot loops never read a tensor value on the host (ready for CUDA-graph capture).

On CPU the test counts every host read (``Tensor.item``, ``bool``, ``int``, ``float``,
``tolist``, ``numpy``) made inside one L-BFGS iteration and one MPPI iteration: it must be zero.
Where CUDA exists, the same iterations are captured with ``torch.cuda.graph`` and replayed, and
the replay must equal an eager run.
"""

from __future__ import annotations

import contextlib

import pytest
import torch

from curobo_lite.opt import Lbfgs, LbfgsConfig, Mppi, MppiConfig
from curobo_lite.robot import Kinematics
from curobo_lite.rollout import ArmReacher, Goal, TaskConfig
from curobo_lite.types import JointState, Pose, TensorDeviceType

HOST_READS = ("item", "__bool__", "__int__", "__float__", "__index__", "tolist", "numpy")


@contextlib.contextmanager
def count_host_reads():
    """Patch the host-read methods of ``torch.Tensor``; yields a dict of call counts."""
    counts = {name: 0 for name in HOST_READS}
    originals = {name: getattr(torch.Tensor, name) for name in HOST_READS}

    def wrap(name):
        original = originals[name]

        def counted(self, *args, **kwargs):
            counts[name] += 1
            return original(self, *args, **kwargs)

        return counted

    for name in HOST_READS:
        setattr(torch.Tensor, name, wrap(name))
    try:
        yield counts
    finally:
        for name, original in originals.items():
            setattr(torch.Tensor, name, original)


def test_counter_sees_host_reads():
    x = torch.ones(3)
    with count_host_reads() as counts:
        bool(x.sum() > 0)
        x.sum().item()
        x.tolist()
    assert counts["__bool__"] == 1 and counts["item"] == 1 and counts["tolist"] == 1


def reacher(task_name: str, tensor_args: TensorDeviceType, batch_goals: int = 1) -> ArmReacher:
    task = TaskConfig.load(task_name)
    rollout = ArmReacher.from_task(task, "franka", tensor_args)
    robot = rollout.robot_config
    q = (
        robot.retract_config[None]
        + 0.3 * torch.linspace(-1, 1, batch_goals, **tensor_args.as_kwargs())[:, None]
    )
    fk = Kinematics(robot, tensor_args).forward(q)
    start = JointState.from_position(robot.retract_config[None].expand(batch_goals, -1).clone())
    rollout.update_params(Goal(goal_pose=Pose(fk.ee_position, fk.ee_quaternion)), start)
    return rollout


def lbfgs_state(rollout: ArmReacher, n_seeds: int = 4):
    task = TaskConfig.load("gradient_trajopt")
    config = LbfgsConfig.from_dict(dict(task.lbfgs, n_problems=1, num_seeds=n_seeds))
    solver = Lbfgs(config, rollout)
    ta = rollout.tensor_args
    gen = torch.Generator(device=ta.device).manual_seed(0)
    q0 = rollout.robot_config.retract_config
    x = q0 + 0.1 * torch.randn(
        n_seeds, rollout.action_horizon, rollout.d_action, generator=gen, **ta.as_kwargs()
    )
    solver._prepare(n_seeds)
    f, g = solver._evaluate(x)
    active = torch.ones(n_seeds, dtype=torch.bool, device=ta.device)
    return solver, x, f, g, active


def test_lbfgs_iteration_reads_nothing_on_the_host():
    rollout = reacher("gradient_trajopt", TensorDeviceType())
    solver, x, f, g, active = lbfgs_state(rollout)
    x, f, g, _ = solver._step(x, f, g, active)  # warm-up: first-call checks of new batch sizes
    for _ in range(3):  # past the first iteration, with curvature pairs in the history
        with count_host_reads() as counts:
            x, f, g, _ = solver._step(x, f, g, active)
        assert sum(counts.values()) == 0, counts
    assert torch.isfinite(f).all()


def test_mppi_iteration_reads_nothing_on_the_host():
    rollout = reacher("particle_mpc", TensorDeviceType())
    task = TaskConfig.load("particle_mpc")
    mppi = Mppi(MppiConfig.from_dict(dict(task.mppi, num_particles=64)), rollout)
    with torch.no_grad():
        mppi.optimize()  # warm-up: first-call allocations
        for _ in range(3):
            with count_host_reads() as counts:
                mppi.shift(1)
                result = mppi.optimize()
            assert sum(counts.values()) == 0, counts
    assert torch.isfinite(result.action).all()


def tensor_addresses(*owners) -> dict[str, int]:
    """``{owner.attribute: data_ptr}`` of every tensor attribute of ``owners``."""
    return {
        f"{type(owner).__name__}.{name}": value.data_ptr()
        for owner in owners
        for name, value in vars(owner).items()
        if isinstance(value, torch.Tensor)
    }


def test_lbfgs_iteration_keeps_its_state_at_fixed_addresses():
    """A captured iteration reads and writes the buffers it saw at capture: an attribute
    rebound to a new tensor inside ``_step`` would be read stale by every replay."""
    rollout = reacher("gradient_trajopt", TensorDeviceType())
    for line_search in ("ARMIJO", "WOLFE"):
        solver, x, f, g, active = lbfgs_state(rollout)
        solver.config.line_search = line_search
        x, f, g, _ = solver._step(x, f, g, active)
        before = tensor_addresses(solver, solver.history)
        assert "Lbfgs._trial" in before and "LbfgsHistory.s" in before
        for _ in range(3):
            x, f, g, _ = solver._step(x, f, g, active)
        assert tensor_addresses(solver, solver.history) == before, line_search


def test_mppi_iteration_keeps_its_state_at_fixed_addresses():
    rollout = reacher("particle_mpc", TensorDeviceType())
    task = TaskConfig.load("particle_mpc")
    mppi = Mppi(MppiConfig.from_dict(dict(task.mppi, num_particles=64)), rollout)
    with torch.no_grad():
        mppi.optimize()
        before = tensor_addresses(mppi)
        assert "Mppi.mean_action" in before and "Mppi.cov_action" in before
        for _ in range(3):
            mppi.shift(1)
            mppi.optimize()
    assert tensor_addresses(mppi) == before


def capture(fn, generators=()):
    """Capture ``fn()`` into a CUDA graph (on a side stream, as torch advises); private CUDA
    generators used inside must be registered with the graph."""
    graph = torch.cuda.CUDAGraph()
    for gen in generators:
        graph.register_generator_state(gen)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream), torch.cuda.graph(graph):
        out = fn()
    torch.cuda.current_stream().wait_stream(stream)
    return graph, out


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA (torch.cuda.graph)")
def test_lbfgs_iteration_replays_as_a_cuda_graph():
    rollout = reacher("gradient_trajopt", TensorDeviceType(device=torch.device("cuda", 0)))
    solver, x, f, g, active = lbfgs_state(rollout)
    x, f, g, _ = solver._step(x, f, g, active)  # warm-up: first-call checks and allocations
    h = solver.history
    state = (h.s, h.y, h.ptr, h.count, solver._trial)
    saved = [t.clone() for t in state]
    eager = solver._step(x, f, g, active)[:3]
    for dst, src in zip(state, saved):  # undo the eager step, then capture the same step
        dst.copy_(src)
    graph, captured = capture(lambda: solver._step(x, f, g, active)[:3])
    for dst, src in zip(state, saved):
        dst.copy_(src)
    graph.replay()
    torch.cuda.synchronize()
    for a, b in zip(captured, eager):
        torch.testing.assert_close(a, b)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA (torch.cuda.graph)")
def test_mppi_iteration_replays_as_a_cuda_graph():
    rollout = reacher("particle_mpc", TensorDeviceType(device=torch.device("cuda", 0)))
    task = TaskConfig.load("particle_mpc")
    mppi = Mppi(MppiConfig.from_dict(dict(task.mppi, num_particles=64)), rollout)
    with torch.no_grad():
        mppi.optimize()
        graph, result = capture(mppi.optimize, generators=(mppi._gen,))
        for _ in range(3):
            graph.replay()
        torch.cuda.synchronize()
    assert torch.isfinite(result.action).all()


# --- use_cuda_graph: what the captured calls rely on, and the replay itself -------------------


def test_start_state_keeps_its_addresses_across_steps():
    """A captured plan update reads the start state where it was at capture: each step must
    write the measured state into the same tensors, not replace them."""
    from curobo_lite.wrap import MpcSolver

    solver = MpcSolver.from_config(robot="franka", task="particle_mpc", num_particles=32)
    robot = solver.robot_config
    fk = Kinematics(robot, solver.tensor_args).forward(robot.retract_config[None] + 0.2)
    solver.update_goal(Pose(fk.ee_position, fk.ee_quaternion))
    state = JointState.from_position(robot.retract_config[None].clone())
    addresses = None
    for _ in range(4):
        state = solver.step(state).action
        start = solver.rollout.start_state
        now = [t.data_ptr() for t in (start.position, start.velocity, start.acceleration)]
        assert addresses is None or now == addresses
        addresses = now
    filtered = solver.dynamics_model.filter_robot_state(state)
    solver.rollout.update_start_state(filtered)
    torch.testing.assert_close(solver.rollout.start_state.position, filtered.position)
    torch.testing.assert_close(solver.rollout.start_state.velocity, filtered.velocity)


def test_world_revision_counts_every_edit():
    from curobo_lite.geom import WorldCollision, WorldConfig

    world = WorldCollision(
        WorldConfig.from_dict(
            {"cuboid": {"box": {"dims": [0.2, 0.2, 0.2], "pose": [0.5, 0, 0.3, 1, 0, 0, 0]}}}
        )
    )
    seen = [world.revision]
    world.update_obstacle_pose("box", [0.6, 0, 0.3, 1, 0, 0, 0])
    seen.append(world.revision)
    world.enable_obstacle("box", False)
    seen.append(world.revision)
    world.update_world(WorldConfig.from_dict({}))
    seen.append(world.revision)
    assert seen == sorted(set(seen)), seen


def test_use_cuda_graph_is_a_checked_key_and_runs_eagerly_on_cpu(monkeypatch):
    from curobo_lite.opt import cuda_graph
    from curobo_lite.wrap.mpc.solver import MpcSolverConfig

    with pytest.raises((TypeError, ValueError), match="mpc.use_cuda_graph"):
        MpcSolverConfig.from_dict({"use_cuda_graph": "yes"})
    with pytest.raises((TypeError, ValueError), match="lbfgs.use_cuda_graph"):
        LbfgsConfig.from_dict({"use_cuda_graph": 2})
    monkeypatch.setattr(cuda_graph, "_warned_cpu", False)
    calls = []
    with pytest.warns(UserWarning, match="use_cuda_graph"):
        call = cuda_graph.GraphedCall(lambda: calls.append(1), torch.device("cpu"), enabled=True)
    for _ in range(3):
        call()
    assert len(calls) == 3 and not call.captured


def mpc_commands(device: torch.device, use_cuda_graph: bool, steps: int = 12):
    """Commands of an MPC run with a goal change at a third and an obstacle move at two
    thirds: with two warm-up calls per key, each key is captured and replayed."""
    from curobo_lite.wrap import MpcSolver

    task = TaskConfig.load("particle_mpc")
    task.mpc = dict(task.mpc, use_cuda_graph=use_cuda_graph)
    post = {"dims": [0.1, 0.1, 0.6], "pose": [0.5, 0.3, 0.3, 1, 0, 0, 0]}
    solver = MpcSolver.from_config(
        robot="franka",
        task=task,
        tensor_args=TensorDeviceType(device=device),
        world={"cuboid": {"post": post}},
        num_particles=64,
    )
    robot = solver.robot_config
    kin = Kinematics(robot, solver.tensor_args)
    goals = [kin.forward(robot.retract_config[None] + d) for d in (0.2, -0.2)]
    state = JointState.from_position(robot.retract_config[None].clone())
    commands, metrics = [], []
    for k in range(steps):
        if k in (0, steps // 3):
            fk = goals[0 if k == 0 else 1]
            solver.update_goal(Pose(fk.ee_position, fk.ee_quaternion))
        if k == 2 * steps // 3:
            solver.world_collision.update_obstacle_pose("post", [0.5, 0.25, 0.3, 1, 0, 0, 0])
        result = solver.step(state)
        state = result.action
        commands.append(state.position.clone())
        metrics.append(result.metrics)
    return torch.cat(commands), metrics, solver


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA (torch.cuda.graph)")
def test_mpc_with_cuda_graph_gives_the_eager_commands():
    cuda = torch.device("cuda", 0)
    eager, eager_metrics, _ = mpc_commands(cuda, False)
    graphed, graphed_metrics, solver = mpc_commands(cuda, True)
    assert solver._graphed_plan.captures == 3  # first goal, second goal, moved obstacle
    torch.testing.assert_close(graphed, eager, rtol=1e-4, atol=1e-5)
    # the metrics are computed inside the captured call too
    for got, want in zip(graphed_metrics, eager_metrics):
        assert got.keys() == want.keys() and "world_distance" in got
        for key in got:
            assert got[key] == pytest.approx(want[key], rel=1e-3, abs=1e-5), key


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA (torch.cuda.graph)")
@pytest.mark.parametrize("line_search", ["ARMIJO", "WOLFE"])
def test_lbfgs_with_cuda_graph_gives_the_eager_result(line_search):
    rollout = reacher("gradient_trajopt", TensorDeviceType(device=torch.device("cuda", 0)))
    task = TaskConfig.load("gradient_trajopt")
    results = []
    for use_cuda_graph in (False, True):
        options = dict(
            task.lbfgs,
            n_problems=1,
            num_seeds=4,
            use_cuda_graph=use_cuda_graph,
            line_search=line_search,
        )
        solver = Lbfgs(LbfgsConfig.from_dict(options), rollout)
        gen = torch.Generator(device="cuda").manual_seed(0)
        q0 = rollout.robot_config.retract_config
        x = q0 + 0.1 * torch.randn(
            4, rollout.action_horizon, rollout.d_action, generator=gen, device="cuda"
        )
        results.append(solver.optimize(x))
    eager, graphed = results
    assert graphed.n_iters == eager.n_iters
    torch.testing.assert_close(graphed.best_cost, eager.best_cost, rtol=1e-4, atol=1e-6)
    torch.testing.assert_close(graphed.best_action, eager.best_action, rtol=1e-4, atol=1e-5)


def test_mpc_step_metrics_with_a_world_on_cpu():
    """The helper of the CUDA comparison, eagerly on the CPU: every step's metrics (computed
    with the plan, read to the host at once) hold the errors, the cost and the clearance."""
    commands, metrics, _ = mpc_commands(torch.device("cpu"), False, steps=4)
    assert torch.isfinite(commands).all() and len(metrics) == 4
    for m in metrics:
        assert {"position_error", "rotation_error", "cost", "world_distance"} <= m.keys()
        assert m["limit_violation"] == 0.0 and m["limit_clamped"] in (0.0, 1.0)
        assert all(isinstance(value, float) for value in m.values())


# --- graphs kept across solves: the rollout's goal in fixed buffers, a key of the rest -----------


def _pose_goal(rollout: ArmReacher, offset: float) -> Goal:
    robot = rollout.robot_config
    fk = Kinematics(robot, rollout.tensor_args).forward(robot.retract_config[None] + offset)
    return Goal(goal_pose=Pose(fk.ee_position, fk.ee_quaternion))


def test_rollout_owns_its_goal_and_keys_what_a_graph_cannot_see():
    rollout = reacher("gradient_trajopt", TensorDeviceType())
    start = rollout.start_state.clone()
    goal = _pose_goal(rollout, 0.1)
    rollout.update_params(goal, start)
    kept = rollout.goal.goal_pose.position
    key = rollout.graph_key()
    # the caller's tensors are copied, not kept: editing them does not reach the rollout
    goal.goal_pose.position.add_(1.0)
    assert not torch.equal(rollout.goal.goal_pose.position, goal.goal_pose.position)
    # a new goal and start of the same shapes land in the same tensors: the same key
    other = _pose_goal(rollout, -0.2)
    rollout.update_params(other, JointState.from_position(start.position + 0.01))
    assert rollout.goal.goal_pose.position.data_ptr() == kept.data_ptr()
    torch.testing.assert_close(rollout.goal.goal_pose.position, other.goal_pose.position)
    assert rollout.graph_key() == key
    # what a captured rollout cannot see changes the key
    changes = {
        "cost weight": lambda: rollout.costs["pose_cost"].update_weight(
            rollout.costs["pose_cost"].weight * 2
        ),
        "cost weight edited in place": lambda: setattr(
            rollout.costs["smooth_cost"].config, "jerk_weight", 2.0
        ),
        "cost switched off": lambda: setattr(rollout.costs["bound_cost"], "enabled", False),
        "time steps": lambda: rollout.dynamics_model.update_traj_dt(0.03),
        "goal batch": lambda: rollout.update_params(
            Goal(goal_pose=Pose(other.goal_pose.position.repeat(2, 1))),
            JointState.from_position(start.position.repeat(2, 1)),
        ),
    }
    for name, change in changes.items():
        before = rollout.graph_key()
        change()
        assert rollout.graph_key() != before, name


class _RecordingCall:
    """Stands in for GraphedCall on a CPU: runs eagerly and records the keys it is called with."""

    made: list[_RecordingCall] = []

    def __init__(self, fn, device, enabled, warmup_calls=2, generators=()):
        self.fn, self.keys = fn, []
        _RecordingCall.made.append(self)

    def __call__(self, key=None):
        self.keys.append(key)
        return self.fn()


def test_lbfgs_keeps_one_graph_per_shape_across_solves(monkeypatch):
    """With use_cuda_graph, consecutive solves of the same shape replay one graph (one key)
    while the goal changes; a cost's new weight asks for another capture."""
    from curobo_lite.opt import gradient_base

    monkeypatch.setattr(gradient_base, "graphs_available", lambda device, requested: requested)
    monkeypatch.setattr(gradient_base, "GraphedCall", _RecordingCall)
    _RecordingCall.made = []
    rollout = reacher("gradient_trajopt", TensorDeviceType())
    task = TaskConfig.load("gradient_trajopt")
    options = dict(task.lbfgs, n_problems=1, num_seeds=4, use_cuda_graph=True, n_iters=3)
    solver = Lbfgs(LbfgsConfig.from_dict(options), rollout)
    start = rollout.start_state.clone()
    seeds = rollout.robot_config.retract_config.expand(4, rollout.action_horizon, -1).clone()
    trial, history = [], []
    for offset in (0.1, -0.2, 0.3):
        rollout.update_params(_pose_goal(rollout, offset), start)
        solver.optimize(seeds)
        trial.append(solver._trial.data_ptr())
        history.append(solver.history.s.data_ptr())
    (call,) = _RecordingCall.made
    assert len(set(call.keys)) == 1 and len(call.keys) == 9
    assert len(set(trial)) == 1 and len(set(history)) == 1
    rollout.costs["pose_cost"].update_weight(rollout.costs["pose_cost"].weight * 2)
    solver.optimize(seeds)
    assert call.keys[-1] != call.keys[0]
    # one graph per batch shape, the four most recent kept
    options["num_seeds"] = None
    solver = Lbfgs(LbfgsConfig.from_dict(options), rollout)
    for batch in range(1, 7):
        solver.optimize(seeds[:1].expand(batch, -1, -1).contiguous())
    assert len(_RecordingCall.made) == 1 + 6
    assert sorted(shape[0] for shape in solver._graphs) == [3, 4, 5, 6]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA (torch.cuda.graph)")
def test_lbfgs_graph_replayed_across_goals_gives_the_eager_results():
    cuda = TensorDeviceType(device=torch.device("cuda", 0))
    task = TaskConfig.load("gradient_trajopt")
    results = {}
    for use_cuda_graph in (False, True):
        rollout = reacher("gradient_trajopt", cuda)
        options = dict(task.lbfgs, n_problems=1, num_seeds=4, use_cuda_graph=use_cuda_graph)
        solver = Lbfgs(LbfgsConfig.from_dict(options), rollout)
        start = rollout.start_state.clone()
        seeds = rollout.robot_config.retract_config.expand(4, rollout.action_horizon, -1)
        runs = []
        for offset in (0.1, -0.2, 0.3):
            rollout.update_params(_pose_goal(rollout, offset), start)
            runs.append(solver.optimize(seeds.clone()))
        results[use_cuda_graph] = runs
        if use_cuda_graph:
            ((_, call),) = solver._graphs.values()
            assert call.captures == 1  # one capture, replayed for all three goals
    for eager, graphed in zip(results[False], results[True]):
        assert graphed.n_iters == eager.n_iters
        torch.testing.assert_close(graphed.best_cost, eager.best_cost, rtol=1e-4, atol=1e-6)
        torch.testing.assert_close(graphed.best_action, eager.best_action, rtol=1e-4, atol=1e-5)
