"""What the viewer draws, computed without a browser: sphere clearances and their colours,
obstacle meshes, plans as joint positions, and the robot's URDF.

Nothing here imports ``viser``; :mod:`curobo_lite.viz.viewer` sends these arrays to the
browser.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import torch

from curobo_lite.config_files import read_config_file
from curobo_lite.geom import WorldCollision
from curobo_lite.geom.obstacle_mesh import obstacle_mesh  # noqa: F401  (re-exported)
from curobo_lite.robot import Kinematics, RobotConfig
from curobo_lite.types import JointState
from curobo_lite.types.errors import InputValueError

#: Default clearance (m) at and beyond which a sphere is drawn green.
SAFE_DISTANCE = 0.1

# colour stops of the clearance scale: in contact, half way, clear
_RED = np.array([230.0, 30.0, 30.0])
_YELLOW = np.array([245.0, 200.0, 40.0])
_GREEN = np.array([40.0, 180.0, 80.0])


def clearance_colors(clearance: np.ndarray, safe_distance: float = SAFE_DISTANCE) -> np.ndarray:
    """RGB colours ``[..., 3]`` (uint8) of clearances ``[...]`` (metres): red at or below 0
    (touching or penetrating), yellow at ``safe_distance / 2``, green at or beyond
    ``safe_distance``, linear in between; ``inf`` (nothing to collide with) is green."""
    if not safe_distance > 0.0:
        raise InputValueError(f"safe_distance: expected a number > 0, received {safe_distance!r}")
    t = np.nan_to_num(np.asarray(clearance, dtype=np.float64), nan=0.0, posinf=safe_distance)
    t = np.clip(t / safe_distance, 0.0, 1.0)[..., None]
    low = _RED + (_YELLOW - _RED) * np.minimum(2.0 * t, 1.0)
    high = _YELLOW + (_GREEN - _YELLOW) * np.maximum(2.0 * t - 1.0, 0.0)
    return np.rint(np.where(t <= 0.5, low, high)).astype(np.uint8)


def sphere_self_distance(
    spheres: torch.Tensor, pairs: torch.Tensor, pair_buffer: torch.Tensor
) -> torch.Tensor:
    """Per-sphere self-collision clearance ``[..., N]`` of ``spheres [..., N, 4]``: for each
    sphere the smallest ``|c_i - c_j| - r_i - r_j - b`` over the ``pairs [P, 2]`` it belongs to
    (``pair_buffer [P]`` metres, e.g. ``Kinematics.self_collision_pairs`` and
    ``.self_collision_pair_buffer``); ``+inf`` for a sphere in no pair or disabled (radius
    < 0). Its minimum over the spheres is the robot's self-collision distance."""
    n = spheres.shape[-2]
    out = spheres.new_full((*spheres.shape[:-1],), math.inf)
    if pairs.numel() == 0:
        return out
    i, j = pairs[:, 0].long(), pairs[:, 1].long()
    a, b = spheres[..., i, :], spheres[..., j, :]
    distance = (a[..., :3] - b[..., :3]).norm(dim=-1) - a[..., 3] - b[..., 3] - pair_buffer
    enabled = (a[..., 3] >= 0) & (b[..., 3] >= 0)
    distance = distance.masked_fill(~enabled, math.inf)
    flat = out.reshape(-1, n)
    distance = distance.reshape(flat.shape[0], -1)
    for index in (i, j):
        flat.scatter_reduce_(1, index.expand_as(distance), distance, reduce="amin")
    return flat.reshape(out.shape)


class SphereClearance:
    """Signed clearance of every collision sphere to collision: the smaller of its distance to
    the world's obstacles and its self-collision clearance (:func:`sphere_self_distance`).

    Args:
        kinematics: the robot (its spheres, pairs and buffers).
        world_collision: the obstacles (``None``: self-collision only).
        safe_distance: clearances are clamped at this (metres): beyond it every sphere is
            equally safe, and the world query need not look farther.
    """

    def __init__(
        self,
        kinematics: Kinematics,
        world_collision: WorldCollision | None = None,
        safe_distance: float = SAFE_DISTANCE,
    ) -> None:
        self.kinematics = kinematics
        self.world_collision = world_collision
        self.safe_distance = float(safe_distance)

    @torch.no_grad()
    def __call__(self, spheres: torch.Tensor) -> torch.Tensor:
        """``[..., N]`` clearances (m, at most ``safe_distance``) of ``spheres [..., N, 4]``."""
        kin = self.kinematics
        own = sphere_self_distance(
            spheres, kin.self_collision_pairs, kin.self_collision_pair_buffer.to(spheres)
        )
        if self.world_collision is not None and self.world_collision.num_enabled:
            ta = self.world_collision.tensor_args
            # links fixed to the base are left out of world checks (Kinematics.world_spheres)
            world_spheres = kin.world_spheres(spheres.to(kin.tensor_args.device))
            world = self.world_collision.sphere_distance(
                world_spheres.to(**ta.as_kwargs()).contiguous(), max_distance=self.safe_distance
            ).distance.to(own)
            own = torch.minimum(own, world)
        return own.clamp(max=self.safe_distance)


def plan_positions(plan: Any, dt: float | None = None) -> tuple[torch.Tensor, float]:
    """``(positions [T, D] float32 on the CPU, dt seconds)`` of a plan given as

    - a :class:`JointState` or tensor ``[T, D]`` (``dt`` required),
    - a ``MotionGenResult`` (its ``interpolated_plan`` every ``interpolation_dt``),
    - a ``TrajOptResult`` (problem 0's ``interpolated_solution`` up to its last index).

    ``dt`` overrides the result's own spacing."""
    if hasattr(plan, "interpolated_plan"):
        if plan.interpolated_plan is None:
            raise InputValueError(f"plan: the result holds no plan (status {plan.status})")
        dt = plan.interpolation_dt if dt is None else dt
        plan = plan.interpolated_plan
    elif hasattr(plan, "interpolated_solution"):
        last = int(plan.interpolated_last_index[0])
        dt = plan.interpolation_dt if dt is None else dt
        plan = plan.interpolated_solution.position[0, : last + 1]
    positions = plan.position if isinstance(plan, JointState) else plan
    if not isinstance(positions, torch.Tensor) or positions.ndim != 2 or positions.shape[0] < 1:
        shape = tuple(positions.shape) if isinstance(positions, torch.Tensor) else type(plan)
        raise InputValueError(
            f"plan: expected a JointState or tensor [T, D] (or a MotionGenResult / "
            f"TrajOptResult), received {shape}"
        )
    if dt is None or not float(dt) > 0.0:
        raise InputValueError(f"dt: expected seconds > 0 between plan rows, received {dt!r}")
    return positions.detach().to("cpu", torch.float32), float(dt)


def robot_urdf_path(robot_config: RobotConfig) -> Path | None:
    """The URDF a robot was built from: the file itself (``RobotConfig.from_urdf``) or the
    ``urdf_path`` of its robot file; ``None`` when it has none (e.g. a tree written inline)."""
    source = Path(robot_config.source)
    suffix = source.suffix.lower()
    if suffix == ".urdf" and source.is_file():
        return source
    if suffix not in (".yml", ".yaml") or not source.is_file():
        return None
    data = read_config_file(source, "robot")
    urdf = data.get("urdf_path") if isinstance(data, dict) else None
    if not isinstance(urdf, str | os.PathLike):
        return None
    path = Path(urdf)
    path = path if path.is_absolute() else source.parent / path
    return path if path.is_file() else None
