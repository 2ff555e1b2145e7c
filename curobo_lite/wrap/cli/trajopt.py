"""``curobo-lite trajopt``: plan a trajectory to a pose (or joint) goal, print, plot, save.

Examples::

    curobo-lite trajopt --robot franka --goal 0.4 0.2 0.4 0 1 0 0 --plot traj.png --save traj.yml
    curobo-lite trajopt --goal 0.4 0.2 0.4 0 1 0 0 --track-scales scales.png
    curobo-lite trajopt --joint-goal 0.3 -0.5 0 -2 0 1.6 0.8

The exit status is 0 when the plan succeeded, 1 when it did not (the best attempt is still
printed, plotted and saved), 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
import yaml

from curobo_lite.config_files import atomic_open, atomic_path
from curobo_lite.types import JointState
from curobo_lite.wrap.cli.args import (
    add_device_arguments,
    add_problem_arguments,
    device_tensor_args,
    goal_pose,
)
from curobo_lite.wrap.trajopt.solver import TrajOptResult, TrajOptSolver

_QUANTITIES = ("position", "velocity", "acceleration", "jerk")
_UNITS = {"position": "rad", "velocity": "rad/s", "acceleration": "rad/s²", "jerk": "rad/s³"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``trajopt`` options (shared by :func:`register` and :func:`main`)."""
    add_problem_arguments(parser, task_default="gradient_trajopt", joint_goal=True)
    add_device_arguments(parser, cuda_graph=True)
    parser.add_argument(
        "--start",
        nargs="+",
        type=float,
        metavar="Q",
        help="start joint configuration, at rest (default: the robot's retract configuration)",
    )
    parser.add_argument(
        "--seeds", type=int, default=None, help="trajectory seeds (default: the task's num_seeds)"
    )
    parser.add_argument(
        "--interpolation-dt",
        type=float,
        default=None,
        help="controller period of the output in seconds (default: the task's, 0.01)",
    )
    parser.add_argument("--plot", metavar="PNG", help="plot position/velocity/accel./jerk here")
    parser.add_argument("--save", metavar="YAML", help="write the interpolated trajectory here")
    parser.add_argument(
        "--track-scales",
        nargs="?",
        const="",
        default=None,
        metavar="PNG",
        help="track the forward/backward scale of every cost term; print the table and, given "
        "a path, plot it",
    )
    parser.add_argument("--threads", type=int, default=None, help="torch intra-op threads")
    parser.add_argument("--quiet", action="store_true", help="only the result lines")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``trajopt`` command to ``subparsers``."""
    parser = subparsers.add_parser(
        "trajopt",
        help="trajectory optimization to a pose or joint goal",
        description=__doc__.split("\n\n")[0],
    )
    add_arguments(parser)
    parser.set_defaults(func=run)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``trajopt`` with ``argv`` (the arguments after ``trajopt``)."""
    parser = argparse.ArgumentParser(
        prog="curobo-lite trajopt",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_arguments(parser)
    return run(parser.parse_args(argv))


def _fail(message: str) -> SystemExit:
    print(f"curobo-lite trajopt: error: {message}", file=sys.stderr)
    return SystemExit(2)


def _check_output(path: str | None, option: str, suffixes: Sequence[str]) -> Path | None:
    """Validate an output path before solving (nothing is written on bad input)."""
    if path is None or path == "":
        return None
    out = Path(path)
    if not out.parent.exists():
        raise _fail(f"{option}: directory {str(out.parent)!r} does not exist")
    if out.is_dir():
        raise _fail(f"{option}: {path!r} is a directory, expected a file name")
    if out.suffix.lower() not in suffixes:
        raise _fail(
            f"{option}: expected a file ending in one of {list(suffixes)}, received {path!r}"
        )
    return out


def run(args: argparse.Namespace) -> int:
    """Solve, report and write outputs as ``args`` asks; returns the exit status."""
    plot_path = _check_output(args.plot, "--plot", (".png", ".pdf", ".svg"))
    save_path = _check_output(args.save, "--save", (".yml", ".yaml"))
    scales_path = _check_output(args.track_scales, "--track-scales", (".png", ".pdf", ".svg"))
    if args.threads is not None:
        if args.threads < 1:
            raise _fail(f"--threads: expected an integer >= 1, received {args.threads}")
        torch.set_num_threads(args.threads)
    if args.seeds is not None and args.seeds < 1:
        raise _fail(f"--seeds: expected an integer >= 1, received {args.seeds}")
    say = (lambda line: None) if args.quiet else (lambda line: print(line, flush=True))
    overrides: dict[str, Any] = {}
    if args.interpolation_dt is not None:
        overrides["interpolation_dt"] = args.interpolation_dt
    if args.cuda_graph:
        overrides["use_cuda_graph"] = True
    try:
        tensor_args = device_tensor_args(args)
        solver = TrajOptSolver.from_config(
            args.robot,
            args.task,
            num_seeds=args.seeds,
            tensor_args=tensor_args,
            world=args.world,
            **overrides,
        )
    except (TypeError, ValueError, FileNotFoundError) as err:
        raise _fail(str(err)) from None
    robot = solver.robot_config
    tensor_args = solver.tensor_args
    say(f"{solver!r}")
    start_q = robot.retract_config if args.start is None else tensor_args.to_device(args.start)
    try:
        start = JointState.from_position(start_q.reshape(1, -1).clone())
        goal = goal_pose(args, tensor_args)
        if goal is not None:
            say(
                f"goal pose: position {_vec(goal.position[0])} m, quaternion (wxyz) "
                f"{_vec(goal.quaternion[0])}"
            )
            solve = lambda: solver.solve_pose(start, goal)  # noqa: E731
        else:
            goal_state = JointState.from_position(tensor_args.to_device(args.joint_goal)[None])
            say(f"joint goal: {_vec(goal_state.position[0])} rad")
            solve = lambda: solver.solve_joint(start, goal_state)  # noqa: E731
        solver.progress = say
        if args.track_scales is not None:
            from curobo_lite.debug import track_scales

            with track_scales() as session:
                result = solve()
        else:
            result = solve()
    except (TypeError, ValueError) as err:
        raise _fail(str(err)) from None
    _print_result(result, args.goal is not None)
    if args.track_scales is not None:
        print(session.table())
        print("(an iteration here is one rollout evaluation: L-BFGS evaluates all line-search")
        print(" steps of an iteration in one call)")
        if scales_path is not None:
            session.plot(scales_path, title="trajopt: cost-term scales")
            print(f"saved scale plot to {scales_path}")
    if save_path is not None:
        save_trajectory(result, save_path, robot.name)
        print(f"saved interpolated trajectory to {save_path}")
    if plot_path is not None:
        plot_trajectory(result, plot_path, robot.joint_limits, title=f"{robot.name} trajopt")
        print(f"saved plot to {plot_path}")
    return 0 if bool(result.success[0]) else 1


def _vec(t: torch.Tensor) -> str:
    return "[" + ", ".join(f"{float(x):.4f}" for x in t) + "]"


def _print_result(result: TrajOptResult, pose_goal: bool) -> None:
    ok = bool(result.success[0])
    print(f"result: {'SUCCESS' if ok else 'FAILED (' + result.status[0] + ')'}")
    print(
        f"  position error {float(result.position_error[0]) * 1000:.3f} mm, rotation error "
        f"{float(result.rotation_error[0]):.4f} rad"
        + ("" if pose_goal else f", joint error {float(result.cspace_error[0]):.4f} rad")
    )
    last = int(result.interpolated_last_index[0])
    print(
        f"  motion time {last * result.interpolation_dt:.2f} s ({last + 1} samples every "
        f"{result.interpolation_dt:g} s), optimized dt {float(result.optimized_dt[0]):.4f} s"
    )
    peaks = ", ".join(f"{q} {float(result.limit_violation[q][0]):.3g}" for q in _QUANTITIES)
    print(f"  largest limit excess: {peaks}")
    if result.min_distance is not None:
        parts = [
            f"{name} {float(value[0]) * 1000:.1f} mm"
            for name, value in (("world", result.world_distance), ("self", result.self_distance))
            if value is not None
        ]
        free = "collision-free" if bool(result.collision_free[0]) else "IN COLLISION"
        print(f"  {free}: smallest clearance {', '.join(parts)} (swept, interpolated plan)")
    phases = ", ".join(f"{k} {v:.3f}" for k, v in result.timings.items())
    print(f"  solve time {result.solve_time:.3f} s ({phases})")


def _rounded(t: torch.Tensor) -> list:
    return [[float(f"{x:.8g}") for x in row] for row in t.tolist()]


def save_trajectory(
    result: TrajOptResult, path: str | Path, robot_name: str, index: int = 0
) -> None:
    """Write problem ``index``'s interpolated trajectory as YAML (:func:`save_plan`)."""
    save_plan(
        result.get_interpolated_plan(index),
        result.interpolation_dt,
        path,
        robot_name,
        bool(result.success[index]),
        float(result.position_error[index]),
        float(result.rotation_error[index]),
    )


def save_plan(
    plan: JointState,
    dt: float,
    path: str | Path,
    robot_name: str,
    success: bool,
    position_error: float,
    rotation_error: float,
) -> None:
    """Write the trajectory ``plan [T, D]`` sampled every ``dt`` seconds as YAML:
    ``joint_names``, ``dt``, ``positions``/``velocities``/``accelerations`` (``[T, D]`` lists)
    and the solve summary."""
    data = {
        "robot": robot_name,
        "joint_names": list(plan.joint_names or []),
        "dt": dt,
        "success": success,
        "position_error": position_error,
        "rotation_error": rotation_error,
        "duration": (plan.position.shape[0] - 1) * dt,
        "positions": _rounded(plan.position),
        "velocities": _rounded(plan.velocity),
        "accelerations": _rounded(plan.acceleration),
    }
    with atomic_open(path, "w", encoding="utf-8") as f:
        yaml.safe_dump(data, f, default_flow_style=None, sort_keys=False, width=1000)


def plot_trajectory(
    result: TrajOptResult, path: str | Path, joint_limits: Any, index: int = 0, title: str = ""
) -> Path:
    """Plot problem ``index``'s interpolated trajectory and its optimized knots
    (:func:`plot_plan`)."""
    dt = float(result.optimized_dt[index])
    knots = result.solution.position[index]
    status = "success" if bool(result.success[index]) else result.status[index]
    return plot_plan(
        result.get_interpolated_plan(index),
        result.interpolation_dt,
        path,
        joint_limits,
        knots,
        [h * dt for h in range(knots.shape[0])],
        f"{title}: {status}",
        "optimized knots",
    )


def plot_plan(
    plan: JointState,
    idt: float,
    path: str | Path,
    joint_limits: Any,
    knots: torch.Tensor,
    t_knots: list[float],
    title: str,
    knot_label: str,
) -> Path:
    """Plot the trajectory ``plan [T, D]`` (every ``idt`` seconds): position, velocity,
    acceleration and jerk per joint over time, each joint's limits dashed in its colour and
    ``knots [K, D]`` (at ``t_knots``) as dots."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as err:
        raise ImportError("--plot needs matplotlib: pip install matplotlib") from err
    t = [k * idt for k in range(plan.position.shape[0])]
    fig = Figure(figsize=(10, 11), constrained_layout=True)
    FigureCanvasAgg(fig)
    axes = fig.subplots(4, 1, sharex=True)
    colors = [f"C{i}" for i in range(plan.dof)]
    names = plan.joint_names or [f"joint {i}" for i in range(plan.dof)]
    for ax, quantity in zip(axes, _QUANTITIES, strict=True):
        values = getattr(plan, quantity).detach().cpu()
        limits = getattr(joint_limits, quantity).detach().cpu()
        for d in range(plan.dof):
            ax.plot(t, values[:, d], color=colors[d], lw=1.2, label=names[d])
            for bound in limits[:, d].tolist():
                if math.isfinite(bound):
                    ax.axhline(bound, color=colors[d], lw=0.7, ls="--", alpha=0.6)
            if quantity == "position":
                ax.plot(t_knots, knots[:, d].cpu(), ".", color=colors[d], ms=3)
        peak = float(values.abs().max())
        finite = limits[torch.isfinite(limits)].abs()
        if finite.numel():
            # show the limits, but do not squash a small signal under a huge jerk limit
            ax.set_ylim(
                -1.1 * max(peak, min(float(finite.max()), 3 * peak + 1e-9)),
                1.1 * max(peak, min(float(finite.max()), 3 * peak + 1e-9)),
            )
        ax.set_ylabel(f"{quantity} [{_UNITS[quantity]}]")
        ax.grid(True, alpha=0.3)
    axes[0].legend(fontsize="small", ncol=min(plan.dof, 4), loc="upper right")
    axes[-1].set_xlabel("time [s]")
    fig.suptitle(f"{title}, {t[-1]:.2f} s, dt {idt:g} s (dashed: limits, dots: {knot_label})")
    with atomic_path(path) as temporary:
        fig.savefig(temporary)
    return Path(path)
