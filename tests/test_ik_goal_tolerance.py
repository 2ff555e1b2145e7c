"""Goals clear only within the pose tolerance (issue 29): when every configuration of the
exact goal pose touches an obstacle on the meshes, MotionGen moves the hand's target away from
the contact, within a share of ``position_threshold``, and plans there
(:mod:`curobo_lite.wrap.motion.goal_tolerance`).

Judged against independent references: an analytic clearance (a plane's distance to the
hand, whose gradient and Newton step are known in closed form), the ``panda_hand`` pose by
the numpy forward kinematics of the collision URDF (``tests/curobo_reference.UrdfFK``), and
the meshes' clearance by coal objects built in ``test_exact_collision`` from the STL files
with yourdfpy's forward kinematics."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from curobo_reference import UrdfFK, matrix_to_quat_wxyz, rotation_angle

from curobo_lite.types import JointState, Pose
from curobo_lite.wrap import MotionGen, RobotWorld
from curobo_lite.wrap.motion.goal_tolerance import (
    CLEARANCE_MARGIN,
    OFFSET_FRACTION,
    tolerance_goals,
)

REPO = Path(__file__).resolve().parents[1]
URDF = REPO / "configs" / "robot" / "franka_collision.urdf"
THRESHOLDS = (0.005, 0.05)  # m, rad: the IK's success thresholds (and the MBM judge's)


def _hand(urdf: UrdfFK, names: list[str], q: torch.Tensor) -> np.ndarray:
    values = dict(zip(names, [float(v) for v in q], strict=True))
    return urdf.link_transforms("panda_link0", values)["panda_hand"]


@pytest.fixture(scope="module")
def checker() -> RobotWorld:
    return RobotWorld.from_config("franka", None)


def _plane_case(checker: RobotWorld, clearance_now: float):
    """A goal pose (numpy FK of a configuration near retract), its configuration, and a
    clearance that is the signed distance of the hand origin to a plane through the goal
    position shifted by ``clearance_now`` along a unit normal (numpy, from the numpy FK)."""
    urdf = UrdfFK(URDF)
    names = checker.robot_config.joint_names
    q = checker.robot_config.retract_config[None] + 0.1
    hand = _hand(urdf, names, q[0])
    goal = Pose(
        torch.tensor(hand[:3, 3], dtype=q.dtype)[None],
        torch.tensor(matrix_to_quat_wxyz(hand[:3, :3]), dtype=q.dtype)[None],
    )
    normal = np.array([0.3, -0.5, 0.8])
    normal /= np.linalg.norm(normal)
    offset = float(normal @ hand[:3, 3]) - clearance_now

    def clearance(rows: torch.Tensor) -> torch.Tensor:
        return torch.tensor(
            [float(normal @ _hand(urdf, names, row)[:3, 3]) - offset for row in rows],
            dtype=rows.dtype,
        )

    return urdf, names, q, goal, normal, clearance


def test_offset_is_the_newton_step_along_the_clearance_gradient(checker):
    """The hand 1 mm 'inside' a plane: the configuration returned has the hand moved along
    the plane's normal by the depth plus the margin (the gradient of a plane's distance is its
    normal, exactly), the orientation kept, and its clearance at the threshold or beyond."""
    threshold = 1e-4
    urdf, names, q, goal, normal, clearance = _plane_case(checker, -1e-3)
    found = tolerance_goals(checker.kinematics, clearance, q, goal, threshold, THRESHOLDS[0], 0.1)
    assert found.configs.shape[0] == 1
    hand = _hand(urdf, names, found.configs[0])
    moved = hand[:3, 3] - goal.position[0].numpy()
    expected = 1e-3 + threshold + CLEARANCE_MARGIN
    np.testing.assert_allclose(moved, expected * normal, atol=2e-5)
    assert float(found.offsets[0]) == pytest.approx(expected, abs=2e-5)
    assert float(clearance(found.configs)[0]) >= threshold
    assert rotation_angle(matrix_to_quat_wxyz(hand[:3, :3]), goal.quaternion[0].numpy()) < 1e-3


def test_offset_never_leaves_the_share_of_the_tolerance(checker):
    """The hand 10 mm inside: clearing it would move the target more than
    ``OFFSET_FRACTION * position_threshold``; nothing is returned."""
    _, _, q, goal, _, clearance = _plane_case(checker, -1e-2)
    found = tolerance_goals(checker.kinematics, clearance, q, goal, 1e-4, THRESHOLDS[0], 0.1)
    assert found.configs.shape[0] == 0
    assert OFFSET_FRACTION * THRESHOLDS[0] < 1e-2


def test_mbm_grasp_clear_only_within_the_tolerance_plans():
    """MBM table_under_pick 18: every IK solution of the exact grasp pose puts the hand
    1.5-2 mm inside the can (independent coal); the plan ends within the thresholds of the
    pose (numpy FK), off it by the reported ``goal_offset``, with the meshes clear at the goal
    (independent coal) and along the motion (swept mesh check)."""
    pytest.importorskip("coal")
    pytest.importorskip("yourdfpy")
    from test_exact_collision import (
        _reference_distance,
        _reference_links,
        _reference_obstacles,
    )

    from curobo_lite.scenes import MbmProblem

    data = yaml.safe_load((REPO / "benchmarks/data/mbm/table_under_pick.yml").read_text())
    problem = MbmProblem.from_dict(data["problems"][18])
    motion_gen = MotionGen.from_config("franka", problem.world)
    links, yourdf = _reference_links()
    obstacles = _reference_obstacles(motion_gen.world_collision.world)

    def reference(q: torch.Tensor) -> float:
        return _reference_distance(links, yourdf, obstacles, q.double().numpy())

    start = torch.tensor(problem.start)[None]
    goal = Pose.from_list(problem.goal_pose)
    _, exact = motion_gen._ik(motion_gen.ik_solver._check_pose(goal), start)
    assert exact[0].shape[0] > 0
    assert max(reference(q) for q in exact[0]) < 0.0  # the exact pose's solutions touch

    result = motion_gen.plan_single(JointState.from_position(start), goal)
    assert result.success, result.status
    assert 0.0 < result.goal_offset <= OFFSET_FRACTION * THRESHOLDS[0]
    end = result.interpolated_plan.position[-1]
    hand = _hand(UrdfFK(URDF), motion_gen.robot_config.joint_names, end)
    pose = np.asarray(problem.goal_pose)
    position_error = float(np.linalg.norm(hand[:3, 3] - pose[:3]))
    assert position_error <= THRESHOLDS[0]
    assert position_error == pytest.approx(result.goal_offset, abs=5e-4)
    assert rotation_angle(matrix_to_quat_wxyz(hand[:3, :3]), pose[3:]) <= THRESHOLDS[1]
    assert reference(end) >= 0.0
    judge = RobotWorld.from_config("franka", problem.world)
    assert bool(judge.validate_trajectory_mesh(result.interpolated_plan.position))
