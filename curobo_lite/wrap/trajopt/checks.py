"""Checks of a trajectory-optimization solve (phase 6 of :mod:`curobo_lite.wrap.trajopt.solver`).

Holds the goal test shared by the seed selection and the final result (:func:`goal_reached`),
the limit excess of the interpolated samples (:func:`limit_violations`), the per-problem status
text (:func:`failure_status`), the whole result check of a plan (:func:`check_plan`,
:class:`PlanCheck`), and the validation of the goal arguments of the joint-goal and
given-configuration solves (:func:`check_joint_goal`, :func:`check_goal_configs`,
:func:`check_seed_trajectories`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch

from curobo_lite.robot import JointLimits, Kinematics
from curobo_lite.rollout import ArmReacher
from curobo_lite.rollout.arm_reacher import smallest_clearance
from curobo_lite.rollout.cost.pose_metric import held_axes_errors, judged_pose_errors
from curobo_lite.types import JointState, Pose, TensorDeviceType
from curobo_lite.types.errors import InputTypeError, InputValueError
from curobo_lite.wrap.base.pose_metric import active_metric
from curobo_lite.wrap.trajopt.config import TrajOptSolverConfig
from curobo_lite.wrap.trajopt.timing import Interpolated, backward_differences, limit_excess

# --------------------------------------------------------------------------------------------------
# result checks


def goal_reached(
    position_error: torch.Tensor,
    rotation_error: torch.Tensor,
    cspace_error: torch.Tensor | None,
    config: TrajOptSolverConfig,
    joint_goal: bool,
) -> torch.Tensor:
    """``[B]`` bool: a joint goal within ``cspace_threshold``, a pose goal within
    ``position_threshold`` and ``rotation_threshold`` (errors ``[B]`` each)."""
    if joint_goal:
        return cspace_error <= config.cspace_threshold
    return (position_error <= config.position_threshold) & (
        rotation_error <= config.rotation_threshold
    )


def limit_violations(
    interp: Interpolated,
    limits: JointLimits,
    interpolation_dt: float,
    tensor_args: TensorDeviceType,
) -> dict[str, torch.Tensor]:
    """``[B]`` largest excess over the limits of the interpolated samples per quantity
    (``position``, ``velocity``, ``acceleration``, ``jerk``): the spline's derivatives and the
    backward differences of the sampled positions."""
    state = interp.state
    idt = torch.full((state.position.shape[0],), interpolation_dt, **tensor_args.as_kwargs())
    v, a, _ = backward_differences(state.position, idt)
    out = {"position": limit_excess(state.position, limits.position)}
    out["velocity"] = torch.maximum(
        limit_excess(state.velocity, limits.velocity), limit_excess(v, limits.velocity)
    )
    out["acceleration"] = torch.maximum(
        limit_excess(state.acceleration, limits.acceleration),
        limit_excess(a, limits.acceleration),
    )
    out["jerk"] = limit_excess(state.jerk, limits.jerk)
    return out


def failure_status(
    goal_ok: torch.Tensor,
    violation: dict[str, torch.Tensor],
    collision_free: torch.Tensor | None = None,
    hold_ok: torch.Tensor | None = None,
) -> list[str]:
    """Per problem (``goal_ok [B]``) ``"success"`` or the reasons of the failure."""
    status = []
    for b in range(goal_ok.shape[0]):
        reasons = [] if bool(goal_ok[b]) else ["goal not reached"]
        bad = [q for q in ("position", "velocity", "acceleration") if violation[q][b] > 0]
        if bad:
            reasons.append("limits violated: " + ", ".join(bad))
        if collision_free is not None and not bool(collision_free[b]):
            reasons.append("in collision")
        if hold_ok is not None and not bool(hold_ok[b]):
            reasons.append("held pose axes left")
        status.append("; ".join(reasons) if reasons else "success")
    return status


def format_range(t: torch.Tensor) -> str:
    """``"lo..hi"`` of a tensor's values (one number when they agree)."""
    lo, hi = float(t.min()), float(t.max())
    return f"{lo:.4f}" if math.isclose(lo, hi) else f"{lo:.4f}..{hi:.4f}"


@dataclass
class PlanCheck:
    """Result checks of ``B`` plans (see :func:`check_plan`); every tensor is ``[B]``. The
    fields are those of :class:`~curobo_lite.wrap.trajopt.config.TrajOptResult` with the same
    names."""

    position_error: torch.Tensor
    rotation_error: torch.Tensor
    cspace_error: torch.Tensor
    limit_violation: dict[str, torch.Tensor]
    collision_free: torch.Tensor | None
    min_distance: torch.Tensor | None
    world_distance: torch.Tensor | None
    self_distance: torch.Tensor | None
    success: torch.Tensor
    status: list[str]
    hold_error: tuple[torch.Tensor, torch.Tensor] | None = None


def check_plan(
    knots: torch.Tensor,
    interp: Interpolated,
    goal_pose: Pose,
    target: torch.Tensor,
    joint_goal: bool,
    config: TrajOptSolverConfig,
    kinematics: Kinematics,
    rollout: ArmReacher,
    tensor_args: TensorDeviceType,
) -> PlanCheck:
    """Check plans: ``knots [B, H, D]`` reach the goal (``goal_pose`` of batch ``B``; joint
    goals: ``target [B, D]`` within ``cspace_threshold``) and the interpolated samples ``interp``
    respect the joint limits and, when ``rollout`` has collision terms, keep clear of obstacles
    and of the robot itself along the swept spheres."""
    violation = limit_violations(
        interp, kinematics.robot_config.joint_limits, config.interpolation_dt, tensor_args
    )
    final = knots[:, -1]
    fk = kinematics.forward(final, spheres=False)
    # a pose-cost metric (joint goals have none) judges the goal's weighted axes only
    metric = None if joint_goal else active_metric(rollout.pose_cost_metric, tensor_args)
    position_error, rotation_error = judged_pose_errors(
        metric, fk.ee_position, fk.ee_quaternion, goal_pose.position, goal_pose.quaternion
    )
    cspace_error = (final - target).norm(dim=-1)
    goal_ok = goal_reached(position_error, rotation_error, cspace_error, config, joint_goal)
    limits_ok = torch.ones_like(goal_ok)
    for name in ("position", "velocity", "acceleration"):
        limits_ok &= violation[name] <= 0.0
    samples = kinematics.forward(interp.state.position)
    world_distance, self_distance = rollout.collision_distances(samples.link_spheres, swept=True)
    min_distance = smallest_clearance(world_distance, self_distance)
    collision_free = None if min_distance is None else min_distance >= 0.0
    success = goal_ok & limits_ok
    if collision_free is not None:
        success &= collision_free
    hold_error = hold_ok = None
    if metric is not None and metric.hold is not None:
        # the samples from the hold's first knot on (knot h is sample h * last / (H - 1))
        first = metric.first_step(knots.shape[1])
        index = torch.arange(samples.ee_position.shape[1], device=knots.device)
        start = first * interp.last_index.to(knots.dtype) / (knots.shape[1] - 1)
        active = index[None].to(knots.dtype) >= start[:, None] - 1e-6
        hold_error = held_axes_errors(
            samples.ee_position,
            samples.ee_quaternion,
            goal_pose.position,
            goal_pose.quaternion,
            metric,
            active,
        )
        hold_ok = (hold_error[0] <= config.position_threshold) & (
            hold_error[1] <= config.rotation_threshold
        )
        success &= hold_ok
    return PlanCheck(
        position_error=position_error,
        rotation_error=rotation_error,
        cspace_error=cspace_error,
        limit_violation=violation,
        collision_free=collision_free,
        min_distance=min_distance,
        world_distance=world_distance,
        self_distance=self_distance,
        success=success,
        status=failure_status(goal_ok, violation, collision_free, hold_ok),
        hold_error=hold_error,
    )


# --------------------------------------------------------------------------------------------------
# argument checks


def _check_finite(name: str, value: torch.Tensor, what: str) -> None:
    if not bool(torch.isfinite(value).all()):
        raise InputValueError(f"{name}: {what} NaN or infinite values")


def check_joint_goal(
    goal_state: Any, start_batch: int, dof: int, tensor_args: TensorDeviceType
) -> tuple[torch.Tensor, int]:
    """``goal_state`` (a :class:`JointState` ``[S, D]``, ``[1, D]`` or ``[D]``) as positions
    ``[S', D]`` and the common batch ``n`` of goal and start (each must be 1 or ``n``)."""
    if not isinstance(goal_state, JointState):
        raise InputTypeError(f"goal_state: expected a JointState, received {type(goal_state)}")
    goal = goal_state.position
    if goal.ndim == 1:
        goal = goal.unsqueeze(0)
    if goal.ndim != 2 or goal.shape[1] != dof:
        raise InputValueError(
            f"goal_state: expected position shape [S, {dof}], received "
            f"{tuple(goal_state.position.shape)}"
        )
    goal = goal.to(**tensor_args.as_kwargs())
    _check_finite("goal_state", goal, "position contains")
    n = max(goal.shape[0], start_batch)
    for name, batch in (("goal_state", goal.shape[0]), ("start_state", start_batch)):
        if batch not in (1, n):
            raise InputValueError(
                f"{name}: expected batch 1 or {n} (start and goal batches must match), "
                f"received {batch}"
            )
    return goal, n


def check_goal_configs(
    goal_configs: Any, num_seeds: int, dof: int, tensor_args: TensorDeviceType
) -> torch.Tensor:
    """``goal_configs [S, n, D]`` on the solver's device, cycled or cut to ``num_seeds``."""
    if not isinstance(goal_configs, torch.Tensor) or goal_configs.ndim != 3:
        raise InputValueError(
            f"goal_configs: expected a tensor [S, n, {dof}], received "
            f"{getattr(goal_configs, 'shape', type(goal_configs).__name__)}"
        )
    if goal_configs.shape[2] != dof or goal_configs.shape[1] < 1:
        raise InputValueError(
            f"goal_configs: expected shape [S, n >= 1, {dof}], received {tuple(goal_configs.shape)}"
        )
    configs = goal_configs.to(**tensor_args.as_kwargs())
    _check_finite("goal_configs", configs, "contains")
    return configs[:, torch.arange(num_seeds, device=configs.device) % configs.shape[1]]


def check_seed_trajectories(
    seed_trajectories: torch.Tensor,
    batch: int,
    num_seeds: int,
    horizon: int,
    dof: int,
    tensor_args: TensorDeviceType,
) -> torch.Tensor:
    """``seed_trajectories [S, n, H, D]`` on the solver's device, cycled or cut to
    ``num_seeds``."""
    seeds = seed_trajectories.to(**tensor_args.as_kwargs())
    if seeds.ndim != 4 or seeds.shape[0] != batch or seeds.shape[2:] != (horizon, dof):
        raise InputValueError(
            f"seed_trajectories: expected shape [{batch}, n, {horizon}, {dof}], "
            f"received {tuple(seed_trajectories.shape)}"
        )
    _check_finite("seed_trajectories", seeds, "contains")
    return seeds[:, torch.arange(num_seeds, device=seeds.device) % seeds.shape[1]]
