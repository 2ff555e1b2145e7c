"""The browser viewer (curobo_lite.viz): scene contents against independent references, plan
playback, the live MPC view, the command lines, and the page in a real headless Chromium.

The browser test needs Debian's ``chromium`` and ``chromium-driver`` (``make browser``) and
selenium; it is skipped, saying so, where they are missing. Nothing is downloaded at run time.
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from collision_reference import coal_sphere_box_distance

from curobo_lite.geom import (
    Capsule,
    Cuboid,
    Cylinder,
    Mesh,
    SelfCollisionModel,
    Sphere,
    WorldConfig,
)
from curobo_lite.robot import Kinematics, RobotConfig
from curobo_lite.types import JointState, Pose
from curobo_lite.viz.scene import (
    clearance_colors,
    obstacle_mesh,
    plan_positions,
    robot_urdf_path,
    sphere_self_distance,
)

viser = pytest.importorskip("viser", reason="the viewer needs viser: pip install '.[viz]'")

from curobo_lite.viz import Viewer  # noqa: E402  (after the skip: needs viser)

SAFE = 0.1
# the hand lowered towards the table: some spheres within SAFE of it, some far
NEAR_TABLE = [0.0, 0.6, 0.0, -2.0, 0.0, 2.3, 0.785]


@pytest.fixture
def franka_viewer():
    viewer = Viewer("franka", world="table", port=0, safe_distance=SAFE)
    yield viewer
    viewer.close()


def linear_plan(robot: RobotConfig, rows: int = 25) -> torch.Tensor:
    start = robot.retract_config
    end = torch.tensor(NEAR_TABLE, dtype=start.dtype)
    return start + torch.linspace(0.0, 1.0, rows)[:, None] * (end - start)


def node_names(viewer: Viewer) -> set[str]:
    return set(viewer.server.scene._handle_from_node_name)


# --- without a browser ---------------------------------------------------------------------------


def test_clearance_colours_run_red_yellow_green():
    colours = clearance_colors(np.array([-0.05, 0.0, 0.05, 0.1, 0.3, np.inf]), safe_distance=0.1)
    assert colours.dtype == np.uint8 and colours.shape == (6, 3)
    red, yellow, green = (230, 30, 30), (245, 200, 40), (40, 180, 80)
    assert [tuple(c) for c in colours] == [red, red, yellow, green, green, green]
    between = clearance_colors(np.linspace(0.0, 0.1, 11), 0.1).astype(int)
    assert (np.diff(between[:6, 1]) >= 0).all() and (np.diff(between[5:, 0]) <= 0).all()
    with pytest.raises(ValueError, match="safe_distance"):
        clearance_colors(np.zeros(2), safe_distance=0.0)


def test_per_sphere_self_distance_agrees_with_pairwise_loop_and_kernel():
    kin = Kinematics(RobotConfig.load("franka"))
    q = kin.robot_config.retract_config + 0.6 * torch.randn(
        6, 7, generator=torch.Generator().manual_seed(1)
    )
    spheres = kin.forward(q).link_spheres
    pairs, buffer = kin.self_collision_pairs, kin.self_collision_pair_buffer
    per_sphere = sphere_self_distance(spheres, pairs, buffer)
    # a plain loop over the pairs of one configuration
    s = spheres[2].double()
    loop = torch.full((kin.num_spheres,), math.inf, dtype=torch.float64)
    for (i, j), b in zip(pairs.tolist(), buffer.tolist()):
        if s[i, 3] < 0 or s[j, 3] < 0:  # disabled (reserved for a held object): in no pair
            continue
        d = float((s[i, :3] - s[j, :3]).norm() - s[i, 3] - s[j, 3] - b)
        loop[i], loop[j] = min(loop[i], d), min(loop[j], d)
    torch.testing.assert_close(per_sphere[2].double(), loop, atol=1e-5, rtol=0)
    # its minimum is the robot's self-collision distance of the Warp kernel
    kernel = SelfCollisionModel.from_kinematics(kin).distance(spheres).distance
    torch.testing.assert_close(per_sphere.amin(-1), kernel, atol=1e-5, rtol=0)


def test_sphere_colours_follow_distance_to_table_and_self(franka_viewer):
    viewer = franka_viewer
    viewer.set_state(torch.tensor(NEAR_TABLE))
    handle = viewer.server.scene.get_handle_by_name("/robot/spheres")
    centres = np.asarray(handle.batched_positions, np.float64)
    radii = np.asarray(handle.batched_scales, np.float64)
    table = WorldConfig.load("table")
    boxes = [(o.pose, o.dims) for o in table]
    world = coal_sphere_box_distance(np.c_[centres, radii], boxes)
    kin = viewer.kinematics
    # the base (moved by no joint) stands on the table: left out of world clearances
    world[np.array([n == "panda_link0" for n in kin.sphere_link_names])] = np.inf
    # the spheres reserved for a held object are disabled (drawn with size 0): in no pair
    disabled = kin.forward(torch.tensor(NEAR_TABLE)[None]).link_spheres[0, :, 3].numpy() < 0
    world[disabled] = np.inf
    own = np.full(len(radii), np.inf)
    for (i, j), b in zip(
        kin.self_collision_pairs.tolist(), kin.self_collision_pair_buffer.tolist()
    ):
        if disabled[i] or disabled[j]:
            continue
        d = np.linalg.norm(centres[i] - centres[j]) - radii[i] - radii[j] - b
        own[i], own[j] = min(own[i], d), min(own[j], d)
    reference = np.minimum(np.minimum(world, own), SAFE)
    assert (reference < 0.5 * SAFE).any() and (reference >= SAFE).any()  # a real spread
    np.testing.assert_allclose(viewer.sphere_clearance, reference, atol=2e-4)
    np.testing.assert_array_equal(
        np.asarray(handle.batched_colors), clearance_colors(reference, SAFE)
    )


def test_obstacles_of_every_kind_become_meshes_of_their_size(tmp_path):
    mesh_file = tmp_path / "tetra.obj"
    mesh_file.write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n")
    obstacles = [
        Cuboid("box", dims=[0.2, 0.4, 0.6], pose=[0.5, 0, 0.3, 1, 0, 0, 0]),
        Sphere("ball", radius=0.1, pose=[0.4, 0.4, 0.2, 1, 0, 0, 0]),
        Capsule(
            "rod", radius=0.05, base=[0, 0, 0], tip=[0.3, 0, 0], pose=[0.3, -0.4, 0.1, 1, 0, 0, 0]
        ),
        Cylinder("can", radius=0.07, height=0.2, pose=[0.6, 0.3, 0.1, 1, 0, 0, 0]),
        Mesh(
            "tetra",
            file_path=str(mesh_file),
            scale=[0.2, 0.2, 0.2],
            pose=[0.6, -0.3, 0.0, 1, 0, 0, 0],
        ),
    ]
    expected_bounds = {  # analytic: each shape in its own frame
        "box": ([-0.1, -0.2, -0.3], [0.1, 0.2, 0.3]),
        "ball": ([-0.1] * 3, [0.1] * 3),
        "rod": ([-0.05, -0.05, -0.05], [0.35, 0.05, 0.05]),
        "can": ([-0.07, -0.07, -0.1], [0.07, 0.07, 0.1]),
        "tetra": ([0, 0, 0], [0.2, 0.2, 0.2]),
    }
    for obstacle in obstacles:
        low, high = expected_bounds[obstacle.name]
        np.testing.assert_allclose(obstacle_mesh(obstacle).bounds, [low, high], atol=2e-3)
    world = WorldConfig(**{o.kind: [o] for o in obstacles})
    with Viewer("franka", world=world, port=0) as viewer:
        names = node_names(viewer)
        assert {f"/world/{o.name}" for o in obstacles} <= names
        node = viewer.server.scene.get_handle_by_name("/world/rod")
        np.testing.assert_allclose(node.position, [0.3, -0.4, 0.1])
        # an edit of the shared world shows after sync_world
        viewer.world_collision.update_obstacle_pose("rod", Pose.from_list([0, 0, 1, 1, 0, 0, 0]))
        viewer.world_collision.enable_obstacle("can", False)
        viewer.sync_world()
        np.testing.assert_allclose(node.position, [0.0, 0.0, 1.0])
        assert viewer.server.scene.get_handle_by_name("/world/can").opacity == 0.25
        viewer.show_world(None)
        assert not any(n.startswith("/world/") for n in node_names(viewer))


def test_scene_nodes_and_slider_frame_is_the_plan_row(franka_viewer):
    viewer = franka_viewer
    plan = linear_plan(viewer.robot_config)
    viewer.show_goal(Pose.from_list([0.5, 0.2, 0.3, 0.0, 1.0, 0.0, 0.0]))
    frames = viewer.show_plan(JointState.from_position(plan), dt=0.05)
    assert {
        "/robot/spheres",
        "/robot/ee",
        "/world/table",
        "/world/block",
        "/goal",
        "/plan/ee_path",
    } <= node_names(viewer)
    reference = Kinematics(viewer.robot_config, backend="torch")  # the other FK backend
    for row in (0, 7, len(plan) - 1):
        viewer._slider.value = row  # what the browser's slider sends
        assert viewer.frame == row
        torch.testing.assert_close(viewer.state, plan[row])
        fk = reference.forward(plan[row][None])
        ee = viewer.server.scene.get_handle_by_name("/robot/ee")
        np.testing.assert_allclose(ee.position, fk.ee_position[0].numpy(), atol=1e-5)
        spheres = viewer.server.scene.get_handle_by_name("/robot/spheres")
        np.testing.assert_allclose(
            spheres.batched_positions, fk.link_spheres[0, :, :3].numpy(), atol=1e-5
        )
        np.testing.assert_array_equal(viewer.sphere_clearance, frames.clearance[row].numpy())
    path = viewer.server.scene.get_handle_by_name("/plan/ee_path")
    np.testing.assert_allclose(path.points[:, 0], frames.ee_position[:-1].numpy(), atol=1e-6)
    # playback advances one row per dt / speed and pauses
    viewer.frame = 0
    viewer.play()
    time.sleep(0.4)
    viewer.pause()
    assert viewer._play_button.label == "Play"
    assert 2 <= viewer.frame < len(plan)
    with pytest.raises(ValueError, match="frame"):
        viewer.frame = len(plan)


def test_plans_from_solver_results_and_bad_plans():
    plan = torch.rand(12, 7)
    motion_gen_like = SimpleNamespace(
        interpolated_plan=JointState.from_position(plan), interpolation_dt=0.02, status="SUCCESS"
    )
    position, dt = plan_positions(motion_gen_like)
    assert dt == 0.02 and torch.equal(position, plan)
    trajopt_like = SimpleNamespace(
        interpolated_solution=JointState.from_position(torch.rand(2, 30, 7)),
        interpolated_last_index=torch.tensor([9, 29]),
        interpolation_dt=0.03,
    )
    position, dt = plan_positions(trajopt_like)
    assert dt == 0.03 and torch.equal(position, trajopt_like.interpolated_solution.position[0, :10])
    with pytest.raises(ValueError, match="dt"):
        plan_positions(plan)
    with pytest.raises(ValueError, match=r"plan: expected .* \[T, D\]"):
        plan_positions(torch.rand(3, 4, 7), dt=0.1)
    with pytest.raises(ValueError, match="holds no plan"):
        plan_positions(SimpleNamespace(interpolated_plan=None, status="IK_FAIL"))


def test_robot_with_a_urdf_shows_its_link_meshes(tmp_path):
    import yaml

    planar3 = RobotConfig.load("planar3")
    urdf = Path(planar3.source).with_name("planar3_collision.urdf")
    assert robot_urdf_path(planar3) is None  # its tree is written inline
    assert robot_urdf_path(RobotConfig.from_urdf(urdf, "base", "tool")) == urdf
    data = planar3.to_dict()
    del data["joints"]
    data["urdf_path"] = str(urdf)
    (tmp_path / "planar3_urdf.yml").write_text(yaml.safe_dump(data))
    robot = RobotConfig.from_yaml(tmp_path / "planar3_urdf.yml")
    assert robot_urdf_path(robot) == urdf
    with Viewer(robot, port=0) as viewer:  # the robot file's URDF, found by itself
        links = [n for n in node_names(viewer) if n.startswith("/robot/links/")]
        assert any(n.endswith("/link3") for n in links), links
        viewer.set_state(torch.tensor([0.3, -0.4, 0.5]))
        # link3's mesh node sits at link3's frame: the tip minus its 0.3 m link
        t1, t12 = 0.3, -0.1
        handle = viewer._urdf
        frame = handle._urdf.get_transform("link3", "base", collision_geometry=True)
        np.testing.assert_allclose(
            frame[:2, 3],
            [0.5 * math.cos(t1) + 0.4 * math.cos(t12), 0.5 * math.sin(t1) + 0.4 * math.sin(t12)],
            atol=1e-6,
        )


def test_mpc_view_draws_the_path_mpc_then_follows_and_is_throttled():
    from curobo_lite.sim import IdealTracker
    from curobo_lite.wrap import MpcSolver

    solver = MpcSolver.from_config("franka", world="table", num_particles=64, seed=2)
    goal = Pose.from_list([0.45, 0.2, 0.45, 0.0, 1.0, 0.0, 0.0])
    solver.update_goal(goal)
    tracker = IdealTracker(JointState.from_position(solver.robot_config.retract_config[None]))
    reference = Kinematics(solver.robot_config, backend="torch")
    with Viewer(solver.robot_config, port=0) as viewer:
        view = viewer.mpc_callback(solver, max_rate_hz=1e6, num_traces=5)
        assert viewer.world_collision is solver.world_collision  # shared, not copied
        compared = 0
        state = tracker.state
        for step in range(4):
            result = solver.step(state)
            view(step)
            state = tracker.step(result.action)
            if not result.metrics["limit_clamped"]:
                # the predicted path's first step is where the robot went
                ee = reference.forward(state.position).ee_position[0]
                torch.testing.assert_close(view.best_path[1], ee, atol=1e-5, rtol=0)
                compared += 1
        assert compared >= 2 and view.updates == 4
        assert view.sample_paths.shape == (5, solver.dynamics_model.horizon, 3)
        torch.testing.assert_close(viewer.state, solver.rollout.start_state.position[0])
        assert {"/mpc/best", "/mpc/samples", "/goal"} <= node_names(viewer)
        samples = viewer.server.scene.get_handle_by_name("/mpc/samples")
        assert samples.points.shape == (5 * (solver.dynamics_model.horizon - 1), 2, 3)
        slow = viewer.mpc_callback(solver, max_rate_hz=1e-3)
        for step in range(5):
            slow(step)
        assert slow.updates == 1 and len(slow.call_seconds) == 5
        assert slow.overhead_ms()["updates"] == 1
    with pytest.raises(ValueError, match="max_rate_hz"):
        viewer.mpc_callback(solver, max_rate_hz=0)


def test_missing_viser_names_the_extra(monkeypatch, capsys):
    from curobo_lite.cli import main

    monkeypatch.setitem(sys.modules, "viser", None)
    with pytest.raises(ImportError, match=r"curobo_lite\[viz\]"):
        Viewer("franka")
    code = main(["mpc", "--goal", "0.4", "0", "0.4", "0", "1", "0", "0", "--steps", "1", "--view"])
    assert code == 2
    assert "curobo_lite[viz]" in capsys.readouterr().err


def test_mpc_command_line_with_view(monkeypatch, capsys):
    from curobo_lite.cli import main

    served = []
    monkeypatch.setattr(Viewer, "wait", lambda self: (served.append(self.plan), self.close()))
    code = main(
        [
            "mpc",
            "--world",
            "table",
            "--goal",
            "0.4",
            "0.1",
            "0.4",
            "0",
            "1",
            "0",
            "0",
            "--steps",
            "3",
            "--no-progress",
            "--view",
            "--view-port",
            "0",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0 and "viewer: http://127.0.0.1:" in out and "ms added per step" in out
    assert served[0].num_frames == 3  # the executed motion, for replay


def test_plan_command_line_with_view(monkeypatch, capsys):
    from curobo_lite.cli import main
    from curobo_lite.wrap.motion.motion_gen import MotionGen, MotionGenResult, MotionGenStatus

    def planned(self, start, goal):  # the planner is tested elsewhere: a known plan here
        plan = linear_plan(self.robot_config, rows=9)
        return MotionGenResult(
            True, MotionGenStatus.SUCCESS, JointState.from_position(plan), 0.1, 0.0, {}
        )

    served = []
    monkeypatch.setattr(MotionGen, "plan_single", planned)
    monkeypatch.setattr(Viewer, "wait", lambda self: (served.append(self), self.close()))
    goal = ["0.5", "0.2", "0.3", "0", "1", "0", "0"]
    code = main(["plan", "--world", "table", "--goal", *goal, "--view", "--view-port", "0"])
    out = capsys.readouterr().out
    assert code == 0 and "viewer: serving http://127.0.0.1:" in out
    viewer = served[0]
    assert viewer.plan.num_frames == 9 and viewer.plan.dt == 0.1
    assert {"/world/table", "/goal", "/plan/ee_path"} <= node_names(viewer)


# --- in a real browser ---------------------------------------------------------------------------


@pytest.mark.slow
def test_browser_shows_robot_world_and_plan(franka_viewer, tmp_path):
    from PIL import Image

    from curobo_lite.viz import browser

    if browser.find_chromium() is None:
        pytest.skip("no chromium / chromedriver installed (`make browser` installs Debian's)")
    pytest.importorskip("selenium", reason="the browser test drives Chromium with selenium")
    viewer = franka_viewer
    plan = linear_plan(viewer.robot_config)
    viewer.show_goal(Pose.from_list([0.5, 0.2, 0.3, 0.0, 1.0, 0.0, 0.0]))
    frames = viewer.show_plan(plan, dt=0.05)
    # without the environment map: SwiftShader spends ~20 s preparing it for the first frame
    viewer.server.scene.configure_environment_map(hdri=None)
    session = browser.open_headless(viewer.url)
    try:
        expected = {
            "/robot/spheres",
            "/robot/ee",
            "/world/table",
            "/world/block",
            "/goal",
            "/plan/ee_path",
        }
        assert expected <= browser.wait_for_nodes(session, expected)
        assert len(viewer.server.get_clients()) == 1
        # move the slider server-side: the browser's end-effector frame follows to that row
        viewer.frame = 12
        target = frames.ee_position[12].numpy()

        def ee_at_target() -> bool:
            position = browser.node_position(session, "/robot/ee")
            return position is not None and np.allclose(position, target, atol=1e-4)

        browser.wait_until(ee_at_target, timeout=20, what="/robot/ee at plan row 12")
        np.testing.assert_allclose(
            browser.node_position(session, "/goal"), [0.5, 0.2, 0.3], atol=1e-6
        )
        assert "frame" in session.page_source  # the plan slider is on the page
        time.sleep(0.5)  # let the software renderer draw the last update
        shot = tmp_path / "viewer.png"
        assert session.save_screenshot(str(shot))
        image = np.asarray(Image.open(shot).convert("RGB"), dtype=np.float64)
        assert image.shape[0] > 500 and image.std() > 5  # not a blank page
    finally:
        session.quit()
