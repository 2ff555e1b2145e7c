"""Straight lines of the end effector: poses ``step`` apart, each solved by damped least
squares from the previous configuration (:func:`~curobo_lite.wrap.ik.dls.dls_steps`), thinned
to the joint-space segments that stay on the line, and checked on the collision spheres by a
:class:`SphereRule` (every sphere clear of the obstacles, as a simulator built of them needs, but
where a grasp or a held object must touch: there the true shapes judge). Where the plain line
runs a joint into its limit (a long line: the redundant arm drifts), :func:`guided_line` moves
the arm along the joint-space line to an IK solution of the last pose while the hand keeps to
its line. The pick and place (:mod:`~curobo_lite.wrap.motion.pick_place`) is made of them.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from curobo_lite.types import Pose, matrix_to_quat, quat_to_matrix
from curobo_lite.wrap.base.attach import ATTACHED_LINK
from curobo_lite.wrap.ik.dls import dls_steps, pose_error
from curobo_lite.wrap.motion.motion_gen import MotionGen

#: a straight-line waypoint is reached when within these (m, rad) of its pose
LINE_TOLERANCE = (1e-3, 1e-2)


@dataclass(frozen=True)
class SphereRule:
    """How a line's configurations are judged besides the joint limits and self-collision.

    By default every collision sphere must be clear of every obstacle: the spheres bound the
    links' meshes, so the real robot is clear too, and a simulator built of the spheres (the
    MuJoCo plant) sees no contact. The exceptions are where the robot must touch:

    Attributes:
        held_band: metres: the held object's spheres (the ``attached_object`` link) reaching
            at most this deep into an obstacle are judged on its true shape (a held box leaving
            its board or set down: its cover spheres bulge past it); every other sphere stays
            clear. 0: off.
        grasp_links: the links that close around ``grasp_obstacle`` (the hand and fingers of
            a grasp); their spheres are judged without that obstacle, the exact mesh check of
            the stage judges the true shapes of both. Every other sphere stays clear of it.
        grasp_obstacle: the world obstacle the grasp links may touch (``None``: none).
    """

    held_band: float = 0.0
    grasp_links: tuple[str, ...] = ()
    grasp_obstacle: str | None = None


@contextmanager
def obstacle_disabled(motion_gen: MotionGen, name: str | None) -> Iterator[None]:
    """The world obstacle ``name`` disabled for the checks inside (none for ``None``)."""
    world = motion_gen.checker.world_collision
    if name is None:
        yield
        return
    world.enable_obstacle(name, False)
    try:
        yield
    finally:
        world.enable_obstacle(name, True)


def spheres_clear(motion_gen: MotionGen, q: torch.Tensor, skip_links: set[str]) -> torch.Tensor:
    """``[N]`` bool: every collision sphere of ``q [N, D]`` on a link not in ``skip_links`` is
    clear of the enabled obstacles."""
    checker = motion_gen.checker
    names = checker.kinematics.sphere_link_names
    skip = torch.as_tensor([name in skip_links for name in names], device=q.device)
    spheres = checker.get_world_spheres(q).clone()
    spheres[..., skip, 3] = -1.0  # disabled: read as far away
    distance = checker.world_collision.sphere_distance(spheres, max_distance=0.05).distance
    return (distance >= 0.0).all(-1)


@torch.no_grad()
def configs_valid(motion_gen: MotionGen, q: torch.Tensor, rule: SphereRule) -> torch.Tensor:
    """``[N]`` bool: ``q [N, D]`` within the joint limits, free of self-collision and judged
    clear of the world by ``rule``."""
    checker = motion_gen.checker
    if rule.held_band > 0.0:
        ok = checker.validate(q, rule.held_band)
        return ok & spheres_clear(motion_gen, q, {ATTACHED_LINK})
    with obstacle_disabled(motion_gen, rule.grasp_obstacle):
        ok = checker.validate(q)
    if rule.grasp_obstacle is not None:
        ok &= spheres_clear(motion_gen, q, set(rule.grasp_links))
    return ok


@torch.no_grad()
def segments_valid(
    motion_gen: MotionGen,
    q_from: torch.Tensor,
    q_to: torch.Tensor,
    rule: SphereRule,
    resolution: float = 0.02,
) -> torch.Tensor:
    """``[E]`` bool: the joint-space segments ``q_from [E, D] -> q_to [E, D]`` pass
    :func:`configs_valid` at samples at most ``resolution`` rad apart (largest joint step),
    ``q_to`` included, ``q_from`` not (the caller has checked it); one batched query."""
    delta = q_to - q_from
    steps = (delta.abs().amax(-1) / resolution).ceil().clamp(min=1).long()
    edge = torch.repeat_interleave(torch.arange(q_from.shape[0], device=q_from.device), steps)
    first = steps.cumsum(0) - steps
    k = torch.arange(edge.shape[0], device=q_from.device) - first[edge] + 1
    t = (k.to(q_from.dtype) / steps[edge].to(q_from.dtype))[:, None]
    ok = configs_valid(motion_gen, q_from[edge] + t * delta[edge], rule)
    bad = torch.zeros(q_from.shape[0], dtype=torch.int32, device=q_from.device)
    bad.index_add_(0, edge, (~ok).to(torch.int32))
    return bad == 0


def hand_matrices(motion_gen: MotionGen, q: torch.Tensor) -> np.ndarray:
    """``[T, 4, 4]`` end-effector poses of ``q [T, D]`` (this package's FK)."""
    state = motion_gen.checker.kinematics.forward(q, spheres=False)
    matrices = np.tile(np.eye(4), (q.shape[0], 1, 1))
    matrices[:, :3, :3] = quat_to_matrix(state.ee_quaternion.detach().double().cpu()).numpy()
    matrices[:, :3, 3] = state.ee_position.detach().double().cpu().numpy()
    return matrices


def pose_rows(matrices: np.ndarray, tensor_args: Any) -> tuple[torch.Tensor, torch.Tensor]:
    m = torch.as_tensor(matrices, dtype=torch.float64)
    quaternion = matrix_to_quat(m[:, :3, :3])
    return (
        tensor_args.to_device(m[:, :3, 3].contiguous()),
        tensor_args.to_device(quaternion.contiguous()),
    )


def line_waypoints(start: np.ndarray, end: np.ndarray, step: float) -> np.ndarray:
    """``[K, 4, 4]`` poses from ``start [4, 4]`` (excluded) to ``end`` (included), at most
    ``step`` metres apart, the orientation slerped (here: held when both agree)."""
    count = max(1, int(math.ceil(np.linalg.norm(end[:3, 3] - start[:3, 3]) / step - 1e-9)))
    relative = torch.as_tensor(start[:3, :3].T @ end[:3, :3])
    axis_angle = _rotation_vector(relative)
    out = []
    for k in range(1, count + 1):
        s = k / count
        matrix = np.eye(4)
        matrix[:3, :3] = start[:3, :3] @ rotation_matrix(s * axis_angle)
        matrix[:3, 3] = (1.0 - s) * start[:3, 3] + s * end[:3, 3]
        out.append(matrix)
    return np.stack(out)


def _rotation_vector(rotation: torch.Tensor) -> np.ndarray:
    q = matrix_to_quat(rotation.double()).numpy()
    q = q if q[0] >= 0.0 else -q
    angle = 2.0 * math.atan2(float(np.linalg.norm(q[1:])), float(q[0]))
    norm = float(np.linalg.norm(q[1:]))
    return np.zeros(3) if norm < 1e-12 else q[1:] / norm * angle


def rotation_matrix(vector: np.ndarray) -> np.ndarray:
    angle = float(np.linalg.norm(vector))
    if angle < 1e-12:
        return np.eye(3)
    k = vector / angle
    cross = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + math.sin(angle) * cross + (1 - math.cos(angle)) * cross @ cross


def straight_line(
    motion_gen: MotionGen,
    q0: torch.Tensor,
    poses: np.ndarray,
    guide: torch.Tensor | None = None,
    iterations: int = 8,
    rule: SphereRule = SphereRule(),
) -> tuple[torch.Tensor | None, str]:
    """``([K + 1, D], "SUCCESS")``: ``q0 [D]`` then a configuration per pose of ``poses
    [K, 4, 4]``, each solved from the previous by damped least squares and within
    :data:`LINE_TOLERANCE` of its pose, :func:`thinned` to the rows the joint-space segments
    need, those and the segments between them valid (:func:`segments_valid` by ``rule``);
    ``(None, reason)`` otherwise. ``guide [K + 1, D]``: joint-space
    waypoints whose steps each solve starts from (the arm then moves as they do, in the null
    space of the hand's line: a way from one arm posture to another)."""
    guides = None if guide is None else guide[None]
    return _first_line(motion_gen, q0, poses, guides, iterations, rule)[:2]


def _first_line(
    motion_gen: MotionGen,
    q0: torch.Tensor,
    poses: np.ndarray,
    guides: torch.Tensor | None,
    iterations: int,
    rule: SphereRule,
) -> tuple[torch.Tensor | None, str, list[str]]:
    """:func:`straight_line` for each of ``guides [G, K + 1, D]`` (``None``: unguided) at
    once (one damped least-squares batch per waypoint): the first valid path, and every
    failed variant's reason."""
    checker = motion_gen.checker
    kinematics = checker.kinematics
    position, quaternion = pose_rows(poses, checker.tensor_args)
    K = poses.shape[0]
    G = 1 if guides is None else guides.shape[0]
    steps = None if guides is None else (guides[:, 1:] - guides[:, :-1]).to(q0)
    rows = [q0.reshape(1, -1).expand(G, -1)]
    failed = [0] * G  # the first waypoint missed (0: none)
    for k in range(K):
        initial = rows[-1] if steps is None else rows[-1] + steps[:, k]
        target = (position[k : k + 1].expand(G, 3), quaternion[k : k + 1].expand(G, 4))
        q = dls_steps(kinematics, initial, *target, iterations)
        error = pose_error(kinematics, q, *target)
        missed = (error[:, :3].norm(dim=-1) > LINE_TOLERANCE[0]) | (
            error[:, 3:].norm(dim=-1) > LINE_TOLERANCE[1]
        )
        for g in missed.nonzero()[:, 0].tolist():
            failed[g] = failed[g] or k + 1
        if all(failed):
            break
        rows.append(q)
    reasons = []
    for g in range(G):
        if failed[g]:
            reasons.append(f"IK_FAIL at waypoint {failed[g]} of {K}")
            continue
        path = thinned(kinematics, torch.stack([r[g] for r in rows]), position, quaternion)
        ok = segments_valid(motion_gen, path[:-1], path[1:], rule)
        if bool(ok.all()):
            return path, "SUCCESS", reasons
        first = int((~ok).nonzero()[0, 0])
        reasons.append(f"COLLISION on segment {first + 1} of {path.shape[0] - 1}")
    return None, reasons[-1], reasons


@torch.no_grad()
def thinned(
    kinematics: Any,
    path: torch.Tensor,
    position: torch.Tensor,
    quaternion: torch.Tensor,
    judged: torch.Tensor | None = None,
) -> torch.Tensor:
    """The rows of ``path [K + 1, D]`` (row ``k > 0`` at the pose ``position [K, 3]``,
    ``quaternion [K, 4]`` row ``k - 1``) that straight joint-space segments need: each segment
    as long as every row it skips lies, moved onto the segment by its share of the joint-space
    length, within :data:`LINE_TOLERANCE` of its pose. The arm then stops only at those rows
    (:func:`time_polyline` rests at every corner) instead of at every waypoint. ``judged [6]``
    (:func:`pose_error`'s order, position first, base frame): only the components where it is
    nonzero count (default: all)."""
    K = path.shape[0] - 1
    length = torch.cat((path.new_zeros(1), (path[1:] - path[:-1]).norm(dim=-1).cumsum(0)))
    scale = None if judged is None else judged.to(path)
    keep, i = [0], 0
    while i < K:
        # every (end j, skipped row m) with i < m < j <= K: row m moved onto segment i -> j
        j, m = torch.meshgrid(
            torch.arange(i + 2, K + 1, device=path.device),
            torch.arange(i + 1, K, device=path.device),
            indexing="ij",
        )
        pair = m < j
        j, m = j[pair], m[pair]
        best = i + 1
        if j.numel():
            span = (length[j] - length[i]).clamp(min=1e-12)
            share = ((length[m] - length[i]) / span)[:, None]
            rows = path[i] + share * (path[j] - path[i])
            error = pose_error(kinematics, rows, position[m - 1], quaternion[m - 1])
            if scale is not None:
                error = error * scale
            bad = (error[:, :3].norm(dim=-1) > LINE_TOLERANCE[0]) | (
                error[:, 3:].norm(dim=-1) > LINE_TOLERANCE[1]
            )
            # the longest segment whose skipped rows, and those of every shorter one, are good
            bad_end = torch.zeros(K + 1, dtype=torch.bool, device=path.device)
            bad_end[j[bad]] = True
            good = ~bad_end[i + 2 :]
            run = int(good.to(torch.int64).cumprod(0).sum())
            best = i + 1 + run
        keep.append(best)
        i = best
    return path[keep]


def guided_line(
    motion_gen: MotionGen,
    q0: torch.Tensor,
    poses: np.ndarray,
    tries: int = 2,
    guide_first: bool = False,
    rule: SphereRule = SphereRule(),
    solutions: torch.Tensor | None = None,
) -> tuple[torch.Tensor | None, str]:
    """:func:`straight_line`, and where it fails, the same guided by the joint-space line from
    ``q0`` to an IK solution of the last pose (the distinct solutions nearest ``q0`` first,
    up to ``tries``); ``guide_first``: the guided lines first (a long line, where the plain
    one tends to run a joint into its limit); ``rule``: as in :func:`straight_line`;
    ``solutions [n, D]``: IK solutions of the last pose to guide toward (default: the IK
    solver's, solved here)."""
    reasons = []
    if not guide_first:
        path, status = straight_line(motion_gen, q0, poses, rule=rule)
        if path is not None:
            return path, status
        reasons.append(status)
    if solutions is None:
        position, quaternion = pose_rows(poses[-1:], motion_gen.checker.tensor_args)
        ik = motion_gen.ik_solver.solve_single(Pose(position, quaternion))
        solutions = ik.distinct_solutions[0] if ik.distinct_solutions else ik.solution[:0]
    ends = solutions.to(q0)
    ends = ends[(ends - q0).abs().amax(-1).argsort()][:tries]
    s = torch.linspace(0.0, 1.0, poses.shape[0] + 1, dtype=q0.dtype, device=q0.device)
    guides = q0 + s[None, :, None] * (ends - q0)[:, None, :]  # [n, K + 1, D]
    if guide_first:  # and the plain line last, in the same batch
        guides = torch.cat((guides, q0.expand(1, s.shape[0], -1)))
    if guides.shape[0]:
        path, status, tried = _first_line(motion_gen, q0, poses, guides, 8, rule)
        if path is not None:
            return path, status
        reasons.extend(tried)
    return None, "; ".join(reasons) + f" ({len(ends)} IK solutions of the end pose)"
