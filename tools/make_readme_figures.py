"""Generate the README's pictures into ``docs/img/``.

``viewer.png``: the browser viewer (``curobo_lite.viz``) in a headless Chromium, showing the
Franka planning with :class:`~curobo_lite.wrap.MotionGen` from its retract pose into the lower
bay of the ``bookshelf`` world: obstacles, goal frame, the plan's end-effector path and the
robot part-way along it, spheres coloured by clearance. Needs ``curobo_lite[viz]``, selenium
and Debian's ``chromium`` + ``chromium-driver`` (``make browser``).

Usage::

    python tools/make_readme_figures.py [--out docs/img] [--frame 0.75]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from PIL import Image

from curobo_lite.types import JointState, Pose
from curobo_lite.viz import Viewer, browser
from curobo_lite.wrap import MotionGen

REPO = Path(__file__).resolve().parents[1]
#: hand pose in the lower bay, fingers forward (problem bookshelf_01 of motion_problems.yml)
SHELF_GOAL = [0.524433, 0.151005, 0.351875, 0.707107, 0.0, 0.707107, 0.0]
#: camera to the right of the robot, looking into the shelf (metres, base frame)
CAMERA_POSITION = (-0.1, -1.3, 0.75)
CAMERA_LOOK_AT = (0.55, 0.1, 0.38)


def viewer_figure(path: Path, frame_fraction: float = 0.75, size=(1000, 800)) -> Path:
    """Plan, show the plan at ``frame_fraction`` of its length, screenshot the page into
    ``path`` (a palette PNG, to keep the file small)."""
    motion_gen = MotionGen.from_config("franka", "bookshelf")
    goal = Pose.from_list(SHELF_GOAL, motion_gen.tensor_args)
    start = JointState.from_position(motion_gen.robot_config.retract_config[None].clone())
    result = motion_gen.plan_single(start, goal)
    if not result.success:
        raise RuntimeError(f"the figure's plan failed: {result.status}")
    print(result)
    with Viewer(motion_gen.robot_config, "bookshelf", port=0) as viewer:
        viewer.server.initial_camera.position = CAMERA_POSITION
        viewer.server.initial_camera.look_at = CAMERA_LOOK_AT
        viewer.show_goal(goal)
        frames = viewer.show_plan(result)
        row = round(frame_fraction * (frames.num_frames - 1))
        viewer.frame = row
        session = browser.open_headless(viewer.url, *size)
        try:
            browser.wait_for_nodes(session, ["/robot/spheres", "/plan/ee_path", "/world/top"])
            target = frames.ee_position[row].tolist()
            browser.wait_until(
                lambda: _close(browser.node_position(session, "/robot/ee"), target),
                what="the robot at the chosen plan row",
            )
            session.execute_script(browser.HIDE_NOTIFICATIONS_JS)
            # the first software-rendered frame with the environment map takes a while
            session.get_screenshot_as_png()
            time.sleep(1.0)
            session.execute_script(browser.HIDE_NOTIFICATIONS_JS)
            path.parent.mkdir(parents=True, exist_ok=True)
            session.save_screenshot(str(path))
        finally:
            session.quit()
    image = Image.open(path).convert("RGB")
    image.quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(path, optimize=True)
    return path


def _close(position: list[float] | None, target: list[float], tol: float = 1e-4) -> bool:
    return position is not None and max(abs(a - b) for a, b in zip(position, target)) < tol


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "img")
    parser.add_argument(
        "--frame", type=float, default=0.75, help="plan fraction shown (default 0.75)"
    )
    args = parser.parse_args(argv)
    path = viewer_figure(args.out / "viewer.png", args.frame)
    print(f"wrote {path} ({path.stat().st_size / 1024:.0f} KiB)")


if __name__ == "__main__":
    main()
