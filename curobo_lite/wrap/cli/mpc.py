"""``curobo-lite mpc``: closed-loop reaching under MPC with an ideal tracker or a MuJoCo plant."""

from __future__ import annotations

import argparse
import statistics
import sys

from curobo_lite.config_files import atomic_path
from curobo_lite.types.errors import InputValueError
from curobo_lite.viz.options import add_view_arguments
from curobo_lite.wrap.cli.args import (
    add_device_arguments,
    add_problem_arguments,
    device_tensor_args,
    goal_pose,
)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "mpc",
        help="run MPC (MPPI) in closed loop to an end-effector pose",
        description="Closed-loop reaching: MPPI re-plans every control step, an ideal tracker "
        "(or, with --plant mujoco, a MuJoCo simulation of the robot) follows the commands. "
        "Prints the final errors and the median step time.",
    )
    add_problem_arguments(parser, task_default="particle_mpc")
    add_device_arguments(parser, cuda_graph=True)
    parser.add_argument("--steps", type=int, default=300, help="control steps (default 300)")
    parser.add_argument("--seed", type=int, default=None, help="MPPI seed (default: the task's)")
    parser.add_argument("--plot", default=None, help="save joint and error plots to this file")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument(
        "--move",
        nargs="+",
        action="append",
        metavar="NAME STEP X Y Z [QW QX QY QZ]",
        default=[],
        help="move obstacle NAME to the pose before control step STEP (repeatable): the world "
        "changes while MPC runs",
    )
    parser.add_argument(
        "--plant",
        choices=("ideal", "mujoco"),
        default="ideal",
        help="what follows the commands: an ideal tracker (default) or MujocoPlant (1 kHz "
        "physics, computed torque; needs the 'sim' extra)",
    )
    parser.add_argument(
        "--mass-scale",
        type=float,
        default=1.0,
        help="mujoco plant: factor on the links' masses unknown to the controller (default 1)",
    )
    parser.add_argument(
        "--latency",
        type=float,
        default=0.0,
        help="mujoco plant: command latency in seconds, compensated by the loop (default 0)",
    )
    parser.add_argument(
        "--follow",
        action="store_true",
        help="plan with MotionGen first, then track the plan with MPC (ReactivePlanner: the "
        "rest of the plan is re-checked after every --move and replanned when blocked)",
    )
    parser.add_argument(
        "--background-planning",
        action="store_true",
        help="with --follow: plan on a worker thread while the MPC keeps stepping (it holds "
        "the robot until the plan arrives) instead of inside the control step",
    )
    add_view_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.steps < 1:
        print(f"curobo-lite mpc: --steps must be >= 1, received {args.steps}", file=sys.stderr)
        return 2
    from tqdm import tqdm

    from curobo_lite.rollout import TaskConfig
    from curobo_lite.sim import IdealTracker, MujocoPlant, run_closed_loop
    from curobo_lite.types import JointState
    from curobo_lite.viz.options import open_viewer, serve
    from curobo_lite.wrap.mpc.solver import MpcSolver

    overrides = {} if args.seed is None else {"seed": args.seed}
    if args.background_planning and not args.follow:
        print("curobo-lite mpc: --background-planning needs --follow", file=sys.stderr)
        return 2
    try:
        tensor_args = device_tensor_args(args)
        task = TaskConfig.load(args.task)
        if args.cuda_graph:
            task.mpc = {**(task.mpc or {}), "use_cuda_graph": True}
        if args.follow:
            from curobo_lite.wrap.reactive.planner import ReactivePlanner

            planner = ReactivePlanner.from_config(
                args.robot,
                args.world,
                task,
                tensor_args,
                mpc=overrides,
                background_planning=args.background_planning,
            )
            solver = planner.mpc
        else:
            solver = MpcSolver.from_config(
                robot=args.robot, task=task, tensor_args=tensor_args, world=args.world, **overrides
            )
            planner = None
        goal = goal_pose(args, solver.tensor_args)
    except (TypeError, ValueError, FileNotFoundError) as err:
        print(f"curobo-lite mpc: {err}", file=sys.stderr)
        return 2
    try:
        events = obstacle_moves(args.move, solver)
    except ValueError as err:
        print(f"curobo-lite mpc: --move: {err}", file=sys.stderr)
        return 2
    start = JointState.from_position(solver.robot_config.retract_config[None].clone())
    tracker, latency = IdealTracker(start), 0.0
    if args.plant == "mujoco":
        world = solver.world_collision.world if solver.world_collision is not None else None
        options = {
            "control_dt": solver.control_dt,
            "mass_scale": args.mass_scale,
            "command_latency": args.latency,
        }
        try:
            tracker, latency = MujocoPlant(solver.robot_config, world, options, start), args.latency
        except (ImportError, TypeError, ValueError) as err:
            print(f"curobo-lite mpc: --plant mujoco: {err}", file=sys.stderr)
            return 2
    elif args.mass_scale != 1.0 or args.latency != 0.0:
        print("curobo-lite mpc: --mass-scale and --latency need --plant mujoco", file=sys.stderr)
        return 2
    viewer = view = None
    if args.view:
        if (viewer := open_viewer(args, solver.robot_config, goal, "mpc")) is None:
            return 2
        view = viewer.mpc_callback(solver)
    print(solver)
    if args.plant == "mujoco":
        print(tracker)
    with tqdm(total=args.steps, desc="mpc", unit="step", disable=args.no_progress) as bar:

        def on_step(step: int) -> None:
            bar.update()
            if view is not None:
                view(step)

        record = run_closed_loop(
            solver if planner is None else planner,
            tracker,
            goal,
            args.steps,
            on_step=on_step,
            events=events,
            latency_compensation=latency,
        )
    median_ms = statistics.median(record.solve_time.tolist()) * 1e3
    if planner is not None:
        planner.close()
        status = None if planner.last_plan is None else planner.last_plan.status.value
        print(f"global plans: {planner.replans} (the last: {status})")
    print(
        f"final position error {float(record.position_error[-1]) * 100:.2f} cm, rotation error "
        f"{float(record.rotation_error[-1]):.4f} rad, final joint speed "
        f"{float(record.velocity[-1].abs().max()):.3f} rad/s"
    )
    print(
        f"median step time {median_ms:.2f} ms over {args.steps} steps "
        f"(control period {solver.control_dt * 1e3:.0f} ms)"
    )
    clearances = [
        f"{name} {float(values.min()) * 1000:.1f} mm"
        for name, values in (("world", record.world_distance), ("self", record.self_distance))
        if values is not None
    ]
    if clearances:
        print(f"smallest clearance over the run: {', '.join(clearances)}")
    if record.contact_count is not None:
        print(
            f"MuJoCo robot-obstacle contacts: {int((record.contact_count > 0).sum())} of "
            f"{args.steps} steps, deepest {float(record.max_penetration.max()) * 1000:.2f} mm; "
            f"median simulation time {float(record.step_time.median()) * 1e3:.2f} ms per step"
        )
    if args.plot:
        path = plot_record(record, solver.robot_config, args.plot)
        print(f"plot written to {path}")
    if viewer is not None:
        overhead = view.overhead_ms()
        print(f"viewer: {overhead['mean']:.2f} ms added per step on average")
        viewer.show_plan(record.position, dt=record.control_dt)  # replay the executed motion
        serve(viewer)
    return 0


def obstacle_moves(moves: list[list[str]], solver) -> dict:
    """``--move`` values to ``run_closed_loop`` events ``{step: fn(solver)}``; raises
    ``ValueError`` naming the bad value (unknown obstacle, step, pose)."""
    events: dict = {}
    if moves and solver.world_collision is None:
        raise InputValueError("needs a world (--world NAME) with the obstacle")
    for values in moves:
        if len(values) not in (5, 9):
            raise InputValueError(
                f"expected NAME STEP X Y Z [QW QX QY QZ], received {' '.join(values)}"
            )
        name, step = values[0], values[1]
        names = solver.world_collision.obstacle_names
        if name not in names:
            raise InputValueError(f"no obstacle {name!r} in the world; obstacles: {names}")
        try:
            step_index = int(step)
            pose = [float(v) for v in values[2:]] + (
                [1.0, 0.0, 0.0, 0.0] if len(values) == 5 else []
            )
        except ValueError:
            raise InputValueError(
                f"expected an integer step and numbers, received {' '.join(values)}"
            ) from None
        if step_index < 0:
            raise InputValueError(f"STEP: expected >= 0, received {step_index}")
        previous = events.get(step_index)

        def move(mpc, name=name, pose=pose, previous=previous) -> None:
            if previous is not None:
                previous(mpc)
            mpc.world_collision.update_obstacle_pose(name, pose)

        events[step_index] = move
    return events


def plot_record(record, robot_config, path: str) -> str:
    """Joint positions, velocities (limits dashed) and end-effector errors over time."""
    import os

    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    directory = os.path.dirname(path)
    if directory:
        os.makedirs(directory, exist_ok=True)
    t = record.time.numpy()
    fig = Figure(figsize=(13, 3.6))
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, 3)
    for j, name in enumerate(robot_config.joint_names):
        axes[0].plot(t, record.position[:, j].numpy(), label=name)
        (line,) = axes[1].plot(t, record.velocity[:, j].numpy())
        limit = float(robot_config.joint_limits.velocity[1, j])
        axes[1].axhline(limit, color=line.get_color(), ls="--", lw=0.6)
        axes[1].axhline(-limit, color=line.get_color(), ls="--", lw=0.6)
    axes[2].semilogy(t, record.position_error.numpy(), label="position [m]")
    axes[2].semilogy(t, record.rotation_error.numpy(), label="rotation [rad]")
    for ax, title in zip(
        axes, ("joint position [rad]", "joint velocity [rad/s]", "end-effector error")
    ):
        ax.set_title(title)
        ax.set_xlabel("t [s]")
    axes[0].legend(fontsize=6)
    axes[2].legend(fontsize=7)
    fig.tight_layout()
    with atomic_path(path) as temporary:
        fig.savefig(temporary)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="curobo-lite")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)
