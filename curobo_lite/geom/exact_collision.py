"""Exact signed distances between a robot's collision shapes and the world's obstacles (coal).

The optimizers see collision spheres; :class:`ExactCollisionChecker` answers on the real
shapes, to validate a start, a goal or a finished plan::

    checker = ExactCollisionChecker({"link1": [LinkShape.box([0.1, 0.1, 0.5])]}, world)
    result = checker.distance(link_position [B, L, 3], link_quaternion [B, L, 4])
    result.distance      # [B] metres, smallest over every (link, obstacle) pair; < 0: overlap
    result.link, result.obstacle   # the closest (worst) pair of each configuration

Shapes and how coal measures them:

* boxes, spheres, cylinders, capsules (link primitives and the world's cuboid, sphere, capsule,
  cylinder) are coal primitives: exact distances, and exact penetration depths (coal's GJK/EPA).
* a watertight mesh that is convex (its convex hull's volume exceeds its own by at most
  ``CONVEX_VOLUME_TOL``, relative) becomes a ``coal.Convex`` of its hull: exact distance and
  penetration depth for the hull, which contains the mesh (never reports more clearance than
  the mesh has). The Franka's collision meshes are such hulls.
* any other mesh is a ``coal.BVHModel`` of its triangles: separation distances are exact, also
  for concave meshes. coal treats a BVH model as a surface, not a solid: when surfaces cross,
  the reported depth is that of the crossing triangles (a lower bound on the true depth), and a
  shape wholly inside a mesh reports a positive distance to the surface. So for a watertight
  BVH mesh this module also tests whether the other shape lies inside it (winding number of one
  of its points) and then reports minus that distance: the sign is right, the magnitude a lower
  bound on the penetration depth. Two BVH meshes whose surfaces cross read as coal's contact
  depth (negative). Open (non-watertight) meshes have no inside.

Broad phase: a bounding sphere per link shape and a bounding box per obstacle give a lower
bound on every pair's distance; pairs are measured in the order of their bounds and the search
stops once the next bound exceeds the smallest distance found, so the minimum is exact without
measuring every pair.

coal is imported on first use (``pip install coal``, the ``exact`` extra).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from curobo_lite.geom.world import WorldConfig
from curobo_lite.types.errors import InputValueError

#: A watertight mesh whose convex hull is at most this much larger (relative volume) is
#: measured as its hull (``coal.Convex``, exact penetration depths).
CONVEX_VOLUME_TOL = 1e-3

#: Depth (m) reported for two crossing BVH surfaces when coal gives no contact depth.
_TOUCH_DEPTH = 1e-9

_SHAPE_KINDS = ("box", "sphere", "cylinder", "capsule", "mesh")


def require_coal():
    """The coal module, or an ImportError that says how to install it."""
    try:
        import coal
    except ImportError as err:
        raise ImportError(
            "exact (mesh) collision checks need the 'coal' package: pip install coal "
            "(or pip install curobo_lite[exact])"
        ) from err
    return coal


@dataclass
class LinkShape:
    """One collision shape of a link, in the link's frame.

    Attributes:
        kind: ``"box"`` (``size`` [3], full edge lengths), ``"sphere"`` (``radius``),
            ``"cylinder"`` (``radius``, ``length`` along local z, centred), ``"capsule"``
            (``radius``, ``length`` of the segment along local z, centred) or ``"mesh"``
            (``vertices [V, 3]``, ``faces [F, 3]``, outward winding).
        origin: ``[4, 4]`` the shape's frame in the link frame.
        description: where it came from (error messages, reports).
    """

    kind: str
    origin: Any = None
    size: Sequence[float] | None = None
    radius: float | None = None
    length: float | None = None
    vertices: Any = None
    faces: Any = None
    description: str = ""

    def __post_init__(self) -> None:
        if self.kind not in _SHAPE_KINDS:
            raise InputValueError(f"kind: expected one of {_SHAPE_KINDS}, received {self.kind!r}")
        self.origin = np.eye(4) if self.origin is None else np.asarray(self.origin, np.float64)
        if self.origin.shape != (4, 4) or not np.isfinite(self.origin).all():
            raise InputValueError(f"origin: expected a finite [4, 4] transform ({self.kind})")
        need = {
            "box": ("size",),
            "sphere": ("radius",),
            "cylinder": ("radius", "length"),
            "capsule": ("radius", "length"),
            "mesh": ("vertices", "faces"),
        }[self.kind]
        for name in need:
            if getattr(self, name) is None:
                raise InputValueError(f"{name}: a {self.kind} shape needs it")
        if self.kind == "mesh":
            self.vertices = np.asarray(self.vertices, dtype=np.float64).reshape(-1, 3)
            self.faces = np.asarray(self.faces, dtype=np.int64).reshape(-1, 3)
            if len(self.faces) == 0:
                raise InputValueError("faces: a mesh shape needs at least one triangle")
        if self.kind == "box":
            self.size = [float(v) for v in self.size]
            if len(self.size) != 3 or min(self.size) <= 0:
                raise InputValueError(f"size: expected 3 positive lengths, received {self.size}")

    @classmethod
    def box(cls, size: Sequence[float], origin: Any = None) -> LinkShape:
        return cls("box", origin, size=size, description=f"box {list(size)}")

    @classmethod
    def sphere(cls, radius: float, origin: Any = None) -> LinkShape:
        return cls("sphere", origin, radius=radius, description=f"sphere {radius}")

    @classmethod
    def mesh(cls, vertices: Any, faces: Any, origin: Any = None) -> LinkShape:
        return cls("mesh", origin, vertices=vertices, faces=faces, description="mesh")


@dataclass
class ExactDistance:
    """Result of :meth:`ExactCollisionChecker.distance` for ``B`` configurations.

    Attributes:
        distance: ``[B]`` float64, smallest signed distance (m) between any checked link shape
            and any enabled obstacle (negative: penetration depth, see the module docstring);
            ``inf`` when there is nothing to check, ``max_distance`` when every pair is at
            least that far.
        link, obstacle: ``[B]`` names of the closest pair (``None`` where ``distance`` is
            ``inf`` or capped at ``max_distance``).
        pairs_measured: narrow-phase (coal) calls made, over the whole batch.
    """

    distance: np.ndarray
    link: list[str | None]
    obstacle: list[str | None]
    pairs_measured: int = 0


@dataclass
class _Piece:
    """A coal geometry with its frame in its owner's frame and its bounding sphere."""

    owner: str
    geometry: Any
    local: np.ndarray  # [4, 4] in the owner's (link or obstacle) frame
    centre: np.ndarray  # [3] bounding sphere centre, in the piece's own frame
    radius: float
    probe: np.ndarray  # [3] a point of the solid, in the piece's own frame
    is_bvh: bool = False
    closed_mesh: tuple[np.ndarray, np.ndarray] | None = None  # (vertices, faces) for insides
    world: np.ndarray = field(default_factory=lambda: np.eye(4))  # obstacles: fixed pose
    transform: Any = None  # obstacles: ``world`` as a coal.Transform3s, built once


def _z_to(direction: np.ndarray) -> np.ndarray:
    """A rotation taking +z to the unit vector ``direction``."""
    z = np.array([0.0, 0.0, 1.0])
    v = np.cross(z, direction)
    c = float(np.dot(z, direction))
    if np.linalg.norm(v) < 1e-12:
        return np.eye(3) if c > 0 else np.diag([1.0, -1.0, -1.0])
    vx = np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])
    return np.eye(3) + vx + vx @ vx / (1.0 + c)


def _quaternion_map() -> tuple[np.ndarray, np.ndarray]:
    """``(M [16, 9], I [9])``: a rotation matrix (flattened) is ``I + 2 * (q q^T).flat @ M``;
    each entry sums two products with signs +-1, as the textbook formula does."""
    w, x, y, z = range(4)
    terms = (
        ((y, y, -1), (z, z, -1)),
        ((x, y, 1), (w, z, -1)),
        ((x, z, 1), (w, y, 1)),
        ((x, y, 1), (w, z, 1)),
        ((x, x, -1), (z, z, -1)),
        ((y, z, 1), (w, x, -1)),
        ((x, z, 1), (w, y, -1)),
        ((y, z, 1), (w, x, 1)),
        ((x, x, -1), (y, y, -1)),
    )
    m = np.zeros((16, 9))
    for entry, pair in enumerate(terms):
        for a, b, sign in pair:
            m[4 * a + b, entry] = sign
    return m, np.eye(3).reshape(9)


_QUATERNION_MAP = _quaternion_map()


def quaternion_matrices(q: np.ndarray) -> np.ndarray:
    """``[..., 3, 3]`` rotation matrices of unit quaternions ``q [..., 4]`` (wxyz)."""
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    # one product table and one matmul instead of ~40 small array ops (the mesh checks
    # convert a few frames per query, so the per-call overhead is what counts)
    products = (q[..., :, None] * q[..., None, :]).reshape(*q.shape[:-1], 16)
    m, eye = _QUATERNION_MAP
    return (eye + 2.0 * (products @ m)).reshape(*q.shape[:-1], 3, 3)


def _pose_matrix(pose: Sequence[float]) -> np.ndarray:
    """``[4, 4]`` of an ``[x, y, z, qw, qx, qy, qz]`` pose."""
    out = np.eye(4)
    out[:3, :3] = quaternion_matrices(np.asarray(pose[3:], dtype=np.float64))
    out[:3, 3] = pose[:3]
    return out


def winding_number(vertices: np.ndarray, faces: np.ndarray, points: np.ndarray) -> np.ndarray:
    """``[P]`` generalized winding numbers of ``points [P, 3]`` with respect to a closed,
    outward-wound triangle mesh: 1 inside, 0 outside (solid angles, Van Oosterom and
    Strackee)."""
    tri = vertices[faces]  # [F, 3, 3]
    a = tri[None, :, 0] - points[:, None]
    b = tri[None, :, 1] - points[:, None]
    c = tri[None, :, 2] - points[:, None]
    la, lb, lc = (np.linalg.norm(v, axis=-1) for v in (a, b, c))
    det = np.einsum("pfi,pfi->pf", a, np.cross(b, c))
    den = (
        la * lb * lc
        + np.einsum("pfi,pfi->pf", a, b) * lc
        + np.einsum("pfi,pfi->pf", a, c) * lb
        + np.einsum("pfi,pfi->pf", b, c) * la
    )
    return np.arctan2(det, den).sum(-1) / (2.0 * np.pi)


def _mesh_piece(coal, owner: str, vertices: np.ndarray, faces: np.ndarray, local) -> _Piece:
    """A mesh as a ``coal.Convex`` (watertight and convex) or a ``coal.BVHModel``."""
    import trimesh

    mesh = trimesh.Trimesh(vertices=vertices, faces=faces, process=True)
    lo, hi = mesh.vertices.min(0), mesh.vertices.max(0)
    centre = 0.5 * (lo + hi)
    radius = float(np.linalg.norm(mesh.vertices - centre, axis=1).max())
    bvh = coal.BVHModelOBBRSS()
    bvh.beginModel(len(mesh.faces), len(mesh.vertices))
    bvh.addVertices(np.ascontiguousarray(mesh.vertices, dtype=np.float64))
    bvh.addTriangles(np.ascontiguousarray(mesh.faces, dtype=np.int64))
    bvh.endModel()
    watertight = bool(mesh.is_watertight)
    if watertight and mesh.volume > 0:
        hull = mesh.convex_hull
        if hull.volume - mesh.volume <= CONVEX_VOLUME_TOL * hull.volume:
            bvh.buildConvexHull(False, "Qt")
            probe = np.asarray(mesh.vertices.mean(0))
            return _Piece(owner, bvh.convex, local, centre, radius, probe)
    closed = (
        (np.asarray(mesh.vertices), np.asarray(mesh.faces))
        if watertight and mesh.volume > 0
        else None
    )
    probe = np.asarray(mesh.vertices[0], dtype=np.float64)
    return _Piece(owner, bvh, local, centre, radius, probe, is_bvh=True, closed_mesh=closed)


def _link_piece(coal, link: str, shape: LinkShape) -> _Piece:
    origin = shape.origin
    zero = np.zeros(3)
    if shape.kind == "box":
        size = np.asarray(shape.size, dtype=np.float64)
        return _Piece(link, coal.Box(*size), origin, zero, float(np.linalg.norm(size) / 2), zero)
    if shape.kind == "sphere":
        r = float(shape.radius)
        return _Piece(link, coal.Sphere(r), origin, zero, r, zero)
    if shape.kind == "cylinder":
        r, h = float(shape.radius), float(shape.length)
        return _Piece(link, coal.Cylinder(r, h), origin, zero, math.hypot(r, h / 2), zero)
    if shape.kind == "capsule":
        r, h = float(shape.radius), float(shape.length)
        return _Piece(link, coal.Capsule(r, h), origin, zero, h / 2 + r, zero)
    return _mesh_piece(coal, link, shape.vertices, shape.faces, origin)


def _obstacle_piece(coal, obstacle) -> _Piece:
    """A world obstacle (:mod:`curobo_lite.geom.world`) as a coal geometry at its pose."""
    pose = _pose_matrix(obstacle.pose)
    zero = np.zeros(3)
    eye = np.eye(4)
    kind = obstacle.kind
    if kind == "cuboid":
        dims = np.asarray(obstacle.dims, dtype=np.float64)
        piece = _Piece(
            obstacle.name, coal.Box(*dims), eye, zero, float(np.linalg.norm(dims) / 2), zero
        )
    elif kind == "sphere":
        r = float(obstacle.radius)
        piece = _Piece(obstacle.name, coal.Sphere(r), eye, zero, r, zero)
    elif kind == "cylinder":
        r, h = float(obstacle.radius), float(obstacle.height)
        piece = _Piece(obstacle.name, coal.Cylinder(r, h), eye, zero, math.hypot(r, h / 2), zero)
    elif kind == "capsule":
        base, tip = np.asarray(obstacle.base, float), np.asarray(obstacle.tip, float)
        axis = tip - base
        h = float(np.linalg.norm(axis))
        local = np.eye(4)
        local[:3, 3] = 0.5 * (base + tip)
        if h > 0:
            local[:3, :3] = _z_to(axis / h)
        r = float(obstacle.radius)
        piece = _Piece(obstacle.name, coal.Capsule(r, h), local, zero, h / 2 + r, zero)
    elif kind == "mesh":
        vertices, faces = obstacle.mesh_data()
        piece = _mesh_piece(coal, obstacle.name, vertices, faces, eye)
    else:  # pragma: no cover - WorldConfig holds only the kinds above
        raise InputValueError(f"obstacle {obstacle.name!r}: unsupported kind {kind!r}")
    piece.world = pose @ piece.local
    piece.transform = coal.Transform3s(piece.world[:3, :3], piece.world[:3, 3])
    return piece


class ExactCollisionChecker:
    """Signed distances between link shapes (each in its link's frame) and the obstacles of a
    :class:`WorldConfig`, with coal (see the module docstring for what is exact).

    Args:
        link_shapes: ``{link: [LinkShape, ...]}``; a link with no shapes is not checked.
        world: the obstacles (disabled ones are skipped); ``None``: no obstacles.
        link_names: the order of the links in the poses given to :meth:`distance` (default:
            the keys of ``link_shapes``); must hold every key of ``link_shapes``.
    """

    def __init__(
        self,
        link_shapes: Mapping[str, Sequence[LinkShape]],
        world: WorldConfig | None = None,
        link_names: Sequence[str] | None = None,
    ) -> None:
        self._coal = require_coal()
        self.link_names = list(link_shapes if link_names is None else link_names)
        unknown = [name for name in link_shapes if name not in self.link_names]
        if unknown:
            raise InputValueError(
                f"link_shapes: links {unknown} are not in link_names {self.link_names}"
            )
        self._link_pieces: list[_Piece] = []
        self._link_index: list[int] = []
        for link, shapes in link_shapes.items():
            for shape in shapes:
                if not isinstance(shape, LinkShape):
                    shape = LinkShape(**shape) if isinstance(shape, Mapping) else shape
                self._link_pieces.append(_link_piece(self._coal, link, shape))
                self._link_index.append(self.link_names.index(link))
        # per-piece constants of the broad phase, gathered once (not per query)
        pieces = self._link_pieces
        self._piece_arrays = (
            np.asarray(self._link_index, dtype=np.int64),
            np.stack([p.local for p in pieces]) if pieces else np.zeros((0, 4, 4)),  # [P, 4, 4]
            np.array([p.centre for p in pieces], dtype=np.float64).reshape(-1, 3, 1),
            np.array([p.radius for p in pieces], dtype=np.float64),
        )
        self._request = self._coal.DistanceRequest()
        self._result = self._coal.DistanceResult()
        self._transform_a = self._coal.Transform3s()
        self.update_world(world)

    @property
    def checked_links(self) -> list[str]:
        """Links with at least one shape, in :attr:`link_names` order."""
        owners = {p.owner for p in self._link_pieces}
        return [name for name in self.link_names if name in owners]

    def update_world(self, world: WorldConfig | None) -> None:
        """Replace the obstacles (the link shapes are kept)."""
        if world is not None and not isinstance(world, WorldConfig):
            raise InputValueError(
                f"world: expected a WorldConfig or None, received {type(world).__name__}"
            )
        obstacles = [] if world is None else [o for o in world if o.enabled]
        self._obstacles = [_obstacle_piece(self._coal, o) for o in obstacles]
        # each obstacle's bounding box (coal's AABB in the obstacle piece's frame) and frame
        lo, hi = [], []
        for piece in self._obstacles:
            piece.geometry.computeLocalAABB()
            lo.append(np.array(piece.geometry.aabb_local.min_, dtype=np.float64))
            hi.append(np.array(piece.geometry.aabb_local.max_, dtype=np.float64))
        self._obstacle_lo = np.array(lo).reshape(-1, 3)
        self._obstacle_hi = np.array(hi).reshape(-1, 3)
        self._obstacle_rotation = np.array([p.world[:3, :3] for p in self._obstacles]).reshape(
            -1, 3, 3
        )
        self._obstacle_origin = np.array([p.world[:3, 3] for p in self._obstacles]).reshape(-1, 3)

    @property
    def obstacle_names(self) -> list[str]:
        return [p.owner for p in self._obstacles]

    def distance(
        self,
        link_position: Any,
        link_quaternion: Any,
        max_distance: float = float("inf"),
        stop_below: float = -float("inf"),
    ) -> ExactDistance:
        """Smallest signed distance per configuration.

        Args:
            link_position: ``[B, L, 3]`` link origins in the world (base) frame, ``L`` =
                ``len(link_names)`` (numpy or torch).
            link_quaternion: ``[B, L, 4]`` link orientations, ``wxyz``.
            max_distance: pairs at least this far apart are not measured; a configuration
                with nothing closer reads ``max_distance`` (default: exact, however far).
            stop_below: a configuration's search stops once a pair closer than this is found
                (e.g. ``0`` for a pass/fail check); its distance is then only some pair's.
        """
        position = _as_numpy(link_position)
        quaternion = _as_numpy(link_quaternion)
        L = len(self.link_names)
        if position.ndim != 3 or position.shape[1:] != (L, 3):
            raise InputValueError(
                f"link_position: expected [B, {L}, 3], received {tuple(position.shape)}"
            )
        if quaternion.shape != (*position.shape[:2], 4):
            raise InputValueError(
                f"link_quaternion: expected {[*position.shape[:2], 4]}, received "
                f"{list(quaternion.shape)}"
            )
        frames = np.zeros((*position.shape[:2], 4, 4))
        frames[..., :3, :3] = quaternion_matrices(quaternion)
        frames[..., :3, 3] = position
        frames[..., 3, 3] = 1.0
        return self.distance_frames(frames, max_distance, stop_below)

    def distance_frames(
        self,
        link_frames: np.ndarray,
        max_distance: float = float("inf"),
        stop_below: float = -float("inf"),
    ) -> ExactDistance:
        """:meth:`distance` of links placed by ``link_frames [B, L, 4, 4]`` (float64, each a
        link's frame in the world)."""
        frames = np.asarray(link_frames, dtype=np.float64)
        L = len(self.link_names)
        if frames.ndim != 4 or frames.shape[1:] != (L, 4, 4):
            raise InputValueError(
                f"link_frames: expected [B, {L}, 4, 4], received {tuple(frames.shape)}"
            )
        if not np.isfinite(frames).all():
            raise InputValueError("link_frames: contains NaN or infinite values")
        B = frames.shape[0]
        out = np.full(B, float(max_distance))
        links: list[str | None] = [None] * B
        obstacles: list[str | None] = [None] * B
        measured = 0
        if not self._link_pieces or not self._obstacles or B == 0:
            out[:] = float("inf")
            return ExactDistance(out, links, obstacles, 0)
        index, local, centres_local, radii = self._piece_arrays
        world = frames[:, index] @ local  # [B, P, 4, 4]
        # bounding sphere centres [B, P, 3] (matmul, not einsum: these batches are small and
        # a query's fixed cost is what the planners pay)
        centres = (world[..., :3, :3] @ centres_local)[..., 0] + world[..., :3, 3]
        # lower bounds of every pair's distance [B, P, O]: from the link piece's bounding
        # sphere to the obstacle's bounding box (centres in each obstacle's frame)
        offset = centres[:, :, None, None, :] - self._obstacle_origin[:, None, :]  # [B,P,O,1,3]
        local_centres = (offset @ self._obstacle_rotation)[..., 0, :]
        outside = np.maximum(
            np.maximum(self._obstacle_lo - local_centres, local_centres - self._obstacle_hi), 0.0
        )
        bound = np.sqrt((outside * outside).sum(-1)) - radii[:, None]
        flat = bound.reshape(B, -1)
        # rows with no bound below max_distance read max_distance: no sort, no loop
        rows = np.nonzero(flat.min(1) < out)[0]
        order = np.argsort(flat[rows], axis=1)
        num_obstacles = len(self._obstacles)
        # plain Python numbers in the loop (numpy scalar indexing costs more than the test)
        for b, ks in zip(rows.tolist(), order.tolist(), strict=True):
            best = out[b]
            bounds = flat[b].tolist()
            for k in ks:
                if bounds[k] >= best:
                    break
                p, o = divmod(k, num_obstacles)
                d = self._pair(self._link_pieces[p], world[b, p], self._obstacles[o])
                measured += 1
                if d < best:
                    best = d
                    links[b] = self._link_pieces[p].owner
                    obstacles[b] = self._obstacles[o].owner
                    if best < stop_below:
                        break
            out[b] = best
        return ExactDistance(out, links, obstacles, measured)

    def _pair(self, link: _Piece, link_world: np.ndarray, obstacle: _Piece) -> float:
        """Signed distance between one placed link piece and one obstacle piece."""
        coal = self._coal
        ta, tb = self._transform_a, obstacle.transform
        ta.setTransform(link_world[:3, :3], link_world[:3, 3])
        self._result.clear()
        d = float(
            coal.distance(link.geometry, ta, obstacle.geometry, tb, self._request, self._result)
        )
        if link.is_bvh and obstacle.is_bvh and d <= 0.0:
            # two surfaces: coal's distance reads 0 when they cross; its contacts carry a depth
            request = coal.CollisionRequest()
            request.enable_contact = True
            result = coal.CollisionResult()
            coal.collide(link.geometry, ta, obstacle.geometry, tb, request, result)
            if result.isCollision():
                depths = [c.penetration_depth for c in result.getContacts()]
                d = min([-_TOUCH_DEPTH, *[x for x in depths if x < 0]])
            return d
        if d > 0.0:
            # a shape wholly inside a closed BVH mesh reads as its distance to the surface
            for mesh, mesh_world, other, other_world in (
                (link, link_world, obstacle, obstacle.world),
                (obstacle, obstacle.world, link, link_world),
            ):
                if mesh.closed_mesh is None:
                    continue
                point = other_world[:3, :3] @ other.probe + other_world[:3, 3]
                inverse = np.linalg.inv(mesh_world)
                local_point = inverse[:3, :3] @ point + inverse[:3, 3]
                if winding_number(*mesh.closed_mesh, local_point[None])[0] > 0.5:
                    return -d
        return d

    def __repr__(self) -> str:
        return (
            f"ExactCollisionChecker(links={len(self.checked_links)}, "
            f"shapes={len(self._link_pieces)}, obstacles={len(self._obstacles)})"
        )


def _as_numpy(value: Any) -> np.ndarray:
    if hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    return np.asarray(value, dtype=np.float64)
