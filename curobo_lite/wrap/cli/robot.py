"""``curobo-lite robot ...``: import a URDF chain into a robot file, or show a robot."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import torch

from curobo_lite.config_files import atomic_write_text, read_config_file
from curobo_lite.robot.config import RobotConfig
from curobo_lite.robot.kinematics import Kinematics
from curobo_lite.wrap.cli.robot_convert import register_convert


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``robot`` command and its sub-commands to ``subparsers``."""
    parser = subparsers.add_parser(
        "robot", help="robot files: import a URDF, convert cuRobo's, show a robot"
    )
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

    fit = commands.add_parser(
        "spheres",
        help="fit collision spheres to a robot's URDF collision geometry",
        description=(
            "Fit spheres covering each link's collision geometry (URDF meshes and primitives). "
            "Given a robot file, its 'collision_spheres' (and 'collision_link_names') are "
            "replaced in place, the rest of the file kept; with -o the spheres go to a separate "
            "spheres file instead (cuRobo's layout, usable as collision_spheres: FILE)."
        ),
    )
    fit.add_argument("robot", help="robot file (.yml), bundled robot name, or a URDF file")
    fit.add_argument(
        "--urdf", default=None, help="URDF with the collision geometry (default: urdf_path)"
    )
    budget = fit.add_mutually_exclusive_group()
    budget.add_argument("--spheres-per-link", type=int, default=None, help="sphere budget per link")
    budget.add_argument(
        "--tolerance",
        type=float,
        default=None,
        help="cover tolerance in metres (spheres as needed); default: --spheres-per-link 8",
    )
    fit.add_argument(
        "--link-spheres",
        nargs="+",
        default=[],
        metavar="LINK=N",
        help="sphere budgets for single links, overriding the budget or tolerance",
    )
    fit.add_argument(
        "--outside",
        type=float,
        default=None,
        help="tight fit: spheres reach at most this many metres past the geometry (e.g. 0.015) "
        "and cover it below depth --inside; instead of a budget or tolerance",
    )
    fit.add_argument(
        "--inside",
        type=float,
        default=0.007,
        help="tight fit: depth (m) below which the geometry is covered (default 0.007)",
    )
    fit.add_argument(
        "--link-tight",
        nargs="+",
        default=[],
        metavar="LINK=OUT,IN",
        help="tight fit for single links (e.g. panda_hand=0.004,0.01 for the links that grasp)",
    )
    fit.add_argument(
        "--quality",
        type=int,
        default=0,
        metavar="N",
        help="after fitting, compare the spheres with the collision meshes (coal) in N seeded "
        "cluttered scenes: false alarms among mesh-clear configurations, missed penetrations",
    )
    fit.add_argument("-o", "--output", default=None, help="write a separate spheres file")
    fit.add_argument("--links", nargs="+", default=None, help="only these links")
    fit.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    fit.add_argument(
        "--ignore-samples",
        type=int,
        default=0,
        help="also write self_collision_ignore found from this many random configurations "
        "(adjacent links and pairs overlapping in every sample; robot files only)",
    )
    fit.add_argument(
        "--ignore-never-colliding",
        type=int,
        default=0,
        metavar="K",
        help="with --ignore-samples: also ignore pairs two moving joints apart whose meshes "
        "collide in none of the first K samples (needs python-fcl)",
    )
    fit.add_argument("--note", default=None, help="provenance note written in the comment")
    fit.set_defaults(func=_spheres)

    register_convert(commands)

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


#: --ignore-samples used when the robot file has no self_collision_ignore yet
DEFAULT_IGNORE_SAMPLES = 2000


def _spheres(args: argparse.Namespace) -> int:
    from curobo_lite.robot import sphere_fit
    from curobo_lite.robot.collision_config import COLLISION_KEYS
    from curobo_lite.robot.config import resolve_robot_file

    spheres_per_link = args.spheres_per_link
    if spheres_per_link is None and args.tolerance is None:
        spheres_per_link = 8
    link_budgets = {}
    for item in args.link_spheres:
        link, _, count = item.partition("=")
        if not link or not count.isdigit() or int(count) < 1:
            raise SystemExit(f"robot spheres: --link-spheres expects LINK=N (N >= 1), got {item!r}")
        link_budgets[link] = int(count)
    link_tight = {}
    for item in args.link_tight:
        link, _, values = item.partition("=")
        try:
            out_in = tuple(float(v) for v in values.split(","))
        except ValueError:
            out_in = ()
        if not link or len(out_in) != 2 or out_in[0] < 0 or out_in[1] <= 0:
            raise SystemExit(
                f"robot spheres: --link-tight expects LINK=OUTSIDE,INSIDE (metres), got {item!r}"
            )
        link_tight[link] = out_in
    source = Path(args.robot)
    config, robot_file = None, None
    try:
        if source.suffix.lower() == ".urdf":
            urdf = source
            if args.output is None:
                raise SystemExit("robot spheres: a URDF input needs -o OUT.yml (a spheres file)")
            if args.ignore_samples:
                raise SystemExit("robot spheres: --ignore-samples needs a robot file")
        else:
            robot_file = resolve_robot_file(args.robot)
            raw = read_config_file(robot_file, "robot")  # bounded YAML, UTF-8, named errors
            if not args.ignore_samples and not raw.get("self_collision_ignore"):
                # a robot file without an ignore list would report its adjacent links, whose
                # spheres always overlap at the joints, as in self-collision everywhere
                args.ignore_samples = DEFAULT_IGNORE_SAMPLES
                print(
                    f"{robot_file.name} has no self_collision_ignore: finding one from "
                    f"{DEFAULT_IGNORE_SAMPLES} random configurations (--ignore-samples)"
                )
            # the spheres being replaced play no part in the fit
            kept = {k: v for k, v in raw.items() if k not in COLLISION_KEYS}
            config = RobotConfig.from_dict(kept, source=str(robot_file), base_dir=robot_file.parent)
            urdf = args.urdf
            if urdf is None:
                geometry = raw.get("collision_geometry") or raw.get("urdf_path")
                if not geometry:
                    raise SystemExit(
                        f"robot spheres: {robot_file} has neither collision_geometry nor "
                        "urdf_path; pass --urdf URDF"
                    )
                urdf = robot_file.parent / geometry
        fits = sphere_fit.fit_robot_spheres(
            urdf,
            config,
            spheres_per_link=spheres_per_link,
            tolerance=args.tolerance,
            seed=args.seed,
            links=args.links,
            link_budgets=link_budgets,
            outside=args.outside,
            inside=args.inside,
            link_tight=link_tight,
        )
    except ValueError as err:
        raise SystemExit(f"robot spheres: {err}") from None
    if args.outside is not None:
        mode = f"--outside {args.outside} --inside {args.inside}"
    elif spheres_per_link is not None:
        mode = f"--spheres-per-link {spheres_per_link}"
    else:
        mode = f"--tolerance {args.tolerance}"
    words = ["curobo-lite robot spheres", args.robot]
    words += [f"--urdf {args.urdf}"] if args.urdf else []
    words += [mode, f"--seed {args.seed}"]
    words += [f"--links {' '.join(args.links)}"] if args.links else []
    words += [f"--link-spheres {' '.join(args.link_spheres)}"] if args.link_spheres else []
    words += [f"--link-tight {' '.join(args.link_tight)}"] if args.link_tight else []
    words += [f"--ignore-samples {args.ignore_samples}"] if args.ignore_samples else []
    if args.ignore_never_colliding:
        words += [f"--ignore-never-colliding {args.ignore_never_colliding}"]
    words += [f"-o {args.output}"] if args.output else []
    command = " ".join(words)
    header = [
        f"Collision spheres fitted by `{sphere_fit.GENERATOR}` ({mode}, seed {args.seed}) "
        f"from the collision geometry of {Path(urdf).name}.",
        (
            "Method: inscribed balls grown by at most OUTSIDE past the geometry, greedy cover of "
            "the surface pushed inward by INSIDE (curobo_lite.robot.sphere_cover."
            "fit_spheres_tight); links fixed to the base stay above the mounting plane z = 0."
            if args.outside is not None or link_tight
            else "Method: interior candidate centres with radius = distance to the surface, "
            "greedy cover of surface samples, inflation so every sample is covered "
            "(curobo_lite.robot.sphere_fit)."
        ),
    ]
    if args.note:
        header.append(args.note)
    header.append(f"Command: {command}")
    total = sum(len(f.spheres) for f in fits)
    for fit in fits:
        print(
            f"{fit.link:<24} {len(fit.spheres):>3} spheres  coverage gap "
            f"{1000 * fit.coverage_gap:.2f} mm  union/solid volume {fit.volume_ratio:.2f}"
        )
    block = sphere_fit.spheres_yaml(fits, header)
    if args.output is not None:
        atomic_write_text(args.output, block)
        print(f"wrote {total} spheres on {len(fits)} links to {args.output}")
        return 0
    text = robot_file.read_text()
    names = sphere_fit.names_yaml("collision_link_names", [f.link for f in fits])
    text = sphere_fit.replace_top_level_block(text, "collision_link_names", names)
    text = sphere_fit.replace_top_level_block(text, "collision_spheres", block)
    atomic_write_text(robot_file, text)
    if args.ignore_samples:
        config = RobotConfig.from_yaml(robot_file)
        ignore, report = sphere_fit.suggest_self_collision_ignore(
            config,
            num_samples=args.ignore_samples,
            seed=args.seed,
            meshes={f.link: f.meshes for f in fits} if args.ignore_never_colliding else None,
            mesh_samples=args.ignore_never_colliding or 0,
        )
        always = [k for k, v in report["reasons"].items() if v == "always overlapping"]
        never = [k for k, v in report["reasons"].items() if v.startswith("meshes never")]
        text = (
            f"Self-collision ignore list found by `{sphere_fit.GENERATOR} --ignore-samples "
            f"{args.ignore_samples}` (seed {args.seed}): links on the same rigid body or one "
            "moving joint apart, and pairs whose spheres overlapped in all "
            f"{args.ignore_samples} uniformly random configurations within the position limits "
            f"({', '.join(always) if always else 'none'})."
        )
        if args.ignore_never_colliding:
            text += (
                f" With --ignore-never-colliding {args.ignore_never_colliding}: pairs two moving "
                "joints apart whose spheres sometimes overlap but whose collision meshes "
                f"collided (python-fcl) in none of the first {args.ignore_never_colliding} "
                f"samples ({', '.join(never) if never else 'none'})."
            )
        ignore_header = [text]
        text = sphere_fit.replace_top_level_block(
            robot_file.read_text(),
            "self_collision_ignore",
            sphere_fit.ignore_yaml(ignore, ignore_header),
        )
        atomic_write_text(robot_file, text)
        RobotConfig.from_yaml(robot_file)
    print(f"wrote {total} spheres on {len(fits)} links into {robot_file}")
    if args.quality:
        _print_quality(robot_file, args.quality, args.seed)
    return 0


def _print_quality(robot_file: Path, num_worlds: int, seed: int) -> None:
    """Spheres vs collision meshes in cluttered scenes (``--quality``)."""
    from curobo_lite.wrap.base.mesh_check import coal_available
    from curobo_lite.wrap.base.sphere_quality import sphere_fit_quality

    config = RobotConfig.from_yaml(robot_file)
    if config.collision_geometry_path is None:
        print("quality: the robot file has no collision_geometry (the meshes to compare with)")
        return
    if not coal_available():
        print("quality: needs coal (pip install coal)")
        return
    quality = sphere_fit_quality(config, num_worlds=num_worlds, seed=seed)
    print(f"quality in {num_worlds} cluttered scenes: {quality.summary()}")


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
    if kinematics.num_spheres:
        from curobo_lite.geom.self_collision import self_collision_distance

        collision = config.collision
        distance = self_collision_distance(
            state.link_spheres,
            kinematics.self_collision_pairs,
            kinematics.self_collision_pair_buffer,
        ).distance.item()
        locked = ", ".join(f"{k} = {v:g}" for k, v in config.lock_joints.items())
        lines += [
            f"  collision: {kinematics.num_spheres} spheres on {len(collision.link_names)} links "
            f"(buffer {collision.sphere_buffer:g} m), "
            f"{kinematics.self_collision_pairs.shape[0]} self-collision sphere pairs",
            f"  self-collision distance at retract: {distance:.4f} m"
            + (f"   locked joints: {locked}" if locked else ""),
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
