"""A planned pick and place (:func:`~curobo_lite.wrap.motion.pick_place.plan_pick_place`) run in
closed loop on the MuJoCo plant, and what MuJoCo's state says about it.

The plant (:class:`~curobo_lite.sim.MujocoPlant`) simulates the box as a free body (it rests on
the shelf board under gravity) and tracks the stages' trajectories sample by sample. Between
the approach and the retreat the weld between the hand's ``attached_object`` link and the box
is switched on where the box is (the grasp), and switched off after the place (the release).
Measured at every control step, from MuJoCo's state:

- the box's tilt: the angle between its z axis and the vertical;
- how far the box is from where the plan holds it (the hand's pose by FK of the simulated
  joint positions, times the planned box-in-hand transform), while carried;
- the contacts: robot-obstacle (none expected), robot-box (only the links the robot file
  exempts for a held object, the grasp; counted apart), box-obstacle (only the board it rests
  on before it is lifted off, and the table after it is let go).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from curobo_lite.sim import MujocoPlant
from curobo_lite.types import JointState
from curobo_lite.types.errors import InputValueError
from curobo_lite.wrap.base.attach import ATTACHED_LINK
from curobo_lite.wrap.motion.motion_gen import MotionGen
from curobo_lite.wrap.motion.pick_place import BOX, TABLE, PickPlacePlan, box_tilt
from curobo_lite.wrap.motion.straight_line import hand_matrices

#: the box is still on its board while less than this above where it was grasped (m)
ON_BOARD = 0.002


def _matrix_of(pose: np.ndarray) -> np.ndarray:
    w, x, y, z = pose[3:] / np.linalg.norm(pose[3:])
    matrix = np.eye(4)
    matrix[:3, :3] = [
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ]
    matrix[:3, 3] = pose[:3]
    return matrix


@dataclass
class PickPlaceRun:
    """What the plant measured, one row per control step.

    Attributes:
        time: ``[T]`` simulated seconds.
        stage: ``[T]`` the stage each row belongs to (``"settle"``, ``"grasp"`` and ``"let go"``
            for the pauses around the weld).
        position: ``[T, D]`` simulated joint positions.
        hand: ``[T, 3]`` the end effector's position (FK of ``position``).
        box: ``[T, 7]`` the box's pose (MuJoCo's free body).
        tilt: ``[T]`` the box's tilt from the vertical (rad).
        carried: ``[T]`` the weld holds the box.
        box_offset: ``[T]`` metres between the box and where the plan holds it (0 when not
            carried).
        grasp_contacts: the (link, box) pairs of the grasp (exempt links) that touched.
        unexpected_contacts: every other contact: (link, obstacle), (link, box) with a link not
            exempt, (box, obstacle) off its support.
        max_contacts: the most robot-obstacle contacts at any physics step (box excluded).
        placed_error: metres between the box's final position and the planned place.
    """

    time: np.ndarray
    stage: list[str]
    position: np.ndarray
    hand: np.ndarray
    box: np.ndarray
    tilt: np.ndarray
    carried: np.ndarray
    box_offset: np.ndarray
    grasp_contacts: set[tuple[str, str]] = field(default_factory=set)
    unexpected_contacts: set[tuple[str, str]] = field(default_factory=set)
    max_contacts: int = 0
    placed_error: float = float("nan")

    @property
    def max_tilt_carried(self) -> float:
        """The largest tilt (rad) while the weld holds the box."""
        return float(self.tilt[self.carried].max()) if self.carried.any() else 0.0

    @property
    def max_offset_carried(self) -> float:
        """The largest distance (m) of the box from where the plan holds it, while carried."""
        return float(self.box_offset.max())

    def summary(self) -> dict[str, Any]:
        """The numbers of the run, for a report or JSON."""
        return {
            "simulated_s": float(self.time[-1]),
            "carried_s": float(self.carried.sum() * (self.time[1] - self.time[0])),
            "max_tilt_carried_rad": self.max_tilt_carried,
            "max_box_offset_carried_m": self.max_offset_carried,
            "final_tilt_rad": float(self.tilt[-1]),
            "placed_error_m": self.placed_error,
            "grasp_contacts": sorted("-".join(p) for p in self.grasp_contacts),
            "unexpected_contacts": sorted("-".join(p) for p in self.unexpected_contacts),
        }


class _Recorder:
    """Steps the plant and sorts what it reports."""

    def __init__(self, plant: MujocoPlant, motion_gen: MotionGen, plan: PickPlacePlan) -> None:
        self.plant = plant
        self.motion_gen = motion_gen
        self.plan = plan
        ignore = motion_gen.robot_config.collision
        exempt = getattr(ignore, "self_collision_ignore", None) or {}
        self.grasp_links = set(exempt.get(ATTACHED_LINK, [])) | {ATTACHED_LINK}
        self.rows: dict[str, list] = {k: [] for k in ("time", "stage", "q", "box", "carried")}
        self.carried = False
        self.lift_from = None  # the box's height when grasped, until it leaves the board
        self.support: set[str] = set()
        self.grasp: set[tuple[str, str]] = set()
        self.unexpected: set[tuple[str, str]] = set()
        self.max_contacts = 0

    def step(self, command: JointState, stage: str) -> None:
        plant = self.plant
        plant.step(command)
        box = plant.object_pose(BOX)
        report = plant.last_contacts
        for link, other in report.pairs:
            if other != BOX:
                self.unexpected.add((link, other))
            elif link in self.grasp_links:
                self.grasp.add((link, other))
            else:
                self.unexpected.add((link, other))
        robot_obstacle = {p for p in report.pairs if p[1] != BOX}
        self.max_contacts = max(self.max_contacts, report.count if robot_obstacle else 0)
        on_board = self.lift_from is not None and box[2] - self.lift_from < ON_BOARD
        for pair in report.object_pairs:
            other = pair[1]
            if stage == "settle" and self.lift_from is None:
                self.support.add(other)  # what the box comes to rest on at the start
            allowed = (other in self.support and (not self.carried or on_board)) or (
                other == TABLE and not self.carried
            )
            if not allowed:
                self.unexpected.add(pair)
        rows = self.rows
        rows["time"].append(plant.time)
        rows["stage"].append(stage)
        rows["q"].append(plant.state.position[0].detach().cpu().double().numpy())
        rows["box"].append(box.copy())
        rows["carried"].append(self.carried)

    def hold(self, seconds: float, stage: str) -> None:
        """Command the current reference at rest for ``seconds``."""
        command = JointState.from_position(self.last_command.position.clone())
        for _ in range(max(1, round(seconds / self.plant.config.control_dt))):
            self.step(command, stage)

    def result(self) -> PickPlaceRun:
        rows = self.rows
        q = np.stack(rows["q"])
        box = np.stack(rows["box"])
        carried = np.asarray(rows["carried"])
        hands = hand_matrices(self.motion_gen, self.motion_gen.tensor_args.to_device(q))
        expected = hands @ self.plan.box_in_hand
        offset = np.linalg.norm(expected[:, :3, 3] - box[:, :3], axis=1) * carried
        boxes = np.stack([_matrix_of(p) for p in box])
        placed = np.asarray(self.plan.placed_pose[:3]) if self.plan.placed_pose else None
        return PickPlaceRun(
            time=np.asarray(rows["time"]),
            stage=rows["stage"],
            position=q,
            hand=hands[:, :3, 3],
            box=box,
            tilt=box_tilt(boxes),
            carried=carried,
            box_offset=offset,
            grasp_contacts=self.grasp,
            unexpected_contacts=self.unexpected,
            max_contacts=self.max_contacts,
            placed_error=float("nan")
            if placed is None
            else float(np.linalg.norm(box[-1, :3] - placed)),
        )


def run_pick_place(
    motion_gen: MotionGen,
    plan: PickPlacePlan,
    plant_config: dict[str, Any] | None = None,
    pause: float = 0.1,
) -> PickPlaceRun:
    """Run ``plan`` (a successful :class:`PickPlacePlan` of ``motion_gen``'s robot) in closed
    loop on a :class:`MujocoPlant` of its task's world, the box a free body (see the module
    docstring); ``plant_config``: :class:`~curobo_lite.sim.MujocoPlantConfig` options
    (``control_dt`` is the plan's ``interpolation_dt``); ``pause``: seconds at rest before
    the weld is switched on or off, and after the release."""
    if not plan.success:
        raise InputValueError(
            f"plan: expected a successful plan, received one that failed at '{plan.failed_stage}'"
        )
    dt = plan.stages[0].interpolation_dt
    config = {**(plant_config or {}), "control_dt": dt}
    first = plan.stages[0].trajectory.position[:1].clone()
    plant = MujocoPlant(
        motion_gen.robot_config,
        plan.task.world_config(),
        config,
        state=JointState.from_position(first),
        free_objects=(BOX,),
        weld_link=ATTACHED_LINK,
    )
    record = _Recorder(plant, motion_gen, plan)
    record.last_command = JointState.from_position(first)
    record.hold(pause, "settle")  # the box comes to rest on its board
    for stage in plan.stages:
        trajectory = stage.trajectory
        for k in range(1, trajectory.position.shape[0]):
            command = JointState(trajectory.position[k : k + 1], trajectory.velocity[k : k + 1])
            record.last_command = command
            record.step(command, stage.name)
        if stage.name == "approach":
            record.hold(pause, "grasp")
            plant.weld(BOX, True)
            record.carried = True
            record.lift_from = float(plant.object_pose(BOX)[2])
        elif stage.name == "place":
            record.hold(pause, "let go")
            plant.weld(BOX, False)
            record.carried = False
    record.hold(3 * pause, "settle")
    return record.result()
