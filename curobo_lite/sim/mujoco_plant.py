"""A MuJoCo physics plant for closed-loop tests: the robot as a rigid-body model, driven by a
computed-torque joint controller, among the world's obstacles. The model and its options live
in :mod:`curobo_lite.sim.mujoco_model` (re-exported here).

Control: every command (a :class:`JointState` ``[1, D]``, the state the controller should be
in ``control_dt`` later) starts a cubic Hermite segment from the current reference to the
command's position and velocity, lasting ``control_dt``, after ``command_latency`` seconds.
At every physics step (``physics_dt``, 1 kHz by default) the controller computes
``tau = ID(q, qd, qdd_ref + Kp (q_ref - q) + Kd (qd_ref - qd))`` with MuJoCo's inverse
dynamics on the *nominal* model, clips it to the effort limits and applies it to the plant,
whose masses and inertias may be scaled by ``mass_scale`` (a model error the controller does
not know about). Time is simulated: one :meth:`MujocoPlant.step` advances ``control_dt``
whatever the wall-clock time of the solver.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from curobo_lite.geom.world import WorldConfig
from curobo_lite.robot.config import RobotConfig
from curobo_lite.sim.mujoco_model import (
    OBSTACLE_BITS,
    OBSTACLE_PREFIX,
    WELD_PREFIX,
    MujocoPlantConfig,
    build_mujoco_spec,
    compile_spec,
    import_mujoco,
)
from curobo_lite.types import JointState
from curobo_lite.types.errors import InputTypeError, InputValueError

__all__ = ["ContactReport", "MujocoPlant", "MujocoPlantConfig", "build_mujoco_spec"]


@dataclass
class ContactReport:
    """Robot-obstacle contacts over one control step.

    Attributes:
        count: the largest number of simultaneous robot-obstacle contacts at any physics step.
        max_penetration: deepest penetration (m, >= 0; 0 without contact).
        pairs: ``(robot link, obstacle name)`` pairs that touched.
        object_pairs: ``(free object, obstacle name)`` pairs that touched (a held object on
            its support, or hitting something).
    """

    count: int = 0
    max_penetration: float = 0.0
    pairs: set[tuple[str, str]] = field(default_factory=set)
    object_pairs: set[tuple[str, str]] = field(default_factory=set)


# ------------------------------------------------------------------------------------------
# the plant
# ------------------------------------------------------------------------------------------
@dataclass
class _Segment:
    """Cubic Hermite reference from ``(p0, v0)`` at ``t0`` to ``(p1, v1)`` at ``t0 + duration``."""

    t0: float
    duration: float
    p0: np.ndarray
    v0: np.ndarray
    p1: np.ndarray
    v1: np.ndarray

    def __call__(self, t: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(q, qd, qdd)`` at time ``t``; after the segment the reference holds ``p1`` at rest."""
        T = self.duration
        s = (t - self.t0) / T
        if s >= 1.0 + 1e-9:
            zero = np.zeros_like(self.p1)
            return self.p1.copy(), zero, zero.copy()
        s = min(max(s, 0.0), 1.0)
        s2, s3 = s * s, s * s * s
        m0, m1 = T * self.v0, T * self.v1
        q = (
            (2 * s3 - 3 * s2 + 1) * self.p0
            + (s3 - 2 * s2 + s) * m0
            + (-2 * s3 + 3 * s2) * self.p1
            + (s3 - s2) * m1
        )
        qd = (
            (6 * s2 - 6 * s) * self.p0
            + (3 * s2 - 4 * s + 1) * m0
            + (-6 * s2 + 6 * s) * self.p1
            + (3 * s2 - 2 * s) * m1
        ) / T
        qdd = (
            (12 * s - 6) * self.p0 + (6 * s - 4) * m0 + (-12 * s + 6) * self.p1 + (6 * s - 2) * m1
        ) / (T * T)
        return q, qd, qdd


class MujocoPlant:
    """A simulated robot behind a computed-torque joint controller (see the module docs).

    It satisfies the tracker protocol of :func:`~curobo_lite.sim.run_closed_loop`:
    :attr:`state`, :meth:`step` and :meth:`reset`; :meth:`sync_world` mirrors obstacle edits.

    Args:
        robot_config: the robot (its ``dynamics`` section gives masses and torque limits).
        world: obstacles (a :class:`WorldConfig`, a world file or bundled name, or ``None``).
        config: :class:`MujocoPlantConfig` or its mapping.
        state: initial :class:`JointState` ``[1, D]`` (velocity taken, acceleration ignored);
            default: ``robot_config.retract_config`` at rest.
        free_objects: obstacles of ``world`` simulated as free bodies, for the robot to carry
            (:meth:`weld` holds one on ``weld_link``).
        weld_link: the robot link that carries them.
    """

    def __init__(
        self,
        robot_config: RobotConfig,
        world: WorldConfig | str | Mapping | None = None,
        config: MujocoPlantConfig | Mapping | None = None,
        state: JointState | None = None,
        free_objects: tuple[str, ...] = (),
        weld_link: str = "attached_object",
    ) -> None:
        self.mujoco = import_mujoco()
        self.free_objects = tuple(free_objects)
        self.weld_link = weld_link
        if not isinstance(robot_config, RobotConfig):
            raise InputTypeError(
                f"robot_config: expected a RobotConfig, received {type(robot_config).__name__}"
            )
        if config is None or isinstance(config, Mapping):
            config = MujocoPlantConfig.from_dict(config)
        self.config = config
        self.robot_config = robot_config
        self.tensor_args = robot_config.tensor_args
        self.joint_names = list(robot_config.joint_names)
        omega = 2.0 * math.pi * config.natural_frequency
        self._kp = omega * omega
        self._kd = 2.0 * config.damping_ratio * omega
        effort = robot_config.dynamics.effort_limit if robot_config.dynamics else None
        self._effort = None if effort is None else np.asarray(effort, dtype=np.float64)
        # the controller's model: nominal masses, no obstacles, no contacts or joint limits
        control_spec = build_mujoco_spec(robot_config, None, config)
        self.control_model = compile_spec(control_spec, robot_config)
        self.control_model.opt.disableflags |= int(
            self.mujoco.mjtDisableBit.mjDSBL_CONSTRAINT
        ) | int(self.mujoco.mjtDisableBit.mjDSBL_CONTACT)
        self.control_model.dof_damping[:] = 0.0
        self.control_data = self.mujoco.MjData(self.control_model)
        self._qpos_index = self._joint_addresses(self.control_model)
        self.world = WorldConfig() if world is None else WorldConfig.load(world)
        self._build_plant()
        initial = state
        if initial is None:
            initial = JointState.from_position(robot_config.retract_config[None].clone())
        self.reset(initial)

    # model ---------------------------------------------------------------------------------
    def _joint_addresses(self, model: Any) -> tuple[np.ndarray, np.ndarray]:
        qpos, dof = [], []
        for name in self.joint_names:
            jid = self.mujoco.mj_name2id(model, self.mujoco.mjtObj.mjOBJ_JOINT, name)
            qpos.append(model.jnt_qposadr[jid])
            dof.append(model.jnt_dofadr[jid])
        return np.asarray(qpos), np.asarray(dof)

    def _build_plant(self) -> None:
        """Compile the plant (robot + ``self.world``), scale its masses, index its geoms."""
        mujoco = self.mujoco
        self.spec = build_mujoco_spec(
            self.robot_config, self.world, self.config, self.free_objects, self.weld_link
        )
        model = compile_spec(self.spec, self.robot_config)
        free = {OBSTACLE_PREFIX + name for name in self.free_objects}
        robot_bodies = [
            b
            for b in range(1, model.nbody)
            if model.body_mocapid[b] < 0
            and mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, b) not in free
        ]  # every body but the world and the obstacles
        model.body_mass[robot_bodies] *= self.config.mass_scale
        model.body_inertia[robot_bodies] *= self.config.mass_scale
        self.model = model
        self.data = mujoco.MjData(model)
        self._plant_index = self._joint_addresses(model)
        self._geom_link: dict[int, str] = {}
        self._geom_obstacle: dict[int, str] = {}
        for g in range(model.ngeom):
            name = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_GEOM, g) or ""
            body = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, model.geom_bodyid[g])
            if name.startswith(OBSTACLE_PREFIX):
                self._geom_obstacle[g] = name[len(OBSTACLE_PREFIX) :]
            else:
                self._geom_link[g] = body

    def sync_world(self, world: WorldConfig | str | Mapping) -> None:
        """Mirror ``world`` into the plant: moved obstacles and enabled flags are written to the
        mocap bodies and geoms; added, removed or reshaped obstacles rebuild the model (the
        robot's state and the controller's reference are kept)."""
        world = WorldConfig.load(world)

        def shapes(w: WorldConfig) -> dict[str, tuple]:
            out = {}
            for obstacle in w:
                entry = obstacle.to_dict()
                entry.pop("pose", None)
                entry.pop("enabled", None)
                out[obstacle.name] = (obstacle.kind, repr(sorted(entry.items())))
            return out

        if shapes(world) != shapes(self.world):
            qpos, qvel, sim_time = self.data.qpos.copy(), self.data.qvel.copy(), self.data.time
            self.world = world.copy()
            self._build_plant()
            self.data.qpos[:], self.data.qvel[:], self.data.time = qpos, qvel, sim_time
            self.mujoco.mj_forward(self.model, self.data)
            return
        mujoco = self.mujoco
        for obstacle in world:
            if obstacle.name in self.free_objects:  # moved by physics, not by the world
                continue
            body = mujoco.mj_name2id(
                self.model, mujoco.mjtObj.mjOBJ_BODY, OBSTACLE_PREFIX + obstacle.name
            )
            geom = mujoco.mj_name2id(
                self.model, mujoco.mjtObj.mjOBJ_GEOM, OBSTACLE_PREFIX + obstacle.name
            )
            mocap = self.model.body_mocapid[body]
            self.data.mocap_pos[mocap] = obstacle.pose[:3]
            self.data.mocap_quat[mocap] = obstacle.pose[3:]
            bits = OBSTACLE_BITS if obstacle.enabled else (0, 0)
            self.model.geom_contype[geom], self.model.geom_conaffinity[geom] = bits
        self.world = world.copy()
        mujoco.mj_forward(self.model, self.data)

    # state ---------------------------------------------------------------------------------
    def _as_joint_state(self, qpos: np.ndarray, qvel: np.ndarray, qacc: np.ndarray) -> JointState:
        def row(values: np.ndarray) -> torch.Tensor:
            return self.tensor_args.to_device(np.asarray(values, dtype=np.float64)[None])

        return JointState(row(qpos), row(qvel), row(qacc), joint_names=self.joint_names)

    @property
    def state(self) -> JointState:
        """The measured :class:`JointState` ``[1, D]``: simulated positions and velocities; the
        acceleration is the mean over the last control step (``dv / control_dt``)."""
        qpos_adr, dof_adr = self._plant_index
        return self._as_joint_state(
            self.data.qpos[qpos_adr], self.data.qvel[dof_adr], self._measured_acceleration
        )

    @property
    def time(self) -> float:
        """Simulated seconds since :meth:`reset`."""
        return float(self.data.time)

    def reset(self, state: JointState) -> None:
        """Put the robot at ``state [1, D]`` (position, velocity), hold it there, and forget
        queued commands."""
        position, velocity = self._check_command(state, "state")
        self.mujoco.mj_resetData(self.model, self.data)
        qpos_adr, dof_adr = self._plant_index
        self.data.qpos[qpos_adr] = position
        self.data.qvel[dof_adr] = velocity
        self.mujoco.mj_forward(self.model, self.data)
        # a finished segment: the reference holds the initial position at rest
        rest = np.zeros_like(position)
        self._segment = _Segment(-1.0, 1.0, position, rest, position, rest)
        self._queue: deque[tuple[int, np.ndarray, np.ndarray]] = deque()
        self._step_index = 0
        self._measured_acceleration = np.zeros_like(position)
        self.last_contacts = ContactReport()
        self.last_torque = np.zeros_like(position)

    def _check_command(self, command: Any, name: str) -> tuple[np.ndarray, np.ndarray]:
        if not isinstance(command, JointState):
            raise InputTypeError(
                f"{name}: expected a JointState, received {type(command).__name__}"
            )
        dof = len(self.joint_names)
        if tuple(command.position.shape) != (1, dof):
            raise InputValueError(
                f"{name}: expected position shape (1, {dof}), received "
                f"{tuple(command.position.shape)}"
            )
        position = command.position.detach().cpu().double().numpy()[0].copy()
        velocity = command.velocity.detach().cpu().double().numpy()[0].copy()
        if not (np.isfinite(position).all() and np.isfinite(velocity).all()):
            raise InputValueError(f"{name}: position and velocity must be finite")
        return position, velocity

    def _reference(self, step_index: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The controller's reference ``(q, qd, qdd)`` at physics step ``step_index``, queued
        commands included (each starts its segment when its latency has passed)."""
        segment = self._segment
        for activation, target_position, target_velocity in self._queue:
            if activation > step_index:
                break
            t0 = activation * self.config.physics_dt
            start_position, start_velocity, _ = segment(t0)
            segment = _Segment(
                t0,
                self.config.control_dt,
                start_position,
                start_velocity,
                target_position,
                target_velocity,
            )
        return segment(step_index * self.config.physics_dt)

    def predicted_state(self, horizon: float) -> JointState:
        """The measured state ``horizon`` seconds ahead as the commands already sent will move
        it: ``x + (x_ref(t + horizon) - x_ref(t))`` and the same for the velocity (a Smith
        predictor; tracking errors pass through). ``[1, D]``; acceleration as measured."""
        if not horizon >= 0.0:
            raise InputValueError(f"horizon: expected seconds >= 0, received {horizon}")
        later = self._step_index + round(horizon / self.config.physics_dt)
        q_now, qd_now, _ = self._reference(self._step_index)
        q_later, qd_later, _ = self._reference(later)
        qpos_adr, dof_adr = self._plant_index
        return self._as_joint_state(
            self.data.qpos[qpos_adr] + q_later - q_now,
            self.data.qvel[dof_adr] + qd_later - qd_now,
            self._measured_acceleration,
        )

    # control -------------------------------------------------------------------------------
    def _torque(self, q: np.ndarray, qd: np.ndarray, t: float) -> np.ndarray:
        """Computed torque on the nominal model towards the reference at time ``t``."""
        q_ref, qd_ref, qdd_ref = self._segment(t)
        qdd = qdd_ref + self._kp * (q_ref - q) + self._kd * (qd_ref - qd)
        data = self.control_data
        qpos_adr, dof_adr = self._qpos_index
        data.qpos[qpos_adr] = q
        data.qvel[dof_adr] = qd
        data.qacc[dof_adr] = qdd
        self.mujoco.mj_inverse(self.control_model, data)
        tau = data.qfrc_inverse[dof_adr].copy()
        if self._effort is not None:
            tau = np.clip(tau, -self._effort, self._effort)
        return tau

    def step(self, command: JointState) -> JointState:
        """Queue ``command [1, D]`` (the desired position and velocity ``control_dt`` from now,
        followed after ``command_latency``), simulate ``control_dt`` at ``physics_dt``, record
        :attr:`last_contacts`; returns the measured :attr:`state` (a new JointState)."""
        position, velocity = self._check_command(command, "command")
        config = self.config
        self._queue.append((self._step_index + config.latency_steps, position, velocity))
        qpos_adr, dof_adr = self._plant_index
        model, data = self.model, self.data
        velocity_before = data.qvel[dof_adr].copy()
        report = ContactReport()
        for _ in range(config.substeps):
            while self._queue and self._queue[0][0] <= self._step_index:
                _, target_position, target_velocity = self._queue.popleft()
                t0 = self._step_index * config.physics_dt
                start_position, start_velocity, _ = self._segment(t0)
                self._segment = _Segment(
                    t0,
                    config.control_dt,
                    start_position,
                    start_velocity,
                    target_position,
                    target_velocity,
                )
            q, qd = data.qpos[qpos_adr], data.qvel[dof_adr]
            tau = self._torque(q, qd, self._step_index * config.physics_dt)
            data.ctrl[:] = tau
            self.mujoco.mj_step(model, data)
            self._step_index += 1
            self._collect_contacts(report)
        self.last_torque = tau
        self.last_contacts = report
        self._measured_acceleration = (data.qvel[dof_adr] - velocity_before) / config.control_dt
        return self.state

    def _collect_contacts(self, report: ContactReport) -> None:
        data = self.data
        if data.ncon == 0:
            return
        count = 0
        geoms = data.contact.geom
        dists = data.contact.dist
        for i in range(data.ncon):
            a, b = int(geoms[i, 0]), int(geoms[i, 1])
            link = self._geom_link.get(a, self._geom_link.get(b))
            obstacle = self._geom_obstacle.get(a, self._geom_obstacle.get(b))
            if link is None and a in self._geom_obstacle and b in self._geom_obstacle:
                first, second = sorted((self._geom_obstacle[a], self._geom_obstacle[b]))
                if second in self.free_objects:
                    first, second = second, first
                report.object_pairs.add((first, second))
            if link is None or obstacle is None:
                continue
            count += 1
            report.pairs.add((link, obstacle))
            report.max_penetration = max(report.max_penetration, float(-dists[i]))
        report.count = max(report.count, count)

    def weld(self, name: str, active: bool) -> None:
        """Hold the free object ``name`` on ``weld_link`` where it is now (``active``), or let
        it go: MuJoCo's weld constraint with the current relative pose, switched on or off."""
        mujoco, model, data = self.mujoco, self.model, self.data
        if name not in self.free_objects:
            raise InputValueError(
                f"name: expected one of the free objects {list(self.free_objects)}, received "
                f"{name!r}"
            )
        weld = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_EQUALITY, WELD_PREFIX + name)
        if active:
            mujoco.mj_forward(model, data)
            link, body = model.eq_obj1id[weld], model.eq_obj2id[weld]
            rotation = data.xmat[link].reshape(3, 3)
            relative = np.zeros(4)
            mujoco.mju_negQuat(relative, data.xquat[link])
            mujoco.mju_mulQuat(relative, relative, data.xquat[body].copy())
            # anchor at the object's origin; its pose in the link frame is held
            model.eq_data[weld, :3] = 0.0
            model.eq_data[weld, 3:6] = rotation.T @ (data.xpos[body] - data.xpos[link])
            model.eq_data[weld, 6:10] = relative
            model.eq_data[weld, 10] = 1.0
        data.eq_active[weld] = bool(active)

    def object_pose(self, name: str) -> np.ndarray:
        """``[7]`` position and quaternion (wxyz) of the free object ``name`` in the base frame,
        from MuJoCo's state."""
        body = self.mujoco.mj_name2id(
            self.model, self.mujoco.mjtObj.mjOBJ_BODY, OBSTACLE_PREFIX + name
        )
        return np.concatenate((self.data.xpos[body], self.data.xquat[body]))

    def contacts(self) -> ContactReport:
        """Robot-obstacle contacts of the current state (runs MuJoCo's collision detection)."""
        self.mujoco.mj_forward(self.model, self.data)
        report = ContactReport()
        self._collect_contacts(report)
        return report

    def __repr__(self) -> str:
        c = self.config
        return (
            f"MujocoPlant(robot={self.robot_config.name!r}, obstacles={len(self.world.names)}, "
            f"physics_dt={c.physics_dt:g} s, control_dt={c.control_dt:g} s, mass_scale="
            f"{c.mass_scale:g}, command_latency={c.command_latency:g} s, bodies={self.model.nbody},"
            f" geoms={self.model.ngeom})"
        )
