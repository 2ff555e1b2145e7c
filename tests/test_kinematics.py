"""Forward kinematics and Jacobian against independent references.

References: closed-form planar-arm kinematics, Franka's published modified-DH table, Universal
Robots' published DH table for the UR5e, a plain 4x4-matrix walk of the URDF tree (no folding,
no quaternions), finite differences and autograd.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import warp as wp

from curobo_lite.robot import Kinematics, KinematicsState, RobotConfig, fk_kernels
from curobo_lite.types import Pose, TensorDeviceType, quat_multiply, quat_to_matrix

DATA = __import__("pathlib").Path(__file__).parent / "data"
PANDA_URDF = DATA / "franka_panda.urdf"
F64 = TensorDeviceType(dtype=torch.float64)
BACKENDS = ("warp", "torch")


# ------------------------------------------------------------------------------------------
# independent references (numpy, 4x4 homogeneous matrices)
# ------------------------------------------------------------------------------------------
def _rot_x(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[1, 0, 0, 0], [0, c, -s, 0], [0, s, c, 0], [0, 0, 0, 1.0]])


def _rot_z(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s, 0, 0], [s, c, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1.0]])


def _trans(x: float, y: float, z: float) -> np.ndarray:
    t = np.eye(4)
    t[:3, 3] = (x, y, z)
    return t


def _axis_angle(axis, angle: float) -> np.ndarray:
    """Rodrigues' formula as a 4x4 matrix."""
    k = np.asarray(axis, dtype=np.float64)
    k = k / np.linalg.norm(k)
    kx = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    t = np.eye(4)
    t[:3, :3] = np.eye(3) + math.sin(angle) * kx + (1 - math.cos(angle)) * kx @ kx
    return t


def _rpy(r: float, p: float, y: float) -> np.ndarray:
    ry = np.eye(4)
    ry[:3, :3] = [[math.cos(p), 0, math.sin(p)], [0, 1, 0], [-math.sin(p), 0, math.cos(p)]]
    return _rot_z(y) @ ry @ _rot_x(r)


def franka_dh(q: np.ndarray) -> list[np.ndarray]:
    """Franka's published modified (Craig) DH table: link1..7 frames, then panda_hand."""
    a = [0.0, 0.0, 0.0, 0.0825, -0.0825, 0.0, 0.088]
    d = [0.333, 0.0, 0.316, 0.0, 0.384, 0.0, 0.0]
    alpha = [0.0, -math.pi / 2, math.pi / 2, math.pi / 2, -math.pi / 2, math.pi / 2, math.pi / 2]
    t = np.eye(4)
    frames = []
    for i in range(7):
        t = t @ _rot_x(alpha[i]) @ _trans(a[i], 0, 0) @ _rot_z(q[i]) @ _trans(0, 0, d[i])
        frames.append(t)
    flange = t @ _trans(0, 0, 0.107)
    frames.append(flange @ _rot_z(-math.pi / 4))
    return frames


def ur5e_dh(q: np.ndarray) -> np.ndarray:
    """Universal Robots' published standard DH table for the UR5e: tool0 in base."""
    d = [0.1625, 0.0, 0.0, 0.1333, 0.0997, 0.0996]
    a = [0.0, -0.425, -0.3922, 0.0, 0.0, 0.0]
    alpha = [math.pi / 2, 0.0, 0.0, math.pi / 2, -math.pi / 2, 0.0]
    t = np.eye(4)
    for i in range(6):
        t = t @ _rot_z(q[i]) @ _trans(0, 0, d[i]) @ _trans(a[i], 0, 0) @ _rot_x(alpha[i])
    return t


def tree_walk(config: RobotConfig, q: np.ndarray, link: str) -> np.ndarray:
    """Pose of ``link`` by walking the joint specs with 4x4 matrices (mimic rule applied)."""
    by_child = {j.child: j for j in config.joints}
    value = {**config.lock_joints, **dict(zip(config.joint_names, q))}
    chain = []
    while link != config.base_link:
        chain.append(by_child[link])
        link = by_child[link].parent
    t = np.eye(4)
    for joint in reversed(chain):
        t = t @ _trans(*joint.origin_xyz) @ _rpy(*joint.origin_rpy)
        if joint.type == "fixed":
            continue
        if joint.mimic is None:
            x = value[joint.name]
        else:
            x = joint.mimic.multiplier * value[joint.mimic.joint] + joint.mimic.offset
        if joint.type == "prismatic":
            t = t @ _trans(*(np.asarray(joint.axis) * x))
        else:
            t = t @ _axis_angle(joint.axis, x)
    return t


def _rotation(quat: torch.Tensor) -> np.ndarray:
    return quat_to_matrix(quat.to(torch.float64)).detach().cpu().numpy()


def _random_q(config: RobotConfig, n: int, seed: int = 0) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    low, high = config.joint_limits.position.to(torch.float64)
    u = torch.rand(n, config.dof, generator=gen, dtype=torch.float64)
    return (low + u * (high - low)).to(config.tensor_args.dtype)


def _finger_config() -> RobotConfig:
    """Panda arm + right finger: a prismatic joint that mimics the left finger's joint."""
    return RobotConfig.from_urdf(PANDA_URDF, "panda_link0", "panda_rightfinger", tensor_args=F64)


# ------------------------------------------------------------------------------------------
# forward kinematics
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("backend", BACKENDS)
def test_planar_arm_matches_closed_form(backend):
    config = RobotConfig.load("planar3", F64)
    kin = Kinematics(config, backend=backend)
    q = _random_q(config, 64)
    state = kin.forward(q)
    t1, t2, t3 = q.unbind(-1)
    c1, c12, c123 = t1, t1 + t2, t1 + t2 + t3
    x = 0.5 * c1.cos() + 0.4 * c12.cos() + 0.3 * c123.cos()
    y = 0.5 * c1.sin() + 0.4 * c12.sin() + 0.3 * c123.sin()
    torch.testing.assert_close(state.ee_position[:, 0], x, atol=1e-12, rtol=0)
    torch.testing.assert_close(state.ee_position[:, 1], y, atol=1e-12, rtol=0)
    torch.testing.assert_close(state.ee_position[:, 2], torch.zeros_like(x), atol=1e-12, rtol=0)
    w, qx, qy, qz = state.ee_quaternion.unbind(-1)
    torch.testing.assert_close(qx, torch.zeros_like(x), atol=1e-12, rtol=0)
    torch.testing.assert_close(qy, torch.zeros_like(x), atol=1e-12, rtol=0)
    yaw = 2.0 * torch.atan2(qz, w)
    wrapped = torch.remainder(yaw - c123 + math.pi, 2 * math.pi) - math.pi
    torch.testing.assert_close(wrapped, torch.zeros_like(x), atol=1e-12, rtol=0)
    # link frames: joint 2 sits at the tip of link 1, joint 3 at the tip of link 2
    assert state.link_names == ["link1", "link2", "link3", "tool"]
    elbow = torch.stack((0.5 * c1.cos(), 0.5 * c1.sin()), -1)
    torch.testing.assert_close(state.link_position[:, 1, :2], elbow, atol=1e-12, rtol=0)
    torch.testing.assert_close(state.link_position[:, 0], torch.zeros(64, 3, dtype=q.dtype))


@pytest.mark.parametrize("backend", BACKENDS)
def test_franka_matches_published_dh(backend):
    config = RobotConfig.load("franka", F64)
    kin = Kinematics(config, backend=backend)
    q = _random_q(config, 16, seed=1)
    state = kin.forward(q)
    assert state.link_names[-1] == "panda_hand" and len(state.link_names) == 8
    for n in range(q.shape[0]):
        frames = franka_dh(q[n].numpy())
        for k, frame in enumerate(frames):
            np.testing.assert_allclose(state.link_position[n, k].numpy(), frame[:3, 3], atol=1e-12)
            np.testing.assert_allclose(
                _rotation(state.link_quaternion[n, k]), frame[:3, :3], atol=1e-12
            )


def test_forward_into_buffers_matches_the_dh_table_and_reuses_them():
    """``out=`` writes the frames and spheres into caller buffers: the same values as the DH
    reference, the same storage on every call; refused where a gradient is taken or the size
    differs."""
    config = RobotConfig.load("franka", F64)
    kin = Kinematics(config)
    q1, q2 = _random_q(config, 6, seed=2), _random_q(config, 6, seed=3)
    out = kin.allocate_outputs(6, spheres=True)
    first = kin.forward(q1, out=out).link_position.clone()
    state = kin.forward(q2, out=out)
    assert state.link_position.data_ptr() == out.link_position.data_ptr()
    assert not torch.allclose(first, state.link_position)
    for n in range(q2.shape[0]):
        for k, frame in enumerate(franka_dh(q2[n].numpy())):
            np.testing.assert_allclose(state.link_position[n, k].numpy(), frame[:3, 3], atol=1e-12)
            np.testing.assert_allclose(
                _rotation(state.link_quaternion[n, k]), frame[:3, :3], atol=1e-12
            )
    torch.testing.assert_close(state.link_spheres, kin.forward(q2).link_spheres)
    with pytest.raises(ValueError, match="out: expected no gradient"):
        kin.forward(q2.clone().requires_grad_(True), out=out)
    with pytest.raises(ValueError, match="out: expected buffers for 3 configurations"):
        kin.forward(q2[:3], out=out)
    with pytest.raises(ValueError, match="without spheres"):
        kin.forward(q2, spheres=False, out=out)


def test_franka_ready_pose_position():
    """The 'ready' pose puts panda_hand 0.307 m in front of the base, 0.590 m up (DH numbers)."""
    config = RobotConfig.load("franka")
    state = Kinematics(config)(config.retract_config[None])
    torch.testing.assert_close(
        state.ee_position[0], torch.tensor([0.30689, 0.0, 0.59028]), atol=5e-5, rtol=0
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_ur5e_matches_published_dh(backend):
    config = RobotConfig.load("ur5e", F64)
    kin = Kinematics(config, backend=backend)
    q = _random_q(config, 16, seed=2)
    state = kin.forward(q)
    for n in range(q.shape[0]):
        ref = ur5e_dh(q[n].numpy())
        np.testing.assert_allclose(state.ee_position[n].numpy(), ref[:3, 3], atol=1e-12)
        np.testing.assert_allclose(_rotation(state.ee_quaternion[n]), ref[:3, :3], atol=1e-12)
    # all joints at zero: x = a2 + a3, y = -(d4 + d6), z = d1 - d5
    zero = kin.forward(torch.zeros(1, 6, dtype=torch.float64)).ee_position[0]
    torch.testing.assert_close(zero, torch.tensor([-0.8172, -0.2329, 0.0628], dtype=torch.float64))


def test_iiwa_zero_is_straight_up_and_elbow_bends_about_y():
    config = RobotConfig.load("iiwa", F64)
    kin = Kinematics(config)
    q = torch.zeros(2, 7, dtype=torch.float64)
    q[1, 3] = math.pi / 2  # A4 (axis -y) at +90 deg: the forearm tips towards -x
    state = kin.forward(q)
    torch.testing.assert_close(
        state.ee_position[0], torch.tensor([0.0, 0.0, 1.306], dtype=torch.float64)
    )
    torch.testing.assert_close(
        state.ee_position[1],
        torch.tensor([-0.526, 0.0, 0.78], dtype=torch.float64),
        atol=1e-12,
        rtol=0,
    )


@pytest.mark.parametrize("name", ["franka", "ur5e", "iiwa", "planar3"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_every_link_matches_a_matrix_walk_of_the_tree(name, backend):
    config = RobotConfig.load(name, F64)
    kin = Kinematics(config, backend=backend)
    q = _random_q(config, 8, seed=3)
    state = kin.forward(q)
    for n in range(q.shape[0]):
        for k, link in enumerate(state.link_names):
            ref = tree_walk(config, q[n].numpy(), link)
            np.testing.assert_allclose(state.link_position[n, k].numpy(), ref[:3, 3], atol=1e-12)
            np.testing.assert_allclose(
                _rotation(state.link_quaternion[n, k]), ref[:3, :3], atol=1e-12
            )


@pytest.mark.parametrize("backend", BACKENDS)
def test_prismatic_and_mimic_joints(backend):
    config = _finger_config()
    assert config.joint_names[-1] == "panda_finger_joint1"  # the joint the right finger follows
    kin = Kinematics(config, backend=backend)
    q = _random_q(config, 8, seed=4)
    state = kin.forward(q)
    for n in range(q.shape[0]):
        ref = tree_walk(config, q[n].numpy(), "panda_rightfinger")
        np.testing.assert_allclose(state.ee_position[n].numpy(), ref[:3, 3], atol=1e-12)
    # opening the fingers moves the right finger along -y of the hand by the opening
    q2 = q[:1].repeat(2, 1)
    q2[1, -1] = q2[0, -1] + 0.01
    ee = kin.forward(q2)
    hand_y = torch.from_numpy(tree_walk(config, q2[0].numpy(), "panda_hand")[:3, 1])
    torch.testing.assert_close(ee.ee_position[1] - ee.ee_position[0], -0.01 * hand_y)


def test_mimic_multiplier_and_offset(tmp_path):
    text = PANDA_URDF.read_text().replace(
        'multiplier="1.0" offset="0.0"', 'multiplier="-0.5" offset="0.003"'
    )
    path = tmp_path / "panda_mimic.urdf"
    path.write_text(text)
    config = RobotConfig.from_urdf(path, "panda_link0", "panda_rightfinger", tensor_args=F64)
    q = _random_q(config, 4, seed=5)
    for backend in BACKENDS:
        state = Kinematics(config, backend=backend).forward(q)
        for n in range(q.shape[0]):
            ref = tree_walk(config, q[n].numpy(), "panda_rightfinger")
            np.testing.assert_allclose(state.ee_position[n].numpy(), ref[:3, 3], atol=1e-12)


def test_continuous_joint_and_joint_order(tmp_path):
    urdf = """<robot name="wheel">
      <link name="base"/><link name="arm"/><link name="tip"/>
      <joint name="spin" type="continuous"><parent link="base"/><child link="arm"/>
        <origin xyz="0 0 0.1" rpy="0 0 0"/><axis xyz="0 0 1"/>
        <limit velocity="3" effort="1"/></joint>
      <joint name="slide" type="prismatic"><parent link="arm"/><child link="tip"/>
        <origin xyz="0.2 0 0" rpy="0 0 0"/><axis xyz="1 0 0"/>
        <limit lower="-0.1" upper="0.3" velocity="1" effort="1"/></joint>
    </robot>"""
    path = tmp_path / "wheel.urdf"
    path.write_text(urdf)
    config = RobotConfig.from_urdf(path, "base", "tip", tensor_args=F64)
    torch.testing.assert_close(
        config.joint_limits.position[:, 0],
        torch.tensor([-2 * math.pi, 2 * math.pi], dtype=torch.float64),
    )
    # q columns follow joint_names, whatever order the file lists them in
    data = config.to_dict()
    data["joint_names"] = ["slide", "spin"]
    for kind in ("position", "velocity", "acceleration", "jerk"):
        for side in ("lower", "upper"):
            data["joint_limits"][kind][side].reverse()
    data["retract_config"].reverse()
    swapped = RobotConfig.from_dict(data, F64)
    q = torch.tensor([[0.7, 0.05]], dtype=torch.float64)
    for backend in BACKENDS:
        a = Kinematics(config, backend=backend).forward(q).ee_position
        b = Kinematics(swapped, backend=backend).forward(q.flip(-1)).ee_position
        expected = torch.tensor(
            [[0.25 * math.cos(0.7), 0.25 * math.sin(0.7), 0.1]], dtype=torch.float64
        )
        torch.testing.assert_close(a, expected)
        torch.testing.assert_close(b, expected)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_backends_agree(dtype):
    config = _finger_config().to(TensorDeviceType(dtype=dtype))
    q = _random_q(config, 50, seed=6)
    warp_state = Kinematics(config, backend="warp").forward(q)
    torch_state = Kinematics(config, backend="torch").forward(q)
    tol = 1e-5 if dtype == torch.float32 else 1e-12
    torch.testing.assert_close(
        warp_state.link_position, torch_state.link_position, atol=tol, rtol=0
    )
    torch.testing.assert_close(
        warp_state.link_quaternion, torch_state.link_quaternion, atol=tol, rtol=0
    )
    assert warp_state.link_position.dtype == dtype


def test_quaternions_are_unit_and_in_one_hemisphere():
    config = RobotConfig.load("franka")
    state = Kinematics(config).forward(_random_q(config, 200, seed=7))
    norms = state.link_quaternion.norm(dim=-1)
    torch.testing.assert_close(norms, torch.ones_like(norms), atol=1e-5, rtol=0)
    assert (state.link_quaternion[..., 0] >= 0).all()


def test_trajectory_shapes_and_state_helpers():
    config = RobotConfig.load("franka")
    kin = Kinematics(config)
    q = _random_q(config, 12, seed=8).reshape(3, 4, 7)
    state = kin.forward(q)
    assert state.ee_position.shape == (3, 4, 3)
    assert state.ee_quaternion.shape == (3, 4, 4)
    assert state.link_position.shape == (3, 4, 8, 3)
    assert state.link_quaternion.shape == (3, 4, 8, 4)
    flat = kin.forward(q.reshape(12, 7))
    torch.testing.assert_close(state.ee_position.reshape(12, 3), flat.ee_position)
    single = kin.forward(q[1, 2])
    assert single.ee_position.shape == (3,)
    torch.testing.assert_close(single.ee_position, state.ee_position[1, 2])
    pose = state.ee_pose()
    assert isinstance(pose, Pose) and pose.batch == 12
    link = state.link_pose("panda_link4")
    torch.testing.assert_close(link.position, state.link_position[..., 3, :].reshape(12, 3))
    with pytest.raises(ValueError, match="link_name"):
        state.link_pose("panda_link8")  # folded into panda_hand's offset
    text = repr(state)
    assert "KinematicsState" in text and "(3, 4, 8, 3)" in text and "float32" in text
    assert "cpu" in text and "first ee pose" in text
    assert isinstance(state, KinematicsState)
    empty = kin.forward(torch.zeros(0, 7))
    assert empty.ee_position.shape == (0, 3)


def test_input_validation():
    kin = Kinematics(RobotConfig.load("planar3"))
    with pytest.raises(ValueError, match=r"q: expected shape \[\.\.\., 3\].*received \(4, 2\)"):
        kin.forward(torch.zeros(4, 2))
    with pytest.raises(TypeError, match="q: expected dtype torch.float32.*float64"):
        kin.forward(torch.zeros(4, 3, dtype=torch.float64))
    with pytest.raises(TypeError, match="q: expected a torch.Tensor"):
        kin.forward([[0.0, 0.0, 0.0]])
    with pytest.raises(ValueError, match="backend"):
        Kinematics(RobotConfig.load("planar3"), backend="jax")
    with pytest.raises(TypeError, match="robot_config"):
        Kinematics("planar3")


# ------------------------------------------------------------------------------------------
# gradients and Jacobian
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("finger", [False, True], ids=["franka", "finger-mimic"])
def test_gradcheck_float64(backend, finger):
    config = _finger_config() if finger else RobotConfig.load("franka", F64)
    kin = Kinematics(config, backend=backend)
    q = _random_q(config, 3, seed=9).requires_grad_()

    def frames(x):
        state = kin.forward(x)
        return state.link_position, state.link_quaternion

    assert torch.autograd.gradcheck(frames, (q,), eps=1e-6, atol=1e-8)


def test_gradient_matches_torch_autograd_reference():
    """FK's analytic backward equals autograd through the plain matrix walk (in torch)."""
    config = RobotConfig.load("ur5e", F64)
    q = _random_q(config, 4, seed=10).requires_grad_()
    weights = torch.randn(4, 3, dtype=torch.float64)

    def dh_torch(x):
        d = [0.1625, 0.0, 0.0, 0.1333, 0.0997, 0.0996]
        a = [0.0, -0.425, -0.3922, 0.0, 0.0, 0.0]
        alpha = [math.pi / 2, 0.0, 0.0, math.pi / 2, -math.pi / 2, 0.0]
        t = torch.eye(4, dtype=x.dtype).expand(x.shape[0], 4, 4)
        for i in range(6):
            c, s = x[:, i].cos(), x[:, i].sin()
            ca, sa = math.cos(alpha[i]), math.sin(alpha[i])
            zero, one = torch.zeros_like(c), torch.ones_like(c)
            rows = [
                [c, -s * ca, s * sa, a[i] * c],
                [s, c * ca, -c * sa, a[i] * s],
                [zero, zero + sa, zero + ca, zero + d[i]],
                [zero, zero, zero, one],
            ]
            t = t @ torch.stack([torch.stack(r, -1) for r in rows], -2)
        return t[:, :3, 3]

    (ref,) = torch.autograd.grad((dh_torch(q) * weights).sum(), q)
    for backend in BACKENDS:
        kin = Kinematics(config, backend=backend)
        (ours,) = torch.autograd.grad((kin.forward(q).ee_position * weights).sum(), q)
        torch.testing.assert_close(ours, ref, atol=1e-12, rtol=0)


def _angular_fd(kin: Kinematics, q: torch.Tensor, h: float = 1e-6) -> torch.Tensor:
    """Base-frame angular velocity columns from central differences of the ee quaternion."""
    cols = []
    for j in range(q.shape[-1]):
        dq = torch.zeros_like(q)
        dq[..., j] = h
        plus = kin.forward(q + dq).ee_quaternion
        minus = kin.forward(q - dq).ee_quaternion
        rel = quat_multiply(plus, minus * torch.tensor([1.0, -1, -1, -1], dtype=q.dtype))
        rel = rel * torch.where(rel[..., :1] < 0, -1.0, 1.0)
        angle = 2 * torch.atan2(rel[..., 1:].norm(dim=-1), rel[..., 0])
        axis = rel[..., 1:] / rel[..., 1:].norm(dim=-1, keepdim=True).clamp_min(1e-300)
        cols.append(axis * (angle / (2 * h))[..., None])
    return torch.stack(cols, dim=-1)


@pytest.mark.parametrize("finger", [False, True], ids=["franka", "finger-mimic"])
def test_jacobian_matches_finite_differences(finger):
    config = _finger_config() if finger else RobotConfig.load("franka", F64)
    kin = Kinematics(config)
    q = _random_q(config, 5, seed=11)
    jac = kin.jacobian(q)
    assert jac.shape == (5, 6, config.dof)
    h = 1e-6
    linear = []
    for j in range(config.dof):
        dq = torch.zeros_like(q)
        dq[:, j] = h
        linear.append((kin.forward(q + dq).ee_position - kin.forward(q - dq).ee_position) / (2 * h))
    torch.testing.assert_close(jac[:, :3], torch.stack(linear, -1), atol=1e-8, rtol=0)
    torch.testing.assert_close(jac[:, 3:], _angular_fd(kin, q, h), atol=1e-8, rtol=0)


def test_jacobian_matches_autograd_of_fk():
    config = RobotConfig.load("iiwa", F64)
    kin = Kinematics(config, backend="torch")
    q = _random_q(config, 3, seed=12)
    jac = kin.jacobian(q)
    for n in range(3):
        pos_jac = torch.autograd.functional.jacobian(lambda x: kin.forward(x).ee_position, q[n])
        torch.testing.assert_close(jac[n, :3], pos_jac, atol=1e-12, rtol=0)
        quat = kin.forward(q[n]).ee_quaternion
        dquat = torch.autograd.functional.jacobian(lambda x: kin.forward(x).ee_quaternion, q[n])
        # omega_j = 2 vec(dq/dq_j (x) conj(q))
        conj = quat * torch.tensor([1.0, -1, -1, -1], dtype=quat.dtype)
        omega = 2 * quat_multiply(dquat.t(), conj.expand(7, 4))[:, 1:].t()
        torch.testing.assert_close(jac[n, 3:], omega, atol=1e-12, rtol=0)


def test_jacobian_trajectory_shape_and_prismatic_columns():
    config = _finger_config()
    kin = Kinematics(config)
    q = _random_q(config, 6, seed=13).reshape(2, 3, 8)
    jac = kin.jacobian(q)
    assert jac.shape == (2, 3, 6, 8)
    # the finger joint translates only: no angular column, a unit linear column
    torch.testing.assert_close(jac[..., 3:, -1], torch.zeros(2, 3, 3, dtype=torch.float64))
    norms = jac[..., :3, -1].norm(dim=-1)
    torch.testing.assert_close(norms, torch.ones_like(norms))


def test_jacobian_and_pose_is_the_jacobian_at_forwards_pose():
    """One FK pass for a Newton step: the Jacobian is :meth:`jacobian`'s (checked above against
    finite differences) and the pose is :meth:`forward`'s, in the batch's shape."""
    config = RobotConfig.load("franka", F64)
    kin = Kinematics(config)
    q = _random_q(config, 6, seed=14).reshape(2, 3, config.dof)
    jac, position, quaternion = kin.jacobian_and_pose(q)
    state = kin.forward(q)
    torch.testing.assert_close(jac, kin.jacobian(q), atol=0, rtol=0)
    torch.testing.assert_close(position, state.ee_position, atol=0, rtol=0)
    torch.testing.assert_close(quaternion, state.ee_quaternion, atol=0, rtol=0)


def test_jacobian_is_differentiable():
    config = RobotConfig.load("planar3", F64)
    kin = Kinematics(config)
    q = _random_q(config, 2, seed=14).requires_grad_()
    assert torch.autograd.gradcheck(lambda x: kin.jacobian(x), (q,), eps=1e-6, atol=1e-8)


# ------------------------------------------------------------------------------------------
# URDF -> YAML -> FK, devices
# ------------------------------------------------------------------------------------------
def test_urdf_yaml_round_trip_gives_equal_fk(tmp_path):
    from_urdf = RobotConfig.from_urdf(PANDA_URDF, "panda_link0", "panda_hand", tensor_args=F64)
    path = tmp_path / "panda.yml"
    from_urdf.to_yaml(path)
    from_yaml = RobotConfig.from_yaml(path, F64)
    bundled = RobotConfig.load("franka", F64)
    q = _random_q(bundled, 32, seed=15)
    ref = Kinematics(bundled).forward(q)
    for config in (from_urdf, from_yaml):
        state = Kinematics(config).forward(q)
        assert state.link_names == ref.link_names
        torch.testing.assert_close(state.link_position, ref.link_position, atol=1e-12, rtol=0)
        torch.testing.assert_close(state.link_quaternion, ref.link_quaternion, atol=1e-12, rtol=0)


def test_urdf_path_in_robot_file(tmp_path):
    data = RobotConfig.load("franka").to_dict()
    del data["joints"]
    # the Panda URDF has no attached_object link: no spheres reserved for it
    del data["extra_collision_spheres"]
    data["self_collision_ignore"] = {
        link: [o for o in others if o != "attached_object"]
        for link, others in data["self_collision_ignore"].items()
        if link != "attached_object"
    }
    data["urdf_path"] = "franka_panda.urdf"
    (tmp_path / "franka_panda.urdf").write_text(PANDA_URDF.read_text())
    path = tmp_path / "panda_urdf.yml"
    import yaml

    path.write_text(yaml.safe_dump(data))
    config = RobotConfig.from_yaml(path, F64)
    q = _random_q(config, 4, seed=16)
    torch.testing.assert_close(
        Kinematics(config).forward(q).ee_position,
        Kinematics(RobotConfig.load("franka", F64)).forward(q).ee_position,
        atol=1e-12,
        rtol=0,
    )


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("backend", BACKENDS)
def test_cuda_matches_cpu(backend):
    cuda = TensorDeviceType(device="cuda", dtype=torch.float64)
    config = _finger_config()
    q = _random_q(config, 64, seed=17)
    cpu_state = Kinematics(config, backend=backend).forward(q)
    kin = Kinematics(config.to(cuda), backend=backend)
    q_cuda = q.cuda().requires_grad_()
    state = kin.forward(q_cuda)
    assert state.ee_position.device.type == "cuda"
    torch.testing.assert_close(state.link_position.cpu(), cpu_state.link_position)
    torch.testing.assert_close(state.link_quaternion.cpu(), cpu_state.link_quaternion)
    (grad,) = torch.autograd.grad(state.ee_position.sum(), q_cuda)
    q_cpu = q.clone().requires_grad_()
    (grad_cpu,) = torch.autograd.grad(
        Kinematics(config, backend=backend).forward(q_cpu).ee_position.sum(), q_cpu
    )
    torch.testing.assert_close(grad.cpu(), grad_cpu)


def test_cpu_row_chunking_matches_torch_backend(monkeypatch):
    """Large CPU launches are split over worker threads; force that path on a small batch."""
    import importlib

    launch_module = importlib.import_module("curobo_lite.kernels.launch")
    monkeypatch.setattr(launch_module, "CPU_CHUNK_MIN_ELEMENTS", 1)
    threads = torch.get_num_threads()
    torch.set_num_threads(3)
    try:
        tensor_args = TensorDeviceType(dtype=torch.float64)
        robot = RobotConfig.load("franka", tensor_args=tensor_args)
        q = robot.retract_config + 0.3 * torch.randn(
            7, 7, dtype=torch.float64, generator=torch.Generator().manual_seed(2)
        )
        warp_q = q.clone().requires_grad_()
        torch_q = q.clone().requires_grad_()
        warp_fk = Kinematics(robot, backend="warp").forward(warp_q)
        torch_fk = Kinematics(robot, backend="torch").forward(torch_q)
        torch.testing.assert_close(warp_fk.link_position, torch_fk.link_position)
        torch.testing.assert_close(warp_fk.link_quaternion, torch_fk.link_quaternion)
        (warp_fk.ee_position.sum() + warp_fk.ee_quaternion.square().sum()).backward()
        (torch_fk.ee_position.sum() + torch_fk.ee_quaternion.square().sum()).backward()
        torch.testing.assert_close(warp_q.grad, torch_q.grad)
    finally:
        torch.set_num_threads(threads)


# ------------------------------------------------------------------------------------------
# the CPU float32 kernel that walks eight configurations per thread
# ------------------------------------------------------------------------------------------
def _spheres_by_link(config: RobotConfig, kin: Kinematics, spheres: np.ndarray, q: np.ndarray):
    """``(ours, reference)`` pairs of ``[n, 4]`` spheres per collision link: ours picked from
    ``spheres [S, 4]`` by ``sphere_link_names`` (file order within a link), the reference the
    robot file's centres moved by the link's 4x4 pose from the matrix walk."""
    collision = config.collision
    for link in collision.link_names:
        pose = np.eye(4) if link == config.base_link else tree_walk(config, q, link)
        local = np.asarray(collision.spheres[link], dtype=np.float64).reshape(-1, 4)
        centres = local[:, :3] @ pose[:3, :3].T + pose[:3, 3]
        reference = np.concatenate((centres, local[:, 3:] + collision.sphere_buffer), axis=1)
        ours = spheres[[k for k, name in enumerate(kin.sphere_link_names) if name == link]]
        yield ours, reference


@pytest.mark.parametrize("name", ["franka", "ur5e", "iiwa", "fingers"])
@pytest.mark.parametrize("n", [1, 7, 8, 13, 37])
def test_cpu_float32_lanes_kernel_matches_the_matrix_walk(name, n):
    """Batches that are not a multiple of the eight lanes, spheres, joint axes (grad mode) and a
    prismatic mimic joint (``fingers``) against the float64 matrix walk of the tree."""

    f32 = TensorDeviceType(dtype=torch.float32)
    if name == "fingers":
        config = RobotConfig.from_urdf(
            PANDA_URDF, "panda_link0", "panda_rightfinger", tensor_args=f32
        )
    else:
        config = RobotConfig.load(name, f32)
    assert fk_kernels.forward_lanes(torch.device("cpu"), torch.float32)
    kin = Kinematics(config)
    q64 = _random_q(config, n, seed=n).to(torch.float64)
    q = q64.to(torch.float32).requires_grad_()
    state = kin.forward(q)
    for i in range(n):
        for k, link in enumerate(state.link_names):
            ref = tree_walk(config, q64[i].numpy(), link)
            np.testing.assert_allclose(
                state.link_position[i, k].detach().numpy(), ref[:3, 3], atol=2e-6
            )
            np.testing.assert_allclose(
                _rotation(state.link_quaternion[i, k].detach()), ref[:3, :3], atol=2e-6
            )
        if kin.num_spheres:
            spheres = state.link_spheres[i].detach().numpy()
            for ours, reference in _spheres_by_link(config, kin, spheres, q64[i].numpy()):
                np.testing.assert_allclose(ours, reference, atol=2e-6)
    assert (state.link_quaternion[..., 0] >= 0).all()
    # the adjoint reads the base-frame joint axes the lanes kernel wrote
    q_ref = q64.clone().requires_grad_()
    fk64 = Kinematics(RobotConfig.load(name, F64) if name != "fingers" else _finger_config())
    ref_state = fk64.forward(q_ref)
    weights = torch.randn(
        ref_state.link_position.shape,
        generator=torch.Generator().manual_seed(1),
        dtype=torch.float64,
    )
    (state.link_position * weights.float()).sum().backward()
    (ref_state.link_position * weights).sum().backward()
    torch.testing.assert_close(q.grad.double(), q_ref.grad, atol=2e-5, rtol=1e-5)


def test_cpu_float32_lanes_kernel_stores_no_row_past_the_batch():
    """The last thread's spare lanes compute a copy of the last row and store nothing: output
    views of larger buffers keep their sentinel rows."""
    from curobo_lite.robot.kinematics import KinematicsBuffers

    config = RobotConfig.load("franka", TensorDeviceType(dtype=torch.float32))
    kin = Kinematics(config)
    n = 11
    full = kin.allocate_outputs(n + 8)
    for t in (full.link_position, full.link_quaternion, full.link_spheres):
        t.fill_(-7.0)
    view = KinematicsBuffers(
        full.link_position[:n], full.link_quaternion[:n], full.joint_axis[:n], full.link_spheres[:n]
    )
    q = _random_q(config, n, seed=5)
    with torch.no_grad():
        state = kin.forward(q, out=view)
    reference = kin.forward(q.clone().requires_grad_())  # fresh outputs, through autograd
    torch.testing.assert_close(state.link_position, reference.link_position.detach())
    for t in (full.link_position, full.link_quaternion, full.link_spheres):
        assert (t[n:] == -7.0).all()


@wp.kernel
def _lanes_cosine_sine(
    angle: wp.array(dtype=fk_kernels._Lanes),
    c: wp.array(dtype=fk_kernels._Lanes),
    s: wp.array(dtype=fk_kernels._Lanes),
):
    t = wp.tid()
    cosine, sine = fk_kernels._lanes_cos_sin(angle[t])
    c[t] = cosine
    s[t] = sine


def test_lanes_cosine_and_sine_match_float64():
    """The lanes kernel's branch-free cosine and sine (Cody-Waite reduction, Cephes
    polynomials) against float64 at random angles up to 8192 and at every multiple of pi/4 in
    [-16 pi, 16 pi] (quadrant boundaries), within one float32 ulp of 1."""
    wp.init()
    gen = torch.Generator().manual_seed(0)
    for limit in (1.0, 50.0, 8192.0):
        x = (2.0 * torch.rand(4096, generator=gen, dtype=torch.float64) - 1.0) * limit
        x = torch.cat((x, torch.arange(-64, 65, dtype=torch.float64) * math.pi / 4)).float()
        x = torch.nn.functional.pad(x, (0, -x.numel() % 8)).reshape(-1, 8).contiguous()
        c, s = torch.empty_like(x), torch.empty_like(x)
        arrays = [wp.from_torch(t, dtype=fk_kernels._Lanes) for t in (x, c, s)]
        wp.launch(_lanes_cosine_sine, dim=x.shape[0], inputs=arrays, device="cpu")
        torch.testing.assert_close(c.double(), x.double().cos(), rtol=0, atol=1.2e-7)
        torch.testing.assert_close(s.double(), x.double().sin(), rtol=0, atol=1.2e-7)
