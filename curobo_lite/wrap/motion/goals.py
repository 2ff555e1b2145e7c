"""MotionGen's goals other than one end-effector pose: a goal set (:meth:`plan_goalset`, the
best reachable of several poses, e.g. the grasps of one object) and a joint configuration
(:meth:`plan_single_js`, :meth:`plan_joint`).

:class:`MotionGenGoals` holds these entry points; :class:`~curobo_lite.wrap.MotionGen`
inherits them and supplies the stages they share with ``plan_batch`` (start check, IK,
roadmap, trajectory optimization, result building).
"""

from __future__ import annotations

import time

import torch

from curobo_lite.rollout.cost.pose_metric import PoseCostMetric
from curobo_lite.types import JointState, Pose, check_pose
from curobo_lite.types.errors import InputTypeError, InputValueError
from curobo_lite.wrap.base.exclusive import exclusive
from curobo_lite.wrap.motion.config import MotionGenResult, MotionGenStatus
from curobo_lite.wrap.motion.goal_tolerance import tolerance_goals


def cycle_rows(rows: torch.Tensor, n: int) -> torch.Tensor:
    """``[n, D]``: ``rows [k, D]`` repeated in order (``k >= 1``)."""
    return rows[torch.arange(n, device=rows.device) % rows.shape[0]]


class MotionGenGoals:
    """Goal sets and joint goals (mixed into :class:`~curobo_lite.wrap.MotionGen`)."""

    @exclusive
    def plan_goalset(
        self,
        start_state: JointState,
        goal_poses: Pose,
        pose_cost_metric: PoseCostMetric | None = None,
    ) -> MotionGenResult:
        """Plan from ``start_state [1, D]`` (at rest) to the best reachable of ``G``
        end-effector poses ``goal_poses [G]`` (e.g. the grasps of one object), in one solve,
        cuRobo's name. The IK shares its seeds among the poses
        (:meth:`IKSolver.goalset_seeds`); the roadmap searches to every pose's
        configurations at once and ends at the nearest along it; when it finds nothing, the
        trajectory optimization tries the reachable poses in one batch and keeps the shortest
        successful motion. ``result.goalset_index`` is the pose reached, and
        ``result.goalset_reasons[g]`` says why the plan does not end at pose ``g``.
        ``pose_cost_metric``: partial and constrained poses (as in ``plan_single``) for every
        pose of the set; with a whole-motion hold, the poses the start is not on are
        refused (``goalset_reasons``)."""
        with self._metric_applied(pose_cost_metric):
            return self._plan_goalset(start_state, goal_poses)

    def _plan_goalset(self, start_state: JointState, goal_poses: Pose) -> MotionGenResult:
        t_start = time.perf_counter()
        goal = check_pose(goal_poses, "goal_poses", self.tensor_args)
        G = goal.batch
        start = self._check_start_shape(start_state, 1)
        timings: dict[str, float] = {}
        failed = self._single_start_failure(start, t_start, timings)
        if failed is not None:
            return failed
        off_hold = self._metric_start_status(
            JointState.from_position(start.position.expand(G, -1)), goal, [None] * G
        )
        if all(s is not None for s in off_hold):
            offenders = self._metric_offenders(JointState.from_position(start.position), 0, goal)
            result = self._failure(
                MotionGenStatus.INVALID_PARTIAL_POSE_COST_METRIC,
                t_start,
                timings,
                offenders,
                start.position[0],
                "start state",
            )
            result.goalset_reasons = [off_hold[0].value] * G
            return result
        q0 = start.position[0]
        t0 = time.perf_counter()
        ik, configs = self._ik(goal, q0.expand(G, self.dof), goalset=True)
        timings["ik"] = time.perf_counter() - t0
        reachable = [g for g in range(G) if configs[g].shape[0] > 0 and off_hold[g] is None]
        reasons = [""] * G
        for g in range(G):
            if off_hold[g] is not None:
                reasons[g] = f"{off_hold[g].value}: the start is off this pose's held axes"
            elif g not in reachable:
                offenders = self._ik_offenders(ik, g, goal[g : g + 1])[0]
                why = offenders[0].message if offenders else "no collision-free IK solution"
                reasons[g] = f"IK_FAIL: {why}"
        if not reachable:
            best = int((ik.position_error + ik.rotation_error).argmin())
            result = self._failure(
                MotionGenStatus.IK_FAIL,
                t_start,
                timings,
                *self._ik_offenders(ik, best, goal[best : best + 1]),
            )
            result.goalset_reasons = reasons
            return result
        allowed = [g for g in range(G) if off_hold[g] is None]
        result = self._goalset_roadmap(q0, goal, configs, reachable, allowed, t_start, timings)
        if result is None:
            result = self._goalset_trajopt(start, goal, configs, reachable, t_start, timings)
        if result.success:  # (the goal retry may reach a pose whose first IK found nothing)
            reasons[result.goalset_index] = ""
        for g in reachable:
            if g != result.goalset_index:
                reasons[g] = (
                    "reachable; another pose of the set was nearer"
                    if result.success
                    else f"reachable; {result.status.value}"
                )
        result.goalset_reasons = reasons
        return result

    def _goalset_roadmap(
        self,
        start: torch.Tensor,
        goal: Pose,
        configs: list[torch.Tensor],
        reachable: list[int],
        allowed: list[int],
        t_start: float,
        timings: dict[str, float],
    ) -> MotionGenResult | None:
        """One roadmap search from ``start [D]`` to the configurations of every reachable
        pose; where it connects none, the goal retry (:mod:`.goal_retry`: other
        configurations of the poses ``allowed``, those a whole-motion hold does not refuse,
        one roadmap each). ``None`` when neither finds a plan (its time goes into ``timings``)."""
        if not self._roadmap_on:
            return None
        owner = [g for g in reachable for _ in range(configs[g].shape[0])]
        targets = torch.cat([configs[g] for g in reachable])
        # nearest the start first, whichever pose: the roadmap keeps the first few
        order = (targets - start).norm(dim=-1).argsort()
        targets, owner = targets[order], [owner[i] for i in order.tolist()]
        graph, stage_timings = self._roadmap_path(start, targets, timings)
        g = owner[graph.goal_index] if graph.success else -1
        if not graph.success:  # none connects: other configurations of the set's poses
            rows = torch.tensor(allowed, device=start.device)
            poses = Pose(goal.position[rows], goal.quaternion[rows])
            retried, r, stage_timings = self._roadmap_retry(start, poses, targets, stage_timings)
            if retried is not None:
                graph, g = retried, allowed[r]
        if graph.success:
            result = self._from_path(graph, goal[g : g + 1], t_start, stage_timings)
            if result.success:
                result.goalset_index = g
                return result
        timings["roadmap"] = stage_timings["roadmap"]
        return None

    def _goalset_trajopt(
        self,
        start: JointState,
        goal: Pose,
        configs: list[torch.Tensor],
        reachable: list[int],
        t_start: float,
        timings: dict[str, float],
    ) -> MotionGenResult:
        """The trajectory optimization toward every reachable pose in one batch: the
        successful plan of shortest motion, else the best attempt (``TRAJOPT_FAIL``)."""
        rows = torch.tensor(reachable, device=self.tensor_args.device)
        solved = self._optimize(
            start.position.expand(len(reachable), self.dof).clone(),
            [configs[g] for g in reachable],
            Pose(goal.position[rows], goal.quaternion[rows]),
            timings,
        )
        succeeded = [j for j, ok in enumerate(solved.success.tolist()) if ok]
        if succeeded:
            # the shortest motion: the fewest interpolated samples
            j = min(succeeded, key=lambda j: solved.get_interpolated_plan(j).position.shape[0])
            status = MotionGenStatus.SUCCESS
        else:
            j = int((solved.position_error + solved.rotation_error).argmin())
            status = MotionGenStatus.TRAJOPT_FAIL
        result = self._from_trajopt(solved, j, status, t_start, dict(timings), 1)
        result.goalset_index = reachable[j] if result.success else None
        return result

    @exclusive
    def plan_single_js(self, start_state: JointState, goal_state: JointState) -> MotionGenResult:
        """Plan from ``start_state [1, D]`` (at rest) to the joint configuration
        ``goal_state [1, D]`` (or ``[D]``), cuRobo's name. No IK: the goal configuration takes
        the IK solution's place and is checked like one (within the position limits, free of
        world and self-collision; else ``INVALID_GOAL_STATE`` and its offenders), and no joint
        may have to pass a self-collision barrier on its way there (a UR arm's elbow at
        ``pi``: ``INVALID_GOAL_STATE``, offenders of kind ``"barrier"``;
        :mod:`~curobo_lite.wrap.motion.reachable_goals`)."""
        t_start = time.perf_counter()
        start = self._check_start_shape(start_state, 1)
        if not isinstance(goal_state, JointState):
            raise InputTypeError(f"goal_state: expected a JointState, received {type(goal_state)}")
        target = (
            goal_state.position.reshape(-1, self.dof)
            if goal_state.position.numel() == (self.dof)
            else None
        )
        if target is None:
            raise InputValueError(
                f"goal_state: expected position [1, {self.dof}], received "
                f"{tuple(goal_state.position.shape)}"
            )
        target = target.to(**self.tensor_args.as_kwargs())
        if not bool(torch.isfinite(target).all()):
            raise InputValueError("goal_state: position contains NaN or infinite values")
        timings: dict[str, float] = {}
        failed = self._single_start_failure(start, t_start, timings)
        if failed is not None:
            return failed
        if not bool(self.checker.validate(target)[0]):
            return self._failure(
                MotionGenStatus.INVALID_GOAL_STATE,
                t_start,
                timings,
                self.checker.offenders(target),
                target[0],
                "goal configuration",
            )
        # a full-turn joint that would pass a self-collision barrier: no plan gets there
        beyond = self._barrier_offenders(target[0], start.position[0], exact=True)
        if beyond:
            return self._failure(
                MotionGenStatus.INVALID_GOAL_STATE,
                t_start,
                timings,
                beyond,
                target[0],
                "goal configuration",
            )
        if self.roadmap is not None:
            graph, stage_timings = self._roadmap_path(start.position[0], target, timings)
            if graph.success:
                state = self.checker.kinematics.forward(target, spheres=False)
                pose = Pose(state.ee_position, state.ee_quaternion)
                result = self._from_path(graph, pose, t_start, stage_timings)
                if result.success:
                    return result
            timings["roadmap"] = stage_timings["roadmap"]
        t0 = time.perf_counter()
        result = self.trajopt.solve_from_configs(start, target[:, None])
        timings["trajopt"] = time.perf_counter() - t0
        if bool(result.success[0]) or self.graph_planner is None:
            status = (
                MotionGenStatus.SUCCESS
                if bool(result.success[0])
                else (MotionGenStatus.TRAJOPT_FAIL)
            )
            return self._from_trajopt(result, 0, status, t_start, timings, 1)
        return self._graph_fallback(start.position[0], target, None, result, 0, t_start, timings)

    @exclusive
    def plan_joint(self, start_state: JointState, goal_state: JointState) -> MotionGenResult:
        """:meth:`plan_single_js` (its earlier name)."""
        return self.plan_single_js(start_state, goal_state)

    # --- stages ----------------------------------------------------------------------------------

    def _tolerance_goals(self, goals: torch.Tensor, goal: Pose, threshold: float) -> torch.Tensor:
        """``[m, D]`` distinct configurations near ``goals [G, D]`` (configurations of
        ``goal``'s pose that the meshes refuse) with the hand moved off the goal position
        away from the contact, within the IK's thresholds of the pose, valid
        (:meth:`RobotWorld.validate`, exact band) and ``threshold`` m clear on the meshes
        (:func:`~curobo_lite.wrap.motion.goal_tolerance.tolerance_goals`); their offsets are
        kept for the result (:meth:`_goal_offset_of`)."""
        check = self.checker.mesh_check()
        reach = self._exact_band + 0.01  # m: the clearance is measured exactly up to here

        def clearance(q: torch.Tensor) -> torch.Tensor:
            distance = check.distance(q, max_distance=reach).distance
            return torch.as_tensor(distance, dtype=q.dtype, device=q.device)

        config = self.ik_solver.config
        found = tolerance_goals(
            self.checker.kinematics,
            clearance,
            goals,
            goal,
            threshold,
            config.position_threshold,
            config.position_threshold / config.rotation_threshold,
        )
        q, offsets = found.configs, found.offsets
        position, rotation = self._pose_errors(q, goal) if q.shape[0] else (offsets, offsets)
        ok = (position <= config.position_threshold) & (rotation <= config.rotation_threshold)
        q, offsets = q[ok], offsets[ok]
        if q.shape[0]:
            ok = self.checker.validate(q, self._exact_band)
            q, offsets = q[ok], offsets[ok]
        order = offsets.argsort()  # the least offset first
        q, offsets = q[order], offsets[order]
        self._tolerance_offsets = (q, offsets)
        return q

    def _goal_offset_of(self, q: torch.Tensor) -> float:
        """Metres the hand target of the goal configuration ``q [D]`` was moved off the goal
        position by :meth:`_tolerance_goals` (0 when it was not one of those)."""
        stored = getattr(self, "_tolerance_offsets", None)
        if stored is None or stored[0].shape[0] == 0:
            return 0.0
        match = (stored[0] == q).all(-1)
        return float(stored[1][match][0]) if bool(match.any()) else 0.0
