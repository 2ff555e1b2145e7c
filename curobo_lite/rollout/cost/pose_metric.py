"""Partial and constrained poses: cuRobo's :class:`PoseCostMetric` and its error math.

Every vector is in cuRobo's order ``[rx, ry, rz, x, y, z]`` (rotation first) and, with
``project_to_goal_frame`` (the default), in the goal's frame:

- the position error is ``R_g^T (p - p_g)``, the end effector's position in the goal frame;
- the rotation error is the vector part ``v`` of ``q_g^* q`` (sign chosen so that its scalar
  part is >= 0), i.e. ``sin(angle / 2)`` times the axis of the rotation from the goal to the
  end effector, in the goal frame. Without the projection: ``p - p_g`` and ``q q_g^*``, in
  the base frame.

A weight of 0 leaves an axis free. The *judged* errors (success checks, hold checks) use
the axes whose weight is > 0: metres ``||m_p * e_p||`` and radians ``2 asin(||m_r * v||)``.
With every rotation axis weighted that is the geodesic angle; with one axis free (say ``rz``)
it is exactly the angle between the two frames' ``z`` axes (the tilt, the swing of a
swing-twist split), whatever the rotation about ``z``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from curobo_lite.types import TensorDeviceType
from curobo_lite.types.checks import parse_number
from curobo_lite.types.errors import InputTypeError, InputValueError
from curobo_lite.types.math import quat_angle_error, quat_conjugate, quat_multiply, quat_rotate

#: the order of the weight vectors
AXES = ("rx", "ry", "rz", "x", "y", "z")


def _vector(name: str, value: Any, length: int, nonnegative: bool) -> torch.Tensor | None:
    """``value`` as a float64 CPU tensor of ``length`` finite numbers (``None`` stays)."""
    if value is None:
        return None
    if isinstance(value, (str, bytes, dict)):
        raise InputTypeError(
            f"PoseCostMetric.{name}: expected {length} numbers, received {type(value).__name__}"
        )
    try:
        tensor = torch.as_tensor(
            value.detach().cpu() if isinstance(value, torch.Tensor) else value,
            dtype=torch.float64,
        )
    except (TypeError, ValueError, RuntimeError):
        raise InputTypeError(
            f"PoseCostMetric.{name}: expected {length} numbers, received {value!r}"
        ) from None
    if tensor.shape != (length,):
        raise InputValueError(
            f"PoseCostMetric.{name}: expected {length} values, received shape {tuple(tensor.shape)}"
        )
    if not bool(torch.isfinite(tensor).all()):
        raise InputValueError(
            f"PoseCostMetric.{name}: expected finite numbers, received {tensor.tolist()}"
        )
    if nonnegative and bool((tensor < 0).any()):
        raise InputValueError(
            f"PoseCostMetric.{name}: expected weights >= 0, received {tensor.tolist()}"
        )
    return tensor


def _flag(name: str, value: Any, allow_none: bool = False) -> bool | None:
    if value is None and allow_none:
        return None
    if not isinstance(value, bool):
        raise InputTypeError(
            f"PoseCostMetric.{name}: expected a bool, received {type(value).__name__} {value!r}"
        )
    return value


@dataclass(eq=False)  # tensors inside: compared by identity, not element-wise
class PoseCostMetric:
    """How a pose goal is reached and which axes are held on the way (cuRobo's names).

    One metric describes one call: passed to a solve (``plan_single(start, goal,
    pose_cost_metric=...)``, ``IKSolver.solve_*``, ``TrajOptSolver.solve_*``), it applies to
    that call only; ``MpcSolver.update_pose_cost_metric`` keeps it until the next update.
    Fields left at their defaults mean "as without a metric" (full pose, nothing held, no
    waypoint), so cuRobo's ``release_partial_pose``, ``reach_full_pose`` and
    ``remove_offset_waypoint`` only restate the defaults.

    Attributes:
        hold_partial_pose: hold the axes of ``hold_vec_weight`` at every step of the motion
            (from ``offset_tstep_fraction`` on when that is >= 0) at the goal's values. With a
            whole-motion hold the start must already be on the constraint (within 0.05 rad /
            5 mm, cuRobo's check): keep a cup upright (``[1, 1, 0, 0, 0, 0]`` with a goal of
            the start's tilt), keep the hand at the goal's height.
        release_partial_pose: no hold (the default).
        hold_vec_weight: ``[6]`` weights ``>= 0`` of the held axes (0: free).
        reach_partial_pose: reach the goal only along the axes of ``reach_vec_weight``.
        reach_full_pose: reach the full goal pose (the default).
        reach_vec_weight: ``[6]`` weights ``>= 0`` of the goal's axes (0: free, not judged).
        offset_position: ``[3]`` metres, goal frame: the waypoint at the start of the
            approach is the goal backed off by this (``p_g - R_g offset``).
        offset_rotation: ``[3]`` rotation-error offset of that waypoint (vector part units).
        offset_tstep_fraction: where the approach starts, as a fraction in ``[0, 1)`` of the
            motion's steps; ``< 0``: no approach segment (a hold covers the whole motion).
        remove_offset_waypoint: no waypoint (the default).
        include_link_pose: cuRobo's extra links; not supported (must be false).
        project_to_goal_frame: errors in the goal frame (``None``: the cost's default, true).
    """

    hold_partial_pose: bool = False
    release_partial_pose: bool = False
    hold_vec_weight: Any = None
    reach_partial_pose: bool = False
    reach_full_pose: bool = False
    reach_vec_weight: Any = None
    offset_position: Any = None
    offset_rotation: Any = None
    offset_tstep_fraction: float = -1.0
    remove_offset_waypoint: bool = False
    include_link_pose: bool = False
    project_to_goal_frame: bool | None = None

    def __post_init__(self) -> None:
        for name in (
            "hold_partial_pose",
            "release_partial_pose",
            "reach_partial_pose",
            "reach_full_pose",
            "remove_offset_waypoint",
            "include_link_pose",
        ):
            setattr(self, name, _flag(name, getattr(self, name)))
        self.project_to_goal_frame = _flag(
            "project_to_goal_frame", self.project_to_goal_frame, allow_none=True
        )
        self.hold_vec_weight = _vector("hold_vec_weight", self.hold_vec_weight, 6, True)
        self.reach_vec_weight = _vector("reach_vec_weight", self.reach_vec_weight, 6, True)
        self.offset_position = _vector("offset_position", self.offset_position, 3, False)
        self.offset_rotation = _vector("offset_rotation", self.offset_rotation, 3, False)
        self.offset_tstep_fraction = parse_number(
            self.offset_tstep_fraction,
            "PoseCostMetric.offset_tstep_fraction",
            high=1.0,
            high_open=True,
            max_magnitude=None,
        )
        if self.include_link_pose:
            raise InputValueError(
                "PoseCostMetric.include_link_pose: expected false (only the end effector's "
                "pose takes a metric), received True"
            )
        if self.hold_partial_pose and self.hold_vec_weight is None:
            raise InputValueError(
                "PoseCostMetric.hold_vec_weight: hold_partial_pose needs the [6] weights of the "
                "held axes [rx, ry, rz, x, y, z], received None"
            )
        if self.hold_partial_pose and self.release_partial_pose:
            raise InputValueError(
                "PoseCostMetric: hold_partial_pose and release_partial_pose contradict each "
                "other, received both True"
            )
        if self.reach_partial_pose and self.reach_full_pose:
            raise InputValueError(
                "PoseCostMetric: reach_partial_pose and reach_full_pose contradict each other, "
                "received both True"
            )
        if self.reach_partial_pose:
            if self.reach_vec_weight is None:
                raise InputValueError(
                    "PoseCostMetric.reach_vec_weight: reach_partial_pose needs the [6] weights "
                    "[rx, ry, rz, x, y, z], received None"
                )
            if not bool((self.reach_vec_weight > 0).any()):
                raise InputValueError(
                    "PoseCostMetric.reach_vec_weight: expected at least one weight > 0 (all "
                    f"free leaves no goal), received {self.reach_vec_weight.tolist()}"
                )
        waypoint = self.offset_position is not None or self.offset_rotation is not None
        if waypoint and self.offset_tstep_fraction < 0.0:
            raise InputValueError(
                "PoseCostMetric.offset_tstep_fraction: an offset waypoint needs the fraction "
                f"of the motion where the approach starts, in [0, 1), received "
                f"{self.offset_tstep_fraction}"
            )

    @classmethod
    def create_grasp_approach_metric(
        cls,
        offset_position: float = 0.1,
        linear_axis: int = 2,
        tstep_fraction: float = 0.8,
        project_to_goal_frame: bool | None = None,
        tensor_args: TensorDeviceType | None = None,
    ) -> PoseCostMetric:
        """A linear approach (cuRobo's signature): from ``tstep_fraction`` of the motion on,
        the hand moves along its own axis ``linear_axis`` (0, 1, 2: x, y, z of the goal
        frame) only, every other axis held at the goal's, starting from the goal backed off
        by ``offset_position`` metres along that axis. ``tensor_args`` is accepted for
        cuRobo's signature (the metric is moved to each solver's device)."""
        linear_axis = parse_number(
            linear_axis,
            "PoseCostMetric.create_grasp_approach_metric.linear_axis",
            integer=True,
            low=0,
            high=2,
        )
        offset = parse_number(
            offset_position, "PoseCostMetric.create_grasp_approach_metric.offset_position"
        )
        hold = [1.0] * 6
        hold[3 + linear_axis] = 0.0
        position = [0.0, 0.0, 0.0]
        position[linear_axis] = offset
        return cls(
            hold_partial_pose=True,
            hold_vec_weight=hold,
            offset_position=position,
            offset_tstep_fraction=tstep_fraction,
            project_to_goal_frame=project_to_goal_frame,
        )

    @classmethod
    def reset_metric(cls) -> PoseCostMetric:
        """The metric of "no metric": full pose, nothing held, no waypoint."""
        return cls(remove_offset_waypoint=True, reach_full_pose=True, release_partial_pose=True)

    def clone(self) -> PoseCostMetric:
        """A copy with its own tensors."""
        values = {k: getattr(self, k) for k in self.__dataclass_fields__}
        return PoseCostMetric(
            **{k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in values.items()}
        )

    def resolve(self, tensor_args: TensorDeviceType, project_default: bool = True) -> ActiveMetric:
        """This metric's weights and waypoint on ``tensor_args`` (what the cost reads)."""
        ones = torch.ones(6, dtype=torch.float64)
        reach = self.reach_vec_weight if self.reach_partial_pose else ones
        hold = self.hold_vec_weight if self.hold_partial_pose else None
        offset = None
        if self.offset_position is not None or self.offset_rotation is not None:
            offset = torch.zeros(6, dtype=torch.float64)
            if self.offset_rotation is not None:
                offset[:3] = self.offset_rotation
            if self.offset_position is not None:
                offset[3:] = self.offset_position
        project = (
            project_default if self.project_to_goal_frame is None else self.project_to_goal_frame
        )
        kw = tensor_args.as_kwargs()
        return ActiveMetric(
            reach=reach.to(**kw),
            hold=None if hold is None else hold.to(**kw),
            offset=None if offset is None else offset.to(**kw),
            fraction=float(self.offset_tstep_fraction),
            project=bool(project),
        )


@dataclass
class ActiveMetric:
    """A :class:`PoseCostMetric` resolved on a device (see :meth:`PoseCostMetric.resolve`).

    Attributes:
        reach: ``[6]`` weights of the goal's axes at the last step.
        hold: ``[6]`` weights of the held axes (``None``: nothing held).
        offset: ``[6]`` waypoint offset ``[r, p]`` at the approach's first step (``None``).
        fraction: where the hold/approach starts (``< 0``: the whole motion).
        project: errors in the goal frame.
    """

    reach: torch.Tensor
    hold: torch.Tensor | None
    offset: torch.Tensor | None
    fraction: float
    project: bool
    _steps: dict[int, tuple[int, int]] = field(default_factory=dict, repr=False)

    @property
    def full_reach(self) -> bool:
        return bool((self.reach == 1.0).all())

    @property
    def constrains_path(self) -> bool:
        """Whether the metric says anything about the steps before the last."""
        return self.hold is not None or self.offset is not None

    @property
    def reach_mask(self) -> torch.Tensor:
        """``[6]`` 1 where the goal's axis is judged, 0 where free."""
        return (self.reach > 0).to(self.reach.dtype)

    @property
    def hold_mask(self) -> torch.Tensor | None:
        """``[6]`` 1 where an axis is held (and judged), 0 where free."""
        if self.hold is None:
            return None
        return ((self.hold * self.reach) > 0).to(self.reach.dtype)

    def first_step(self, horizon: int) -> int:
        """The first step of the hold (and the waypoint's step) in a horizon of ``horizon``
        steps: 0 for a whole-motion hold, else ``round(fraction * (H - 1))``."""
        if self.fraction < 0.0:
            return 0
        return min(int(round(self.fraction * (horizon - 1))), horizon - 1)


def goal_frame_errors(
    position: torch.Tensor,
    quaternion: torch.Tensor,
    goal_position: torch.Tensor,
    goal_quaternion: torch.Tensor,
    project: bool = True,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(e_p [..., 3], v [..., 3])``: the position error and the rotation error's vector part
    (see the module docstring) of poses ``[..., 3]``, ``[..., 4]`` (wxyz) against goals that
    broadcast with them."""
    q = quaternion / quaternion.norm(dim=-1, keepdim=True)
    g = goal_quaternion / goal_quaternion.norm(dim=-1, keepdim=True)
    diff = position - goal_position
    shape = torch.broadcast_shapes(q.shape[:-1], g.shape[:-1], diff.shape[:-1])
    q, g = q.expand(*shape, 4), quat_conjugate(g).expand(*shape, 4)
    if project:
        diff = quat_rotate(g, diff.expand(*shape, 3))
        rel = quat_multiply(g, q)
    else:
        rel = quat_multiply(q, g)
    sign = torch.where(rel[..., :1] < 0.0, -1.0, 1.0).to(rel.dtype)
    return diff, sign * rel[..., 1:]


def judged_errors(
    position_error: torch.Tensor, rotation_vector: torch.Tensor, mask: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(metres [...], radians [...])`` of errors from :func:`goal_frame_errors` along the
    axes where ``mask [6]`` (``[rx, ry, rz, x, y, z]``) is nonzero."""
    metres = (position_error * mask[3:]).norm(dim=-1)
    sine = (rotation_vector * mask[:3]).norm(dim=-1).clamp(max=1.0)
    return metres, 2.0 * torch.asin(sine)


def masked_pose_errors(
    position: torch.Tensor,
    quaternion: torch.Tensor,
    goal_position: torch.Tensor,
    goal_quaternion: torch.Tensor,
    mask: torch.Tensor,
    project: bool = True,
) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`goal_frame_errors` then :func:`judged_errors`: metres and radians along the axes
    of ``mask [6]``."""
    e_p, v = goal_frame_errors(position, quaternion, goal_position, goal_quaternion, project)
    return judged_errors(e_p, v, mask)


def judged_pose_errors(
    metric: ActiveMetric | None,
    position: torch.Tensor,
    quaternion: torch.Tensor,
    goal_position: torch.Tensor,
    goal_quaternion: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(metres [...], radians [...])`` from poses to goals (broadcasting): the full
    distance and geodesic angle without a metric, else :func:`masked_pose_errors` along the
    metric's reach axes."""
    if metric is None:
        metres = (position - goal_position).norm(dim=-1)
        quaternion, goal_quaternion = torch.broadcast_tensors(quaternion, goal_quaternion)
        return metres, quat_angle_error(quaternion, goal_quaternion, eps=0.0)
    return masked_pose_errors(
        position, quaternion, goal_position, goal_quaternion, metric.reach_mask, metric.project
    )


def weighted_terms(
    position_error: torch.Tensor,
    rotation_vector: torch.Tensor,
    weight: torch.Tensor,
    position_norm: str,
    rotation_error: str,
    eps: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The cost's ``(position term, rotation term)`` of weighted errors (``weight [..., 6]``):
    ``L2`` ``||w_p e_p||`` or ``SQUARED_L2`` its square; with ``s = ||w_r v||^2`` and ``c =
    sqrt(1 - s)``, ``GEODESIC`` ``2 atan2(sqrt(s + eps), c)`` or ``ONE_MINUS_DOT`` ``1 - c``
    (with full weights these are the cost's unweighted forms)."""
    p = position_error * weight[..., 3:]
    position = p.square().sum(-1)
    if position_norm == "L2":
        position = torch.linalg.vector_norm(p, dim=-1)
    s = (rotation_vector * weight[..., :3]).square().sum(-1)
    c = (1.0 - s).clamp(min=0.0).sqrt()
    if rotation_error == "GEODESIC":
        rotation = 2.0 * torch.atan2((s + eps).sqrt(), c)
    else:
        rotation = 1.0 - c
    return position, rotation


def held_axes_errors(
    position: torch.Tensor,
    quaternion: torch.Tensor,
    goal_position: torch.Tensor,
    goal_quaternion: torch.Tensor,
    metric: ActiveMetric,
    active: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(metres [B], radians [B])``: the largest judged error along the held axes over the
    samples ``[B, T, 3|4]`` where ``active [B, T]`` (0 where nothing is held)."""
    mask = metric.hold_mask
    if mask is None:
        zero = position.new_zeros(position.shape[0])
        return zero, zero.clone()
    metres, radians = masked_pose_errors(
        position,
        quaternion,
        goal_position[:, None],
        goal_quaternion[:, None],
        mask,
        metric.project,
    )
    metres = torch.where(active, metres, 0.0).amax(dim=1)
    radians = torch.where(active, radians, 0.0).amax(dim=1)
    return metres, radians


__all__ = [
    "AXES",
    "ActiveMetric",
    "PoseCostMetric",
    "goal_frame_errors",
    "held_axes_errors",
    "judged_errors",
    "judged_pose_errors",
    "masked_pose_errors",
    "weighted_terms",
]
