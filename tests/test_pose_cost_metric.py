"""Partial and constrained poses (issue 31 item 3): cuRobo's ``PoseCostMetric`` on IK,
trajectory optimization, ``plan_single``, ``plan_goalset`` and MPC.

Every plan is judged by pinocchio's forward kinematics of the collision URDF at EVERY
interpolated waypoint, with rotation matrices and goal-frame coordinates computed here in
numpy (no curobo_lite math), against the tolerances the README states: held rotation axes
within 0.05 rad (the tilt: the angle between the hand's z axis and the goal's), held position
axes and the approach line within 5 mm, the goal's judged axes within the solvers' thresholds
(5 mm, 0.05 rad). A free axis is shown free: a yaw-free goal reached from a start of another
yaw ends away from the goal's yaw.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch
from curobo_reference import UrdfFK

from curobo_lite.rollout.cost import PoseCost
from curobo_lite.types import JointState, Pose
from curobo_lite.types.errors import InputTypeError, InputValueError
from curobo_lite.wrap import MotionGen, MotionGenStatus, MpcSolver, PoseCostMetric

try:
    import pinocchio as pin
except ImportError:  # the numpy reference of the URDF's joints instead
    pin = None

URDF = Path(__file__).resolve().parents[1] / "configs" / "robot" / "franka_collision.urdf"
TILT_TOL = 0.05  # rad, held rotation axes (README: "Partial and constrained poses")
LINE_TOL = 0.005  # m, held position axes and the approach line
GOAL_TOL = (0.005, 0.05)  # m, rad: the solvers' success thresholds, on the judged axes
UPRIGHT = PoseCostMetric(hold_partial_pose=True, hold_vec_weight=[1.0, 1.0, 0.0, 0.0, 0.0, 0.0])


class PinocchioHand:
    """``panda_hand`` poses by pinocchio (where it is not installed, by the numpy reference
    of the URDF's joints, ``tests/curobo_reference.UrdfFK``): positions ``[N, 3]`` and
    rotations ``[N, 3, 3]``."""

    def __init__(self, joint_names: list[str]) -> None:
        self.names = joint_names
        if pin is None:
            self.urdf = UrdfFK(URDF)
            return
        self.model = pin.buildModelFromUrdf(str(URDF))
        self.data = self.model.createData()
        self.index = [self.model.joints[self.model.getJointId(n)].idx_q for n in joint_names]
        self.frame = self.model.getFrameId("panda_hand")

    def __call__(self, q: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
        positions, rotations = [], []
        for row in q.detach().cpu().double().reshape(-1, q.shape[-1]).numpy():
            if pin is None:
                values = dict(zip(self.names, row.tolist(), strict=True))
                t = self.urdf.link_transforms("panda_link0", values)["panda_hand"]
                positions.append(t[:3, 3])
                rotations.append(t[:3, :3])
                continue
            config = pin.neutral(self.model)
            config[self.index] = row
            pin.forwardKinematics(self.model, self.data, config)
            pin.updateFramePlacements(self.model, self.data)
            placement = self.data.oMf[self.frame]
            positions.append(np.array(placement.translation))
            rotations.append(np.array(placement.rotation))
        return np.stack(positions), np.stack(rotations)


def quat_matrix(q: list[float] | np.ndarray) -> np.ndarray:
    """Rotation matrix of a wxyz quaternion (numpy, the textbook formula)."""
    w, x, y, z = np.asarray(q, float) / np.linalg.norm(q)
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def matrix_quat(m: np.ndarray) -> list[float]:
    """wxyz quaternion of a rotation matrix (Shepperd's method)."""
    t = np.trace(m)
    if t > 0:
        s = 2.0 * math.sqrt(1.0 + t)
        q = [0.25 * s, (m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s]
    else:
        i = int(np.argmax(np.diag(m)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * math.sqrt(1.0 + m[i, i] - m[j, j] - m[k, k])
        q = [0.0] * 4
        q[0] = (m[k, j] - m[j, k]) / s
        q[1 + i] = 0.25 * s
        q[1 + j] = (m[j, i] + m[i, j]) / s
        q[1 + k] = (m[k, i] + m[i, k]) / s
    return list(np.asarray(q) / np.linalg.norm(q))


def tilt(rotations: np.ndarray, goal_rotation: np.ndarray) -> np.ndarray:
    """``[N]`` angle between each hand z axis and the goal's."""
    cos = np.einsum("ni,i->n", rotations[:, :, 2], goal_rotation[:, 2])
    return np.arccos(np.clip(cos, -1.0, 1.0))


def angle(rotations: np.ndarray, goal_rotation: np.ndarray) -> np.ndarray:
    """``[N]`` full rotation angle from the goal to each hand rotation."""
    cos = (np.einsum("nij,ij->n", rotations, goal_rotation) - 1.0) / 2.0
    return np.arccos(np.clip(cos, -1.0, 1.0))


def rotz(angle_rad: float) -> np.ndarray:
    c, s = math.cos(angle_rad), math.sin(angle_rad)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def pose(position: np.ndarray, rotation: np.ndarray) -> Pose:
    return Pose.from_list([*map(float, position), *map(float, matrix_quat(rotation))])


@pytest.fixture(scope="module")
def motion_gen() -> MotionGen:
    return MotionGen.from_config(robot="franka", world="table")


@pytest.fixture(scope="module")
def hand(motion_gen: MotionGen) -> PinocchioHand:
    return PinocchioHand(motion_gen.robot_config.joint_names)


@pytest.fixture(scope="module")
def start(motion_gen: MotionGen) -> JointState:
    return JointState.from_position(motion_gen.robot_config.retract_config[None].clone())


def start_hand(hand: PinocchioHand, start: JointState) -> tuple[np.ndarray, np.ndarray]:
    p, r = hand(start.position)
    return p[0], r[0]


def no_metric_left(motion_gen: MotionGen) -> None:
    """The call's metric is gone from every rollout (no leak into the next call)."""
    rollouts = [motion_gen.ik_solver.rollout, motion_gen.trajopt.rollout]
    rollouts.append(motion_gen.trajopt.ik_rollout)
    for rollout in rollouts:
        assert rollout.pose_cost_metric is None
        for cost in rollout.costs.values():
            if isinstance(cost, PoseCost):
                assert cost.metric is None


# --- the metric itself ----------------------------------------------------------------------------


def test_grasp_approach_metric_is_curobos() -> None:
    metric = PoseCostMetric.create_grasp_approach_metric(
        offset_position=0.12, linear_axis=1, tstep_fraction=0.7
    )
    assert metric.hold_partial_pose
    assert metric.hold_vec_weight.tolist() == [1.0, 1.0, 1.0, 1.0, 0.0, 1.0]
    assert metric.offset_position.tolist() == [0.0, 0.12, 0.0]
    assert metric.offset_tstep_fraction == 0.7
    reset = PoseCostMetric.reset_metric()
    assert reset.reach_full_pose and reset.release_partial_pose and reset.remove_offset_waypoint
    clone = metric.clone()
    clone.hold_vec_weight[0] = 5.0
    assert metric.hold_vec_weight[0] == 1.0


@pytest.mark.parametrize(
    ("fields", "error", "named"),
    [
        ({"hold_partial_pose": True, "hold_vec_weight": [1.0] * 5}, InputValueError, "hold_vec"),
        (
            {"reach_partial_pose": True, "reach_vec_weight": [1, 1, math.nan, 1, 1, 1]},
            InputValueError,
            "reach_vec_weight",
        ),
        (
            {"reach_partial_pose": True, "reach_vec_weight": [1, 1, -1.0, 1, 1, 1]},
            InputValueError,
            ">= 0",
        ),
        ({"reach_partial_pose": True, "reach_vec_weight": [0.0] * 6}, InputValueError, "> 0"),
        ({"reach_partial_pose": True}, InputValueError, "reach_vec_weight"),
        ({"hold_partial_pose": True}, InputValueError, "hold_vec_weight"),
        ({"offset_position": [0, 0, 0.1]}, InputValueError, "offset_tstep_fraction"),
        (
            {"offset_position": [0, 0, 0.1], "offset_tstep_fraction": 1.0},
            InputValueError,
            "offset_tstep_fraction",
        ),
        ({"include_link_pose": True}, InputValueError, "include_link_pose"),
        ({"hold_partial_pose": "yes"}, InputTypeError, "hold_partial_pose"),
        ({"offset_position": "up"}, InputTypeError, "offset_position"),
    ],
)
def test_bad_metric_is_refused_by_name(fields: dict, error: type, named: str) -> None:
    with pytest.raises(error, match=named):
        PoseCostMetric(**fields)


def test_wrong_metric_type_leaves_every_solver_as_it_was(
    motion_gen: MotionGen, start: JointState
) -> None:
    goal = Pose.from_list([0.45, 0.2, 0.45, 0.0, 1.0, 0.0, 0.0])
    with pytest.raises(InputTypeError, match="pose_cost_metric"):
        motion_gen.plan_single(start, goal, pose_cost_metric={"hold_partial_pose": True})
    with pytest.raises(InputTypeError, match="pose_cost_metric"):
        motion_gen.ik_solver.solve_single(goal, pose_cost_metric=[1, 1, 0, 1, 1, 1])
    with pytest.raises(InputTypeError, match="pose_cost_metric"):
        motion_gen.trajopt.solve_pose(start, goal, pose_cost_metric="upright")
    no_metric_left(motion_gen)


def test_judged_errors_match_dense_reference() -> None:
    """The cost's judged errors (``PoseCost.errors``) against numpy on random poses: a yaw-free
    goal judges the tilt (angle between z axes) and the goal-frame position; position-only
    judges no rotation; a free goal-frame z judges the distance to the goal's z line."""
    gen = torch.Generator().manual_seed(3)
    position = torch.randn(64, 1, 3, generator=gen, dtype=torch.float64) * 0.2
    quaternion = torch.randn(64, 1, 4, generator=gen, dtype=torch.float64)
    quaternion = quaternion / quaternion.norm(dim=-1, keepdim=True)
    q_goal = torch.tensor([[0.2, 0.9, -0.3, 0.2]], dtype=torch.float64)
    goal = Pose(torch.tensor([[0.4, -0.1, 0.3]], dtype=torch.float64), q_goal / q_goal.norm())
    rg = quat_matrix(goal.quaternion[0].cpu().numpy())
    rotations = np.stack([quat_matrix(q) for q in quaternion[:, 0].numpy()])
    local = (position[:, 0].numpy() - goal.position.numpy()) @ rg
    cases = {
        (1, 1, 0, 1, 1, 1): (np.linalg.norm(local, axis=1), tilt(rotations, rg)),
        (0, 0, 0, 1, 1, 1): (np.linalg.norm(local, axis=1), np.zeros(64)),
        (1, 1, 1, 1, 1, 0): (np.linalg.norm(local[:, :2], axis=1), angle(rotations, rg)),
    }
    cost = PoseCost.from_dict({}, _double())
    for weights, (metres, radians) in cases.items():
        cost.update_metric(PoseCostMetric(reach_partial_pose=True, reach_vec_weight=weights))
        got_m, got_r = cost.errors(position, quaternion, goal)
        np.testing.assert_allclose(got_m.numpy(), metres, atol=1e-9)
        np.testing.assert_allclose(got_r.numpy(), radians, atol=1e-6)
    # the cost has a finite gradient at and away from the goal
    cost.update_metric(PoseCostMetric(reach_partial_pose=True, reach_vec_weight=[1, 1, 0, 1, 1, 1]))
    at_goal = torch.cat((position, goal.position[None].expand(1, 1, 3)))
    at_goal.requires_grad_(True)
    quats = torch.cat((quaternion, goal.quaternion[None].expand(1, 1, 4))).requires_grad_(True)
    cost.forward(at_goal, quats, goal).sum().backward()
    assert torch.isfinite(at_goal.grad).all() and torch.isfinite(quats.grad).all()


def _double():
    from curobo_lite.types import TensorDeviceType

    return TensorDeviceType(torch.device("cpu"), torch.float64)


# --- IK and trajectory optimization ---------------------------------------------------------------


def test_ik_yaw_free_and_position_only(
    motion_gen: MotionGen, hand: PinocchioHand, start: JointState
) -> None:
    """A goal 8 cm from the start's hand and turned 1 rad about its z axis: yaw-free IK seeded
    at the start reaches the position and the tilt and leaves the yaw where the arm was (the
    free axis is not forced); position-only leaves the whole rotation free."""
    p0, r0 = start_hand(hand, start)
    goal_rotation = r0 @ rotz(1.0)
    goal = pose(p0 + np.array([0.08, -0.05, -0.05]), goal_rotation)
    ik = motion_gen.ik_solver
    for weights, judged_tilt in (([1, 1, 0, 1, 1, 1], True), ([0, 0, 0, 1, 1, 1], False)):
        metric = PoseCostMetric(reach_partial_pose=True, reach_vec_weight=weights)
        result = ik.solve_single(goal, seed_config=start.position, pose_cost_metric=metric)
        assert bool(result.success[0])
        p, r = hand(result.solution)
        assert np.linalg.norm(p[0] - goal.position[0].cpu().numpy()) <= GOAL_TOL[0]
        if judged_tilt:
            assert tilt(r, goal_rotation)[0] <= GOAL_TOL[1]
        # not forced to the goal's yaw: the hand stays about 1 rad away from it
        assert angle(r, goal_rotation)[0] > 0.5
    no_metric_left(motion_gen)


def test_trajopt_holds_the_tilt_on_every_waypoint(
    motion_gen: MotionGen, hand: PinocchioHand, start: JointState
) -> None:
    p0, r0 = start_hand(hand, start)
    goal_rotation = r0 @ rotz(0.4)
    goal = pose(p0 + np.array([0.05, 0.35, -0.15]), goal_rotation)
    result = motion_gen.trajopt.solve_pose(start, goal, pose_cost_metric=UPRIGHT)
    assert bool(result.success[0]), result.status
    plan = result.get_interpolated_plan(0).position
    p, r = hand(plan)
    assert tilt(r, goal_rotation).max() <= TILT_TOL
    assert np.linalg.norm(p[-1] - goal.position[0].cpu().numpy()) <= GOAL_TOL[0]
    assert angle(r[-1:], goal_rotation)[0] <= GOAL_TOL[1]
    no_metric_left(motion_gen)


@pytest.mark.parametrize("planner", ["trajopt", "plan_single"])
def test_yaw_free_goal_is_judged_without_its_yaw(
    motion_gen: MotionGen, hand: PinocchioHand, start: JointState, planner: str
) -> None:
    """A yaw-free goal turned 1 rad from the start's hand: the plan succeeds with the tilt and
    the position within the thresholds and ends away from the goal's yaw (not forced there);
    the result's rotation error is the tilt, not the 1 rad."""
    p0, r0 = start_hand(hand, start)
    goal_rotation = r0 @ rotz(1.0)
    goal = pose(p0 + np.array([0.1, 0.2, -0.1]), goal_rotation)
    metric = PoseCostMetric(reach_partial_pose=True, reach_vec_weight=[1, 1, 0, 1, 1, 1])
    if planner == "trajopt":
        result = motion_gen.trajopt.solve_pose(start, goal, pose_cost_metric=metric)
        success, plan = bool(result.success[0]), result.get_interpolated_plan(0).position
        rotation_error = float(result.rotation_error[0])
    else:
        result = motion_gen.plan_single(start, goal, pose_cost_metric=metric)
        success, plan = result.success, result.interpolated_plan.position
        rotation_error = result.rotation_error
    assert success
    p, r = hand(plan[-1:])
    assert np.linalg.norm(p[0] - goal.position[0].cpu().numpy()) <= GOAL_TOL[0]
    assert tilt(r, goal_rotation)[0] <= GOAL_TOL[1]
    assert angle(r, goal_rotation)[0] > 0.5
    assert rotation_error == pytest.approx(tilt(r, goal_rotation)[0], abs=2e-3)
    no_metric_left(motion_gen)


# --- MotionGen ------------------------------------------------------------------------------------


def test_plan_single_keeps_the_hand_upright_and_at_its_height(
    motion_gen: MotionGen, hand: PinocchioHand, start: JointState
) -> None:
    """Hold rx, ry (upright) and the goal frame's z (the hand points down: its height) over
    the whole motion to a goal 0.4 m away at the start's height and another yaw."""
    p0, r0 = start_hand(hand, start)
    goal_rotation = r0 @ rotz(-0.5)
    goal = pose(p0 + np.array([0.1, -0.38, 0.0]), goal_rotation)
    metric = PoseCostMetric(hold_partial_pose=True, hold_vec_weight=[1, 1, 0, 0, 0, 1])
    result = motion_gen.plan_single(start, goal, pose_cost_metric=metric)
    assert result.success, result.status
    p, r = hand(result.interpolated_plan.position)
    assert tilt(r, goal_rotation).max() <= TILT_TOL
    assert np.abs(p[:, 2] - p0[2]).max() <= LINE_TOL
    assert np.linalg.norm(p[-1] - goal.position[0].cpu().numpy()) <= GOAL_TOL[0]
    # it did move: the hand travels 0.4 m
    assert np.linalg.norm(p[-1] - p[0]) > 0.35
    no_metric_left(motion_gen)


def test_plan_single_refuses_a_hold_the_start_is_not_on(
    motion_gen: MotionGen, hand: PinocchioHand, start: JointState
) -> None:
    p0, r0 = start_hand(hand, start)
    tilted = r0 @ np.array(
        [[1.0, 0.0, 0.0], [0.0, math.cos(0.5), -math.sin(0.5)], [0.0, math.sin(0.5), math.cos(0.5)]]
    )
    result = motion_gen.plan_single(start, pose(p0 + 0.05, tilted), pose_cost_metric=UPRIGHT)
    assert result.status is MotionGenStatus.INVALID_PARTIAL_POSE_COST_METRIC
    assert not result.success
    assert result.offenders and abs(result.offenders[0].value - 0.5) < 1e-3
    no_metric_left(motion_gen)


def test_grasp_approach_moves_along_the_hand_axis(
    motion_gen: MotionGen, hand: PinocchioHand, start: JointState
) -> None:
    """``create_grasp_approach_metric(0.1, z, 0.8)``: from 80 % of the motion on, the hand is
    on the goal's z line (within 5 mm), at the goal's orientation (0.05 rad), starting about
    0.1 m behind the goal and moving in to it."""
    goal = Pose.from_list([0.5, -0.25, 0.3, 0.0, 1.0, 0.0, 0.0])
    metric = PoseCostMetric.create_grasp_approach_metric(0.1, linear_axis=2, tstep_fraction=0.8)
    result = motion_gen.plan_single(start, goal, pose_cost_metric=metric)
    assert result.success, result.status
    p, r = hand(result.interpolated_plan.position)
    rg = quat_matrix(goal.quaternion[0].cpu().numpy())
    local = (p - goal.position[0].cpu().numpy()) @ rg  # goal-frame coordinates
    # the approach: knots from round(0.8 (H - 1)) on, a uniform time scale to the samples
    horizon = motion_gen.trajopt.horizon
    first = math.ceil(round(0.8 * (horizon - 1)) * (len(p) - 1) / (horizon - 1))
    segment = slice(first, None)
    assert np.linalg.norm(local[segment, :2], axis=1).max() <= LINE_TOL
    assert angle(r[segment], rg).max() <= TILT_TOL
    assert abs(local[first, 2] + 0.1) <= 0.01  # backed off by the offset along the hand's z
    assert np.diff(local[segment, 2]).min() > -1e-4  # then only forward, to the goal
    assert np.linalg.norm(local[-1]) <= GOAL_TOL[0]
    no_metric_left(motion_gen)


def test_linear_retreat_holds_the_hand_on_its_axis(
    motion_gen: MotionGen, hand: PinocchioHand
) -> None:
    """cuRobo's retreat (``plan_grasp``'s): from a grasp to the grasp backed off 0.12 m along
    the hand's z, holding every axis but that one over the whole motion: every waypoint on
    the line (5 mm) at the grasp's orientation (0.05 rad)."""
    grasp = Pose.from_list([0.5, -0.25, 0.3, 0.0, 1.0, 0.0, 0.0])
    ik = motion_gen.ik_solver.solve_single(grasp)
    assert bool(ik.success[0])
    start = JointState.from_position(ik.solution.clone())
    rg = quat_matrix(grasp.quaternion[0].cpu().numpy())
    retreat = pose(grasp.position[0].cpu().numpy() - 0.12 * rg[:, 2], rg)
    metric = PoseCostMetric(hold_partial_pose=True, hold_vec_weight=[1, 1, 1, 1, 1, 0])
    result = motion_gen.plan_single(start, retreat, pose_cost_metric=metric)
    assert result.success, result.status
    p, r = hand(result.interpolated_plan.position)
    local = (p - grasp.position[0].cpu().numpy()) @ rg
    assert np.linalg.norm(local[:, :2], axis=1).max() <= LINE_TOL
    assert angle(r, rg).max() <= TILT_TOL
    assert local[-1, 2] == pytest.approx(-0.12, abs=GOAL_TOL[0])
    no_metric_left(motion_gen)


def test_plan_goalset_holds_and_names_the_poses_off_the_hold(
    motion_gen: MotionGen, hand: PinocchioHand, start: JointState
) -> None:
    p0, r0 = start_hand(hand, start)
    tilted = r0 @ np.array(
        [[math.cos(0.6), 0.0, math.sin(0.6)], [0.0, 1.0, 0.0], [-math.sin(0.6), 0.0, math.cos(0.6)]]
    )
    rows = [
        (p0 + np.array([0.1, 0.3, -0.1]), tilted),  # off the hold: refused
        (p0 + np.array([0.1, 0.3, -0.1]), r0 @ rotz(0.3)),
        (p0 + np.array([0.15, -0.3, -0.1]), r0 @ rotz(-0.3)),
    ]
    goals = [pose(position, rotation) for position, rotation in rows]
    goal_set = Pose(
        torch.cat([g.position for g in goals]), torch.cat([g.quaternion for g in goals])
    )
    result = motion_gen.plan_goalset(start, goal_set, pose_cost_metric=UPRIGHT)
    assert result.success, result.status
    assert result.goalset_index in (1, 2)
    assert "INVALID_PARTIAL_POSE_COST_METRIC" in result.goalset_reasons[0]
    goal_rotation = rows[result.goalset_index][1]
    p, r = hand(result.interpolated_plan.position)
    assert tilt(r, goal_rotation).max() <= TILT_TOL
    assert np.linalg.norm(p[-1] - rows[result.goalset_index][0]) <= GOAL_TOL[0]
    no_metric_left(motion_gen)


# --- MPC ------------------------------------------------------------------------------------------


def test_mpc_metric_is_checked_and_judged(hand: PinocchioHand, start: JointState) -> None:
    mpc = MpcSolver.from_config(robot="franka", task="particle_mpc", num_particles=32)
    with pytest.raises(InputTypeError, match="pose_cost_metric"):
        mpc.update_pose_cost_metric("upright")
    assert mpc.rollout.pose_cost_metric is None
    p0, r0 = start_hand(hand, start)
    # the goal 2 cm above the hand and turned 1 rad about its z: position-only judges 2 cm
    goal = pose(p0 + np.array([0.0, 0.0, 0.02]), r0 @ rotz(1.0))
    metric = PoseCostMetric(reach_partial_pose=True, reach_vec_weight=[0, 0, 0, 1, 1, 1])
    mpc.update_goal(goal, pose_cost_metric=metric)
    position_error, rotation_error = mpc.pose_error(start)
    assert position_error == pytest.approx(0.02, abs=1e-5)
    assert rotation_error == 0.0
    # yaw-free judges the tilt only (0 here); the full pose again the 1 rad
    mpc.update_pose_cost_metric(
        PoseCostMetric(reach_partial_pose=True, reach_vec_weight=[1, 1, 0, 1, 1, 1])
    )
    assert mpc.pose_error(start)[1] == pytest.approx(0.0, abs=1e-3)
    mpc.update_pose_cost_metric(None)
    assert mpc.pose_error(start)[1] == pytest.approx(1.0, abs=1e-3)


@pytest.mark.slow
def test_mpc_keeps_the_hand_upright_for_300_steps(hand: PinocchioHand) -> None:
    from curobo_lite.sim import IdealTracker

    mpc = MpcSolver.from_config(robot="franka", task="particle_mpc", num_particles=100)
    state = JointState.from_position(mpc.robot_config.retract_config[None].clone())
    p0, r0 = hand(state.position)
    goal_rotation = r0[0] @ rotz(0.4)
    goal = pose(p0[0] + np.array([0.05, 0.35, -0.15]), goal_rotation)
    mpc.update_goal(goal)
    mpc.update_pose_cost_metric(UPRIGHT)
    tracker = IdealTracker(state)
    positions = []
    for _ in range(300):
        state = tracker.step(mpc.step(state).action)
        positions.append(state.position)
    p, r = hand(torch.cat(positions))
    assert tilt(r, goal_rotation).max() <= TILT_TOL
    # 100 particles (for the test's time) close the 0.4 m to within 2 cm in these 300 steps
    assert np.linalg.norm(p[-1] - goal.position[0].cpu().numpy()) <= 0.02
