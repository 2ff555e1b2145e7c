"""MotionBenchMaker's seven Franka scene families, sampled from a seed.

MotionBenchMaker (Chamzas et al., "MotionBenchMaker: A Tool to Generate and Benchmark Motion
Planning Datasets", RA-L 2022; github.com/KavrakiLab/motion_bench_maker) builds a problem from
a nominal scene (``configs/scenes/<family>/scene_*.yaml``), moves every obstacle by the
problem's ``base_offset`` (``configs/problems/<family>_panda.yaml``), then applies a random
"World" pose to all of them about the robot's base and a random local pose to each listed
object (``variation_*.yaml``). The numbers below are theirs (scene frame, metres, ROS cylinder
dimensions [height, radius]); differences:

- Their variation type "uniform" runs their Gaussian branch (``type.compare("uniform")`` is 0,
  i.e. false, for "uniform"), so positions are drawn N(0, sigma) with sigma = the listed value,
  orientations uniformly within +-the listed angles. We draw the same, with the Gaussian
  truncated at 2 sigma (and object positions clipped to their support surface) so an object
  never leaves its shelf. The problems MBM released (2021) were drawn before robowflex's fix
  of 2023-05 (#317: its ``samplePoseGaussian`` drew positions *uniformly* within +-sigma); the
  cage family draws its world shift that way (the other families' problem files were made
  with the truncated Gaussian and keep it).
- The cage's grasp is MBM's: from the front through the lower opening, the hand level
  (:func:`_cage_grasps`), not from above.
- Objects rest on their support surface (their files sink cans 1 cm into the boards), except
  the cage's cube, which stays at MBM's height (2.5 cm above the floor): it sets how high the
  hand grasps, and so how much room the wrist has under the lower front bar.
- Dimensions of the movable objects vary a little (can height and radius, cube size, the
  table clutter by +-20%); the furniture keeps its nominal size (MBM varies poses only).
- The robot stands on a stand (cuboid ``stand``, dims [0.3, 0.25, 0.8] at
  [-0.05, 0, -0.4], top at z = 0), in every scene, not moved by the variation.

Grasps are ``panda_hand`` poses (``configs/robot/franka.yml``: fingers slide along +-y of the
hand, finger-pad centre :data:`TIP_OFFSET` m along +z, 0.08 m between the open pads). A side
grasp of an upright can points the hand's z horizontally at the can's axis with the pads'
centre at the can's centre and the fingers horizontal on either side; a top grasp points z
down with the pads :data:`TOP_GRASP_DEPTH` m below the object's top. Several yaws per object
(and the hand turned by pi about its z).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from curobo_lite.geom import WorldConfig
from curobo_lite.geom.world import Cuboid, Cylinder
from curobo_lite.types.errors import InputValueError

#: Finger-pad centre along the hand's z (m): panda_hand -> panda_hand_tcp of the Panda URDF.
TIP_OFFSET = 0.1034
#: How far below an object's top the pads grip in a top grasp (m): the palm stays clear.
TOP_GRASP_DEPTH = 0.025
#: The robot's stand, in the base frame (top face at z = 0).
STAND_DIMS = (0.3, 0.25, 0.8)
STAND_POSE = (-0.05, 0.0, -0.4, 1.0, 0.0, 0.0, 0.0)
#: Yaws (rad) of side grasps about the front direction of the scene.
SIDE_YAWS = (0.0, -0.3, 0.3, -0.6, 0.6)
#: MBM's cage grasp (``queries_cage.yaml`` offset [0, 0, 0.21] turned 90 deg about y, with
#: ``cage_panda.yaml``'s ee_offset to panda_link8): the pads' centre 0.0066 m short of the
#: cube's centre along the front, 0.026 m above it (0.009 m below the top of MBM's 0.07 m cube).
CAGE_GRASP_BACK = 0.0066
CAGE_GRASP_BELOW_TOP = 0.009
CAGE_GRASP_DEEPER = 0.01
#: MBM's cube centre height in the cage scene (``scene_cage.yaml``; the floor's top is 0.46)
CAGE_CUBE_Z = 0.52
#: Yaws (rad) of top grasps.
TOP_YAWS = (0.0, 0.5 * math.pi, 0.25 * math.pi, 0.75 * math.pi)


@dataclass
class SceneSample:
    """One sampled scene.

    Attributes:
        family: the family's name.
        world: the obstacles (stand included), robot base frame.
        grasps: target object name -> candidate ``panda_hand`` poses ``[x y z qw qx qy qz]``
            (best first).
        start_pose: a ``panda_hand`` pose the start configuration must reach (the start query
            of ``table_under_pick``: the hand under the table), ``None`` for the fixed start.
    """

    family: str
    world: WorldConfig
    grasps: dict[str, list[list[float]]]
    start_pose: list[float] | None = None
    notes: dict[str, float] = field(default_factory=dict)


# --- small rigid-transform helpers (numpy, float64) ---------------------------------------------


def rot_z(yaw: float) -> np.ndarray:
    c, s = math.cos(yaw), math.sin(yaw)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def rot_y(angle: float) -> np.ndarray:
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def quat_from_matrix(m: np.ndarray) -> np.ndarray:
    """``[w, x, y, z]`` (w >= 0) of a rotation matrix."""
    t = np.trace(m)
    if t > 0.0:
        s = math.sqrt(t + 1.0) * 2.0
        q = [0.25 * s, (m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s]
    elif m[0, 0] > m[1, 1] and m[0, 0] > m[2, 2]:
        s = math.sqrt(1.0 + m[0, 0] - m[1, 1] - m[2, 2]) * 2.0
        q = [(m[2, 1] - m[1, 2]) / s, 0.25 * s, (m[0, 1] + m[1, 0]) / s, (m[0, 2] + m[2, 0]) / s]
    elif m[1, 1] > m[2, 2]:
        s = math.sqrt(1.0 + m[1, 1] - m[0, 0] - m[2, 2]) * 2.0
        q = [(m[0, 2] - m[2, 0]) / s, (m[0, 1] + m[1, 0]) / s, 0.25 * s, (m[1, 2] + m[2, 1]) / s]
    else:
        s = math.sqrt(1.0 + m[2, 2] - m[0, 0] - m[1, 1]) * 2.0
        q = [(m[1, 0] - m[0, 1]) / s, (m[0, 2] + m[2, 0]) / s, (m[1, 2] + m[2, 1]) / s, 0.25 * s]
    q = np.asarray(q)
    q /= np.linalg.norm(q)
    return q if q[0] >= 0.0 else -q


def matrix_from_quat(q: np.ndarray) -> np.ndarray:
    w, x, y, z = np.asarray(q, dtype=float) / np.linalg.norm(q)
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def pose_list(position: np.ndarray, rotation: np.ndarray) -> list[float]:
    return [float(v) for v in position] + [float(v) for v in quat_from_matrix(rotation)]


def side_grasp(centre: np.ndarray, direction: np.ndarray, flip: bool) -> list[float]:
    """Hand pose approaching ``centre`` along the horizontal ``direction`` (hand z), fingers
    horizontal (hand y perpendicular to the direction), pads' centre at ``centre``."""
    z = np.array([direction[0], direction[1], 0.0])
    z /= np.linalg.norm(z)
    y = np.cross([0.0, 0.0, 1.0], z)
    if flip:
        y = -y
    x = np.cross(y, z)
    return pose_list(centre - TIP_OFFSET * z, np.stack([x, y, z], axis=1))


def top_grasp(tip: np.ndarray, yaw: float) -> list[float]:
    """Hand pose pointing straight down with its pads' centre at ``tip``, fingers along the
    horizontal direction ``yaw``."""
    z = np.array([0.0, 0.0, -1.0])
    y = np.array([math.cos(yaw), math.sin(yaw), 0.0])
    x = np.cross(y, z)
    return pose_list(tip - TIP_OFFSET * z, np.stack([x, y, z], axis=1))


# --- the sampled scene --------------------------------------------------------------------------


@dataclass
class _Box:
    name: str
    dims: tuple[float, float, float]
    position: tuple[float, float, float]
    rotation: np.ndarray = field(default_factory=lambda: np.eye(3))


@dataclass
class _Can:
    name: str
    height: float
    radius: float
    position: tuple[float, float, float]


def _gauss(rng: np.random.Generator, sigma: tuple[float, float, float]) -> np.ndarray:
    """MBM's position variation: N(0, sigma) per axis, truncated at 2 sigma."""
    sigma = np.asarray(sigma, dtype=float)
    return np.clip(rng.normal(0.0, 1.0, 3), -2.0, 2.0) * sigma


class _Builder:
    """Scene-frame obstacles, then the base offset and the world variation applied to all."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self.boxes: list[_Box] = []
        self.cans: list[_Can] = []

    def box(self, name: str, dims, position, rotation: np.ndarray | None = None) -> _Box:
        b = _Box(name, tuple(dims), tuple(position), np.eye(3) if rotation is None else rotation)
        self.boxes.append(b)
        return b

    def can(self, name: str, height: float, radius: float, position) -> _Can:
        c = _Can(name, height, radius, tuple(position))
        self.cans.append(c)
        return c

    def world(
        self, offset, sigma, yaw_bound: float, uniform: bool = False
    ) -> tuple[WorldConfig, np.ndarray, np.ndarray, np.ndarray]:
        """The world in the base frame (stand added); also the world transform (R, t) and the
        scene's front direction (its +x, where the robot reaches in from). ``uniform``: the
        position variation uniform within +-``sigma`` (what MBM's released problems drew, see
        the module docstring) instead of the truncated Gaussian."""
        t = np.asarray(offset, dtype=float)
        if uniform:
            shift = self.rng.uniform(-1.0, 1.0, 3) * np.asarray(sigma, dtype=float)
        else:
            shift = _gauss(self.rng, sigma)
        yaw = float(self.rng.uniform(-yaw_bound, yaw_bound))
        rotation = rot_z(yaw)
        translation = rotation @ t + shift  # moveAllObjectsGlobal(offset), then (variation)

        def place(p) -> np.ndarray:
            return rotation @ np.asarray(p, dtype=float) + translation

        cuboids = [Cuboid("stand", dims=list(STAND_DIMS), pose=list(STAND_POSE))]
        for b in self.boxes:
            cuboids.append(
                Cuboid(
                    b.name,
                    dims=list(b.dims),
                    pose=pose_list(place(b.position), rotation @ b.rotation),
                )
            )
        cylinders = [
            Cylinder(
                c.name,
                radius=c.radius,
                height=c.height,
                pose=pose_list(place(c.position), rotation),
            )
            for c in self.cans
        ]
        return (
            WorldConfig(cuboid=cuboids, cylinder=cylinders),
            rotation,
            translation,
            rotation[:, 0],
        )


def _front_grasps(world: WorldConfig, name: str, front: np.ndarray) -> list[list[float]]:
    centre = np.asarray(world.get(name).pose[:3])
    out = []
    for yaw in SIDE_YAWS:
        direction = rot_z(yaw) @ front
        for flip in (False, True):
            out.append(side_grasp(centre, direction, flip))
    return out


def _top_grasps(world: WorldConfig, name: str, height: float, yaw0: float) -> list[list[float]]:
    obstacle = world.get(name)
    tip = np.asarray(obstacle.pose[:3]) + np.array([0.0, 0.0, 0.5 * height - TOP_GRASP_DEPTH])
    return [top_grasp(tip, yaw0 + yaw) for yaw in TOP_YAWS]


def _can_dims(rng: np.random.Generator, height: float = 0.14) -> tuple[float, float]:
    """A can's height and radius around MBM's (0.14 or 0.12 m tall, 0.03 m radius)."""
    return float(rng.uniform(height - 0.02, height + 0.02)), float(rng.uniform(0.028, 0.034))


def _shelf_cans(
    b: _Builder,
    cans: list[tuple[str, float, float, float]],
    y_sigma: float,
    y_limit: float,
    board_tops: dict[float, float],
) -> None:
    """Cans (name, nominal x, y, z in MBM's scene) moved along y by N(0, y_sigma) (their
    object variation), kept within +-y_limit of the shelf's centre line, standing on the board
    under them (``board_tops``: nominal can z -> board top z)."""
    for name, x, y, z in cans:
        height, radius = _can_dims(b.rng)
        dy = float(np.clip(b.rng.normal(0.0, y_sigma), -2 * y_sigma, 2 * y_sigma))
        limit = y_limit - radius
        low, high = -limit, limit
        if y > 0.0:  # bookshelf_thin: a can stays on its side of the middle wall
            low = 0.02 + radius
        elif y < 0.0:
            high = -0.02 - radius
        y_new = float(np.clip(y + dy, low, high))
        top = board_tops[z]
        b.can(name, height, radius, (x, y_new, top + 0.5 * height + 0.001))


def bookshelf_small(rng: np.random.Generator) -> SceneSample:
    b = _Builder(rng)
    b.box("shelf_bottom", (1.2, 1.0, 0.04), (1.0, 0.0, 1.0))
    b.box("side_left", (1.2, 0.04, 0.34), (1.0, -0.5, 1.15))
    b.box("side_right", (1.2, 0.04, 0.34), (1.0, 0.5, 1.15))
    b.box("shelf_top", (1.2, 1.0, 0.04), (1.0, 0.0, 1.3))
    cans = [(f"can_{i + 1}", x, 0.0, 1.08) for i, x in enumerate((0.9, 0.7, 0.5))]
    _shelf_cans(b, cans, 0.45, 0.48, {1.08: 1.02})
    world, *_, front = b.world((0.2, 0.0, -0.7), (0.1, 0.1, 0.4), 1.57)
    return SceneSample(
        "bookshelf_small", world, {c: _front_grasps(world, c, front) for c, *_ in cans}
    )


def bookshelf_tall(rng: np.random.Generator) -> SceneSample:
    b = _Builder(rng)
    for name, z in (
        ("shelf_bottom", 0.7),
        ("shelf_middle_bottom", 1.0),
        ("shelf_middle_top", 1.3),
        ("shelf_top", 1.6),
    ):
        b.box(name, (1.2, 1.0, 0.04), (1.0, 0.0, z))
    b.box("side_left", (1.3, 0.04, 1.64), (1.0, -0.5, 0.82))
    b.box("side_right", (1.3, 0.04, 1.64), (1.0, 0.5, 0.82))
    cans = []
    for row, z in enumerate((1.38, 0.78, 1.08)):
        for col, x in enumerate((0.9, 0.7, 0.5)):
            cans.append((f"can_{3 * row + col + 1}", x, 0.0, z))
    _shelf_cans(b, cans, 0.45, 0.48, {0.78: 0.72, 1.08: 1.02, 1.38: 1.32})
    world, *_, front = b.world((0.3, 0.0, -0.7), (0.1, 0.1, 0.0), 1.57)
    return SceneSample(
        "bookshelf_tall", world, {c: _front_grasps(world, c, front) for c, *_ in cans}
    )


def bookshelf_thin(rng: np.random.Generator) -> SceneSample:
    b = _Builder(rng)
    for name, z in (
        ("shelf_bottom", 0.35),
        ("shelf_middle_bottom", 0.6),
        ("shelf_middle", 0.85),
        ("shelf_middle_top", 1.1),
        ("shelf_top", 1.35),
        ("shelf_top_top", 1.6),
    ):
        b.box(name, (0.62, 1.0, 0.04), (1.0, 0.0, z))
    b.box("shelf_vert", (0.62, 0.04, 1.4), (1.0, 0.0, 0.9))
    for name, x, y in (
        ("leg_fr", 0.7, 0.5),
        ("leg_fl", 0.7, -0.5),
        ("leg_br", 1.3, 0.5),
        ("leg_bl", 1.3, -0.5),
    ):
        b.box(name, (0.04, 0.04, 1.64), (x, y, 0.82))
    nominal = [
        (1.1, 0.25, 0.44), (0.8, 0.25, 0.44), (1.1, -0.25, 0.69), (0.8, -0.25, 0.69),
        (1.1, 0.25, 0.94), (0.8, 0.25, 0.94), (1.1, -0.25, 1.19), (0.8, -0.25, 1.19),
        (1.1, 0.25, 1.44), (0.8, 0.25, 1.44),
    ]  # fmt: skip
    cans = [(f"can_{i + 1}", x, y, z) for i, (x, y, z) in enumerate(nominal)]
    tops = {0.44: 0.37, 0.69: 0.62, 0.94: 0.87, 1.19: 1.12, 1.44: 1.37}
    _shelf_cans(b, cans, 0.2, 0.48, tops)
    world, *_, front = b.world((-0.1, 0.0, -0.7), (0.1, 0.1, 0.0), 1.57)
    # MBM's queries leave out can 10 (top board, back)
    targets = [c for c, *_ in cans if c != "can_10"]
    return SceneSample(
        "bookshelf_thin", world, {c: _front_grasps(world, c, front) for c in targets}
    )


def _open_box(b: _Builder) -> None:
    """The base and walls shared by box and cage (MBM's scene_box / scene_cage)."""
    b.box("base", (0.7, 0.7, 0.04), (0.8, 0.0, 0.44))
    b.box("side_left", (0.7, 0.04, 0.7), (0.8, -0.35, 0.8))
    b.box("side_right", (0.7, 0.04, 0.7), (0.8, 0.35, 0.8))
    b.box("side_back", (0.04, 0.7, 0.7), (1.15, 0.0, 0.8))


def box(rng: np.random.Generator) -> SceneSample:
    b = _Builder(rng)
    _open_box(b)
    b.box("side_front", (0.04, 0.7, 0.6), (0.45, 0.0, 0.7))
    # the lid, tilted 45 deg about y (MBM: quaternion xyzw [0, 0.383, 0, 0.924])
    b.box("side_cap", (0.7, 0.7, 0.04), (0.9, 0.0, 1.35), rot_y(math.pi / 4))
    height, radius = _can_dims(rng)
    dy = float(np.clip(rng.normal(0.0, 0.2), -0.4, 0.4))
    y = float(np.clip(dy, -0.33 + radius + 0.05, 0.33 - radius - 0.05))
    b.can("can_1", height, radius, (0.8, y, 0.46 + 0.5 * height + 0.001))
    world, rotation, *_ = b.world((-0.15, 0.0, -1.02), (0.1, 0.1, 0.1), 1.57)
    yaw = math.atan2(rotation[1, 0], rotation[0, 0])
    # MBM's box query: from above (their "FrontHard" offset turns the hand down)
    return SceneSample("box", world, {"can_1": _top_grasps(world, "can_1", height, yaw)})


def cage(rng: np.random.Generator) -> SceneSample:
    b = _Builder(rng)
    _open_box(b)
    b.box("side_front_a", (0.04, 0.7, 0.04), (0.45, 0.0, 0.6))
    b.box("side_front_b", (0.04, 0.7, 0.04), (0.45, 0.0, 0.9))
    b.box("side_cap", (0.65, 0.65, 0.04), (0.85, 0.0, 1.15))
    size = float(rng.uniform(0.06, 0.07))
    # at MBM's height: its cube floats 2.5 cm above the cage's floor, and the grasp (and so
    # the wrist under the lower bar) is that much higher than on the floor
    b.box("cube_1", (size, size, size), (0.8, 0.0, CAGE_CUBE_Z))
    world, *_, front = b.world((0.0, 0.0, -0.18), (0.1, 0.1, 0.1), 0.5, uniform=True)
    return SceneSample("cage", world, {"cube_1": _cage_grasps(world, size, front)})


def _cage_grasps(world: WorldConfig, size: float, front: np.ndarray) -> list[list[float]]:
    """MBM's cage query: a side grasp from the front, the hand level (its z along the scene's
    front, fingers horizontal across the cube's side faces), the pads' centre
    :data:`CAGE_GRASP_BELOW_TOP` m below the cube's top and :data:`CAGE_GRASP_BACK` m short of
    its centre. MBM's own orientation first (hand x up), then the hand turned by pi about its
    z; each also :data:`CAGE_GRASP_DEEPER` m lower (inside MBM's +-0.025 m height tolerance)."""
    centre = np.asarray(world.get("cube_1").pose[:3])
    grasps = []
    for deeper in (0.0, CAGE_GRASP_DEEPER):
        tip = centre - CAGE_GRASP_BACK * front
        tip[2] += 0.5 * size - CAGE_GRASP_BELOW_TOP - deeper
        grasps += [side_grasp(tip, front, flip) for flip in (True, False)]
    return grasps


def _table(b: _Builder) -> None:
    """MBM's scene_table: a table, a can and clutter (boxes, a tall cylinder) on it."""
    rng = b.rng
    b.box("table_top", (1.2, 2.0, 0.04), (1.05, 0.0, 0.7))
    for name, x, y in (
        ("table_leg_left_back", 1.5, 0.85),
        ("table_leg_left_front", 0.6, 0.85),
        ("table_leg_right_back", 1.5, -0.85),
        ("table_leg_right_front", 0.6, -0.85),
    ):
        b.box(name, (0.05, 0.05, 0.7), (x, y, 0.35))
    top = 0.72
    height, radius = _can_dims(rng, 0.12)
    d = np.clip(rng.normal(0.0, 1.0, 2), -2.0, 2.0) * 0.05
    b.can("can_1", height, radius, (0.85 + d[0], d[1], top + 0.5 * height + 0.001))
    clutter = [
        ("cube", "box", (0.25, 0.25, 0.25), (0.75, 0.4)),
        ("object_2", "box", (0.2, 0.02, 0.4), (1.05, -0.2)),
        ("object_3", "box", (0.02, 0.2, 0.4), (0.65, 0.2)),
        ("object_4", "box", (0.2, 0.05, 0.35), (0.65, -0.2)),
        ("object_5", "box", (0.2, 0.05, 0.35), (1.05, 0.2)),
    ]
    for name, _, dims, (x, y) in clutter:
        dims = tuple(float(v) * float(rng.uniform(0.8, 1.2)) for v in dims)
        d = np.clip(rng.normal(0.0, 1.0, 2), -2.0, 2.0) * 0.1
        yaw = float(rng.uniform(-1.57, 1.57))
        b.box(name, dims, (x + d[0], y + d[1], top + 0.5 * dims[2] + 0.001), rot_z(yaw))
    h1 = 0.35 * float(rng.uniform(0.8, 1.2))
    d = np.clip(rng.normal(0.0, 1.0, 2), -2.0, 2.0) * 0.1
    b.can("object_1", h1, 0.05, (1.35 + d[0], d[1], top + 0.5 * h1 + 0.001))


def _drop_overlapping(world: WorldConfig, target: str) -> None:
    """Clutter that overlaps the target can (MBM keeps it; then the target is not
    graspable and every draw is rejected): removed."""
    can = world.get(target)
    centre = np.asarray(can.pose[:3])
    for obstacle in list(world.cuboid):
        if obstacle.name.startswith(("cube", "object_")):
            r = matrix_from_quat(obstacle.pose[3:])
            local = r.T @ (centre - np.asarray(obstacle.pose[:3]))
            half = 0.5 * np.asarray(obstacle.dims) + can.radius + 0.02
            if (np.abs(local[:2]) <= half[:2]).all():
                world.remove(obstacle.name)


def table_pick(rng: np.random.Generator) -> SceneSample:
    b = _Builder(rng)
    _table(b)
    world, *_, front = b.world((0.1, 0.1, -0.5), (0.1, 0.1, 0.1), 1.57)
    _drop_overlapping(world, "can_1")
    return SceneSample("table_pick", world, {"can_1": _front_grasps(world, "can_1", front)})


def table_under_pick(rng: np.random.Generator) -> SceneSample:
    sample = table_pick(rng)
    sample.family = "table_under_pick"
    # MBM's start query: the hand 0.5 m in front of the table top's centre, 0.3 m under it
    table = sample.world.get("table_top")
    rotation = matrix_from_quat(table.pose[3:])
    position = np.asarray(table.pose[:3]) + rotation @ np.array([-0.5, 0.0, -0.3])
    sample.start_pose = side_grasp(position + TIP_OFFSET * rotation[:, 0], rotation[:, 0], False)
    return sample


FAMILIES: dict[str, Callable[[np.random.Generator], SceneSample]] = {
    "bookshelf_small": bookshelf_small,
    "bookshelf_tall": bookshelf_tall,
    "bookshelf_thin": bookshelf_thin,
    "box": box,
    "cage": cage,
    "table_pick": table_pick,
    "table_under_pick": table_under_pick,
}


def family_rng(family: str, seed: int, index: int) -> np.random.Generator:
    """The random stream of problem ``index`` of ``family`` under ``seed`` (independent of
    every other problem)."""
    if family not in FAMILIES:
        raise InputValueError(f"family: expected one of {list(FAMILIES)}, received {family!r}")
    family_id = list(FAMILIES).index(family)
    return np.random.default_rng(np.random.SeedSequence([int(seed), family_id, int(index)]))


def sample_scene(family: str, rng: np.random.Generator) -> SceneSample:
    """One scene of ``family`` from ``rng``."""
    if family not in FAMILIES:
        raise InputValueError(f"family: expected one of {list(FAMILIES)}, received {family!r}")
    return FAMILIES[family](rng)
