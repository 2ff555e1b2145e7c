"""The MuJoCo model of a robot among a world's obstacles, and the options of
:class:`~curobo_lite.sim.MujocoPlant`.

The model is generated in code (:class:`mujoco.MjSpec`) from a :class:`RobotConfig`:

- bodies and hinge/slide joints from the kinematic tree (fixed and locked joints weld their
  child), joint ranges from the position limits, motors with the ``dynamics.effort_limit``
  torque limits;
- masses and inertias from the robot file's ``dynamics`` section (a link without an entry gets
  the mass of its collision spheres at ``sphere_density``);
- collision geometry: the robot's collision spheres (radii without ``collision_sphere_buffer``,
  which is a planning margin) and the obstacles of a :class:`WorldConfig` as mocap bodies
  (cuboid, sphere, capsule, cylinder and mesh geoms; MuJoCo collides a mesh as its convex hull).
  Only robot-obstacle contacts exist: robot geoms do not collide with each other (self-collision
  is the planner's business) and bodies welded to the world (the robot base) do not collide
  with the (static) obstacles.
- held objects: obstacles named in ``free_objects`` are free bodies instead (gravity moves
  them; they touch the robot and the other obstacles), each with an inactive weld to
  ``weld_link`` (``weld/<name>``) that :meth:`MujocoPlant.weld` turns on at a grasp and off at
  the release. The links the robot file exempts from self-collision with ``weld_link`` (the
  hand and fingers) do not touch them: the weld is the grasp.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from curobo_lite.geom.world import Capsule, Cuboid, Cylinder, Mesh, Obstacle, Sphere, WorldConfig
from curobo_lite.opt.options import as_float, check_keys
from curobo_lite.robot.config import RobotConfig
from curobo_lite.robot.geometry import matrix_to_rpy_np, rpy_to_quat_np
from curobo_lite.robot.joints import JointSpec, joint_transform_np
from curobo_lite.types.checks import excerpt
from curobo_lite.types.errors import InputTypeError, InputValueError

_SECTION = "mujoco_plant"
# contype / conaffinity bits: robot geoms touch obstacle geoms only
_ROBOT_BITS = (1, 2)
OBSTACLE_BITS = (2, 1)
OBSTACLE_PREFIX = "obstacle/"
#: a free object collides with the robot and with the obstacles
FREE_OBJECT_BITS = (3, 3)
WELD_PREFIX = "weld/"


def import_mujoco():
    """The ``mujoco`` module, or an ImportError naming the ``sim`` extra."""
    try:
        import mujoco
    except ImportError as err:
        raise ImportError(
            "MujocoPlant needs the 'mujoco' package: pip install 'curobo_lite[sim]'"
        ) from err
    return mujoco


@dataclass
class MujocoPlantConfig:
    """Options of :class:`MujocoPlant` (all in SI units).

    Attributes:
        control_dt: seconds one :meth:`MujocoPlant.step` simulates (the MPC's period); a
            multiple of ``physics_dt``.
        physics_dt: MuJoCo time step (default 1 ms).
        mass_scale: factor on every link's mass and inertia in the plant only (1.2: the robot
            is 20 % heavier than the controller's model).
        command_latency: seconds between :meth:`MujocoPlant.step` receiving a command and the
            controller starting to follow it; rounded to whole physics steps.
        natural_frequency: Hz of the controller's error dynamics (``Kp = w^2``).
        damping_ratio: of the error dynamics (``Kd = 2 zeta w``).
        joint_damping: viscous friction (N m s / rad) in the plant's joints, unknown to the
            controller.
        sphere_density: kg / m^3 for links with collision spheres but no inertial data.
        gravity: ``[3]`` m / s^2 in the robot base frame.
    """

    control_dt: float = 0.02
    physics_dt: float = 0.001
    mass_scale: float = 1.0
    command_latency: float = 0.0
    natural_frequency: float = 20.0
    damping_ratio: float = 1.0
    joint_damping: float = 0.0
    sphere_density: float = 1000.0
    gravity: list[float] = field(default_factory=lambda: [0.0, 0.0, -9.81])

    def __post_init__(self) -> None:
        self.control_dt = as_float(_SECTION, "control_dt", self.control_dt, low=0.0, low_open=True)
        self.physics_dt = as_float(_SECTION, "physics_dt", self.physics_dt, low=0.0, low_open=True)
        self.mass_scale = as_float(_SECTION, "mass_scale", self.mass_scale, low=0.0, low_open=True)
        self.command_latency = as_float(_SECTION, "command_latency", self.command_latency, low=0.0)
        self.natural_frequency = as_float(
            _SECTION, "natural_frequency", self.natural_frequency, low=0.0, low_open=True
        )
        self.damping_ratio = as_float(_SECTION, "damping_ratio", self.damping_ratio, low=0.0)
        self.joint_damping = as_float(_SECTION, "joint_damping", self.joint_damping, low=0.0)
        self.sphere_density = as_float(
            _SECTION, "sphere_density", self.sphere_density, low=0.0, low_open=True
        )
        if isinstance(self.gravity, str) or len(list(self.gravity)) != 3:
            raise InputValueError(
                f"{_SECTION}.gravity: expected 3 numbers, received {excerpt(self.gravity)}"
            )
        self.gravity = [
            as_float(_SECTION, f"gravity[{i}]", v) for i, v in enumerate(list(self.gravity))
        ]
        ratio = self.control_dt / self.physics_dt
        if abs(ratio - round(ratio)) > 1e-6 * ratio:
            raise InputValueError(
                f"{_SECTION}.control_dt: expected a multiple of physics_dt ({self.physics_dt:g} "
                f"s), received {self.control_dt:g} s"
            )

    @property
    def substeps(self) -> int:
        """Physics steps per control step."""
        return round(self.control_dt / self.physics_dt)

    @property
    def latency_steps(self) -> int:
        """``command_latency`` in whole physics steps."""
        return round(self.command_latency / self.physics_dt)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> MujocoPlantConfig:
        data = dict(data or {})
        check_keys(_SECTION, data, list(cls.__dataclass_fields__))
        return cls(**data)


# ------------------------------------------------------------------------------------------
# model generation
# ------------------------------------------------------------------------------------------
def _quat_wxyz(rotation: np.ndarray) -> list[float]:
    return [float(v) for v in rpy_to_quat_np(matrix_to_rpy_np(rotation))]


def _robot_joints(robot: RobotConfig) -> tuple[dict[str, list[JointSpec]], set[str]]:
    """The tree's joints by parent link, and the names of the chain's moving joints."""
    children: dict[str, list[JointSpec]] = {}
    for joint in robot.joints:
        children.setdefault(joint.parent, []).append(joint)
    chain = {j.name for j in robot.chain if j.is_moving}
    for joint in robot.chain:
        if joint.mimic is not None:
            raise InputValueError(
                f"robot_config: mimic joint '{joint.name}' on the chain of robot '{robot.name}' "
                "is not supported by MujocoPlant (a joint coupling the controller cannot see)"
            )
    return children, chain


def _add_robot(spec: Any, robot: RobotConfig, config: MujocoPlantConfig, mujoco: Any) -> None:
    """Add the robot's bodies, joints, spheres and motors to ``spec``'s world body."""
    children, chain = _robot_joints(robot)
    dynamics = robot.dynamics
    inertials = dynamics.link_inertials if dynamics is not None else {}
    spheres = robot.collision.spheres if robot.collision is not None else {}
    limits = robot.joint_limits.position.detach().cpu().double().numpy()
    index = {name: i for i, name in enumerate(robot.joint_names)}

    def dress(body: Any, link: str) -> None:
        inertial = inertials.get(link)
        if inertial is not None:
            body.explicitinertial = True
            body.mass = inertial.mass
            body.ipos = list(inertial.com)
            body.fullinertia = list(inertial.inertia)
        for i, (x, y, z, r) in enumerate(spheres.get(link, [])):
            if r <= 0.0:  # reserved for a held object (extra_collision_spheres): disabled
                continue
            body.add_geom(
                name=f"{link}/sphere{i}",
                type=mujoco.mjtGeom.mjGEOM_SPHERE,
                size=[r, 0.0, 0.0],
                pos=[x, y, z],
                contype=_ROBOT_BITS[0],
                conaffinity=_ROBOT_BITS[1],
                density=config.sphere_density,
                rgba=[0.9, 0.6, 0.2, 0.6],
            )

    def grow(parent_body: Any, link: str) -> None:
        for joint in children.get(link, []):
            if joint.name in chain:
                value = 0.0
            elif joint.type == "fixed":
                value = 0.0
            elif joint.name in robot.lock_joints:
                value = robot.lock_joints[joint.name]
            else:
                continue  # a moving joint off the chain: its subtree is not simulated
            transform = joint_transform_np(joint, value)
            body = parent_body.add_body(
                name=joint.child,
                pos=[float(v) for v in transform[:3, 3]],
                quat=_quat_wxyz(transform[:3, :3]),
            )
            if joint.name in chain:
                j = index[joint.name]
                body.add_joint(
                    name=joint.name,
                    type=mujoco.mjtJoint.mjJNT_SLIDE
                    if joint.type == "prismatic"
                    else mujoco.mjtJoint.mjJNT_HINGE,
                    axis=list(joint.axis),
                    range=[float(limits[0, j]), float(limits[1, j])],
                    limited=mujoco.mjtLimited.mjLIMITED_TRUE,
                    damping=config.joint_damping,
                )
            dress(body, joint.child)
            grow(body, joint.child)

    base = spec.worldbody.add_body(name=robot.base_link)
    dress(base, robot.base_link)
    grow(base, robot.base_link)
    effort = dynamics.effort_limit if dynamics is not None else None
    for j, name in enumerate(robot.joint_names):
        actuator = spec.add_actuator(
            name=name, target=name, trntype=mujoco.mjtTrn.mjTRN_JOINT, gear=[1, 0, 0, 0, 0, 0]
        )
        if effort is not None:
            actuator.ctrllimited = mujoco.mjtLimited.mjLIMITED_TRUE
            actuator.ctrlrange = [-effort[j], effort[j]]


def _obstacle_geom(
    spec: Any, body: Any, obstacle: Obstacle, mujoco: Any, free: bool = False
) -> None:
    """One geom for ``obstacle`` on its mocap ``body`` (obstacle frame = body frame), or on
    its free body (``free``: it collides with the robot and the obstacles)."""
    contype, conaffinity = OBSTACLE_BITS if obstacle.enabled else (0, 0)
    if free:
        contype, conaffinity = FREE_OBJECT_BITS
    common = {
        "name": OBSTACLE_PREFIX + obstacle.name,
        "contype": contype,
        "conaffinity": conaffinity,
        "rgba": [0.5, 0.55, 0.6, 1.0],
    }
    geom = mujoco.mjtGeom
    if isinstance(obstacle, Cuboid):
        body.add_geom(type=geom.mjGEOM_BOX, size=[0.5 * d for d in obstacle.dims], **common)
    elif isinstance(obstacle, Sphere):
        body.add_geom(type=geom.mjGEOM_SPHERE, size=[obstacle.radius, 0.0, 0.0], **common)
    elif isinstance(obstacle, Capsule):
        body.add_geom(
            type=geom.mjGEOM_CAPSULE,
            fromto=[*obstacle.base, *obstacle.tip],
            size=[obstacle.radius, 0.0, 0.0],
            **common,
        )
    elif isinstance(obstacle, Cylinder):
        body.add_geom(
            type=geom.mjGEOM_CYLINDER, size=[obstacle.radius, 0.5 * obstacle.height, 0.0], **common
        )
    elif isinstance(obstacle, Mesh):
        vertices, faces = obstacle.mesh_data()
        mesh_name = OBSTACLE_PREFIX + obstacle.name + "/mesh"
        spec.add_mesh(
            name=mesh_name,
            uservert=vertices.reshape(-1).tolist(),
            userface=faces.reshape(-1).tolist(),
        )
        body.add_geom(type=geom.mjGEOM_MESH, meshname=mesh_name, **common)
    else:
        raise InputTypeError(f"world: unsupported obstacle type {type(obstacle).__name__}")


def build_mujoco_spec(
    robot_config: RobotConfig,
    world: WorldConfig | None = None,
    config: MujocoPlantConfig | None = None,
    free_objects: tuple[str, ...] = (),
    weld_link: str | None = None,
) -> Any:
    """A :class:`mujoco.MjSpec` of the robot (fixed base at the world origin) and ``world``'s
    obstacles (mocap bodies named ``obstacle/<name>``; those in ``free_objects`` free bodies
    with an inactive weld ``weld/<name>`` to the robot link ``weld_link``); see the module
    docs. Compile with ``spec.compile()``."""
    mujoco = import_mujoco()
    config = config or MujocoPlantConfig()
    spec = mujoco.MjSpec()
    spec.modelname = robot_config.name
    spec.compiler.degree = False  # joint ranges in radians, as in the robot file
    spec.option.timestep = config.physics_dt
    spec.option.gravity = list(config.gravity)
    # implicit in velocity: stable with stiff joint damping at 1 kHz
    spec.option.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    _add_robot(spec, robot_config, config, mujoco)
    world = world or WorldConfig()
    unknown = [name for name in free_objects if name not in world]
    if unknown or (free_objects and weld_link not in {j.child for j in robot_config.joints}):
        raise InputValueError(
            f"free_objects: expected obstacles of the world held by a robot link, received "
            f"{list(free_objects)} (unknown: {unknown}) and weld_link {weld_link!r}"
        )
    for obstacle in world:
        free = obstacle.name in free_objects
        body = spec.worldbody.add_body(
            name=OBSTACLE_PREFIX + obstacle.name,
            mocap=not free,
            pos=list(obstacle.pose[:3]),
            quat=list(obstacle.pose[3:]),
        )
        _obstacle_geom(spec, body, obstacle, mujoco, free)
        if free:
            body.add_freejoint()
            # the grasp is the weld: the links a held object may touch (the robot file's
            # self_collision_ignore for the weld link) do not push it
            collision = robot_config.collision
            grasping = collision.self_collision_ignore.get(weld_link, []) if collision else []
            for link in grasping:
                spec.add_exclude(bodyname1=link, bodyname2=OBSTACLE_PREFIX + obstacle.name)
            spec.add_equality(
                name=WELD_PREFIX + obstacle.name,
                type=mujoco.mjtEq.mjEQ_WELD,
                objtype=mujoco.mjtObj.mjOBJ_BODY,
                name1=weld_link,
                name2=OBSTACLE_PREFIX + obstacle.name,
                active=False,
            )
    return spec


def compile_spec(spec: Any, robot_config: RobotConfig) -> Any:
    """``spec.compile()``, its failures raised as an InputValueError naming the robot."""
    try:
        return spec.compile()
    except Exception as err:  # mujoco raises ValueError or its own error types
        raise InputValueError(
            f"robot_config: MuJoCo cannot compile robot '{robot_config.name}' from "
            f"{robot_config.source}: {err}"
        ) from None
