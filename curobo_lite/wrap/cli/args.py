"""Options shared by the solver front ends: ``curobo-lite mpc``, ``curobo-lite trajopt`` and the
``torchrun`` entry point :mod:`curobo_lite.wrap.cli.sharded_solve`.

:func:`add_problem_arguments` declares what every front end asks for, the robot, the task, the
obstacle world and the end-effector goal, in one "problem" argument group; :func:`goal_pose`
turns the parsed ``--goal`` into a :class:`~curobo_lite.types.Pose`; :func:`add_start_argument`
declares ``--start`` and :func:`joint_values` checks a joint configuration's option (``--start``,
``--goal-joints``) against the robot.
:func:`add_device_arguments` declares ``--device`` (and, where the front end has a capturable
hot loop, ``--cuda-graph``); :func:`device_tensor_args` checks it. Importing this module does not
import torch, so ``--help`` stays fast.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

    import torch

    from curobo_lite.types import Pose, TensorDeviceType

GOAL_METAVAR = ("X", "Y", "Z", "QW", "QX", "QY", "QZ")
"""Names of the seven ``--goal`` numbers: position in metres, then the wxyz quaternion."""


def add_problem_arguments(
    parser: argparse.ArgumentParser, task_default: str, joint_goal: bool = False
) -> argparse._ArgumentGroup:
    """Add ``--robot``, ``--task``, ``--world`` and the required ``--goal X Y Z QW QX QY QZ``
    to ``parser`` as one argument group, and return the group.

    Args:
        parser: the front end's parser (or sub-command parser).
        task_default: the bundled task used when ``--task`` is not given.
        joint_goal: also offer ``--goal-joints Q [Q ...]`` (also spelled ``--joint-goal``);
            exactly one of the two goals is then required (``args.goal`` is ``None`` when the
            joint goal was given, ``args.joint_goal`` otherwise).
    """
    group = parser.add_argument_group("problem")
    group.add_argument("--robot", default="franka", help="bundled robot name or robot file")
    group.add_argument(
        "--task",
        default=task_default,
        help=f"bundled task name or task file (default {task_default})",
    )
    group.add_argument(
        "--world", default=None, help="obstacles: bundled world name or world file (cuRobo layout)"
    )
    goal = {
        "nargs": 7,
        "type": float,
        "metavar": GOAL_METAVAR,
        "help": "end-effector goal pose in the base frame (metres, quaternion wxyz)",
    }
    if not joint_goal:
        group.add_argument("--goal", required=True, **goal)
        return group
    goals = group.add_mutually_exclusive_group(required=True)
    goals.add_argument("--goal", **goal)
    goals.add_argument(
        "--goal-joints",
        "--joint-goal",
        dest="joint_goal",
        nargs="+",
        type=float,
        metavar="Q",
        help="goal joint configuration instead of --goal (one value per joint, in the robot "
        "file's joint order)",
    )
    return group


def add_start_argument(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """Add ``--start Q [Q ...]`` (``args.start``: ``None`` unless given) to ``parser``."""
    parser.add_argument(
        "--start",
        nargs="+",
        type=float,
        metavar="Q",
        help="start joint configuration, at rest (one value per joint; default: the robot's "
        "retract configuration)",
    )


def joint_values(
    values: Sequence[float],
    option: str,
    joint_names: Sequence[str],
    tensor_args: TensorDeviceType,
) -> torch.Tensor:
    """A parsed joint configuration option (``--start``, ``--goal-joints``) as ``[1, D]`` on
    ``tensor_args``, checked against the robot's ``joint_names``.

    Raises:
        ValueError: naming ``option``: not one value per joint, or a value not finite.
    """
    import math

    dof = len(joint_names)
    if len(values) != dof:
        names = ", ".join(joint_names) if dof <= 10 else f"{joint_names[0]} .. {joint_names[-1]}"
        raise ValueError(f"{option}: expected {dof} joint values ({names}), received {len(values)}")
    if not all(math.isfinite(v) for v in values):
        raise ValueError(f"{option}: expected finite joint values, received {list(values)}")
    return tensor_args.to_device(list(values)).reshape(1, dof)


def goal_pose(args: argparse.Namespace, tensor_args: TensorDeviceType) -> Pose | None:
    """The parsed ``--goal`` as a single pose ``[1, 3]`` position and ``[1, 4]`` unit wxyz
    quaternion on ``tensor_args``' device and dtype; ``None`` when no ``--goal`` was given.

    Raises:
        ValueError: the quaternion has zero norm (or is not finite).
    """
    if args.goal is None:
        return None
    from curobo_lite.types import InputValueError, Pose  # deferred: torch not needed to parse

    try:
        return Pose.from_list(args.goal, tensor_args)
    except InputValueError as err:
        raise InputValueError(f"--goal: {err}") from None


def add_device_arguments(
    parser: argparse.ArgumentParser, cuda_graph: bool = False
) -> argparse._ArgumentGroup:
    """Add ``--device`` (and with ``cuda_graph`` the flag ``--cuda-graph``) to ``parser`` as
    one argument group, and return the group."""
    group = parser.add_argument_group("device")
    group.add_argument(
        "--device",
        default="cpu",
        help="where the solver runs: cpu (default), cuda or cuda:N",
    )
    if cuda_graph:
        group.add_argument(
            "--cuda-graph",
            action="store_true",
            help="on CUDA, replay the solver's hot loop from a captured CUDA graph "
            "(use_cuda_graph: true; several times faster there, no effect on cpu)",
        )
    return group


def device_tensor_args(args: argparse.Namespace) -> TensorDeviceType:
    """The parsed ``--device`` as a float32 :class:`~curobo_lite.types.TensorDeviceType`.

    Raises:
        ValueError: not ``cpu``, ``cuda`` or ``cuda:N``, or a CUDA device torch cannot see.
    """
    import torch  # deferred: torch is not needed to build the parser

    from curobo_lite.types import TensorDeviceType

    try:
        device = torch.device(args.device)
    except (RuntimeError, TypeError):
        device = None
    if device is None or device.type not in ("cpu", "cuda"):
        raise ValueError(f"--device: expected cpu, cuda or cuda:N, received {args.device!r}")
    if device.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0:
            raise ValueError(f"--device: received {args.device!r}, but torch sees no CUDA device")
        if device.index is not None and device.index >= count:
            raise ValueError(
                f"--device: expected cuda:0 .. cuda:{count - 1}, received {args.device!r}"
            )
    return TensorDeviceType(device=device)
