"""Pick and place (issue 31): held objects on every bundled arm, the viewer drawing a held box,
and the shelf-to-table pick and place planned and run on the MuJoCo plant.

References independent of the code under test: a numpy forward kinematics of the Franka's URDF
(``curobo_reference.UrdfFK``) carries the true box with the hand; coal measures the box's
distance to every obstacle; trimesh samples the box's surface; MuJoCo's own state gives the
box's tilt and where it ends up; the arm's exact meshes are judged by a fresh RobotWorld that
never held anything.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
import trimesh
from curobo_reference import UrdfFK

from curobo_lite.types import JointState, quat_to_matrix
from curobo_lite.types.errors import InputValueError
from curobo_lite.wrap import MotionGen, RobotWorld

coal = pytest.importorskip("coal")

URDF = Path(__file__).resolve().parents[1] / "configs" / "robot" / "franka_collision.urdf"
FINGERS = {"panda_finger_joint1": 0.04, "panda_finger_joint2": 0.04}
TIP = 0.1034  # the Panda's finger pads along panda_hand's z
#: the tolerance of the box's true clearance along every plan (m): the exact check's
MESH_TOLERANCE = 1e-3
MAX_TILT = 0.05


def _coal_box(dims, matrix: np.ndarray):
    return coal.Box(*map(float, dims)), coal.Transform3s(matrix[:3, :3], matrix[:3, 3])


def _coal_distance(a, b) -> float:
    request = coal.DistanceRequest()
    request.enable_signed_distance = True
    result = coal.DistanceResult()
    coal.distance(a[0], a[1], b[0], b[1], request, result)
    return result.min_distance


def _matrix(pose) -> np.ndarray:
    matrix = np.eye(4)
    matrix[:3, :3] = quat_to_matrix(torch.as_tensor(pose[3:], dtype=torch.float64)).numpy()
    matrix[:3, 3] = pose[:3]
    return matrix


# --- held objects on every bundled arm -------------------------------------------------------


@pytest.mark.parametrize("robot", ["franka", "ur5e", "iiwa"])
def test_attach_and_detach_on_every_bundled_arm(robot):
    """A box just beyond the end effector: attaching fills at most 12 reserved spheres on
    ``attached_object`` that cover its surface (trimesh samples), makes the pose valid, keeps the
    spheres' clearance to a plate no larger than coal's for the true box, and detaching restores
    every distance."""
    checker = RobotWorld.from_config(robot, None)
    q = checker.robot_config.retract_config[None].clone()
    state = checker.kinematics.forward(q, spheres=False)
    hand = np.eye(4)
    hand[:3, :3] = quat_to_matrix(state.ee_quaternion[0].double()).numpy()
    hand[:3, 3] = state.ee_position[0].double().numpy()
    dims = [0.04, 0.05, 0.06]
    box = hand.copy()
    box[:3, 3] += (TIP if robot == "franka" else 0.035) * hand[:3, 2]
    below = box[:3, 3] - np.array([0.0, 0.0, 0.12])
    plate = {"dims": [0.2, 0.2, 0.02], "pose": [*below.tolist(), 1.0, 0.0, 0.0, 0.0]}
    pose = [*box[:3, 3].tolist(), 1.0, 0.0, 0.0, 0.0]
    box[:3, :3] = np.eye(3)
    world = RobotWorld.from_config(
        robot, {"cuboid": {"box": {"dims": dims, "pose": pose}, "plate": plate}}
    )
    generator = torch.Generator().manual_seed(0)
    low, high = world.robot_config.joint_limits.position
    samples = low + (high - low) * torch.rand(32, q.shape[1], generator=generator, dtype=low.dtype)
    before = world.collision_distance(samples)
    held = world.attach_objects_to_robot(JointState.from_position(q), ["box"])
    assert bool(world.validate(q)[0])
    assert 1 <= held.spheres.shape[0] <= 12
    begin, end = world.kinematics.reserved_spheres("attached_object")
    spheres = world.get_link_spheres(q)[0, begin:end].double()
    spheres = spheres[spheres[:, 3] > 0]
    surface = trimesh.creation.box(extents=dims)
    surface.apply_transform(box)
    points = torch.as_tensor(surface.sample(1500, seed=0))
    gap = ((points[:, None] - spheres[None, :, :3]).norm(dim=-1) - spheres[None, :, 3]).amin(1)
    assert float(gap.max()) <= 1e-6
    true = _coal_distance(_coal_box(dims, box), _coal_box(plate["dims"], _matrix(plate["pose"])))
    assert float(world.collision_distance(q)[0]) <= true + 1e-6
    world.detach_object_from_robot()
    torch.testing.assert_close(world.collision_distance(samples), before)


# --- the viewer draws a held object ---------------------------------------------------------


def test_viewer_draws_the_held_box_on_the_hand_and_where_it_was_left():
    """The held box's node carries the box's true shape (its vertices span the box's sides) at
    the hand's pose by the URDF's numpy FK in held rows, at the first held row's before and the
    last held row's after; the reserved spheres are drawn only in held rows."""
    pytest.importorskip("viser")
    from curobo_lite.viz import Viewer

    names = list(RobotWorld.from_config("franka", None).robot_config.joint_names)
    q0 = RobotWorld.from_config("franka", None).robot_config.retract_config.clone()
    fk = UrdfFK(URDF)

    def hand(q):
        return fk.link_transforms("panda_link0", {**dict(zip(names, q.tolist())), **FINGERS})[
            "panda_hand"
        ]

    dims = [0.04, 0.05, 0.1]
    box = hand(q0) @ np.array([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, TIP], [0, 0, 0, 1.0]])
    quaternion = torch.as_tensor(box[:3, :3])
    from curobo_lite.types import matrix_to_quat

    pose = [*box[:3, 3].tolist(), *matrix_to_quat(quaternion).tolist()]
    world = RobotWorld.from_config("franka", {"cuboid": {"box": {"dims": dims, "pose": pose}}})
    held = world.attach_objects_to_robot(q0[None], ["box"])
    viewer = Viewer("franka", world=None, port=0, urdf=False)
    try:
        viewer.attach_object(held)
        node = viewer._held_nodes[0]
        local = np.asarray(node.vertices, np.float64)
        np.testing.assert_allclose(np.sort(local.max(0) - local.min(0)), sorted(dims), atol=1e-5)
        path = q0 + torch.linspace(0.0, 1.0, 12)[:, None] * torch.tensor(
            [0.6, -0.3, 0.2, 0.3, 0.0, 0.4, 0.5]
        )
        frames = viewer.show_plan(path, dt=0.1, held_rows=(3, 8))
        begin, end = viewer.kinematics.reserved_spheres("attached_object")
        for row in range(12):
            viewer.frame = row
            expected = hand(path[min(max(row, 3), 7)])
            np.testing.assert_allclose(np.asarray(node.position), expected[:3, 3], atol=1e-5)
            drawn = quat_to_matrix(torch.as_tensor(np.asarray(node.wxyz))).numpy()
            np.testing.assert_allclose(drawn, expected[:3, :3], atol=1e-5)
            shown = frames.spheres[row, begin:end, 3] > 0
            assert bool(shown.any()) == (3 <= row < 8)
        viewer.detach_object()
        assert viewer.held is None and not viewer._held_nodes
    finally:
        viewer.close()


# --- the task's checks ---------------------------------------------------------------------


def test_task_refuses_bad_input_by_name():
    from curobo_lite.wrap.motion.pick_place import PickPlaceTask

    with pytest.raises(InputValueError, match="box_dims"):
        PickPlaceTask(box_dims=[0.05, 0.05])
    with pytest.raises(InputValueError, match="lift"):
        PickPlaceTask(lift=0.0)
    with pytest.raises(InputValueError, match="place_clearance"):
        PickPlaceTask(place_clearance=-0.01)
    with pytest.raises(InputValueError, match="no_such"):
        PickPlaceTask.from_dict({"no_such": 1})
    task = PickPlaceTask.sampled(3)
    assert task.box_position != PickPlaceTask().box_position
    motion_gen = MotionGen.from_config("franka", "table")
    from curobo_lite.wrap.motion.pick_place import plan_pick_place

    with pytest.raises(InputValueError, match="motion_gen"):
        plan_pick_place(motion_gen, task, JointState.from_position(torch.zeros(1, 7)))


# --- the pick and place, planned and run ----------------------------------------------------


@pytest.fixture(scope="module")
def picked():
    pytest.importorskip("mujoco")
    from curobo_lite.wrap.motion.pick_place import (
        PickPlaceTask,
        pick_place_motion_gen,
        plan_pick_place,
    )
    from curobo_lite.wrap.motion.pick_place_run import run_pick_place

    task = PickPlaceTask()
    motion_gen = pick_place_motion_gen(task)
    start = JointState.from_position(motion_gen.robot_config.retract_config[None].clone())
    plan = plan_pick_place(motion_gen, task, start)
    run = run_pick_place(motion_gen, plan) if plan.success else None
    return task, motion_gen, plan, run


def test_pick_and_place_plans_are_clear_for_arm_and_true_box(picked):
    """Every stage planned. The goal set's index names a pre-grasp the plan reaches (the hand
    horizontal, tip + approach distance short of the box's centre along its axis, by the numpy
    FK); the approach is straight; the true box, carried by that FK from the grasp, keeps
    ``MESH_TOLERANCE`` from every obstacle (coal) and within ``MAX_TILT`` of upright while held;
    the arm's meshes pass a fresh RobotWorld's swept exact check in the world of each stage."""
    task, motion_gen, plan, _ = picked
    assert plan.success, [(s.name, s.status) for s in plan.stages]
    names = list(motion_gen.robot_config.joint_names)
    fk = UrdfFK(URDF)

    def hand(q):
        return fk.link_transforms("panda_link0", {**dict(zip(names, q.tolist())), **FINGERS})[
            "panda_hand"
        ]

    box_centre = np.asarray(task.box_position)
    # the pre-grasp reached is one of the set: hand z horizontal at the grasp's yaw
    pre = hand(plan.stage("reach").trajectory.position[-1])
    yaw = task.grasp_yaws[plan.goalset_index // 2]
    np.testing.assert_allclose(pre[:3, 2], [math.cos(yaw), math.sin(yaw), 0.0], atol=0.01)
    np.testing.assert_allclose(
        pre[:3, 3] + (TIP + task.approach_distance) * pre[:3, 2], box_centre, atol=1e-3
    )
    # the approach: straight along the hand's axis, the orientation held
    rows = [hand(q) for q in plan.stage("approach").trajectory.position]
    grasp = rows[-1]
    np.testing.assert_allclose(grasp[:3, 3] + TIP * grasp[:3, 2], box_centre, atol=1e-3)
    for m in rows:
        offset = m[:3, 3] - pre[:3, 3]
        off_line = offset - np.dot(offset, pre[:3, 2]) * pre[:3, 2]
        assert np.linalg.norm(off_line) <= 2e-3
        assert np.linalg.norm(m[:3, :3] - pre[:3, :3]) <= 0.02
    # the true box rides with the hand from the grasp on (numpy FK, coal)
    box0 = np.eye(4)
    box0[:3, 3] = box_centre
    in_hand = np.linalg.inv(grasp) @ box0
    world = task.world_config()
    others = [
        _coal_box(o.dims, _matrix(o.pose)) for o in world if o.name != "box" and o.kind == "cuboid"
    ]
    smallest, largest_tilt = math.inf, 0.0
    for name in ("retreat", "carry", "place"):
        for q in plan.stage(name).trajectory.position:
            box = hand(q) @ in_hand
            shape = _coal_box(task.box_dims, box)
            smallest = min(smallest, min(_coal_distance(shape, o) for o in others))
            largest_tilt = max(largest_tilt, math.acos(min(1.0, box[2, 2])))
    assert smallest >= -MESH_TOLERANCE
    assert largest_tilt <= MAX_TILT
    placed = hand(plan.stage("place").trajectory.position[-1]) @ in_hand
    table_top = task.table_position[2] + 0.5 * task.table_dims[2]
    assert placed[2, 3] - 0.5 * task.box_dims[2] - table_top == pytest.approx(
        task.place_clearance, abs=1e-3
    )
    # the arm, judged on its meshes by a checker that never held anything
    placed_world = task.world_config()
    placed_world.get("box").pose = list(plan.placed_pose)
    without_box = task.world_config()
    without_box.remove("box")
    for name, stage_world in (
        ("reach", world),
        ("approach", world),
        ("retreat", without_box),
        ("carry", without_box),
        ("place", without_box),
        ("release", placed_world),
    ):
        judge = RobotWorld.from_config("franka", stage_world)
        ok, clearance = judge.trajectory_mesh_report(plan.stage(name).trajectory.position)
        assert bool(ok) or float(clearance) >= -MESH_TOLERANCE, (name, float(clearance))


def _box_distance(points: np.ndarray, dims, centre) -> np.ndarray:
    """Signed distance of ``points [..., 3]`` to an axis-aligned box (numpy, the textbook
    formula: an independent reference for the sphere checks)."""
    q = np.abs(points - np.asarray(centre)) - 0.5 * np.asarray(dims)
    outside = np.linalg.norm(np.maximum(q, 0.0), axis=-1)
    return outside + np.minimum(q.max(-1), 0.0)


@pytest.mark.slow
def test_a_formerly_failing_box_plans_with_every_sphere_clear_and_runs_in_mujoco():
    """Seed 10 (its straight carry ran joint 6 into its limit near the base, so it never
    planned): every stage plans; by the numpy URDF FK the true box carried from the grasp keeps
    ``MESH_TOLERANCE`` from the obstacles (coal) and within ``MAX_TILT`` of upright; every
    collision sphere of the arm (the MuJoCo plant's geometry) is clear of every obstacle at
    every sample of every stage (numpy box distances), except the hand's and fingers' against
    the box they grasp or let go of; in MuJoCo there is no contact but the grasp."""
    pytest.importorskip("mujoco")
    from curobo_lite.wrap.motion.pick_place import (
        PickPlaceTask,
        pick_place_motion_gen,
        plan_pick_place,
    )
    from curobo_lite.wrap.motion.pick_place_run import run_pick_place

    task = PickPlaceTask.sampled(10)
    motion_gen = pick_place_motion_gen(task)
    start = JointState.from_position(motion_gen.robot_config.retract_config[None].clone())
    plan = plan_pick_place(motion_gen, task, start)
    assert plan.success, [(s.name, s.status) for s in plan.stages]
    names = list(motion_gen.robot_config.joint_names)
    fk = UrdfFK(URDF)

    def links(q):
        return fk.link_transforms("panda_link0", {**dict(zip(names, q.tolist())), **FINGERS})

    grasp = links(plan.stage("approach").trajectory.position[-1])["panda_hand"]
    box0 = np.eye(4)
    box0[:3, 3] = task.box_position
    in_hand = np.linalg.inv(grasp) @ box0
    world = task.world_config()
    obstacles = [o for o in world if o.kind == "cuboid"]
    assert all(o.pose[3:] == [1, 0, 0, 0] for o in obstacles)  # axis-aligned: the formula
    others = [_coal_box(o.dims, _matrix(o.pose)) for o in obstacles if o.name != "box"]
    spheres = motion_gen.robot_config.collision.spheres
    moving = [link for link in spheres if link != "panda_link0"]  # the base never moves
    hand_links = {"panda_hand", "panda_leftfinger", "panda_rightfinger"}
    placed = task.world_config().get("box")
    placed.pose = list(plan.placed_pose)
    smallest, largest_tilt = math.inf, 0.0
    for stage in plan.stages:
        near_box = stage.name in ("reach", "approach", "release")
        box_now = placed if stage.name == "release" else world.get("box")
        for q in stage.trajectory.position:
            frames = links(q)
            if stage.holding:
                box = frames["panda_hand"] @ in_hand
                shape = _coal_box(task.box_dims, box)
                smallest = min(smallest, min(_coal_distance(shape, o) for o in others))
                largest_tilt = max(largest_tilt, math.acos(min(1.0, box[2, 2])))
            for link in moving:
                local = np.asarray([row for row in spheres[link] if row[3] > 0.0])
                if not len(local):
                    continue
                centres = local[:, :3] @ frames[link][:3, :3].T + frames[link][:3, 3]
                for obstacle in obstacles:
                    if obstacle.name == "box" and (stage.holding or link in hand_links):
                        continue  # held: its true shape above; grasped: the meshes judge
                    if obstacle.name == "box" and not near_box:
                        continue  # the box is held or set down (judged above and by coal)
                    pose = box_now.pose if obstacle.name == "box" else obstacle.pose
                    gap = _box_distance(centres, obstacle.dims, pose[:3]) - local[:, 3]
                    assert gap.min() >= -1e-4, (stage.name, link, obstacle.name, gap.min())
    assert smallest >= -MESH_TOLERANCE
    assert largest_tilt <= MAX_TILT
    run = run_pick_place(motion_gen, plan)
    assert not run.unexpected_contacts, run.unexpected_contacts
    assert run.max_tilt_carried <= MAX_TILT


def test_pick_and_place_runs_in_mujoco_upright_without_stray_contacts(picked):
    """MuJoCo's state: the weld holds the box from the grasp to the release, its tilt (from
    MuJoCo's quaternions) stays within ``MAX_TILT`` while carried, it follows the hand within
    5 mm, there is no contact but the hand's and fingers' with the box (and the box's with its
    board before the lift and the table after the release), and it ends upright on the table
    where it was to go."""
    task, _, plan, run = picked
    assert run is not None
    w, x, y = run.box[:, 3], run.box[:, 4], run.box[:, 5]
    tilt = np.arccos(np.clip(1.0 - 2.0 * (x * x + y * y), -1.0, 1.0))
    assert run.carried.sum() * 0.01 >= 3.0  # seconds carried
    assert float(tilt[run.carried].max()) <= MAX_TILT
    assert run.max_offset_carried <= 5e-3
    assert not run.unexpected_contacts, run.unexpected_contacts
    assert run.max_contacts == 0
    assert {link for link, _ in run.grasp_contacts} <= {
        "panda_hand",
        "panda_leftfinger",
        "panda_rightfinger",
        "attached_object",
    }
    table_top = task.table_position[2] + 0.5 * task.table_dims[2]
    final = run.box[-1]
    assert final[2] == pytest.approx(table_top + 0.5 * task.box_dims[2], abs=2e-3)
    np.testing.assert_allclose(final[:2], task.place_xy, atol=5e-3)
    assert float(tilt[-1]) <= 0.01
    assert abs(float(w[-1])) > 0.0  # a unit quaternion from MuJoCo
    lifted = run.box[run.carried, 2].max() - task.box_position[2]
    assert lifted >= task.lift - 5e-3  # it really left the board


def test_command_line_reports_and_exits_by_the_run(picked, monkeypatch, capsys, tmp_path):
    """``curobo-lite pick-place`` prints the stages and MuJoCo's numbers, writes them as JSON
    and a figure, exits 0; a bad --max-tilt exits 2 before planning."""
    import curobo_lite.wrap.motion.pick_place as module
    import curobo_lite.wrap.motion.pick_place_run as runner
    from curobo_lite.cli import main

    _, _, plan, run = picked
    monkeypatch.setattr(module, "plan_pick_place", lambda *a, **k: plan)
    monkeypatch.setattr(runner, "run_pick_place", lambda *a, **k: run)
    out = tmp_path / "r.json"
    figure = tmp_path / "r.png"
    assert main(["pick-place", "--json", str(out), "--plot", str(figure)]) == 0
    text = capsys.readouterr().out
    assert "largest tilt while carried" in text and "carry" in text
    report = json.loads(out.read_text())
    assert [s["name"] for s in report["plan"]["stages"]] == [s.name for s in plan.stages]
    assert report["run"]["max_tilt_carried_rad"] == pytest.approx(run.max_tilt_carried)
    assert figure.stat().st_size > 10_000
    assert main(["pick-place", "--max-tilt", "-1"]) == 2
    assert "--max-tilt" in capsys.readouterr().err
