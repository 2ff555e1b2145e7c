"""IK goals at the edge of the joint ranges (issue 29): the pose phase's damped least squares
holds a joint at its limit where descent pushes it out (``lock_limits``) and weighs the error
by the IK's thresholds (``rotation_weight``), so it converges where a pose is reachable only
with a joint at its limit, or only to within the thresholds.

Judged against independent references: the ``panda_hand`` pose by the numpy forward kinematics
of the collision URDF (``tests/curobo_reference.UrdfFK``), the bounded least-squares optimum
by scipy's ``least_squares`` (trust region reflective, on that numpy FK), and the plans of a
stored MotionBenchMaker cage problem by the exact mesh check (coal)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from curobo_reference import UrdfFK, matrix_to_quat_wxyz, rotation_angle

from curobo_lite.types import JointState, Pose
from curobo_lite.types.errors import InputTypeError, InputValueError
from curobo_lite.wrap import IKSolver, MotionGen, RobotWorld
from curobo_lite.wrap.ik.dls import dls_steps

REPO = Path(__file__).resolve().parents[1]
URDF = REPO / "configs" / "robot" / "franka_collision.urdf"
THRESHOLDS = (0.005, 0.05)  # m, rad: the IK's success thresholds
WRIST = 4  # panda_joint5, the joint the MBM cage grasps hold at its limit


@pytest.fixture(scope="module")
def checker() -> RobotWorld:
    return RobotWorld.from_config("franka", None)


@pytest.fixture(scope="module")
def urdf() -> UrdfFK:
    return UrdfFK(URDF)


def _hand(urdf: UrdfFK, names: list[str], q: np.ndarray) -> np.ndarray:
    values = dict(zip(names, [float(v) for v in q], strict=True))
    return urdf.link_transforms("panda_link0", values)["panda_hand"]


def _errors(urdf: UrdfFK, names: list[str], q: torch.Tensor, pose: np.ndarray) -> np.ndarray:
    """``[n, 2]`` metres and radians from the hand at ``q [n, D]`` to ``pose`` (numpy FK)."""
    rows = []
    for row in q.detach().double().numpy():
        hand = _hand(urdf, names, row)
        position = np.linalg.norm(hand[:3, 3] - pose[:3])
        rows.append((position, rotation_angle(matrix_to_quat_wxyz(hand), pose[3:])))
    return np.asarray(rows)


def _beyond_limit_goal(checker: RobotWorld, q: list[float], over: float):
    """The hand pose of ``q`` with the wrist joint ``over`` rad past its upper limit (numpy
    FK): a pose whose nearest configurations hold the wrist at its limit. Returns the pose
    ``[7]``, the :class:`Pose` and 16 seeds within the limits, 0.1 rad around it."""
    names = checker.robot_config.joint_names
    low, high = checker.robot_config.joint_limits.position
    beyond = np.asarray(q, dtype=float)
    beyond[WRIST] = float(high[WRIST]) + over
    hand = _hand(UrdfFK(URDF), names, beyond)
    pose = np.concatenate((hand[:3, 3], matrix_to_quat_wxyz(hand)))
    goal = Pose(
        torch.tensor(pose[None, :3], dtype=torch.float32),
        torch.tensor(pose[None, 3:], dtype=torch.float32),
    )
    centre = torch.tensor(beyond, dtype=torch.float32).clamp(low, high)
    noise = torch.randn(16, len(q), generator=torch.Generator().manual_seed(0))
    seeds = torch.minimum(torch.maximum(centre + 0.1 * noise, low), high)
    return pose, goal, seeds


def test_held_limit_reaches_a_pose_that_plain_steps_stall_on(checker, urdf):
    # 0.12 rad past the wrist's limit: the other six joints still reach the pose exactly
    pose, goal, seeds = _beyond_limit_goal(checker, [0.3, 0.4, -0.2, -1.9, 0.0, 1.8, 0.5], 0.12)
    kinematics, names = checker.kinematics, checker.robot_config.joint_names
    target = (goal.position.expand(16, 3), goal.quaternion.expand(16, 4))
    plain = dls_steps(kinematics, seeds, *target, 16)
    held = dls_steps(kinematics, seeds, *target, 16, rotation_weight=0.1, lock_limits=True)
    low, high = checker.robot_config.joint_limits.position
    assert bool(((held >= low) & (held <= high)).all())
    # held at the limit (to float precision: at convergence the descent's sign is rounding)
    assert float((held[:, WRIST] - high[WRIST]).abs().max()) <= 1e-6
    errors = _errors(urdf, names, held, pose)
    assert errors[:, 0].max() < 1e-4 and errors[:, 1].max() < 1e-3
    # the plain steps clamp the wrist and stall millimetres and degrees away
    stalled = _errors(urdf, names, plain, pose)
    assert (stalled[:, 0] > THRESHOLDS[0]).sum() + (stalled[:, 1] > THRESHOLDS[1]).sum() >= 8


def test_weighted_steps_end_at_scipys_bounded_least_squares_optimum(checker, urdf):
    """A pose out of exact reach (the cage grasps' case): the weighted, held steps end where
    scipy's bounded least squares of the same weighted error ends, within both thresholds."""
    least_squares = pytest.importorskip("scipy.optimize").least_squares
    rotation = pytest.importorskip("scipy.spatial.transform").Rotation
    q = [-1.2, 0.67, 0.95, -1.92, 0.0, 2.42, 0.43]
    pose, goal, seeds = _beyond_limit_goal(checker, q, 0.08)
    kinematics, names = checker.kinematics, checker.robot_config.joint_names
    weight = THRESHOLDS[0] / THRESHOLDS[1]
    target_rotation = rotation.from_quat(np.roll(pose[3:], -1))  # scipy: xyzw

    def residual(x: np.ndarray) -> np.ndarray:
        hand = _hand(urdf, names, x)
        turn = (target_rotation * rotation.from_matrix(hand[:3, :3]).inv()).as_rotvec()
        return np.concatenate((pose[:3] - hand[:3, 3], weight * turn))

    low, high = (v.double().numpy() for v in checker.robot_config.joint_limits.position)
    target = (goal.position.expand(4, 3), goal.quaternion.expand(4, 4))
    held = dls_steps(kinematics, seeds[:4], *target, 16, rotation_weight=weight, lock_limits=True)
    unweighted = dls_steps(kinematics, seeds[:4], *target, 16, lock_limits=True)
    for i in range(4):
        reference = least_squares(
            residual, seeds[i].double().numpy(), bounds=(low, high), xtol=1e-12, ftol=1e-12
        )
        assert reference.x[WRIST] == pytest.approx(high[WRIST], abs=1e-6)
        cost = 0.5 * float(np.square(residual(held[i].double().numpy())).sum())
        assert cost == pytest.approx(reference.cost, rel=0.02, abs=1e-9)
        # the cost is flat along the residual's null directions: near, not equal
        assert float((held[i].double() - torch.from_numpy(reference.x)).abs().max()) < 0.05
    errors = _errors(urdf, names, held, pose)
    assert (errors[:, 0] <= THRESHOLDS[0]).all() and (errors[:, 1] <= THRESHOLDS[1]).all()
    assert (errors[:, 0] > 1e-4).all()  # out of exact reach
    # unweighted, the compromise gives up rotation past its threshold for some seeds
    assert (_errors(urdf, names, unweighted, pose)[:, 1] > THRESHOLDS[1]).any()


def test_ik_solver_reaches_the_pose_out_of_exact_reach(checker, urdf):
    pose, goal, _ = _beyond_limit_goal(checker, [-1.2, 0.67, 0.95, -1.92, 0.0, 2.42, 0.43], 0.08)
    ik = IKSolver.from_config("franka", dls_iterations=16, dls_seeds=256, lbfgs_fallback=False)
    result = ik.solve_single(goal)
    assert bool(result.success[0])
    solutions = result.distinct_solutions[0]
    low, high = checker.robot_config.joint_limits.position
    assert bool(((solutions >= low) & (solutions <= high)).all())
    errors = _errors(urdf, checker.robot_config.joint_names, solutions, pose)
    assert (errors[:, 0] <= THRESHOLDS[0]).all() and (errors[:, 1] <= THRESHOLDS[1]).all()


def test_mbm_cage_grasp_at_the_wrist_limit_plans(urdf):
    """A stored MBM cage problem whose grasp needs the wrist at its limit (IK_FAIL before):
    the plan ends within the thresholds of the goal (numpy FK), within the limits, and its
    motion is clear on the collision meshes (coal, swept between samples)."""
    pytest.importorskip("coal")
    data = yaml.safe_load((REPO / "benchmarks" / "data" / "mbm" / "cage.yml").read_text())
    from curobo_lite.scenes import MbmProblem

    problem = MbmProblem.from_dict(data["problems"][43])
    motion_gen = MotionGen.from_config("franka", problem.world)
    start = JointState.from_position(torch.tensor(problem.start)[None])
    result = motion_gen.plan_single(start, Pose.from_list(problem.goal_pose))
    assert result.success, result.status
    plan = result.interpolated_plan.position
    low, high = motion_gen.robot_config.joint_limits.position
    assert bool(((plan >= low) & (plan <= high)).all())
    names = motion_gen.robot_config.joint_names
    errors = _errors(urdf, names, plan[-1:], np.asarray(problem.goal_pose))
    assert errors[0, 0] <= THRESHOLDS[0] and errors[0, 1] <= THRESHOLDS[1]
    judge = RobotWorld.from_config("franka", problem.world)
    assert bool(judge.validate_trajectory_mesh(plan))


def test_dls_rotation_weight_moves_the_compromise_and_is_checked(checker, urdf):
    """A lighter rotation weight (MotionGen's wide phase) ends nearer the position of a pose
    out of exact reach; both compromises within the thresholds (numpy FK)."""
    pose, goal, _ = _beyond_limit_goal(checker, [-1.2, 0.67, 0.95, -1.92, 0.0, 2.42, 0.43], 0.06)
    ik = IKSolver.from_config("franka", dls_iterations=16, dls_seeds=64, lbfgs_fallback=False)
    names = checker.robot_config.joint_names
    means = []
    for weight in (None, 0.03):
        result = ik.solve_batch(goal, dls_rotation_weight=weight)
        assert bool(result.success[0])
        errors = _errors(urdf, names, result.distinct_solutions[0], pose)
        assert (errors[:, 0] <= THRESHOLDS[0]).all() and (errors[:, 1] <= THRESHOLDS[1]).all()
        means.append(errors.mean(0))
    assert means[1][0] < 0.5 * means[0][0]  # position weighs more: it ends nearer
    for bad in (0.0, -1.0, float("nan"), "0.1"):
        with pytest.raises((InputValueError, InputTypeError), match="dls_rotation_weight"):
            ik.solve_batch(goal, dls_rotation_weight=bad)
