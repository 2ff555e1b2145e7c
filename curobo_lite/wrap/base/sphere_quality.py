"""How well a robot's collision spheres stand in for its collision meshes, in cluttered scenes.

Spheres are what the optimizer sees; the meshes (the robot file's ``collision_geometry``,
checked exactly with coal by :meth:`RobotWorld.mesh_distance`) are the truth. Two numbers
say whether a sphere set is usable:

* **false alarms**: of random configurations whose meshes are at least ``clear_margin``
  (2 mm) from every obstacle, the fraction the spheres judge in collision. Too many and grasp
  goals, and motions close to shelves, become impossible.
* **misses**: configurations whose meshes penetrate an obstacle deeper than ``miss_depth``
  (5 mm) while the spheres see no contact. Any is a safety problem.

:func:`clutter_worlds` makes the seeded cluttered scenes (shelves, cubbies, a cage, objects on
a table, loose boxes and cans around the arm; a stand under the base) that
:func:`sphere_fit_quality` samples in; ``curobo-lite robot spheres`` prints these figures for
any robot with collision geometry.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import torch

from curobo_lite.geom import WorldConfig
from curobo_lite.robot import RobotConfig
from curobo_lite.types import TensorDeviceType
from curobo_lite.types.errors import InputValueError

STAND = {"dims": [0.3, 0.25, 0.8], "pose": [-0.05, 0.0, -0.4, 1.0, 0.0, 0.0, 0.0]}


def _yaw(angle: float) -> list[float]:
    return [float(np.cos(angle / 2)), 0.0, 0.0, float(np.sin(angle / 2))]


def _shelf(rng: np.random.Generator, reach: float, rows: int, cols: int) -> dict:
    """A shelf unit (back, sides, boards) facing the robot at ``reach``, turned by a random yaw
    about the robot's base."""
    width, depth = rng.uniform(0.5, 0.9), rng.uniform(0.25, 0.4)
    height, bottom = rng.uniform(0.5, 0.9), rng.uniform(-0.05, 0.3)
    thick = 0.02
    yaw = rng.uniform(-0.8, 0.8)
    centre_x = reach * rng.uniform(0.75, 1.05) + depth / 2
    boxes = {}

    def place(name, local, dims):
        x, y, z = local
        c, s = np.cos(yaw), np.sin(yaw)
        boxes[name] = {"dims": dims, "pose": [c * x - s * y, s * x + c * y, z, *_yaw(yaw)]}

    place("back", (centre_x + depth / 2, 0.0, bottom + height / 2), [thick, width, height])
    for side in (-1, 1):
        place(
            f"side{side:+d}",
            (centre_x, side * width / 2, bottom + height / 2),
            [depth, thick, height],
        )
    for k in range(rows + 1):
        place(f"board{k}", (centre_x, 0.0, bottom + k * height / rows), [depth, width, thick])
    for k in range(1, cols):
        place(
            f"divider{k}",
            (centre_x, -width / 2 + k * width / cols, bottom + height / 2),
            [depth, thick, height],
        )
    return boxes


def clutter_worlds(num_worlds: int, seed: int = 0, reach: float = 0.55) -> list[WorldConfig]:
    """``num_worlds`` seeded cluttered scenes around a robot at the origin (base at z = 0,
    reach about ``reach`` metres): in turn a shelf, cubbies (a shelf with dividers), a cage of
    posts and bars, and a table with objects; each also gets loose boxes and cans near the arm
    and the stand under the base (MotionBenchMaker's, top at z = 0)."""
    if num_worlds < 1:
        raise InputValueError(f"num_worlds: expected >= 1, received {num_worlds}")
    worlds = []
    for index in range(num_worlds):
        rng = np.random.default_rng([seed, index])
        kind = index % 4
        cuboids: dict = {"stand": dict(STAND)}
        cylinders: dict = {}
        if kind in (0, 1):
            rows, cols = (3, 1) if kind == 0 else (3, 3)
            for name, box in _shelf(rng, reach, rows, cols).items():
                cuboids[f"shelf_{name}"] = box
        elif kind == 2:
            side = rng.uniform(0.9, 1.3)
            top = rng.uniform(0.8, 1.1)
            for i, (x, y) in enumerate(
                [
                    (side / 2, side / 2),
                    (side / 2, -side / 2),
                    (-side / 3, side / 2),
                    (-side / 3, -side / 2),
                ]
            ):
                cuboids[f"post{i}"] = {
                    "dims": [0.04, 0.04, top],
                    "pose": [x, y, top / 2, 1, 0, 0, 0],
                }
            cuboids["bar_front"] = {
                "dims": [0.04, side, 0.04],
                "pose": [side / 2, 0, top, 1, 0, 0, 0],
            }
            cuboids["bar_left"] = {
                "dims": [side, 0.04, 0.04],
                "pose": [side / 12, side / 2, top, 1, 0, 0, 0],
            }
            cuboids["bar_right"] = {
                "dims": [side, 0.04, 0.04],
                "pose": [side / 12, -side / 2, top, 1, 0, 0, 0],
            }
        else:
            height = rng.uniform(-0.1, 0.25)
            cuboids["table"] = {
                "dims": [0.6, 1.2, 0.04],
                "pose": [reach + 0.05, 0.0, height - 0.02, *_yaw(rng.uniform(-0.3, 0.3))],
            }
            for i in range(int(rng.integers(3, 7))):
                x, y = reach + rng.uniform(-0.2, 0.2), rng.uniform(-0.5, 0.5)
                h = rng.uniform(0.05, 0.2)
                cylinders[f"can{i}"] = {
                    "radius": rng.uniform(0.02, 0.045),
                    "height": h,
                    "pose": [x, y, height + h / 2, 1, 0, 0, 0],
                }
        # loose objects anywhere in reach: the arm passes close to them in many samples
        for i in range(int(rng.integers(6, 12))):
            angle, radius = rng.uniform(-np.pi, np.pi), rng.uniform(0.25, 0.75)
            dims = rng.uniform(0.03, 0.2, size=3).tolist()
            cuboids[f"box{i}"] = {
                "dims": dims,
                "pose": [
                    radius * np.cos(angle),
                    radius * np.sin(angle),
                    rng.uniform(0.05, 0.9),
                    *_yaw(rng.uniform(-np.pi, np.pi)),
                ],
            }
        for i in range(int(rng.integers(1, 4))):
            angle, radius = rng.uniform(-np.pi, np.pi), rng.uniform(0.3, 0.8)
            h = rng.uniform(0.08, 0.25)
            cylinders[f"loose_can{i}"] = {
                "radius": rng.uniform(0.02, 0.045),
                "height": h,
                "pose": [
                    radius * np.cos(angle),
                    radius * np.sin(angle),
                    rng.uniform(0.1, 0.8),
                    1,
                    0,
                    0,
                    0,
                ],
            }
        data = {"cuboid": cuboids}
        if cylinders:
            data["cylinder"] = cylinders
        worlds.append(WorldConfig.from_dict(data))
    return worlds


@dataclass
class SphereFitQuality:
    """Sphere set vs collision meshes over random configurations in cluttered scenes.

    Attributes:
        num_spheres: spheres of the robot.
        samples: configurations checked (all scenes together).
        clear: of them, meshes at least ``clear_margin`` from every obstacle.
        false_alarms: of ``clear``, judged in collision by the spheres.
        false_alarm_rate: ``false_alarms / clear``.
        near: of ``clear``, meshes within ``near_distance`` of an obstacle (the demanding
            part: motions along shelves, grasps).
        near_false_alarm_rate: of ``near``, the fraction judged in collision.
        deep: meshes deeper than ``miss_depth`` inside an obstacle.
        misses: of ``deep``, judged clear by the spheres.
        worst_miss: deepest mesh penetration (m) the spheres judged clear (0 when none).
        clear_margin, miss_depth: the thresholds (m).
    """

    num_spheres: int
    samples: int
    clear: int
    false_alarms: int
    false_alarm_rate: float
    near: int
    near_false_alarm_rate: float
    deep: int
    misses: int
    worst_miss: float
    clear_margin: float
    miss_depth: float
    near_distance: float

    def as_dict(self) -> dict:
        return asdict(self)

    def summary(self) -> str:
        return (
            f"{self.num_spheres} spheres; of {self.clear} configurations with meshes >= "
            f"{self.clear_margin * 1e3:.0f} mm clear, {self.false_alarms} "
            f"({100 * self.false_alarm_rate:.1f} %) judged in collision by the spheres "
            f"({100 * self.near_false_alarm_rate:.1f} % of the {self.near} within "
            f"{self.near_distance * 1e3:.0f} mm); "
            f"{self.misses} of {self.deep} with meshes > {self.miss_depth * 1e3:.0f} mm deep "
            f"missed (worst {self.worst_miss * 1e3:.1f} mm) [{self.samples} samples]"
        )


@torch.no_grad()
def sphere_fit_quality(
    robot: str | RobotConfig,
    num_worlds: int = 8,
    configs_per_world: int = 250,
    seed: int = 0,
    clear_margin: float = 0.002,
    miss_depth: float = 0.005,
    worlds: list[WorldConfig] | None = None,
    near_distance: float = 0.02,
) -> SphereFitQuality:
    """Compare the robot's spheres with its collision meshes (see the module docs).

    Args:
        robot: a robot with ``collision_spheres`` and ``collision_geometry``.
        num_worlds: seeded cluttered scenes from :func:`clutter_worlds` (unless ``worlds``).
        configs_per_world: uniform random configurations within the joint limits per scene.
        seed: seed of the scenes and the configurations.
        clear_margin: mesh clearance (m) from which a configuration counts as clear.
        miss_depth: mesh penetration (m) beyond which spheres that see no contact miss.
        worlds: scenes to use instead of the generated ones.
        near_distance: mesh clearance (m) below which a clear configuration counts as near.

    Returns:
        :class:`SphereFitQuality`.
    """
    from curobo_lite.wrap.base.robot_world import RobotWorld

    ta = TensorDeviceType(dtype=torch.float64)
    if not isinstance(robot, RobotConfig):
        robot = RobotConfig.load(robot, tensor_args=ta)
    if worlds is None:
        worlds = clutter_worlds(num_worlds, seed)
    checker = RobotWorld.from_config(robot, worlds[0], tensor_args=ta)
    if not checker.has_collision_geometry:
        raise InputValueError(
            f"robot '{robot.name}': no 'collision_geometry' to compare the spheres with"
        )
    low, high = robot.joint_limits.position.to(torch.float64)
    gen = torch.Generator().manual_seed(seed)
    sphere_d, mesh_d = [], []
    for world in worlds:
        checker.update_world(world)
        q = low + (high - low) * torch.rand(
            configs_per_world, robot.dof, generator=gen, dtype=torch.float64
        )
        sphere_d.append(checker.collision_distance(q).numpy())
        mesh_d.append(checker.mesh_distance(q).numpy())
    spheres, meshes = np.concatenate(sphere_d), np.concatenate(mesh_d)
    clear = meshes >= clear_margin
    alarms = clear & (spheres < 0.0)
    near = clear & (meshes < near_distance)
    deep = meshes < -miss_depth
    missed = deep & (spheres >= 0.0)
    return SphereFitQuality(
        num_spheres=checker.kinematics.num_spheres,
        samples=len(meshes),
        clear=int(clear.sum()),
        false_alarms=int(alarms.sum()),
        false_alarm_rate=float(alarms.sum() / max(int(clear.sum()), 1)),
        near=int(near.sum()),
        near_false_alarm_rate=float((alarms & near).sum() / max(int(near.sum()), 1)),
        deep=int(deep.sum()),
        misses=int(missed.sum()),
        worst_miss=float(-meshes[missed].min()) if missed.any() else 0.0,
        clear_margin=clear_margin,
        miss_depth=miss_depth,
        near_distance=near_distance,
    )
