"""MPC on a CPU: the rollout's forward kinematics and world cost on a helper thread
(``mpc.cpu_overlap``, :mod:`curobo_lite.rollout.overlap`) give the same numbers as the
sequential rollout, and ``mpc.cpu_torch_threads`` holds torch's intra-op threads only for the
step."""

from __future__ import annotations

import os
import threading

import pytest
import torch
from forked_child import check_in_forked_child

from curobo_lite.geom import WorldConfig
from curobo_lite.rollout import ArmReacher, Goal, TaskConfig
from curobo_lite.rollout import overlap as overlap_module
from curobo_lite.rollout.overlap import OVERLAP_MIN_CONFIGS
from curobo_lite.types import JointState, Pose, TensorDeviceType
from curobo_lite.types.errors import InputValueError
from curobo_lite.wrap import MpcSolver

WORLD = {
    "cuboid": {
        "table": {"dims": [1.26, 1.4, 0.04], "pose": [0.47, 0.0, -0.02, 1, 0, 0, 0]},
        "post": {"dims": [0.05, 0.05, 0.6], "pose": [0.4, -0.2, 0.3, 0.96, 0.0, 0.28, 0.0]},
    },
    "sphere": {"ball": {"radius": 0.08, "position": [0.35, 0.1, 0.45]}},
}
GOAL = [0.45, 0.1, 0.35, 0.0, 1.0, 0.0, 0.0]


def _reacher(self_collision: bool) -> ArmReacher:
    task = TaskConfig.load("particle_mpc")
    if self_collision:
        task.cost = dict(task.cost, self_collision_cost={"enabled": True, "weight": 5000.0})
    reacher = ArmReacher.from_task(task, "franka", TensorDeviceType())
    reacher.attach_world(WorldConfig.load(WORLD))
    robot = reacher.robot_config
    start = JointState.from_position(robot.retract_config[None].clone())
    reacher.update_params(Goal(goal_pose=Pose.from_list(GOAL)), start)
    return reacher


@pytest.mark.parametrize("self_collision", [False, True])
def test_overlapped_rollout_equals_the_sequential_one(self_collision, monkeypatch):
    reacher = _reacher(self_collision)
    horizon, dof = reacher.dynamics_model.horizon, reacher.robot_config.dof
    # a tracked plan too, so every kind of term is there
    reference = JointState.from_position(
        reacher.robot_config.retract_config.expand(1, horizon, dof).clone()
    )
    reacher.update_reference(reference)
    batch = OVERLAP_MIN_CONFIGS // horizon + 7
    actions = 3.0 * torch.randn(batch, horizon, dof, generator=torch.Generator().manual_seed(2))
    fk_threads = {False: set(), True: set()}
    kinematics = reacher.dynamics_model.kinematics
    forward = kinematics.forward

    def recorded(*args, **kwargs):
        fk_threads[reacher.cpu_overlap].add(threading.get_ident())
        return forward(*args, **kwargs)

    kinematics.forward = recorded
    # the overlapped rollout's chunks (replayed launches call no Python forward kinematics)
    real_init = overlap_module.SharedPass.__init__

    def recording_init(self, row_pass, *args, **kwargs):
        run = row_pass.run

        def recorded_run(begin: int, end: int) -> None:
            fk_threads[True].add(threading.get_ident())
            run(begin, end)

        real_init(self, row_pass._replace(run=recorded_run), *args, **kwargs)

    monkeypatch.setattr(overlap_module.SharedPass, "__init__", recording_init)
    results = {}
    with torch.no_grad():
        # the overlapped rollout offers its forward kinematics to the helper thread, and this
        # thread takes it back when it gets there first: run it until the helper has taken it
        # once (every run is compared below)
        for overlap in (False,) + (True,) * 10:
            reacher.cpu_overlap = overlap
            result = reacher.rollout_fn(actions)
            results.setdefault(overlap, []).append(
                (
                    result.costs.clone(),
                    result.total.clone(),
                    {name: term.clone() for name, term in reacher.cost_terms.items()},
                    result.state.kinematics.link_position.clone(),
                )
            )
            if overlap and fk_threads[True] - {threading.get_ident()}:
                break
    (sequential,) = results[False]
    # the overlapped rollout ran forward kinematics on another thread too, the sequential one
    # only here
    assert fk_threads[False] == {threading.get_ident()}
    assert fk_threads[True] - {threading.get_ident()}
    for overlapped in results[True]:
        _assert_same_rollout(overlapped, sequential, self_collision)


def _assert_same_rollout(overlapped: tuple, sequential: tuple, self_collision: bool) -> None:
    assert list(overlapped[2]) == list(sequential[2])  # the same terms, in the same order
    assert "tracking_cost" in sequential[2] and "primitive_collision_cost" in sequential[2]
    assert ("self_collision_cost" in sequential[2]) == self_collision
    assert sequential[2]["primitive_collision_cost"].gt(0).any()
    for name in sequential[2]:
        assert torch.equal(overlapped[2][name], sequential[2][name]), name
    for got, expected in zip(overlapped[:2] + overlapped[3:], sequential[:2] + sequential[3:]):
        assert torch.equal(got, expected)


def test_small_or_gradient_rollouts_stay_on_this_thread():
    reacher = _reacher(False)
    reacher.cpu_overlap = True
    horizon, dof = reacher.dynamics_model.horizon, reacher.robot_config.dof
    small = torch.zeros(OVERLAP_MIN_CONFIGS // horizon - 1, horizon, dof)
    big = torch.zeros(OVERLAP_MIN_CONFIGS // horizon + 1, horizon, dof)
    with torch.no_grad():
        assert not reacher._overlaps(small)
        assert reacher._overlaps(big)
    assert not reacher._overlaps(big)  # grad mode on: autograd runs on one thread


def test_step_holds_torch_threads_only_for_the_step():
    solver = MpcSolver.from_config(robot="franka", task="particle_mpc", num_particles=100)
    solver.update_goal(Pose.from_list(GOAL))
    state = JointState.from_position(solver.robot_config.retract_config[None].clone())
    seen = []
    step = solver._step

    def recorded(*args):
        seen.append(torch.get_num_threads())
        return step(*args)

    solver._step = recorded
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(3)
        solver.step(state)
        assert seen == [1] and torch.get_num_threads() == 3
        bad = JointState.from_position(state.position + 100.0)
        with pytest.raises(InputValueError, match="current_state"):
            solver.step(bad)
        assert torch.get_num_threads() == 3
        solver.config.cpu_torch_threads = None  # torch's own setting
        solver.step(state)
        assert seen[-1] == 3
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("cpu_torch_threads", 0, "mpc.cpu_torch_threads"),
        ("cpu_torch_threads", 1.5, "mpc.cpu_torch_threads"),
        ("cpu_overlap", "sometimes", "mpc.cpu_overlap"),
        ("fused_rollout", "yes please", "mpc.fused_rollout"),
    ],
)
def test_bad_cpu_options_are_named(key, value, message):
    task = TaskConfig.load("particle_mpc")
    task.mpc = dict(task.mpc, **{key: value})
    with pytest.raises((InputValueError, TypeError, ValueError), match=message):
        MpcSolver.from_config(robot="franka", task=task)


@pytest.mark.parametrize("fused", [True, False])
def test_the_task_file_switches_the_fused_rollout(fused):
    task = TaskConfig.load("particle_mpc")
    task.mpc = dict(task.mpc, fused_rollout=fused)
    solver = MpcSolver.from_config(robot="franka", task=task)
    assert solver.rollout.fused_rollout is fused


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
def test_overlapped_rollout_runs_in_a_forked_child():
    """A child forked after the helper thread started gets a helper of its own (the parent's
    thread does not exist there: a job for it would wait forever). One torch thread: with
    more, torch's OpenMP pool hangs a forked child by itself, overlap or not."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        _roll_out_in_a_forked_child()
    finally:
        torch.set_num_threads(threads)


def _roll_out_in_a_forked_child() -> None:
    reacher = _reacher(False)
    reacher.cpu_overlap = True
    horizon, dof = reacher.dynamics_model.horizon, reacher.robot_config.dof
    actions = torch.zeros(OVERLAP_MIN_CONFIGS // horizon + 1, horizon, dof)
    with torch.no_grad():
        expected = reacher.rollout_fn(actions).total.clone()  # starts the helper here

    def roll_out_again() -> bool:
        with torch.no_grad():
            return torch.equal(reacher.rollout_fn(actions).total, expected)

    check_in_forked_child(roll_out_again, "rollout")


def test_measured_state_metrics_run_beside_the_rollouts_kinematics():
    """With ``cpu_overlap`` the step computes the measured state's metrics (pose errors,
    clearances) on this thread while the helper runs the rollout's forward kinematics; the
    commands and metrics equal those of the sequential step, which computes them after the
    plan update, bit for bit, over a closed loop that comes near the obstacles."""
    task = TaskConfig.load("particle_mpc")
    task.cost = dict(task.cost, self_collision_cost={"enabled": True, "weight": 5000.0})
    solvers = {}
    for overlap in (False, True):
        task.mpc = dict(task.mpc, cpu_overlap=overlap)
        solver = MpcSolver.from_config(robot="franka", task=task, world=WorldConfig.load(WORLD))
        solver.update_goal(Pose.from_list(GOAL))
        solvers[overlap] = solver
    inside_rollout = {False: [], True: []}
    for overlap, solver in solvers.items():
        rollout_fn, state_metrics = solver.rollout.rollout_fn, solver._measured.state_metrics
        depth = [0]

        def in_rollout(*args, rollout_fn=rollout_fn, depth=depth):
            depth[0] += 1
            try:
                return rollout_fn(*args)
            finally:
                depth[0] -= 1

        def recorded(*args, state_metrics=state_metrics, depth=depth, seen=inside_rollout[overlap]):
            seen.append(depth[0] > 0)
            return state_metrics(*args)

        solver.rollout.rollout_fn = in_rollout
        solver._measured.state_metrics = recorded
    states = {
        overlap: JointState.from_position(s.robot_config.retract_config[None].clone())
        for overlap, s in solvers.items()
    }
    for _ in range(8):
        results = {overlap: solvers[overlap].step(states[overlap]) for overlap in solvers}
        sequential, overlapped = results[False], results[True]
        assert list(overlapped.metrics) == list(sequential.metrics)
        assert {"world_distance", "self_distance", "position_error"} <= set(sequential.metrics)
        assert overlapped.metrics == sequential.metrics
        for name in ("position", "velocity", "acceleration"):
            assert torch.equal(getattr(overlapped.action, name), getattr(sequential.action, name))
        states = {o: JointState(r.action.position, r.action.velocity) for o, r in results.items()}
    assert inside_rollout == {False: [False] * 8, True: [True] * 8}
    assert solvers[True].rollout.beside_kinematics is None  # nothing left for a later rollout


def test_serial_launches_are_per_thread_and_leave_nothing_behind():
    """Two threads inside :func:`serial_cpu_launches` at once, leaving in the other order than
    they entered (as the fused rollout's two threads may): each sees one worker while inside,
    and afterwards the launch split is torch's again (a process-wide flag restored by the wrong
    thread stuck at one worker, and made ``torch_cpu_threads`` a no-op)."""
    import curobo_lite.kernels.launch as launch

    inside_a, inside_b, a_left = threading.Event(), threading.Event(), threading.Event()
    seen = {}

    def a():
        with launch.serial_cpu_launches():
            inside_a.set()
            inside_b.wait(5)
            seen["a"] = launch.cpu_launch_workers()
        a_left.set()

    def b():
        inside_a.wait(5)
        with launch.serial_cpu_launches():
            inside_b.set()
            a_left.wait(5)
            seen["b"] = launch.cpu_launch_workers()

    threads = [threading.Thread(target=a), threading.Thread(target=b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert seen == {"a": 1, "b": 1}
    assert launch._cpu_workers is None
    assert launch.cpu_launch_workers() == torch.get_num_threads()


def test_an_mpc_step_leaves_the_launch_split_as_it_was():
    import curobo_lite.kernels.launch as launch

    solver = MpcSolver.from_config(robot="franka", task="particle_mpc")
    solver.update_goal(Pose.from_list([0.4, 0.2, 0.4, 0.0, 1.0, 0.0, 0.0]))
    state = JointState.from_position(solver.robot_config.retract_config[None].clone())
    for _ in range(3):
        solver.step(state)
    assert launch._cpu_workers is None
    assert launch.cpu_launch_workers() == torch.get_num_threads()
