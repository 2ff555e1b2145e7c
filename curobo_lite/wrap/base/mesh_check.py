"""The robot side of the exact (mesh) collision checks of :class:`~curobo_lite.wrap.RobotWorld`.

:class:`MeshCheck` reads the robot file's ``collision_geometry`` URDF
(:func:`~curobo_lite.robot.link_geometry.load_urdf_shapes`), places every link's shapes on the
frame of :class:`~curobo_lite.robot.Kinematics` it rides on (links reached through fixed or
locked joints get their constant offset), and hands the placed links to
:class:`~curobo_lite.geom.exact_collision.ExactCollisionChecker` (coal).

The check judges what a plan can change: links that no active joint moves (the base and what
is fixed to it) are left out, even where ``world_collision_fixed_links`` puts their spheres in
the world checks (their clearance is a constant of the scene: cuRobo's franka.yml on cuRobo's
example table has panda_link0's mesh 32 um into the table top, and every plan was refused).
Only links that carry collision spheres (``collision_link_names``) are checked, as the spheres
are: a cuRobo robot file names the links that collide, and cuRobo's ur10e gives its base mesh
``base_link_inertia`` none.

Swept check between two configurations: while the joints move linearly by ``dq``, no point of a
link moves farther than ``sum_j |dq_j| * lever_j``, where ``lever_j`` bounds the distance from
joint ``j``'s axis to any point of the shapes downstream of it (the constant distances between
consecutive joint origins plus each shape's reach from its frame: a triangle-inequality bound,
valid in every configuration). A sample whose clearance is ``d`` clears the motion within
``d - margin`` of it, either way. Each piece is marched from both of its ends at once: from a
sample whose clearance is ``d``, the next sample is taken after a motion of
``max(resolution, d - margin)``, until the two fronts' clear stretches meet or the fronts are at
most ``resolution`` apart (where they would cross, one sample between them closes the piece).
Where the robot is far from everything it jumps, near obstacles it samples every
``resolution``. Every sample must have clearance ``>= margin``; then the whole motion keeps a
clearance of at least ``margin - resolution / 2`` (between two samples closer than
``resolution`` every point is within ``resolution / 2`` of where it was at one of them). A
segment is decided at its first sample below ``margin``: its other pieces stop.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import torch

from curobo_lite.geom.exact_collision import (
    ExactCollisionChecker,
    ExactDistance,
    LinkShape,
    quaternion_matrices,
    require_coal,
)
from curobo_lite.robot import Kinematics, RobotConfig
from curobo_lite.robot.joints import joint_transform_np
from curobo_lite.robot.link_geometry import load_urdf_shapes
from curobo_lite.types.errors import InputValueError

#: Default largest motion (m) of any point of the robot between two checked samples of the
#: swept mesh check: the motion keeps ``margin - DEFAULT_SWEEP_RESOLUTION / 2`` clearance.
DEFAULT_SWEEP_RESOLUTION = 1e-3

#: ``(link_position [B, L, 3], link_quaternion [B, L, 4])`` from ``Kinematics.forward``
LinkPoses = tuple[torch.Tensor, torch.Tensor]


def pose_rows(poses: LinkPoses | None, index: torch.Tensor) -> LinkPoses | None:
    """The rows ``index`` of link poses (``None`` stays ``None``)."""
    return None if poses is None else (poses[0][index], poses[1][index])


#: Samples per segment of the swept check at most (a guard against a zero resolution).
_MAX_SAMPLES_PER_SEGMENT = 100_000


def coal_available() -> bool:
    """Whether coal imports (the exact checks need it: ``pip install coal``)."""
    try:
        require_coal()
    except ImportError:
        return False
    return True


def no_geometry_message(robot_config: RobotConfig) -> str:
    return (
        f"robot {robot_config.name!r} ({robot_config.source}) has no exact collision "
        "geometry: add 'collision_geometry: <URDF with <collision> elements>' to its robot "
        "file (or give it a 'urdf_path' whose links have <collision> elements)"
    )


class MeshCheck:
    """A robot's exact collision shapes, placed by its :class:`Kinematics`, against a world.

    Args:
        robot_config: a robot with ``collision_geometry_path``.
        kinematics: the robot's kinematics (its ``link_names`` are the frames used).
        world: the obstacles (:class:`~curobo_lite.geom.WorldConfig` or ``None``).
        extra_shapes: ``{link: [LinkShape]}`` more shapes in link frames, e.g. an attached
            object's (:mod:`curobo_lite.wrap.base.attach`).
    """

    def __init__(
        self,
        robot_config: RobotConfig,
        kinematics: Kinematics,
        world: Any,
        extra_shapes: dict[str, list[LinkShape]] | None = None,
    ) -> None:
        path = robot_config.collision_geometry_path
        if path is None:
            raise InputValueError(no_geometry_message(robot_config))
        self.robot_config = robot_config
        self.kinematics = kinematics
        shapes = load_urdf_shapes(path)
        if not shapes:
            raise InputValueError(
                f"{robot_config.source}: collision_geometry: '{path}' has no <collision> elements"
            )
        frames, moving = self._chain_frames()
        collision = robot_config.collision
        tree = {j.parent for j in robot_config.joints} | {j.child for j in robot_config.joints}
        unknown = sorted(link for link in shapes if link not in tree)
        if unknown:
            raise InputValueError(
                f"{robot_config.source}: collision_geometry: links {unknown} of '{path}' are "
                f"not in the robot's tree"
            )
        #: links whose shapes are checked, their frame index and offset
        self.link_names: list[str] = []
        self._frame: list[int] = []
        self._offset: list[np.ndarray] = []
        self.fixed_links: list[str] = []
        unattached: list[str] = []
        link_shapes: dict[str, list[LinkShape]] = {}
        shapes = {link: [LinkShape(**item) for item in items] for link, items in shapes.items()}
        extra = extra_shapes or {}
        for link, added in extra.items():
            shapes[link] = shapes.get(link, []) + list(added)
        sphere_links = set(collision.link_names) if collision is not None else None
        for link, items in shapes.items():
            if sphere_links is not None and link not in sphere_links and link not in extra:
                continue  # the robot file's collision model leaves it out
            try:
                anchor, attach = robot_config.rigid_attachment(link)
            except InputValueError:
                unattached.append(link)
                continue
            frame, offset = frames[anchor]
            if frame < 0:  # on the base: a constant of the scene that no plan changes
                self.fixed_links.append(link)
                continue
            self.link_names.append(link)
            self._frame.append(frame)
            self._offset.append(offset @ attach)
            link_shapes[link] = items
        if unattached:
            warnings.warn(
                f"{robot_config.source}: collision_geometry: links {sorted(unattached)} move "
                "with joints that are neither in joint_names nor in lock_joints; their shapes "
                "are not checked",
                stacklevel=3,
            )
        self.checker = ExactCollisionChecker(link_shapes, world, self.link_names)
        self._frame_index = torch.tensor(self._frame, device=kinematics.tensor_args.device)
        self._offsets = np.stack(self._offset) if self._offset else np.zeros((0, 4, 4))
        self.lever = self._levers(link_shapes, moving)

    # --- construction ---------------------------------------------------------------------------

    def _chain_frames(self) -> tuple[dict[str, tuple[int, np.ndarray]], list[dict]]:
        """``{chain link: (frame, T)}``: the :attr:`Kinematics.link_names` index of the moving
        frame each chain link rides on (-1: the base) and its constant offset from it; and per
        moving joint ``{joint, reach}`` (the distance from the previous frame's origin to its
        own, largest over its range for a prismatic joint)."""
        config = self.robot_config
        frames = {config.base_link: (-1, np.eye(4))}
        frame, offset = -1, np.eye(4)
        moving: list[dict] = []
        low, high = (t.detach().cpu().double().numpy() for t in config.joint_limits.position)
        for joint in config.chain:
            step = offset @ joint_transform_np(joint, 0.0)
            if joint.is_moving:
                reach = float(np.linalg.norm(step[:3, 3]))
                if joint.type == "prismatic":
                    source = joint.mimic.joint if joint.mimic is not None else joint.name
                    j = config.joint_names.index(source)
                    mult = joint.mimic.multiplier if joint.mimic is not None else 1.0
                    off = joint.mimic.offset if joint.mimic is not None else 0.0
                    travel = max(abs(mult * low[j] + off), abs(mult * high[j] + off))
                    reach += travel
                moving.append({"joint": joint, "reach": reach})
                frame, offset = frame + 1, np.eye(4)
            else:
                offset = step
            frames[joint.child] = (frame, offset.copy())
        return frames, moving

    def _levers(self, link_shapes: dict[str, list[LinkShape]], moving: list[dict]) -> np.ndarray:
        """``[D]`` per actuated joint: the largest motion (m) of any checked point per radian
        (metre for a prismatic joint) of that joint, in any configuration."""
        config = self.robot_config
        # reach of each checked link's shapes from its frame origin
        extent = {}
        for link, offset in zip(self.link_names, self._offset, strict=True):
            best = 0.0
            for shape in link_shapes[link]:
                transform = offset @ shape.origin
                if shape.kind == "mesh":
                    points = shape.vertices @ transform[:3, :3].T + transform[:3, 3]
                    best = max(best, float(np.linalg.norm(points, axis=1).max()))
                else:
                    size = {
                        "box": lambda s: float(np.linalg.norm(s.size)) / 2,
                        "sphere": lambda s: float(s.radius),
                        "cylinder": lambda s: float(np.hypot(s.radius, s.length / 2)),
                        "capsule": lambda s: float(s.length / 2 + s.radius),
                    }[shape.kind](shape)
                    best = max(best, float(np.linalg.norm(transform[:3, 3])) + size)
            extent[link] = best
        lever = np.zeros(config.dof)
        for m, item in enumerate(moving):
            joint = item["joint"]
            arm = 0.0
            for link, frame in zip(self.link_names, self._frame, strict=True):
                if frame < m:
                    continue
                arm = max(
                    arm, sum(moving[n]["reach"] for n in range(m + 1, frame + 1)) + extent[link]
                )
            if joint.type == "prismatic":
                arm = 1.0 if any(f >= m for f in self._frame) else 0.0
            source = joint.mimic.joint if joint.mimic is not None else joint.name
            mult = abs(joint.mimic.multiplier) if joint.mimic is not None else 1.0
            lever[config.joint_names.index(source)] += mult * arm
        return lever

    # --- queries --------------------------------------------------------------------------------

    def update_world(self, world: Any) -> None:
        self.checker.update_world(world)

    def link_frames(self, q: torch.Tensor, poses: LinkPoses | None = None) -> np.ndarray:
        """``[B, Lc, 4, 4]`` float64 frames of the checked links at ``q [B, D]``; ``poses``:
        ``(link_position [B, L, 3], link_quaternion [B, L, 4])`` of ``q`` from this
        kinematics' ``forward`` (every link), when the caller has them (no second forward)."""
        if poses is None:
            # frames only: the collision spheres would double the cost of a large batch
            state = self.kinematics.forward(q, spheres=False)
            poses = (state.link_position, state.link_quaternion)
        position = poses[0][:, self._frame_index].detach().double().cpu().numpy()
        quaternion = poses[1][:, self._frame_index].detach().double().cpu().numpy()
        frames = np.zeros((q.shape[0], len(self.link_names), 4, 4))
        frames[..., :3, :3] = quaternion_matrices(quaternion)
        frames[..., :3, 3] = position
        frames[..., 3, 3] = 1.0
        return frames @ self._offsets

    def distance(
        self,
        q: torch.Tensor,
        stop_below: float = -float("inf"),
        max_distance: float = float("inf"),
        poses: LinkPoses | None = None,
    ) -> ExactDistance:
        """:class:`ExactDistance` of ``q [B, D]``; a configuration with a NaN or infinite
        joint value reads ``nan`` (it fails every ``>=`` check). ``stop_below`` and
        ``max_distance``: as in :meth:`ExactCollisionChecker.distance` (both at a threshold:
        a pass/fail check that measures only the pairs that could decide it). ``poses``: as
        in :meth:`link_frames`."""
        finite = torch.isfinite(q).all(-1).cpu().numpy()
        limits = {"stop_below": stop_below, "max_distance": max_distance}
        if finite.all():
            return self.checker.distance_frames(self.link_frames(q, poses), **limits)
        out = ExactDistance(np.full(q.shape[0], np.nan), [None] * q.shape[0], [None] * q.shape[0])
        rows = np.nonzero(finite)[0]
        if len(rows):
            index = torch.as_tensor(rows, device=q.device)
            part_poses = pose_rows(poses, index)
            part = self.checker.distance_frames(self.link_frames(q[index], part_poses), **limits)
            out.distance[rows] = part.distance
            for k, row in enumerate(rows):
                out.link[row], out.obstacle[row] = part.link[k], part.obstacle[k]
            out.pairs_measured = part.pairs_measured
        return out

    def sweep(
        self, q: torch.Tensor, margin: float, resolution: float
    ) -> tuple[np.ndarray, np.ndarray, int]:
        """Swept check of ``q [B, T, D]`` (see the module docstring).

        Returns:
            ``(ok [B], min_distance [B], samples)``: every waypoint and every sample between
            them has clearance ``>= margin``; the smallest clearance over the waypoints and
            samples; the samples taken between waypoints.
        """
        if not resolution > 0 or not np.isfinite(resolution):
            raise InputValueError(f"resolution: expected a positive length, received {resolution}")
        B, T, D = q.shape
        # a waypoint equal to the one before it (a trajectory padded with its last
        # configuration, a rest) is measured once
        repeat = np.zeros((B, T), dtype=bool)
        repeat[:, 1:] = (q[:, 1:] == q[:, :-1]).all(-1).cpu().numpy()
        if repeat.any():
            measured = np.flatnonzero(~repeat.reshape(-1))
            index = torch.as_tensor(measured, device=q.device)
            distance = self.distance(q.reshape(B * T, D)[index]).distance
            # each repeated waypoint reads the last measured one of its row
            last = np.maximum.accumulate(np.where(repeat, 0, np.arange(T)), axis=1)
            row_of = np.full(B * T, -1)
            row_of[measured] = np.arange(len(measured))
            waypoint = distance[row_of[(np.arange(B)[:, None] * T + last).reshape(-1)]]
            waypoint = waypoint.reshape(B, T)
        else:
            waypoint = self.distance(q.reshape(B * T, D)).distance.reshape(B, T)
        ok = (waypoint >= margin).all(1)
        low = waypoint.min(1)
        if T < 2:
            return ok, low, 0
        qa = q[:, :-1].reshape(-1, D)
        dq = (q[:, 1:] - q[:, :-1]).reshape(-1, D)
        lever = torch.as_tensor(self.lever, dtype=q.dtype, device=q.device)
        motion = (dq.abs() * lever).sum(-1).double().cpu().numpy()  # [S] metres per piece
        segment_of = np.repeat(np.arange(B), T - 1)
        # each piece is covered from both ends at once (half the sequential rounds of a
        # one-way march): a sample with clearance d >= margin clears the motion within
        # d - margin of it either way; fronts at most `resolution` apart also close a piece
        head, tail = np.zeros(len(motion)), np.ones(len(motion))
        head_d, tail_d = waypoint[:, :-1].reshape(-1), waypoint[:, 1:].reshape(-1)
        scale = np.where(motion > 0, motion, 1.0)
        # pieces of a segment that already failed are decided: they take no more samples
        active = (motion > 0) & ok[segment_of]
        samples = 0
        for _ in range(_MAX_SAMPLES_PER_SEGMENT):
            reach = head_d - margin + tail_d - margin
            active &= (tail - head) * motion > np.maximum(resolution, reach)
            if not active.any():
                break
            rows = np.nonzero(active)[0]
            forward = head[rows] + np.maximum(resolution, head_d[rows] - margin) / scale[rows]
            backward = tail[rows] - np.maximum(resolution, tail_d[rows] - margin) / scale[rows]
            # fronts whose next steps meet: one sample between them closes the piece
            meet = forward >= backward
            middle = 0.5 * (forward + backward)
            t_head = np.where(meet, middle, forward)
            two = rows[~meet]
            index = np.concatenate((rows, two))
            t = np.concatenate((t_head, backward[~meet]))
            index_t = torch.as_tensor(index, device=q.device)
            frac = torch.as_tensor(t, dtype=q.dtype, device=q.device)[:, None]
            d = self.distance(qa[index_t] + frac * dq[index_t]).distance
            samples += len(index)
            d_head, d_tail = d[: len(rows)], d[len(rows) :]
            head[rows], head_d[rows] = t_head, d_head
            tail[rows[meet]], tail_d[rows[meet]] = t_head[meet], d_head[meet]
            tail[two], tail_d[two] = backward[~meet], d_tail
            np.minimum.at(low, segment_of[index], d)
            bad = index[~(d >= margin)]
            ok[np.unique(segment_of[bad])] = False
            active &= ok[segment_of]
        # a segment the loop could not finish is not known to be clear
        ok[np.unique(segment_of[active])] = False
        return ok, low, samples
