"""MotionGen's goal retry (``curobo_lite/wrap/motion/goal_retry.py``): when the roadmap connects
none of the IK's goal configurations, other configurations of the same pose are tried, one
roadmap each. Plans are judged independently: the hand's pose by a numpy forward kinematics of
the collision URDF, the motion by a fresh :class:`RobotWorld`'s swept mesh check (coal)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from curobo_reference import UrdfFK, matrix_to_quat_wxyz, rotation_angle

from curobo_lite.scenes import MbmProblem
from curobo_lite.types import JointState, Pose
from curobo_lite.wrap import MotionGen, RobotWorld
from curobo_lite.wrap.motion.graph_planner import GraphPlanResult
from curobo_lite.wrap.motion.roadmap import RoadmapPlanner

REPO = Path(__file__).resolve().parents[1]
URDF = REPO / "configs" / "robot" / "franka_collision.urdf"
WORLD = {"cuboid": {"wall": {"pose": [0.42, -0.16, 0.45, 1, 0, 0, 0], "dims": [0.25, 0.03, 0.3]}}}
GOAL = [0.42, -0.35, 0.40, 0.0, 1.0, 0.0, 0.0]  # behind the wall, hand down
JOINTS = [f"panda_joint{i + 1}" for i in range(7)]


def _pose_error(q: torch.Tensor, names: list[str], pose: list[float]) -> tuple[float, float]:
    """Metres and radians from ``panda_hand`` at ``q`` (numpy URDF reference) to ``pose``."""
    values = dict(zip(names, q.tolist()))
    values.update({"panda_finger_joint1": 0.04, "panda_finger_joint2": 0.04})
    hand = UrdfFK(URDF).link_transforms("panda_link0", values)["panda_hand"]
    position = float(np.linalg.norm(hand[:3, 3] - np.asarray(pose[:3])))
    return position, float(rotation_angle(matrix_to_quat_wxyz(hand), np.asarray(pose[3:])))


def _judge(result, world, pose: list[float]) -> None:
    """The plan reaches ``pose`` (5 mm, 0.05 rad) and is clear on the meshes, swept."""
    assert result.success, result.status
    q = result.interpolated_plan.position
    position, rotation = _pose_error(q[-1], JOINTS, pose)
    assert position <= 0.005 and rotation <= 0.05
    judge = RobotWorld.from_config("franka", world)
    ok, clearance = judge.trajectory_mesh_report(q)
    assert bool(ok) and float(clearance) >= 0.0


def _first_roadmap_fails(monkeypatch) -> list[torch.Tensor]:
    """Make the first roadmap connect nothing (as when every IK goal sits in a pocket); the
    list returned fills with each roadmap's goals ``[G, D]``."""
    plan = RoadmapPlanner.plan
    calls: list[torch.Tensor] = []

    def first_fails(self, start, goal, segment_check=None):
        calls.append(goal.clone())
        if len(calls) == 1:
            return GraphPlanResult(False, None, 0.0, 0.0, 0, 0)
        return plan(self, start, goal, segment_check)

    monkeypatch.setattr(RoadmapPlanner, "plan", first_fails)
    return calls


@pytest.fixture(scope="module")
def motion_gen() -> MotionGen:
    pytest.importorskip("coal")
    return MotionGen.from_config("franka", WORLD)


def test_roadmap_that_connects_no_first_goal_retries_with_other_goals(motion_gen, monkeypatch):
    """The first roadmap is made to fail (as when every IK goal sits in a pocket): the plan
    still comes from the roadmap, to a configuration away from every first goal. Without the
    retry the optimizer answers instead (no roadmap waypoints, one of the first goals)."""
    calls = _first_roadmap_fails(monkeypatch)
    start = JointState.from_position(motion_gen.robot_config.retract_config[None].clone())
    result = motion_gen.plan_single(start, Pose.from_list(GOAL))
    assert len(calls) >= 2 and "goal_retry" in result.timings
    assert result.waypoints is not None  # the roadmap's path
    tolerance = motion_gen.ik_solver.config.distinct_tolerance
    end = result.waypoints[-1]
    assert float((calls[0] - end).norm(dim=-1).min()) > tolerance
    assert all(c.shape[0] == 1 for c in calls[1:])  # one goal per retried roadmap
    _judge(result, WORLD, GOAL)


#: a goal set: out of reach, behind the wall (GOAL), left of it
GOAL_SET = [
    [2.5, 0.0, 0.4, 0.0, 1.0, 0.0, 0.0],
    GOAL,
    [0.45, 0.25, 0.45, 0.0, 1.0, 0.0, 0.0],
]


def test_goalset_roadmap_that_connects_no_first_goal_retries_with_other_goals(
    motion_gen, monkeypatch
):
    """A goal set's first roadmap (to every reachable pose's configurations) is made to fail:
    the plan still comes from the roadmap, to a configuration away from every first goal,
    at the pose of the set it names (its reason empty). Without the retry the optimizer
    answers instead (no roadmap waypoints)."""
    calls = _first_roadmap_fails(monkeypatch)
    start = JointState.from_position(motion_gen.robot_config.retract_config[None].clone())
    values = torch.tensor(GOAL_SET)
    poses = Pose(values[:, :3].contiguous(), values[:, 3:].contiguous())
    result = motion_gen.plan_goalset(start, poses)
    assert len(calls) >= 2 and "goal_retry" in result.timings
    assert result.waypoints is not None  # the roadmap's path
    assert all(c.shape[0] == 1 for c in calls[1:])  # one goal per retried roadmap
    tolerance = motion_gen.ik_solver.config.distinct_tolerance
    assert float((calls[0] - result.waypoints[-1]).norm(dim=-1).min()) > tolerance
    index = result.goalset_index
    assert index in (1, 2) and result.goalset_reasons[index] == ""
    assert result.goalset_reasons[0].startswith("IK_FAIL")
    _judge(result, WORLD, GOAL_SET[index])


def test_retry_untouched_when_the_first_roadmap_connects(motion_gen, monkeypatch):
    """A problem the first roadmap solves pays nothing: one roadmap, no retry timing."""
    plan = RoadmapPlanner.plan
    calls = []

    def counted(self, start, goal, segment_check=None):
        calls.append(goal.shape[0])
        return plan(self, start, goal, segment_check)

    monkeypatch.setattr(RoadmapPlanner, "plan", counted)
    start = JointState.from_position(motion_gen.robot_config.retract_config[None].clone())
    result = motion_gen.plan_single(start, Pose.from_list(GOAL))
    assert result.success and len(calls) == 1 and "goal_retry" not in result.timings


def test_mbm_bookshelf_thin_23_is_solved_by_the_retry():
    """MBM bookshelf_thin 23 (a can on a thin shelf): the IK's eight goal configurations all
    leave the hand where backing it off drives link 5 into the shelf above, and none connects
    (with 12 288 samples neither); a goal of the retry, the hand at another compromise within
    the thresholds, does."""
    pytest.importorskip("coal")
    data = REPO / "benchmarks" / "data" / "mbm" / "bookshelf_thin.yml"
    problem = MbmProblem.from_dict(yaml.safe_load(data.read_text())["problems"][23])
    motion_gen = MotionGen.from_config("franka", problem.world)
    start = JointState.from_position(torch.tensor(problem.start)[None])
    result = motion_gen.plan_single(start, Pose.from_list(problem.goal_pose))
    assert "goal_retry" in result.timings and result.waypoints is not None
    _judge(result, problem.world, problem.goal_pose)


def test_mbm_bookshelf_thin_23_as_a_goal_set_is_solved_by_the_retry():
    """The same can as a goal set, with a pose out of reach beside it (a grasp set's IK
    shares its seeds): the set's roadmap connects none of the first goals either; the goal
    retry's goal of the reachable pose does (before the retry: TRAJOPT_FAIL)."""
    pytest.importorskip("coal")
    data = REPO / "benchmarks" / "data" / "mbm" / "bookshelf_thin.yml"
    problem = MbmProblem.from_dict(yaml.safe_load(data.read_text())["problems"][23])
    motion_gen = MotionGen.from_config("franka", problem.world)
    start = JointState.from_position(torch.tensor(problem.start)[None])
    pose_set = [GOAL_SET[0], problem.goal_pose]
    values = torch.tensor(pose_set)
    result = motion_gen.plan_goalset(
        start, Pose(values[:, :3].contiguous(), values[:, 3:].contiguous())
    )
    assert "goal_retry" in result.timings and result.waypoints is not None
    assert result.goalset_index == 1 and result.goalset_reasons[0].startswith("IK_FAIL")
    _judge(result, problem.world, pose_set[1])


def test_wide_pose_phase_serves_before_the_collision_aware_phase(monkeypatch):
    """MBM table_under_pick 13: no seed of the first pose-only phase is clear; the wider one
    (2048 seeds, rotation weighted less) finds goals, so the collision-aware L-BFGS phase
    does not run (its two goals sat where no roadmap reached them), and the first roadmap
    connects."""
    pytest.importorskip("coal")
    from curobo_lite.wrap.ik.solver import IKSolver

    data = REPO / "benchmarks" / "data" / "mbm" / "table_under_pick.yml"
    problem = MbmProblem.from_dict(yaml.safe_load(data.read_text())["problems"][13])
    motion_gen = MotionGen.from_config("franka", problem.world)
    phases = []
    solve_batch = IKSolver.solve_batch

    def counted(self, goal, *args, **kwargs):
        wide = (kwargs.get("dls_seeds") or 0) > self.config.dls_seeds
        lbfgs = kwargs.get("lbfgs_fallback", True)
        phases.append("lbfgs" if lbfgs else "wide" if wide else "quick")
        return solve_batch(self, goal, *args, **kwargs)

    monkeypatch.setattr(IKSolver, "solve_batch", counted)
    start = JointState.from_position(torch.tensor(problem.start)[None])
    result = motion_gen.plan_single(start, Pose.from_list(problem.goal_pose))
    assert phases == ["quick", "wide"]
    assert "goal_retry" not in result.timings and result.waypoints is not None
    _judge(result, problem.world, problem.goal_pose)
