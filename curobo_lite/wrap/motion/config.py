"""MotionGen's options (:class:`MotionGenConfig`), statuses (:class:`MotionGenStatus`) and
result (:class:`MotionGenResult`); the planner itself is
:mod:`curobo_lite.wrap.motion.motion_gen`."""

from __future__ import annotations

import enum
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

from curobo_lite.opt.options import (
    CheckedOptions,
    as_bool,
    as_float,
    as_int,
    as_mapping,
    options_from_dict,
)
from curobo_lite.rollout.task import TaskConfig
from curobo_lite.types import JointState
from curobo_lite.types.errors import InputTypeError, InputValueError
from curobo_lite.wrap.base.mesh_check import DEFAULT_SWEEP_RESOLUTION
from curobo_lite.wrap.base.offenders import Offender
from curobo_lite.wrap.ik.config import DEFAULT_IK_SEEDS
from curobo_lite.wrap.motion.graph_planner import PLANNERS, ompl_available
from curobo_lite.wrap.trajopt.config import DEFAULT_INTERPOLATION_DT, DEFAULT_TRAJOPT_SEEDS
from curobo_lite.wrap.trajopt.solver import TrajOptResult


class MotionGenStatus(str, enum.Enum):
    """Why a plan succeeded or failed."""

    SUCCESS = "SUCCESS"
    INVALID_START_STATE_NOT_AT_REST = "INVALID_START_STATE_NOT_AT_REST"
    INVALID_START_STATE_JOINT_LIMITS = "INVALID_START_STATE_JOINT_LIMITS"
    INVALID_START_STATE_WORLD_COLLISION = "INVALID_START_STATE_WORLD_COLLISION"
    INVALID_START_STATE_SELF_COLLISION = "INVALID_START_STATE_SELF_COLLISION"
    INVALID_GOAL_STATE = "INVALID_GOAL_STATE"
    IK_FAIL = "IK_FAIL"
    TRAJOPT_FAIL = "TRAJOPT_FAIL"
    GRAPH_FAIL = "GRAPH_FAIL"
    FINETUNE_FAIL = "FINETUNE_FAIL"
    #: the plan passed on the spheres but its collision meshes touch an obstacle
    FINAL_PLAN_MESH_COLLISION = "FINAL_PLAN_MESH_COLLISION"
    #: a PoseCostMetric holds axes over the whole motion that the start is not on
    INVALID_PARTIAL_POSE_COST_METRIC = "INVALID_PARTIAL_POSE_COST_METRIC"


@dataclass
class MotionGenConfig(CheckedOptions):
    """Options of :class:`MotionGen` (see the module docstring)."""

    section = "motion_gen"

    task: Any = "gradient_trajopt"
    num_trajopt_seeds: int = DEFAULT_TRAJOPT_SEEDS
    num_ik_seeds: int = DEFAULT_IK_SEEDS
    interpolation_dt: float = DEFAULT_INTERPOLATION_DT
    enable_graph: bool | None = None
    graph_planner: str = "RRTConnect"
    graph_time_limit: float = 5.0
    graph_resolution: float = 0.02
    use_cuda_graph: bool = False
    ik: dict[str, Any] = field(default_factory=dict)
    trajopt: dict[str, Any] = field(default_factory=dict)
    exact_check: bool | None = None
    exact_check_margin: float = 0.0
    exact_check_resolution: float = DEFAULT_SWEEP_RESOLUTION
    approach_distance: float = 0.08
    enable_roadmap: bool = True
    roadmap: dict[str, Any] = field(default_factory=dict)
    cpu_torch_threads: int | None = 1

    def __post_init__(self) -> None:
        s = self.section
        if not isinstance(self.task, str | os.PathLike | TaskConfig):
            raise InputTypeError(
                f"{s}.task: expected a bundled task name, a path to a task file or a "
                f"TaskConfig, received {type(self.task).__name__}"
            )
        self.num_trajopt_seeds = as_int(s, "num_trajopt_seeds", self.num_trajopt_seeds, 1)
        self.num_ik_seeds = as_int(s, "num_ik_seeds", self.num_ik_seeds, 1)
        self.interpolation_dt = as_float(
            s, "interpolation_dt", self.interpolation_dt, 0.0, low_open=True
        )
        self.enable_roadmap = as_bool(s, "enable_roadmap", self.enable_roadmap)
        if self.enable_graph is None:  # OMPL: the fallback of the optimizer-first pipeline
            self.enable_graph = ompl_available() and not self.enable_roadmap
        self.enable_graph = as_bool(s, "enable_graph", self.enable_graph)
        if self.graph_planner not in PLANNERS:
            raise InputValueError(
                f"{s}.graph_planner: expected one of {list(PLANNERS)}, received "
                f"{self.graph_planner!r}"
            )
        self.graph_time_limit = as_float(
            s, "graph_time_limit", self.graph_time_limit, 0.0, low_open=True
        )
        self.graph_resolution = as_float(
            s, "graph_resolution", self.graph_resolution, 0.0, low_open=True
        )
        self.use_cuda_graph = as_bool(s, "use_cuda_graph", self.use_cuda_graph)
        for key in ("ik", "trajopt", "roadmap"):
            setattr(self, key, as_mapping(s, key, getattr(self, key)))
        if self.exact_check is not None:  # None: decided by MotionGen from the robot
            self.exact_check = as_bool(s, "exact_check", self.exact_check)
        self.exact_check_margin = as_float(s, "exact_check_margin", self.exact_check_margin)
        self.exact_check_resolution = as_float(
            s, "exact_check_resolution", self.exact_check_resolution, 0.0, low_open=True
        )
        self.approach_distance = as_float(s, "approach_distance", self.approach_distance, 0.0)
        self.cpu_torch_threads = as_int(
            s, "cpu_torch_threads", self.cpu_torch_threads, 1, allow_none=True
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> MotionGenConfig:
        return options_from_dict(cls, data)


@dataclass
class MotionGenResult:
    """One planning problem's outcome.

    Attributes:
        success: the plan reaches the goal, respects the limits and is collision-free.
        status: :class:`MotionGenStatus` (the failure reason, or ``SUCCESS``).
        interpolated_plan: :class:`JointState` ``[T, D]`` every ``interpolation_dt`` seconds
            (the best attempt when it failed after optimization; ``None`` when no trajectory
            was optimized).
        interpolation_dt: seconds between samples of ``interpolated_plan``.
        solve_time: seconds in total; ``timings``: seconds per stage (``start_check``, ``ik``,
            ``roadmap``, ``trajopt``, ``graph``, ``finetune``, ``exact_check``).
        position_error, rotation_error: metres and radians to the goal pose at the end of the
            plan (``nan`` when there is no plan).
        min_distance: smallest signed clearance (m) along the interpolated plan, world and
            self-collision (``nan`` when there is no plan or no collision model).
        mesh_min_distance: smallest clearance (m) of the robot's collision meshes to the
            obstacles along the interpolated plan, swept between its samples (the exact check;
            ``nan`` when it did not run: off, or no plan that passed on the spheres).
        attempts: trajectory optimizations run (0 for a roadmap plan, 1, or 2 with the
            geometric fallback).
        goal_config: ``[D]`` the configuration the plan ends at (or was aimed at).
        used_graph: a geometric planner made (roadmap) or seeded (OMPL) the returned plan.
        trajopt_result: the last :class:`TrajOptResult` (details), if any.
        waypoints: ``[K, D]`` the roadmap path a roadmap plan follows (it rests at each
            waypoint), ``None`` for an optimized plan.
        offenders: why an ``INVALID_START_STATE_*``, ``INVALID_GOAL_STATE`` or ``IK_FAIL``
            result failed, worst first per kind (:class:`~curobo_lite.wrap.base.offenders.Offender`:
            joints past their limits, (link, obstacle) contacts, link pairs in contact, the
            best IK seed's pose error); empty otherwise. :attr:`status_message` and
            :meth:`explain` put them in words.
        offenders_config: ``[D]`` the configuration :attr:`offenders` describe (``None``
            without offenders); offenders_at: which one it is, ``"start state"``, ``"goal
            configuration"``, ``"best IK seed that reaches the goal pose"`` (``IK_FAIL`` when
            some seed reached the pose but was refused: what it hits) or ``"best IK seed"``
            (none reached it: its pose error, and what it hits).
        goalset_index: :meth:`MotionGen.plan_goalset` only: which pose of the set the plan
            reaches (``None`` otherwise, or when no pose was reached).
        goalset_reasons: :meth:`MotionGen.plan_goalset` only: per pose of the set, why the
            plan does not end there (``""`` for the pose it reaches).
        goal_offset: metres the plan's hand target was moved off the goal position on
            purpose (0: aimed at the exact pose): every configuration of the exact pose
            touched an obstacle on the meshes, so the goal is met within the position
            tolerance instead, away from the contact
            (:mod:`~curobo_lite.wrap.motion.goal_tolerance`; ``position_error`` is the plan's
            error).
    """

    success: bool
    status: MotionGenStatus
    interpolated_plan: JointState | None
    interpolation_dt: float
    solve_time: float
    timings: dict[str, float]
    position_error: float = float("nan")
    rotation_error: float = float("nan")
    min_distance: float = float("nan")
    mesh_min_distance: float = float("nan")
    attempts: int = 0
    goal_config: torch.Tensor | None = None
    used_graph: bool = False
    trajopt_result: TrajOptResult | None = field(default=None, repr=False)
    offenders: list[Offender] = field(default_factory=list)
    offenders_config: torch.Tensor | None = field(default=None, repr=False)
    offenders_at: str = ""
    waypoints: torch.Tensor | None = field(default=None, repr=False)
    goalset_index: int | None = None
    goalset_reasons: list[str] = field(default_factory=list)
    goal_offset: float = 0.0

    @property
    def status_message(self) -> str:
        """The status and its offenders on one line, e.g. ``"INVALID_START_STATE_WORLD_COLLISION
        (start state): panda_link1 is 35 mm inside 'table'"``."""
        if not self.offenders:
            return self.status.value
        reasons = "; ".join(o.message for o in self.offenders)
        return f"{self.status.value} ({self.offenders_at}): {reasons}"

    def explain(self) -> str:
        """The status, then one indented line per offender."""
        if not self.offenders:
            return self.status.value
        lines = [f"{self.status.value}; at the {self.offenders_at}:"]
        lines += [f"  {o.message}" for o in self.offenders]
        return "\n".join(lines)

    @property
    def motion_time(self) -> float:
        """Seconds from the first to the last sample of the plan (``nan`` without one)."""
        if self.interpolated_plan is None:
            return float("nan")
        return (self.interpolated_plan.position.shape[0] - 1) * self.interpolation_dt

    def __repr__(self) -> str:
        return (
            f"MotionGenResult({self.status.value}, solve_time {self.solve_time:.3f} s, "
            f"position_error {self.position_error * 1000:.2f} mm, rotation_error "
            f"{self.rotation_error:.4f} rad, min_distance {self.min_distance * 1000:.1f} mm, "
            f"motion_time {self.motion_time:.2f} s, attempts {self.attempts}, "
            f"graph {self.used_graph})"
        )
