"""Kinematic dynamics model: action sequences to joint-state trajectories plus forward kinematics.

Configured from the ``model`` section of a task file::

    model:
      horizon: 30                        # H, steps including the start state
      control_space: ACCELERATION        # POSITION | VELOCITY | ACCELERATION | JERK
      state_finite_difference_mode: BACKWARD   # POSITION only: BACKWARD | CENTRAL
      teleport_mode: false               # POSITION only: position = action (IK)
      dt_traj_params: {base_dt: 0.02, base_ratio: 1.0, max_dt: 0.02}
      vel_scale: 1.0                     # scales the robot's velocity/acceleration/jerk limits
      state_filter_cfg:
        enable: true
        filter_coeff: {position: 1.0, velocity: 1.0, acceleration: 1.0, jerk: 1.0}

The action at step ``h-1`` drives step ``h`` (SPEC §2); the model owns preallocated output buffers
reused across calls (resized when the batch changes), so a returned trajectory is overwritten by
the next call: ``clone()`` what must outlive it.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

import torch

from curobo_lite.kernels import StepBuffers, StepMode, resolve_step_mode, tensor_step
from curobo_lite.robot import Kinematics, KinematicsBuffers, KinematicsState, RobotConfig
from curobo_lite.rollout.cost.base import as_bool
from curobo_lite.types import JointState, StateType, TensorDeviceType, check_dtype_device
from curobo_lite.types.base import Forwarded
from curobo_lite.types.checks import excerpt, parse_number, received
from curobo_lite.types.errors import InputTypeError, InputValueError


def _check_keys(section: str, data: Any, allowed: tuple[str, ...]) -> dict:
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise InputValueError(f"{section}: expected a mapping, {received(data)}")
    unknown = sorted(set(data) - set(allowed))
    if unknown:
        raise InputValueError(
            f"{section}: unknown key(s) {unknown}; expected some of {list(allowed)}"
        )
    return data


def _positive(section: str, name: str, value: Any) -> float:
    return parse_number(value, f"{section}.{name}", low=0.0, low_open=True)


_DT = "model.dt_traj_params"
_FILTER = "model.state_filter_cfg"
#: The longest horizon a task may ask for (steps); longer ones are an error, not an allocation.
MAX_HORIZON = 100_000


@dataclass
class TimeTrajConfig:
    """Per-step ``traj_dt [H]``: ``base_dt`` for the first ``base_ratio`` of the horizon, then a
    linear blend up to ``max_dt`` at the last step (a coarser far future, as in cuRobo/STORM)."""

    base_dt: float = 0.02
    base_ratio: float = 1.0
    max_dt: float | None = None  # None: same as base_dt (a uniform schedule)

    def __post_init__(self) -> None:
        self.base_dt = _positive(_DT, "base_dt", self.base_dt)
        if self.max_dt is None:
            self.max_dt = self.base_dt
        self.max_dt = _positive(_DT, "max_dt", self.max_dt)
        self.base_ratio = parse_number(self.base_ratio, f"{_DT}.base_ratio", low=0.0, high=1.0)
        if self.max_dt < self.base_dt:
            raise InputValueError(
                f"{_DT}.max_dt: expected >= base_dt ({self.base_dt}), received {self.max_dt}"
            )

    @classmethod
    def from_dict(cls, data: dict | None) -> TimeTrajConfig:
        data = _check_keys(_DT, data, ("base_dt", "base_ratio", "max_dt"))
        return cls(**data)

    def get_dt_array(self, horizon: int, tensor_args: TensorDeviceType) -> torch.Tensor:
        """``[H]`` seconds per step; entry 0 (unused by the kernels) repeats ``base_dt``."""
        n_base = max(1, min(horizon, int(round(self.base_ratio * horizon))))
        dt = torch.full((horizon,), self.base_dt, **tensor_args.as_kwargs())
        n_blend = horizon - n_base
        if n_blend > 0:
            dt[n_base:] = torch.linspace(
                self.base_dt, self.max_dt, n_blend + 1, **tensor_args.as_kwargs()
            )[1:]
        return dt


@dataclass
class FilterCoeff:
    """Exponential-smoothing weight of the new sample per quantity (1 = no filtering)."""

    position: float = 1.0
    velocity: float = 1.0
    acceleration: float = 1.0
    jerk: float = 1.0

    def __post_init__(self) -> None:
        for f in fields(self):
            where = f"{_FILTER}.filter_coeff.{f.name}"
            value = parse_number(getattr(self, f.name), where, low=0.0, high=1.0, low_open=True)
            setattr(self, f.name, value)


@dataclass
class JointStateFilterConfig:
    enable: bool = True
    filter_coeff: FilterCoeff = field(default_factory=FilterCoeff)

    def __post_init__(self) -> None:
        self.enable = as_bool(_FILTER, "enable", self.enable)

    @classmethod
    def from_dict(cls, data: dict | None) -> JointStateFilterConfig:
        data = dict(_check_keys(_FILTER, data, ("enable", "filter_coeff")))
        coeff = _check_keys(
            f"{_FILTER}.filter_coeff",
            data.pop("filter_coeff", None),
            tuple(f.name for f in fields(FilterCoeff)),
        )
        return cls(filter_coeff=FilterCoeff(**coeff), **data)


class JointStateFilter:
    """Exponential filter of measured joint states: ``s <- c * new + (1 - c) * s``.

    The first sample after construction or :meth:`reset` passes through unfiltered.
    """

    def __init__(self, config: JointStateFilterConfig) -> None:
        self.config = config
        self._state: JointState | None = None

    def reset(self) -> None:
        self._state = None

    def filter_joint_state(self, raw_state: JointState) -> JointState:
        """Filter ``raw_state`` (any batch shape) and return the filtered state (a new object)."""
        if not self.config.enable:
            return raw_state.clone()
        if self._state is None or self._state.shape != raw_state.shape:
            self._state = raw_state.detach().clone()
            return self._state.clone()
        c = self.config.filter_coeff
        for name in ("position", "velocity", "acceleration", "jerk"):
            coeff = getattr(c, name)
            getattr(self._state, name).mul_(1.0 - coeff).add_(
                getattr(raw_state, name).detach(), alpha=coeff
            )
        return self._state.clone()


_MODEL_KEYS = (
    "horizon",
    "control_space",
    "state_finite_difference_mode",
    "teleport_mode",
    "dt_traj_params",
    "vel_scale",
    "state_filter_cfg",
)


@dataclass
class KinematicModelConfig:
    """Configuration of :class:`KinematicModel`; build with :meth:`from_dict`."""

    robot_config: RobotConfig
    horizon: int = 30
    control_space: StateType = StateType.ACCELERATION
    state_finite_difference_mode: str = "BACKWARD"
    teleport_mode: bool = False
    dt_traj_params: TimeTrajConfig = field(default_factory=TimeTrajConfig)
    vel_scale: float = 1.0
    state_filter_cfg: JointStateFilterConfig = field(default_factory=JointStateFilterConfig)
    tensor_args: TensorDeviceType = field(default_factory=TensorDeviceType)

    def __post_init__(self) -> None:
        self.control_space = StateType.parse(self.control_space)
        mode = str(self.state_finite_difference_mode).upper()
        if mode not in ("BACKWARD", "CENTRAL"):
            raise InputValueError(
                "model.state_finite_difference_mode: expected BACKWARD or CENTRAL, "
                f"received {excerpt(self.state_finite_difference_mode)}"
            )
        self.state_finite_difference_mode = mode
        if self.teleport_mode and self.control_space is not StateType.POSITION:
            raise InputValueError(
                "model.teleport_mode: only valid with control_space POSITION, received "
                f"control_space {self.control_space.value}"
            )
        self.vel_scale = parse_number(
            self.vel_scale, "model.vel_scale", low=0.0, high=1.0, low_open=True
        )
        self.horizon = parse_number(self.horizon, "model.horizon", integer=True, high=MAX_HORIZON)
        minimum = self.step_mode.min_horizon
        if self.horizon < minimum:
            raise InputValueError(
                f"model.horizon: {self.step_mode.value} needs at least {minimum} steps, "
                f"received {self.horizon}"
            )

    @property
    def step_mode(self) -> StepMode:
        fd = "TELEPORT" if self.teleport_mode else self.state_finite_difference_mode
        return resolve_step_mode(self.control_space, fd)

    @classmethod
    def from_dict(
        cls,
        model_dict: dict,
        robot_config: RobotConfig,
        tensor_args: TensorDeviceType | None = None,
    ) -> KinematicModelConfig:
        """Build from a task file's ``model`` section (unknown keys are an error)."""
        data = dict(_check_keys("model", model_dict, _MODEL_KEYS))
        tensor_args = tensor_args or robot_config.tensor_args
        if tensor_args != robot_config.tensor_args:
            robot_config = robot_config.to(tensor_args)
        data["dt_traj_params"] = TimeTrajConfig.from_dict(data.get("dt_traj_params"))
        data["state_filter_cfg"] = JointStateFilterConfig.from_dict(data.get("state_filter_cfg"))
        return cls(robot_config=robot_config, tensor_args=tensor_args, **data)


@dataclass
class KinematicModelState:
    """A rolled-out batch: joint states ``[B, H, D]`` and the kinematics along them.

    Attributes:
        state_seq: :class:`JointState` with ``[B, H, D]`` fields.
        kinematics: :class:`KinematicsState` with ``ee_position [B, H, 3]``,
            ``ee_quaternion [B, H, 4]``, ``link_position [B, H, L, 3]``, ...
    """

    state_seq: JointState
    kinematics: KinematicsState
    ee_position = Forwarded[torch.Tensor]("kinematics")
    ee_quaternion = Forwarded[torch.Tensor]("kinematics")

    def __repr__(self) -> str:
        return f"KinematicModelState(state_seq={self.state_seq!r}, kinematics={self.kinematics!r})"


class KinematicModel:
    """Integrates action sequences with the Warp step kernels and runs forward kinematics.

    Attributes:
        action_horizon: ``H``: one action per step (the last is unused by integration modes).
        d_action: ``D``.
        traj_dt: ``[H]`` seconds per step.
        action_bound_lows, action_bound_highs: ``[D]`` bounds on the action in its control space.
        retract_config: ``[D]``.
    """

    def __init__(self, config: KinematicModelConfig) -> None:
        self.config = config
        self.tensor_args = config.tensor_args
        self.robot_config = config.robot_config
        self.kinematics = Kinematics(self.robot_config, self.tensor_args)
        self.joint_names = list(self.robot_config.joint_names)
        self.d_action = self.robot_config.dof
        self.horizon = config.horizon
        self.step_mode = config.step_mode
        self.state_filter = JointStateFilter(config.state_filter_cfg)
        self.traj_dt = config.dt_traj_params.get_dt_array(self.horizon, self.tensor_args)
        # rollouts ([B, H, D]) and robot commands ([P, H, D], P << B) keep separate buffers, so
        # alternating MPC calls neither reallocate nor overwrite each other's trajectories
        self._buffers: StepBuffers | None = None
        self._teleport_zeros: torch.Tensor | None = None
        self._checked_index: dict[int, tuple[torch.Tensor, int]] = {}  # id -> (index, version)
        self._command_buffers: StepBuffers | None = None
        self._fk_buffers: dict[tuple[int, bool], KinematicsBuffers] = {}
        self._set_action_bounds()

    # configuration -----------------------------------------------------------------------------
    @property
    def control_space(self) -> StateType:
        return self.config.control_space

    @property
    def action_horizon(self) -> int:
        return self.horizon

    @property
    def dt(self) -> float:
        return float(self.config.dt_traj_params.base_dt)

    @property
    def retract_config(self) -> torch.Tensor:
        return self.robot_config.retract_config

    def _set_action_bounds(self) -> None:
        limits = self.robot_config.joint_limits
        scale = self.config.vel_scale
        bounds = {
            StateType.POSITION: limits.position,
            StateType.VELOCITY: limits.velocity * scale,
            StateType.ACCELERATION: limits.acceleration * scale,
            StateType.JERK: limits.jerk * scale,
        }[self.control_space]
        self.action_bound_lows = bounds[0].clone()
        self.action_bound_highs = bounds[1].clone()

    @property
    def init_action_mean(self) -> torch.Tensor:
        """``[H, D]`` neutral action: hold the retract pose (POSITION) or zero (derivatives)."""
        if self.control_space is StateType.POSITION:
            return self.retract_config.expand(self.horizon, -1).clone()
        return torch.zeros(self.horizon, self.d_action, **self.tensor_args.as_kwargs())

    def update_traj_dt(
        self,
        dt: float | torch.Tensor,
        base_dt: float | None = None,
        max_dt: float | None = None,
        base_ratio: float | None = None,
    ) -> None:
        """Set a new schedule: a tensor ``[H]`` directly, or a scalar ``dt`` (uniform) optionally
        overridden by ``base_dt``/``max_dt``/``base_ratio`` of the blended schedule."""
        if isinstance(dt, torch.Tensor) and dt.ndim == 1:
            if dt.shape != (self.horizon,):
                raise InputValueError(
                    f"dt: expected shape [{self.horizon}] or a scalar, received {tuple(dt.shape)}"
                )
            if not bool(torch.all(dt[1:] > 0)) or not bool(torch.all(torch.isfinite(dt))):
                raise InputValueError(
                    f"dt: expected positive finite entries, received {dt.tolist()}"
                )
            self.traj_dt = dt.to(**self.tensor_args.as_kwargs()).clone()
            return
        value = float(dt)
        schedule = TimeTrajConfig(
            base_dt=base_dt if base_dt is not None else value,
            base_ratio=base_ratio if base_ratio is not None else 1.0,
            max_dt=max_dt if max_dt is not None else max(value, base_dt or value),
        )
        self.config.dt_traj_params = schedule
        self.traj_dt = schedule.get_dt_array(self.horizon, self.tensor_args)

    # rollouts ------------------------------------------------------------------------------------
    def _check_start_state(self, start_state: JointState) -> None:
        if not isinstance(start_state, JointState):
            raise InputTypeError(
                f"start_state: expected a JointState, received {type(start_state).__name__}"
            )
        if start_state.position.ndim != 2 or start_state.dof != self.d_action:
            raise InputValueError(
                f"start_state: expected position shape [B, {self.d_action}], received "
                f"{tuple(start_state.position.shape)}"
            )

    @staticmethod
    def _fitted(buffers: StepBuffers | None, act_seq: torch.Tensor) -> StepBuffers:
        """``buffers`` when they have ``act_seq``'s shape ``[B, H, D]``, else new ones (the dtype
        and device are those of the model, checked on the action)."""
        if buffers is None or buffers.position.shape != act_seq.shape:
            return StepBuffers.empty_like(act_seq)
        return buffers

    def _step_buffers(self, act_seq: torch.Tensor) -> StepBuffers:
        self._buffers = self._fitted(self._buffers, act_seq)
        return self._buffers

    def get_state_from_action(
        self,
        start_state: JointState,
        act_seq: torch.Tensor,
        state_idx: torch.Tensor | None = None,
    ) -> JointState:
        """Integrate ``act_seq [B, H, D]`` from ``start_state`` (``[B, D]``, or ``[S, D]`` with
        ``state_idx [B]``) into a :class:`JointState` with ``[B, H, D]`` fields (views of the
        model's rollout buffers)."""
        self._check_rollout_inputs(start_state, act_seq)
        return self._integrate(start_state, act_seq, state_idx, self._step_buffers(act_seq))

    def _check_rollout_inputs(self, start_state: JointState, act_seq: torch.Tensor) -> None:
        """Raise on a start state that is not ``[B, D]`` or an action that is not ``[B, H, D]``
        in the model's dtype and on its device."""
        self._check_start_state(start_state)
        if not isinstance(act_seq, torch.Tensor) or act_seq.ndim != 3:
            raise InputValueError(
                f"act_seq: expected a tensor [B, {self.horizon}, {self.d_action}], received "
                f"{tuple(act_seq.shape) if isinstance(act_seq, torch.Tensor) else type(act_seq)}"
            )
        if act_seq.shape[1:] != (self.horizon, self.d_action):
            raise InputValueError(
                f"act_seq: expected shape [B, {self.horizon}, {self.d_action}], received "
                f"{tuple(act_seq.shape)}"
            )
        check_dtype_device("act_seq", act_seq, self.tensor_args.dtype, self.tensor_args.device)

    def _integrate(
        self,
        start_state: JointState,
        act_seq: torch.Tensor,
        state_idx: torch.Tensor | None,
        out: StepBuffers,
    ) -> JointState:
        """The step kernel on checked inputs, writing ``[B, H, D]`` trajectories into ``out``.

        ``state_idx``'s range is checked on the host once per index tensor (the rollout passes
        the same cached one every call), so the steady-state loop has no device sync.

        Teleport mode (``x = u``, every derivative zero) launches nothing: the position is the
        action itself and the derivatives one zero buffer (the IK's rollout, where the kernel
        and its adjoint were a tenth of an iteration)."""
        if self.config.teleport_mode:
            zeros = self._teleport_zeros
            if zeros is None or zeros.shape != act_seq.shape:
                zeros = self._teleport_zeros = torch.zeros_like(act_seq).detach()
            return JointState(act_seq, zeros, zeros, zeros, joint_names=self.joint_names)
        seen = None if state_idx is None else self._checked_index.get(id(state_idx))
        check_index = state_idx is not None and not (
            seen is not None and seen[0] is state_idx and seen[1] == state_idx._version
        )
        position, velocity, acceleration, jerk = tensor_step(
            act_seq,
            start_state.position,
            start_state.velocity,
            start_state.acceleration,
            self.traj_dt,
            self.step_mode,
            start_idx=state_idx,
            out=out,
            check_index=check_index,
        )
        if check_index:
            if len(self._checked_index) >= 8:
                self._checked_index.clear()
            self._checked_index[id(state_idx)] = (state_idx, state_idx._version)
        return JointState(position, velocity, acceleration, jerk, joint_names=self.joint_names)

    def forward(
        self,
        start_state: JointState,
        act_seq: torch.Tensor,
        start_state_idx: torch.Tensor | None = None,
        spheres: bool = True,
    ) -> KinematicModelState:
        """Roll out ``act_seq [B, H, D]`` and run forward kinematics on every step (with the
        robot's collision spheres unless ``spheres`` is false).

        Without a gradient to take (grad mode off, or actions and start state not requiring
        grad) the frames, like the states, are written into buffers this model keeps per batch
        size and rewrites on the next such call: copy what you keep."""
        state_seq = self.get_state_from_action(start_state, act_seq, start_state_idx)
        return KinematicModelState(state_seq, self.frames(state_seq.position, spheres))

    def frames(self, position: torch.Tensor, spheres: bool = True) -> KinematicsState:
        """Forward kinematics of rolled-out positions ``[B, H, D]`` (:meth:`forward`'s second
        half): without a gradient to take, into buffers kept per batch size."""
        if torch.is_grad_enabled() and position.requires_grad:
            return self.kinematics.forward(position, spheres)
        # no gradient: the frames go into buffers kept per batch size, like the states
        out = self.frame_buffers(position.numel() // self.d_action, spheres)
        return self.kinematics.forward(position, spheres, out=out)

    def frame_buffers(self, n: int, spheres: bool = True) -> KinematicsBuffers:
        """The kept forward-kinematics buffers for ``n`` configurations (:meth:`frames`)."""
        spheres = bool(spheres) and self.kinematics.num_spheres > 0
        out = self._fk_buffers.get((n, spheres))
        if out is None:
            if len(self._fk_buffers) >= 4:
                self._fk_buffers.clear()
            out = self._fk_buffers[(n, spheres)] = self.kinematics.allocate_outputs(n, spheres)
        return out

    __call__ = forward

    def get_next_state(
        self, curr_state: JointState, act: torch.Tensor, dt: float | None = None
    ) -> JointState:
        """One step of the control space from ``curr_state [B, D]`` with action ``act [B, D]``."""
        dt = self.dt if dt is None else float(dt)
        act_seq = torch.stack((act, act), dim=1)  # H = 2: act drives step 1
        step_mode = (
            StepMode.POSITION_BACKWARD
            if self.step_mode is StepMode.POSITION_CENTRAL
            else (self.step_mode)
        )
        position, velocity, acceleration, jerk = tensor_step(
            act_seq,
            curr_state.position,
            curr_state.velocity,
            curr_state.acceleration,
            dt,
            step_mode,
        )
        return JointState(
            position[:, 1],
            velocity[:, 1],
            acceleration[:, 1],
            jerk[:, 1],
            joint_names=self.joint_names,
        )

    def get_robot_command(
        self,
        current_state: JointState,
        act_seq: torch.Tensor,
        shift_steps: int = 1,
        state_idx: torch.Tensor | None = None,
    ) -> JointState:
        """The commanded state ``shift_steps`` ahead along the rollout of ``act_seq [B, H, D]``
        from ``current_state`` (a detached copy, ``[B, D]``).

        The trajectory is integrated into buffers kept for commands, apart from the rollout
        buffers: repeated calls with the same shape allocate only the returned copy, and a
        rollout returned by :meth:`get_state_from_action` is not overwritten."""
        if not 1 <= shift_steps < self.horizon:
            raise InputValueError(
                f"shift_steps: expected an integer in [1, {self.horizon - 1}], "
                f"received {shift_steps}"
            )
        self._check_rollout_inputs(current_state, act_seq)
        self._command_buffers = self._fitted(self._command_buffers, act_seq)
        with torch.no_grad():
            state_seq = self._integrate(current_state, act_seq, state_idx, self._command_buffers)
            return state_seq[:, shift_steps].clone()

    def filter_robot_state(self, current_state: JointState) -> JointState:
        return self.state_filter.filter_joint_state(current_state)

    def __repr__(self) -> str:
        return (
            f"KinematicModel(robot={self.robot_config.name!r}, dof={self.d_action}, "
            f"horizon={self.horizon}, mode={self.step_mode.value}, "
            f"traj_dt=[{float(self.traj_dt[1]):.3g} .. {float(self.traj_dt[-1]):.3g}] s, "
            f"device={self.tensor_args.device}, "
            f"dtype={self.tensor_args.dtype})"
        )
