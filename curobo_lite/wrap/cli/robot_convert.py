"""``curobo-lite robot convert``: a cuRobo robot file to this package's layout, and back."""

from __future__ import annotations

import argparse
from pathlib import Path

import yaml

from curobo_lite.config_files import FlowListDumper, atomic_write_text, read_config_file
from curobo_lite.robot.config import RobotConfig, resolve_robot_file
from curobo_lite.robot.curobo_export import robot_to_curobo, robot_urdf_text
from curobo_lite.robot.curobo_layout import is_curobo_layout


def register_convert(commands: argparse._SubParsersAction) -> None:
    """Add ``convert`` to the ``robot`` sub-commands."""
    conv = commands.add_parser(
        "convert",
        help="turn a cuRobo robot file into this package's layout, or a robot file into cuRobo's",
        description=(
            "A cuRobo robot file (robot_cfg: kinematics: ..., format 1.0 or 2.0) becomes a "
            "self-contained robot file of this package (the tree written out, limits from the "
            "URDF and the cspace section). Any other robot file becomes a cuRobo robot file "
            "plus a URDF of its tree beside it (OUTPUT with the suffix .urdf)."
        ),
    )
    conv.add_argument("robot", help="robot file (.yml) or bundled robot name")
    conv.add_argument("-o", "--output", required=True, help="robot file to write (.yml)")
    conv.add_argument(
        "--to",
        choices=("auto", "lite", "curobo"),
        default="auto",
        help="target layout (default: the other one)",
    )
    conv.add_argument(
        "--format-version",
        type=float,
        choices=(1.0, 2.0),
        default=1.0,
        help="cuRobo layout to write: 1.0 (cuRobo 0.7) or 2.0 (default 1.0)",
    )
    conv.add_argument(
        "--assets-path", default=None, help="folder a cuRobo file's relative URDF path is tried in"
    )
    conv.add_argument("--force", action="store_true", help="overwrite existing output files")
    conv.set_defaults(func=_convert)


def _convert(args: argparse.Namespace) -> int:
    output = Path(args.output)
    try:
        path = resolve_robot_file(args.robot)
        target = args.to
        if target == "auto":
            target = "lite" if is_curobo_layout(read_config_file(path, "robot")) else "curobo"
        urdf = output.with_suffix(".urdf")
        written = [output] if target == "lite" else [output, urdf]
        existing = [str(p) for p in written if p.exists()]
        if existing and not args.force:
            raise SystemExit(f"robot convert: {existing} exist; pass --force to overwrite")
        config = RobotConfig.from_yaml(path, assets_path=args.assets_path)
        if target == "lite":
            config.to_yaml(output)
        else:
            data = robot_to_curobo(config, urdf.name, args.format_version)
            header = (
                f"# cuRobo robot file (format {args.format_version}) written by `curobo-lite robot "
                f"convert {args.robot}`; urdf_path is relative to this file's folder\n"
            )
            text = yaml.dump(data, Dumper=FlowListDumper, sort_keys=False)
            atomic_write_text(urdf, robot_urdf_text(config, urdf.parent.absolute()))
            atomic_write_text(output, header + text)
    except ValueError as err:
        raise SystemExit(f"robot convert: {err}") from None
    print(
        f"wrote {', '.join(str(p) for p in written)}: robot '{config.name}', {config.dof} "
        f"joints, {config.base_link} -> {config.ee_link} ({target} layout)"
    )
    return 0
