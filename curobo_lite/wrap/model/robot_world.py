"""cuRobo's ``curobo.wrap.model.robot_world`` names over :class:`curobo_lite.wrap.RobotWorld`::

    from curobo_lite.wrap.model.robot_world import RobotWorld, RobotWorldConfig

    config = RobotWorldConfig.load_from_config("franka.yml", world)
    robot_world = RobotWorld(config)
    q = robot_world.sample(100, mask_valid=False)
    d_world, d_self = robot_world.get_world_self_collision_distance_from_joints(q)

cuRobo's sign convention: these are *collision costs*, ``> 0`` when in collision (or within
the activation distance), ``0`` when clear; this package's
:meth:`curobo_lite.wrap.RobotWorld.collision_distance` is the signed clearance instead
(negative in collision). World: per sphere cuRobo's smooth hinge of penetration + ``eta``
(``eta`` = ``collision_activation_distance``), summed over the spheres. Self: the deepest
overlap of two spheres that may touch, plus ``self_collision_activation_distance``, ``0`` when
none overlaps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from curobo_lite.geom import WorldConfig
from curobo_lite.robot import RobotConfig
from curobo_lite.types import TensorDeviceType
from curobo_lite.types.errors import InputValueError
from curobo_lite.wrap.base.robot_world import RobotWorld as _RobotWorld
from curobo_lite.wrap.base.robot_world import as_world_collision
from curobo_lite.wrap.reacher._compat import (
    Adapter,
    CuroboKinematicsState,
    forward_kinematics,
    load_robot,
    load_world,
    report_ignored,
    sample_in_limits,
)

__all__ = ["RobotWorld", "RobotWorldConfig"]

#: draws per wanted valid sample in :meth:`RobotWorld.sample` (cuRobo's rejection_ratio)
_REJECTION_RATIO = 10


def _activation(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0.0:
        raise InputValueError(f"RobotWorldConfig: {name}: expected metres >= 0, received {value!r}")
    return float(value)


@dataclass
class RobotWorldConfig:
    """A robot, a world and cuRobo's activation distances."""

    robot_config: RobotConfig
    world_model: WorldConfig | None
    tensor_args: TensorDeviceType
    collision_activation_distance: float = 0.2
    self_collision_activation_distance: float = 0.0

    @staticmethod
    def load_from_config(
        robot_config: Any = "franka.yml",
        world_model: Any = None,
        tensor_args: TensorDeviceType | None = None,
        n_envs: int = 1,
        n_meshes: int = 50,
        n_cuboids: int = 50,
        collision_activation_distance: float = 0.2,
        self_collision_activation_distance: float = 0.0,
        max_collision_distance: float = 1.0,
        collision_checker_type: Any = None,
        world_collision_checker: Any = None,
        pose_weight: Any = None,
    ) -> RobotWorldConfig:
        """cuRobo's signature. ``n_meshes``, ``n_cuboids``, ``collision_checker_type`` and
        ``max_collision_distance`` size or pick cuRobo's GPU checkers and are accepted without
        effect; ``n_envs`` must be 1 and ``world_collision_checker`` ``None``."""
        if n_envs != 1:
            raise InputValueError(f"RobotWorldConfig: n_envs={n_envs!r}: one world only (1)")
        if world_collision_checker is not None:
            raise InputValueError(
                "RobotWorldConfig: world_collision_checker is not supported; pass world_model"
            )
        if pose_weight is not None:
            raise InputValueError("RobotWorldConfig: pose_weight is not supported (no pose cost)")
        ignored = [
            name
            for name, value, default in (
                ("n_meshes", n_meshes, 50),
                ("n_cuboids", n_cuboids, 50),
                ("collision_checker_type", collision_checker_type, None),
                ("max_collision_distance", max_collision_distance, 1.0),
            )
            if value != default
        ]
        report_ignored("RobotWorldConfig.load_from_config", ignored)
        tensor_args = tensor_args or TensorDeviceType()
        return RobotWorldConfig(
            load_robot(robot_config, tensor_args, "robot_config"),
            load_world(world_model),
            tensor_args,
            _activation("collision_activation_distance", collision_activation_distance),
            _activation("self_collision_activation_distance", self_collision_activation_distance),
        )


class RobotWorld(Adapter):
    """cuRobo's ``RobotWorld(config)`` over :class:`curobo_lite.wrap.RobotWorld`
    (:attr:`checker`; its other attributes are reachable here too)."""

    INNER = "checker"

    def __init__(self, config: RobotWorldConfig) -> None:
        self.check_config(config, RobotWorldConfig)
        self.config = config
        self.tensor_args = config.tensor_args
        self.checker = _RobotWorld(
            config.robot_config,
            as_world_collision(config.world_model, config.tensor_args),
            config.tensor_args,
        )
        self.collision_activation_distance = config.collision_activation_distance
        self.self_collision_activation_distance = config.self_collision_activation_distance
        self._sampler = torch.quasirandom.SobolEngine(
            config.robot_config.dof, scramble=True, seed=0
        )

    def get_kinematics(self, q: torch.Tensor) -> CuroboKinematicsState:
        return forward_kinematics(self.checker.kinematics, q)

    def _world_cost(self, x_sph: torch.Tensor, eta: float) -> torch.Tensor:
        if not isinstance(x_sph, torch.Tensor) or x_sph.ndim != 4 or x_sph.shape[-1] != 4:
            raise InputValueError(
                "x_sph: expected spheres [batch, horizon, n_spheres, 4], received "
                f"{tuple(x_sph.shape) if isinstance(x_sph, torch.Tensor) else type(x_sph)}"
            )
        world = self.checker.world_collision.sphere_distance(
            x_sph, activation_distance=eta, max_distance=eta + 0.01
        )
        return world.cost.sum(-1)

    def get_collision_distance(self, x_sph: torch.Tensor) -> torch.Tensor:
        """``[b, h]`` world collision cost of spheres ``x_sph [b, h, n, 4]`` (cuRobo's
        convention, with ``collision_activation_distance``)."""
        return self._world_cost(x_sph, self.collision_activation_distance)

    def get_collision_constraint(self, x_sph: torch.Tensor) -> torch.Tensor:
        """``[b, h]`` summed penetration depth (activation distance 0)."""
        return self._world_cost(x_sph, 0.0)

    def get_self_collision_distance(self, x_sph: torch.Tensor) -> torch.Tensor:
        """``[b, h]`` deepest overlap (m) of two robot spheres that may touch, plus
        ``self_collision_activation_distance``; 0 when clear."""
        model = self.checker.self_collision_model
        if model is None:
            return x_sph.new_zeros(x_sph.shape[:-2])
        distance = model.distance(x_sph).distance
        return torch.relu(self.self_collision_activation_distance - distance)

    get_self_collision = get_self_collision_distance

    def get_world_self_collision_distance_from_joints(
        self, q: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(d_world [b], d_self [b])`` of configurations ``q [b, D]``: the costs of
        :meth:`get_collision_distance` and :meth:`get_self_collision_distance`."""
        spheres = self.checker.get_link_spheres(q)
        world = self.get_collision_distance(self.checker.kinematics.world_spheres(spheres)[:, None])
        own = self.get_self_collision_distance(spheres[:, None])
        return world[:, 0], own[:, 0]

    def validate(self, q: torch.Tensor) -> torch.Tensor:
        """``[b]`` bool: inside the limits, clear of the world and of self-collision."""
        return self.checker.validate(q)

    def sample(self, n: int, mask_valid: bool = True) -> torch.Tensor:
        """``[n, D]`` configurations inside the position limits; with ``mask_valid`` only valid
        ones (of ``10 n`` draws, so possibly fewer than ``n``)."""
        draws = n * _REJECTION_RATIO if mask_valid else n
        q = sample_in_limits(self.config.robot_config, draws, self._sampler)
        if mask_valid:
            q = q[self.validate(q)][:n]
        return q

    def update_world(self, world: Any) -> None:
        self.checker.update_world(load_world(world))
