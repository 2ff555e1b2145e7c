"""MotionGen's roadmap stage and its exact (mesh) checks, mixed into
:class:`~curobo_lite.wrap.MotionGen`: the roadmap path from the start to the distinct IK
solutions with every segment judged on the meshes as it is chosen, the path timed along its
segments into a result, the goal configurations the meshes accept where the spheres graze
(the exact band), and the final mesh check of an optimized plan.
"""

from __future__ import annotations

import time

import torch

from curobo_lite.types import JointState, Pose
from curobo_lite.wrap.ik.dls import dls_steps
from curobo_lite.wrap.ik.solver import IKResult, distinct_rows
from curobo_lite.wrap.motion.config import MotionGenResult, MotionGenStatus
from curobo_lite.wrap.motion.goal_retry import GoalRetry
from curobo_lite.wrap.motion.graph_planner import GraphPlanResult
from curobo_lite.wrap.motion.path_timing import time_polyline

#: largest joint step (rad) between the waypoints of a segment's swept mesh check
_MESH_PIECE = 0.05
#: segments with an end within _DENSE_NEAR (m, spheres) of an obstacle: pieces of at most
#: _DENSE_STEP (m) of motion (the swept check's bound), at most _DENSE_MAX per segment
_DENSE_NEAR = 0.02
_DENSE_STEP = 0.01
_DENSE_MAX = 64
#: metres of mesh clearance the plan's checks ask for beyond ``exact_check_margin``: the swept
#: check samples a motion at most a millimetre apart near contact, so two checks of the same
#: motion at other samples (the plan's timed waypoints, a benchmark's judge) disagree by a few
#: micrometres where a finger slides past the grasped object (seen: +7 um here, -9 um there)
MESH_GRAZE = 1e-4
#: metres: the range of the plan's sphere clearance query, first near, then (nothing within
#: it) far (221 waypoints of an MBM bookshelf plan: 8.5 ms near, 21 ms far, CPU)
_CLEARANCE_NEAR = 0.05
_CLEARANCE_FAR = 1.0
#: where the meshes refuse every goal configuration: postures tried per goal (for the first
#: :data:`_REPAIR_GOALS`), their largest nudge (rad per joint) and damped least-squares steps
_REPAIR_GOALS = 4
_REPAIR_VARIANTS = 32
_REPAIR_NUDGE = 0.15
_REPAIR_DLS = 6


class RoadmapStage(GoalRetry):
    """The roadmap and exact-check stages of :class:`~curobo_lite.wrap.MotionGen` (which
    supplies ``roadmap``, ``checker``, ``exact_check``, ``config``, ``robot_config``,
    ``ik_solver``, ``_goal_configs`` and ``_pose_errors``); where the roadmap connects no goal,
    a second try with other goals of the pose (:class:`GoalRetry`)."""

    def _roadmap_plans(
        self,
        solved: list[int],
        valid: list[int],
        start: torch.Tensor,
        goal: Pose,
        goal_configs: list[torch.Tensor],
        results: list[MotionGenResult | None],
        t_start: float,
        timings: dict[str, float],
    ) -> list[int]:
        """The roadmap stage: per problem ``k`` of ``solved``, a roadmap path from
        ``start[k]`` to its goal configurations (the distinct IK solutions), timed along its
        segments; a plan that passes its checks goes into ``results[valid[k]]``. Returns the
        problems left for the trajectory optimization."""
        left = []
        for k in solved:
            goal_k = Pose(goal.position[k : k + 1], goal.quaternion[k : k + 1])
            t0 = time.perf_counter()
            goals = self._mesh_clear_goals(goal_configs[k], goal_k)
            screen = time.perf_counter() - t0
            if goals.shape[0] == 0:  # none the meshes accept: no roadmap can end there
                timings["roadmap"] = timings.get("roadmap", 0.0) + screen
                left.append(k)
                continue
            goal_configs[k] = goals  # the optimizer's goals too, if it comes to that
            graph, stage_timings = self._roadmap_path(start[k], goals, timings)
            stage_timings["roadmap"] += screen
            if not graph.success:  # none connects: other goals of the pose (goal_retry.py)
                retried, _, stage_timings = self._roadmap_retry(
                    start[k], goal_k, goals, stage_timings
                )
                graph = retried if retried is not None else graph
            if graph.success:
                result = self._from_path(graph, goal_k, t_start, stage_timings)
                result.goal_offset = self._goal_offset_of(graph.path[-1])
                if result.success:
                    results[valid[k]] = result
                    continue
            timings["roadmap"] = timings.get("roadmap", 0.0) + stage_timings["roadmap"]
            left.append(k)
        return left

    def _mesh_clear_goals(self, goals: torch.Tensor, goal: Pose) -> torch.Tensor:
        """``[m, D]``: the first ``max_goals`` of the goal configurations ``goals [G, D]``
        (nearest the start first) that the meshes find clear (``exact_check_margin`` +
        :data:`MESH_GRAZE`, as the segment check asks), or where they refuse all of them,
        postures of the same pose near them (:meth:`_repaired_goals`); ``goals`` as they are
        without the exact check. The IK judges its solutions on the spheres, which in places
        reach less far than the meshes: in MBM's bookshelf_tall 33 both IK solutions put
        link5's mesh 1 mm into a shelf board where its spheres are 0.04 mm clear. Every edge
        out of such a goal fails the segment check, and the roadmap spent its 3 072 samples
        (seconds) before the optimizer was tried."""
        self._tolerance_offsets = None  # this problem's, if any (_tolerance_goals)
        if not self.exact_check or goals.shape[0] == 0:
            return goals
        threshold = self.config.exact_check_margin + MESH_GRAZE
        limit = self.roadmap.config.max_goals or goals.shape[0]
        kept, count = [], 0
        for part in goals.split(limit):
            part = part[self.checker.meshes_clear(part, threshold)]
            kept.append(part)
            count += part.shape[0]
            if count >= limit:
                break
        clear = torch.cat(kept)[:limit]
        if clear.shape[0]:
            return clear
        repaired = self._repaired_goals(goals, goal, threshold)
        # none at the exact pose: within the pose tolerance, away from the contact (goals.py)
        return repaired if repaired.shape[0] else self._tolerance_goals(goals, goal, threshold)

    def _repaired_goals(self, goals: torch.Tensor, goal: Pose, threshold: float) -> torch.Tensor:
        """Configurations of ``goal``'s pose near the first :data:`_REPAIR_GOALS` of ``goals``:
        damped least-squares steps to the pose (weighted as the IK's) from each goal nudged by
        up to :data:`_REPAIR_NUDGE` rad per joint, so that the free elbow and wrist take other
        postures; kept where they reach the pose within the IK's thresholds, pass
        :meth:`RobotWorld.validate` (exact band) and the meshes (``threshold``); distinct.
        Empty when none does."""
        base = goals[:_REPAIR_GOALS]
        G, D = base.shape
        generator = torch.Generator().manual_seed(self.roadmap.config.seed)
        nudge = torch.rand(G, _REPAIR_VARIANTS, D, generator=generator, dtype=goals.dtype)
        seeds = (base[:, None] + _REPAIR_NUDGE * (2.0 * nudge.to(goals.device) - 1.0)).reshape(
            -1, D
        )
        config = self.ik_solver.config
        n = seeds.shape[0]
        q = dls_steps(
            self.checker.kinematics,
            seeds,
            goal.position.expand(n, 3),
            goal.quaternion.expand(n, 4),
            _REPAIR_DLS,
            # (not lock_limits: held at a limit, the joints keep the posture the meshes refused)
            rotation_weight=config.position_threshold / config.rotation_threshold,
        )
        q = self._reaching(q, goal, 0)
        if q.shape[0]:
            q = q[self.checker.validate(q, self._exact_band)]
        if q.shape[0]:
            q = q[self.checker.meshes_clear(q, threshold)]
        return distinct_rows(q, config.distinct_tolerance)

    def _roadmap_path(
        self, start: torch.Tensor, goals: torch.Tensor, timings: dict[str, float]
    ) -> tuple[GraphPlanResult, dict[str, float]]:
        """The roadmap from ``start [D]`` to ``goals [G, D]`` (segments judged on the meshes
        too when the exact check is on), and ``timings`` with its time (``roadmap``, and the
        part of it the mesh checks took, ``exact_check``)."""
        t0 = time.perf_counter()
        self._mesh_time = 0.0
        check = self._mesh_segments if self.exact_check else None
        graph = self.roadmap.plan(start, goals, check)
        stage_timings = {**timings, "roadmap": time.perf_counter() - t0}
        if check is not None:
            stage_timings["exact_check"] = self._mesh_time
        return graph, stage_timings

    @property
    def exact_band(self) -> float:
        """Metres of sphere contact the meshes judge instead (0: spheres only): the band of
        :meth:`RobotWorld.validate` that this planner's checks use."""
        return self.roadmap.config.exact_band if self.roadmap is not None else 0.0

    @property
    def _exact_band(self) -> float:
        return self.exact_band

    def _mesh_judged_solutions(self, ik: IKResult, k: int, goal: Pose) -> torch.Tensor:
        """``[m, D]`` distinct configurations among problem ``k``'s IK seeds that reach the
        pose and that the meshes find clear where the spheres touch (within the roadmap's
        ``exact_band``): a grasp whose hand spheres graze the object by a millimetre is a
        valid goal. Empty without that band or without such seeds."""
        band = self._exact_band
        candidates = ik.solutions[k]
        if band <= 0.0:
            return candidates[:0]
        candidates = self._reaching(candidates, goal, k)
        if candidates.shape[0] == 0:
            return candidates
        candidates = candidates[self.checker.validate(candidates, band)]
        return distinct_rows(candidates, self.ik_solver.config.distinct_tolerance)

    def _mesh_segments(
        self, q_from: torch.Tensor, q_to: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The exact check of straight segments ``q_from [E, D] -> q_to [E, D]``: ``ok [E]``
        and the smallest mesh clearance ``[E]`` along each (the roadmap's segment check).
        Each segment is cut into pieces of at most ``_MESH_PIECE`` rad per joint: the swept
        check advances all pieces together, so a long segment near obstacles costs a few
        batched queries instead of hundreds of sequential ones. Each segment has its own
        number of pieces (the rows are padded with their end, which the sweep measures once),
        and a segment with an end near an obstacle more (:data:`_DENSE_STEP`): near contact
        the sweep samples every millimetre or so anyway, and side by side pieces take fewer
        sequential rounds. First 15 of MBM cage / table_under_pick, thread CPU, medians vs
        cutting every segment as the batch's longest: mesh queries 8 -> 7 / 5 -> 6 calls,
        535 -> 530 / 359 -> 380 rows, within noise in time; as its own only (no dense
        pieces): 20 / 14 calls, 10-20 ms slower."""
        t0 = time.perf_counter()
        delta = q_to - q_from
        pieces = (delta.abs().amax(-1) / _MESH_PIECE).ceil().clamp(min=1)
        if _DENSE_NEAR > 0.0:
            # a segment with an end near an obstacle (on the spheres): pieces of at most
            # _DENSE_STEP of motion, marched side by side instead of in sequential rounds
            ends = torch.cat((q_from, q_to))
            E = q_from.shape[0]
            clearance = self.checker.collision_distance(ends, max_distance=_DENSE_NEAR)
            near = clearance.view(2, E).amin(0) < _DENSE_NEAR
            lever = torch.as_tensor(self.checker.mesh_check().lever, dtype=delta.dtype)
            motion = (delta.abs() * lever.to(delta.device)).sum(-1)
            dense = (motion / _DENSE_STEP).ceil().clamp(max=_DENSE_MAX)
            pieces = torch.where(near, torch.maximum(pieces, dense), pieces)
        k = torch.arange(int(pieces.max()) + 1, dtype=q_from.dtype, device=q_from.device)
        t = torch.minimum(k[None] / pieces[:, None], torch.ones_like(k[None]))
        waypoints = q_from[:, None] + t[..., None] * delta[:, None]
        report = self.checker.trajectory_mesh_report(
            waypoints,
            self.config.exact_check_margin + MESH_GRAZE,
            self.config.exact_check_resolution,
        )
        self._mesh_time += time.perf_counter() - t0
        return report

    def _from_path(
        self, graph: GraphPlanResult, goal: Pose, t_start: float, timings: dict[str, float]
    ) -> MotionGenResult:
        """A result from the roadmap's checked path: timed along its segments
        (:func:`~.path_timing.time_polyline`, at rest at each waypoint, so the
        plan stays on the checked segments), its pose error and sphere clearance measured. The
        exact check already judged every segment (the roadmap's segment check): its clearance
        is the plan's ``mesh_min_distance``."""
        path = graph.path
        dt = self.config.interpolation_dt
        plan = time_polyline(path, self.robot_config.joint_limits, dt)
        position, rotation = self._pose_errors(path[-1:], goal)
        q = plan.position
        # the world query is exact only out to its range, and costs more the farther it looks:
        # near first (grasp plans pass within millimetres), the full metre only if nothing is
        world = self.checker.collision_distance(q, max_distance=_CLEARANCE_NEAR)
        if float(world.min()) >= _CLEARANCE_NEAR:
            world = self.checker.collision_distance(q, max_distance=_CLEARANCE_FAR)
        clearance = torch.minimum(world, self.checker.self_collision_distance(q))
        status = MotionGenStatus.SUCCESS
        thresholds = (
            self.ik_solver.config.position_threshold,
            self.ik_solver.config.rotation_threshold,
        )
        if float(position[0]) > thresholds[0] or float(rotation[0]) > thresholds[1]:
            status = MotionGenStatus.TRAJOPT_FAIL  # not reached: cannot happen from IK goals
        return MotionGenResult(
            success=status is MotionGenStatus.SUCCESS,
            status=status,
            interpolated_plan=plan,
            interpolation_dt=dt,
            solve_time=time.perf_counter() - t_start,
            timings=timings,
            position_error=float(position[0]),
            rotation_error=float(rotation[0]),
            min_distance=float(clearance.min()),
            mesh_min_distance=graph.clearance,
            attempts=0,
            goal_config=path[-1],
            used_graph=True,
            waypoints=path,
        )

    def _exact_check(
        self, plan: JointState | None, status: MotionGenStatus, timings: dict[str, float]
    ) -> tuple[MotionGenStatus, float]:
        """The exact mesh check of a plan that passed on the spheres: the status
        (``FINAL_PLAN_MESH_COLLISION`` when the meshes touch) and the mesh clearance (``nan``
        when the check did not run)."""
        if not (self.exact_check and status is MotionGenStatus.SUCCESS and plan is not None):
            return status, float("nan")
        t0 = time.perf_counter()
        ok, low = self.checker.trajectory_mesh_report(
            plan.position, self.config.exact_check_margin, self.config.exact_check_resolution
        )
        timings["exact_check"] = time.perf_counter() - t0
        if not bool(ok):
            status = MotionGenStatus.FINAL_PLAN_MESH_COLLISION
        return status, float(low)
