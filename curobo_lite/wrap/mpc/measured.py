"""The metrics of an MPC step (:class:`~curobo_lite.wrap.mpc.config.MpcResult`): the measured
state's pose, c-space and tracking errors and clearances (:class:`MeasuredMetrics`), and the
step's vector of them with the plan's cost and the command's flags (:func:`step_metrics`).

On a CPU the measured state's forward kinematics (into kept buffers) and pose-error kernel are
launched from recordings (:func:`~curobo_lite.kernels.launch.replayed`): they read the
rollout's start state, which every step writes in place, so each step replays the same
launches instead of packing their arguments again (~30 us each)."""

from __future__ import annotations

from typing import Any

import torch

from curobo_lite.kernels.launch import launch_key, replayed
from curobo_lite.kernels.pose_cost_kernels import pose_cost
from curobo_lite.robot import Kinematics
from curobo_lite.rollout import ArmReacher, Goal
from curobo_lite.rollout.cost.pose_metric import judged_pose_errors
from curobo_lite.types import JointState
from curobo_lite.wrap.base.pose_metric import active_metric


class MeasuredMetrics:
    """The measured state's metrics of an :class:`~curobo_lite.wrap.MpcSolver` step.

    Args:
        rollout: the solver's rollout (its costs, metric, reference and collision checks).
        kinematics: forward kinematics of the robot.
    """

    def __init__(self, rollout: ArmReacher, kinematics: Kinematics) -> None:
        self.rollout = rollout
        self.kinematics = kinematics
        self.tensor_args = rollout.tensor_args
        # forward kinematics into kept buffers (with spheres or not); the pose errors'
        # per-"step" weights [2, 2] (see pose_error; [0, 1] is 0)
        self._frames: dict[bool, Any] = {}
        self._error_schedule = torch.eye(2, **self.tensor_args.as_kwargs())
        self._replays: dict[tuple, Any] = {}

    def pose_error(
        self,
        goal: Goal,
        state: JointState,
        ee: tuple[torch.Tensor, torch.Tensor] | None = None,
    ) -> torch.Tensor:
        """``[2]`` position and rotation error of ``state [1, D]`` to ``goal``'s pose (``ee``:
        its end effector's position ``[1, 3]`` and quaternion ``[1, 4]`` in the kept
        buffers of :meth:`state_metrics`, when already computed: the launch is replayed)."""
        goal_pose = goal.goal_pose
        kept = ee is not None
        if ee is None:
            fk = self.kinematics.forward(
                state.position.to(**self.tensor_args.as_kwargs()), spheres=False
            )
            ee = fk.ee_position, fk.ee_quaternion
        # along the judged axes of the pose-cost metric, when there is one
        metric = active_metric(self.rollout.pose_cost_metric, self.tensor_args)
        if metric is not None:
            errors = judged_pose_errors(metric, *ee, goal_pose.position, goal_pose.quaternion)
            return torch.cat(errors)
        # the full distance and geodesic angle: the pose cost kernel over two "steps" of the
        # same pose, weighted (1, 0) and (0, 1): one launch instead of ~15 torch ops
        position, quaternion = (t[:, None].expand(1, 2, t.shape[-1]) for t in ee)
        schedule = self._error_schedule

        def launch() -> torch.Tensor:
            return pose_cost(
                position, quaternion, goal_pose.position, goal_pose.quaternion, schedule, 0,
                "L2", "GEODESIC", schedule[0, 1:],
            )[0]  # fmt: skip

        goal_tensors = (goal_pose.position, goal_pose.quaternion)
        if not kept or not all(t.is_contiguous() for t in goal_tensors):  # copies: not kept
            return launch()
        key = launch_key(position, quaternion, goal_pose.position, goal_pose.quaternion)
        return replayed(self._replays, ("pose", key), launch, position.device)

    def state_metrics(
        self, goal: Goal, state: JointState
    ) -> tuple[list[str], list[torch.Tensor | None]]:
        """The metrics of the measured ``state [1, D]`` (the rollout's start state) towards
        ``goal``: names and values in :func:`step_metrics`' order, with ``None`` where the
        plan's ``cost`` and ``limit_clamped`` go."""
        names: list[str] = []
        values: list[torch.Tensor | None] = []
        # one forward kinematics for the pose errors and the clearances
        spheres = self.rollout.needs_spheres()
        out = self._frames.get(spheres)
        if out is None:
            out = self._frames[spheres] = self.kinematics.allocate_outputs(1, spheres)
        q = state.position[:, None]
        kinematics, tables = self.kinematics, self.kinematics.tables
        if kinematics.backend == "warp" and q.is_contiguous():  # only launches, on q itself
            key = launch_key(q, *vars(out).values(), tables.sphere_local, tables.sphere_start)
            fk = replayed(
                self._replays,
                ("frames", spheres, key),
                lambda: kinematics.forward(q, spheres=spheres, out=out),
                q.device,
            )
        else:
            fk = kinematics.forward(q, spheres=spheres, out=out)
        if goal.goal_pose is not None:
            names += ["position_error", "rotation_error"]
            ee = fk.ee_position[:, 0], fk.ee_quaternion[:, 0]
            values.append(self.pose_error(goal, state, ee))
        if goal.goal_state is not None:
            names.append("cspace_error")
            values.append((state.position - goal.goal_state.position).norm()[None])
        reference = self.rollout.reference
        if reference is not None:
            names.append("tracking_error")
            values.append((state.position[0] - reference.position[0, 0]).norm()[None])
        names += ["cost", "limit_clamped"]
        values.append(None)
        if spheres:
            world_distance, self_distance = self.rollout.collision_distances(fk.link_spheres)
            if world_distance is not None:
                names.append("world_distance")
                values.append(world_distance[:1].reshape(1))
            if self_distance is not None:
                names.append("self_distance")
                values.append(self_distance[:1].reshape(1))
        return names, values


def step_metrics(
    measured: tuple[list[str], list[torch.Tensor | None]],
    best_cost: torch.Tensor,
    flags: torch.Tensor,
) -> tuple[list[str], torch.Tensor]:
    """The step's metrics (see :class:`~curobo_lite.wrap.mpc.config.MpcResult`): their names
    and one tensor of their values, read to the host at once; ``measured``:
    :meth:`MeasuredMetrics.state_metrics` of the measured state; ``best_cost [1]``: the plan
    update's best cost; ``flags [2]``: the command's (clamped, limit violation)."""
    names, values = measured
    plan = torch.cat((best_cost[:1], flags[:1]))
    values = [plan if value is None else value for value in values]
    values.append(flags[1:])
    return [*names, "limit_violation"], torch.cat(values)
