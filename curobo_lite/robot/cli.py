"""``curobo-lite robot ...``: import a URDF chain into a robot file, or show a robot."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import torch

from curobo_lite.robot.config import RobotConfig
from curobo_lite.robot.kinematics import Kinematics


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``robot`` command and its sub-commands to ``subparsers``."""
    parser = subparsers.add_parser("robot", help="robot files: import a URDF, show a robot")
    commands = parser.add_subparsers(dest="robot_command", required=True)

    imp = commands.add_parser(
        "import-urdf", help="write a robot file (.yml) for one base-to-end-effector chain of a URDF"
    )
    imp.add_argument("file", help="URDF file")
    imp.add_argument("--base-link", required=True, help="link the kinematics is expressed in")
    imp.add_argument("--ee-link", required=True, help="end-effector link")
    imp.add_argument("-o", "--output", required=True, help="robot file to write (.yml)")
    imp.add_argument("--name", default=None, help="robot name (default: the URDF file stem)")
    imp.add_argument(
        "--acceleration-limit",
        type=float,
        default=15.0,
        help="symmetric acceleration limit for every joint; URDF has none (default 15)",
    )
    imp.add_argument(
        "--jerk-limit",
        type=float,
        default=500.0,
        help="symmetric jerk limit for every joint; URDF has none (default 500)",
    )
    imp.add_argument("--force", action="store_true", help="overwrite an existing output file")
    imp.set_defaults(func=_import_urdf)

    show = commands.add_parser("show", help="joints, limits and end-effector pose at retract")
    show.add_argument("robot", help="bundled robot name (e.g. franka) or path to a .yml file")
    show.set_defaults(func=_show)


def _import_urdf(args: argparse.Namespace) -> int:
    output = Path(args.output)
    if output.exists() and not args.force:
        raise SystemExit(f"robot import-urdf: {output} exists; pass --force to overwrite")
    try:
        config = RobotConfig.from_urdf(
            args.file,
            args.base_link,
            args.ee_link,
            acceleration_limit=args.acceleration_limit,
            jerk_limit=args.jerk_limit,
            name=args.name,
        )
    except ValueError as err:
        raise SystemExit(f"robot import-urdf: {err}") from None
    config.to_yaml(output)
    print(
        f"wrote {output}: robot '{config.name}', {config.dof} joints "
        f"({', '.join(config.joint_names)}), {config.base_link} -> {config.ee_link}"
    )
    print(
        "note: acceleration and jerk limits are the --acceleration-limit / --jerk-limit values, "
        "the retract configuration is the middle of each joint range; edit them as needed"
    )
    return 0


def format_robot(config: RobotConfig) -> str:
    """A human-readable summary: joints, limits table and end-effector pose at retract."""
    # one configuration: the torch backend avoids building the Warp module for a CLI call
    kinematics = Kinematics(config, backend="torch")
    state = kinematics.forward(config.retract_config[None])
    limits = config.joint_limits
    types = {j.name: j.type for j in config.joints}
    lines = [
        f"robot '{config.name}' ({config.source})",
        f"  base_link: {config.base_link}   ee_link: {config.ee_link}   dof: {config.dof}",
        f"  links (FK order): {', '.join(kinematics.link_names)}",
        "",
    ]
    header = (
        f"  {'joint':<24} {'type':<10} {'position [lo, hi]':>20} {'velocity':>9} "
        f"{'accel':>9} {'jerk':>9} {'retract':>9} {'weight':>7}"
    )
    lines += [header, "  " + "-" * (len(header) - 2)]
    for i, name in enumerate(config.joint_names):
        lo, hi = limits.position[0, i].item(), limits.position[1, i].item()
        lines.append(
            f"  {name:<24} {types[name]:<10} {f'[{lo:.4g}, {hi:.4g}]':>20} "
            f"{limits.velocity[1, i].item():>9.4g} {limits.acceleration[1, i].item():>9.4g} "
            f"{limits.jerk[1, i].item():>9.4g} {config.retract_config[i].item():>9.4g} "
            f"{config.cspace_weights[i].item():>7.3g}"
        )
    mimics = [j for j in config.chain if j.mimic is not None]
    for joint in mimics:
        lines.append(
            f"  {joint.name:<24} mimic of {joint.mimic.joint} "
            f"(x{joint.mimic.multiplier:g} {joint.mimic.offset:+g})"
        )
    position = state.ee_position[0].tolist()
    quat = state.ee_quaternion[0]
    angle = 2.0 * math.degrees(math.atan2(quat[1:].norm().item(), abs(quat[0].item())))
    lines += [
        "",
        "  (velocity, accel, jerk: upper limits; lower limits are in the file)",
        f"  ee pose at retract: xyz = [{', '.join(f'{v:.4f}' for v in position)}] m",
        f"                      quaternion wxyz = [{', '.join(f'{v:.4f}' for v in quat.tolist())}]"
        f" ({angle:.1f} deg from the base orientation)",
    ]
    return "\n".join(lines)


def _show(args: argparse.Namespace) -> int:
    try:
        config = RobotConfig.load(args.robot)
    except ValueError as err:
        raise SystemExit(f"robot show: {err}") from None
    with torch.no_grad():
        print(format_robot(config))
    return 0
