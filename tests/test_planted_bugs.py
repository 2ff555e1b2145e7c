"""Tests that catch the bugs a refactor plants (issue #34, item 8).

Each test here failed against one deliberately broken copy of the code that the rest of the
suite let through:

- MotionGen's start check testing the world-collision flag twice (a start in self-collision
  only, clear of the world, passed as valid);
- trajopt's clearance check reading the optimizer's knots instead of the interpolated plan (the
  reported ``min_distance`` larger than the plan's real clearance);
- the MuJoCo plant's ``mass_scale`` applied to the controller's model instead of the plant's;
- the swept collision cost losing its activation distance.

Every expected value is computed here, independently of the code under test: the planar arm's
forward kinematics in closed form, sphere-box distances from :mod:`collision_reference`, the
smooth hinge from its documented formula, the masses from the robot file.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from collision_reference import box_sdf

from curobo_lite.geom import WorldCollision, WorldConfig
from curobo_lite.robot import RobotConfig
from curobo_lite.rollout.cost import PrimitiveCollisionCost
from curobo_lite.types import JointState, Pose, TensorDeviceType
from curobo_lite.wrap import MotionGen, MotionGenStatus, TrajOptSolver
from curobo_lite.wrap.trajopt.checks import check_plan
from curobo_lite.wrap.trajopt.timing import Interpolated

F64 = TensorDeviceType(dtype=torch.float64)


def planar_spheres(robot: RobotConfig, q: torch.Tensor) -> dict[str, torch.Tensor]:
    """``{link: [..., n, 4]}`` world spheres of the planar 3-link arm at ``q [..., 3]``, from
    its closed-form kinematics (joints about z; links of 0.5 and 0.4 m along x; see
    ``configs/robot/planar3.yml``), not from :class:`Kinematics`."""
    q = q.double()
    angles = torch.cumsum(q, -1)  # link i's heading
    origin = torch.zeros(*q.shape[:-1], 2, dtype=torch.float64)
    out = {}
    for i, (link, length) in enumerate((("link1", 0.5), ("link2", 0.4), ("link3", 0.3))):
        local = torch.tensor(robot.collision.spheres[link], dtype=torch.float64)  # [n, 4]
        c, s = torch.cos(angles[..., i, None]), torch.sin(angles[..., i, None])
        x = origin[..., None, 0] + c * local[:, 0] - s * local[:, 1]
        y = origin[..., None, 1] + s * local[:, 0] + c * local[:, 1]
        z = local[:, 2].expand_as(x)
        r = (local[:, 3] + robot.collision.sphere_buffer).expand_as(x)
        out[link] = torch.stack((x, y, z, r), -1)
        step = torch.stack((torch.cos(angles[..., i]), torch.sin(angles[..., i])), -1)
        origin = origin + length * step
    return out


def planar_self_distance(robot: RobotConfig, q: torch.Tensor) -> float:
    """Smallest surface distance between spheres of links that may touch (not ignored)."""
    spheres = planar_spheres(robot, q)
    best = math.inf
    links = list(spheres)
    for a in range(len(links)):
        for b in range(a + 1, len(links)):
            if robot.collision.ignores(links[a], links[b]):
                continue
            sa, sb = spheres[links[a]], spheres[links[b]]
            gap = torch.cdist(sa[..., :3], sb[..., :3]) - sa[..., :, None, 3] - sb[..., None, :, 3]
            best = min(best, float(gap.min()))
    return best


# ------------------------------------------------------------------------------------------
# MotionGen: a start in self-collision only
# ------------------------------------------------------------------------------------------
def test_motion_gen_rejects_a_start_in_self_collision_only():
    robot = RobotConfig.load("planar3")
    # link3 folded back over link1; the world holds one box far away, so only the
    # self-collision check can reject it
    q = torch.tensor([[0.0, 2.6, 2.6]])
    assert planar_self_distance(robot, q[0]) < -0.01
    far = {"cuboid": {"far": {"pose": [5.0, 5.0, 0.0, 1, 0, 0, 0], "dims": [0.1, 0.1, 0.1]}}}
    motion_gen = MotionGen.from_config(robot, far, num_ik_seeds=4, num_trajopt_seeds=2)
    world_clear = float(motion_gen.checker.collision_distance(q, max_distance=1.0)[0])
    assert world_clear > 0.0
    goal = Pose.from_list([0.6, 0.6, 0.0, 1.0, 0.0, 0.0, 0.0])
    result = motion_gen.plan_single(JointState.from_position(q), goal)
    assert not result.success
    assert result.status is MotionGenStatus.INVALID_START_STATE_SELF_COLLISION
    assert result.offenders and result.offenders[0].kind == "self"
    # and the same arm unfolded is a valid start (the check is not rejecting everything)
    unfolded = JointState.from_position(torch.tensor([[0.0, 0.3, 0.3]]))
    assert planar_self_distance(robot, unfolded.position[0]) > 0.0
    assert motion_gen._start_status(unfolded) == [None]


# ------------------------------------------------------------------------------------------
# trajopt: the clearance is that of the interpolated plan, not of the knots
# ------------------------------------------------------------------------------------------
POST = {"pose": [1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0], "dims": [0.1, 0.1, 0.4]}


def world_clearance(robot: RobotConfig, positions: torch.Tensor) -> float:
    """Smallest sphere-to-POST distance over every configuration of ``positions [..., 3]``."""
    spheres = torch.cat(list(planar_spheres(robot, positions).values()), -2)
    d = box_sdf(spheres[..., :3], POST["pose"], POST["dims"]) - spheres[..., 3]
    return float(d.min())


def test_trajopt_clearance_is_checked_on_the_interpolated_plan():
    """Knots on both sides of a post, both clear; the interpolated samples between them sweep
    the arm through it. The check must report the samples' (negative) clearance."""
    solver = TrajOptSolver.from_config("planar3", world={"cuboid": {"post": POST}}, num_seeds=1)
    robot = solver.robot_config
    H = solver.horizon
    side_a, side_b = torch.tensor([-0.8, 0.0, 0.0]), torch.tensor([0.8, 0.0, 0.0])
    knots = torch.cat((side_a.repeat(H // 2, 1), side_b.repeat(H - H // 2, 1)))[None]
    assert world_clearance(robot, knots[0]) > 0.1  # every knot is clear
    samples = torch.cat(
        (side_a[None], side_a + torch.linspace(0, 1, 161)[:, None] * (side_b - side_a))
    )[None]
    truth = world_clearance(robot, samples[0])
    assert truth < -0.05  # the samples pass through the post
    interp = Interpolated(
        JointState.from_position(samples), torch.tensor([samples.shape[1] - 1]), None
    )
    goal_fk = solver.kinematics.forward(side_b[None])
    check = check_plan(
        knots,
        interp,
        Pose(goal_fk.ee_position, goal_fk.ee_quaternion),
        side_b[None],
        True,
        solver.config,
        solver.kinematics,
        solver.rollout,
        solver.tensor_args,
    )
    assert float(check.world_distance[0]) == pytest.approx(truth, abs=5e-3)
    assert float(check.min_distance[0]) <= truth + 1e-4
    assert not bool(check.collision_free[0]) and not bool(check.success[0])


def test_trajopt_reported_clearance_is_that_of_the_returned_plan():
    """End to end: a plan past the post reports no more clearance than its own interpolated
    samples have (recomputed here from the closed-form kinematics)."""
    solver = TrajOptSolver.from_config("planar3", world={"cuboid": {"post": POST}}, num_seeds=2)
    robot = solver.robot_config
    start = JointState.from_position(torch.tensor([[-0.9, 0.3, 0.3]]))
    goal = JointState.from_position(torch.tensor([[0.9, -0.3, -0.3]]))
    result = solver.solve_joint(start, goal)
    plan = result.get_interpolated_plan(0).position
    truth = world_clearance(robot, plan)
    reported = float(result.world_distance[0])
    # swept segments can only be closer than the samples; exact within the check range
    assert reported <= truth + 1e-4
    if truth < 0.02:
        assert reported == pytest.approx(truth, abs=5e-3)


# ------------------------------------------------------------------------------------------
# MuJoCo plant: mass_scale is the plant's, and a heavier plant sags under gravity
# ------------------------------------------------------------------------------------------
def test_mass_scale_makes_the_plant_heavier_and_it_sags():
    pytest.importorskip("mujoco")
    import mujoco

    from curobo_lite.sim import MujocoPlant

    robot = RobotConfig.load("franka")
    nominal = {link: float(i.mass) for link, i in robot.dynamics.link_inertials.items()}
    plant = MujocoPlant(robot, config={"mass_scale": 1.5})

    def masses(model) -> dict[str, float]:
        names = (mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, b) for b in range(model.nbody))
        return {n: float(model.body_mass[b]) for b, n in enumerate(names) if n in nominal}

    plant_masses, control_masses = masses(plant.model), masses(plant.control_model)
    qpos, dof = plant._qpos_index  # the controller model's joint addresses
    assert set(plant_masses) == set(nominal) == set(control_masses)
    for link, mass in nominal.items():
        assert control_masses[link] == pytest.approx(mass, rel=1e-9)  # the controller: nominal
        assert plant_masses[link] == pytest.approx(1.5 * mass, rel=1e-9)  # the plant: heavier

    def potential(q: torch.Tensor) -> float:
        """Gravitational potential of the nominal masses at ``q`` (positions from MuJoCo's
        kinematics of the controller's model)."""
        data = mujoco.MjData(plant.control_model)
        data.qpos[qpos] = q[0].double().numpy()
        mujoco.mj_kinematics(plant.control_model, data)
        ids = [mujoco.mj_name2id(plant.control_model, mujoco.mjtObj.mjOBJ_BODY, n) for n in nominal]
        return float(sum(nominal[n] * 9.81 * data.xipos[b, 2] for n, b in zip(nominal, ids)))

    hold = plant.state
    for _ in range(50):  # 1 s holding the start pose
        state = plant.step(hold)
    drift = state.position - hold.position
    assert float(drift.abs().max()) > 1e-5
    # the heavier arm droops: its potential energy goes down, it never rises
    assert potential(state.position) < potential(hold.position) - 1e-6
    # and in the direction gravity pulls: at rest a computed-torque controller with the nominal
    # model holds the heavier plant at q_ref + (scale - 1) / Kp * (-M^-1 g), so the drift is
    # parallel to -M^-1 g (M, g: the nominal mass matrix and gravity torque, from MuJoCo)
    data = mujoco.MjData(plant.control_model)
    data.qpos[qpos] = hold.position[0].double().numpy()
    mujoco.mj_forward(plant.control_model, data)
    full = np.zeros((plant.control_model.nv, plant.control_model.nv))
    try:
        mujoco.mj_fullM(plant.control_model, data, full)  # MuJoCo >= 3.3
    except TypeError:
        mujoco.mj_fullM(plant.control_model, full, data.qM)
    mass = full[np.ix_(dof, dof)]
    gravity = np.asarray(data.qfrc_bias)[dof]  # at rest the bias force is gravity's
    sag = -np.linalg.solve(mass, gravity)
    d = drift[0].double().numpy()
    cosine = float(d @ sag / (np.linalg.norm(d) * np.linalg.norm(sag)))
    assert cosine > 0.9, cosine


# ------------------------------------------------------------------------------------------
# swept collision cost: the same activation band as the plain cost
# ------------------------------------------------------------------------------------------
TABLE = {"pose": [0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0], "dims": [2.0, 2.0, 0.2]}  # top at z=0.1


def smooth_hinge(x: np.ndarray, eta: float) -> np.ndarray:
    """The documented penalty: 0, x^2 / (2 eta) inside the band, x - eta / 2 beyond it."""
    return np.where(x <= 0, 0.0, np.where(x < eta, x * x / (2 * eta), x - eta / 2))


@pytest.mark.parametrize("eta", [0.02, 0.05])
def test_swept_cost_keeps_the_activation_band(eta):
    world = WorldCollision(WorldConfig.from_dict({"cuboid": {"table": TABLE}}), F64)
    gaps = np.array([-0.01, 0.25 * eta, 0.5 * eta, 0.9 * eta, 1.5 * eta])  # surface distances
    radius = 0.03
    H = 4
    # each sphere slides along x at its height: the swept segment keeps the same clearance
    x = np.linspace(-0.3, 0.3, H)
    centres = np.zeros((1, H, len(gaps), 4))
    centres[0, :, :, 0] = x[:, None]
    centres[0, :, :, 1] = np.linspace(-0.5, 0.5, len(gaps))[None]
    centres[0, :, :, 2] = 0.1 + radius + gaps[None]
    centres[..., 3] = radius
    spheres = torch.tensor(centres)
    costs = {}
    for sweep in (False, True):
        cost = PrimitiveCollisionCost.from_dict(
            {"weight": 3.0, "activation_distance": eta, "use_sweep": sweep}, F64
        )
        cost.attach_world(world)
        costs[sweep] = cost.forward(spheres)[0].numpy()
    reference = 3.0 * smooth_hinge(eta - gaps, eta).sum()
    np.testing.assert_allclose(costs[False], reference, rtol=1e-9, atol=1e-12)
    # swept: the same band at every step (step 0 has no segment before it)
    np.testing.assert_allclose(costs[True], reference, rtol=1e-9, atol=1e-12)
    # the band matters: the spheres inside it but clear of the table cost something
    inside_band = 3.0 * smooth_hinge(eta - gaps[1:4], eta).sum()
    assert inside_band > 0.0
