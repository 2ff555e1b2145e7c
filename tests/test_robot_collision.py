"""Robot collision model: sphere keys in robot files, spheres on FK, self-collision, sphere fit.

References are independent of the code under test: numpy forward kinematics from the joint
list (scipy rotations), brute-force numpy sphere distances, python-fcl sphere distances,
analytic capsule distances for the planar arm, trimesh sampling for coverage, and
``torch.autograd.gradcheck`` in float64.
"""

from __future__ import annotations

import copy
import itertools
import math
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from scipy.spatial.transform import Rotation

from curobo_lite.cli import main
from curobo_lite.geom import SelfCollisionChecker, self_collision_distance
from curobo_lite.kernels.collision_common import smooth_hinge_torch
from curobo_lite.robot import Kinematics, RobotConfig
from curobo_lite.types import TensorDeviceType

REPO = Path(__file__).resolve().parents[1]
F64 = TensorDeviceType(dtype=torch.float64)
BACKENDS = ("warp", "torch")


def _franka_dict() -> dict:
    data = yaml.safe_load((REPO / "configs" / "robot" / "franka.yml").read_text())
    data.pop("collision_geometry")  # relative to configs/robot; these tests load from elsewhere
    return data


def _load(data: dict, tmp_path: Path | None = None, tensor_args=F64) -> RobotConfig:
    return RobotConfig.from_dict(data, tensor_args, source="robot.yml", base_dir=tmp_path)


# ------------------------------------------------------------------------------------------
# robot-file keys
# ------------------------------------------------------------------------------------------
def test_franka_collision_keys_parse():
    config = RobotConfig.load("franka")
    col = config.collision
    assert col is not None
    assert col.link_names[0] == "panda_link0" and col.link_names[-3:] == [
        "panda_leftfinger",
        "panda_rightfinger",
        "attached_object",
    ]
    assert config.lock_joints == {"panda_finger_joint1": 0.04, "panda_finger_joint2": 0.04}
    assert col.num_spheres == sum(len(v) for v in col.spheres.values())
    # reserved for a held object: disabled until something is attached
    assert col.extra_spheres == {"attached_object": 12}
    assert all(r[3] < 0 for r in col.spheres["attached_object"])
    own = [rows for link, rows in col.spheres.items() if link not in col.extra_spheres]
    assert all(r[3] > 0 for rows in own for r in rows)
    # the ignore list is symmetric whichever way round the file wrote it
    for link, others in col.self_collision_ignore.items():
        for other in others:
            assert link in col.self_collision_ignore[other]
    assert col.ignores("panda_link0", "panda_link1") and col.ignores("panda_link1", "panda_link0")
    assert not col.ignores("panda_link0", "panda_hand")
    assert set(col.self_collision_buffer) == set(col.link_names) - set(col.extra_spheres)


@pytest.mark.parametrize("name", ["franka", "ur5e", "iiwa", "planar3"])
def test_bundled_robots_have_spheres_on_every_link_with_geometry(name):
    config = RobotConfig.load(name)
    kin = Kinematics(config)
    assert kin.num_spheres >= 3 * len(config.collision.link_names)
    assert set(kin.sphere_link_names) == set(config.collision.link_names)
    pairs = kin.self_collision_pairs
    assert pairs.dtype == torch.long and pairs.shape[1] == 2 and (pairs[:, 0] < pairs[:, 1]).all()


def test_spheres_file_path_matches_inline(tmp_path):
    data = _franka_dict()
    (tmp_path / "spheres").mkdir()
    (tmp_path / "spheres" / "franka.yml").write_text(
        yaml.safe_dump({"collision_spheres": data["collision_spheres"]})
    )
    linked = copy.deepcopy(data)
    linked["collision_spheres"] = "spheres/franka.yml"
    inline = _load(data).collision
    from_file = _load(linked, tmp_path).collision
    assert from_file.spheres == inline.spheres
    assert from_file.spheres_file == str(tmp_path / "spheres" / "franka.yml")


def test_default_link_names_buffer_and_to_dict_round_trip(tmp_path):
    data = _franka_dict()
    del data["collision_link_names"]
    data["collision_sphere_buffer"] = 0.005
    config = _load(data)
    reserved = list(data["extra_collision_spheres"])  # after the links with spheres
    assert config.collision.link_names == list(data["collision_spheres"]) + reserved
    again = _load(config.to_dict())
    assert again.collision.spheres == config.collision.spheres
    assert again.collision.self_collision_ignore == config.collision.self_collision_ignore
    assert again.lock_joints == config.lock_joints
    # the buffer grows every radius of the kinematics output
    radii = Kinematics(config).forward(config.retract_config[None]).link_spheres[0, :, 3]
    plain = dict(data, collision_sphere_buffer=0.0)
    radii0 = Kinematics(_load(plain)).forward(config.retract_config[None]).link_spheres[0, :, 3]
    torch.testing.assert_close(radii, radii0 + 0.005)


def _edit(path: str, value):
    def apply(data: dict) -> None:
        keys = path.split(".")
        target = data
        for key in keys[:-1]:
            target = target[int(key)] if isinstance(target, list) else target[key]
        last = keys[-1]
        if value is _DELETE:
            del target[last]
        elif isinstance(target, list):
            target[int(last)] = value
        else:
            target[last] = value

    return apply


_DELETE = object()


def _both(*edits):
    def apply(data: dict) -> None:
        for edit in edits:
            edit(data)

    return apply


@pytest.mark.parametrize(
    "edit, key, words",
    [
        (_edit("collision_spheres.panda_link3.2.radius", -0.01), "collision_spheres.panda_link3[2].radius", "> 0"),  # noqa: E501
        (_edit("collision_spheres.panda_link3.2.radius", "big"), "collision_spheres.panda_link3[2].radius", "number"),  # noqa: E501
        (_edit("collision_spheres.panda_link3.0.center", [0.0, 1.0]), "collision_spheres.panda_link3[0].center", "3 numbers"),  # noqa: E501
        (_edit("collision_spheres.panda_link3.0.center", [0.0, 1.0, float("nan")]), "collision_spheres.panda_link3[0].center[2]", "finite"),  # noqa: E501
        (_edit("collision_spheres.panda_link3.0.colour", "red"), "collision_spheres.panda_link3[0]", "unknown key"),  # noqa: E501
        (_edit("collision_spheres.panda_link3", []), "collision_spheres.panda_link3", "non-empty list"),  # noqa: E501
        (_both(_edit("collision_spheres.no_such_link", [{"center": [0, 0, 0], "radius": 0.1}]), _edit("collision_link_names", _DELETE)), "collision_spheres.no_such_link", "unknown link"),  # noqa: E501
        (_edit("collision_link_names", ["panda_link1", "panda_link9"]), "collision_link_names[1]", "no entry"),  # noqa: E501
        (_edit("collision_sphere_buffer", -0.5), "collision_sphere_buffer", "radius + buffer > 0"),
        (_edit("collision_sphere_buffer", "x"), "collision_sphere_buffer", "number"),
        (_edit("lock_joints", _DELETE), "collision_spheres.panda_leftfinger", "panda_finger_joint1"),  # noqa: E501
        (_edit("lock_joints.no_joint", 0.0), "lock_joints.no_joint", "unknown joint"),
        (_edit("lock_joints.panda_joint2", 0.0), "lock_joints.panda_joint2", "chain"),
        (_edit("lock_joints.panda_hand_joint", 0.0), "lock_joints.panda_hand_joint", "fixed"),
        (_edit("lock_joints.panda_finger_joint1", [0.04]), "lock_joints.panda_finger_joint1", "number"),  # noqa: E501
        (_edit("self_collision_ignore.panda_link0", ["panda_link0"]), "self_collision_ignore.panda_link0", "itself"),  # noqa: E501
        (_edit("self_collision_ignore.panda_link0", ["nope"]), "self_collision_ignore.panda_link0", "unknown link"),  # noqa: E501
        (_edit("self_collision_buffer.panda_link0", "wide"), "self_collision_buffer.panda_link0", "number"),  # noqa: E501
        (_edit("self_collision_buffer.ghost", 0.1), "self_collision_buffer.ghost", "unknown link"),
    ],
)  # fmt: skip
def test_named_errors(edit, key, words):
    data = _franka_dict()
    edit(data)
    with pytest.raises(ValueError) as info:
        _load(data)
    message = str(info.value)
    assert f"'{key}'" in message and words in message, message
    assert message.startswith("robot.yml")


def test_link_off_the_chain_behind_a_moving_joint_is_refused():
    data = _franka_dict()
    # a revolute joint hanging off link 3: its child moves independently of the chain
    data["joints"].append(
        {"name": "free_joint", "type": "revolute", "parent": "panda_link3", "child": "loose",
         "axis": [0, 0, 1]}
    )  # fmt: skip
    data["collision_spheres"]["loose"] = [{"center": [0, 0, 0], "radius": 0.02}]
    data["collision_link_names"].append("loose")
    with pytest.raises(
        ValueError, match=r"'collision_spheres.loose'.*not rigidly attached.*free_joint"
    ):
        _load(data)
    # locking it makes the link rigid
    data["lock_joints"]["free_joint"] = 0.3
    assert "loose" in Kinematics(_load(data)).sphere_link_names


def test_spheres_file_errors_name_the_spheres_file(tmp_path):
    data = _franka_dict()
    data["collision_spheres"] = "missing.yml"
    with pytest.raises(ValueError, match=r"'collision_spheres'.*does not exist"):
        _load(data, tmp_path)
    (tmp_path / "bad.yml").write_text(yaml.safe_dump({"spheres": {}}))
    data["collision_spheres"] = "bad.yml"
    with pytest.raises(ValueError, match=r"bad.yml: '<top level>': missing key"):
        _load(data, tmp_path)
    (tmp_path / "bad2.yml").write_text(
        yaml.safe_dump({"collision_spheres": {"panda_link1": [{"center": [0, 0], "radius": 1}]}})
    )
    data["collision_spheres"] = "bad2.yml"
    with pytest.raises(ValueError, match=r"bad2.yml: 'collision_spheres.panda_link1\[0\].center'"):
        _load(data, tmp_path)


def test_collision_keys_without_spheres_are_refused():
    data = _franka_dict()
    del data["collision_spheres"]
    with pytest.raises(ValueError, match="given without 'collision_spheres'"):
        _load(data)
    for key in ("collision_link_names", "collision_sphere_buffer", "self_collision_ignore",
                "self_collision_buffer", "extra_collision_spheres"):  # fmt: skip
        del data[key]
    config = _load(data)
    assert config.collision is None
    kin = Kinematics(config)
    assert kin.num_spheres == 0 and kin.self_collision_pairs.shape == (0, 2)
    assert kin.forward(config.retract_config[None]).link_spheres is None


# ------------------------------------------------------------------------------------------
# spheres on the kinematics output
# ------------------------------------------------------------------------------------------
def _joint_matrix(joint: dict, value: float) -> np.ndarray:
    origin = joint.get("origin", {})
    out = np.eye(4)
    out[:3, :3] = Rotation.from_euler("xyz", origin.get("rpy", [0, 0, 0])).as_matrix()
    out[:3, 3] = origin.get("xyz", [0, 0, 0])
    motion = np.eye(4)
    axis = np.asarray(joint.get("axis", [1, 0, 0]), dtype=float)
    axis = axis / np.linalg.norm(axis)
    if joint["type"] in ("revolute", "continuous"):
        motion[:3, :3] = Rotation.from_rotvec(axis * value).as_matrix()
    elif joint["type"] == "prismatic":
        motion[:3, 3] = axis * value
    return out @ motion


def _reference_spheres(data: dict, q: np.ndarray) -> tuple[list[str], np.ndarray]:
    """Spheres ``[S, 4]`` in the base frame by walking the joint list with 4x4 matrices."""
    values = dict(zip(data["joint_names"], q))
    values.update(data.get("lock_joints", {}))
    pose = {data["base_link"]: np.eye(4)}
    pending = list(data["joints"])
    while pending:
        for joint in list(pending):
            if joint["parent"] in pose:
                pose[joint["child"]] = pose[joint["parent"]] @ _joint_matrix(
                    joint, values.get(joint["name"], 0.0)
                )
                pending.remove(joint)
    buffer = data.get("collision_sphere_buffer", 0.0)
    rows, names = [], []
    for link in data["collision_link_names"]:
        for sphere in data["collision_spheres"][link]:
            centre = pose[link] @ np.array([*sphere["center"], 1.0])
            rows.append([*centre[:3], sphere["radius"] + buffer])
            names.append(link)
    return names, np.array(rows)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", ["franka", "ur5e", "iiwa"])
def test_link_spheres_match_numpy_forward_kinematics(name, backend, device):
    data = yaml.safe_load((REPO / "configs" / "robot" / f"{name}.yml").read_text())
    data.pop("collision_geometry", None)  # relative to configs/robot
    data["collision_sphere_buffer"] = 0.003
    ta = TensorDeviceType(device=device, dtype=torch.float64)
    config = RobotConfig.from_dict(data, ta)
    kin = Kinematics(config, backend=backend)
    low, high = config.joint_limits.position
    q = low + torch.rand(4, 3, config.dof, dtype=torch.float64, device=device) * (high - low)
    spheres = kin.forward(q).link_spheres
    assert spheres.shape == (4, 3, kin.num_spheres, 4)
    for index in itertools.product(range(4), range(3)):
        names, ref = _reference_spheres(data, q[index].cpu().numpy())
        # same spheres, kinematics orders them by the frame they ride on
        got = spheres[index].cpu().numpy()
        for link in set(names):
            mine = got[[i for i, n in enumerate(kin.sphere_link_names) if n == link]]
            theirs = ref[[i for i, n in enumerate(names) if n == link]]
            np.testing.assert_allclose(mine, theirs, atol=1e-10)


@pytest.mark.parametrize("backend", BACKENDS)
def test_link_spheres_gradcheck(backend, device):
    ta = TensorDeviceType(device=device, dtype=torch.float64)
    config = RobotConfig.load("franka", ta)
    kin = Kinematics(config, backend=backend)
    q = config.retract_config + 0.3 * torch.randn(3, 7, dtype=torch.float64, device=device)
    q.requires_grad_(True)

    def spheres_and_pose(q):
        state = kin.forward(q)
        return state.link_spheres, state.ee_position, state.link_quaternion

    # fast mode (random projections of the Jacobian): the full one has 3 x 159 x 4 sphere rows,
    # one backward each (over two minutes with the torch backend)
    assert torch.autograd.gradcheck(spheres_and_pose, (q,), fast_mode=True)
    assert torch.autograd.gradcheck(lambda q: kin.forward(q).link_spheres, (q,), fast_mode=True)
    # and the full Jacobian on a few spheres of the hand and fingers
    hand = [i for i, n in enumerate(kin.sphere_link_names) if "finger" in n or n == "panda_hand"]
    hand = torch.tensor(hand[-8:])
    assert torch.autograd.gradcheck(lambda q: kin.forward(q).link_spheres[:, hand], (q,))


def test_backends_agree_in_float32_and_spheres_can_be_skipped(device):
    config = RobotConfig.load("franka", TensorDeviceType(device=device))
    warp, torch_kin = Kinematics(config), Kinematics(config, backend="torch")
    q = config.retract_config + 0.5 * torch.randn(64, 7, device=device)
    q1, q2 = q.clone().requires_grad_(True), q.clone().requires_grad_(True)
    a, b = warp.forward(q1).link_spheres, torch_kin.forward(q2).link_spheres
    torch.testing.assert_close(a, b, atol=2e-6, rtol=0)
    weights = torch.randn_like(a)
    (a * weights).sum().backward()
    (b * weights).sum().backward()
    torch.testing.assert_close(q1.grad, q2.grad, atol=2e-4, rtol=1e-4)
    state = warp.forward(q, spheres=False)
    assert state.link_spheres is None
    torch.testing.assert_close(state.ee_position, warp.forward(q).ee_position)


@pytest.mark.parametrize("backend", BACKENDS)
def test_gradients_of_unused_outputs(backend):
    config = RobotConfig.load("franka", F64)
    kin = Kinematics(config, backend=backend)
    q = config.retract_config + 0.3 * torch.randn(6, 7, dtype=torch.float64)
    with_spheres, without = q.clone().requires_grad_(True), q.clone().requires_grad_(True)
    # spheres computed but unused: the same gradient as without spheres
    kin.forward(with_spheres).ee_position.sum().backward()
    kin.forward(without, spheres=False).ee_position.sum().backward()
    torch.testing.assert_close(with_spheres.grad, without.grad)
    # only the spheres used: matches central differences of the numpy reference
    data = _franka_dict()
    weights = torch.randn(kin.num_spheres, 3, dtype=torch.float64)
    # the reference places the file's spheres; the reserved ones (disabled) weigh nothing
    weights[torch.tensor([n in config.collision.extra_spheres for n in kin.sphere_link_names])] = 0
    q0 = q[0].clone().requires_grad_(True)
    (kin.forward(q0[None]).link_spheres[0, :, :3] * weights).sum().backward()
    order = [kin.sphere_link_names[i] for i in range(kin.num_spheres)]

    def loss(values: np.ndarray) -> float:
        names, ref = _reference_spheres(data, values)
        total = 0.0
        for link in set(names):
            mine = [i for i, n in enumerate(order) if n == link]
            theirs = ref[[i for i, n in enumerate(names) if n == link], :3]
            total += float((theirs * weights[mine].numpy()).sum())
        return total

    h = 1e-6
    numeric = [
        (loss(q[0].numpy() + h * e) - loss(q[0].numpy() - h * e)) / (2 * h) for e in np.eye(7)
    ]
    np.testing.assert_allclose(q0.grad.numpy(), numeric, atol=1e-6)


def test_pairs_and_pair_buffers():
    data = _franka_dict()
    data["self_collision_buffer"] = {"panda_link0": 0.02, "panda_hand": 0.01}
    kin = Kinematics(_load(data))
    names = kin.sphere_link_names
    expected = [
        [i, j]
        for i in range(len(names))
        for j in range(i + 1, len(names))
        if names[i] != names[j] and names[j] not in data["self_collision_ignore"].get(names[i], [])
        and names[i] not in data["self_collision_ignore"].get(names[j], [])
    ]  # fmt: skip
    got = kin.self_collision_pairs.tolist()
    assert sorted(got) == expected
    buffers = data["self_collision_buffer"]
    ref = [buffers.get(names[i], 0.0) + buffers.get(names[j], 0.0) for i, j in got]
    torch.testing.assert_close(
        kin.self_collision_pair_buffer, torch.tensor(ref, dtype=torch.float64)
    )
    # one group per link, one block per checked link pair
    groups = kin.sphere_groups.tolist()
    assert [names[b] for b, _ in groups] == list(dict.fromkeys(names))
    for begin, end, ga, gb in kin.self_collision_blocks.tolist():
        for i, j in got[begin:end]:
            assert groups[ga][0] <= i < groups[ga][1] and groups[gb][0] <= j < groups[gb][1]


# ------------------------------------------------------------------------------------------
# self-collision kernel
# ------------------------------------------------------------------------------------------
def _random_problem(device, dtype=torch.float64, batch=(5,), n=9, seed=0):
    gen = torch.Generator().manual_seed(seed)
    spheres = torch.rand(*batch, n, 4, generator=gen, dtype=dtype)
    spheres[..., 3] = 0.05 + 0.25 * spheres[..., 3]
    pairs = torch.tensor([(i, j) for i in range(n) for j in range(i + 1, n) if (i + j) % 3])
    buffer = 0.02 * torch.rand(pairs.shape[0], generator=gen, dtype=dtype)
    return spheres.to(device), pairs.to(device), buffer.to(device)


def _brute_force(spheres, pairs, buffer, eta):
    s = spheres.detach().cpu().double().numpy()
    p = pairs.cpu().numpy()
    b = buffer.detach().cpu().double().numpy()
    flat = s.reshape(-1, s.shape[-2], 4)
    distance, cost = [], []
    for row in flat:
        d = [
            np.linalg.norm(row[i, :3] - row[j, :3]) - row[i, 3] - row[j, 3] - b[k]
            for k, (i, j) in enumerate(p)
            if row[i, 3] >= 0 and row[j, 3] >= 0
        ]
        d = np.array(d)
        distance.append(d.min() if len(d) else np.inf)
        x = torch.tensor(eta - d)
        cost.append(smooth_hinge_torch(x, eta).sum().item())
    shape = s.shape[:-2]
    return np.array(distance).reshape(shape), np.array(cost).reshape(shape)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("eta", [0.0, 0.05])
def test_self_collision_matches_brute_force(device, dtype, eta):
    spheres, pairs, buffer = _random_problem(device, dtype, batch=(3, 4))
    spheres[0, 1, 2, 3] = -1.0  # a disabled sphere
    out = self_collision_distance(spheres, pairs, buffer, eta)
    assert out.distance.shape == (3, 4) and out.cost.shape == (3, 4)
    assert out.distance.dtype == dtype
    distance, cost = _brute_force(spheres, pairs, buffer, eta)
    tol = 1e-5 if dtype == torch.float32 else 1e-12
    np.testing.assert_allclose(out.distance.cpu().numpy(), distance, atol=tol)
    np.testing.assert_allclose(out.cost.cpu().numpy(), cost, atol=10 * tol)
    assert (out.in_collision == (out.distance < 0)).all()


def test_self_collision_matches_fcl_sphere_distances():
    fcl = pytest.importorskip("fcl")
    spheres, pairs, _ = _random_problem("cpu", n=6, batch=(40,), seed=3)
    spheres[..., 3] *= 0.3  # mostly separated, where fcl reports the distance
    zero = torch.zeros(pairs.shape[0], dtype=torch.float64)
    out = self_collision_distance(spheres, pairs, zero)
    checked = 0
    for b in range(spheres.shape[0]):
        distances = []
        for i, j in pairs.tolist():
            objects = [
                fcl.CollisionObject(
                    fcl.Sphere(float(spheres[b, k, 3])),
                    fcl.Transform(spheres[b, k, :3].numpy()),
                )
                for k in (i, j)
            ]
            distances.append(fcl.distance(*objects, fcl.DistanceRequest(), fcl.DistanceResult()))
        if min(distances) > 0:
            assert out.distance[b].item() == pytest.approx(min(distances), abs=1e-6)
            checked += 1
        else:
            assert out.distance[b].item() < 1e-9
    assert checked > 5


def test_self_collision_gradcheck(device):
    spheres, pairs, buffer = _random_problem(device, batch=(2, 3), n=7, seed=5)
    spheres.requires_grad_(True)
    eta = 0.1
    out = self_collision_distance(spheres, pairs, buffer, eta)
    assert (out.cost > 0).any() and (out.distance < eta).any()  # the penalty is active
    assert torch.autograd.gradcheck(
        lambda s: self_collision_distance(s, pairs, buffer, eta).cost, (spheres,)
    )
    assert torch.autograd.gradcheck(
        lambda s: self_collision_distance(s, pairs, buffer, eta).distance, (spheres,)
    )
    both = torch.autograd.gradcheck(
        lambda s: tuple(vars(self_collision_distance(s, pairs, buffer, 0.0)).values()), (spheres,)
    )
    assert both


def test_self_collision_gradient_matches_autograd_reference():
    spheres, pairs, buffer = _random_problem("cpu", batch=(6,), n=8, seed=7)
    ours = spheres.clone().requires_grad_(True)
    ref = spheres.clone().requires_grad_(True)
    eta = 0.08
    out = self_collision_distance(ours, pairs, buffer, eta)
    (out.cost.sum() + 0.3 * out.distance.sum()).backward()
    c, r = ref[..., :3], ref[..., 3]
    d = (c[:, pairs[:, 0]] - c[:, pairs[:, 1]]).norm(dim=-1) - r[:, pairs[:, 0]] - r[:, pairs[:, 1]]
    d = d - buffer
    (smooth_hinge_torch(eta - d, eta).sum() + 0.3 * d.min(-1).values.sum()).backward()
    torch.testing.assert_close(ours.grad, ref.grad)


@pytest.mark.parametrize("eta", [0.0, 0.05])
def test_culling_by_link_blocks_changes_nothing(device, eta):
    ta = TensorDeviceType(device=device, dtype=torch.float64)
    kin = Kinematics(RobotConfig.load("franka", ta))
    low, high = kin.robot_config.joint_limits.position
    q = low + torch.rand(300, 7, dtype=torch.float64, device=device) * (high - low)
    spheres = kin.forward(q).link_spheres.detach()
    spheres[:5, 3:9, 3] = -1.0  # disabled spheres, a whole link in some rows
    spheres[:5, kin.sphere_groups[2, 0] : kin.sphere_groups[2, 1], 3] = -1.0
    args = (kin.self_collision_pairs, kin.self_collision_pair_buffer + 0.01, eta)
    a, b = spheres.clone().requires_grad_(True), spheres.clone().requires_grad_(True)
    plain = self_collision_distance(a, *args)
    culled = self_collision_distance(b, *args, kin.self_collision_blocks, kin.sphere_groups)
    assert (plain.distance < 0).any() and (plain.distance > 0).any()
    torch.testing.assert_close(culled.distance, plain.distance)
    torch.testing.assert_close(culled.cost, plain.cost)
    (plain.distance.sum() + plain.cost.sum()).backward()
    (culled.distance.sum() + culled.cost.sum()).backward()
    torch.testing.assert_close(b.grad, a.grad)
    # distance is the reference minimum
    distance, _ = _brute_force(spheres[:40], *args)
    np.testing.assert_allclose(culled.distance[:40].detach().cpu().numpy(), distance, atol=1e-12)


def test_block_errors():
    kin = Kinematics(RobotConfig.load("planar3"))
    spheres = kin.forward(kin.robot_config.retract_config[None]).link_spheres
    pairs, buffer = kin.self_collision_pairs, kin.self_collision_pair_buffer
    blocks, groups = kin.self_collision_blocks, kin.sphere_groups
    with pytest.raises(ValueError, match="give both or neither"):
        self_collision_distance(spheres, pairs, buffer, 0.0, blocks)
    with pytest.raises(ValueError, match="cover pairs"):
        self_collision_distance(spheres, pairs, buffer, 0.0, blocks - 1, groups)
    wrong = blocks.clone()
    wrong[0, 2:] = torch.tensor([1, 1])
    with pytest.raises(ValueError, match="outside the sphere groups"):
        self_collision_distance(spheres, pairs, buffer, 0.0, wrong, groups)
    with pytest.raises(TypeError, match="pair_blocks"):
        self_collision_distance(spheres, pairs, buffer, 0.0, blocks.float(), groups)


def test_self_collision_edge_cases(device):
    spheres, pairs, buffer = _random_problem(device, batch=(4,))
    spheres[..., 3] = -1.0
    out = self_collision_distance(spheres, pairs, buffer, 0.1)
    assert torch.isinf(out.distance).all() and (out.cost == 0).all()
    empty = self_collision_distance(spheres, pairs[:0], buffer[:0])
    assert torch.isinf(empty.distance).all()
    # no gradient requested: nothing to do in backward, and outputs carry no graph
    assert out.distance.grad_fn is None


@pytest.mark.parametrize(
    "change, error, words",
    [
        ({"spheres": torch.zeros(3, 5, 3)}, ValueError, "[..., N, 4]"),
        ({"spheres": torch.zeros(3, 5, 4, dtype=torch.int32)}, TypeError, "float32 or float64"),
        ({"spheres": torch.full((3, 5, 4), float("nan"))}, ValueError, "NaN"),
        ({"pairs": torch.tensor([[0, 1, 2]])}, ValueError, "[P, 2]"),
        ({"pairs": torch.tensor([[0.0, 1.0]])}, TypeError, "int64 or int32"),
        ({"pairs": torch.tensor([[0, 7]])}, ValueError, "[0, 5)"),
        ({"pairs": torch.tensor([[2, 2]])}, ValueError, "itself"),
        ({"pair_buffer": torch.zeros(3)}, ValueError, "pair_buffer: expected shape [1]"),
        ({"pair_buffer": torch.zeros(1, dtype=torch.float64)}, TypeError, "pair_buffer"),
        ({"activation_distance": -0.1}, ValueError, "activation_distance"),
        ({"activation_distance": float("inf")}, TypeError, "activation_distance"),
    ],
)
def test_self_collision_input_errors(change, error, words):
    args = {
        "spheres": torch.rand(3, 5, 4),
        "pairs": torch.tensor([[0, 1]]),
        "pair_buffer": torch.zeros(1),
        "activation_distance": 0.0,
    }
    args.update(change)
    with pytest.raises(error) as info:
        self_collision_distance(**args)
    assert words in str(info.value)


def test_self_collision_device_mismatch_is_named():
    if not torch.cuda.is_available():
        pytest.skip("needs a second device")
    with pytest.raises(ValueError, match="pairs: expected device"):
        self_collision_distance(
            torch.rand(2, 3, 4), torch.tensor([[0, 1]], device="cuda"), torch.zeros(1)
        )


def test_checker_from_joint_positions(device):
    ta = TensorDeviceType(device=device, dtype=torch.float64)
    kin = Kinematics(RobotConfig.load("franka", ta))
    checker = SelfCollisionChecker(kin, activation_distance=0.05)
    q = kin.robot_config.retract_config + 0.4 * torch.randn(
        5, 7, dtype=torch.float64, device=device
    )
    q.requires_grad_(True)
    out = checker(q)
    ref = self_collision_distance(
        kin.forward(q).link_spheres, kin.self_collision_pairs, kin.self_collision_pair_buffer, 0.05
    )
    torch.testing.assert_close(out.distance, ref.distance)
    assert torch.autograd.gradcheck(lambda q: checker(q).distance, (q,))
    with pytest.raises(ValueError, match="no collision spheres"):
        data = _franka_dict()
        for key in ("collision_spheres", "collision_link_names", "collision_sphere_buffer",
                    "self_collision_ignore", "self_collision_buffer",
                    "extra_collision_spheres"):  # fmt: skip
            del data[key]
        SelfCollisionChecker(Kinematics(_load(data)))


# ------------------------------------------------------------------------------------------
# bundled robots: retract free, known collisions found
# ------------------------------------------------------------------------------------------
# Configurations whose collision meshes interpenetrate by several centimetres (python-fcl on
# the meshes the spheres were fitted to, at development time; see the robot files' comments).
KNOWN_COLLISIONS = {
    "franka": [
        [0.5, -0.88, 2.74, -2.91, 0.11, 2.16, -1.41],  # hand into link 0 (13 cm)
        [1.24, -1.37, -0.65, -2.97, -0.31, 0.35, 1.41],  # hand into link 1 (13 cm)
        [0.46, 0.36, -2.1, -2.98, -0.07, 0.2, 2.29],  # hand into link 1 (12 cm)
    ],
    "ur5e": [
        [4.86, 0.7, -2.81, 3.13, -2.88, 5.94],  # wrist 3 into the shoulder (6 cm)
        [-2.72, -4.43, 3.32, 1.32, 3.72, 2.82],  # wrist 3 into the base (4 cm)
    ],
    "iiwa": [
        [1.02, -2.02, 2.95, -1.97, 0.64, -0.48, -2.33],  # link 5 into link 0 (4 cm)
        [0.74, -2.0, -2.8, -1.96, 1.05, -1.81, 1.79],  # link 5 into link 0 (2 cm)
    ],
}


@pytest.mark.parametrize("name", ["franka", "ur5e", "iiwa", "planar3"])
def test_retract_is_free_and_known_collisions_are_found(name):
    config = RobotConfig.load(name, F64)
    checker = SelfCollisionChecker(Kinematics(config))
    assert checker(config.retract_config[None]).distance.item() > 0
    for q in KNOWN_COLLISIONS.get(name, []):
        assert checker(torch.tensor([q], dtype=torch.float64)).distance.item() < 0, q


def _segment_distance(p0, p1, q0, q1, samples: int = 400) -> float:
    """Distance between two segments by dense sampling of one and exact projection on the
    other (accurate to well below a millimetre for these lengths)."""
    t = np.linspace(0.0, 1.0, samples)[:, None]
    points = p0 + t * (p1 - p0)
    d = q1 - q0
    s = np.clip(((points - q0) @ d) / (d @ d), 0.0, 1.0)[:, None]
    return float(np.linalg.norm(points - (q0 + s * d), axis=1).min())


def test_planar3_spheres_are_conservative_for_its_capsules():
    """Every configuration where two non-adjacent capsules (radius 3 cm) touch is flagged."""
    config = RobotConfig.load("planar3", F64)
    checker = SelfCollisionChecker(Kinematics(config))
    gen = torch.Generator().manual_seed(0)
    q = (torch.rand(400, 3, generator=gen, dtype=torch.float64) * 2 - 1) * math.pi
    flagged = checker(q).distance < 0
    colliding = 0
    for row, flag in zip(q.numpy(), flagged.tolist()):
        angles = np.cumsum(row)
        joints = [np.zeros(2)]
        for length, angle in zip((0.5, 0.4, 0.3), angles):
            joints.append(joints[-1] + length * np.array([math.cos(angle), math.sin(angle)]))
        gap = _segment_distance(joints[0], joints[1], joints[2], joints[3]) - 0.06
        if gap < 0:
            colliding += 1
            assert flag, row
    assert colliding > 5


# ------------------------------------------------------------------------------------------
# sphere fitting
# ------------------------------------------------------------------------------------------
URDF_TEMPLATE = """<?xml version="1.0"?>
<robot name="tiny">
  <link name="base"/>
  <link name="arm">
    <collision>
      <origin xyz="0.15 0 0" rpy="0 1.5707963267948966 0"/>
      <geometry><cylinder radius="0.04" length="0.3"/></geometry>
    </collision>
  </link>
  <link name="hand">
    <collision>
      <origin xyz="0.0 0.0 0.05" rpy="0.3 0 0"/>
      <geometry><box size="0.08 0.12 0.05"/></geometry>
    </collision>
  </link>
  <link name="pill">
    <collision>
      <origin xyz="0.02 0 0" rpy="0 0 0"/>
      <geometry><mesh filename="pill.stl" scale="1 1 2"/></geometry>
    </collision>
  </link>
  <joint name="j1" type="revolute">
    <parent link="base"/><child link="arm"/><axis xyz="0 0 1"/>
    <limit lower="-3" upper="3" velocity="1" effort="1"/>
  </joint>
  <joint name="j2" type="revolute">
    <parent link="arm"/><child link="hand"/><origin xyz="0.3 0 0"/><axis xyz="0 1 0"/>
    <limit lower="-2" upper="2" velocity="1" effort="1"/>
  </joint>
  <joint name="j3" type="fixed">
    <parent link="hand"/><child link="pill"/><origin xyz="0 0 0.1" rpy="0 0 0.5"/>
  </joint>
</robot>
"""


@pytest.fixture
def tiny_robot(tmp_path):
    trimesh = pytest.importorskip("trimesh")
    trimesh.creation.capsule(height=0.06, radius=0.02, count=[12, 12]).export(tmp_path / "pill.stl")
    urdf = tmp_path / "tiny.urdf"
    urdf.write_text(URDF_TEMPLATE)
    return urdf


def _link_meshes(urdf: Path) -> dict:
    """The tiny robot's collision solids built here with trimesh, in the link frames."""
    import trimesh

    cylinder = trimesh.creation.cylinder(radius=0.04, height=0.3, sections=64)
    cylinder.apply_transform(
        trimesh.transformations.compose_matrix(angles=[0, math.pi / 2, 0], translate=[0.15, 0, 0])
    )
    box = trimesh.creation.box(extents=[0.08, 0.12, 0.05])
    box.apply_transform(
        trimesh.transformations.compose_matrix(angles=[0.3, 0, 0], translate=[0, 0, 0.05])
    )
    pill = trimesh.load(urdf.parent / "pill.stl")
    pill.apply_scale([1, 1, 2])
    pill.apply_translation([0.02, 0, 0])
    return {"arm": cylinder, "hand": box, "pill": pill}


def _coverage_gap(mesh, spheres: np.ndarray, seed: int = 11) -> float:
    import trimesh

    points, _ = trimesh.sample.sample_surface(mesh, 20000, seed=seed)
    gap = np.linalg.norm(points[:, None] - spheres[None, :, :3], axis=-1) - spheres[None, :, 3]
    return float(gap.min(1).max())


def test_fit_covers_and_stays_tight(tiny_robot):
    from curobo_lite.robot.sphere_fit import fit_robot_spheres

    fits = {f.link: f for f in fit_robot_spheres(tiny_robot, spheres_per_link=10, seed=0)}
    assert set(fits) == {"arm", "hand", "pill"}
    rng = np.random.default_rng(0)
    for link, mesh in _link_meshes(tiny_robot).items():
        spheres = fits[link].spheres
        assert 1 <= len(spheres) <= 10
        assert _coverage_gap(mesh, spheres) < 0.002, link
        # centres inside the solid; union volume (Monte Carlo, independent) close to the solid's
        assert mesh.contains(spheres[:, :3]).all(), link
        lo = (spheres[:, :3] - spheres[:, 3:]).min(0)
        hi = (spheres[:, :3] + spheres[:, 3:]).max(0)
        points = lo + rng.random((200000, 3)) * (hi - lo)
        inside = (
            np.linalg.norm(points[:, None] - spheres[None, :, :3], axis=-1) <= spheres[None, :, 3]
        ).any(1)
        union = inside.mean() * np.prod(hi - lo)
        assert union / mesh.volume < 2.6, (link, union / mesh.volume)
        # no sphere reaches far outside the solid
        outside = points[inside][~mesh.contains(points[inside])]
        if len(outside):
            assert np.abs(mesh.nearest.signed_distance(outside[:2000])).max() < 0.03


def test_fit_is_deterministic_and_tolerance_mode_bounds_the_reach(tiny_robot):
    from curobo_lite.robot.sphere_fit import fit_robot_spheres, fit_spheres

    a = fit_robot_spheres(tiny_robot, spheres_per_link=6, seed=3)
    b = fit_robot_spheres(tiny_robot, spheres_per_link=6, seed=3)
    for fa, fb in zip(a, b):
        np.testing.assert_array_equal(fa.spheres, fb.spheres)
    mesh = _link_meshes(tiny_robot)["arm"]
    fit = fit_spheres(mesh, tolerance=0.01)
    assert fit.delta == 0.01
    assert _coverage_gap(mesh, fit.spheres) < 0.002
    # each sphere is an inscribed ball grown by at most delta + inflation + margin
    reach = np.abs(mesh.nearest.signed_distance(fit.spheres[:, :3])) - fit.spheres[:, 3]
    assert (reach > -(fit.max_inflation + 0.001 + 1e-6)).all()
    with pytest.raises(ValueError, match="exactly one"):
        fit_spheres(mesh)


def _tiny_robot_yaml(tmp_path: Path) -> Path:
    data = {
        "name": "tiny",
        "base_link": "base",
        "ee_link": "pill",
        "joint_names": ["j1", "j2"],
        "urdf_path": "tiny.urdf",
        "joint_limits": {
            kind: {"lower": [-2.0, -2.0], "upper": [2.0, 2.0]}
            for kind in ("position", "velocity", "acceleration", "jerk")
        },
        "retract_config": [0.0, 0.5],
        "cspace_weights": [1.0, 1.0],
    }
    path = tmp_path / "tiny.yml"
    path.write_text("# a tiny robot\n" + yaml.safe_dump(data, sort_keys=False) + "# tail kept\n")
    return path


def test_cli_spheres_writes_into_the_robot_file(tiny_robot, tmp_path, capsys):
    robot = _tiny_robot_yaml(tmp_path)
    args = ["robot", "spheres", str(robot), "--spheres-per-link", "5", "--ignore-samples", "200"]
    assert main(args) == 0
    assert "spheres on 3 links" in capsys.readouterr().out
    text = robot.read_text()
    assert text.startswith("# a tiny robot\n") and "# tail kept" in text
    assert "curobo-lite robot spheres" in text and "pill.stl" in text
    config = RobotConfig.from_yaml(robot, F64)
    assert config.collision.link_names == ["arm", "hand", "pill"]
    assert config.collision.ignores("arm", "hand") and config.collision.ignores("hand", "pill")
    # spheres in the link frames cover the solids; pill rides on 'hand' through a fixed joint
    meshes = _link_meshes(tiny_robot)
    for link in ("arm", "hand", "pill"):
        spheres = np.array(config.collision.spheres[link])
        assert _coverage_gap(meshes[link], spheres) < 0.002
    # running again replaces the blocks instead of adding new ones
    assert main(args) == 0
    again = robot.read_text()
    assert again.count("collision_spheres:") == 1 and again.count("self_collision_ignore:") == 1
    spheres = Kinematics(config).forward(config.retract_config[None]).link_spheres
    assert spheres.shape == (1, config.collision.num_spheres, 4)


def test_cli_spheres_from_a_urdf_writes_a_spheres_file(tiny_robot, tmp_path):
    out = tmp_path / "spheres.yml"
    assert main(["robot", "spheres", str(tiny_robot), "--tolerance", "0.01", "-o", str(out)]) == 0
    spheres = yaml.safe_load(out.read_text())["collision_spheres"]
    assert set(spheres) == {"arm", "hand", "pill"}
    robot = _tiny_robot_yaml(tmp_path)
    data = yaml.safe_load(robot.read_text())
    data["collision_spheres"] = "spheres.yml"
    config = RobotConfig.from_dict(data, F64, source=str(robot), base_dir=tmp_path)
    assert config.collision.num_spheres == sum(len(v) for v in spheres.values())
    with pytest.raises(SystemExit, match="needs -o"):
        main(["robot", "spheres", str(tiny_robot)])


def test_fit_refuses_a_urdf_with_other_kinematics(tiny_robot, tmp_path):
    from curobo_lite.robot.sphere_fit import fit_robot_spheres

    robot = _tiny_robot_yaml(tmp_path)
    config = RobotConfig.from_yaml(robot)
    other = tmp_path / "other.urdf"
    other.write_text(tiny_robot.read_text().replace('<axis xyz="0 1 0"/>', '<axis xyz="1 0 0"/>'))
    with pytest.raises(ValueError, match="do not describe the same kinematics"):
        fit_robot_spheres(other, config, spheres_per_link=3)


def test_replace_top_level_block_keeps_the_rest():
    from curobo_lite.robot.sphere_fit import replace_top_level_block

    text = "# head\na: 1\n# about b\nb:\n  - 1\n  - 2\n\n# about c\nc: 3\n"
    out = replace_top_level_block(text, "b", "b: [9]\n")
    assert out == "# head\na: 1\n# about b\nb: [9]\n\n# about c\nc: 3\n"
    assert replace_top_level_block("a: 1\n", "z", "z: 2\n") == "a: 1\n\nz: 2\n"


def test_cli_show_reports_the_collision_model(capsys):
    assert main(["robot", "show", "ur5e"]) == 0
    out = capsys.readouterr().out
    robot = RobotConfig.load("ur5e")
    kin = Kinematics(robot)
    # the base and arm links with spheres, and the attached_object link (reserved spheres)
    links = set(robot.collision.link_names)
    assert {"shoulder_link", "wrist_3_link", "attached_object"} <= links
    assert f"collision: {kin.num_spheres} spheres on {len(links)} links" in out
    assert "self-collision distance at retract: 0.0" in out


# --------------------------------------------------------------------------------------------------
# the self-collision ignore list suggested by sampling


def _planar3_with_one_sphere_per_link(link3_radius: float) -> RobotConfig:
    """planar3 with one sphere per link, centred on the link's segment: link1 at 0.25 m and link3
    at 0.15 m along x (radius 0.05 and ``link3_radius``), link2 at 0.2 m."""
    data = yaml.safe_load((REPO / "configs" / "robot" / "planar3.yml").read_text())
    data.pop("self_collision_ignore")
    data.pop("collision_geometry")  # relative to configs/robot
    data["collision_spheres"] = {
        "link1": [{"center": [0.25, 0.0, 0.0], "radius": 0.05}],
        "link2": [{"center": [0.2, 0.0, 0.0], "radius": 0.05}],
        "link3": [{"center": [0.15, 0.0, 0.0], "radius": link3_radius}],
    }
    return RobotConfig.from_dict(data, TensorDeviceType(dtype=torch.float64))


def _planar_overlap_fraction(link3_radius: float, samples: int, seed: int) -> float:
    """Fraction of uniform configurations in which link1's and link3's spheres overlap, from
    the planar arm's closed-form link positions (a Monte-Carlo reference with its own samples)."""
    t1, t2, t3 = np.random.default_rng(seed).uniform(-math.pi, math.pi, (3, samples))
    a = 0.25 * np.stack((np.cos(t1), np.sin(t1)))
    elbow = 0.5 * np.stack((np.cos(t1), np.sin(t1))) + 0.4 * np.stack(
        (np.cos(t1 + t2), np.sin(t1 + t2))
    )
    b = elbow + 0.15 * np.stack((np.cos(t1 + t2 + t3), np.sin(t1 + t2 + t3)))
    return float((np.linalg.norm(a - b, axis=0) < 0.05 + link3_radius).mean())


@pytest.mark.parametrize("link3_radius", [0.05, 0.2, 2.0])
def test_suggested_ignore_list_keeps_adjacent_and_always_overlapping_pairs(link3_radius):
    """Adjacent links (one joint apart) are always ignored; link1/link3 are two joints apart and
    ignored only when their spheres overlap in every sample (a 2 m sphere reaches everywhere).
    The sampled overlap fraction matches a closed-form Monte-Carlo estimate."""
    from curobo_lite.robot.sphere_fit import suggest_self_collision_ignore

    config = _planar3_with_one_sphere_per_link(link3_radius)
    ignore, report = suggest_self_collision_ignore(config, num_samples=20000, seed=3)
    reference = _planar_overlap_fraction(link3_radius, 200000, seed=4)
    # binomial standard error of 20 000 samples is at most 0.0036
    assert report["fractions"]["link1/link3"] == pytest.approx(reference, abs=0.015)
    assert report["reasons"]["link1/link2"] == report["reasons"]["link2/link3"] == "adjacent"
    always = reference == 1.0
    assert 0.0 < reference <= 1.0
    expected = {"link1": ["link2", "link3"] if always else ["link2"], "link2": ["link3"]}
    assert ignore == expected
    assert ("link1/link3" in report["reasons"]) == always


def test_suggested_ignore_list_drops_pairs_whose_meshes_never_collide():
    """With meshes (python-fcl): link1/link3, whose spheres sometimes overlap, is ignored when
    link3's mesh sits 0.3 m above the plane the arm moves in (it can never reach link1's), and
    kept when both meshes lie in the plane around the spheres."""
    pytest.importorskip("fcl")
    trimesh = pytest.importorskip("trimesh")
    from curobo_lite.robot.sphere_fit import suggest_self_collision_ignore

    config = _planar3_with_one_sphere_per_link(0.2)

    def ball(x: float, z: float, radius: float):
        return trimesh.creation.icosphere(subdivisions=2, radius=radius).apply_translation(
            [x, 0.0, z]
        )

    in_plane = {"link1": [ball(0.25, 0.0, 0.05)], "link3": [ball(0.15, 0.0, 0.2)]}
    lifted = {"link1": [ball(0.25, 0.0, 0.05)], "link3": [ball(0.15, 0.3, 0.2)]}
    kept, report = suggest_self_collision_ignore(
        config, num_samples=2000, seed=3, meshes=in_plane, mesh_samples=500
    )
    assert 0.0 < report["fractions"]["link1/link3"] < 1.0
    assert kept == {"link1": ["link2"], "link2": ["link3"]}
    dropped, report = suggest_self_collision_ignore(
        config, num_samples=2000, seed=3, meshes=lifted, mesh_samples=500
    )
    assert dropped == {"link1": ["link2", "link3"], "link2": ["link3"]}
    assert report["reasons"]["link1/link3"] == "meshes never collide in 500 samples"


def test_cli_tight_fit_and_default_ignore_list(tiny_robot, tmp_path, capsys):
    """`robot spheres --outside/--inside` keeps every sphere within OUTSIDE of the link's solid
    (checked against the solids built here), and a robot file without an ignore list gets one
    (adjacent links) instead of reporting them in self-collision everywhere."""
    robot = _tiny_robot_yaml(tmp_path)
    args = ["robot", "spheres", str(robot), "--outside", "0.004", "--inside", "0.006"]
    assert main(args) == 0
    assert "has no self_collision_ignore" in capsys.readouterr().out
    config = RobotConfig.from_yaml(robot, F64)
    assert config.collision.ignores("arm", "hand") and config.collision.ignores("hand", "pill")
    rng = np.random.default_rng(1)
    for link, mesh in _link_meshes(tiny_robot).items():
        spheres = np.array(config.collision.spheres[link])
        directions = rng.normal(size=(len(spheres), 100, 3))
        directions /= np.linalg.norm(directions, axis=-1, keepdims=True)
        surface = (spheres[:, None, :3] + spheres[:, None, 3:] * directions).reshape(-1, 3)
        outside = np.maximum(-mesh.nearest.signed_distance(surface), 0.0)
        # 4 mm plus the 0.1 mm rounding of centres and radii
        assert outside.max() <= 0.0042, (link, outside.max())
    assert "--outside 0.004 --inside 0.006" in robot.read_text()
