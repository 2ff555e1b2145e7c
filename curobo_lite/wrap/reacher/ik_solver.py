"""cuRobo's ``curobo.wrap.reacher.ik_solver`` names over :class:`curobo_lite.wrap.IKSolver`::

    from curobo_lite.wrap.reacher.ik_solver import IKSolver, IKSolverConfig

    config = IKSolverConfig.load_from_robot_config(robot_cfg, None, num_seeds=20)
    ik_solver = IKSolver(config)
    q_sample = ik_solver.sample_configs(100)      # [n, D] valid configurations
    kin_state = ik_solver.fk(q_sample)            # .ee_position, .ee_quaternion
    result = ik_solver.solve_batch(Pose(kin_state.ee_position, kin_state.ee_quaternion))

Results are :class:`curobo_lite.wrap.IKResult`: ``success [S]``, ``solution [S, D]``,
``js_solution``, ``position_error``, ``rotation_error``, ``solve_time`` (cuRobo's keep a
``return_seeds`` axis: ``[S, 1]``, ``[S, 1, D]``; ``solution[success]`` is ``[k, D]`` in both).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from curobo_lite.robot import Kinematics
from curobo_lite.types import Pose
from curobo_lite.types.errors import InputValueError
from curobo_lite.wrap.base.robot_world import RobotWorld as _RobotWorld
from curobo_lite.wrap.ik.solver import IKResult
from curobo_lite.wrap.ik.solver import IKSolver as _IKSolver
from curobo_lite.wrap.reacher._compat import (
    Adapter,
    CuroboKinematicsState,
    SolverConfig,
    forward_kinematics,
    load_world,
    sample_in_limits,
)

__all__ = ["IKResult", "IKSolver", "IKSolverConfig"]

_MAPPED = {
    "num_seeds": lambda v: {"num_seeds": v},
    "position_threshold": lambda v: {"position_threshold": v},
    "rotation_threshold": lambda v: {"rotation_threshold": v},
    "seed": lambda v: {"seed": v},
    "use_cuda_graph": lambda v: {"lbfgs": {"use_cuda_graph": bool(v)}},
    "grad_iters": lambda v: {} if v is None else {"lbfgs": {"n_iters": v}},
    # curobo_lite's IK has no particle stage (its seeds are Sobol draws): False is exact,
    # True (cuRobo's default) runs the gradient stage alone
    "use_particle_opt": lambda v: {},
}
_DEFAULTS_ONLY = {
    "self_collision_check": True,
    "self_collision_opt": True,
    "regularization": True,
    "high_precision": False,
    "use_gradient_descent": False,
    "use_es": None,
    "ee_link_name": None,
    "use_fixed_samples": None,
}

#: how many samples :meth:`IKSolver.sample_configs` draws per wanted valid one, at most
_REJECTION_RATIO = 20


@dataclass
class IKSolverConfig(SolverConfig):
    """What :class:`IKSolver` is built from; ``options`` are
    :class:`curobo_lite.wrap.IKSolver`'s. cuRobo options: ``num_seeds``,
    ``position_threshold``, ``rotation_threshold``, ``seed``, ``use_cuda_graph``,
    ``grad_iters``, ``use_particle_opt``."""

    MAPPED = _MAPPED
    DEFAULTS_ONLY = _DEFAULTS_ONLY


class IKSolver(Adapter):
    """cuRobo's ``IKSolver(config)`` over :class:`curobo_lite.wrap.IKSolver` (:attr:`solver`;
    its other attributes are reachable here too)."""

    def __init__(self, config: IKSolverConfig) -> None:
        self.check_config(config, IKSolverConfig)
        self.config = config
        self.robot_config = config.robot_config
        self.tensor_args = config.tensor_args
        self.solver = _IKSolver.from_config(
            config.robot_config, config.world_model, config.tensor_args, **config.options
        )
        self.kinematics = Kinematics(config.robot_config, config.tensor_args)
        seed = config.options.get("seed", 0)
        self._sampler = torch.quasirandom.SobolEngine(self.dof, scramble=True, seed=seed + 1)
        self._checker: _RobotWorld | None = None

    @property
    def dof(self) -> int:
        return self.robot_config.dof

    @property
    def joint_names(self) -> list[str]:
        return list(self.robot_config.joint_names)

    def get_retract_config(self) -> torch.Tensor:
        return self.robot_config.retract_config.clone()

    def fk(self, q: torch.Tensor) -> CuroboKinematicsState:
        """Forward kinematics of ``q [B, D]``: ``ee_position``, ``ee_quaternion`` (wxyz),
        ``link_spheres_tensor``."""
        return forward_kinematics(self.kinematics, q)

    def sample_configs(self, n: int) -> torch.Tensor:
        """``[k, D]`` configurations inside the position limits that are clear of the world
        and of self-collision (``k = n`` unless fewer than ``n`` of ``20 n`` draws pass, as
        cuRobo's rejection sampling)."""
        q = sample_in_limits(self.robot_config, n * _REJECTION_RATIO, self._sampler)
        if self.kinematics.num_spheres:
            if self._checker is None:
                self._checker = _RobotWorld(
                    self.robot_config, self.solver.world_collision, self.tensor_args
                )
            q = q[self._checker.validate(q)]
        return q[:n]

    def solve_single(
        self, goal_pose: Pose, retract_config: Any = None, seed_config: Any = None, **options
    ) -> IKResult:
        """One goal pose; ``seed_config [k, D]`` tried first. cuRobo's ``return_seeds``,
        ``num_seeds``, ``use_nn_seed`` and ``newton_iters`` are accepted at their defaults."""
        _check_solve_options("solve_single", retract_config, options)
        return self.solver.solve_single(goal_pose, seed_config)

    def solve_batch(
        self, goal_pose: Pose, retract_config: Any = None, seed_config: Any = None, **options
    ) -> IKResult:
        """``S`` goal poses; ``seed_config [S, k, D]`` tried first (options as
        :meth:`solve_single`)."""
        _check_solve_options("solve_batch", retract_config, options)
        return self.solver.solve_batch(goal_pose, seed_config)

    def update_world(self, world: Any) -> None:
        self.solver.update_world(load_world(world))


#: cuRobo's solve options and the values accepted (use_nn_seed: no seed network here, so
#: either value solves the same)
_SOLVE_DEFAULTS = {"return_seeds": 1, "num_seeds": None, "newton_iters": None}


def _check_solve_options(where: str, retract_config: Any, options: dict[str, Any]) -> None:
    if retract_config is not None:
        raise InputValueError(
            f"{where}: retract_config is not supported (the robot file's retract configuration "
            "is the null-space target)"
        )
    for name, value in options.items():
        if name == "use_nn_seed":
            continue
        if name not in _SOLVE_DEFAULTS:
            raise InputValueError(f"{where}: unknown option {name!r}")
        if value != _SOLVE_DEFAULTS[name]:
            raise InputValueError(
                f"{where}: {name}={value!r} is not supported by curobo_lite (only "
                f"{_SOLVE_DEFAULTS[name]!r})"
            )
