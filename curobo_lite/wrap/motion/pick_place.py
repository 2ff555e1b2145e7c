"""Pick and place in the bundled shelf scene: a box taken from a shelf board to a table.

:class:`PickPlaceTask` is the scene (``bookshelf`` plus a box on a board and a table beside the
shelf) and its grasp set: side grasps at the box's centre, the hand coming in along the shelf's
depth turned by ``grasp_yaws`` about the vertical, fingers horizontal either way round
(``G = 2 * len(grasp_yaws)``, 10 by default). :func:`plan_pick_place` plans the stages, each a
timed trajectory (:class:`StagePlan`):

1. ``reach``: :meth:`MotionGen.plan_goalset` to the pre-grasp poses (each grasp backed off
   ``approach_distance`` along the hand's axis): whichever is reachable;
2. ``approach``: a straight line of the hand along its axis to the grasp (the box stays an
   obstacle: the fingers pass around it);
3. the box is attached (:meth:`MotionGen.attach_objects_to_robot`);
4. ``retreat``: straight up by ``lift`` (off the board), then straight out of the shelf by
   ``retreat_distance`` along its depth;
5. ``carry``: to above the table, the box upright all the way (its tilt along the plan is what
   FK of every sample says), the hand turned about the vertical until it points away from the
   robot's base as it pointed into the shelf (or turned 0.5 rad either way off that, or not at
   all: :meth:`PickPlaceTask.place_turns` in order): a joint-space path projected onto the
   upright configurations (:mod:`~curobo_lite.wrap.motion.pick_place_carry`, all candidate
   ends in one batch), from where the retreat ended or after a straight move to the table's
   height; where none is clear, the straight lines of the hand there;
6. ``place``: straight down by ``lift`` (the box ``place_clearance`` above the table);
7. the box is detached and returns to the world where it was put;
8. ``release``: straight back along the hand's axis by ``approach_distance``.

A straight line is solved as waypoints ``step`` apart (damped least squares from the previous
configuration, :func:`~curobo_lite.wrap.ik.dls.dls_steps`; each within 1 mm and 0.01 rad of its
pose), checked on the collision spheres, which must all be clear of the obstacles (so the real
robot is, and the MuJoCo plant built of the spheres sees no contact) except the hand's and
fingers' against the box they grasp or let go of, and the held box's cover spheres within the
exact band while it leaves its board or is set down (:class:`SphereRule`: there the true shapes
judge), and timed by
:func:`~curobo_lite.wrap.motion.path_timing.time_polyline` (the motion stays on the checked
segments). Every stage's trajectory is then judged by the exact mesh check (coal, the held box's
true shape included) swept between samples: its clearance is in the stage's report, and a stage
below ``-mesh_tolerance`` fails the plan.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from curobo_lite.geom.world import Cuboid, WorldConfig
from curobo_lite.opt.options import check_keys
from curobo_lite.types import JointState, Pose, matrix_to_quat
from curobo_lite.types.errors import InputValueError
from curobo_lite.wrap.base.attach import ATTACHED_LINK
from curobo_lite.wrap.motion.motion_gen import EXACT_BAND, MotionGen
from curobo_lite.wrap.motion.path_timing import time_polyline
from curobo_lite.wrap.motion.pick_place_carry import carry_corners, carry_ends, upright_paths
from curobo_lite.wrap.motion.straight_line import (
    SphereRule,
    guided_line,
    hand_matrices,
    line_waypoints,
    pose_rows,
    rotation_matrix,
    segments_valid,
    straight_line,
)

BOX = "box"
TABLE = "table"
#: turns (rad) of the side grasps about the vertical (as the MotionBenchMaker-style scenes')
GRASP_YAWS = (0.0, -0.3, 0.3, -0.6, 0.6)
#: the stages whose lines judge the held box's spheres within the exact band on its true shape
#: (it leaves its board, it is set down on the table: its cover spheres bulge past it)
HELD_BAND_STAGES = ("retreat", "place")
#: the stages where the hand and fingers are judged without the (unheld) box: they close around
#: it and back away from it; the stage's exact mesh check judges both true shapes. Every other
#: sphere stays clear of every obstacle in every stage, as the MuJoCo plant (made of the
#: spheres; the hand and fingers do not collide with its free box) needs
GRASP_STAGES = ("approach", "release")
STAGES = ("reach", "approach", "retreat", "carry", "place", "release")


@dataclass
class PickPlaceTask:
    """The scene and the motion's distances (metres, base frame).

    Attributes:
        world: the shelf (a bundled world name or file); the box and the table are added.
        box_dims: the box's sides ``[3]``; it stands upright.
        box_position: its centre on a board of the shelf (``bookshelf``: boards' tops at
            z = 0.26, 0.51, 0.76 m, fronts at x = 0.55 m).
        table_dims, table_position: the table beside the shelf (centre of the slab).
        place_xy: where the box's centre goes on the table ``[2]``.
        grasp_yaws: turns (rad) of the grasp direction about the vertical, from straight into
            the shelf; each with the fingers either way round.
        approach_distance: the straight approach and release along the hand's axis.
        lift: the straight lift off the board and the set-down onto the table.
        retreat_distance: the straight retreat out of the shelf after the lift, along the
            shelf's depth (the base frame's -x).
        place_clearance: the box's bottom above the table when it is let go.
        step: metres between the waypoints of a straight line.
        tip_offset: the finger pads' centre along the end effector's z (the Franka's
            ``panda_hand``: 0.1034 m).
    """

    world: str = "bookshelf"
    box_dims: list[float] = field(default_factory=lambda: [0.05, 0.05, 0.12])
    box_position: list[float] = field(default_factory=lambda: [0.64, 0.1, 0.571])
    table_dims: list[float] = field(default_factory=lambda: [0.3, 0.4, 0.02])
    table_position: list[float] = field(default_factory=lambda: [0.35, -0.6, 0.38])
    place_xy: list[float] = field(default_factory=lambda: [0.35, -0.6])
    grasp_yaws: list[float] = field(default_factory=lambda: list(GRASP_YAWS))
    approach_distance: float = 0.08
    lift: float = 0.03
    retreat_distance: float = 0.2
    place_clearance: float = 0.005
    step: float = 0.02
    tip_offset: float = 0.1034

    def __post_init__(self) -> None:
        for name, size in (
            ("box_dims", 3),
            ("box_position", 3),
            ("table_dims", 3),
            ("table_position", 3),
            ("place_xy", 2),
        ):
            value = getattr(self, name)
            if isinstance(value, str) or len(list(value)) != size:
                raise InputValueError(f"{name}: expected {size} numbers, received {value!r}")
            values = [float(v) for v in value]
            if not all(math.isfinite(v) for v in values):
                raise InputValueError(f"{name}: expected finite numbers, received {value!r}")
            setattr(self, name, values)
        if not all(d > 0.0 for d in self.box_dims + self.table_dims):
            raise InputValueError(
                f"box_dims, table_dims: expected sides > 0, received {self.box_dims} and "
                f"{self.table_dims}"
            )
        if not self.grasp_yaws:
            raise InputValueError("grasp_yaws: expected at least one yaw, received []")
        self.grasp_yaws = [float(v) for v in self.grasp_yaws]
        for name in ("approach_distance", "lift", "retreat_distance", "step", "tip_offset"):
            if not float(getattr(self, name)) > 0.0:
                raise InputValueError(
                    f"{name}: expected metres > 0, received {getattr(self, name)!r}"
                )
        if not 0.0 <= float(self.place_clearance) < 0.05:
            raise InputValueError(
                f"place_clearance: expected metres in [0, 0.05), received {self.place_clearance!r}"
            )

    def place_turns(self, toward_radial: float) -> list[float]:
        """The hand's turns about the vertical (rad) the carry tries, in order: pointing away
        from the base at the table (``toward_radial``), that turned by ``-+ 0.5`` rad, none."""
        return [toward_radial, toward_radial - 0.5, toward_radial + 0.5, 0.0]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> PickPlaceTask:
        data = dict(data or {})
        check_keys("pick_place", data, list(cls.__dataclass_fields__))
        return cls(**data)

    @classmethod
    def sampled(cls, seed: int, **overrides: Any) -> PickPlaceTask:
        """A box at a seeded place on the low or middle board of ``bookshelf``: depth 0.60 to
        0.68 m, across -0.3 to 0.3 m."""
        rng = np.random.default_rng(seed)
        board_top = float(rng.choice([0.26, 0.51]))
        dims = overrides.get("box_dims", cls.__dataclass_fields__["box_dims"].default_factory())
        position = [
            float(rng.uniform(0.60, 0.68)),
            float(rng.uniform(-0.3, 0.3)),
            board_top + 0.5 * float(dims[2]) + 0.001,
        ]
        return cls(box_position=position, **overrides)

    def world_config(self) -> WorldConfig:
        """The shelf with the box on its board and the table."""
        world = WorldConfig.load(self.world).copy()
        world.add(Cuboid(BOX, dims=list(self.box_dims), pose=[*self.box_position, 1, 0, 0, 0]))
        world.add(
            Cuboid(TABLE, dims=list(self.table_dims), pose=[*self.table_position, 1, 0, 0, 0])
        )
        return world

    @property
    def place_position(self) -> list[float]:
        """The box's centre when let go ``[3]``."""
        top = self.table_position[2] + 0.5 * self.table_dims[2]
        return [*self.place_xy, top + 0.5 * self.box_dims[2] + self.place_clearance]

    def grasp_matrices(self) -> np.ndarray:
        """``[G, 4, 4]`` hand poses of the grasp set: the pads' centre at the box's centre, the
        hand's z horizontal (into the shelf turned by a yaw), its y horizontal (the fingers
        close across the box), its x up or down."""
        out = []
        for yaw in self.grasp_yaws:
            z = np.array([math.cos(yaw), math.sin(yaw), 0.0])
            for flip in (1.0, -1.0):
                y = flip * np.cross([0.0, 0.0, 1.0], z)
                matrix = np.eye(4)
                matrix[:3, :3] = np.stack([np.cross(y, z), y, z], axis=1)
                matrix[:3, 3] = np.asarray(self.box_position) - self.tip_offset * z
                out.append(matrix)
        return np.stack(out)


@dataclass
class StagePlan:
    """One stage of the pick and place.

    Attributes:
        name: one of :data:`STAGES`.
        trajectory: :class:`JointState` ``[T, D]``, ``interpolation_dt`` apart (``None`` when
            the stage failed before it had one).
        holding: the box is attached during the stage.
        success: planned and judged collision-free.
        status: ``"SUCCESS"`` or why not.
        plan_time: seconds to plan the stage.
        mesh_clearance: smallest clearance (m) of the robot's meshes and the held box's true
            shape to the obstacles along the trajectory, swept (coal).
        max_tilt: the box's largest tilt from upright (rad) along the trajectory by FK, while
            held (0 otherwise).
        interpolation_dt: seconds between the trajectory's samples.
    """

    name: str
    trajectory: JointState | None
    holding: bool
    success: bool
    status: str
    plan_time: float
    mesh_clearance: float = float("nan")
    max_tilt: float = 0.0
    interpolation_dt: float = 0.01

    @property
    def motion_time(self) -> float:
        """Seconds the trajectory lasts."""
        if self.trajectory is None:
            return 0.0
        return (self.trajectory.position.shape[0] - 1) * self.interpolation_dt


@dataclass
class PickPlacePlan:
    """The stages of :func:`plan_pick_place`.

    Attributes:
        task: the task planned.
        stages: the :class:`StagePlan` s in order, up to the first that failed.
        goalset_index: the grasp of :meth:`PickPlaceTask.grasp_matrices` reached (``None`` when
            the reach failed).
        box_in_hand: ``[4, 4]`` the box's pose in the end effector's frame while held.
        placed_pose: ``[7]`` where the box was put (the world's box after the plan).
        held: what :meth:`MotionGen.attach_objects_to_robot` returned at the grasp (the box's
            spheres and true shape on the ``attached_object`` link; a viewer draws them).
    """

    task: PickPlaceTask
    stages: list[StagePlan]
    goalset_index: int | None = None
    box_in_hand: np.ndarray | None = None
    placed_pose: list[float] | None = None
    held: Any = None

    @property
    def success(self) -> bool:
        """Every stage planned and judged collision-free."""
        return len(self.stages) == len(STAGES) and all(s.success for s in self.stages)

    @property
    def failed_stage(self) -> str | None:
        """The first stage that failed (``None`` on success)."""
        for stage in self.stages:
            if not stage.success:
                return stage.name
        return None if self.success else STAGES[len(self.stages)]

    def stage(self, name: str) -> StagePlan:
        for stage in self.stages:
            if stage.name == name:
                return stage
        raise InputValueError(
            f"name: expected one of {[s.name for s in self.stages]}, received {name!r}"
        )


def box_tilt(matrices: np.ndarray) -> np.ndarray:
    """``[T]`` angle (rad) between the box's z axis in ``matrices [T, 4, 4]`` and the vertical."""
    return np.arccos(np.clip(matrices[:, 2, 2], -1.0, 1.0))


class _Planner:
    """The state of one :func:`plan_pick_place` run."""

    def __init__(self, motion_gen: MotionGen, task: PickPlaceTask, mesh_tolerance: float) -> None:
        self.motion_gen = motion_gen
        self.task = task
        self.mesh_tolerance = mesh_tolerance
        self.dt = motion_gen.config.interpolation_dt
        self.plan = PickPlacePlan(task, [])
        exempt = getattr(motion_gen.robot_config.collision, "self_collision_ignore", None) or {}
        self.grasp_links = tuple(exempt.get(ATTACHED_LINK, ()))

    def finish(
        self, name: str, trajectory: JointState | None, status: str, t0: float, holding: bool
    ) -> StagePlan:
        stage = StagePlan(
            name,
            trajectory,
            holding,
            False,
            status,
            time.perf_counter() - t0,
            interpolation_dt=self.dt,
        )
        if trajectory is not None and status == "SUCCESS":
            _, clearance = self.motion_gen.checker.trajectory_mesh_report(trajectory.position)
            stage.mesh_clearance = float(clearance)
            stage.success = stage.mesh_clearance >= -self.mesh_tolerance
            if not stage.success:
                stage.status = f"MESH_COLLISION ({1e3 * stage.mesh_clearance:.1f} mm)"
            if holding:
                hands = hand_matrices(self.motion_gen, trajectory.position)
                stage.max_tilt = float(box_tilt(hands @ self.plan.box_in_hand).max())
            stage.plan_time = time.perf_counter() - t0
        self.plan.stages.append(stage)
        return stage

    def rule(self, name: str) -> SphereRule:
        """How the stage's lines are judged on the spheres (see :class:`SphereRule`)."""
        if name in GRASP_STAGES:
            return SphereRule(grasp_links=self.grasp_links, grasp_obstacle=BOX)
        held = name in HELD_BAND_STAGES and self.motion_gen.exact_check
        return SphereRule(held_band=EXACT_BAND if held else 0.0)

    def timed(
        self, name: str, path: torch.Tensor | None, status: str, t0: float, holding: bool
    ) -> StagePlan:
        """The stage of the checked joint-space corners ``path [K, D]`` (``None``: failed)."""
        trajectory = None
        if path is not None:
            limits = self.motion_gen.robot_config.joint_limits
            trajectory = time_polyline(path, limits, self.dt)
        return self.finish(name, trajectory, status, t0, holding)

    def line(
        self, name: str, q0: torch.Tensor, poses: np.ndarray, holding: bool, long: bool = False
    ) -> StagePlan:
        t0 = time.perf_counter()
        rule = self.rule(name)
        path, status = guided_line(self.motion_gen, q0, poses, guide_first=long, rule=rule)
        return self.timed(name, path, status, t0, holding)

    def set_down(self, q_above: torch.Tensor) -> tuple[torch.Tensor | None, str]:
        """The place's corners: straight down by ``lift`` from where the carry ended."""
        reached = hand_matrices(self.motion_gen, q_above[None])[0]
        lowered = reached.copy()
        lowered[2, 3] -= self.task.lift
        poses = line_waypoints(reached, lowered, self.task.step)
        return straight_line(self.motion_gen, q_above, poses, rule=self.rule("place"))

    def carry(self, q_back: torch.Tensor, hand: np.ndarray, backed: np.ndarray) -> StagePlan | None:
        """The carry and the set-down after it: the first carry whose set-down works and that
        passes the exact mesh check, tried in this order: the joint-space carries holding the
        box upright (:func:`upright_paths`) from where the retreat ended, the same after a
        straight move up or down to the height above the table, then the straight lines of
        the hand (to above the table, or up or down to its height first, then across), each
        for the turns of :meth:`PickPlaceTask.place_turns` in order. Returns the place
        (``None`` when no carry was found; the carry's stage says why)."""
        task, plan, motion_gen = self.task, self.plan, self.motion_gen
        t0 = time.perf_counter()
        heading = math.atan2(hand[1, 2], hand[0, 2])
        radial = math.atan2(task.place_xy[1], task.place_xy[0])
        aboves = []
        for turn in task.place_turns(radial - heading):
            put = np.eye(4)
            put[:3, :3] = rotation_matrix(np.array([0.0, 0.0, turn])) @ hand[:3, :3]
            put[:3, 3] = np.asarray(task.place_position) - put[:3, :3] @ plan.box_in_hand[:3, 3]
            put[2, 3] += task.lift
            aboves.append(put)
        raised = backed.copy()
        raised[2, 3] = aboves[0][2, 3]
        reasons = []
        ends = carry_ends(motion_gen, q_back, np.stack(aboves))

        def vias():  # where the joint-space carries start: checked corners from q_back
            yield q_back[None], ""
            up, status = guided_line(  # straight up or down to the table's height
                motion_gen, q_back, line_waypoints(backed, raised, task.step), rule=SphereRule()
            )
            if up is None:
                reasons.append(f"raise: {status}")
            else:
                yield up, "raised: "

        def joint_space():  # the upright joint-space carries from each via
            for first, label in vias():
                paths, reason = upright_paths(motion_gen, first[-1], hand[:3, :3], ends)
                reasons.append(f"{label}{reason}")
                for carry in paths:  # in order; the set-down first: it is cheaper
                    down, status = self.set_down(carry.path[-1])
                    if down is None:
                        reasons.append(f"{label}set-down from turn {carry.turn}: {status}")
                        continue
                    corners = carry_corners(motion_gen, carry)
                    if corners is None:
                        reasons.append(f"{label}turn {carry.turn}: thinned carry not clear")
                        continue
                    yield torch.cat((first, corners[1:])), down

        def straight():  # the straight lines of the hand, guided toward the ends' IK solutions
            for index, above in enumerate(aboves):
                guides = [end for turn, end in ends if turn == index]
                guides = torch.stack(guides) if guides else q_back[None, :0]
                raised_above = backed.copy()
                raised_above[2, 3] = above[2, 3]
                for poses in (
                    line_waypoints(backed, above, task.step),
                    np.concatenate(
                        (
                            line_waypoints(backed, raised_above, task.step),
                            line_waypoints(raised_above, above, task.step),
                        )
                    ),
                ):
                    path, status = guided_line(
                        motion_gen,
                        q_back,
                        poses,
                        guide_first=True,
                        rule=SphereRule(),
                        solutions=guides,
                    )
                    reasons.append(status)
                    if path is not None:
                        yield path, None

        for path, down in itertools.chain(joint_space(), straight()):
            if down is None:  # cheap: before the carry's mesh check
                down, status = self.set_down(path[-1])
                if down is None:
                    reasons.append(f"set-down: {status}")
                    continue
            del plan.stages[3:]  # the failed try's carry (and set-down)
            carry = self.timed("carry", path, "SUCCESS", t0, True)
            if carry.success:
                place = self.timed("place", down, "SUCCESS", time.perf_counter(), True)
                if place.success:
                    return place
        del plan.stages[3:]
        self.timed("carry", None, "; ".join(reasons), t0, True)
        return None


def pick_place_motion_gen(
    task: PickPlaceTask, robot: str = "franka", tensor_args: Any = None
) -> MotionGen:
    """A :class:`MotionGen` for :func:`plan_pick_place` in ``task``'s world: its roadmap and IK
    judge the spheres alone (``roadmap={"exact_band": 0}``), so the reach, like every other
    stage, keeps the collision spheres clear of the obstacles (the MuJoCo plant is built of
    them; the spheres bound the meshes, so the real robot is clear too)."""
    return MotionGen.from_config(
        robot, task.world_config(), tensor_args=tensor_args, roadmap={"exact_band": 0.0}
    )


def plan_pick_place(
    motion_gen: MotionGen,
    task: PickPlaceTask,
    start_state: JointState,
    mesh_tolerance: float = 1e-3,
) -> PickPlacePlan:
    """Plan the stages of the module docstring from ``start_state [1, D]`` in ``motion_gen``'s
    world, which must be ``task.world_config()`` (the box among its obstacles). Stops at the
    first stage that fails. Afterwards the box is detached again and, when the place was
    planned, the world's box stands where it was put."""
    if BOX not in motion_gen.checker.world_collision.obstacle_names:
        raise InputValueError(
            f"motion_gen: expected a world with the task's '{BOX}' (task.world_config()), "
            f"received obstacles {motion_gen.checker.world_collision.obstacle_names}"
        )
    run = _Planner(motion_gen, task, mesh_tolerance)
    plan = run.plan
    grasps = task.grasp_matrices()
    pre = grasps.copy()
    pre[:, :3, 3] -= task.approach_distance * grasps[:, :3, 2]
    tensor_args = motion_gen.checker.tensor_args
    # 1. reach a pre-grasp of the set
    t0 = time.perf_counter()
    position, quaternion = pose_rows(pre, tensor_args)
    result = motion_gen.plan_goalset(start_state, Pose(position.float(), quaternion.float()))
    status = result.status.value if hasattr(result.status, "value") else str(result.status)
    if result.success:  # judged as the lines are: the spheres clear but the hand's at the box
        q = result.interpolated_plan.position
        ok = segments_valid(motion_gen, q[:-1], q[1:], run.rule("approach"))
        if not bool(ok.all()):
            status = (
                f"SPHERE_CONTACT at sample {int((~ok).nonzero()[0, 0]) + 1} of {q.shape[0]}: "
                "the reach grazes an obstacle within MotionGen's exact band (plan with "
                "pick_place_motion_gen: the band off)"
            )
    reach = run.finish(
        "reach", result.interpolated_plan if result.success else None, status, t0, False
    )
    if not reach.success:
        return plan
    index = int(result.goalset_index)
    plan.goalset_index = index
    grasp = grasps[index]
    # 2. approach along the hand's axis
    q = reach.trajectory.position[-1]
    approach = run.line("approach", q, line_waypoints(pre[index], grasp, task.step), False)
    if not approach.success:
        return plan
    q_grasp = approach.trajectory.position[-1]
    hand = hand_matrices(motion_gen, q_grasp[None])[0]
    box = np.eye(4)
    box[:3, 3] = task.box_position
    plan.box_in_hand = np.linalg.inv(hand) @ box
    # 3. attach; 4. lift, then back out
    plan.held = motion_gen.attach_objects_to_robot(JointState.from_position(q_grasp[None]), [BOX])
    try:
        lifted = hand.copy()
        lifted[2, 3] += task.lift
        backed = lifted.copy()
        # straight out of the shelf along its depth (the base frame's x), whatever the grasp's
        # yaw: backing out along a turned hand's axis runs it into a side panel (seed 0)
        backed[0, 3] -= task.retreat_distance
        poses = np.concatenate(
            (line_waypoints(hand, lifted, task.step), line_waypoints(lifted, backed, task.step))
        )
        retreat = run.line("retreat", q_grasp, poses, True)
        if not retreat.success:
            return plan
        # 5. carry the box upright to above the table; 6. set it down
        place = run.carry(retreat.trajectory.position[-1], hand, backed)
        if place is None or not place.success:
            return plan
    finally:
        motion_gen.detach_object_from_robot()
    # 7. the box stays where it was put; 8. back away from it
    q_put = place.trajectory.position[-1]
    placed = hand_matrices(motion_gen, q_put[None])[0] @ plan.box_in_hand
    plan.placed_pose = [
        *placed[:3, 3].tolist(),
        *matrix_to_quat(torch.as_tensor(placed[:3, :3])).tolist(),
    ]
    world = task.world_config()
    world.get(BOX).pose = list(plan.placed_pose)
    motion_gen.update_world(world)
    hand_put = hand_matrices(motion_gen, q_put[None])[0]
    away = hand_put.copy()
    away[:3, 3] -= task.approach_distance * hand_put[:3, 2]
    run.line("release", q_put, line_waypoints(hand_put, away, task.step), False)
    return plan


def concatenate(stages: Sequence[StagePlan]) -> tuple[JointState, list[tuple[str, int, int]]]:
    """The stages' trajectories one after the other ``[T, D]`` (each stage's first sample, the
    previous one's last, dropped), and ``(name, first row, end row)`` per stage."""
    positions, velocities, spans, row = [], [], [], 0
    for i, stage in enumerate(stages):
        trajectory = stage.trajectory
        cut = 0 if i == 0 else 1
        position = trajectory.position[cut:]
        velocity = (
            trajectory.velocity[cut:]
            if trajectory.velocity is not None
            else torch.zeros_like(position)
        )
        positions.append(position)
        velocities.append(velocity)
        spans.append((stage.name, row, row + position.shape[0]))
        row += position.shape[0]
    return JointState(torch.cat(positions), torch.cat(velocities)), spans
