"""cuRobo's ``curobo.wrap.reacher.mpc`` names over :class:`curobo_lite.wrap.MpcSolver`::

    from curobo_lite.rollout.rollout_base import Goal
    from curobo_lite.wrap.reacher.mpc import MpcSolver, MpcSolverConfig

    mpc = MpcSolver(MpcSolverConfig.load_from_robot_config(robot_cfg, world, step_dt=0.03))
    goal_buffer = mpc.setup_solve_single(Goal(current_state=state, goal_pose=pose), 1)
    mpc.update_goal(goal_buffer)
    while not converged:
        result = mpc.step(state, max_attempts=2)
        state.copy_(result.js_action)
        converged = result.metrics.pose_error.item() < 0.01

The control is :class:`curobo_lite.wrap.MpcSolver`'s (MPPI on the ``particle_mpc`` task, warm
started by shifting); this module translates names and options.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, replace
from types import SimpleNamespace
from typing import Any

import torch

from curobo_lite.robot import Kinematics
from curobo_lite.rollout import TaskConfig
from curobo_lite.rollout.rollout_base import Goal
from curobo_lite.types import JointState
from curobo_lite.types.errors import InputTypeError, InputValueError
from curobo_lite.wrap.mpc.solver import MpcResult
from curobo_lite.wrap.mpc.solver import MpcSolver as _MpcSolver
from curobo_lite.wrap.reacher._compat import Adapter, RolloutView, SolverConfig, load_world

__all__ = ["Goal", "MpcSolver", "MpcSolverConfig", "WrapResult"]

_WHERE = "MpcSolverConfig.load_from_robot_config"
_TASK = "particle_mpc"


def _step_dt(value: Any) -> dict[str, Any]:
    if not (isinstance(value, int | float) and not isinstance(value, bool) and value > 0):
        raise InputValueError(f"{_WHERE}: step_dt: expected seconds > 0, received {value!r}")
    return {
        "model": {"dt_traj_params": {"base_dt": value, "base_ratio": 1.0, "max_dt": value}},
        "mpc": {"control_dt": value},
    }


_MAPPED = {
    "step_dt": lambda v: {} if v is None else _step_dt(v),
    "particle_opt_iters": lambda v: {} if v is None else {"mppi": {"n_iters": v}},
    "store_rollouts": lambda v: {"mppi": {"store_rollouts": bool(v)}},
    "use_cuda_graph": lambda v: {} if v is None else {"mpc": {"use_cuda_graph": bool(v)}},
    "self_collision_check": lambda v: {"self_collision_cost": {"enabled": bool(v)}},
    "collision_activation_distance": lambda v: (
        {} if v is None else {"primitive_collision_cost": {"activation_distance": v}}
    ),
}
_DEFAULTS_ONLY = {
    "use_mppi": True,
    "use_lbfgs": False,
    "use_es": None,
    "es_learning_rate": 0.01,
    "compute_metrics": True,
    "base_cfg": None,
    "base_cfg_file": "base_cfg.yml",
    "particle_file": "particle_mpc.yml",
    "gradient_file": "gradient_mpc.yml",
}


@dataclass
class MpcSolverConfig(SolverConfig):
    """What :class:`MpcSolver` is built from; ``options`` are changes to the ``particle_mpc``
    task's sections (:meth:`task`). cuRobo options: ``step_dt``, ``particle_opt_iters``,
    ``store_rollouts``, ``use_cuda_graph``, ``self_collision_check``,
    ``collision_activation_distance``; ``use_mppi=True`` and ``use_lbfgs=False`` only."""

    MAPPED = _MAPPED
    DEFAULTS_ONLY = _DEFAULTS_ONLY

    def task(self) -> TaskConfig:
        """The ``particle_mpc`` task with :attr:`options` applied."""
        task = copy.deepcopy(TaskConfig.load(_TASK))
        sections = {
            "model": dict(task.model),
            "cost": {k: dict(v or {}) for k, v in task.cost.items()},
            "mppi": dict(task.mppi or {}),
            "mpc": dict(task.mpc or {}),
        }
        for key, value in self.options.items():
            if key in ("model", "mppi", "mpc"):
                sections[key].update(value)
            else:  # a cost section
                sections["cost"][key] = {**sections["cost"].get(key, {}), **value}
        where = "MpcSolverConfig.load_from_robot_config"
        return replace(task, source=f"{task.source} with {where} options", **sections)


@dataclass
class WrapResult:
    """One MPC step under cuRobo's names: ``action`` / ``js_action`` (the command, a
    :class:`JointState` ``[1, D]``), ``solve_time``, ``metrics`` (``pose_error``: metres of
    the measured state's end effector to the goal, ``[1]``; ``position_error``,
    ``rotation_error``, ``cspace_error`` and this package's other step metrics, ``[1]`` each)
    and ``result`` (:class:`curobo_lite.wrap.MpcResult`)."""

    action: JointState
    solve_time: float
    metrics: SimpleNamespace
    result: MpcResult

    @property
    def js_action(self) -> JointState:
        return self.action


class MpcSolver(Adapter):
    """cuRobo's ``MpcSolver(config)`` over :class:`curobo_lite.wrap.MpcSolver` (:attr:`solver`;
    its other attributes are reachable here too)."""

    def __init__(self, config: MpcSolverConfig) -> None:
        self.check_config(config, MpcSolverConfig)
        self.config = config
        self.solver = _MpcSolver.from_config(
            config.robot_config, config.task(), config.tensor_args, world=config.world_model
        )
        self.tensor_args = config.tensor_args
        self.rollout_fn = RolloutView(
            Kinematics(config.robot_config, config.tensor_args), config.robot_config
        )

    @property
    def joint_names(self) -> list[str]:
        return list(self.config.robot_config.joint_names)

    def setup_solve_single(self, goal: Goal, num_seeds: int = 1) -> Goal:
        """The goal buffer :meth:`update_goal` takes (here the goal itself; one seed only)."""
        if not isinstance(goal, Goal):
            raise InputTypeError(
                "goal: expected a curobo_lite.rollout.rollout_base.Goal, received "
                f"{type(goal).__name__}"
            )
        if num_seeds != 1:
            raise InputValueError(
                f"setup_solve_single: num_seeds={num_seeds!r} is not supported (MPPI keeps one "
                "mean per problem: 1 only)"
            )
        return goal

    def update_goal(self, goal: Goal) -> None:
        """Aim at the goal's pose, or at its joint state when it has no pose."""
        if not isinstance(goal, Goal):
            raise InputTypeError(
                f"goal: expected the Goal from setup_solve_single, received {type(goal).__name__}"
            )
        self.solver.update_goal(goal.goal_pose if goal.goal_pose is not None else goal.goal_state)

    def step(
        self, current_state: JointState, max_attempts: int = 1, shift_steps: int = 1
    ) -> WrapResult:
        """One control step from the measured ``current_state [1, D]``. An MPPI step has no
        failure to retry, so ``max_attempts`` (an int >= 1) runs one step as cuRobo's does when
        the first attempt succeeds."""
        if isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or max_attempts < 1:
            raise InputValueError(f"step: max_attempts: expected an int >= 1, got {max_attempts!r}")
        if shift_steps != self.solver.config.shift_steps:
            raise InputValueError(
                f"step: shift_steps={shift_steps!r}: this solver consumes "
                f"{self.solver.config.shift_steps} step(s) per call (task mpc.shift_steps)"
            )
        result = self.solver.step(current_state)
        device = result.action.position.device
        metrics = {
            k: torch.tensor([v], device=device, dtype=result.action.position.dtype)
            for k, v in result.metrics.items()
        }
        metrics["pose_error"] = metrics["position_error"]
        return WrapResult(result.action, result.solve_time, SimpleNamespace(**metrics), result)

    def update_world(self, world: Any) -> None:
        self.solver.update_world(load_world(world))

    def reset(self) -> None:
        self.solver.reset()
