"""Speed-ups of the roadmap stage's checks (#29) against independent answers.

- ``RobotWorld.collision_distance`` with a finite range takes the per-link kernel
  (``kernels.collision_verdict_kernels``); reference: the per-sphere distance kernel
  (``WorldCollision.sphere_distance``, minimum over the spheres), in MotionBenchMaker scenes on
  random configurations (many of them deep in an obstacle) and on configurations within 1e-4 m
  of the range.
- The roadmap's shortcut pass: every segment of the returned path passes
  ``RobotWorld.validate_segments`` (the sphere check) and coal's swept mesh check
  (``trajectory_mesh_report`` of the segment, cut in 0.05 rad pieces), and no kept node can
  reach a later kept node but the next by a valid straight segment (the path is greedy-short,
  brute force over every pair).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import yaml

from curobo_lite.scenes import family_rng, sample_scene
from curobo_lite.types import TensorDeviceType
from curobo_lite.types.errors import InputValueError
from curobo_lite.wrap import MotionGen, RobotWorld
from curobo_lite.wrap.motion.roadmap import _COARSE

pytest.importorskip("coal")

CAGE = Path(__file__).resolve().parents[1] / "benchmarks" / "data" / "mbm" / "cage.yml"


def _world(family: str, index: int = 0):
    return sample_scene(family, family_rng(family, 0, index)).world


@pytest.mark.parametrize("family", ["cage", "table_under_pick"])
def test_collision_distance_matches_sphere_kernel(device, family):
    checker = RobotWorld.from_config("franka", _world(family), TensorDeviceType(device=device))
    generator = torch.Generator().manual_seed(5)
    low, high = checker.robot_config.joint_limits.position.cpu()
    q = low + (high - low) * torch.rand(400, low.shape[0], generator=generator, dtype=low.dtype)
    q = q.to(checker.tensor_args.device)
    collision = checker.world_collision
    world_spheres = checker.get_world_spheres(q)
    for reach in (0.003, 0.05, 1.0):
        reference = collision.sphere_distance(world_spheres, max_distance=reach).distance.amin(-1)
        got = checker.collision_distance(q, max_distance=reach)
        assert got.shape == reference.shape
        assert torch.equal(got, reference)
        assert bool((reference < 0.0).any()) and bool((reference < -0.05).any())
    # the configurations whose clearance is within 1e-4 of the range (0.05): moved there by
    # growing every sphere, both sides of the range occur
    clearance = collision.sphere_distance(world_spheres, max_distance=1.0).distance.amin(-1)
    spheres = checker.get_link_spheres(q).clone()
    offsets = (torch.rand(q.shape[0], generator=generator) * 2e-4 - 1e-4).to(q.device)
    spheres[..., 3] += (clearance - (0.05 + offsets))[:, None]
    world_spheres = checker.kinematics.world_spheres(spheres)
    reference = collision.sphere_distance(world_spheres, max_distance=0.05).distance.amin(-1)
    got = checker._world_verdict(spheres, 0.05, -float("inf"))
    assert torch.equal(got, reference)
    assert 0 < int((reference < 0.05).sum()) < q.shape[0]


def test_collision_distance_keeps_gradients():
    """With gradients asked for, the per-sphere kernel (differentiable): central finite
    differences of the same function agree."""
    checker = RobotWorld.from_config("franka", _world("cage"), TensorDeviceType())
    generator = torch.Generator().manual_seed(8)
    low, high = checker.robot_config.joint_limits.position
    q = low + (high - low) * torch.rand(64, low.shape[0], generator=generator, dtype=low.dtype)
    q = q[(checker.collision_distance(q, max_distance=1.0) < 0.9)][:8].requires_grad_(True)
    checker.collision_distance(q, max_distance=1.0).sum().backward()
    assert q.grad is not None and bool(q.grad.abs().sum() > 0)
    step = 1e-4
    with torch.no_grad():
        for j in range(q.shape[1]):
            offset = torch.zeros_like(q)
            offset[:, j] = step
            plus = checker.collision_distance(q + offset, max_distance=1.0)
            minus = checker.collision_distance(q - offset, max_distance=1.0)
            torch.testing.assert_close(
                q.grad[:, j], (plus - minus) / (2 * step), atol=2e-3, rtol=2e-2
            )


def test_collision_distance_range_errors():
    checker = RobotWorld.from_config("franka", _world("cage"), TensorDeviceType())
    q = checker.robot_config.retract_config[None]
    for bad in (0.0, -0.1):
        with pytest.raises(InputValueError, match="max_distance"):
            checker.collision_distance(q, max_distance=bad)
    # unbounded: the per-sphere kernel, the same value as a 10 m range
    far = checker.collision_distance(q, max_distance=10.0)
    assert torch.equal(checker.collision_distance(q), far)


def test_roadmap_path_is_valid_and_greedy_short():
    from curobo_lite.scenes import MbmProblem

    raw = yaml.safe_load(CAGE.read_text())["problems"][9]
    problem = MbmProblem.from_dict(raw)
    tensor_args = TensorDeviceType()
    motion_gen = MotionGen.from_config("franka", problem.world, tensor_args=tensor_args)
    checker = motion_gen.checker
    roadmap = motion_gen.roadmap
    start = tensor_args.to_device(problem.start)
    goals = tensor_args.to_device(problem.goal_config)[None]
    result = roadmap.plan(start, goals, motion_gen._mesh_segments)
    assert result.success
    path = result.path
    assert torch.equal(path[0], start)
    assert any(torch.equal(path[-1], g) for g in goals)
    # every segment: the sphere check at the roadmap's resolution and coal's swept check
    ok = checker.validate_segments(
        path[:-1], path[1:], roadmap.config.resolution, exact_band=roadmap.config.exact_band
    )
    assert bool(ok.all())
    for a, b in zip(path[:-1], path[1:]):
        pieces = max(1, int(torch.ceil((b - a).abs().max() / 0.05)))
        t = torch.linspace(0.0, 1.0, pieces + 1, dtype=a.dtype)[:, None]
        mesh_ok, _ = checker.trajectory_mesh_report(a + t * (b - a), 1e-4)
        assert bool(mesh_ok)
    # greedy: from each kept node, no later node but the next is reachable (spheres, then
    # meshes), brute force over every pair
    K = path.shape[0]
    assert K >= 3  # a path with waypoints between start and goal
    band = roadmap.config.exact_band
    for i in range(K - 2):
        for j in range(i + 2, K):
            # as the planner judges: the coarse samples, then the fine ones
            sphere_ok = all(
                bool(
                    checker.validate_segments(
                        path[i : i + 1], path[j : j + 1], resolution, exact_band=band
                    )[0]
                )
                for resolution in (
                    max(_COARSE, roadmap.config.resolution),
                    roadmap.config.resolution,
                )
            )
            if not sphere_ok:
                continue
            mesh_ok, _ = motion_gen._mesh_segments(path[i : i + 1], path[j : j + 1])
            assert not bool(mesh_ok[0]), f"the path could skip from node {i} to node {j}"


def test_sweep_of_padded_rows_matches_each_row_alone():
    """Rows padded with their last waypoint (the roadmap's segment check cuts each segment in
    its own number of pieces): the same verdict, clearance and samples as each row swept on
    its own, and the padding measured once per row."""
    from curobo_lite.scenes import MbmProblem

    problem = MbmProblem.from_dict(yaml.safe_load(CAGE.read_text())["problems"][9])
    tensor_args = TensorDeviceType()
    checker = RobotWorld.from_config("franka", problem.world, tensor_args)
    mesh = checker.mesh_check()
    start = tensor_args.to_device(problem.start)
    goal = tensor_args.to_device(problem.goal_config)
    generator = torch.Generator().manual_seed(2)
    rows, lengths = [], [6, 2, 4]
    for n in lengths:
        ends = torch.cat(
            [start[None], goal[None] + 0.3 * torch.randn(n - 1, 7, generator=generator)]
        )
        rows.append(ends)
    T = max(lengths)
    padded = torch.stack([torch.cat([r, r[-1:].expand(T - len(r), -1)]) for r in rows])
    calls = []
    distance = mesh.distance

    def counted(q, *args, **kwargs):
        calls.append(q.shape[0])
        return distance(q, *args, **kwargs)

    mesh.distance = counted
    ok, low, samples = mesh.sweep(padded, 1e-4, 1e-3)
    assert calls[0] == sum(lengths)  # the waypoints: the padding not measured again
    alone = [mesh.sweep(r[None], 1e-4, 1e-3) for r in rows]
    assert ok.tolist() == [bool(a[0][0]) for a in alone]
    assert low.tolist() == [float(a[1][0]) for a in alone]
    assert samples == sum(a[2] for a in alone)
    assert not all(ok.tolist()) or min(low) < 0.05  # the rows reach near the obstacles
