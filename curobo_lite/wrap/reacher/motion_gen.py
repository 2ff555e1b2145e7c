"""cuRobo's ``curobo.wrap.reacher.motion_gen`` names over :class:`curobo_lite.wrap.MotionGen`.

A cuRobo quick start runs after renaming its imports::

    from curobo_lite.wrap.reacher.motion_gen import MotionGen, MotionGenConfig, MotionGenPlanConfig

    config = MotionGenConfig.load_from_robot_config("franka.yml", world, interpolation_dt=0.01)
    motion_gen = MotionGen(config)
    motion_gen.warmup()
    result = motion_gen.plan_single(start_state, goal_pose, MotionGenPlanConfig(max_attempts=4))
    if result.success.item():
        plan = result.get_interpolated_plan()  # JointState [T, D] every interpolation_dt

The planning is :class:`curobo_lite.wrap.MotionGen`'s (IK, trajectory optimization, the
geometric fallback); this module translates names and options. cuRobo options with no
equivalent here are :class:`~curobo_lite.types.errors.InputValueError`\\ s that name them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, fields
from typing import Any

import torch

from curobo_lite.rollout.cost.pose_metric import PoseCostMetric
from curobo_lite.types import JointState, Pose
from curobo_lite.types.errors import InputTypeError, InputValueError
from curobo_lite.wrap.base.pose_metric import check_pose_metric, start_off_constraint
from curobo_lite.wrap.motion.config import MotionGenResult as _MotionGenResult
from curobo_lite.wrap.motion.config import MotionGenStatus
from curobo_lite.wrap.motion.motion_gen import MotionGen as _MotionGen
from curobo_lite.wrap.reacher._compat import (
    Adapter,
    CuroboKinematicsState,
    RolloutView,
    SolverConfig,
    forward_kinematics,
    load_world,
)

__all__ = [
    "MotionGen",
    "MotionGenConfig",
    "MotionGenPlanConfig",
    "MotionGenResult",
    "MotionGenStatus",
]

#: cuRobo's options of ``load_from_robot_config`` and what they become here
_MAPPED = {
    "interpolation_dt": lambda v: {"interpolation_dt": v},
    "num_ik_seeds": lambda v: {"num_ik_seeds": v},
    "num_trajopt_seeds": lambda v: {"num_trajopt_seeds": v},
    "use_cuda_graph": lambda v: {"use_cuda_graph": bool(v)},
    "position_threshold": lambda v: {"ik": {"position_threshold": v}},
    "rotation_threshold": lambda v: {"ik": {"rotation_threshold": v}},
}
#: cuRobo's options with no equivalent: only cuRobo's default is accepted
_DEFAULTS_ONLY = {
    "self_collision_check": True,
    "self_collision_opt": True,
    "velocity_scale": None,
    "acceleration_scale": None,
    "jerk_scale": None,
    "use_gradient_descent": False,
    "evaluate_interpolated_trajectory": True,
}


@dataclass
class MotionGenConfig(SolverConfig):
    """What :class:`MotionGen` is built from; ``options`` are
    :class:`curobo_lite.wrap.MotionGen`'s. cuRobo options: ``interpolation_dt``,
    ``num_ik_seeds``, ``num_trajopt_seeds``, ``use_cuda_graph``, ``position_threshold``,
    ``rotation_threshold``."""

    MAPPED = _MAPPED
    DEFAULTS_ONLY = _DEFAULTS_ONLY


@dataclass
class MotionGenPlanConfig:
    """cuRobo's per-plan options. ``max_attempts`` and ``timeout`` bound the retries of
    :meth:`MotionGen.plan_single`; ``enable_graph`` asks for a geometric planner (the roadmap,
    on by default, or OMPL); ``ik_fail_return`` stops after that many
    attempts whose IK failed. The other fields are accepted at cuRobo's defaults only."""

    enable_graph: bool = False
    enable_opt: bool = True
    use_nn_ik_seed: bool = False
    need_graph_success: bool = False
    max_attempts: int = 60
    timeout: float = 10.0
    enable_graph_attempt: int | None = 3
    disable_graph_attempt: int | None = None
    ik_fail_return: int | None = None
    partial_ik_opt: bool = False
    num_ik_seeds: int | None = None
    num_graph_seeds: int | None = None
    num_trajopt_seeds: int | None = None
    success_ratio: float = 1
    fail_on_invalid_query: bool = True
    use_start_state_as_goal_state: bool = False
    pose_cost_metric: Any = None
    enable_finetune_trajopt: bool = True
    parallel_finetune: bool = True
    finetune_dt_scale: float | None = 0.85
    finetune_attempts: int = 5
    time_dilation_factor: float | None = None
    check_start_validity: bool = True
    finetune_js_dt_scale: float | None = 1.1

    #: fields honoured here; the others must keep cuRobo's default
    _SUPPORTED = (
        "enable_graph",
        "max_attempts",
        "timeout",
        "enable_graph_attempt",
        "ik_fail_return",
        # tuning of cuRobo's own finetune stage: this package's trajopt retimes itself
        "enable_finetune_trajopt",
        "parallel_finetune",
        "finetune_dt_scale",
        "finetune_attempts",
        "finetune_js_dt_scale",
        # a curobo_lite.wrap.PoseCostMetric for this plan (partial and constrained poses)
        "pose_cost_metric",
    )

    def __post_init__(self) -> None:
        for f in fields(self):
            if f.name in self._SUPPORTED:
                continue
            value = getattr(self, f.name)
            if value != f.default:
                raise InputValueError(
                    f"MotionGenPlanConfig.{f.name}={value!r} is not supported by curobo_lite "
                    f"(only cuRobo's default {f.default!r}); supported: "
                    f"{list(self._SUPPORTED)}"
                )
        check_pose_metric(self.pose_cost_metric)
        if isinstance(self.max_attempts, bool) or not isinstance(self.max_attempts, int):
            raise InputTypeError(
                f"MotionGenPlanConfig.max_attempts: expected an int, received {self.max_attempts!r}"
            )
        if self.max_attempts < 1:
            raise InputValueError(
                f"MotionGenPlanConfig.max_attempts: expected >= 1, received {self.max_attempts}"
            )
        if not (isinstance(self.timeout, int | float) and self.timeout > 0):
            raise InputValueError(
                f"MotionGenPlanConfig.timeout: expected seconds > 0, received {self.timeout!r}"
            )


class MotionGenResult(Adapter):
    """cuRobo's result names over :class:`curobo_lite.wrap.MotionGenResult` (every attribute
    of which is reachable here too, e.g. ``explain()``, ``offenders``)."""

    INNER = "result"

    def __init__(self, result: _MotionGenResult, attempts: int) -> None:
        self.result = result
        self.attempts = attempts
        device = None if result.goal_config is None else result.goal_config.device
        #: ``[1]`` bool, as cuRobo's (``result.success.item()``)
        self.success = torch.tensor([bool(result.success)], device=device)
        self.status = result.status

    def get_interpolated_plan(self) -> JointState | None:
        """The plan sampled every :attr:`interpolation_dt` seconds, ``[T, D]``."""
        return self.result.interpolated_plan

    @property
    def interpolated_plan(self) -> JointState | None:
        return self.result.interpolated_plan

    @property
    def optimized_plan(self) -> JointState | None:
        """The optimized knots ``[H, D]`` at :attr:`optimized_dt`; a plan that came from this
        package's roadmap stage has no knots, so it is the interpolated plan (``None`` without
        a plan)."""
        trajopt = self.result.trajopt_result
        if self.result.interpolated_plan is None:
            return None
        if trajopt is None:
            return self.result.interpolated_plan
        return trajopt.solution[0]

    @property
    def optimized_dt(self) -> torch.Tensor | None:
        """``[1]`` seconds between the knots of :attr:`optimized_plan`."""
        trajopt = self.result.trajopt_result
        if self.result.interpolated_plan is None:
            return None
        if trajopt is None:
            return torch.tensor([self.result.interpolation_dt])
        return trajopt.optimized_dt[:1]

    @property
    def interpolation_dt(self) -> float:
        return self.result.interpolation_dt

    @property
    def motion_time(self) -> torch.Tensor:
        """``[1]`` seconds (``nan`` without a plan)."""
        return torch.tensor([self.result.motion_time])

    @property
    def position_error(self) -> torch.Tensor:
        return torch.tensor([self.result.position_error])

    @property
    def rotation_error(self) -> torch.Tensor:
        return torch.tensor([self.result.rotation_error])

    @property
    def solve_time(self) -> float:
        return self.result.solve_time

    @property
    def valid_query(self) -> bool:
        return not self.result.status.value.startswith("INVALID")

    def __repr__(self) -> str:
        return f"cuRobo-style {self.result!r}"


class MotionGen(Adapter):
    """cuRobo's ``MotionGen(config)`` over :class:`curobo_lite.wrap.MotionGen`
    (:attr:`motion_gen`; its other attributes are reachable here too)."""

    INNER = "motion_gen"

    def __init__(self, config: MotionGenConfig) -> None:
        self.check_config(config, MotionGenConfig)
        self.config = config
        self.motion_gen = _MotionGen.from_config(
            config.robot_config, config.world_model, config.tensor_args, **config.options
        )
        self.tensor_args = config.tensor_args
        self.rollout_fn = RolloutView(self.motion_gen.checker.kinematics, config.robot_config)

    @property
    def joint_names(self) -> list[str]:
        return list(self.config.robot_config.joint_names)

    @property
    def dof(self) -> int:
        return self.config.robot_config.dof

    def get_retract_config(self) -> torch.Tensor:
        """``[D]`` the robot's retract configuration."""
        return self.config.robot_config.retract_config.clone()

    def compute_kinematics(self, state: JointState | torch.Tensor) -> CuroboKinematicsState:
        return forward_kinematics(self.motion_gen.checker.kinematics, state)

    def warmup(
        self,
        enable_graph: bool = True,
        warmup_js_trajopt: bool = True,
        batch: int | None = None,
        batch_env_mode: bool = False,
        parallel_finetune: bool = False,
        n_goalset: int = -1,
        warmup_joint_index: int = 0,
        warmup_joint_delta: float = 0.1,
    ) -> bool:
        """Run one short plan, from the retract configuration to the pose it has with joint
        ``warmup_joint_index`` moved by ``warmup_joint_delta`` rad, so that the kernels are
        built before the first timed plan (cuRobo's signature; ``batch``, ``batch_env_mode``
        and ``n_goalset`` at their defaults only). Returns ``True``."""
        if batch is not None or batch_env_mode or n_goalset != -1:
            raise InputValueError(
                "warmup: batch, batch_env_mode and n_goalset are not supported (plan_batch and "
                "goal sets are not adapted)"
            )
        if not 0 <= warmup_joint_index < self.dof:
            raise InputValueError(
                f"warmup: warmup_joint_index: expected 0 <= index < {self.dof}, received "
                f"{warmup_joint_index!r}"
            )
        start = self.get_retract_config()
        low, high = self.config.robot_config.joint_limits.position
        goal_q = start.clone()
        i = warmup_joint_index
        goal_q[i] = torch.clamp(goal_q[i] + warmup_joint_delta, low[i], high[i])
        kin = self.compute_kinematics(goal_q[None])
        self.motion_gen.plan_single(
            JointState.from_position(start[None]), Pose(kin.ee_position, kin.ee_quaternion)
        )
        return True

    def plan_single(
        self,
        start_state: JointState,
        goal_pose: Pose,
        plan_config: MotionGenPlanConfig | None = None,
    ) -> MotionGenResult:
        """Plan from ``start_state [1, D]`` to ``goal_pose`` (batch 1), retrying up to
        ``plan_config.max_attempts`` times within ``plan_config.timeout`` seconds."""
        plan_config = plan_config or MotionGenPlanConfig()
        if not isinstance(plan_config, MotionGenPlanConfig):
            raise InputTypeError(
                f"plan_config: expected a MotionGenPlanConfig, received "
                f"{type(plan_config).__name__}"
            )
        geometric = (self.motion_gen.graph_planner, getattr(self.motion_gen, "roadmap", None))
        if plan_config.enable_graph and all(planner is None for planner in geometric):
            raise InputValueError(
                "plan_config.enable_graph: this MotionGen has no geometric planner (built with "
                "enable_roadmap=False, and OMPL not installed or enable_graph=False)"
            )
        t_start = time.perf_counter()
        ik_failures = 0
        result = None
        attempts = 0
        while attempts < plan_config.max_attempts:
            attempts += 1
            metric = plan_config.pose_cost_metric or self._pose_cost_metric
            extra = {} if metric is None else {"pose_cost_metric": metric}
            result = self.motion_gen.plan_single(start_state, goal_pose, **extra)
            if result.success or result.status.value.startswith("INVALID"):
                break  # done, or no retry can help
            if result.status == MotionGenStatus.IK_FAIL:
                ik_failures += 1
                if plan_config.ik_fail_return is not None and (
                    ik_failures >= plan_config.ik_fail_return
                ):
                    break
            if time.perf_counter() - t_start >= plan_config.timeout:
                break
        assert result is not None
        result.solve_time = time.perf_counter() - t_start
        return MotionGenResult(result, attempts)

    _pose_cost_metric: PoseCostMetric | None = None

    def update_pose_cost_metric(
        self,
        metric: PoseCostMetric,
        start_state: JointState | None = None,
        goal_pose: Pose | None = None,
    ) -> bool:
        """cuRobo's persistent metric: the plans without ``plan_config.pose_cost_metric``
        use ``metric`` until the next update (``PoseCostMetric.reset_metric()`` ends it).
        Returns ``False`` (and keeps the previous metric) when ``start_state`` is off
        ``goal_pose``'s axes that ``metric`` holds over the whole motion, as cuRobo does."""
        check_pose_metric(metric)
        if start_state is not None and goal_pose is not None:
            kin = self.compute_kinematics(start_state)
            off = start_off_constraint(
                metric.resolve(self.tensor_args),
                kin.ee_position,
                kin.ee_quaternion,
                goal_pose.to(self.tensor_args),
            )
            if off is not None and bool(off.any()):
                return False
        self._pose_cost_metric = metric
        return True

    def update_world(self, world: Any) -> None:
        """Replace the obstacles (a ``WorldConfig``, a cuRobo-layout mapping or a file)."""
        self.motion_gen.update_world(load_world(world))

    def __repr__(self) -> str:
        return f"cuRobo-style MotionGen over {self.motion_gen!r}"
