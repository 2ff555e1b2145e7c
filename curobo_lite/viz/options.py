"""``--view`` for the command lines that can open the viewer (``plan``, ``mpc``).

Importing this module imports neither torch nor viser, so ``--help`` stays fast.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any


def add_view_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--view`` (open the browser viewer; needs ``curobo_lite[viz]``) and
    ``--view-port`` (default 8080; the next free port when busy) to ``parser``."""
    group = parser.add_argument_group("viewer")
    group.add_argument(
        "--view",
        action="store_true",
        help="show the result in the browser viewer (pip install 'curobo_lite[viz]'); "
        "serves until Ctrl-C",
    )
    group.add_argument(
        "--view-port", type=int, default=8080, metavar="PORT", help="viewer port (default 8080)"
    )


def open_viewer(args: argparse.Namespace, robot_config: Any, goal: Any, command: str) -> Any:
    """For ``--view``: a :class:`~curobo_lite.viz.Viewer` of ``robot_config`` in ``args.world``
    with ``goal`` (a Pose) drawn and its URL printed; ``None``, with the reason on stderr,
    when viser is not installed (the command then exits with status 2)."""
    try:
        from curobo_lite.viz.viewer import Viewer

        viewer = Viewer(robot_config, args.world, port=args.view_port)
    except ImportError as err:
        print(f"curobo-lite {command}: {err}", file=sys.stderr)
        return None
    viewer.show_goal(goal)
    print(f"viewer: {viewer.url}", flush=True)
    return viewer


def serve(viewer: Any) -> None:
    """Keep ``viewer`` serving until Ctrl-C."""
    print(f"viewer: serving {viewer.url} until Ctrl-C", flush=True)
    viewer.wait()
