"""Geometric planning in joint space with OMPL, checked by curobo_lite's batched collision kernels.

Local optimization cannot find its way around some obstacles (a goal behind a shelf board, the
far side of a wall): :class:`OmplPlanner` runs a sampling-based planner of OMPL (the Open Motion
Planning Library, through its maintained Python bindings, ``pip install ompl``) in the robot's
joint space and hands its path to trajectory optimization as a seed. OMPL is used as it is
(RRTConnect by default, then its path simplifier); curobo_lite supplies the checks:

- state validity: :meth:`RobotWorld.validate` (position limits, world and self-collision) of
  one configuration;
- motion validity: the segment between two configurations sampled every ``resolution`` rad
  (largest joint step) and checked **in one batched call** of the same kernels, instead of one
  Python call per sample — what makes a Python validity checker affordable.

The planner is also the baseline of ``benchmarks/motion_gen.py`` (OMPL RRTConnect plus
simplification on the same problems and the same collision model).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import torch

from curobo_lite.types.errors import InputValueError
from curobo_lite.wrap.base.robot_world import RobotWorld

PLANNERS = ("RRTConnect", "RRT", "PRM", "BITstar", "KPIECE1")


def ompl_available() -> bool:
    """Whether OMPL's Python bindings can be imported."""
    try:
        import ompl.base  # noqa: F401
    except ImportError:
        return False
    return True


@dataclass
class GraphPlanResult:
    """A geometric path in joint space.

    Attributes:
        success: a path from start to goal was found (and simplified).
        path: ``[K, D]`` waypoints including start and goal (``None`` on failure).
        plan_time: seconds in the planner, simplify_time: seconds in the simplifier.
        checked_states, checked_motions: validity-check counts.
        goal_index: which of the goal configurations the path ends at (0 for one goal;
            ``-1`` on failure).
        clearance: smallest clearance (m) along the path by the planner's segment check
            (:class:`~curobo_lite.wrap.motion.roadmap.RoadmapPlanner` with an exact check; ``nan``
            when none ran).
    """

    success: bool
    path: torch.Tensor | None
    plan_time: float
    simplify_time: float
    checked_states: int
    checked_motions: int
    goal_index: int = -1
    clearance: float = math.nan

    @property
    def length(self) -> float:
        """Joint-space length of the path (radians, Euclidean), ``inf`` without a path."""
        if self.path is None:
            return math.inf
        return float((self.path[1:] - self.path[:-1]).norm(dim=-1).sum())


class OmplPlanner:
    """OMPL in the joint space of ``checker``'s robot.

    Args:
        checker: the :class:`RobotWorld` whose world the paths avoid (shared: world updates
            reach the planner).
        planner: an OMPL geometric planner of :data:`PLANNERS`.
        resolution: largest joint step (rad) between checked samples of a motion.
        time_limit: seconds for the planner; the simplifier gets up to the same again.
        seed: OMPL's random seed (set once per process, before OMPL's first random draw).
    """

    def __init__(
        self,
        checker: RobotWorld,
        planner: str = "RRTConnect",
        resolution: float = 0.02,
        time_limit: float = 1.0,
        seed: int | None = 0,
    ) -> None:
        if not ompl_available():
            raise ImportError(
                "OmplPlanner needs OMPL's Python bindings: pip install 'curobo_lite[plan]' "
                "(or pip install ompl)"
            )
        if planner not in PLANNERS:
            raise InputValueError(
                f"planner: expected one of {list(PLANNERS)}, received {planner!r}"
            )
        if not resolution > 0.0 or not math.isfinite(resolution):
            raise InputValueError(f"resolution: expected a number > 0, received {resolution!r}")
        if not time_limit > 0.0 or not math.isfinite(time_limit):
            raise InputValueError(f"time_limit: expected seconds > 0, received {time_limit!r}")
        from ompl import util as ou

        ou.setLogLevel(ou.LogLevel.LOG_ERROR)
        if seed is not None:
            ou.RNG.setSeed(int(seed))
        self.checker = checker
        self.planner_name = planner
        self.resolution = float(resolution)
        self.time_limit = float(time_limit)
        self.dof = checker.kinematics.dof
        self._state_checks = 0
        self._motion_checks = 0

    # --- the checks OMPL calls -----------------------------------------------------------------

    def _to_tensor(self, state) -> torch.Tensor:
        values = [state[i] for i in range(self.dof)]
        return torch.tensor(values, **self.checker.tensor_args.as_kwargs())

    def _state_valid(self, state) -> bool:
        self._state_checks += 1
        return bool(self.checker.validate(self._to_tensor(state)[None])[0])

    def segment_valid(self, q_from: torch.Tensor, q_to: torch.Tensor) -> bool:
        """Whether the straight joint-space segment ``q_from -> q_to`` (``[D]`` each) is valid,
        sampled every ``resolution`` rad and checked in one batch."""
        steps = max(1, math.ceil(float((q_to - q_from).abs().max()) / self.resolution))
        t = torch.linspace(0.0, 1.0, steps + 1, **self.checker.tensor_args.as_kwargs())[1:]
        samples = q_from + t[:, None] * (q_to - q_from)
        return bool(self.checker.validate(samples).all())

    # --- planning ------------------------------------------------------------------------------

    def plan(self, start: torch.Tensor, goal: torch.Tensor) -> GraphPlanResult:
        """A valid path from ``start [D]`` to ``goal [D]``, or to whichever of several goal
        configurations ``goal [G, D]`` (e.g. distinct IK solutions of one pose) the planner
        connects first (``goal_index``). Start and goals must be valid."""
        if goal.shape[-1:] != (self.dof,) or goal.ndim not in (1, 2) or goal.numel() == 0:
            raise InputValueError(
                f"goal: expected [{self.dof}] or [G, {self.dof}], received {tuple(goal.shape)}"
            )
        goals = goal.reshape(-1, self.dof)
        from ompl import base as ob
        from ompl import geometric as og

        planner_self = self

        class _Motion(ob.MotionValidator):
            def checkMotion(self, s1, s2) -> bool:  # noqa: N802 (OMPL's name)
                planner_self._motion_checks += 1
                return planner_self.segment_valid(
                    planner_self._to_tensor(s1), planner_self._to_tensor(s2)
                )

        self._state_checks = self._motion_checks = 0
        space = ob.RealVectorStateSpace(self.dof)
        bounds = ob.RealVectorBounds(self.dof)
        low, high = self.checker.robot_config.joint_limits.position.tolist()
        for j in range(self.dof):
            bounds.setLow(j, float(low[j]))
            bounds.setHigh(j, float(high[j]))
        space.setBounds(bounds)
        setup = og.SimpleSetup(space)
        setup.setStateValidityChecker(self._state_valid)
        info = setup.getSpaceInformation()
        motion = _Motion(info)
        info.setMotionValidator(motion)
        start_state = space.allocState()
        for j in range(self.dof):
            start_state[j] = float(start[j])
        setup.setStartState(start_state)
        goal_states = ob.GoalStates(info)
        for row in goals.tolist():
            goal_state = space.allocState()
            for j in range(self.dof):
                goal_state[j] = float(row[j])
            goal_states.addState(goal_state)
        setup.setGoal(goal_states)
        setup.setPlanner(getattr(og, self.planner_name)(info))
        t0 = time.perf_counter()
        solved = setup.solve(self.time_limit)
        plan_time = time.perf_counter() - t0
        exact = bool(solved) and setup.haveExactSolutionPath()
        path = None
        simplify_time = 0.0
        goal_index = -1
        if exact:
            t0 = time.perf_counter()
            setup.simplifySolution(self.time_limit)
            simplify_time = time.perf_counter() - t0
            states = setup.getSolutionPath().getStates()
            path = torch.stack([self._to_tensor(s) for s in states])
            goal_index = int((goals.to(path) - path[-1]).abs().amax(dim=-1).argmin())
        return GraphPlanResult(
            success=exact,
            path=path,
            plan_time=plan_time,
            simplify_time=simplify_time,
            checked_states=self._state_checks,
            checked_motions=self._motion_checks,
            goal_index=goal_index,
        )


def resample_path(path: torch.Tensor, num_points: int) -> torch.Tensor:
    """``[num_points, D]`` points spaced evenly by joint-space arc length along the polyline
    ``path [K, D]`` (first and last points kept)."""
    if path.shape[0] == 1:
        return path.expand(num_points, -1).clone()
    segment = (path[1:] - path[:-1]).norm(dim=-1)
    arc = torch.cat((segment.new_zeros(1), segment.cumsum(0)))
    total = float(arc[-1])
    if total == 0.0:
        return path[:1].expand(num_points, -1).clone()
    target = torch.linspace(0.0, total, num_points, dtype=path.dtype, device=path.device)
    index = torch.searchsorted(arc, target, right=True).clamp(1, path.shape[0] - 1)
    left, right = arc[index - 1], arc[index]
    weight = ((target - left) / (right - left).clamp(min=1e-12)).clamp(0.0, 1.0)[:, None]
    return path[index - 1] + weight * (path[index] - path[index - 1])
