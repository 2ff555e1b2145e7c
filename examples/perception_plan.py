"""Plan in a world seen only through depth cameras (synthetic ones: no hardware, no downloads).

Three depth cameras look at a table with a wall on it; their frames (640 x 480) are integrated
into a VoxelWorld (2 cm voxels, the robot's own spheres filtered out), MotionGen plans around
what they saw, and the plan is checked against the true boxes. Then the wall moves, the cameras
take new frames (carving its old place free) and MotionGen plans again.

Run from the repository root::

    python examples/perception_plan.py [--device cuda]
"""

from __future__ import annotations

import argparse
import time

import torch

from curobo_lite.geom import Cuboid, Sphere, VoxelWorld, WorldCollision, WorldConfig
from curobo_lite.geom.depth_camera import DepthCamera
from curobo_lite.types import JointState, Pose, TensorDeviceType
from curobo_lite.wrap import MotionGen

EYES = ([1.5, 0.8, 1.0], [1.5, -0.9, 0.9], [-0.4, -0.6, 1.2])
GOAL = [0.42, -0.35, 0.40, 0.0, 1.0, 0.0, 0.0]


def scene(wall_y: float) -> WorldConfig:
    return WorldConfig(
        cuboid=[
            Cuboid("table", pose=[0.47, 0.0, -0.02, 1, 0, 0, 0], dims=[1.26, 1.4, 0.04]),
            Cuboid("wall", pose=[0.42, wall_y, 0.45, 1, 0, 0, 0], dims=[0.25, 0.03, 0.3]),
        ]
    )


def observe(grid: VoxelWorld, world: WorldConfig, robot: torch.Tensor) -> float:
    """Render every camera (the robot drawn as its spheres, as a real camera sees the arm) and
    integrate the frames; returns the seconds spent integrating."""
    seen = world.copy()
    for i, (x, y, z, r) in enumerate(robot.tolist()):
        if r > 0:
            seen.add(Sphere(f"link_sphere_{i}", pose=[x, y, z, 1, 0, 0, 0], radius=r))
    camera = DepthCamera(seen, 640, 480, tensor_args=grid.tensor_args)
    spent = 0.0
    for eye in EYES:
        pose = DepthCamera.look_at(eye, [0.4, 0.0, 0.3])
        depth = camera.render(pose)
        start = time.perf_counter()
        grid.integrate_depth(depth, camera.intrinsics, pose, robot_spheres=robot)
        spent += time.perf_counter() - start
    return spent


def report(label: str, motion_gen: MotionGen, result, truth: WorldConfig) -> None:
    if not result.success:
        print(f"{label}: {result.status}")
        return
    plan = result.interpolated_plan.position
    spheres = motion_gen.checker.get_world_spheres(plan)
    true_distance = WorldCollision(truth, motion_gen.tensor_args).sphere_distance(spheres)
    print(
        f"{label}: {result.status.name}, {plan.shape[0]} samples, clearance in the voxel "
        f"world {result.min_distance * 100:.1f} cm, against the true boxes "
        f"{float(true_distance.distance.min()) * 100:.1f} cm"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    tensor_args = TensorDeviceType(torch.device(args.device))
    grid = VoxelWorld([-0.4, -0.8, -0.1], [1.2, 0.8, 1.1], 0.02, tensor_args)
    grid.inflation = grid.conservative_inflation()  # never report more clearance than seen
    motion_gen = MotionGen.from_config("franka", grid, tensor_args=tensor_args)
    start = JointState.from_position(motion_gen.robot_config.retract_config[None].clone())
    robot = motion_gen.checker.get_link_spheres(start.position).detach()[0]

    truth = scene(-0.16)
    spent = observe(grid, truth, robot)
    print(f"3 frames integrated in {spent * 1e3:.0f} ms, {len(grid.occupied_centres())} voxels")
    goal = Pose.from_list(GOAL)
    report("wall in the way", motion_gen, motion_gen.plan_single(start, goal), truth)

    truth = scene(0.25)  # the wall moves out of the way
    observe(grid, truth, robot)
    report("wall moved", motion_gen, motion_gen.plan_single(start, goal), truth)


if __name__ == "__main__":
    main()
