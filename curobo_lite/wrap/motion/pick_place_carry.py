"""The pick and place's carry: the held box from where the retreat left it to above the table,
upright all the way.

Upright is all the carry must keep: the hand may turn about the vertical and its position is
free. A straight line of the hand asks more, and on the bundled shelf it often cannot be had:
from the shelf's front to the table beside it the line passes within about 0.33 m of the
base's vertical axis, where the Franka's wrist cannot follow the line without joint 6 passing
its upper limit (3.75 rad), and the lines guided toward other arm postures run joints 1, 2 or 7
into theirs (seeds 1, 2 and 10 of ``benchmarks/pick_place.py``). So :func:`upright_paths`
plans in joint space, in one batch for every candidate end:

1. the ends (:func:`carry_ends`): IK of the pose above the table for each of the task's turns
   (one batched :meth:`IKSolver.solve_batch`), refined by damped least squares to within
   :data:`~curobo_lite.wrap.motion.straight_line.LINE_TOLERANCE` of the pose; up to
   ``per_turn`` distinct solutions per turn, nearest the start first;
2. for each end the joint-space line from the start, cut ``spacing`` rad apart, each cut
   projected onto the upright configurations by damped least squares on the hand's two
   horizontal rotation axes only (base frame: :func:`~curobo_lite.wrap.ik.dls.dls_steps` with
   ``axes=[1, 1, 0, 0, 0, 0]``; position and yaw stay free, so the projection is small and
   the path stays near the joint-space line);
3. each path kept if every cut is within ``LINE_TOLERANCE``'s angle of upright and the
   joint-space segments between the cuts keep every collision sphere clear of the obstacles
   (every candidate in one batched query).

The valid paths come back in the order of the turns, then of the distance of their end from
the start. The caller takes the first whose set-down works and whose :func:`carry_corners` (the
path thinned to the joint-space segments that keep it upright,
:func:`~curobo_lite.wrap.motion.straight_line.thinned` judging the tilt only: the arm rests only
at those corners) are clear too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from curobo_lite.types import Pose
from curobo_lite.wrap.ik.dls import dls_steps, pose_error
from curobo_lite.wrap.motion.motion_gen import MotionGen
from curobo_lite.wrap.motion.straight_line import (
    LINE_TOLERANCE,
    SphereRule,
    hand_matrices,
    pose_rows,
    segments_valid,
    thinned,
)

#: the hand's tilt: its rotation about the base frame's horizontal axes (``[rx, ry, rz, x, y,
#: z]``, as a PoseCostMetric's weights)
TILT_AXES = (1.0, 1.0, 0.0, 0.0, 0.0, 0.0)


@dataclass
class CarryPath:
    """One candidate carry.

    Attributes:
        path: ``[K + 1, D]`` the projected cuts (the start first), upright, the segments
            between them checked.
        turn: the index of the turn (of the caller's list) its end reaches.
        index: the index of its end in the caller's ``ends``.
        position, quaternion: ``[K, 3]``, ``[K, 4]`` the upright hand poses of cuts 1..K
            (the tilt is judged against them).
    """

    path: torch.Tensor
    turn: int
    index: int
    position: torch.Tensor
    quaternion: torch.Tensor


@torch.no_grad()
def carry_corners(motion_gen: MotionGen, carry: CarryPath) -> torch.Tensor | None:
    """``[M, D]``: ``carry``'s path :func:`thinned` to the joint-space segments that keep every
    skipped cut within the line tolerance's angle of upright, those segments checked with every
    sphere clear; ``None`` where they are not (the caller tries the next candidate)."""
    judged = torch.as_tensor(TILT_AXES, dtype=carry.path.dtype, device=carry.path.device)
    judged = torch.cat((judged[3:], judged[:3]))  # pose_error's order: position first
    kinematics = motion_gen.checker.kinematics
    corners = thinned(kinematics, carry.path, carry.position, carry.quaternion, judged)
    if not bool(segments_valid(motion_gen, corners[:-1], corners[1:], SphereRule()).all()):
        return None
    return corners


def _upright(hands: np.ndarray, upright: np.ndarray) -> np.ndarray:
    """``[N, 4, 4]``: ``hands [N, 4, 4]`` with their rotation replaced by ``upright [3, 3]``
    turned about the vertical to each hand's yaw (the nearest upright orientation)."""
    relative = hands[:, :3, :3] @ upright.T
    yaw = np.arctan2(relative[:, 1, 0] - relative[:, 0, 1], relative[:, 0, 0] + relative[:, 1, 1])
    out = hands.copy()
    c, s = np.cos(yaw), np.sin(yaw)
    turn = np.zeros_like(relative)
    turn[:, 0, 0], turn[:, 0, 1], turn[:, 1, 0], turn[:, 1, 1], turn[:, 2, 2] = c, -s, s, c, 1.0
    out[:, :3, :3] = turn @ upright
    return out


@torch.no_grad()
def carry_ends(
    motion_gen: MotionGen,
    q0: torch.Tensor,
    targets: np.ndarray,
    per_turn: int = 3,
    dls_seeds: int | None = 64,
) -> list[tuple[int, torch.Tensor]]:
    """``(turn, end [D])`` per distinct IK solution of ``targets [P, 4, 4]`` (one batched IK,
    seeded with and ranked by ``q0 [D]``), refined to the line tolerance; up to ``per_turn``
    per target, nearest ``q0`` first. ``dls_seeds``: the IK's pose-phase seeds per target
    (``None``: its configured number; a few distinct solutions are all the carry needs)."""
    kinematics = motion_gen.checker.kinematics
    position, quaternion = pose_rows(targets, motion_gen.checker.tensor_args)
    seeds = q0.reshape(1, 1, -1).repeat(targets.shape[0], 1, 1)
    for fallback in (False, None):  # the quick pose phase; L-BFGS only where it found none
        result = motion_gen.ik_solver.solve_batch(
            Pose(position.float(), quaternion.float()),
            seed_config=seeds.float(),
            rank_config=q0.float(),
            lbfgs_fallback=fallback,
            dls_seeds=dls_seeds,
        )
        if bool(result.success.any()):
            break
    out = []
    for turn, found in enumerate(result.distinct_solutions):
        found = found.to(q0)
        found = found[(found - q0).abs().amax(-1).argsort()][:per_turn]
        if found.shape[0] == 0:
            continue
        count = found.shape[0]
        refined = dls_steps(
            kinematics, found, position[turn].expand(count, 3), quaternion[turn].expand(count, 4), 8
        )
        error = pose_error(
            kinematics, refined, position[turn].expand(count, 3), quaternion[turn].expand(count, 4)
        )
        near = (error[:, :3].norm(dim=-1) <= LINE_TOLERANCE[0]) & (
            error[:, 3:].norm(dim=-1) <= LINE_TOLERANCE[1]
        )
        out.extend((turn, end) for end in refined[near])
    return out


@torch.no_grad()
def upright_paths(
    motion_gen: MotionGen,
    q0: torch.Tensor,
    upright: np.ndarray,
    ends: list[tuple[int, torch.Tensor]],
    spacing: float = 0.05,
) -> tuple[list[CarryPath], str]:
    """The carries of the module docstring from ``q0 [D]`` to the configurations of ``ends``
    (:func:`carry_ends`, in the caller's order of preference), holding the hand's orientations
    ``Rz(yaw) upright [3, 3]`` (the hand that holds the box upright, turned about the
    vertical), and the reason when none is valid. ``spacing``: rad (largest joint step)
    between the projected cuts."""
    kinematics = motion_gen.checker.kinematics
    if not ends:
        return [], "IK_FAIL: no IK solution above the table for any turn"
    end = torch.stack([e for _, e in ends])  # [C, D]
    C, D = end.shape
    K = max(8, int(math.ceil(float((end - q0).abs().amax()) / spacing)))
    s = torch.linspace(0.0, 1.0, K + 1, dtype=q0.dtype, device=q0.device)
    guide = q0 + s[None, :, None] * (end - q0)[:, None, :]  # [C, K + 1, D]
    # project onto the upright configurations: the orientation held at each cut is the upright
    # hand turned to the cut's own yaw (the tilt alone is the error), twice (the yaw moves)
    axes = torch.as_tensor(TILT_AXES, dtype=q0.dtype, device=q0.device)
    flat = guide.reshape(-1, q0.shape[0])
    for round_ in range(3):
        position, quaternion = pose_rows(
            _upright(hand_matrices(motion_gen, flat), upright), motion_gen.checker.tensor_args
        )
        if round_ < 2:  # the last round: the targets the tilt is judged against
            flat = dls_steps(kinematics, flat, position, quaternion, 4, axes=axes, project=False)
    judged = torch.cat((axes[3:], axes[:3]))  # pose_error's order: position first
    tilt = (pose_error(kinematics, flat, position, quaternion) * judged).norm(dim=-1)
    paths = flat.reshape(C, K + 1, -1)
    paths[:, 0] = q0
    paths[:, -1] = end  # already on the pose (and upright)
    upright_ok = (tilt.reshape(C, K + 1) <= LINE_TOLERANCE[1]).all(-1)
    position = position.reshape(C, K + 1, 3)
    quaternion = quaternion.reshape(C, K + 1, 4)
    # the cuts and the joint-space segments between them, every candidate in one query (the
    # thinned corners of the one taken are checked again: carry_corners)
    ok = segments_valid(
        motion_gen, paths[:, :-1].reshape(-1, D), paths[:, 1:].reshape(-1, D), SphereRule()
    )
    valid = upright_ok & ok.reshape(C, K).all(-1)
    out = [
        CarryPath(paths[c], ends[c][0], c, position[c, 1:], quaternion[c, 1:])
        for c in range(C)
        if bool(valid[c])
    ]
    upright_count = int(upright_ok.sum())
    reason = (
        "SUCCESS"
        if out
        else f"COLLISION: {C} joint-space carries, {upright_count} upright, none collision-free"
    )
    return out, reason
