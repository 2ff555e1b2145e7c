"""Why a configuration is invalid: the worst offenders, named.

A collision check says *that* a configuration fails; :func:`find_offenders` says *why*, in the
robot's and the world's own names: the joints outside their limits (value and limit), the
(link, obstacle) pairs in contact (deepest sphere of the link) and the link pairs in
self-contact, each list sorted worst first and cut at ``top_k``. It runs on failures only (a
few configurations): the world attribution is one query per obstacle
(:meth:`~curobo_lite.geom.WorldCollision.obstacle_distances`), the self-collision pairs are
evaluated in plain torch. :meth:`RobotWorld.offenders
<curobo_lite.wrap.RobotWorld.offenders>` is the entry point; :class:`MotionGen
<curobo_lite.wrap.MotionGen>` attaches the offenders to its ``INVALID_*`` and ``IK_FAIL``
results.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch

from curobo_lite.types import quat_conjugate, quat_multiply
from curobo_lite.types.errors import InputTypeError, InputValueError

#: what the functions here read of a RobotWorld (robot_world imports this module, not back)
RobotWorld = Any

#: the kinds of :class:`Offender`, in the order :func:`find_offenders` lists them
OFFENDER_KINDS = ("joint_limit", "world", "self")

#: query range (m) of the world attribution: only contact matters
_CONTACT_RANGE = 1e-4


@dataclass(frozen=True)
class Offender:
    """One reason a configuration is invalid.

    Attributes:
        kind: ``"joint_limit"``, ``"world"`` (a link inside an obstacle), ``"self"`` (two links
            inside each other), ``"pose"`` (an IK solution's error above its tolerance),
            ``"moving"`` (a start state not at rest) or ``"barrier"`` (a goal that a joint
            could reach only through a value where the robot always self-collides; ``link``:
            the joint, ``value``: the goal's value, ``limit``: the barrier;
            :mod:`curobo_lite.wrap.motion.reachable_goals`).
        link: the link (for ``joint_limit`` and ``moving``: the joint; for ``pose``: the
            end-effector link).
        other: the obstacle (``world``), the other link (``self``), ``"lower"`` or ``"upper"``
            (``joint_limit``), ``"position"`` or ``"rotation"`` (``pose``), ``"velocity"`` or
            ``"acceleration"`` (``moving``).
        depth: how far past acceptable, > 0: penetration depth in metres (``world``,
            ``self``, the deepest sphere), distance beyond the limit in the joint's unit
            (``joint_limit``), error minus tolerance (``pose``), the magnitude (``moving``).
        message: one line for people, e.g. ``"panda_link1 is 51 mm inside 'table'"``.
        value, limit: the joint value and the limit it passes (``joint_limit``), the error
            and its tolerance (``pose``); ``nan`` otherwise.
    """

    kind: str
    link: str
    other: str
    depth: float
    message: str
    value: float = math.nan
    limit: float = math.nan

    def __str__(self) -> str:
        return self.message


def millimetres(metres: float) -> str:
    """``0.0512 -> "51 mm"``, ``0.0031 -> "3.1 mm"``: whole millimetres from 1 cm up."""
    mm = metres * 1000.0
    return f"{mm:.0f} mm" if abs(mm) >= 9.95 else f"{mm:.1f} mm"


def _configuration(robot_world: RobotWorld, q: torch.Tensor) -> torch.Tensor:
    """``q [D]`` or ``[1, D]`` as ``[1, D]`` on the checker's device and dtype."""
    if not isinstance(q, torch.Tensor):
        raise InputTypeError(f"q: expected a torch.Tensor [D] or [1, D], received {type(q)}")
    dof = robot_world.robot_config.dof
    if q.shape not in ((dof,), (1, dof)):
        raise InputValueError(f"q: expected shape [{dof}] or [1, {dof}], received {tuple(q.shape)}")
    return q.detach().reshape(1, dof).to(**robot_world.tensor_args.as_kwargs())


@torch.no_grad()
def find_offenders(
    robot_world: RobotWorld,
    q: torch.Tensor,
    top_k: int = 3,
    kinds: tuple[str, ...] = OFFENDER_KINDS,
) -> list[Offender]:
    """The worst reasons ``q [D]`` (or ``[1, D]``) is invalid for ``robot_world``: per kind of
    ``kinds`` (in the order of :data:`OFFENDER_KINDS`), up to ``top_k`` offenders, worst
    first. Empty when ``q`` passes :meth:`RobotWorld.validate` (for those kinds).

    The world check sees the spheres :meth:`RobotWorld.collision_distance` sees (spheres it
    leaves out, e.g. of links fixed to the base, are left out here too); a (link, obstacle)
    pair is reported once, at its deepest sphere; a link pair likewise."""
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise InputValueError(f"top_k: expected an integer >= 1, received {top_k!r}")
    unknown = [k for k in kinds if k not in OFFENDER_KINDS]
    if unknown:
        raise InputValueError(f"kinds: expected some of {list(OFFENDER_KINDS)}, received {unknown}")
    q = _configuration(robot_world, q)
    found: list[Offender] = []
    if "joint_limit" in kinds:
        found += joint_limit_offenders(robot_world, q[0])[:top_k]
    if "world" in kinds:
        found += world_offenders(robot_world, q)[:top_k]
    if "self" in kinds:
        found += self_collision_offenders(robot_world, q)[:top_k]
    return found


def _joint_units(robot_world: RobotWorld) -> dict[str, str]:
    types = {joint.name: joint.type for joint in robot_world.robot_config.joints}
    return {
        name: "m" if types.get(name) == "prismatic" else "rad"
        for name in robot_world.robot_config.joint_names
    }


def joint_limit_offenders(robot_world: RobotWorld, q: torch.Tensor) -> list[Offender]:
    """Every joint of ``q [D]`` outside its position limits (or not finite), farthest
    first."""
    config = robot_world.robot_config
    low, high = (row.tolist() for row in config.joint_limits.position)
    units = _joint_units(robot_world)
    found = []
    for name, value, lo, hi in zip(config.joint_names, q.tolist(), low, high, strict=True):
        unit = units[name]
        if not math.isfinite(value):
            message = f"{name} = {value} {unit}, not a finite value"
            found.append(Offender("joint_limit", name, "finite", math.inf, message, value))
        elif value > hi:
            message = f"{name} = {value:.4g} {unit}, above its upper limit {hi:.4g} {unit}"
            found.append(Offender("joint_limit", name, "upper", value - hi, message, value, hi))
        elif value < lo:
            message = f"{name} = {value:.4g} {unit}, below its lower limit {lo:.4g} {unit}"
            found.append(Offender("joint_limit", name, "lower", lo - value, message, value, lo))
    return sorted(found, key=lambda o: -o.depth)


def position_in_limits(robot_config: Any, q: torch.Tensor, tolerance: float = 0.0) -> torch.Tensor:
    """``[...]`` bool: every joint of ``q [..., D]`` within ``robot_config``'s position limits
    (widened by ``tolerance`` on each side). MotionGen's start check
    (:meth:`RobotWorld.in_limits <curobo_lite.wrap.RobotWorld.in_limits>`) and
    :func:`check_within_limits` both use it."""
    low, high = robot_config.joint_limits.position.to(q)
    return ((q >= low - tolerance) & (q <= high + tolerance)).all(-1)


def check_within_limits(
    solver: Any, q: torch.Tensor, argument: str, tolerance: float = 0.0, hint: str = ""
) -> None:
    """Raise an ``InputValueError`` when a configuration of ``q [..., D]`` passes
    ``solver.robot_config``'s position limits by more than ``tolerance``: the message names
    ``argument`` with the configuration's index, the farthest joint, its value and its limits
    (the offender MotionGen reports for an ``INVALID_START_STATE_JOINT_LIMITS``), then
    ``hint``. One device read (whether any is outside)."""
    inside = position_in_limits(solver.robot_config, q, tolerance)
    if bool(inside.all()):
        return
    index = tuple(int(i) for i in (~inside).nonzero()[0])  # the first outside, [...] of q
    worst = joint_limit_offenders(solver, q[index])[0]
    config = solver.robot_config
    j = list(config.joint_names).index(worst.link)
    low, high = (float(row[j]) for row in config.joint_limits.position)
    unit = _joint_units(solver)[worst.link]
    single = inside.numel() == 1
    where = argument if single else f"{argument}[{', '.join(str(i) for i in index)}]"
    allowed = f" (tolerance {tolerance:g})" if tolerance else ""
    raise InputValueError(
        f"{where}: outside the joint limits{allowed}: {worst.message}; {worst.link}'s limits "
        f"are [{low:.4g}, {high:.4g}] {unit}{hint}"
    )


def world_offenders(robot_world: RobotWorld, q: torch.Tensor) -> list[Offender]:
    """``(link, obstacle)`` pairs in contact at ``q [1, D]``, deepest first."""
    # the spheres the world checks see (those of links fixed to the base are left out)
    spheres = robot_world.get_world_spheres(q)[0]
    names, distance = robot_world.world_collision.obstacle_distances(
        spheres, max_distance=_CONTACT_RANGE
    )
    if not names:
        return []
    links = robot_world.kinematics.sphere_link_names
    found: dict[tuple[str, str], float] = {}
    for n, o in (distance < 0.0).nonzero().tolist():
        key = (links[n], names[o])
        found[key] = min(found.get(key, 0.0), float(distance[n, o]))
    return sorted(
        (
            Offender(
                "world", link, obstacle, -d, f"{link} is {millimetres(-d)} inside {obstacle!r}"
            )
            for (link, obstacle), d in found.items()
        ),
        key=lambda o: -o.depth,
    )


def self_collision_offenders(robot_world: RobotWorld, q: torch.Tensor) -> list[Offender]:
    """Link pairs in self-contact at ``q [1, D]`` (the pairs the self-collision check
    tests: ``d = |c_i - c_j| - r_i - r_j - buffer < 0``), deepest first."""
    kinematics = robot_world.kinematics
    pairs = kinematics.self_collision_pairs.long()
    if robot_world.self_collision_model is None or pairs.numel() == 0:
        return []
    spheres = robot_world.get_link_spheres(q)[0]
    a, b = spheres[pairs[:, 0]], spheres[pairs[:, 1]]
    buffer = kinematics.self_collision_pair_buffer.to(spheres)
    distance = (a[:, :3] - b[:, :3]).norm(dim=-1) - a[:, 3] - b[:, 3] - buffer
    distance = torch.where((a[:, 3] < 0) | (b[:, 3] < 0), torch.inf, distance)
    links = kinematics.sphere_link_names
    found: dict[tuple[str, str], float] = {}
    for k in (distance < 0.0).nonzero()[:, 0].tolist():
        i, j = sorted(pairs[k].tolist())  # spheres are in chain order: base side first
        key = (links[i], links[j])
        found[key] = min(found.get(key, 0.0), float(distance[k]))
    return sorted(
        (
            Offender(
                "self", first, second, -d, f"{first} and {second} overlap by {millimetres(-d)}"
            )
            for (first, second), d in found.items()
        ),
        key=lambda o: -o.depth,
    )


@torch.no_grad()
def reach_pose(
    robot_world: RobotWorld,
    q: torch.Tensor,
    position: torch.Tensor,
    quaternion: torch.Tensor,
    iterations: int = 40,
    damping: float = 1e-2,
) -> torch.Tensor:
    """``q [D]`` moved onto the end-effector pose (``position [3]``, wxyz ``quaternion [4]``)
    by damped least squares on the Jacobian, within the position limits and blind to every
    obstacle: the configuration nearest ``q`` that an obstacle-free IK would give, to ask what
    it would hit. A few dozen FK and Jacobian evaluations of one configuration."""
    kinematics = robot_world.kinematics
    low, high = robot_world.robot_config.joint_limits.position.to(q)
    q = q.detach().reshape(1, -1).clone()
    goal_q = quaternion.reshape(1, 4).to(q)
    goal_p = position.reshape(1, 3).to(q)
    eye = torch.eye(6, dtype=q.dtype, device=q.device) * damping**2
    for _ in range(iterations):
        state = kinematics.forward(q, spheres=False)
        # rotation error as a base-frame rotation vector: goal * conj(current)
        rel = quat_multiply(goal_q, quat_conjugate(state.ee_quaternion))
        rel = torch.where(rel[:, :1] < 0, -rel, rel)
        sine = rel[:, 1:].norm(dim=-1, keepdim=True)
        angle = 2.0 * torch.atan2(sine, rel[:, :1])
        scale = torch.where(sine > 1e-9, angle / sine.clamp(min=1e-12), torch.full_like(sine, 2.0))
        error = torch.cat((goal_p - state.ee_position, rel[:, 1:] * scale), -1)[0]
        jac = kinematics.jacobian(q)[0]
        step = jac.T @ torch.linalg.solve(jac @ jac.T + eye, error)
        q = torch.minimum(torch.maximum(q + step, low), high)
    return q[0]
