"""Grasp planning problems in MotionBenchMaker's scene families, checked on collision meshes.

A problem of ``(family, seed, index)`` is deterministic: its own random stream
(:func:`family_rng`) samples scenes until one yields

- a start: MBM's fixed start, the robot's retract configuration (their ``panda.yaml``
  ``robot_state`` is the same "ready" pose), except in ``table_under_pick``, whose start is an
  IK solution for MBM's start query (the hand under the table top); the start must pass the
  mesh check;
- a goal: one of the target's grasp poses (a target drawn from the scene's candidates, its
  grasps tried in the family's order) with an IK configuration that passes the mesh check
  with the target present and keeps the hand's mesh at least :data:`TARGET_CLEARANCE` m from
  the target (the fingers straddle it without touching).

The IK runs with the target object *removed* from the world: at a grasp the fingers straddle
the object a centimetre or less from it, the finger spheres reach up to 3 mm past the fingers
and the IK's collision band adds 2 mm, so sphere-based IK would reject (or push away from) the
tightest true grasps, and the problem set would depend on the planner's own collision model.
The configuration it finds is then judged on the exact meshes with the object present.

The exact check is ``RobotWorld.validate_mesh`` / ``RobotWorld.mesh_distance`` (the Franka's
collision meshes); on a RobotWorld without them (older code), the sphere check stands in and
the problem records ``check: spheres`` (then the target-clearance test is skipped: spheres
cannot judge it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from curobo_lite.geom import WorldConfig
from curobo_lite.robot import RobotConfig
from curobo_lite.scenes.families import FAMILIES, SceneSample, family_rng, sample_scene
from curobo_lite.types import Pose, TensorDeviceType
from curobo_lite.types.errors import CuroboLiteError, InputValueError
from curobo_lite.wrap.base.robot_world import RobotWorld
from curobo_lite.wrap.ik.solver import IKSolver

#: Smallest distance (m) between the robot's meshes and the grasped object at the goal.
TARGET_CLEARANCE = 0.003
#: Grasp poses per L-BFGS IK call of the generator.
_IK_CHUNK = 4
#: Decimal places of the written problems (1e-5 m / rad).
DECIMALS = 5


def has_mesh_check(checker: RobotWorld) -> bool:
    """Whether ``checker`` has the exact (mesh) collision check."""
    return bool(getattr(checker, "has_collision_geometry", False))


def mesh_valid(checker: RobotWorld, q: torch.Tensor) -> torch.Tensor:
    """``[B]`` the exact check of ``q [B, D]`` (the sphere check where there are no meshes)."""
    if has_mesh_check(checker):
        return checker.validate_mesh(q)
    return checker.validate(q)


def _round(values: Any) -> Any:
    if isinstance(values, (list, tuple)):
        return [_round(v) for v in values]
    if isinstance(values, dict):
        return {k: _round(v) for k, v in values.items()}
    if isinstance(values, float):
        value = round(values, DECIMALS)
        return 0.0 if value == 0.0 else value
    return values


@dataclass
class MbmProblem:
    """One planning problem: from ``start`` to the ``panda_hand`` pose ``goal_pose`` (a grasp
    of ``target``), ``goal_config`` an IK configuration of it; all in the robot base frame."""

    family: str
    seed: int
    index: int
    world: WorldConfig
    start: list[float]
    goal_pose: list[float]
    goal_config: list[float]
    target: str
    check: str = "mesh"
    tries: int = 1

    @property
    def name(self) -> str:
        return f"{self.family}_{self.seed}_{self.index:04d}"

    def to_dict(self) -> dict[str, Any]:
        """Compact mapping (values rounded to 1e-5); the world in cuRobo's world layout."""
        return {
            "name": self.name,
            "family": self.family,
            "seed": self.seed,
            "index": self.index,
            "target": self.target,
            "check": self.check,
            "start": _round(self.start),
            "goal_pose": _round(self.goal_pose),
            "goal_config": _round(self.goal_config),
            "world": _round(self.world.to_dict()),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MbmProblem:
        return cls(
            family=data["family"],
            seed=int(data["seed"]),
            index=int(data["index"]),
            world=WorldConfig.from_dict(data["world"]),
            start=[float(v) for v in data["start"]],
            goal_pose=[float(v) for v in data["goal_pose"]],
            goal_config=[float(v) for v in data["goal_config"]],
            target=data["target"],
            check=data.get("check", "mesh"),
        )


def draw_scene(family: str, rng: np.random.Generator) -> tuple[SceneSample, str]:
    """One draw of :meth:`ProblemGenerator.make`: a scene of ``family`` and its target object
    (replaying ``rng`` replays a problem's scenes)."""
    scene = sample_scene(family, rng)
    targets = sorted(scene.grasps)
    return scene, targets[int(rng.integers(len(targets)))]


class ProblemGenerator:
    """Makes :class:`MbmProblem` s; keeps one IK solver and two checkers (rebuilt worlds are
    swapped in, nothing is recompiled).

    Args:
        robot: the robot (its ``ee_link`` must be ``panda_hand``: grasps are hand poses).
        tensor_args: device and dtype.
        ik_seeds: IK seeds per grasp pose.
        max_scenes: scenes drawn per problem before giving up.
        dls_iterations: the IK's damped least-squares steps before its L-BFGS (see
            :class:`~curobo_lite.wrap.IKSolverConfig`; 0: L-BFGS alone, as the problem files
            before 2026-11-26 were made).
    """

    def __init__(
        self,
        robot: str | RobotConfig = "franka",
        tensor_args: TensorDeviceType | None = None,
        ik_seeds: int = 24,
        max_scenes: int = 60,
        dls_iterations: int = 16,
    ) -> None:
        if not isinstance(robot, RobotConfig):
            robot = RobotConfig.load(robot)
        self.robot_config = robot
        self.tensor_args = tensor_args or robot.tensor_args
        self.max_scenes = int(max_scenes)
        self.ik = IKSolver.from_config(robot, None, self.tensor_args, num_seeds=ik_seeds)
        # the quick first try: the pose alone (damped least squares), collision-free seeds kept
        self.quick_ik = None
        if dls_iterations > 0:
            self.quick_ik = IKSolver.from_config(
                robot,
                self.ik.world_collision,
                self.tensor_args,
                num_seeds=ik_seeds,
                dls_iterations=dls_iterations,
                lbfgs_fallback=False,
            )
        self.checker = RobotWorld.from_config(robot, None, self.tensor_args)
        self.target_checker = RobotWorld.from_config(robot, None, self.tensor_args)
        self.check = "mesh" if has_mesh_check(self.checker) else "spheres"
        self.retract = robot.retract_config.to(**self.tensor_args.as_kwargs())

    def _ik(
        self, world: WorldConfig, poses: list[list[float]], quick: bool = False
    ) -> list[torch.Tensor]:
        """Per pose, its distinct collision-free (spheres, ``world``) IK solutions, ranked;
        ``quick``: by the pose-only damped least-squares phase alone."""
        self.ik.update_world(world)  # the quick IK shares this world
        values = self.tensor_args.to_device(poses)
        goal = Pose(values[:, :3].contiguous(), values[:, 3:].contiguous())
        solver = self.quick_ik if quick else self.ik
        return solver.solve_batch(goal).distinct_solutions

    def _goal_ok(self, q: torch.Tensor, target_world: WorldConfig) -> torch.Tensor:
        """``[B]``: ``q [B, D]`` passes the exact check in the full world and keeps
        :data:`TARGET_CLEARANCE` from the target."""
        ok = mesh_valid(self.checker, q)
        if self.check == "mesh" and bool(ok.any()):
            self.target_checker.update_world(target_world)
            ok &= self.target_checker.mesh_distance(q) >= TARGET_CLEARANCE
        return ok

    def _goal(
        self,
        world: WorldConfig,
        without: WorldConfig,
        target_world: WorldConfig,
        poses: list[list[float]],
        quick: bool,
    ) -> tuple[list[float], torch.Tensor] | None:
        """The first grasp pose of ``poses`` with an IK solution (in ``without``, the world
        less the target) that passes :meth:`_goal_ok`, and that solution."""
        # the L-BFGS IK in chunks: most draws end at an early grasp, and an unreachable
        # grasp costs every iteration
        chunk = len(poses) if quick else _IK_CHUNK
        for pose, solutions in (
            pair
            for first in range(0, len(poses), chunk)
            for pair in zip(
                poses[first : first + chunk],
                self._ik(without, poses[first : first + chunk], quick),
                strict=True,
            )
        ):
            if solutions.shape[0] == 0:
                continue
            # spheres cannot judge a grasp (the finger spheres bulge into the object):
            # without meshes the goal is checked against the rest of the world only
            self.checker.update_world(world if self.check == "mesh" else without)
            ok = self._goal_ok(solutions, target_world)
            if bool(ok.any()):
                return pose, solutions[int(ok.to(torch.int8).argmax())]
        return None

    def make(self, family: str, seed: int, index: int) -> MbmProblem:
        """Problem ``index`` of ``family`` under ``seed`` (the same arguments give the same
        problem)."""
        if family not in FAMILIES:
            raise InputValueError(f"family: expected one of {list(FAMILIES)}, received {family!r}")
        rng = family_rng(family, seed, index)
        for attempt in range(1, self.max_scenes + 1):
            scene, target = draw_scene(family, rng)
            self.checker.update_world(scene.world)
            # the start
            if scene.start_pose is None:
                start = self.retract
            else:
                found = torch.zeros(0)
                if self.quick_ik is not None:
                    found = self._ik(scene.world, [scene.start_pose], quick=True)[0]
                if found.shape[0] == 0:
                    found = self._ik(scene.world, [scene.start_pose])[0]
                if found.shape[0] == 0:
                    continue
                ok = mesh_valid(self.checker, found)
                if not bool(ok.any()):
                    continue
                start = found[int(ok.to(torch.int8).argmax())]
            if not bool(mesh_valid(self.checker, start[None])[0]):
                continue
            # the goal: IK without the target (see the module docstring), checked with it
            without = scene.world.copy()
            removed = without.remove(target)
            target_world = WorldConfig.load({removed.kind: {removed.name: removed.to_dict()}})
            poses = scene.grasps[target]
            found = None
            for quick in (True, False) if self.quick_ik is not None else (False,):
                found = self._goal(scene.world, without, target_world, poses, quick)
                if found is not None:
                    break
            if found is not None:
                pose, goal_config = found
                return MbmProblem(
                    family=family,
                    seed=int(seed),
                    index=int(index),
                    world=scene.world,
                    start=start.tolist(),
                    goal_pose=[float(v) for v in pose],
                    goal_config=goal_config.tolist(),
                    target=target,
                    check=self.check,
                    tries=attempt,
                )
        raise CuroboLiteError(
            f"no valid problem for {family} seed {seed} index {index} in {self.max_scenes} scenes"
        )


def make_problems(
    family: str, count: int, seed: int = 0, generator: ProblemGenerator | None = None
) -> list[MbmProblem]:
    """Problems ``0 .. count-1`` of ``family``."""
    generator = generator or ProblemGenerator()
    return [generator.make(family, seed, i) for i in range(count)]


def as_numpy(pose: list[float]) -> np.ndarray:
    return np.asarray(pose, dtype=float)
