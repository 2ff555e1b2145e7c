"""Spheres that cover one solid: the fit behind :mod:`curobo_lite.robot.sphere_fit`.

For every solid piece of a link (one URDF ``<collision>`` element) the fit

1. samples the surface (area-uniform, fixed seed) and takes the mesh vertices;
2. builds interior candidate centres: points on a grid and points pushed inward from surface
   samples along the normal (half-way to the opposite wall, which lands near the medial axis),
   kept when inside the solid (generalised winding number, so slightly open meshes work);
   each candidate's radius is its distance to the surface, so its ball lies inside the solid;
3. greedily picks candidates (set cover) so that every surface sample lies within
   ``radius + delta`` of a picked centre; with a sphere budget, ``delta`` is the smallest
   value (bisection) whose cover fits the budget, otherwise ``delta`` is the tolerance;
4. inflates each picked sphere to reach the surface samples and vertices assigned to it, so the
   union covers every sample, and adds a small margin for the gaps between samples.

Every sphere is an inscribed ball grown by at most ``delta`` plus the margin, so the union stays
within that distance of the solid (tight), while covering its whole surface. All steps are
deterministic.

:func:`coverage_gap` and :func:`union_volume` measure a fit (how far the surface pokes out of
the spheres, how much larger their union is than the solid).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from curobo_lite.robot.link_geometry import require_trimesh
from curobo_lite.types.errors import InputValueError


def winding_number(mesh, points: np.ndarray, chunk: int = 512) -> np.ndarray:
    """Generalised winding number ``[K]`` of ``points [K, 3]`` (1 inside, 0 outside).

    Sum of the signed solid angles of the triangles (Van Oosterom and Strackee), robust to
    small holes and duplicated faces where a ray-parity test is not.
    """
    triangles = np.asarray(mesh.triangles, dtype=np.float64)
    out = np.empty(len(points))
    for begin in range(0, len(points), chunk):
        p = points[begin : begin + chunk, None, None, :]
        rel = triangles[None] - p  # [k, F, 3, 3]
        a, b, c = rel[:, :, 0], rel[:, :, 1], rel[:, :, 2]
        la, lb, lc = (np.linalg.norm(v, axis=-1) for v in (a, b, c))
        det = np.einsum("kfi,kfi->kf", a, np.cross(b, c))
        den = (
            la * lb * lc
            + np.einsum("kfi,kfi->kf", a, b) * lc
            + np.einsum("kfi,kfi->kf", b, c) * la
            + np.einsum("kfi,kfi->kf", c, a) * lb
        )
        out[begin : begin + chunk] = (2.0 * np.arctan2(det, den)).sum(-1) / (4.0 * math.pi)
    return out


def _inside(mesh, points: np.ndarray) -> np.ndarray:
    """``[K]`` bool: points inside the solid (ray parity when the mesh is closed, which is
    faster; the winding number otherwise)."""
    if mesh.is_watertight:
        return np.asarray(mesh.contains(points), dtype=bool)
    return winding_number(mesh, points) > 0.5


@dataclass
class FitResult:
    """Spheres fitted to one solid.

    Attributes:
        spheres: ``[K, 4]`` centres and radii in the geometry's frame.
        delta: the cover tolerance used (metres).
        max_inflation: largest radius increase of the final inflation (metres).
    """

    spheres: np.ndarray
    delta: float
    max_inflation: float


def _greedy_cover(covers: np.ndarray, limit: int | None = None) -> list[int]:
    """Indices of rows of ``covers [K, S]`` (bool) that together cover every column, picked
    greedily by how many uncovered columns they add (lowest index on ties); stops after
    ``limit`` picks (returning what it has) or when nothing more can be covered."""
    weights = covers.astype(np.float32)
    uncovered = np.ones(covers.shape[1], dtype=np.float32)
    chosen: list[int] = []
    while uncovered.any():
        gain = weights @ uncovered
        best = int(np.argmax(gain))
        if gain[best] <= 0 or (limit is not None and len(chosen) >= limit):
            break
        chosen.append(best)
        uncovered[covers[best]] = 0.0
    return chosen


def fit_spheres(
    mesh,
    num_spheres: int | None = None,
    tolerance: float | None = None,
    num_samples: int = 1500,
    seed: int = 0,
    margin: float = 0.001,
) -> FitResult:
    """Spheres covering the surface of one solid (see the module docs).

    Args:
        mesh: a closed ``trimesh.Trimesh`` (small holes are tolerated).
        num_spheres: sphere budget; the cover tolerance is the smallest that fits it.
        tolerance: cover tolerance ``delta`` in metres (used when ``num_spheres`` is None):
            how far a sphere may reach beyond its inscribed ball before inflation.
        num_samples: surface samples for the cover (the final inflation uses eight times more).
        seed: random seed of the surface samples.
        margin: metres added to every radius for the gaps between the inflation samples.

    Returns:
        :class:`FitResult` with ``spheres [K, 4]``.
    """
    trimesh = require_trimesh()
    if (num_spheres is None) == (tolerance is None):
        raise InputValueError("give exactly one of num_spheres or tolerance")
    if num_spheres is not None and num_spheres < 1:
        raise InputValueError(f"num_spheres: expected >= 1, received {num_spheres}")
    if tolerance is not None and not tolerance > 0:
        raise InputValueError(f"tolerance: expected > 0, received {tolerance}")
    rng = np.random.default_rng(seed)
    samples, faces = trimesh.sample.sample_surface(mesh, num_samples, seed=seed)
    normals = mesh.face_normals[faces]

    # interior candidates: a grid, and points half-way along inward rays (near the medial axis)
    extent = mesh.bounds[1] - mesh.bounds[0]
    candidates, radii, _ = _interior_candidates(mesh, samples, normals, extent, (0.5,))

    gaps = np.linalg.norm(samples[None] - candidates[:, None], axis=-1) - radii[:, None]

    def cover(delta: float, limit: int | None = None) -> list[int]:
        return _greedy_cover(gaps <= delta, limit)

    if num_spheres is not None:
        low, high = 0.0, float(np.linalg.norm(extent))
        if len(cover(0.0, num_spheres + 1)) <= num_spheres:
            high = 0.0
        for _ in range(30):
            if high - low < 1e-5:
                break
            mid = 0.5 * (low + high)
            if len(cover(mid, num_spheres + 1)) <= num_spheres:
                high = mid
            else:
                low = mid
        delta = high
    else:
        delta = float(tolerance)
    chosen = cover(delta)
    centres, base_radii = candidates[chosen], radii[chosen]

    # final inflation on denser samples and the vertices: each point goes to the sphere it
    # sticks out of least, which grows to reach it
    dense, _ = trimesh.sample.sample_surface(mesh, 8 * num_samples, seed=int(rng.integers(1 << 31)))
    points = np.concatenate((dense, samples, np.asarray(mesh.vertices)))
    reach = np.linalg.norm(points[None] - centres[:, None], axis=-1)
    owner = np.argmin(reach - base_radii[:, None], axis=0)
    grown = base_radii.copy()
    np.maximum.at(grown, owner, reach[owner, np.arange(len(points))])
    grown += margin
    spheres = np.concatenate((centres, grown[:, None]), axis=1)
    return FitResult(spheres=spheres, delta=delta, max_inflation=float((grown - base_radii).max()))


def _interior_candidates(mesh, samples, normals, extent, fractions=(0.2, 0.35, 0.5)):
    """Interior points ``[K, 3]`` and their distances to the surface ``[K]``: a grid, and
    points along inward rays from surface samples (at ``fractions`` of the local thickness;
    half-way lands near the medial axis); also the local thickness ``[S]`` at each sample
    (``inf`` where the inward ray found no wall)."""
    trimesh = require_trimesh()
    lo, hi = mesh.bounds
    pitch = (np.prod(extent) / 3000.0) ** (1.0 / 3.0)
    axes = [np.arange(lo[i] + 0.5 * pitch, hi[i], pitch) for i in range(3)]
    grid = np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, 3)
    origins = samples - normals * 1e-6
    locations, ray_index, _ = mesh.ray.intersects_location(origins, -normals, multiple_hits=False)
    thickness = np.full(len(samples), np.inf)
    thickness[ray_index] = np.linalg.norm(locations - samples[ray_index], axis=-1)
    # (1 - f) s + f l: at f = 0.5 bit for bit the former half-way point 0.5 (s + l)
    along = [(1.0 - f) * samples[ray_index] + f * locations for f in fractions]
    candidates = np.concatenate((grid, *along, samples - normals * 0.25 * extent.min()))
    candidates = candidates[_inside(mesh, candidates)]
    if len(candidates) == 0:
        raise InputValueError("no interior point found; is the geometry a closed solid?")
    _, distance, _ = trimesh.proximity.closest_point(mesh, candidates)
    keep = distance > 1e-5
    return candidates[keep], distance[keep], thickness


def fit_spheres_tight(
    mesh,
    outside: float = 0.002,
    inside: float = 0.004,
    num_samples: int = 3000,
    seed: int = 0,
    floor_z: float | None = None,
) -> FitResult:
    """Spheres that stay within ``outside`` of the solid and cover it below depth ``inside``.

    Every sphere is an inscribed ball (centre ``c`` at depth ``h``) grown by ``outside``, so no
    point of any sphere is farther than ``outside`` from the solid (a segment from ``c`` to a
    point ``p`` of the ball leaves the solid at distance >= ``h`` from ``c``, so ``p`` is within
    ``r - h`` of it). The greedy cover makes every surface sample, pushed inward by ``inside``
    (by half the local thickness where the solid is thinner), lie in a sphere: an obstacle
    that reaches deeper than ``inside`` into the solid meets a sphere. This trades the full
    surface cover of :func:`fit_spheres` (whose inflation bulges 1.6-2.9x the volume) for
    spheres tight enough to grasp between fingers.

    Args:
        mesh: a closed ``trimesh.Trimesh``.
        outside: largest reach of a sphere beyond the solid (metres, >= 0).
        inside: depth below which the solid is covered (metres, > 0).
        num_samples: surface samples to cover.
        seed: random seed of the samples.
        floor_z: a plane ``z = floor_z`` of the geometry's frame that no sphere may cross
            (a base link's mounting plane); radii are capped at the centre's height above it.

    Returns:
        :class:`FitResult` (``delta`` = ``outside``, ``max_inflation`` 0).
    """
    trimesh = require_trimesh()
    if not outside >= 0.0:
        raise InputValueError(f"outside: expected >= 0, received {outside}")
    if not inside > 0.0:
        raise InputValueError(f"inside: expected > 0, received {inside}")
    samples, faces = trimesh.sample.sample_surface(mesh, num_samples, seed=seed)
    normals = mesh.face_normals[faces]
    extent = mesh.bounds[1] - mesh.bounds[0]
    candidates, depth, thickness = _interior_candidates(mesh, samples, normals, extent)
    radii = depth + outside
    if floor_z is not None:
        # 0.1 mm below the plane's height: the radii are rounded up to 0.1 mm when written
        radii = np.minimum(radii, candidates[:, 2] - floor_z - 1e-4)
        keep = radii > 1e-4
        candidates, radii = candidates[keep], radii[keep]
    push = np.minimum(inside, 0.5 * thickness)
    targets = samples - normals * push[:, None]
    if floor_z is not None:
        # points within `inside` of the mounting plane need no cover: nothing reaches them
        # from below, and from the side the cover above them is as deep as elsewhere
        targets = targets[targets[:, 2] >= floor_z + inside]
    reach = np.linalg.norm(targets[None] - candidates[:, None], axis=-1)
    chosen = _greedy_cover(reach <= radii[:, None])
    spheres = np.concatenate((candidates[chosen], radii[chosen, None]), axis=1)
    return FitResult(spheres=spheres, delta=float(outside), max_inflation=0.0)


def protrusion(mesh, spheres: np.ndarray, num_samples: int = 4000, seed: int = 3) -> float:
    """Largest distance (metres) from a point of the spheres' surfaces to the solid (0 when
    every sampled point is inside it): how far the spheres bulge past the geometry."""
    trimesh = require_trimesh()
    rng = np.random.default_rng(seed)
    per = max(1, num_samples // len(spheres))
    directions = rng.normal(size=(len(spheres), per, 3))
    directions /= np.linalg.norm(directions, axis=-1, keepdims=True)
    points = (spheres[:, None, :3] + spheres[:, None, 3:] * directions).reshape(-1, 3)
    outside = ~_inside(mesh, points)
    if not outside.any():
        return 0.0
    _, distance, _ = trimesh.proximity.closest_point(mesh, points[outside])
    return float(distance.max())


def coverage_gap(mesh, spheres: np.ndarray, num_samples: int = 20000, seed: int = 1) -> float:
    """Largest distance (metres) from a surface sample to the union of ``spheres [K, 4]``
    (0 when every sample is inside a sphere)."""
    trimesh = require_trimesh()
    points, _ = trimesh.sample.sample_surface(mesh, num_samples, seed=seed)
    points = np.concatenate((points, np.asarray(mesh.vertices)))
    gap = np.linalg.norm(points[:, None] - spheres[None, :, :3], axis=-1) - spheres[None, :, 3]
    return float(max(gap.min(axis=1).max(), 0.0))


def union_volume(spheres: np.ndarray, num_samples: int = 200000, seed: int = 2) -> float:
    """Monte-Carlo volume of the union of ``spheres [K, 4]`` (cubic metres)."""
    rng = np.random.default_rng(seed)
    lo = (spheres[:, :3] - spheres[:, 3:]).min(0)
    hi = (spheres[:, :3] + spheres[:, 3:]).max(0)
    points = lo + rng.random((num_samples, 3)) * (hi - lo)
    inside = np.zeros(num_samples, dtype=bool)
    for s in spheres:
        inside |= ((points - s[:3]) ** 2).sum(-1) <= s[3] ** 2
    return float(inside.mean() * np.prod(hi - lo))


@dataclass
class LinkFit:
    """Spheres fitted for one link, with their provenance and quality numbers."""

    link: str
    spheres: np.ndarray
    sources: list[str] = field(default_factory=list)
    coverage_gap: float = 0.0
    volume_ratio: float = float("nan")
    meshes: list = field(default_factory=list, repr=False)
