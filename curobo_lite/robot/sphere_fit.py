"""Fit collision spheres to a robot's link geometry (URDF meshes and primitives).

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
deterministic. :func:`fit_robot_spheres` maps URDF link frames to the frames of a robot file
(same-named links and joints; geometry on URDF links that the robot file lacks is moved to the
link they are fixed to) and :func:`suggest_self_collision_ignore` finds link pairs to skip in
self-collision checks by sampling configurations, as cuRobo's tooling does.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from curobo_lite.robot.config import RobotConfig
from curobo_lite.robot.joints import JointSpec, walk_tree
from curobo_lite.robot.urdf import read_urdf
from curobo_lite.types.errors import InputValueError

#: coordinates are written with this many decimals (0.1 mm); radii are rounded up to match
DECIMALS = 4


def _trimesh():
    try:
        import trimesh
    except ImportError as err:
        raise ImportError(
            "sphere fitting needs the 'trimesh' package: pip install trimesh"
        ) from err
    return trimesh


# ------------------------------------------------------------------------------------------
# geometry of a URDF
# ------------------------------------------------------------------------------------------
@dataclass
class LinkGeometry:
    """One solid collision piece of a URDF link.

    Attributes:
        link: the URDF link it belongs to.
        mesh: ``trimesh.Trimesh`` in the link frame (collision origin and mesh scale applied).
        description: where it came from (mesh file and scale, or the primitive).
    """

    link: str
    mesh: Any
    description: str


def _clean(mesh):
    """Merge duplicated vertices (OBJ files split them per face) and drop degenerate faces."""
    mesh.merge_vertices(merge_tex=True, merge_norm=True)
    mesh.update_faces(mesh.nondegenerate_faces())
    mesh.remove_unreferenced_vertices()
    return mesh


def _resolve_mesh_file(filename: str, urdf_dir: Path) -> Path:
    name = re.sub(r"^(package|file)://", "", filename)
    path = Path(name)
    if path.is_absolute() and path.is_file():
        return path
    # package://pkg/rest: try the path relative to the URDF and to its ancestors, then without
    # the package name
    parts = path.parts
    for base in (urdf_dir, *urdf_dir.parents):
        for k in range(len(parts)):
            candidate = base.joinpath(*parts[k:])
            if candidate.is_file():
                return candidate
    raise InputValueError(f"mesh file '{filename}' not found (searched from {urdf_dir})")


def load_urdf_geometry(urdf_path: str | os.PathLike) -> dict[str, list[LinkGeometry]]:
    """Collision geometry of every link of a URDF, in each link's frame.

    Meshes are loaded with trimesh (``<mesh scale>`` applied); ``<box>``, ``<cylinder>`` and
    ``<sphere>`` primitives become meshes (64-segment cylinders, subdivided icospheres).
    The ``<collision><origin>`` transform is applied. Links without collision geometry are
    left out.
    """
    trimesh = _trimesh()
    urdf_path = Path(urdf_path)
    if not urdf_path.is_file():
        raise InputValueError(f"{urdf_path}: URDF file does not exist")
    urdf = read_urdf(urdf_path)
    out: dict[str, list[LinkGeometry]] = {}
    for link in urdf.robot.links:
        for collision in link.collisions:
            geometry = collision.geometry
            if geometry.mesh is not None:
                path = _resolve_mesh_file(geometry.mesh.filename, urdf_path.parent)
                mesh = _clean(trimesh.load(str(path), force="mesh"))
                scale = geometry.mesh.scale
                if scale is not None:
                    scale = np.broadcast_to(np.asarray(scale, dtype=np.float64), (3,))
                    mesh.apply_scale(scale)
                    if np.prod(scale) < 0:
                        mesh.invert()
                description = f"mesh {path.name}" + (
                    f" (scale {list(map(float, scale))})" if scale is not None else ""
                )
            elif geometry.box is not None:
                size = [float(v) for v in geometry.box.size]
                mesh = trimesh.creation.box(extents=size)
                description = f"box {size}"
            elif geometry.cylinder is not None:
                radius, length = float(geometry.cylinder.radius), float(geometry.cylinder.length)
                mesh = trimesh.creation.cylinder(radius=radius, height=length, sections=64)
                description = f"cylinder radius {radius} length {length}"
            elif geometry.sphere is not None:
                radius = float(geometry.sphere.radius)
                mesh = trimesh.creation.icosphere(subdivisions=3, radius=radius)
                description = f"sphere radius {radius}"
            else:
                continue
            if collision.origin is not None:
                mesh.apply_transform(np.asarray(collision.origin, dtype=np.float64))
            out.setdefault(link.name, []).append(
                LinkGeometry(link=link.name, mesh=mesh, description=description)
            )
    return out


# ------------------------------------------------------------------------------------------
# fitting one solid
# ------------------------------------------------------------------------------------------
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
    trimesh = _trimesh()
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
    lo, hi = mesh.bounds
    extent = hi - lo
    pitch = (np.prod(extent) / 3000.0) ** (1.0 / 3.0)
    axes = [np.arange(lo[i] + 0.5 * pitch, hi[i], pitch) for i in range(3)]
    grid = np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, 3)
    origins = samples - normals * 1e-6
    locations, ray_index, _ = mesh.ray.intersects_location(origins, -normals, multiple_hits=False)
    halfway = 0.5 * (samples[ray_index] + locations)
    candidates = np.concatenate((grid, halfway, samples - normals * 0.25 * extent.min()))
    candidates = candidates[_inside(mesh, candidates)]
    if len(candidates) == 0:
        raise InputValueError("no interior point found; is the geometry a closed solid?")
    _, distance, _ = trimesh.proximity.closest_point(mesh, candidates)
    keep = distance > 1e-5
    candidates, radii = candidates[keep], distance[keep]

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


def coverage_gap(mesh, spheres: np.ndarray, num_samples: int = 20000, seed: int = 1) -> float:
    """Largest distance (metres) from a surface sample to the union of ``spheres [K, 4]``
    (0 when every sample is inside a sphere)."""
    trimesh = _trimesh()
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


# ------------------------------------------------------------------------------------------
# a whole robot
# ------------------------------------------------------------------------------------------
def _link_poses(
    joints: Sequence[JointSpec], root: str, values: dict[str, float]
) -> dict[str, np.ndarray]:
    """``{link: T [4, 4]}`` of every link connected to ``root`` (joints at ``values``, else 0),
    walking the tree both ways from ``root``."""
    reached, _ = walk_tree(joints, [root], lambda joint: values.get(joint.name, 0.0))
    return {link: transform for link, (_, transform) in reached.items()}


def _fixed_groups(joints: Sequence[JointSpec]) -> dict[str, set[str]]:
    """``{link: links joined to it by fixed joints}`` (itself included)."""
    groups: dict[str, set[str]] = {}
    for joint in joints:
        for link in (joint.parent, joint.child):
            groups.setdefault(link, {link})
    for joint in joints:
        if joint.type == "fixed":
            merged = groups[joint.parent] | groups[joint.child]
            for link in merged:
                groups[link] = merged
    return groups


@dataclass
class LinkFit:
    """Spheres fitted for one link, with their provenance and quality numbers."""

    link: str
    spheres: np.ndarray
    sources: list[str] = field(default_factory=list)
    coverage_gap: float = 0.0
    volume_ratio: float = float("nan")
    meshes: list = field(default_factory=list, repr=False)


def fit_robot_spheres(
    urdf_path: str | os.PathLike,
    config: RobotConfig | None = None,
    spheres_per_link: int | None = None,
    tolerance: float | None = None,
    seed: int = 0,
    links: Sequence[str] | None = None,
    check_configurations: int = 3,
    link_budgets: dict[str, int] | None = None,
) -> list[LinkFit]:
    """Fit spheres to every link with collision geometry in a URDF.

    Args:
        urdf_path: the URDF holding the collision geometry.
        config: the robot file the spheres are for. URDF links are matched to its links by
            name; geometry is moved into the robot file's link frames (which may differ from
            the URDF's, e.g. other joint-frame conventions) by comparing the two trees at the
            zero configuration (locked joints at their ``lock_joints`` values), and the
            match is checked at ``check_configurations`` random configurations of the joints
            both share. Geometry on a URDF link that the robot file lacks goes to the link of
            the robot file it is fixed to. ``None``: spheres in the URDF link frames.
        spheres_per_link: sphere budget per link (split over its pieces by surface area).
        tolerance: cover tolerance in metres (see :func:`fit_spheres`), instead of a budget.
        seed: random seed.
        links: only these links (robot-file names); default every link with geometry.
        check_configurations: random configurations at which the frame match is verified.
        link_budgets: ``{link: N}`` sphere budgets that override ``spheres_per_link`` /
            ``tolerance`` for those links.

    Returns:
        One :class:`LinkFit` per link, in the robot file's tree order (URDF order without one).
    """
    from curobo_lite.robot.urdf import read_urdf_joints

    geometry = load_urdf_geometry(urdf_path)
    if not geometry:
        raise InputValueError(f"{urdf_path}: no link has collision geometry")
    urdf_joints = read_urdf_joints(urdf_path)
    pieces: dict[str, list[tuple[Any, str]]] = {}
    if config is None:
        for link, items in geometry.items():
            pieces[link] = [(g.mesh, f"{g.description} on URDF link {link}") for g in items]
        order = list(geometry)
    else:
        urdf_links = {j.parent for j in urdf_joints} | {j.child for j in urdf_joints}
        if config.base_link not in urdf_links:
            raise InputValueError(
                f"{urdf_path}: robot base_link '{config.base_link}' is not a link of the URDF, "
                "so its frames cannot be matched to the robot file's"
            )
        robot_links = {j.parent for j in config.joints} | {j.child for j in config.joints}
        groups = _fixed_groups(urdf_joints)
        lock = dict(config.lock_joints)
        urdf_pose = _link_poses(urdf_joints, config.base_link, lock)
        robot_pose = _link_poses(config.joints, config.base_link, lock)
        shared = [n for n in config.joint_names if n in {j.name for j in urdf_joints}]
        rng = np.random.default_rng(seed)
        low, high = config.joint_limits.position.double().cpu().numpy()
        checks = []
        for _ in range(check_configurations):
            q = low + rng.random(len(low)) * (high - low)
            values = {**lock, **{n: float(v) for n, v in zip(config.joint_names, q)}}
            values = {k: v for k, v in values.items() if k in shared or k in lock}
            checks.append(
                (
                    _link_poses(urdf_joints, config.base_link, values),
                    _link_poses(config.joints, config.base_link, values),
                )
            )
        order = [config.base_link] + [j.child for j in config.joints]
        for urdf_link, items in geometry.items():
            if urdf_link in robot_links:
                target = urdf_link
            else:
                matches = [
                    link
                    for link in order
                    if link in groups.get(urdf_link, ()) and _attached(config, link)
                ]
                if not matches:
                    continue
                target = matches[0]
            if not _attached(config, target) or urdf_link not in urdf_pose:
                continue
            offset = np.linalg.inv(robot_pose[target]) @ urdf_pose[urdf_link]
            for urdf_at, robot_at in checks:
                moved = np.linalg.inv(robot_at[target]) @ urdf_at[urdf_link]
                if np.abs(moved - offset).max() > 1e-6:
                    raise InputValueError(
                        f"{urdf_path}: link '{urdf_link}' moves relative to the robot file's "
                        f"link '{target}' when the joints move; the URDF and the robot file "
                        "do not describe the same kinematics"
                    )
            note = "" if target == urdf_link else f" (fixed to {target})"
            for g in items:
                mesh = g.mesh.copy()
                mesh.apply_transform(offset)
                pieces.setdefault(target, []).append(
                    (mesh, f"{g.description} on URDF link {urdf_link}{note}")
                )
    unknown = [link for link in (link_budgets or {}) if link not in pieces]
    if unknown:
        raise InputValueError(
            f"link_budgets: no collision geometry for {unknown}; links with geometry: "
            f"{sorted(pieces)}"
        )
    if links is not None:
        missing = [link for link in links if link not in pieces]
        if missing:
            raise InputValueError(
                f"links: no collision geometry for {missing}; links with geometry: {sorted(pieces)}"
            )
        pieces = {link: pieces[link] for link in links}
    results = []
    for link in dict.fromkeys(order):
        if link not in pieces:
            continue
        items = pieces[link]
        areas = np.array([mesh.area for mesh, _ in items])
        budgets: list[int | None] = [None] * len(items)
        link_budget = (link_budgets or {}).get(link, spheres_per_link)
        if link_budget is not None:
            share = np.maximum(1, np.floor(link_budget * areas / areas.sum())).astype(int)
            budgets = [int(b) for b in share]
        fitted, gaps, volume = [], [], 0.0
        for (mesh, _), budget in zip(items, budgets):
            fit = fit_spheres(
                mesh, num_spheres=budget, tolerance=None if budget else tolerance, seed=seed
            )
            fitted.append(fit.spheres)
            volume += abs(float(mesh.volume))
        spheres = _round_spheres(np.concatenate(fitted))
        gaps = [coverage_gap(mesh, spheres) for mesh, _ in items]
        results.append(
            LinkFit(
                link=link,
                spheres=spheres,
                sources=[text for _, text in items],
                coverage_gap=max(gaps),
                volume_ratio=union_volume(spheres) / volume if volume > 0 else float("nan"),
                meshes=[mesh for mesh, _ in items],
            )
        )
    return results


def _attached(config: RobotConfig, link: str) -> bool:
    try:
        config.rigid_attachment(link)
    except ValueError:
        return False
    return True


def _round_spheres(spheres: np.ndarray) -> np.ndarray:
    """Round centres to ``DECIMALS`` and grow radii by the rounding error, rounding up."""
    scale = 10.0**DECIMALS
    centres = np.round(spheres[:, :3] * scale) / scale
    shift = np.linalg.norm(centres - spheres[:, :3], axis=1)
    radii = np.ceil((spheres[:, 3] + shift) * scale) / scale
    return np.concatenate((centres, radii[:, None]), axis=1)


# ------------------------------------------------------------------------------------------
# self-collision ignore list
# ------------------------------------------------------------------------------------------
def suggest_self_collision_ignore(
    config: RobotConfig,
    num_samples: int = 20000,
    seed: int = 0,
    meshes: dict[str, list] | None = None,
    mesh_samples: int = 5000,
) -> tuple[dict[str, list[str]], dict[str, Any]]:
    """Link pairs to leave out of self-collision checks, by sampling configurations.

    A pair of collision links is ignored when the links are joined by a joint (adjacent, the
    fixed joints between them folded) or when their spheres overlap at every one of
    ``num_samples`` configurations drawn uniformly within the position limits (a pair that
    always overlaps cannot be separated, so checking it only blocks planning).
    With ``meshes`` (``{link: [trimesh in the link frame]}``, needs python-fcl), a pair two
    moving joints apart whose spheres sometimes overlap is also ignored when its meshes collide
    in none of the first ``mesh_samples`` configurations: the link between them keeps them
    apart, and the overlap of their spheres is the approximation's, not the robot's.

    Returns:
        ``(ignore, report)``: ``{link: [links]}`` (each pair once, under the link that comes
        first in ``collision_link_names``), and numbers behind it (per pair: fraction of
        samples in collision).
    """
    import torch

    from curobo_lite.robot.kinematics import Kinematics
    from curobo_lite.types import TensorDeviceType

    if config.collision is None:
        raise InputValueError(f"robot '{config.name}' has no collision spheres")
    ta = TensorDeviceType(dtype=torch.float64)
    collision = config.collision
    stripped = config.to(ta)
    kinematics = Kinematics(stripped, backend="torch")
    generator = torch.Generator().manual_seed(seed)
    low, high = stripped.joint_limits.position
    q = low + torch.rand(num_samples, stripped.dof, generator=generator, dtype=ta.dtype) * (
        high - low
    )
    with torch.no_grad():
        spheres = kinematics.forward(q).link_spheres
    names = kinematics.sphere_link_names
    links = list(collision.link_names)
    index = {link: torch.tensor([i for i, n in enumerate(names) if n == link]) for link in links}

    # rigid bodies are numbered by the moving chain joint that carries them (-1: the base);
    # adjacent links are on the same body or on bodies one moving joint apart
    frame_of, count = {config.base_link: -1}, -1
    for joint in config.chain:
        count += int(joint.is_moving)
        frame_of[joint.child] = count
    body = {link: frame_of[config.rigid_attachment(link)[0]] for link in links}

    ignore: dict[str, list[str]] = {}
    fractions: dict[str, float] = {}
    reasons: dict[str, str] = {}
    for a_i, a in enumerate(links):
        for b in links[a_i + 1 :]:
            adjacent = abs(body[a] - body[b]) <= 1
            sa, sb = spheres[:, index[a]], spheres[:, index[b]]
            gap = (
                torch.cdist(sa[..., :3], sb[..., :3])
                - sa[..., 3][..., :, None]
                - sb[..., 3][..., None, :]
            )
            overlap = gap.flatten(1).min(1).values < 0
            colliding = overlap.double().mean().item()
            fractions[f"{a}/{b}"] = colliding
            reason = "adjacent" if adjacent else "always overlapping" if colliding == 1.0 else None
            if reason is None and meshes is not None and abs(body[a] - body[b]) == 2:
                if overlap.any() and not _meshes_ever_collide(
                    config, q[:mesh_samples], meshes, a, b
                ):
                    reason = f"meshes never collide in {min(mesh_samples, num_samples)} samples"
            if reason is not None:
                ignore.setdefault(a, []).append(b)
                reasons[f"{a}/{b}"] = reason
    return ignore, {"fractions": fractions, "reasons": reasons, "num_samples": num_samples}


def _meshes_ever_collide(config: RobotConfig, q, meshes: dict[str, list], a: str, b: str) -> bool:
    """Whether the meshes of links ``a`` and ``b`` collide at any configuration of ``q``."""
    try:
        import fcl
    except ImportError as err:
        raise ImportError("mesh collision checks need python-fcl: pip install python-fcl") from err

    def model(mesh):
        bvh = fcl.BVHModel()
        bvh.beginModel(len(mesh.vertices), len(mesh.faces))
        bvh.addSubModel(np.asarray(mesh.vertices), np.asarray(mesh.faces))
        bvh.endModel()
        return bvh

    models = {link: [model(m) for m in meshes[link]] for link in (a, b)}
    request = fcl.CollisionRequest()
    for row in q.tolist():
        values = {**config.lock_joints, **dict(zip(config.joint_names, row))}
        poses = _link_poses(config.joints, config.base_link, values)
        objects = {
            link: [
                fcl.CollisionObject(m, fcl.Transform(poses[link][:3, :3], poses[link][:3, 3]))
                for m in models[link]
            ]
            for link in (a, b)
        }
        for oa in objects[a]:
            for ob in objects[b]:
                if fcl.collide(oa, ob, request, fcl.CollisionResult()) > 0:
                    return True
    return False


# ------------------------------------------------------------------------------------------
# writing robot files
# ------------------------------------------------------------------------------------------
def _fmt(value: float) -> str:
    text = f"{value:.{DECIMALS}f}".rstrip("0").rstrip(".")
    return "0.0" if text in ("-0", "0", "") else text


def _comment(text: str, indent: str = "", width: int = 100) -> list[str]:
    """``text`` as ``# `` comment lines of at most ``width`` characters (long words kept)."""
    import textwrap

    prefix = f"{indent}# "
    return textwrap.wrap(
        text,
        width=width,
        initial_indent=prefix,
        subsequent_indent=prefix,
        break_long_words=False,
        break_on_hyphens=False,
    ) or [prefix.rstrip()]


def spheres_yaml(fits: Sequence[LinkFit], header: Sequence[str] = (), indent: str = "") -> str:
    """``collision_spheres:`` block text with one provenance comment above each link."""
    lines = [line for text in header for line in _comment(text, indent)]
    lines.append(f"{indent}collision_spheres:")
    for fit in fits:
        gap = 1000.0 * fit.coverage_gap
        lines += _comment(
            f"{fit.link}: {len(fit.spheres)} spheres from "
            + "; ".join(fit.sources)
            + f"; surface coverage gap {gap:.2f} mm, union/solid volume {fit.volume_ratio:.2f}",
            indent + "  ",
        )
        lines.append(f"{indent}  {fit.link}:")
        for x, y, z, r in fit.spheres:
            lines.append(
                f"{indent}    - {{center: [{_fmt(x)}, {_fmt(y)}, {_fmt(z)}], radius: {_fmt(r)}}}"
            )
    return "\n".join(lines) + "\n"


def names_yaml(key: str, names: Sequence[str]) -> str:
    """``key: [a, b, ...]`` wrapped at 100 characters."""
    import textwrap

    return (
        "\n".join(
            textwrap.wrap(
                f"{key}: [{', '.join(names)}]",
                width=100,
                subsequent_indent="  ",
                break_long_words=False,
                break_on_hyphens=False,
            )
        )
        + "\n"
    )


def ignore_yaml(ignore: dict[str, list[str]], header: Sequence[str] = ()) -> str:
    """``self_collision_ignore:`` block text."""
    lines = [line for text in header for line in _comment(text)]
    lines.append("self_collision_ignore:")
    for link, others in ignore.items():
        lines.append(f"  {link}: [{', '.join(others)}]")
    return "\n".join(lines) + "\n"


_GENERATED = "curobo-lite robot spheres"


def replace_top_level_block(text: str, key: str, block: str) -> str:
    """Replace the top-level ``key:`` entry of a YAML text (and a comment header above it that
    this tool wrote) by ``block``, or append ``block``; the rest of the text is kept as is."""
    lines = text.splitlines(keepends=True)
    start = next(
        (i for i, line in enumerate(lines) if re.match(rf"{re.escape(key)}\s*:", line)), None
    )
    if start is None:
        joined = text if text.endswith("\n") or not text else text + "\n"
        return joined + ("\n" if joined else "") + block
    end = start + 1
    while end < len(lines) and (not lines[end].strip() or lines[end][0] in " \t#"):
        end += 1
    # comments and blank lines just above the next key belong to that key
    while end > start + 1 and (not lines[end - 1].strip() or lines[end - 1].startswith("#")):
        end -= 1
    top = start
    while top > 0 and lines[top - 1].startswith("#"):
        top -= 1
    if not any(_GENERATED in line for line in lines[top:start]):
        top = start
    tail = lines[end:]
    if tail and tail[0].strip():
        block = block + "\n"
    return "".join(lines[:top]) + block + "".join(tail)
