"""MPC benchmark: our whole MpcSolver.step and one MPPI iteration beside pytorch_mppi's command,
on the same problem, with and without a world.

Same problem on both sides: the Franka, 400 particles, horizon 30, ACCELERATION control with
semi-implicit Euler at a uniform 20 ms, and the same costs (end-effector pose with running and
terminal weights, joint position/velocity bounds, acceleration smoothness) evaluated by our cost
classes and our forward kinematics. pytorch_mppi rolls out step by step through callables; we roll
out the whole batch at once with the Warp kernel. pytorch_mppi's ``command`` is what a control
loop pays per step (shift, sampling, rollout, update); ours is the whole ``MpcSolver.step``
(state checks, filter, shift, MPPI iteration, the limited command and the step's metrics) on a
task with the same model and costs, and one MPPI iteration (shift + optimize). "world": the
bundled ``table`` world on both sides (``primitive_collision_cost``, 4 cm activation, weight
5000; pytorch_mppi's running cost calls the same ``WorldCollision.sphere_distance`` on the
spheres of our forward kinematics). Ours and theirs are timed in five alternating rounds, and a
speedup is the median of the rounds' ratios (with their range), so that a drift of the machine's
speed during the run weighs on both sides alike. On a CPU our step runs as its task says
(``mpc.cpu_torch_threads: 1`` during the step, ``mpc.cpu_overlap: auto``: forward kinematics and
the world cost on a helper thread while it runs beside the calling thread; the measured
parallelism is ``overlap_parallelism`` in the output), so pytorch_mppi's ``command`` is timed
in the same rounds both with torch's threads and with one thread, and the step's ratio is to
the faster of the two.
The MPPI iteration runs on one torch thread too and is compared with the faster of the two.
Also timed: ``MpcSolver.step`` with the bundled
``particle_mpc`` task (what the closed loop runs: knot sampling, stop and null-space costs), with
and without the table.

On CUDA the iteration and the step are also timed replayed from CUDA graphs
(``use_cuda_graph: true``).

Issue #30's real-time criteria, printed last with their targets, are read from these rows:

- ``particle_mpc_step_table``: the whole ``MpcSolver.step`` of the bundled ``particle_mpc`` task
  (400 particles x 30 steps, its costs, world collision on) among the bundled ``table`` world;
  target median <= 10 ms on the 2-core CPU (50 Hz control).
- ``free space`` / ``ours_mpc_step``: the whole step on the same problem and costs as
  pytorch_mppi's ``command`` (``same_task``: Gaussian samples, pose, bound and smoothness
  costs); target median <= 5 ms and >= 4x ``command`` in the same run.

The deployed-task rows also report the per-process CPU time per step (``*_cpu``, median and
minimum: less sensitive than wall time to other processes on a shared machine) and the load
average at the start; so does the free-space step beside pytorch_mppi's ``command`` on one torch
thread (``step_speedup_cpu``); compare numbers only within one run or on a quiet machine.

Usage: ``python benchmarks/mpc.py [--threads N] [--device cuda]``; writes
``benchmarks/results/mpc.json``. pytorch_mppi: ``pip install --no-deps pytorch-mppi`` (optional;
skipped when missing).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from functools import partial

import torch
from timing import timeit as _timeit
from timing import write_json

from curobo_lite.opt import Mppi, MppiConfig
from curobo_lite.opt.cuda_graph import GraphedCall
from curobo_lite.robot import Kinematics
from curobo_lite.rollout import ArmReacher, Goal, TaskConfig, overlap
from curobo_lite.rollout.cost import BoundCost, PoseCost, SmoothnessCost
from curobo_lite.types import JointState, Pose, TensorDeviceType
from curobo_lite.wrap import MpcSolver

timeit = partial(_timeit, min_time=0.4, min_reps=10)


def cpu_and_wall(fn: Callable[[], object], device: torch.device, reps: int = 40) -> dict:
    """Median and minimum wall and per-process CPU seconds per call of ``fn`` over ``reps``
    calls after a warm-up (CUDA synchronized before each clock read)."""

    sync = partial(torch.cuda.synchronize, device) if device.type == "cuda" else lambda: None
    timeit(fn, device, min_time=0.0, min_reps=3, max_reps=3)  # warm-up
    wall, cpu = [], []
    for _ in range(reps):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        sync()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return {
        "median": statistics.median(wall),
        "min": min(wall),
        "cpu_median": statistics.median(cpu),
        "cpu_min": min(cpu),
    }


ROUNDS = 5  # alternating rounds of ours and pytorch_mppi

PARTICLES, HORIZON, DT = 400, 30, 0.02
COSTS = {
    "pose_cost": {"terminal_weight": [60.0, 15.0], "run_weight": [15.0, 4.0]},
    "bound_cost": {
        "bound_weight": [5000.0, 5000.0, 0.0, 0.0],
        "activation_distance": [0.05, 0.1, 0.1, 0.1],
    },
    "smooth_cost": {"acceleration_weight": 0.002},
}


WORLD = "table"
COLLISION = {"weight": 5000.0, "activation_distance": 0.04}


def same_task(world: bool) -> TaskConfig:
    """The benchmark's problem as a task: uniform 20 ms steps, the shared costs (and the world
    collision cost with ``world``), Gaussian sampling, one iteration per step."""
    task = TaskConfig.load("particle_mpc")
    task.model = {
        "horizon": HORIZON,
        "control_space": "ACCELERATION",
        "dt_traj_params": {"base_dt": DT},
    }
    task.cost = dict(COSTS, **({"primitive_collision_cost": COLLISION} if world else {}))
    task.mppi = dict(task.mppi, num_particles=PARTICLES, n_iters=1, sample_mode="GAUSSIAN")
    task.mpc = {"shift_steps": 1, "control_dt": DT}
    return task


def problem(tensor_args: TensorDeviceType, world: bool = False):
    task = same_task(world)
    reacher = ArmReacher.from_task(task, "franka", tensor_args)
    if world:
        reacher.attach_world(WORLD)
    robot = reacher.robot_config
    fk = Kinematics(robot, tensor_args).forward(robot.retract_config[None] + 0.3)
    goal = Pose(fk.ee_position, fk.ee_quaternion)
    start = JointState.from_position(robot.retract_config[None].clone())
    reacher.update_params(Goal(goal_pose=goal), start)
    mppi_options = dict(task.mppi, num_particles=PARTICLES, n_iters=1, sample_mode="GAUSSIAN")
    return reacher, goal, mppi_options


def ours_iteration(reacher, mppi_options, cuda_graph: bool = False) -> Callable[[], object]:
    """One shift + MPPI iteration; with ``cuda_graph`` (CUDA only) replayed from a graph."""
    mppi = Mppi(MppiConfig.from_dict(mppi_options), reacher)

    def iterate():
        with torch.no_grad():
            mppi.shift(1)
            return mppi.optimize()

    if not cuda_graph:
        return iterate
    return GraphedCall(iterate, reacher.tensor_args.device, True, generators=(mppi._gen,))


def mpc_solver(
    tensor_args: TensorDeviceType,
    goal: Pose,
    cuda_graph: bool,
    task: TaskConfig | None = None,
    world: str | None = None,
) -> MpcSolver:
    task = task or TaskConfig.load("particle_mpc")
    task.mpc = dict(task.mpc, use_cuda_graph=cuda_graph)
    solver = MpcSolver.from_config(robot="franka", task=task, tensor_args=tensor_args, world=world)
    solver.update_goal(goal)
    return solver


def pytorch_mppi_iteration(reacher, goal, mppi_options, tensor_args) -> Callable[[], object]:
    from pytorch_mppi import MPPI

    robot = reacher.robot_config
    kinematics = Kinematics(robot, tensor_args)
    dof = robot.dof
    pose_cost = PoseCost.from_dict(COSTS["pose_cost"], tensor_args)
    bound_cost = BoundCost.from_dict(
        COSTS["bound_cost"], tensor_args, joint_limits=robot.joint_limits
    )
    smooth_cost = SmoothnessCost.from_dict(COSTS["smooth_cost"], tensor_args)
    world = reacher.world_collision
    run_weights = pose_cost.config.run_weight
    # the bound cost as a pytorch_mppi user writes it (plain torch, per step): BoundCost's
    # formula, sum_q w_q |x - clamp(x, lower_q, upper_q)|^2 over position and velocity
    bounds = bound_cost.config.activation_bounds()
    weights = bound_cost.config.bound_weight * bound_cost.config.weight

    def torch_bound_cost(q, qd):
        cost = q.new_zeros(q.shape[0])
        for i, (name, x) in enumerate((("position", q), ("velocity", qd))):
            excess = x - torch.clamp(x, bounds[name][0], bounds[name][1])
            cost = cost + weights[i] * excess.square().sum(-1)
        return cost

    def dynamics(state, action):
        q, qd = state[:, :dof], state[:, dof:]
        qd = qd + action * DT
        return torch.cat((q + qd * DT, qd), dim=1)

    def joint_state(state, action):
        q, qd = state[:, None, :dof], state[:, None, dof:]
        return JointState(q, qd, action[:, None])

    def collision_cost(fk):
        spheres = reacher.dynamics_model.kinematics.world_spheres(fk.link_spheres)
        act = COLLISION["activation_distance"]
        result = world.sphere_distance(spheres, activation_distance=act, max_distance=act)
        return COLLISION["weight"] * result.cost.sum(-1)

    def running_cost(state, action):
        fk = kinematics.forward(state[:, :dof], spheres=world is not None)
        position_error = (fk.ee_position - goal.position).norm(dim=-1)
        dot = (fk.ee_quaternion * goal.quaternion).sum(-1).abs().clamp(max=1.0)
        rotation_error = 2.0 * torch.acos(dot)
        js = joint_state(state, action)
        collision = 0.0 if world is None else collision_cost(fk)
        return (
            collision
            + run_weights[0] * position_error
            + run_weights[1] * rotation_error
            + torch_bound_cost(state[:, :dof], state[:, dof:])
            + smooth_cost.forward(js)[:, 0]
        )

    def terminal_cost(states, actions):
        final = states[0, :, -1, :dof]
        fk = kinematics.forward(final)
        cost = pose_cost.forward(fk.ee_position[:, None], fk.ee_quaternion[:, None], goal)
        return cost[:, -1]

    sigma = torch.eye(dof, **tensor_args.as_kwargs()) * float(mppi_options["init_cov"])
    controller = MPPI(
        dynamics,
        running_cost,
        2 * dof,
        sigma,
        num_samples=PARTICLES,
        horizon=HORIZON,
        device=tensor_args.device,
        terminal_state_cost=terminal_cost,
        lambda_=float(mppi_options["beta"]),
        u_min=reacher.action_bound_lows,
        u_max=reacher.action_bound_highs,
    )
    state = torch.cat((robot.retract_config, torch.zeros(dof, **tensor_args.as_kwargs())))

    def iterate():
        with torch.no_grad():
            return controller.command(state)

    return iterate


def with_threads(fn: Callable[[], object], threads: int) -> Callable[[], object]:
    """``fn`` run with ``threads`` torch intra-op threads (restored after each call)."""

    def run():
        before = torch.get_num_threads()
        torch.set_num_threads(threads)
        try:
            return fn()
        finally:
            torch.set_num_threads(before)

    return run


def side_by_side(
    mine, theirs, device, min_time: float = 0.4, theirs_single=None
) -> tuple[float, float, float, list, float | None]:
    """Alternating rounds: ``(mine, theirs, median ratio, [min ratio, max ratio], theirs on one
    torch thread)``. With ``theirs_single`` (``theirs`` on one torch thread, timed in the same
    rounds) a round's ratio is to the faster of the two: our step chooses its own threads
    (``mpc.cpu_torch_threads``), so pytorch_mppi gets its better setting too."""
    rounds = [
        (
            timeit(mine, device, min_time=min_time),
            timeit(theirs, device, min_time=min_time),
            None if theirs_single is None else timeit(theirs_single, device, min_time=min_time),
        )
        for _ in range(ROUNDS)
    ]
    ratios = sorted(min(b, b if c is None else c) / a for a, b, c in rounds)
    single = None if theirs_single is None else statistics.median(c for _, _, c in rounds)
    return (
        statistics.median(a for a, _, _ in rounds),
        statistics.median(b for _, b, _ in rounds),
        statistics.median(ratios),
        [ratios[0], ratios[-1]],
        single,
    )


def compare(tensor_args, device, world: bool) -> dict:
    """One problem (free space or the table): our step and iteration vs pytorch_mppi."""
    reacher, goal, mppi_options = problem(tensor_args, world)
    ours = ours_iteration(reacher, mppi_options)
    if device.type == "cpu":  # on the step's torch threads (mpc.cpu_torch_threads: 1)
        ours = with_threads(ours, 1)
    solver = mpc_solver(tensor_args, goal, False, same_task(world), WORLD if world else None)
    state = JointState.from_position(solver.robot_config.retract_config[None].clone())

    def step():
        return solver.step(state)

    rows: dict = {}
    try:
        baseline = pytorch_mppi_iteration(reacher, goal, mppi_options, tensor_args)
    except ImportError:
        print("pytorch_mppi not installed: `pip install --no-deps pytorch-mppi` to compare")
        rows["ours_mppi_iteration"] = timeit(ours, device)
        rows["ours_mpc_step"] = timeit(step, device)
        return rows
    single = with_threads(baseline, 1) if device.type == "cpu" else None
    mine, theirs, ratio, spread, theirs_1 = side_by_side(
        step, baseline, device, theirs_single=single
    )
    rows.update(
        ours_mpc_step=mine,
        pytorch_mppi_command=theirs,
        pytorch_mppi_command_1_thread=theirs_1,
        step_speedup=ratio,
        step_range=spread,
    )
    if device.type == "cpu":
        # per-process CPU time, both on one torch thread: what a loaded machine charges
        rows["ours_mpc_step_cpu"] = cpu_and_wall(step, device, reps=20)["cpu_median"]
        rows["pytorch_mppi_command_1_thread_cpu"] = cpu_and_wall(single, device, reps=20)[
            "cpu_median"
        ]
        rows["step_speedup_cpu"] = (
            rows["pytorch_mppi_command_1_thread_cpu"] / rows["ours_mpc_step_cpu"]
        )
    mine, theirs, ratio, spread, _ = side_by_side(ours, baseline, device, theirs_single=single)
    rows.update(
        ours_mppi_iteration=mine,
        pytorch_mppi_command_iter_rounds=theirs,
        iteration_speedup=ratio,
        iteration_range=spread,
    )
    if device.type == "cuda":
        rows["ours_mppi_iteration_cuda_graph"] = timeit(
            ours_iteration(reacher, mppi_options, cuda_graph=True), device
        )
        graphed = mpc_solver(tensor_args, goal, True, same_task(world), WORLD if world else None)
        rows["ours_mpc_step_cuda_graph"] = timeit(lambda: graphed.step(state), device)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=None, help="torch intra-op threads")
    parser.add_argument(
        "--pieces",
        type=int,
        default=None,
        help="row chunks per shared kernel pass of the CPU rollout (rollout.overlap.PIECES)",
    )
    parser.add_argument(
        "--out", default=os.path.join(os.path.dirname(__file__), "results", "mpc.json")
    )
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.pieces:
        overlap.PIECES = args.pieces
    device = torch.device(args.device)
    tensor_args = TensorDeviceType(device=device)
    load = os.getloadavg()
    rows: dict = {}
    print(
        f"MPPI on the Franka, {PARTICLES} particles x horizon {HORIZON}, float32, device "
        f"{device}, torch threads {torch.get_num_threads()} (median ms; ratios: pytorch_mppi's "
        f"command / ours, median of {ROUNDS} alternating rounds and their range)"
    )
    for label, world in (("free space", False), (f"world {WORLD!r}", True)):
        r = rows[label] = compare(tensor_args, device, world)
        print(f"  {label}:")
        if "pytorch_mppi_command" not in r:
            print(
                f"    MpcSolver.step {r['ours_mpc_step'] * 1e3:.2f}, one MPPI iteration "
                f"{r['ours_mppi_iteration'] * 1e3:.2f}"
            )
            continue
        single = r["pytorch_mppi_command_1_thread"]
        print(
            f"    MpcSolver.step (whole)      {r['ours_mpc_step'] * 1e3:8.2f}   vs pytorch_mppi "
            f"command {r['pytorch_mppi_command'] * 1e3:8.2f}"
            + ("" if single is None else f" (1 torch thread {single * 1e3:.2f})")
            + f"   ({r['step_speedup']:.1f}x the faster, rounds {r['step_range'][0]:.1f}-"
            f"{r['step_range'][1]:.1f}x)"
        )
        if "step_speedup_cpu" in r:
            print(
                f"    CPU time per call           {r['ours_mpc_step_cpu'] * 1e3:8.2f}   vs "
                f"pytorch_mppi command (1 torch thread) "
                f"{r['pytorch_mppi_command_1_thread_cpu'] * 1e3:8.2f}   "
                f"({r['step_speedup_cpu']:.1f}x)"
            )
        print(
            f"    one MPPI iteration          {r['ours_mppi_iteration'] * 1e3:8.2f}   vs "
            f"pytorch_mppi command {r['pytorch_mppi_command_iter_rounds'] * 1e3:8.2f}   "
            f"({r['iteration_speedup']:.1f}x the faster, rounds {r['iteration_range'][0]:.1f}-"
            f"{r['iteration_range'][1]:.1f}x)"
        )
        if "ours_mpc_step_cuda_graph" in r:
            print(
                f"    with use_cuda_graph: MpcSolver.step {r['ours_mpc_step_cuda_graph'] * 1e3:.2f}"
                f", one MPPI iteration {r['ours_mppi_iteration_cuda_graph'] * 1e3:.2f}"
            )
    # the deployed task (knot sampling, stop and null-space costs), as the closed loop runs it
    goal = problem(tensor_args)[1]
    for label, world in (("particle_mpc_step", None), ("particle_mpc_step_table", WORLD)):
        solver = mpc_solver(tensor_args, goal, cuda_graph=False, world=world)
        state = JointState.from_position(solver.robot_config.retract_config[None].clone())
        stats = cpu_and_wall(partial(solver.step, state), device)
        rows[label] = stats["median"]
        rows.update({f"{label}_{key}": value for key, value in stats.items() if key != "median"})
        if device.type == "cuda":
            graphed = mpc_solver(tensor_args, goal, cuda_graph=True, world=world)
            rows[f"{label}_cuda_graph"] = timeit(partial(graphed.step, state), device)
    cfg = solver.mppi.config
    print(
        f"  MpcSolver.step, particle_mpc ({cfg.num_particles} particles, {cfg.n_iters} "
        f"iteration(s), horizon {solver.dynamics_model.horizon}): free space "
        f"{rows['particle_mpc_step'] * 1e3:.2f}, table {rows['particle_mpc_step_table'] * 1e3:.2f}"
        + (
            f"; with use_cuda_graph {rows['particle_mpc_step_cuda_graph'] * 1e3:.2f}, table "
            f"{rows['particle_mpc_step_table_cuda_graph'] * 1e3:.2f}"
            if device.type == "cuda"
            else ""
        )
    )
    for label in ("particle_mpc_step", "particle_mpc_step_table"):
        print(
            f"    {label}: wall median {rows[label] * 1e3:.2f} (min "
            f"{rows[f'{label}_min'] * 1e3:.2f})"
            f", CPU time per step median {rows[f'{label}_cpu_median'] * 1e3:.2f} (min "
            f"{rows[f'{label}_cpu_min'] * 1e3:.2f})"
        )
    free = rows["free space"]
    print(
        f"  issue #30 criteria (load average at start {load[0]:.2f}, {load[1]:.2f}, {load[2]:.2f}):"
    )
    print(
        f"    table world, particle_mpc 400 x 30, collision on: MpcSolver.step median "
        f"{rows['particle_mpc_step_table'] * 1e3:.2f} ms (target <= 10 ms)"
    )
    speedup = (
        f", {free['step_speedup']:.1f}x pytorch_mppi's command (target >= 4x)"
        if "step_speedup" in free
        else ""
    )
    print(
        f"    free space, same problem as pytorch_mppi: MpcSolver.step median "
        f"{free['ours_mpc_step'] * 1e3:.2f} ms (target <= 5 ms){speedup}"
        + (f"; in CPU time {free['step_speedup_cpu']:.1f}x" if "step_speedup_cpu" in free else "")
    )
    parallelism = overlap.GATE.parallelism
    print(
        "  helper thread of the CPU rollouts: parallelism "
        + ("not measured" if parallelism is None else f"{parallelism:.2f}")
        + " (both threads' CPU time / wall time; below "
        + f"{overlap.MIN_PARALLELISM} mpc.cpu_overlap: auto runs them on the calling thread)"
    )
    meta = {
        "load_average_at_start": list(load),
        "device": str(device),
        "particles": PARTICLES,
        "horizon": HORIZON,
        "world": WORLD,
        "mpc_task_particles": cfg.num_particles,
        "mpc_task_iters": cfg.n_iters,
        "overlap_pieces": overlap.PIECES,
        # both threads' CPU time over the wall time of the shared rollouts (~2: side by side,
        # ~1: taking turns on one core, where mpc.cpu_overlap: auto stops sharing)
        "overlap_parallelism": overlap.GATE.parallelism,
        "unit": "seconds (median)",
    }
    write_json(args.out, meta, rows)


if __name__ == "__main__":
    main()
