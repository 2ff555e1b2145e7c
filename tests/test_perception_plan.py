"""End to end: MotionGen plans in a world made only from synthetic depth frames, and its plans
are collision-free against the true boxes by coal; a box moved into the first plan's path and
the cameras' next frames change the plan. MPC's closed loop in such a world (slow)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from collision_reference import coal_sphere_box_distance

from curobo_lite.geom import Cuboid, Sphere, VoxelWorld, WorldConfig
from curobo_lite.geom.depth_camera import DepthCamera
from curobo_lite.sim import IdealTracker, run_closed_loop
from curobo_lite.types import JointState, Pose
from curobo_lite.wrap import MotionGen, MotionGenStatus, MpcSolver

TABLE = {"pose": [0.47, 0.0, -0.02, 1.0, 0.0, 0.0, 0.0], "dims": [1.26, 1.4, 0.04]}
WALL = {"pose": [0.42, -0.16, 0.45, 1.0, 0.0, 0.0, 0.0], "dims": [0.25, 0.03, 0.3]}
GOAL = [0.42, -0.35, 0.40, 0.0, 1.0, 0.0, 0.0]
EYES = ([1.5, 0.8, 1.0], [1.5, -0.9, 0.9], [-0.4, -0.6, 1.2], [0.3, 0.9, 1.3])


def _world(boxes: dict) -> WorldConfig:
    return WorldConfig(
        cuboid=[Cuboid(name, pose=box["pose"], dims=box["dims"]) for name, box in boxes.items()]
    )


def _observe(grid: VoxelWorld, boxes: dict, robot_spheres: torch.Tensor) -> None:
    """Frames of the boxes and of the robot itself (its spheres drawn as balls) from every
    eye, integrated with the robot filtered out."""
    scene = _world(boxes)
    for i, (x, y, z, r) in enumerate(robot_spheres.tolist()):
        if r > 0:
            scene.add(Sphere(f"robot_{i}", pose=[x, y, z, 1, 0, 0, 0], radius=r))
    camera = DepthCamera(scene, width=320, height=240, fov_y_degrees=60.0)
    for eye in EYES:
        pose = DepthCamera.look_at(eye, [0.4, 0.0, 0.3])
        grid.integrate_depth(
            camera.render(pose), camera.intrinsics, pose, robot_spheres=robot_spheres,
            update_esdf=False,
        )  # fmt: skip
    grid.update_esdf()


def _clearance(motion_gen: MotionGen, plan: torch.Tensor, boxes: dict) -> float:
    """Smallest coal distance of the plan's robot spheres (every second sample) to the boxes."""
    spheres = motion_gen.checker.get_world_spheres(plan[::2]).detach().reshape(-1, 4)
    spheres = spheres[spheres[:, 3] > 0].double().numpy()
    boxes = [(box["pose"], box["dims"]) for box in boxes.values()]
    return float(coal_sphere_box_distance(spheres, boxes).min())


def test_motion_gen_plans_in_a_depth_world_and_replans_after_a_move() -> None:
    boxes = {"table": TABLE, "wall": WALL}
    grid = VoxelWorld([-0.4, -0.8, -0.1], [1.2, 0.8, 1.1], 0.02, self_filter_margin=0.02)
    grid.inflation = grid.conservative_inflation()
    motion_gen = MotionGen.from_config("franka", grid)
    start = JointState.from_position(motion_gen.robot_config.retract_config[None].clone())
    robot = motion_gen.checker.get_link_spheres(start.position).detach()[0]
    _observe(grid, boxes, robot)
    # the camera saw the arm, the filter dropped it: the start is clear
    assert float(motion_gen.checker.collision_distance(start.position)) > 0.0

    first = motion_gen.plan_single(start, Pose.from_list(GOAL))
    assert first.status is MotionGenStatus.SUCCESS, first
    plan = first.interpolated_plan.position
    assert _clearance(motion_gen, plan, boxes) >= 0.0

    # a box appears where the hand passed half way; the next frames show it and carve nothing
    # else away; the old plan now runs through it and the new one around it
    middle = motion_gen.checker.kinematics.forward(plan[len(plan) // 2][None]).ee_position[0]
    moved = {**boxes, "box": {"pose": [*middle.tolist(), 1, 0, 0, 0], "dims": [0.08] * 3}}
    _observe(grid, moved, robot)
    assert _clearance(motion_gen, plan, moved) < 0.0
    second = motion_gen.plan_single(start, Pose.from_list(GOAL))
    assert second.status is MotionGenStatus.SUCCESS, second
    assert _clearance(motion_gen, second.interpolated_plan.position, moved) >= 0.0


def test_without_the_self_filter_the_arm_blocks_itself() -> None:
    """The same frames integrated without the robot's spheres: the start is in collision
    with the arm's own image (what the filter is for)."""
    grid = VoxelWorld([-0.4, -0.8, -0.1], [1.2, 0.8, 1.1], 0.04)
    motion_gen = MotionGen.from_config("franka", grid)
    start = motion_gen.robot_config.retract_config[None].clone()
    robot = motion_gen.checker.get_link_spheres(start).detach()[0]
    scene = _world({"table": TABLE})
    for i, (x, y, z, r) in enumerate(robot.tolist()):
        if r > 0:
            scene.add(Sphere(f"robot_{i}", pose=[x, y, z, 1, 0, 0, 0], radius=r))
    camera = DepthCamera(scene, width=160, height=120)
    pose = DepthCamera.look_at(EYES[0], [0.4, 0.0, 0.3])
    grid.integrate_depth(camera.render(pose), camera.intrinsics, pose)
    assert float(motion_gen.checker.collision_distance(start)) < 0.0
    assert np.isfinite(float(grid.esdf.min()))


@pytest.mark.slow
def test_mpc_reaches_over_a_table_it_only_sees_through_depth_frames() -> None:
    """MPC (100 particles) in a grid built from three depth frames of a raised board (and the
    arm, filtered out): the closed loop reaches low over the board, clear of the true board by
    coal."""
    board = {"pose": [0.75, 0.0, 0.2, 1.0, 0.0, 0.0, 0.0], "dims": [0.6, 1.0, 0.04]}
    grid = VoxelWorld([-0.2, -0.7, -0.1], [1.2, 0.7, 1.0], 0.02)
    grid.inflation = grid.conservative_inflation()
    mpc = MpcSolver.from_config(robot="franka", world=grid, num_particles=100)
    start = JointState.from_position(mpc.robot_config.retract_config[None].clone())
    robot = mpc.kinematics.forward(start.position).link_spheres.detach()[0]
    _observe(grid, {"board": board}, robot)
    goal = Pose.from_list([0.55, 0.1, 0.40, 0.0, 1.0, 0.0, 0.0])
    record = run_closed_loop(mpc, IdealTracker(start), goal, 220)
    spheres = mpc.kinematics.world_spheres(mpc.kinematics.forward(record.position).link_spheres)
    spheres = spheres.detach().reshape(-1, 4)
    spheres = spheres[spheres[:, 3] > 0].double().numpy()
    clearance = coal_sphere_box_distance(spheres, [(board["pose"], board["dims"])])
    assert float(clearance.min()) >= 0.0, float(clearance.min())
    assert float(record.position_error[-1]) < 0.02


def test_plan_command_plans_in_what_depth_cameras_see(capsys) -> None:
    """``curobo-lite plan --depth 3``: MotionGen in the voxel world three synthetic cameras
    see of the table scene; the printed clearance to the true obstacles is positive, and an
    empty ``--depth`` world is refused naming the option."""
    from curobo_lite.cli import main

    goal = ["--goal", "0.5", "-0.3", "0.25", "0", "1", "0", "0"]
    assert main(["plan", "--world", "table", *goal, "--depth", "3"]) == 0
    out = capsys.readouterr().out
    assert "SUCCESS" in out
    clearance = float(out.split("clearance to the true obstacles ")[1].split(" mm")[0])
    assert clearance > 0.0
    assert main(["plan", *goal, "--depth", "2"]) == 2
    assert "--depth: expected a --world" in capsys.readouterr().err
