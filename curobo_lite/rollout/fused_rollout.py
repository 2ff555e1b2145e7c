"""The forward-only MPPI rollout of :class:`~curobo_lite.rollout.ArmReacher` in a few launches.

A sampled MPPI rollout needs no gradient: :meth:`ArmReacher.rollout_fn` then takes this path
where it supports the configuration (:func:`fused_reason` says why not otherwise). Per row
chunk of particles, four Warp launches and no torch op:

1. :func:`~curobo_lite.kernels.mppi_rollout_kernels.mppi_joint_rollout`: integration of the
   ACCELERATION control space and every joint-space cost term (bound, smoothness, stop, null
   space, c-space goal, tracking), written per term;
2. forward kinematics of the chunk's configurations (the warp backend's kernel, no spheres);
3. the pose cost (:mod:`~curobo_lite.kernels.pose_cost_kernels`' kernel) on the chunk's
   end-effector frames;
4. the world cost read from the link frames
   (:meth:`~curobo_lite.rollout.cost.PrimitiveCollisionCost.frames_pass`), when the world has
   obstacles.

On a CPU with a second core the chunks are shared with the helper thread of
:mod:`curobo_lite.rollout.overlap` (a Warp CPU launch releases the GIL) while the calling
thread runs ``beside_kinematics`` first; each launch inside a chunk runs unsplit. The terms are
those of the modular path to float rounding (``tests/test_fused_rollout.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch
import warp as wp

from curobo_lite.kernels import StepBuffers, StepMode
from curobo_lite.kernels import mppi_rollout_kernels as mrk
from curobo_lite.kernels import pose_cost_kernels as pck
from curobo_lite.kernels.launch import (
    as_warp,
    launch_key,
    recorded_cpu_launches,
    serial_cpu_launches,
)
from curobo_lite.kernels.step_rows import joint_vector
from curobo_lite.rollout.cost import (
    BoundCost,
    CostBase,
    CSpaceGoalCost,
    NullSpaceCost,
    PoseCost,
    PrimitiveCollisionCost,
    SelfCollisionCost,
    SmoothnessCost,
    StopCost,
    TrackingCost,
)
from curobo_lite.rollout.cost.collision_cost import RowPass
from curobo_lite.rollout.dynamics_model import KinematicModel, KinematicModelState
from curobo_lite.rollout.goal import Goal
from curobo_lite.rollout.overlap import OVERLAP_MIN_CONFIGS, SharedPass, shared
from curobo_lite.types import JointState

#: the joint-space cost classes the kernel computes, by term slot (``mrk.TERMS``)
_JOINT_CLASSES = {
    "bound": BoundCost,
    "smooth": SmoothnessCost,
    "stop": StopCost,
    "null_space": NullSpaceCost,
    "cspace": CSpaceGoalCost,
    "tracking": TrackingCost,
}
_SUPPORTED = (*_JOINT_CLASSES.values(), PoseCost, PrimitiveCollisionCost, SelfCollisionCost)

#: the row chunks of a rollout shared by the two threads, as fractions of the rows in the order
#: they are taken: the helper takes the first while the calling thread runs
#: ``beside_kinematics`` (MpcSolver's state metrics and MPPI's next normals, ~0.1 + 0.2 ms of
#: the ~1.3 ms of kernels of a free-space rollout), then each takes the next as it finishes (a
#: replayed chunk costs ~10 us of Python). None: ``PIECES`` equal chunks
SHARES: tuple[float, ...] | None = (0.6, 0.4)
PIECES = 2


def fused_reason(
    model: KinematicModel, costs: Mapping[str, CostBase], grad: bool, tracking: bool
) -> str | None:
    """Why the fused rollout cannot serve a rollout now (``None``: it can): a gradient or scale
    tracking, a device other than the CPU, another control space, a cost it does not compute
    (a custom one, two of one kind, a pose metric, self-collision with sphere pairs, a world
    cost that does not read the link frames)."""
    if grad or tracking:
        return "a gradient or scale tracking"
    if model.tensor_args.device.type != "cpu":
        return "not a CPU device"
    if model.step_mode is not StepMode.ACCELERATION:
        return f"control space {model.step_mode.value}"
    if model.tensor_args.dtype not in (torch.float32, torch.float64):
        return f"dtype {model.tensor_args.dtype}"
    if model.kinematics.backend != "warp":
        return "the torch kinematics backend"
    seen: set[type] = set()
    for name, cost in costs.items():
        if not cost.enabled:
            continue
        kind = type(cost)
        if kind not in _SUPPORTED or kind in seen:
            return f"cost {name!r} ({kind.__name__})"
        seen.add(kind)
        if _joint_count_differs(cost, model.d_action):  # the modular path says so clearly
            return f"cost {name!r} configured for another joint count"
        if isinstance(cost, PoseCost) and cost.metric is not None:
            return "a pose cost metric"
        if isinstance(cost, SelfCollisionCost) and cost.model is not None:
            return "self-collision"
        if isinstance(cost, PrimitiveCollisionCost):
            world = cost.world_collision
            if world is not None and world.num_enabled and not cost.reads_frames(model.kinematics):
                return "a world cost that reads the spheres"
    return None


class FusedRollout:
    """The constants of the fused rollout built from a rollout's costs (rebuilt when a cost's
    configuration or the horizon changes) and the per-batch buffers."""

    def __init__(self, model: KinematicModel) -> None:
        self.model = model
        self._key: tuple | None = None
        self._buffers: dict[tuple, Any] = {}
        #: counts the rebuilds of the constants (recorded launches read the current ones)
        self._version = 0
        #: recorded launches by what their arguments hold, then by row chunk (rollout)
        self._recorded: dict[tuple, dict[tuple[int, int], list]] = {}

    # constants -------------------------------------------------------------------------------
    def _constants(self, costs: Mapping[str, CostBase], horizon: int) -> dict[str, Any]:
        key = (
            horizon,
            tuple(
                (name, id(cost), id(cost.config), cost.config.revision, cost.enabled)
                for name, cost in costs.items()
            ),
        )
        if key == self._key:
            return self._consts
        model = self.model
        kw = model.tensor_args.as_kwargs()
        dof = model.d_action
        ones = torch.ones(dof, **kw)
        vectors = torch.zeros(6, dof, **kw)
        vectors[mrk.SMOOTH_WEIGHTS] = 1.0
        scalars = torch.zeros(mrk.NUM_SCALARS, **kw)
        scalars[mrk.STOP_N] = 1.0
        schedules = torch.zeros(2, horizon, **kw)
        lower = torch.zeros(4, dof, **kw)
        upper = torch.zeros(4, dof, **kw)
        weights = torch.zeros(2, 4, **kw)
        names: dict[str, str] = {}  # term -> cost name
        stop_first = horizon
        for name, cost in costs.items():
            if not cost.enabled:
                continue
            term = next((t for t, c in _JOINT_CLASSES.items() if isinstance(cost, c)), None)
            if term is None:
                continue
            names[term] = name
            c = cost.config
            if isinstance(cost, BoundCost):
                p = cost._params
                lower, upper = p.lower, p.upper
                weights = torch.stack((p.quad, p.lin))
            elif isinstance(cost, SmoothnessCost):
                scalars[mrk.SMOOTH_ACC] = c.acceleration_weight * c.weight
                scalars[mrk.SMOOTH_JERK] = c.jerk_weight * c.weight
                vectors[mrk.SMOOTH_WEIGHTS] = _weights(c.joint_weights, ones)
            elif isinstance(cost, StopCost):
                stop_first = horizon - min(c.n_steps, horizon)
                scalars[mrk.STOP_N] = float(c.n_steps)
                scalars[mrk.STOP_WINDOW] = c.weight * c.velocity_weight
                scalars[mrk.STOP_TERMINAL_V] = c.weight * c.terminal_velocity_weight
                scalars[mrk.STOP_TERMINAL_A] = c.weight * c.terminal_acceleration_weight
                vectors[mrk.STOP_MAX_VELOCITY] = c.max_velocity.expand(dof)
            elif isinstance(cost, NullSpaceCost):
                scalars[mrk.NULL_W] = c.weight
                vectors[mrk.NULL_RETRACT] = c.retract_config
                vectors[mrk.NULL_WEIGHTS] = _weights(c.cspace_weights, ones)
            elif isinstance(cost, CSpaceGoalCost):
                schedule = cost._schedule(horizon)
                if not cost._running:  # the modular cost pads zeros before the last step
                    schedule = torch.nn.functional.pad(schedule[-1:], (horizon - 1, 0))
                schedules[0] = schedule
                vectors[mrk.CSPACE_WEIGHTS] = _weights(c.cspace_weights, ones)
            elif isinstance(cost, TrackingCost):
                schedules[1] = cost._schedule(horizon)
                scalars[mrk.TRACK_P] = c.position_weight
                scalars[mrk.TRACK_V] = c.velocity_weight
                vectors[mrk.TRACK_WEIGHTS] = _weights(c.cspace_weights, ones)
        self._consts = {
            "lower": lower.contiguous(),
            "upper": upper.contiguous(),
            "weights": weights.contiguous(),
            "vectors": vectors,
            "scalars": scalars,
            "schedules": schedules,
            "stop_first": stop_first,
            "names": names,
            "terms": [t for t in mrk.TERMS if t in names],
            "placeholder": torch.zeros(1, dof, **kw),
        }
        self._key = key
        self._version += 1
        return self._consts

    def _buffer(self, key: tuple, make: Callable[[], Any]) -> Any:
        value = self._buffers.get(key)
        if value is None:
            if len(self._buffers) >= 16:
                self._buffers.clear()
            value = self._buffers[key] = make()
        return value

    # the rollout -----------------------------------------------------------------------------
    def rollout(
        self,
        act_seq: torch.Tensor,
        start_state: JointState,
        problem_index: torch.Tensor,
        goal: Goal,
        reference: JointState | None,
        costs: Mapping[str, CostBase],
        share: bool,
        beside: Callable[[], Any] | None = None,
    ) -> tuple[KinematicModelState, dict[str, torch.Tensor], torch.Tensor]:
        """The state of ``act_seq [B, H, D]`` (joint states and link frames, no spheres),
        every cost term ``[B, H]`` the modular path would give, in the order of ``costs``, and
        their sum ``[B, H]`` (the terms are views of one buffer, rewritten by the next call).
        ``problem_index [B]``: each row's start state (and goal, when there are several);
        ``share``: split the rows with the helper thread (module docstring); ``beside``: more
        work for the calling thread meanwhile (run once).

        A row chunk's joint, kinematics and pose launches are recorded once and replayed
        (:func:`~curobo_lite.kernels.launch.recorded_cpu_launches`) while every tensor they
        read or write keeps its address, shape and strides (``launch_key``), i.e. while
        what their recorded arguments hold is what fresh ones would hold."""
        model = self.model
        batch, horizon, dof = act_seq.shape
        consts = self._constants(costs, horizon)
        names, joint_terms = consts["names"], consts["terms"]
        out = self._buffer(("state", act_seq.shape), lambda: StepBuffers.empty_like(act_seq))
        # the c-space goal and tracking terms only while there is a goal state / a reference
        live = [
            t
            for t in joint_terms
            if (t != "cspace" or goal.goal_state is not None)
            and (t != "tracking" or reference is not None)
        ]
        pose_cost = _pose_cost(costs, goal)
        world_cost = self._world_cost(costs)
        # one buffer for every term, whose sum is the costs: the joint terms, pose, world
        count = len(live) + (pose_cost is not None) + (world_cost is not None)
        terms = self._buffer(
            ("terms", count, batch, horizon), lambda: act_seq.new_empty(count, batch, horizon)
        )
        slots = tuple(live.index(t) if t in live else -1 for t in mrk.TERMS)
        slot_array = self._buffer(("slots", slots), lambda: torch.tensor(slots, dtype=torch.int32))
        placeholder = consts["placeholder"]
        goal_state = goal.goal_state.position if "cspace" in live else placeholder
        ref_position = reference.position[0] if "tracking" in live else placeholder
        ref_velocity = reference.velocity[0] if "tracking" in live else placeholder
        if act_seq.stride(-1) != 1:
            act_seq = act_seq.contiguous()
        # joint vectors: the joint axis made contiguous
        starts = [_rows(t) for t in (start_state.position, start_state.velocity)]
        starts.append(_rows(start_state.acceleration))
        targets = [_rows(t) for t in (goal_state, ref_position, ref_velocity)]
        kinematics = model.kinematics
        frames = model.frame_buffers(batch * horizon, spheres=False)
        state_buffers = (out.position, out.velocity, out.acceleration, out.jerk)
        state = KinematicModelState(
            JointState(*state_buffers, joint_names=model.joint_names),
            kinematics.outputs_state(frames, (batch, horizon), spheres=False),
        )
        slot = len(live)
        pose = None
        if pose_cost is not None:
            pose = self._pose_launch(pose_cost, goal, problem_index, state, terms[slot])
            slot += 1
        world = None
        if world_cost is not None:
            world = (
                world_cost[0],
                world_cost[1].frames_pass(state.kinematics, kinematics, out=terms[slot]),
            )
        key = (
            self._version,
            launch_key(act_seq, problem_index, model.traj_dt, slot_array, terms),
            launch_key(*starts, *targets, *state_buffers, *vars(frames).values()),
            None if pose is None else pose[1],
        )
        recorded = self._recorded.get(key)
        if recorded is None:
            if len(self._recorded) >= 8:
                self._recorded.clear()
            recorded = self._recorded[key] = {}
        vector = joint_vector(dof, act_seq.dtype)
        device = wp.device_from_torch(act_seq.device)

        def record(b0: int, b1: int) -> list:
            """The chunk's launches, recorded: the joint kernel, forward kinematics, pose."""
            inputs = [as_warp(act_seq[b0:b1], vector), *(as_warp(t, vector) for t in starts)]
            inputs += [as_warp(problem_index[b0:b1]), 1]  # use_idx: rows read their start
            inputs += [as_warp(model.traj_dt), as_warp(consts["lower"], vector)]
            inputs += [as_warp(consts["upper"], vector), as_warp(consts["weights"])]
            inputs += [as_warp(consts["vectors"], vector), as_warp(consts["scalars"])]
            inputs += [as_warp(consts["schedules"]), consts["stop_first"]]
            inputs += [*(as_warp(t, vector) for t in targets), as_warp(slot_array)]
            outputs = [as_warp(t[b0:b1], vector) for t in state_buffers]
            launches = [
                wp.launch(
                    mrk.joint_rollout_kernel(dof, act_seq.dtype),
                    dim=b1 - b0,
                    inputs=[*inputs, *outputs, as_warp(terms[:, b0:b1])],
                    device=device,
                    record_cmd=True,
                )
            ]
            flat_position = out.position.view(batch * horizon, dof)
            with recorded_cpu_launches() as kinematics_launches:
                configs = (b0 * horizon, b1 * horizon)
                kinematics.forward_rows(flat_position, frames, configs, spheres=False)
            launches += kinematics_launches
            if pose is not None:
                launches.append(pose[0](b0, b1))
            return launches

        def run(b0: int, b1: int) -> None:
            launches = recorded.get((b0, b1))
            if launches is None:
                launches = recorded[(b0, b1)] = record(b0, b1)
            for launch in launches:
                launch.launch()
            if world is not None:
                world[1].run(b0 * horizon, b1 * horizon)

        with serial_cpu_launches():
            if share and batch * horizon >= OVERLAP_MIN_CONFIGS:
                shared(
                    [SharedPass(RowPass(batch, run, lambda: None), PIECES, SHARES)],
                    beside or _nothing,
                )
            else:
                if beside is not None:
                    beside()
                run(0, batch)
        values = {names[t]: terms[k] for k, t in enumerate(live)}
        if pose is not None:
            values[pose_cost[0]] = terms[len(live)]
        if world is not None:
            values[world[0]] = world[1].result()
        total = terms.sum(0) if count else act_seq.new_zeros(batch, horizon)
        return state, {name: values[name] for name in costs if name in values}, total

    def _pose_launch(
        self,
        pose_cost: tuple[str, PoseCost],
        goal: Goal,
        problem_index: torch.Tensor,
        state: KinematicModelState,
        value: torch.Tensor,
    ) -> tuple[Callable[[int, int], Any], tuple]:
        """``(record(b0, b1) -> Launch, key)`` of the pose cost ``pose_cost = (name, cost)`` over
        particle rows ``b0:b1``: the pose kernel on the end-effector frames, writing ``value
        [B, H]``; ``key``: what the recorded launches hold besides the frames and ``value``
        (the goal, the schedule, the kernel's codes)."""
        _, cost = pose_cost
        position, quaternion = state.ee_position, state.ee_quaternion
        batch, horizon = position.shape[:2]
        schedule, first_step, position_norm, rotation_error, eps = cost.kernel_constants(horizon)
        goal_position, goal_quaternion = goal.goal_pose.position, goal.goal_pose.quaternion
        several = goal_position.shape[0] != 1
        if several:  # one goal row per particle row, as the modular path selects them
            goal_position = goal_position[problem_index]
            goal_quaternion = goal_quaternion[problem_index]
        goal_position, goal_quaternion = goal_position.contiguous(), goal_quaternion.contiguous()
        codes = [
            first_step,
            -1 if position_norm is None else pck.POSITION_NORM_CODES[position_norm],
            -1 if rotation_error is None else pck.ROTATION_ERROR_CODES[rotation_error],
            as_warp(eps),
        ]
        kernel = pck._kernel(position.dtype)
        device = wp.device_from_torch(position.device)

        def record(b0: int, b1: int):
            rows = slice(b0, b1)
            goals = [goal_position, goal_quaternion]
            if several:  # the rows' own goals
                goals = [goal_position[rows], goal_quaternion[rows]]
            inputs = [position[rows], quaternion[rows], *goals, schedule]
            return wp.launch(
                kernel,
                dim=b1 - b0,
                inputs=[*(as_warp(t) for t in inputs), *codes, as_warp(value[rows])],
                device=device,
                record_cmd=True,
            )

        key = (launch_key(goal_position, goal_quaternion, schedule, eps, value), *codes[:3])
        return record, key

    def _world_cost(
        self, costs: Mapping[str, CostBase]
    ) -> tuple[str, PrimitiveCollisionCost] | None:
        """The world cost read from the link frames, or ``None`` when the world has no enabled
        obstacle (the modular path then gives no term)."""
        kinematics = self.model.kinematics
        for name, cost in costs.items():
            if isinstance(cost, PrimitiveCollisionCost) and cost.reads_frames(kinematics):
                return name, cost
        return None


def _pose_cost(costs: Mapping[str, CostBase], goal: Goal) -> tuple[str, PoseCost] | None:
    """The enabled pose cost while there is a pose goal (else the modular path gives no
    pose term)."""
    if goal.goal_pose is None:
        return None
    for name, cost in costs.items():
        if cost.enabled and isinstance(cost, PoseCost):
            return name, cost
    return None


def _joint_count_differs(cost: CostBase, dof: int) -> bool:
    """Whether a per-joint vector of ``cost``'s configuration is not ``[dof]`` (a stop cost's
    ``max_velocity`` may be one number; the bound cost's limits are ``[4, dof]``)."""
    if isinstance(cost, BoundCost):
        return cost._params.lower.shape[-1] != dof
    config = cost.config
    for field in ("joint_weights", "cspace_weights", "max_velocity", "retract_config"):
        value = getattr(config, field, None)
        if isinstance(value, torch.Tensor) and value.numel() != dof:
            if not (field == "max_velocity" and value.numel() == 1):
                return True
    return False


def _weights(joint_weights: torch.Tensor | None, ones: torch.Tensor) -> torch.Tensor:
    """Per-joint weights ``[D]`` of a cost (all ones when it has none)."""
    return ones if joint_weights is None else joint_weights


def _nothing() -> None:
    return None


def _rows(t: torch.Tensor) -> torch.Tensor:
    """``t`` with its last (joint) axis contiguous, as a kernel reads joint vectors."""
    return t if t.stride(-1) == 1 else t.contiguous()
