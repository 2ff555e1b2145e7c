"""``curobo-lite pick-place``: the Franka takes a box from a shelf board of the bundled
``bookshelf`` world to a table beside it, planned stage by stage and run in closed loop on the
MuJoCo plant (:mod:`curobo_lite.wrap.motion.pick_place`, its ``pick_place_run``).

Prints each stage (planning time, motion time, the exact check's clearance for arm and held box,
the box's tilt along the plan by FK), then what MuJoCo measured: the box's largest tilt while
carried, how far it strayed from the hand, the contacts (the grasp's apart) and where it ended
up. ``--json`` writes all of it, ``--plot`` a figure of the run, ``--view`` plays it back in the
browser viewer with the box. Exit status 0 when every stage planned and the run kept the box
within ``--max-tilt`` with no contact but the grasp's, 1 otherwise, 2 on bad input.

Examples::

    curobo-lite pick-place
    curobo-lite pick-place --seed 3 --json out/pick_place.json --plot out/pick_place.png
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from curobo_lite.viz.options import add_view_arguments
from curobo_lite.wrap.cli.args import add_device_arguments


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``pick-place`` command to ``subparsers``."""
    parser = subparsers.add_parser(
        "pick-place",
        help="take a box from a shelf to a table (goal set, straight approach, held box, "
        "MuJoCo closed loop)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=None,
        help="a seeded box place on the shelf's low or middle board (default: the middle "
        "board, 0.64 m deep, 0.1 m left)",
    )
    parser.add_argument(
        "--max-tilt",
        type=float,
        default=0.05,
        metavar="RAD",
        help="the largest tilt of the carried box the run may show (default 0.05 rad)",
    )
    parser.add_argument("--no-sim", action="store_true", help="plan only")
    parser.add_argument("--json", metavar="PATH", help="write the stages and the run here")
    parser.add_argument("--plot", metavar="PNG", help="plot the run here")
    add_device_arguments(parser)
    add_view_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from curobo_lite.types import JointState
    from curobo_lite.wrap.cli.args import device_tensor_args
    from curobo_lite.wrap.motion.pick_place import (
        PickPlaceTask,
        pick_place_motion_gen,
        plan_pick_place,
    )

    try:
        if not args.max_tilt > 0.0:
            raise ValueError(f"--max-tilt: expected radians > 0, received {args.max_tilt}")
        tensor_args = device_tensor_args(args)
        task = PickPlaceTask() if args.seed is None else PickPlaceTask.sampled(args.seed)
        motion_gen = pick_place_motion_gen(task, tensor_args=tensor_args)
    except (TypeError, ValueError, FileNotFoundError) as err:
        print(f"curobo-lite pick-place: {err}", file=sys.stderr)
        return 2
    print(
        f"box {task.box_dims} m at {[round(v, 3) for v in task.box_position]}, placed at "
        f"{[round(v, 3) for v in task.place_position]}"
    )
    start = JointState.from_position(motion_gen.robot_config.retract_config[None].clone())
    plan = plan_pick_place(motion_gen, task, start)
    print(stage_table(plan))
    report: dict[str, Any] = {"task": vars(task), "plan": plan_summary(plan)}
    ok = plan.success
    if not ok:
        print(f"failed at stage '{plan.failed_stage}'")
    if ok and not args.no_sim:
        from curobo_lite.wrap.motion.pick_place_run import run_pick_place

        result = run_pick_place(motion_gen, plan)
        summary = result.summary()
        report["run"] = summary
        ok = summary["max_tilt_carried_rad"] <= args.max_tilt and not summary["unexpected_contacts"]
        print(
            f"MuJoCo: {summary['simulated_s']:.2f} s simulated, carried {summary['carried_s']:.2f} "
            f"s; largest tilt while carried {summary['max_tilt_carried_rad']:.4f} rad (limit "
            f"{args.max_tilt}); box within {1e3 * summary['max_box_offset_carried_m']:.1f} mm of "
            f"the hand; placed {1e3 * summary['placed_error_m']:.1f} mm from the plan, tilt "
            f"{summary['final_tilt_rad']:.4f} rad"
        )
        print(
            f"  contacts: grasp {summary['grasp_contacts'] or 'none'}; other "
            f"{summary['unexpected_contacts'] or 'none'}"
        )
        if args.plot:
            print(f"plot written to {plot_run(plan, result, args.plot)}")
    if args.json:
        path = Path(args.json)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(report, indent=2, default=float))
        print(f"report written to {path}")
    if args.view and plan.success:
        if not _view(args, motion_gen, plan):
            return 2
    return 0 if ok else 1


def stage_table(plan: Any) -> str:
    """One line per stage: success, status, planning and motion time, clearance, tilt."""
    lines = [f"{'stage':>9} {'ok':>5} {'plan s':>7} {'motion s':>8} {'mesh mm':>8} {'tilt rad':>8}"]
    for s in plan.stages:
        lines.append(
            f"{s.name:>9} {str(s.success):>5} {s.plan_time:>7.2f} {s.motion_time:>8.2f} "
            f"{1e3 * s.mesh_clearance:>8.1f} {s.max_tilt:>8.4f}"
            + ("" if s.success else f"  {s.status}")
        )
    if plan.goalset_index is not None:
        lines.append(f"grasp {plan.goalset_index} of {len(plan.task.grasp_matrices())} reached")
    return "\n".join(lines)


def plan_summary(plan: Any) -> dict[str, Any]:
    """The plan's numbers per stage, for JSON."""
    return {
        "success": plan.success,
        "failed_stage": plan.failed_stage,
        "goalset_index": plan.goalset_index,
        "placed_pose": plan.placed_pose,
        "stages": [
            {
                "name": s.name,
                "success": s.success,
                "status": s.status,
                "plan_time_s": s.plan_time,
                "motion_time_s": s.motion_time,
                "mesh_clearance_m": s.mesh_clearance,
                "max_tilt_rad": s.max_tilt,
            }
            for s in plan.stages
        ],
    }


def plot_run(plan: Any, result: Any, path: str) -> Path:
    """A figure of the run: the hand's and the box's paths seen from above and from the side
    (the shelf and the table outlined), and the box's tilt and height over time with the
    carried span shaded."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.patches import Rectangle

    figure = Figure(figsize=(12, 3.8), layout="constrained")
    canvas = FigureCanvasAgg(figure)
    top, side, tilt = figure.subplots(1, 3, width_ratios=[1.0, 1.0, 1.4])
    world = plan.task.world_config()
    for axis, (i, j), name in ((top, (0, 1), "from above"), (side, (0, 2), "from the side")):
        for obstacle in world:
            if obstacle.name == "box":
                continue
            centre, dims = obstacle.pose, obstacle.dims
            axis.add_patch(
                Rectangle(
                    (centre[i] - dims[i] / 2, centre[j] - dims[j] / 2),
                    dims[i],
                    dims[j],
                    facecolor="0.85" if obstacle.name != "table" else "tan",
                    edgecolor="0.5",
                    linewidth=0.5,
                )
            )
        axis.plot(result.hand[:, i], result.hand[:, j], color="tab:orange", label="hand")
        axis.plot(result.box[:, i], result.box[:, j], color="tab:blue", label="box (MuJoCo)")
        axis.set_aspect("equal")
        axis.set_ylim(*((-0.9, 0.6) if j == 1 else (0.0, 1.05)))
        axis.set_xlabel("xyz"[i] + " (m)")
        axis.set_ylabel("xyz"[j] + " (m)")
        axis.set_title(name)
    top.legend(loc="lower left", fontsize=8)
    t = result.time - result.time[0]
    tilt.plot(t, 1e3 * result.tilt, color="tab:blue", label="box tilt (mrad)")
    tilt.axhline(50.0, color="tab:red", linestyle="--", linewidth=0.8, label="limit 50 mrad")
    carried = t[result.carried]
    if carried.size:
        tilt.axvspan(carried[0], carried[-1], color="tab:green", alpha=0.1, label="carried (weld)")
    height = tilt.twinx()
    height.plot(t, result.box[:, 2], color="0.4", linewidth=0.8)
    height.set_ylabel("box height (m)", color="0.4")
    tilt.set_xlabel("simulated time (s)")
    tilt.set_ylabel("tilt (mrad)")
    tilt.set_ylim(0.0, 60.0)
    tilt.legend(loc="upper right", fontsize=8)
    summary = result.summary()
    tilt.set_title(
        f"largest tilt carried {1e3 * summary['max_tilt_carried_rad']:.1f} mrad, "
        f"{len(summary['unexpected_contacts'])} contacts off the grasp"
    )
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    canvas.print_figure(str(out), dpi=110)
    return out


def _view(args: argparse.Namespace, motion_gen: Any, plan: Any) -> bool:
    """Play the plan back in the viewer with the box (held between the approach and the
    place); serves until Ctrl-C. False when viser is missing."""
    from curobo_lite.viz.options import serve
    from curobo_lite.wrap.motion.pick_place import BOX, concatenate

    try:
        from curobo_lite.viz.viewer import Viewer
    except ImportError as err:
        print(f"curobo-lite pick-place: {err}", file=sys.stderr)
        return False
    world = plan.task.world_config()
    world.remove(BOX)  # the box is drawn as the held object, where the hand takes and leaves it
    viewer = Viewer(motion_gen.robot_config, world, port=args.view_port)
    trajectory, spans = concatenate(plan.stages)
    rows = {name: (first, end) for name, first, end in spans}
    viewer.attach_object(plan.held)
    viewer.show_plan(
        trajectory, plan.stages[0].interpolation_dt, (rows["retreat"][0] - 1, rows["place"][1])
    )
    print(f"viewer: {viewer.url}", flush=True)
    viewer.play()
    serve(viewer)
    return True
