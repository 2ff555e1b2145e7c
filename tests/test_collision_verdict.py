"""The pass/fail world query (``kernels.collision_verdict_kernels``) against independent answers.

References: coal's sphere-vs-primitive signed distances (``test_world_collision``'s
``coal_distances``) for random primitives and sphere groups, and the distance kernel's own
verdict (``WorldCollision.sphere_distance``) for the Franka in MotionBenchMaker scenes, on
random configurations and on configurations set within 1e-4 m of the thresholds.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from test_world_collision import coal_distances, random_obstacle, random_spheres

from curobo_lite.geom import WorldCollision, WorldConfig
from curobo_lite.kernels.collision_verdict_kernels import link_world_distance
from curobo_lite.scenes import family_rng, sample_scene
from curobo_lite.types import TensorDeviceType
from curobo_lite.wrap import RobotWorld

pytest.importorskip("coal")

F64 = torch.float64
#: link sizes of the synthetic "robot" (sphere ranges of the groups)
LINKS = (3, 1, 5, 4)


def _groups(device) -> torch.Tensor:
    ends = np.cumsum(LINKS)
    return torch.as_tensor(np.stack([ends - LINKS, ends], 1), dtype=torch.int32, device=device)


@pytest.mark.parametrize("reach, deep", [(1e-4, 0.0), (0.015, -0.015)])
def test_link_distance_matches_coal_on_primitives(device, reach, deep):
    rng = np.random.default_rng(7)
    kinds = ("cuboid", "sphere", "capsule", "cylinder")
    world = WorldConfig()
    for i in range(12):
        obstacle = random_obstacle(kinds[i % 4], f"o{i}", rng)
        if i >= 4:  # unrotated: tight bounds, where a broad phase that cuts short would show
            obstacle.pose = [*obstacle.pose[:3], 1.0, 0.0, 0.0, 0.0]
        world.add(obstacle)
    configs = 300
    spheres = random_spheres(world, configs * sum(LINKS), rng, r_max=0.05)
    per_sphere = coal_distances(world, spheres).min(1)  # [S]
    # a third of the configurations moved to within 1e-4 of a threshold: every radius grows
    # by the configuration's clearance minus the target (the nearest sphere then sits there)
    spheres = spheres.reshape(configs, sum(LINKS), 4)
    per_sphere = per_sphere.reshape(configs, sum(LINKS))
    near = rng.choice(configs, configs // 3, replace=False)
    targets = rng.choice([0.0, deep, reach], near.size) + rng.uniform(-1e-4, 1e-4, near.size)
    shift = per_sphere[near].min(1) - targets
    spheres[near, :, 3] += shift[:, None]
    per_sphere[near] -= shift[:, None]
    keep = spheres[..., 3] > 0.0  # a radius shrunk below zero would disable the sphere
    per_sphere = np.where(keep, per_sphere, np.inf)
    spheres[..., 3] = np.where(keep, spheres[..., 3], -1.0)
    ends = np.cumsum(LINKS)
    reference = np.stack([per_sphere[:, e - n : e].min(1) for n, e in zip(LINKS, ends)], 1)

    collision = WorldCollision(world, TensorDeviceType(device=device, dtype=F64))
    tables = collision.world_tables
    out = (
        link_world_distance(
            torch.as_tensor(spheres, dtype=F64, device=device),
            _groups(device),
            tables,
            tables.num_active,
            reach,
            deep,
        )
        .cpu()
        .numpy()
    )
    assert out.shape == (configs, len(LINKS))
    exact = reference >= deep
    expected = np.minimum(reference, reach)
    np.testing.assert_allclose(out[exact], expected[exact], atol=1e-7)
    # below ``deep`` the configuration fails: the value is only a bound below ``deep``
    assert (out[~exact] < deep).all()
    # the verdicts at both thresholds, including the configurations within 1e-4 of them
    tight = np.abs(reference - deep) > 1e-9
    assert ((out >= deep) == (reference >= deep))[tight].all()
    assert ((out.min(1) >= 0.0) == (reference.min(1) >= 0.0))[np.abs(reference.min(1)) > 1e-9].all()
    assert np.isin(np.arange(configs), near).sum() == near.size


def _mbm_world(family: str) -> WorldConfig:
    return sample_scene(family, family_rng(family, 0, 0)).world


@pytest.mark.parametrize("family", ["table_under_pick", "cage"])
def test_robot_world_verdict_matches_distance_kernel_in_mbm_scene(device, family):
    checker = RobotWorld.from_config("franka", _mbm_world(family), TensorDeviceType(device=device))
    generator = torch.Generator().manual_seed(3)
    low, high = checker.robot_config.joint_limits.position.cpu()
    q = low + (high - low) * torch.rand(600, low.shape[0], generator=generator, dtype=low.dtype)
    q = q.to(checker.tensor_args.device)
    spheres = checker.get_link_spheres(q)
    collision = checker.world_collision
    world_spheres = checker.kinematics.world_spheres(spheres)
    clearance = collision.sphere_distance(world_spheres, max_distance=1.0).distance.amin(-1)
    # half of them moved to within 1e-4 of a threshold (0 or -band) by growing every radius
    band = 0.015
    half = q.shape[0] // 2
    targets = torch.tensor([0.0, -band], device=q.device)[torch.arange(half) % 2]
    offsets = (torch.rand(half, generator=generator) * 2e-4 - 1e-4).to(q.device)
    grow = torch.zeros(q.shape[0], device=q.device)
    grow[:half] = clearance[:half] - (targets + offsets)
    spheres = spheres.clone()
    spheres[..., 3] += grow[:, None]
    for world_range, deep in [(None, 0.0), (band, -band)]:
        reach = 1e-4 if world_range is None else world_range
        world_spheres = checker.kinematics.world_spheres(spheres)
        reference = collision.sphere_distance(world_spheres, max_distance=reach).distance.amin(-1)
        got = checker._world_verdict(spheres, world_range)
        assert torch.equal(got >= 0.0, reference >= 0.0)
        assert torch.equal(got >= deep, reference >= deep)
        exact = reference >= deep
        assert torch.equal(got[exact], reference[exact])
    # both outcomes occur among the configurations near the thresholds
    assert 0 < int((got[:half] >= 0.0).sum()) < half
