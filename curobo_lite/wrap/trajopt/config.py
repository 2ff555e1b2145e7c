"""Options and results of :class:`~curobo_lite.wrap.TrajOptSolver`: the ``trajopt`` section of
a task file (:class:`TrajOptSolverConfig`, its ``ik`` sub-section :class:`IkConfig`) and what a
solve returns (:class:`TrajOptResult`), and the merge of keyword overrides into task sections
(:func:`merge_sections`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

from curobo_lite.opt.options import (
    CheckedOptions,
    as_choice,
    as_float,
    as_int,
    as_mapping,
    options_from_dict,
)
from curobo_lite.rollout import ReachCriteria
from curobo_lite.types import (
    JointState,
)
from curobo_lite.types.errors import InputTypeError
from curobo_lite.wrap.ik.config import (
    DEFAULT_IK_SEEDS,
    DEFAULT_POSITION_THRESHOLD,
    DEFAULT_ROTATION_THRESHOLD,
    DEFAULT_SEED,
)

INTERPOLATIONS = ("CUBIC", "LINEAR")
#: defaults of the trajopt options that MotionGen passes on to its trajectory optimizer (so that
#: its own defaults are these): seeds per problem and the output's interpolation step (s)
DEFAULT_TRAJOPT_SEEDS = 4
DEFAULT_INTERPOLATION_DT = 0.01


# --------------------------------------------------------------------------------------------------
# configuration


@dataclass
class IkConfig(CheckedOptions):
    """The ``trajopt.ik`` sub-section: the goal-configuration solve for pose goals.

    Attributes:
        num_seeds: IK seeds per problem.
        cost: cost sections of the IK rollout (``None``: the task's ``pose_cost`` plus a
            position-only ``bound_cost``).
        lbfgs: :class:`LbfgsConfig` keys of the IK solve.
        stop_after: stop a problem's IK once this many seeds are precise (within a quarter of
            the success thresholds) and collision-free (0: off; see
            :class:`~curobo_lite.wrap.IKSolverConfig`).
    """

    section = "trajopt.ik"

    num_seeds: int = DEFAULT_IK_SEEDS
    cost: dict[str, Any] | None = None
    lbfgs: dict[str, Any] = field(default_factory=dict)
    stop_after: int = 0

    def __post_init__(self) -> None:
        self.num_seeds = as_int(self.section, "num_seeds", self.num_seeds, 1)
        self.stop_after = as_int(self.section, "stop_after", self.stop_after, 0)
        self.cost = as_mapping(self.section, "cost", self.cost, allow_none=True)
        self.lbfgs = as_mapping(self.section, "lbfgs", self.lbfgs, allow_none=True) or {}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> IkConfig:
        return options_from_dict(cls, data)


@dataclass
class EarlyStopConfig(CheckedOptions):
    """The ``trajopt.early_stop`` sub-section: stop a problem's optimization as soon as one
    seed reaches its goal with a margin (checked every ``lbfgs.convergence_check_every``
    iterations), instead of when the cost stops improving. Among obstacles the goal is often
    reached, collision-free, in a third of the iterations the smoothness terms go on polishing.

    Attributes:
        position_threshold: m, rotation_threshold: rad, cspace_threshold: rad (joint goals):
            errors of the last step to stop at (keep them below the success thresholds).
        clearance: m, the smallest distance of every sphere to the obstacles and to the
            robot's other links along the trajectory (between knots too) to stop at.
    """

    section = "trajopt.early_stop"

    position_threshold: float = 0.001
    rotation_threshold: float = 0.01
    cspace_threshold: float = 0.002
    clearance: float = 0.005

    def __post_init__(self) -> None:
        for key in ("position_threshold", "rotation_threshold", "cspace_threshold"):
            setattr(self, key, as_float(self.section, key, getattr(self, key), 0.0, low_open=True))
        self.clearance = as_float(self.section, "clearance", self.clearance)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> EarlyStopConfig:
        return options_from_dict(cls, data, "a mapping of options (or null: off)")

    def criteria(self) -> ReachCriteria:
        """The :class:`~curobo_lite.rollout.ReachCriteria` a trajectory must meet."""
        return ReachCriteria(
            self.position_threshold, self.rotation_threshold, self.cspace_threshold, self.clearance
        )


@dataclass
class TrajOptSolverConfig(CheckedOptions):
    """Options of :class:`TrajOptSolver`: the task file's ``trajopt:`` section (unknown keys
    are an error).

    - ``num_seeds`` (int >= 1, default 4): trajectory seeds per problem.
    - ``interpolation_dt`` (float > 0, default 0.01): controller period of the interpolated
      output (s).
    - ``interpolation`` (``CUBIC`` | ``LINEAR``, default ``CUBIC``).
    - ``position_threshold`` (m, default 0.005), ``rotation_threshold`` (rad, default 0.05),
      ``cspace_threshold`` (rad, default 0.01): success thresholds.
    - ``seed_noise`` (rad >= 0, default 0.1): amplitude of the seed perturbations.
    - ``seed`` (int >= 0, default 0): seed of every random draw of a solve.
    - ``time_margin`` (float in [0, 10], default 0.05): safety margin of the retiming.
    - ``min_dt`` (s > 0, default 0.01): smallest retimed step.
    - ``max_retime_iters`` (int >= 0, default 4): corrections after interpolation.
    - ``ik``: ``num_seeds`` (int >= 1, default 32), ``cost`` (cost sections, default: the task's
      ``pose_cost`` and a position-only ``bound_cost``), ``lbfgs`` (:class:`LbfgsConfig` keys),
      ``stop_after`` (int >= 0, default 0).
    - ``early_stop``: ``null`` (default: stop on the L-BFGS rules alone) or the mapping of
      :class:`EarlyStopConfig` (``{}`` takes its defaults).
    - ``cpu_torch_threads`` (int >= 1 or null, default 1): torch's threads during a solve on a
      CPU device (null: torch's setting); Warp's row-parallel kernels keep torch's threads
      (:func:`~curobo_lite.kernels.launch.torch_cpu_threads`: with 2 threads torch's OpenMP
      workers spin after each of the solve's small ops).
    """

    section = "trajopt"

    num_seeds: int = DEFAULT_TRAJOPT_SEEDS
    interpolation_dt: float = DEFAULT_INTERPOLATION_DT
    interpolation: str = "CUBIC"
    position_threshold: float = DEFAULT_POSITION_THRESHOLD
    rotation_threshold: float = DEFAULT_ROTATION_THRESHOLD
    cspace_threshold: float = 0.01
    seed_noise: float = 0.1
    seed: int = DEFAULT_SEED
    time_margin: float = 0.05
    min_dt: float = 0.01
    max_retime_iters: int = 4
    ik: IkConfig = field(default_factory=IkConfig)
    early_stop: EarlyStopConfig | None = None
    cpu_torch_threads: int | None = 1

    def __post_init__(self) -> None:
        s = self.section
        self.num_seeds = as_int(s, "num_seeds", self.num_seeds, 1)
        self.interpolation_dt = as_float(
            s, "interpolation_dt", self.interpolation_dt, 0.0, low_open=True
        )
        self.interpolation = as_choice(s, "interpolation", self.interpolation, INTERPOLATIONS)
        for key in ("position_threshold", "rotation_threshold", "cspace_threshold"):
            setattr(self, key, as_float(s, key, getattr(self, key), 0.0, low_open=True))
        self.seed_noise = as_float(s, "seed_noise", self.seed_noise, 0.0)
        self.seed = as_int(s, "seed", self.seed, 0)
        # at most 10x the limits' time: larger reserves are typos (and huge plans)
        self.time_margin = as_float(s, "time_margin", self.time_margin, 0.0, 10.0)
        self.min_dt = as_float(s, "min_dt", self.min_dt, 0.0, low_open=True)
        self.max_retime_iters = as_int(s, "max_retime_iters", self.max_retime_iters, 0)
        if not isinstance(self.ik, IkConfig):
            self.ik = IkConfig.from_dict(self.ik)
        if self.early_stop is not None and not isinstance(self.early_stop, EarlyStopConfig):
            self.early_stop = EarlyStopConfig.from_dict(self.early_stop)
        self.cpu_torch_threads = as_int(
            s, "cpu_torch_threads", self.cpu_torch_threads, 1, allow_none=True
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> TrajOptSolverConfig:
        """Build from a task file's ``trajopt`` section; unknown keys raise ``ValueError``."""
        return options_from_dict(cls, data)


def merge_sections(base: dict[str, Any] | None, override: Any, name: str) -> dict[str, Any]:
    """``base`` updated by the mapping ``override``, one level deep (nested mappings merge key
    by key); ``name`` names ``override`` in the error when it is not a mapping."""
    if not isinstance(override, Mapping):
        raise InputTypeError(
            f"{name}: expected a mapping to merge, received {type(override).__name__}"
        )
    merged = dict(base or {})
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    return merged


# --------------------------------------------------------------------------------------------------
# result


@dataclass
class TrajOptResult:
    """What a trajectory-optimization solve returns, one entry per problem (``B`` problems).

    Attributes:
        success: ``[B]`` bool: goal reached within the thresholds, every interpolated sample
            within the position, velocity and acceleration limits, and (robots with collision
            spheres) the interpolated plan collision-free.
        position_error: ``[B]`` metres between the end effector at the last step and the goal
            pose (joint goals: the forward kinematics of the goal configuration).
        rotation_error: ``[B]`` radians, same convention.
        cspace_error: ``[B]`` joint-space distance ``||q_T - q_goal||_2`` to the goal
            configuration (joint goals) or to the IK solution the trajectory was seeded towards
            (pose goals).
        solution: :class:`JointState` ``[B, H, D]``: the optimized knots with backward-difference
            velocity, acceleration and jerk at ``optimized_dt``.
        interpolated_solution: :class:`JointState` ``[B, T, D]`` sampled every
            ``interpolation_dt``; problem ``b`` ends at sample ``interpolated_last_index[b]`` and
            holds its final position at rest afterwards.
        interpolated_last_index: ``[B]`` long.
        interpolation_dt: seconds between interpolated samples.
        optimized_dt: ``[B]`` seconds per knot after retiming (duration ``(H-1) * dt``).
        solve_time: wall-clock seconds of the whole solve.
        goal_state: ``[B, D]`` goal configuration (IK solution for pose goals).
        limit_violation: ``{position|velocity|acceleration|jerk: [B]}`` largest excess of the
            interpolated trajectory over the robot's limits (0 when within).
        status: per problem ``"success"`` or the reasons of the failure.
        collision_free: ``[B]`` bool: the interpolated plan, swept between samples, keeps clear
            of the obstacles and of itself (``None`` for a robot without collision spheres).
        min_distance: ``[B]`` smallest signed distance (m) along the interpolated plan, world
            and self-collision together (negative: penetration; ``None`` without spheres).
        world_distance, self_distance: ``[B]`` the two parts of ``min_distance``.
        hold_error: under a :class:`~curobo_lite.wrap.PoseCostMetric` that holds axes: ``[B]``
            the largest error (metres, radians) along the held axes over the interpolated
            samples where the hold applies, judged against ``position_threshold`` and
            ``rotation_threshold`` (``None`` without a hold).
        timings: seconds per phase (``ik``, ``trajopt``, ``interpolation``).
        debug: solver details (``ik_success [B]``, ``seed_index [B]``, ``trajopt_iterations``,
            ``ik_iterations``, ``best_cost [B]``, ``retime_iterations``).
    """

    success: torch.Tensor
    position_error: torch.Tensor
    rotation_error: torch.Tensor
    cspace_error: torch.Tensor
    solution: JointState
    interpolated_solution: JointState
    interpolated_last_index: torch.Tensor
    interpolation_dt: float
    optimized_dt: torch.Tensor
    solve_time: float
    goal_state: torch.Tensor
    limit_violation: dict[str, torch.Tensor]
    status: list[str]
    collision_free: torch.Tensor | None = None
    min_distance: torch.Tensor | None = None
    world_distance: torch.Tensor | None = None
    self_distance: torch.Tensor | None = None
    hold_error: tuple[torch.Tensor, torch.Tensor] | None = None
    timings: dict[str, float] = field(default_factory=dict)
    debug: dict[str, Any] = field(default_factory=dict)

    @property
    def batch(self) -> int:
        return int(self.success.shape[0])

    @property
    def motion_time(self) -> torch.Tensor:
        """``[B]`` seconds from start to the end of each trajectory."""
        return self.interpolated_last_index.to(self.optimized_dt.dtype) * self.interpolation_dt

    def get_interpolated_plan(self, index: int = 0) -> JointState:
        """Problem ``index``'s interpolated trajectory without the held tail: ``[T_b, D]``."""
        if not 0 <= index < self.batch:
            raise IndexError(f"index: expected 0 <= index < {self.batch}, received {index}")
        last = int(self.interpolated_last_index[index])
        return self.interpolated_solution[index, : last + 1]

    def __repr__(self) -> str:
        n_ok = int(self.success.sum())

        def span(t: torch.Tensor, fmt: str) -> str:
            if t.numel() == 1:
                return format(float(t), fmt)
            return f"max {float(t.max()):{fmt}}, median {float(t.median()):{fmt}}"

        statuses = "" if self.batch > 4 else f", status={self.status}"
        return (
            f"TrajOptResult(success {n_ok}/{self.batch}, position_error "
            f"[{span(self.position_error * 1000, '.3f')}] mm, rotation_error "
            f"[{span(self.rotation_error, '.4f')}] rad, motion_time "
            f"[{span(self.motion_time, '.2f')}] s, optimized_dt "
            f"[{span(self.optimized_dt, '.4f')}] s, knots {tuple(self.solution.shape)}, "
            f"interpolated {tuple(self.interpolated_solution.shape)} every "
            f"{self.interpolation_dt:g} s, solve_time {self.solve_time:.3f} s{statuses})"
        )
