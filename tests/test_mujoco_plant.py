"""MujocoPlant: the MuJoCo model against our kinematics and hand-written mechanics, the
controller, contacts, and a short closed loop with MPC (mass error and latency)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

mujoco = pytest.importorskip("mujoco", reason="the 'sim' extra (mujoco) is not installed")

from curobo_lite.geom import WorldConfig  # noqa: E402
from curobo_lite.robot import Kinematics, RobotConfig  # noqa: E402
from curobo_lite.robot.dynamics_config import inertia_matrix_np  # noqa: E402
from curobo_lite.sim import MujocoPlant, MujocoPlantConfig, run_closed_loop  # noqa: E402
from curobo_lite.types import JointState, Pose, TensorDeviceType  # noqa: E402

F64 = TensorDeviceType(dtype=torch.float64)
GRAVITY = np.array([0.0, 0.0, -9.81])


def quat_to_matrix(q: torch.Tensor) -> torch.Tensor:
    """``[..., 4]`` wxyz to ``[..., 3, 3]`` (written out here, independent of the package)."""
    w, x, y, z = q.unbind(-1)
    rows = [
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ]
    return torch.stack([torch.stack(r, -1) for r in rows], -2)


def random_configs(robot: RobotConfig, n: int, seed: int = 0) -> torch.Tensor:
    low, high = robot.joint_limits.position
    generator = torch.Generator().manual_seed(seed)
    return low + (high - low) * torch.rand(n, robot.dof, generator=generator, dtype=low.dtype)


def plant_data(plant: MujocoPlant, q: np.ndarray, qd: np.ndarray | None = None):
    data = mujoco.MjData(plant.model)
    qpos, dof = plant._plant_index
    data.qpos[qpos] = q
    if qd is not None:
        data.qvel[dof] = qd
    mujoco.mj_forward(plant.model, data)
    return data


@pytest.mark.parametrize("name", ["franka", "iiwa", "ur5e"])
def test_body_and_sphere_poses_equal_our_forward_kinematics(name):
    robot = RobotConfig.load(name, F64)
    plant = MujocoPlant(robot)
    kinematics = Kinematics(robot)
    for q in random_configs(robot, 5):
        fk = kinematics.forward(q[None])
        data = plant_data(plant, q.numpy())
        for i, link in enumerate(fk.link_names):
            body = mujoco.mj_name2id(plant.model, mujoco.mjtObj.mjOBJ_BODY, link)
            np.testing.assert_allclose(data.xpos[body], fk.link_position[0, i], atol=1e-6)
            # same rotation (a quaternion and its negative are one rotation)
            np.testing.assert_allclose(
                data.xmat[body].reshape(3, 3), quat_to_matrix(fk.link_quaternion[0, i]), atol=1e-6
            )
        # the spheres reserved for a held object (radius < 0, disabled) have no geom
        names = [
            f"{link}/sphere{i}"
            for link in robot.collision.link_names
            for i, row in enumerate(robot.collision.spheres[link])
            if row[3] > 0
        ]
        geoms = [mujoco.mj_name2id(plant.model, mujoco.mjtObj.mjOBJ_GEOM, n) for n in names]
        assert min(geoms) >= 0
        enabled = fk.link_spheres[0, :, 3] > 0
        np.testing.assert_allclose(
            data.geom_xpos[geoms], fk.link_spheres[0, enabled, :3], atol=1e-6
        )
        np.testing.assert_allclose(
            plant.model.geom_size[geoms, 0],
            fk.link_spheres[0, enabled, 3] - robot.collision.sphere_buffer,
            atol=1e-9,
        )


def franka_link_frames(robot: RobotConfig, q: torch.Tensor):
    """``{link: (R [3, 3], p [3])}`` of every Franka link with an inertial, differentiable in
    ``q [D]``, from our kinematics and the rigid attachments."""
    fk = Kinematics(robot).forward(q[None])
    frames = {}
    for link in robot.dynamics.link_inertials:
        anchor, offset = robot.rigid_attachment(link)
        offset = torch.as_tensor(offset)
        if anchor == robot.base_link:
            rotation, position = torch.eye(3, dtype=q.dtype), torch.zeros(3, dtype=q.dtype)
        else:
            i = fk.link_names.index(anchor)
            rotation = quat_to_matrix(fk.link_quaternion[0, i])
            position = fk.link_position[0, i]
        frames[link] = (rotation @ offset[:3, :3], position + rotation @ offset[:3, 3])
    return frames


def test_gravity_torque_is_the_gradient_of_potential_energy():
    """MuJoCo's bias force at rest equals dV/dq, V = -sum m g.c from our FK and the YAML."""
    robot = RobotConfig.load("franka", F64)
    plant = MujocoPlant(robot)
    gravity = torch.as_tensor(GRAVITY)
    for q in random_configs(robot, 4, seed=1):
        q = q.clone().requires_grad_(True)
        potential = 0.0
        for link, (rotation, position) in franka_link_frames(robot, q).items():
            inertial = robot.dynamics.link_inertials[link]
            com = position + rotation @ torch.tensor(inertial.com, dtype=torch.float64)
            potential = potential - inertial.mass * (gravity @ com)
        (expected,) = torch.autograd.grad(potential, q)
        data = plant_data(plant, q.detach().numpy())
        np.testing.assert_allclose(data.qfrc_bias, expected.numpy(), rtol=1e-6, atol=1e-8)


def test_mass_matrix_equals_kinetic_energy_from_our_jacobians():
    """M(q) = sum m Jc^T Jc + Jw^T (R I R^T) Jw with Jc, Jw from autograd of our FK."""
    robot = RobotConfig.load("franka", F64)
    plant = MujocoPlant(robot)
    for q in random_configs(robot, 3, seed=2):

        def frames_flat(qq, link):
            rotation, position = franka_link_frames(robot, qq)[link]
            inertial = robot.dynamics.link_inertials[link]
            com = position + rotation @ torch.tensor(inertial.com, dtype=torch.float64)
            return torch.cat((com, rotation.reshape(-1)))

        expected = np.zeros((robot.dof, robot.dof))
        for link, inertial in robot.dynamics.link_inertials.items():
            jac = torch.autograd.functional.jacobian(lambda qq, link=link: frames_flat(qq, link), q)
            rotation = frames_flat(q, link)[3:].reshape(3, 3).numpy()
            linear = jac[:3].numpy()
            d_rotation = jac[3:].reshape(3, 3, robot.dof).numpy()
            # angular velocity per joint: the axial vector of dR/dq_j R^T
            skew = np.einsum("abj,cb->jac", d_rotation, rotation)
            angular = np.stack([skew[:, 2, 1], skew[:, 0, 2], skew[:, 1, 0]])
            inertia = rotation @ inertia_matrix_np(inertial.inertia) @ rotation.T
            expected += inertial.mass * linear.T @ linear + angular.T @ inertia @ angular
        data = plant_data(plant, q.numpy())
        mass = np.zeros((plant.model.nv, plant.model.nv))
        mujoco.mj_fullM(plant.model, data, mass)
        np.testing.assert_allclose(mass, expected, rtol=1e-6, atol=1e-9)


def test_computed_torque_produces_the_requested_acceleration():
    """The controller's inverse dynamics, applied to the nominal plant, gives back qdd."""
    robot = RobotConfig.load("franka")
    plant = MujocoPlant(robot)
    rng = np.random.default_rng(3)
    qpos, dof = plant._plant_index
    for q in random_configs(robot, 3, seed=3).double().numpy():
        qd, qdd = rng.normal(size=7) * 0.5, rng.normal(size=7)
        data = plant.control_data
        data.qpos[qpos], data.qvel[dof], data.qacc[dof] = q, qd, qdd
        mujoco.mj_inverse(plant.control_model, data)
        sim = plant_data(plant, q, qd)
        sim.ctrl[:] = data.qfrc_inverse[dof]
        mujoco.mj_forward(plant.model, sim)
        # within the torque limits (else the motors would clip)
        assert np.all(np.abs(sim.ctrl) < np.asarray(robot.dynamics.effort_limit))
        np.testing.assert_allclose(sim.qacc[dof], qdd, atol=1e-6)


@pytest.mark.parametrize("mass_scale, tolerance", [(1.0, 1e-6), (1.2, 2e-3)])
def test_holding_a_pose_drifts_little(mass_scale, tolerance):
    robot = RobotConfig.load("franka")
    plant = MujocoPlant(robot, config={"mass_scale": mass_scale})
    hold = plant.state
    for _ in range(50):  # 1 s
        state = plant.step(hold)
    drift = (state.position - hold.position).abs().max()
    assert float(drift) < tolerance
    assert float(state.velocity.abs().max()) < 1e-3
    # 20 % heavier links than the controller believes: it sags a little, by gravity
    assert (float(drift) > 1e-5) == (mass_scale != 1.0)


@pytest.mark.parametrize("latency", [0.0, 0.01])
def test_latency_delays_the_reference_by_whole_physics_steps(latency):
    """A step command from rest: with latency L the arm is at the Hermite segment's value at
    s = 1 - L / dt after one control step (p0 + (3 s^2 - 2 s^3) (p1 - p0))."""
    robot = RobotConfig.load("franka")
    plant = MujocoPlant(robot, config={"command_latency": latency, "natural_frequency": 40.0})
    start = plant.state
    target = JointState.from_position(start.position + 0.002)
    state = plant.step(target)
    s = 1.0 - latency / 0.02
    expected = start.position + (3 * s**2 - 2 * s**3) * 0.002
    assert torch.allclose(state.position, expected, atol=5e-4)
    predicted = plant.predicted_state(latency)
    expected_prediction = state.position + target.position - expected
    assert torch.allclose(predicted.position, expected_prediction, atol=1e-5)


def sphere_box_penetration(spheres: np.ndarray, box_center, half) -> float:
    """Deepest overlap of spheres ``[N, 4]`` with an axis-aligned box (analytic)."""
    local = spheres[:, :3] - np.asarray(box_center)
    outside = np.maximum(np.abs(local) - half, 0.0)
    inside = np.minimum(np.max(np.abs(local) - half, axis=1), 0.0)
    distance = np.linalg.norm(outside, axis=1) + inside
    return float(np.max(spheres[:, 3] - distance))


def test_contacts_of_a_cuboid_and_a_sphere_pushed_into_the_hand():
    robot = RobotConfig.load("franka", F64)
    kinematics = Kinematics(robot)
    spheres = kinematics.forward(robot.retract_config[None]).link_spheres[0].numpy()
    ee = kinematics.forward(robot.retract_config[None]).ee_position[0].numpy()
    center, half = ee + np.array([0.0, 0.0, -0.15]), np.array([0.1, 0.1, 0.05])
    pose = [*center.tolist(), 1.0, 0.0, 0.0, 0.0]
    world = {"cuboid": {"block": {"dims": (2 * half).tolist(), "pose": pose}}}
    plant = MujocoPlant(robot, world)
    report = plant.contacts()
    expected = sphere_box_penetration(spheres, center, half)
    assert expected > 0.01
    assert report.count > 0
    assert {obstacle for _, obstacle in report.pairs} == {"block"}
    assert report.max_penetration == pytest.approx(expected, abs=1e-6)

    # moved clear through sync_world (what an event on the solver's world triggers)
    moved = WorldConfig.load(world)
    moved.get("block").pose = [*(center + [0.0, 0.0, -0.3]).tolist(), 1.0, 0.0, 0.0, 0.0]
    plant.sync_world(moved)
    assert plant.contacts().count == 0

    # a new obstacle rebuilds the model; a ball into the hand spheres: sum of radii - distance
    ball_center = spheres[-3, :3] + np.array([0.0, 0.05, 0.0])
    ball = {"sphere": {"ball": {"radius": 0.03, "position": ball_center.tolist()}}}
    moved.add(WorldConfig.load(ball).get("ball"))
    plant.sync_world(moved)
    report = plant.contacts()
    gaps = np.linalg.norm(spheres[:, :3] - ball_center, axis=1) - spheres[:, 3] - 0.03
    assert report.count == int((gaps < 0).sum())
    assert report.max_penetration == pytest.approx(float(-gaps.min()), abs=1e-6)
    assert torch.allclose(plant.state.position, robot.retract_config[None])


def test_bad_options_name_the_key():
    with pytest.raises(ValueError, match="control_dt.*multiple of physics_dt"):
        MujocoPlantConfig(control_dt=0.0205)
    with pytest.raises(ValueError, match="mass_scale"):
        MujocoPlantConfig(mass_scale=0.0)
    with pytest.raises(ValueError, match="unknown key"):
        MujocoPlantConfig.from_dict({"latency": 0.01})
    plant = MujocoPlant(RobotConfig.load("franka"))
    with pytest.raises(ValueError, match=r"command: expected position shape \(1, 7\)"):
        plant.step(JointState.from_position(torch.zeros(1, 6)))


def test_mpc_reaches_the_goal_in_mujoco_with_mass_error_and_latency():
    """Short closed loop on the table scene: 20 % heavier arm, 10 ms latency (compensated)."""
    from curobo_lite.wrap import MpcSolver

    torch.set_num_threads(1)
    solver = MpcSolver.from_config(robot="franka", world="table")
    start = JointState.from_position(solver.robot_config.retract_config[None].clone())
    plant = MujocoPlant(
        solver.robot_config,
        solver.world_collision.world,
        {"control_dt": solver.control_dt, "mass_scale": 1.2, "command_latency": 0.01},
        start,
    )
    goal = Pose.from_list([0.4, 0.1, 0.45, 0.0, 1.0, 0.0, 0.0])
    moved = [0.55, -0.35, 0.06, 1.0, 0.0, 0.0, 0.0]

    def move_block(mpc):
        mpc.world_collision.update_obstacle_pose("block", moved)

    # 120 steps (2.4 s): the hand's last turn converges slowly (~0.002 rad a step), so where
    # the loop crosses 0.05 rad moves by steps with any rounding change upstream (one MPPI
    # sampling change that is equal to rounding crossed it at step ~94 instead of < 90)
    record = run_closed_loop(
        solver, plant, goal, 120, events={5: move_block}, latency_compensation=0.01
    )
    # the event reached the simulated world too
    block = mujoco.mj_name2id(plant.model, mujoco.mjtObj.mjOBJ_BODY, "obstacle/block")
    np.testing.assert_allclose(plant.data.mocap_pos[plant.model.body_mocapid[block]], moved[:3])
    assert float(record.position_error[-1]) < 0.01
    assert float(record.rotation_error[-1]) < 0.05
    assert int(record.contact_count.sum()) == 0
    assert float(record.max_penetration.max()) == 0.0
    assert record.step_time.shape == (120,)


def test_cli_mpc_with_the_mujoco_plant(capsys):
    from curobo_lite.cli import main

    goal = ["--goal", "0.4", "0.1", "0.45", "0", "1", "0", "0"]
    assert main(["mpc", *goal, "--latency", "0.01", "--steps", "2"]) == 2
    assert "need --plant mujoco" in capsys.readouterr().err
    args = ["mpc", *goal, "--world", "table", "--steps", "3", "--no-progress", "--plant", "mujoco"]
    assert main([*args, "--mass-scale", "1.2", "--latency", "0.01"]) == 0
    out = capsys.readouterr().out
    assert "MujocoPlant(robot='franka', obstacles=2" in out
    assert "mass_scale=1.2, command_latency=0.01 s" in out
    assert "MuJoCo robot-obstacle contacts: 0 of 3 steps" in out
