"""The static grid broad phase (``broad_phase="grid"``): distances exact against coal and dense
torch SDFs near contact, a sound per-cell lower bound, edits after the build (dynamic slots,
rebuilds, capacity growth), and the MPC's frame cost through it."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from collision_reference import box_sdf
from test_world_collision import (
    _args,
    coal_distances,
    icosphere_mesh,
    random_obstacle,
    random_spheres,
)

from curobo_lite.geom import Cuboid, WorldCollision, WorldConfig
from curobo_lite.geom.world_grid import StaticGrid
from curobo_lite.kernels import world_grid_kernels as wgk

F32, F64 = torch.float32, torch.float64


def open_box_world(yaw: float = 0.46) -> WorldConfig:
    """An open box of thin walls turned about z (MotionBenchMaker's ``box``: the walls' axis-
    aligned boxes cover the space between them), a floor and a can inside."""
    c, s = math.cos(yaw / 2), math.sin(yaw / 2)
    rot = [c, 0.0, 0.0, s]

    def at(x, y, z):
        return [x * math.cos(yaw) - y * math.sin(yaw), x * math.sin(yaw) + y * math.cos(yaw), z]

    walls = {
        "base": ([0.7, 0.7, 0.04], at(0.6, 0.0, 0.0)),
        "left": ([0.7, 0.04, 0.7], at(0.6, 0.35, 0.35)),
        "right": ([0.7, 0.04, 0.7], at(0.6, -0.35, 0.35)),
        "back": ([0.04, 0.7, 0.7], at(0.95, 0.0, 0.35)),
        "front": ([0.04, 0.7, 0.3], at(0.25, 0.0, 0.15)),
        "cap": ([0.7, 0.7, 0.04], at(0.6, 0.0, 0.7)),
    }
    raw = {
        "cuboid": {n: {"dims": d, "pose": [*p, *rot]} for n, (d, p) in walls.items()},
        "cylinder": {"can": {"radius": 0.03, "height": 0.12, "pose": [*at(0.6, 0.1, 0.08), *rot]}},
        "capsule": {
            "rail": {
                "radius": 0.02,
                "base": [0, 0, 0],
                "tip": [0, 0.3, 0],
                "pose": [*at(0.8, -0.15, 0.5), *rot],
            }
        },
    }
    return WorldConfig.from_dict(raw)


def box_reference(world: WorldConfig, points: torch.Tensor) -> torch.Tensor:
    """``[S]`` dense torch signed distance of ``points [S, 3]`` to the world's cuboids."""
    return torch.stack([box_sdf(points, o.pose, o.dims) for o in world.cuboid], -1).amin(-1)


def grid_world(world, device, dtype=F64) -> WorldCollision:
    collision = WorldCollision(world, _args(device, dtype), broad_phase="grid")
    assert collision.query_tables(0.05)[2] == wgk.GRID  # built, and the grid is what runs
    return collision


def near_surface_spheres(world: WorldConfig, count: int, rng) -> np.ndarray:
    """Spheres of the MPC's sizes around the obstacles, many within a few cm of a surface."""
    spheres = random_spheres(world, count, rng, r_max=0.08)
    spheres[:, :3] += rng.normal(scale=0.05, size=(count, 3))
    return spheres


@pytest.mark.parametrize("dtype", [F32, F64])
def test_grid_distances_match_coal_near_contact(device, dtype):
    world = open_box_world()
    rng = np.random.default_rng(0)
    spheres = near_surface_spheres(world, 600, rng)
    reference = coal_distances(world, spheres).min(1)
    max_distance = 0.05
    near = reference < max_distance
    assert near.sum() > 200 and (reference < 0).sum() > 30  # contact and penetration exercised
    collision = grid_world(world, device, dtype)
    out = collision.sphere_distance(torch.tensor(spheres, device=device, dtype=dtype), 0.04, 0.05)
    tol = 1e-5 if dtype == F64 else 2e-5
    np.testing.assert_allclose(
        out.distance.cpu().double().numpy(), np.minimum(reference, max_distance), atol=tol
    )


def test_grid_equals_the_loop_with_gradients(device):
    world = open_box_world()
    world.add(icosphere_mesh("ball", [0.5, 0.1, 0.4, 1, 0, 0, 0], (0.08, 0.08, 0.08)))
    rng = np.random.default_rng(1)
    spheres = torch.tensor(near_surface_spheres(world, 3000, rng), device=device)
    grid = grid_world(world, device)
    loop = WorldCollision(world, _args(device), broad_phase="loop")
    for activation, max_distance in [(0.04, 0.04), (0.0, 0.1), (0.02, 0.1), (0.04, math.inf)]:
        a = spheres.clone().requires_grad_(True)
        b = spheres.clone().requires_grad_(True)
        ra = grid.sphere_distance(a, activation, max_distance)
        rb = loop.sphere_distance(b, activation, max_distance)
        torch.testing.assert_close(ra.distance, rb.distance, atol=1e-12, rtol=0)
        torch.testing.assert_close(ra.cost, rb.cost, atol=1e-12, rtol=0)
        (ra.distance.sum() + ra.cost.sum()).backward()
        (rb.distance.sum() + rb.cost.sum()).backward()
        torch.testing.assert_close(a.grad, b.grad, atol=1e-12, rtol=0)
    assert (rb.cost > 0).sum() > 100


def test_grid_gradcheck_float64(device):
    world = open_box_world()
    collision = grid_world(world, device)
    rng = np.random.default_rng(2)
    spheres = torch.tensor(near_surface_spheres(world, 24, rng), device=device, requires_grad=True)

    def f(s):
        out = collision.sphere_distance(s, 0.04, 0.08)
        return out.distance, out.cost

    assert torch.autograd.gradcheck(f, (spheres,), eps=1e-6, atol=1e-6)


def test_cell_lower_bound_is_below_the_true_distance():
    world = WorldConfig(cuboid=open_box_world().cuboid)
    collision = grid_world(world, torch.device("cpu"))
    grid = collision._grid
    tables = collision._grid.tables
    lower = wgk_lower_bounds(collision)
    origin = np.array([tables.origin[i] for i in range(3)])
    dims = np.array(grid.dims)
    rng = np.random.default_rng(3)
    points = origin + rng.uniform(0, 1, (20000, 3)) * dims * grid.cell_size
    cell = np.floor((points - origin) / grid.cell_size).astype(np.int64).clip(0, dims - 1)
    flat = (cell[:, 0] * dims[1] + cell[:, 1]) * dims[2] + cell[:, 2]
    truth = box_reference(world, torch.tensor(points)).numpy()
    bound = lower[flat]
    assert (bound <= truth + 1e-9).all()
    # and tight: within a cell's diagonal (plus slack) of the truth near the surfaces
    near = truth < 0.1
    assert near.sum() > 1000
    assert (truth[near] - bound[near]).max() <= 2 * grid.half_diagonal + 1e-4


def wgk_lower_bounds(collision: WorldCollision) -> np.ndarray:
    return collision._grid.tables.lower_bound.numpy().astype(np.float64)


def test_edits_after_the_build_stay_exact(device):
    world = open_box_world()
    collision = grid_world(world, device)
    builds = collision.grid_builds
    collision.update_obstacle_pose("can", [0.55, -0.05, 0.3, 1, 0, 0, 0])
    world.get("can").pose = [0.55, -0.05, 0.3, 1, 0, 0, 0]
    collision.enable_obstacle("cap", False)
    world.get("cap").enabled = False
    added = Cuboid("intruder", [0.05, 0.05, 0.05], pose=[0.6, 0.2, 0.35, 1, 0, 0, 0])
    collision.add_obstacle(added)
    world.add(added)
    collision.remove_obstacle("rail")
    world.remove("rail")
    ball = icosphere_mesh("ball", [0.4, 0.0, 0.3, 1, 0, 0, 0], (0.06, 0.06, 0.06))
    collision.add_obstacle(ball)
    world.add(ball)
    rng = np.random.default_rng(4)
    spheres = near_surface_spheres(world, 400, rng)
    out = collision.sphere_distance(torch.tensor(spheres, device=device), 0.04, 0.05)
    assert collision.grid_builds == builds  # moved, added, disabled: dynamic, no rebuild
    assert 0 < collision._grid.tables.num_dynamic <= StaticGrid.MAX_DYNAMIC
    loop = WorldCollision(world, _args(device), broad_phase="loop")
    expected = loop.sphere_distance(torch.tensor(spheres, device=device), 0.04, 0.05)
    torch.testing.assert_close(out.distance, expected.distance, atol=1e-12, rtol=0)
    torch.testing.assert_close(out.cost, expected.cost, atol=1e-12, rtol=0)
    # and against coal, away from the mesh ball (coal's mesh distance is unsigned inside)
    enabled = WorldConfig()
    for obstacle in world.objects:
        if obstacle.enabled:
            enabled.add(obstacle)
    clear = np.linalg.norm(spheres[:, :3] - [0.4, 0.0, 0.3], axis=1) > 0.06 + spheres[:, 3]
    assert clear.sum() > 300
    reference = np.minimum(coal_distances(enabled, spheres[clear]).min(1), 0.05)
    np.testing.assert_allclose(out.distance.cpu().numpy()[clear], reference, atol=1e-5)


def test_many_moves_rebuild_the_grid(device):
    rng = np.random.default_rng(5)
    world = WorldConfig(cuboid=[random_obstacle("cuboid", f"c{i}", rng) for i in range(12)])
    collision = grid_world(world, device)
    builds = collision.grid_builds
    for i in range(StaticGrid.MAX_DYNAMIC + 1):
        pose = [*rng.uniform(-0.5, 0.5, 3).tolist(), 1.0, 0.0, 0.0, 0.0]
        collision.update_obstacle_pose(f"c{i}", pose)
        world.get(f"c{i}").pose = pose
    spheres = random_spheres(world, 300, rng)
    out = collision.sphere_distance(torch.tensor(spheres, device=device), 0.04, 0.05)
    assert collision.grid_builds == builds + 1
    assert collision._grid.tables.num_dynamic == 0
    reference = np.minimum(coal_distances(world, spheres).min(1), 0.05)
    np.testing.assert_allclose(out.distance.cpu().numpy(), reference, atol=1e-5)


def test_capacity_growth_rebuilds_on_the_new_tables(device):
    rng = np.random.default_rng(6)
    world = WorldConfig(cuboid=[random_obstacle("cuboid", f"c{i}", rng) for i in range(4)])
    collision = WorldCollision(world, _args(device), cache={"primitive": 4}, broad_phase="grid")
    collision.query_tables(0.05)
    builds = collision.grid_builds
    extra = random_obstacle("cuboid", "c4", rng)
    collision.add_obstacle(extra)  # past the capacity: new tables, a new struct
    world.add(extra)
    spheres = random_spheres(world, 300, rng)
    out = collision.sphere_distance(torch.tensor(spheres, device=device), 0.02, 0.05)
    assert collision.grid_builds == builds + 1
    reference = np.minimum(coal_distances(world, spheres).min(1), 0.05)
    np.testing.assert_allclose(out.distance.cpu().numpy(), reference, atol=1e-5)


def test_auto_takes_the_grid_for_mppi_in_cluttered_worlds_only():
    box = WorldCollision(open_box_world())
    spheres = torch.tensor([[0.5, 0.0, 0.3, 0.05]])
    box.sphere_distance(spheres, 0.04, 0.04)  # a per-query call (IK, trajopt): no build
    assert box.grid_builds == 0
    assert box.query_tables(0.04)[2] == wgk.GRID  # MPPI's world cost
    assert box.grid_builds == 1
    assert box.query_tables(math.inf)[2] != wgk.GRID  # an unclamped query takes the loop/BVH
    table = WorldCollision(WorldConfig.load("table"))
    assert table.query_tables(0.04)[2] != wgk.GRID
