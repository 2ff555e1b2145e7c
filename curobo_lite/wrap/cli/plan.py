"""``curobo-lite plan``: collision-free motion generation from a start configuration (default:
the retract configuration) to a goal pose or a goal configuration.

Runs :class:`~curobo_lite.wrap.MotionGen` in a world (bundled name or cuRobo-layout world file)
and prints the status, the errors, the clearance and the time per stage; when the start, the
goal or the IK is refused, the offenders (joints past their limits, links inside obstacles or
each other, the best IK seed's pose error); ``--save`` writes the interpolated plan as YAML,
``--plot`` its joint curves. The exit status is 0 on success, 1 when no valid plan was found
(the status says why), 2 on bad input.

Examples::

    curobo-lite plan --world table --goal 0.5 -0.3 0.25 0 1 0 0
    curobo-lite plan --start 0 -0.8 0 -2.2 0 1.6 0.8 --goal-joints 0.8 -0.8 0 -2.2 0 1.6 0.8
    curobo-lite plan --world table --goal 0.5 -0.3 0.25 0 1 0 0 --depth 3   # seen by 3 cameras
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from curobo_lite.viz.options import add_view_arguments
from curobo_lite.wrap.cli.args import (
    add_device_arguments,
    add_problem_arguments,
    add_start_argument,
)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``plan`` command to ``subparsers``."""
    parser = subparsers.add_parser(
        "plan",
        help="collision-free motion to a pose or joint goal among obstacles",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    problem = add_problem_arguments(parser, task_default="gradient_trajopt", joint_goal=True)
    add_start_argument(problem)
    add_device_arguments(parser, cuda_graph=True)
    parser.add_argument("--save", metavar="YAML", help="write the interpolated plan here")
    parser.add_argument("--plot", metavar="PNG", help="plot the plan's joint curves here")
    parser.add_argument(
        "--depth",
        type=int,
        default=0,
        metavar="N",
        help="plan in what N synthetic depth cameras see of --world (a voxel world, the robot "
        "filtered out) and report the clearance to the true obstacles",
    )
    add_view_arguments(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from curobo_lite.types import JointState, Pose
    from curobo_lite.viz.options import open_viewer, serve
    from curobo_lite.wrap.cli.args import device_tensor_args, goal_pose, joint_values
    from curobo_lite.wrap.cli.trajopt import save_plan
    from curobo_lite.wrap.motion.motion_gen import MotionGen

    try:
        tensor_args = device_tensor_args(args)
        world = args.world
        if args.depth:
            world = _depth_world(args, tensor_args)
        motion_gen = MotionGen.from_config(
            args.robot,
            world,
            tensor_args=tensor_args,
            task=args.task,
            use_cuda_graph=args.cuda_graph,
        )
        robot, tensor_args = motion_gen.robot_config, motion_gen.tensor_args
        start_q = robot.retract_config[None].clone()
        if args.start is not None:
            start_q = joint_values(args.start, "--start", robot.joint_names, tensor_args)
        goal = goal_pose(args, tensor_args)
        goal_q = None
        if goal is None:
            goal_q = joint_values(args.joint_goal, "--goal-joints", robot.joint_names, tensor_args)
    except (TypeError, ValueError, FileNotFoundError) as err:
        print(f"curobo-lite plan: {err}", file=sys.stderr)
        return 2
    viewer = None
    if args.view:
        shown = goal
        if goal_q is not None:  # the joint goal's end-effector pose
            state = motion_gen.checker.kinematics.forward(goal_q)
            shown = Pose(state.ee_position.detach(), state.ee_quaternion.detach())
        if (viewer := open_viewer(args, robot, shown, "plan")) is None:
            return 2
    print(motion_gen)
    start = JointState.from_position(start_q)
    if goal_q is None:
        result = motion_gen.plan_single(start, goal)
    else:
        result = motion_gen.plan_single_js(start, JointState.from_position(goal_q))
    print(f"result: {result.explain()}")
    # the exact check's clearance on the collision meshes, when it ran (MotionGen exact_check)
    meshes = ""
    if result.mesh_min_distance == result.mesh_min_distance:  # not nan
        meshes = f" (spheres), {result.mesh_min_distance * 1000:.1f} mm (meshes)"
    print(
        f"  position error {result.position_error * 1000:.3f} mm, rotation error "
        f"{result.rotation_error:.4f} rad, smallest clearance {result.min_distance * 1000:.1f} mm"
        f"{meshes}"
    )
    if args.depth and result.interpolated_plan is not None:
        print(
            f"  clearance to the true obstacles {_true_clearance(args, motion_gen, result):.1f} mm"
        )
    stages = ", ".join(f"{k} {v:.3f}" for k, v in result.timings.items())
    print(
        f"  motion time {result.motion_time:.2f} s; solve time {result.solve_time:.3f} s "
        f"({stages}); geometric planner used: {result.used_graph}"
    )
    if result.interpolated_plan is not None:
        if args.save:
            save_plan(
                result.interpolated_plan,
                result.interpolation_dt,
                args.save,
                motion_gen.robot_config.name,
                result.success,
                result.position_error,
                result.rotation_error,
            )
            print(f"plan written to {args.save}")
        if args.plot:
            path = _plot(result, args.plot, motion_gen, f"plan ({args.world or 'no obstacles'})")
            print(f"plot written to {path}")
    if viewer is not None:
        if result.interpolated_plan is not None:
            viewer.show_plan(result)
        serve(viewer)
    return 0 if result.success else 1


def _depth_world(args: argparse.Namespace, tensor_args: Any) -> Any:
    """``--depth``: the voxel world that ``args.depth`` cameras see of ``--world``, the robot
    (at the start configuration) drawn into the scene and filtered out."""
    from curobo_lite.geom.depth_camera import depth_world
    from curobo_lite.robot import Kinematics, RobotConfig

    if args.world is None:
        raise ValueError("--depth: expected a --world for the cameras to look at")
    if args.depth < 1:
        raise ValueError(f"--depth: expected a number of cameras >= 1, received {args.depth}")
    robot = RobotConfig.load(args.robot, tensor_args)
    q = robot.retract_config[None]
    spheres = Kinematics(robot, tensor_args).forward(q).link_spheres[0]
    return depth_world(args.world, args.depth, robot_spheres=spheres, tensor_args=tensor_args)


def _true_clearance(args: argparse.Namespace, motion_gen: Any, result: Any) -> float:
    """Millimetres between the plan's spheres and ``--world``'s own obstacles."""
    from curobo_lite.geom import WorldCollision, WorldConfig

    truth = WorldCollision(WorldConfig.load(args.world), motion_gen.tensor_args)
    spheres = motion_gen.checker.get_world_spheres(result.interpolated_plan.position)
    return float(truth.sphere_distance(spheres.detach()).distance.min()) * 1000


def _plot(result: Any, path: str, motion_gen: Any, title: str) -> Any:
    """Plot a MotionGen result's plan with its knots: the optimized ones, or the roadmap's
    waypoints at the times the plan rests on them."""
    from curobo_lite.wrap.cli.trajopt import plot_plan, plot_trajectory
    from curobo_lite.wrap.motion.path_timing import segment_durations

    if result.waypoints is None:
        return plot_trajectory(
            result.trajopt_result, path, motion_gen.robot_config.joint_limits, title=title
        )
    limits = motion_gen.robot_config.joint_limits
    durations = segment_durations(result.waypoints, limits, result.interpolation_dt)
    times = [0.0] + durations.cumsum(0).tolist()
    status = result.status.value.lower() if not result.success else "success"
    return plot_plan(
        result.interpolated_plan,
        result.interpolation_dt,
        path,
        limits,
        result.waypoints,
        times,
        f"{title}: {status}",
        "roadmap waypoints",
    )
