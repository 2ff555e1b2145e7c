"""The tight sphere fit (spheres within OUTSIDE of the solid, covering it below depth INSIDE)
and the sphere-vs-mesh quality figures, against independent references: the analytic signed
distance of a box, Monte-Carlo points of the solid, and coal's exact mesh distances."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from collision_reference import box_sdf

trimesh = pytest.importorskip("trimesh")

DIMS = [0.12, 0.06, 0.04]
POSE = [0.0, 0.0, 0.05, 1.0, 0.0, 0.0, 0.0]


def _box_mesh():
    box = trimesh.creation.box(extents=DIMS)
    box.apply_translation(POSE[:3])
    return box


def _sdf(points: np.ndarray) -> np.ndarray:
    return box_sdf(torch.as_tensor(points, dtype=torch.float64), POSE, DIMS).numpy()


@pytest.mark.parametrize("outside, inside", [(0.002, 0.004), (0.01, 0.006)])
def test_tight_fit_stays_within_outside_and_covers_below_inside(outside, inside):
    from curobo_lite.robot.sphere_cover import fit_spheres_tight

    spheres = fit_spheres_tight(
        _box_mesh(), outside=outside, inside=inside, seed=0, num_samples=800
    ).spheres
    # no point of any sphere is farther than `outside` from the box: for a convex solid the
    # farthest point of a ball is at sdf(centre) + radius
    reach = _sdf(spheres[:, :3]) + spheres[:, 3]
    assert reach.max() <= outside + 1e-6
    # every point of the box at least `inside` deep lies in a sphere (Monte Carlo)
    rng = np.random.default_rng(5)
    points = np.asarray(POSE[:3]) + (rng.random((40000, 3)) - 0.5) * np.asarray(DIMS)
    deep = points[_sdf(points) <= -inside - 1e-4]
    covered = (
        np.linalg.norm(deep[:, None] - spheres[None, :, :3], axis=-1) <= spheres[None, :, 3]
    ).any(1)
    assert covered.mean() > 0.999, covered.mean()
    # tighter costs more spheres
    assert len(spheres) >= 2


def test_tighter_fit_needs_more_spheres_and_floor_is_respected():
    from curobo_lite.robot.sphere_cover import fit_spheres_tight

    loose = fit_spheres_tight(_box_mesh(), outside=0.01, inside=0.008, num_samples=800).spheres
    tight = fit_spheres_tight(_box_mesh(), outside=0.002, inside=0.004, num_samples=800).spheres
    assert len(tight) > len(loose)
    floor = 0.04  # a plane through the box: no sphere may reach below it
    floored = fit_spheres_tight(
        _box_mesh(), outside=0.005, inside=0.005, floor_z=floor, num_samples=800
    ).spheres
    assert (floored[:, 2] - floored[:, 3] >= floor - 1e-9).all()


def test_bundled_franka_hand_and_fingers_are_tight():
    """The hand and finger spheres reach at most a few millimetres past their geometry, so an
    object between the open fingers with the meshes 3 mm clear is clear on the spheres too."""
    from curobo_lite.robot import RobotConfig
    from curobo_lite.robot.link_geometry import load_urdf_geometry

    robot = RobotConfig.load("franka")
    geometry = load_urdf_geometry(robot.collision_geometry_path)
    for link, bound in (("panda_hand", 0.0042), ("panda_leftfinger", 0.0032)):
        pieces = [g.mesh for g in geometry[link]]
        spheres = np.asarray(robot.collision.spheres[link])
        rng = np.random.default_rng(0)
        directions = rng.normal(size=(len(spheres), 200, 3))
        directions /= np.linalg.norm(directions, axis=-1, keepdims=True)
        surface = (spheres[:, None, :3] + spheres[:, None, 3:] * directions).reshape(-1, 3)
        # (bounds: the fit's 4 and 3 mm plus the 0.1 mm rounding of centres and radii)
        # distance of each sphere-surface point to the nearest piece (0 inside one)
        distance = np.full(len(surface), np.inf)
        for mesh in pieces:
            d = trimesh.proximity.signed_distance(mesh, surface)  # positive inside
            distance = np.minimum(distance, np.maximum(-d, 0.0))
        assert distance.max() <= bound, (link, distance.max())


def test_quality_figures_on_a_small_seeded_sample():
    """Item 2's figures on a small sample: few false alarms among mesh-clear configurations
    and no deep mesh penetration missed; the counts agree with a direct coal check."""
    pytest.importorskip("coal")
    from curobo_lite.wrap.base.sphere_quality import clutter_worlds, sphere_fit_quality

    worlds = clutter_worlds(4, seed=7)
    quality = sphere_fit_quality("franka", configs_per_world=120, seed=7, worlds=worlds)
    assert quality.samples == 480
    assert quality.clear > 100 and quality.deep > 20
    assert quality.false_alarm_rate <= 0.05, quality.summary()
    assert quality.misses == 0, quality.summary()
    assert clutter_worlds(2, seed=7)[1].names == worlds[1].names
