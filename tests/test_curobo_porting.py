"""The porting test of issue 36: four scripts in the style of cuRobo's examples
(``examples/curobo/``: IK on sampled goals, motion generation above a table, collision checks
of sampled configurations, an MPC loop) import only cuRobo's module paths with ``curobo.``
renamed ``curobo_lite.``, run on a robot file in cuRobo's layout, and give results that an
independent reference confirms: forward kinematics read from the URDF here (pinocchio as well
when installed), numpy box distances and cuRobo's cost formulas."""

from __future__ import annotations

import ast
import runpy
from pathlib import Path

import numpy as np
import pytest
import yaml
from curobo_reference import (
    UrdfFK,
    box_signed_distance,
    curobo_spheres,
    curobo_world_cost,
    matrix_to_quat_wxyz,
    pinocchio_fk,
    place_spheres,
    rotation_angle,
    self_penetration,
)

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "curobo"
ROBOT_FILE = EXAMPLES / "franka_curobo.yml"
URDF = EXAMPLES / "franka_curobo.urdf"
SCRIPTS = ["ik_example", "motion_gen_example", "collision_check_example", "mpc_example"]

#: the cuRobo 0.7.8 modules and names the scripts may import (curobo.<module>)
CUROBO_NAMES = {
    "types.math": {"Pose"},
    "types.robot": {"JointState", "RobotConfig"},
    "types.base": {"TensorDeviceType"},
    "geom.types": {"WorldConfig", "Cuboid", "Capsule", "Cylinder", "Sphere", "Mesh"},
    "util_file": {
        "load_yaml",
        "join_path",
        "get_robot_configs_path",
        "get_world_configs_path",
        "get_assets_path",
    },
    "wrap.reacher.motion_gen": {
        "MotionGen",
        "MotionGenConfig",
        "MotionGenPlanConfig",
        "MotionGenResult",
        "MotionGenStatus",
    },
    "wrap.reacher.ik_solver": {"IKSolver", "IKSolverConfig"},
    "wrap.reacher.mpc": {"MpcSolver", "MpcSolverConfig"},
    "wrap.model.robot_world": {"RobotWorld", "RobotWorldConfig"},
    "rollout.rollout_base": {"Goal"},
}


def _script(name: str) -> dict:
    return runpy.run_path(str(EXAMPLES / f"{name}.py"), run_name="curobo_example")


def _kinematics() -> dict:
    return yaml.safe_load(ROBOT_FILE.read_text())["robot_cfg"]["kinematics"]


def _frames(q) -> dict[str, np.ndarray]:
    kin = _kinematics()
    values = dict(zip(kin["cspace"]["joint_names"], np.asarray(q, float).tolist()))
    values.update(kin["lock_joints"] or {})
    return UrdfFK(URDF).link_transforms(kin["base_link"], values)


def _check_pose(q, position, quaternion, position_tol: float, rotation_tol: float) -> None:
    kin = _kinematics()
    ee = _frames(q)[kin["ee_link"]]
    assert np.linalg.norm(ee[:3, 3] - np.asarray(position, float)) <= position_tol
    assert rotation_angle(matrix_to_quat_wxyz(ee), np.asarray(quaternion, float)) <= rotation_tol
    names = kin["cspace"]["joint_names"][: len(q)]
    pin = pinocchio_fk(URDF, kin["ee_link"], names, np.asarray(q, float))
    if pin is not None:
        np.testing.assert_allclose(pin[:3, 3], ee[:3, 3], atol=1e-6)


def test_the_robot_file_is_in_curobos_layout():
    data = yaml.safe_load(ROBOT_FILE.read_text())
    assert set(data) == {"robot_cfg"} and set(data["robot_cfg"]) == {"kinematics"}
    kin = data["robot_cfg"]["kinematics"]
    assert {"urdf_path", "base_link", "ee_link", "collision_spheres", "cspace"} <= set(kin)
    assert "retract_config" in kin["cspace"] and "joint_names" not in kin


@pytest.mark.parametrize("name", SCRIPTS)
def test_scripts_import_only_curobos_names(name):
    """Replacing ``curobo_lite.`` with ``curobo.`` gives cuRobo's own imports: the port is the
    rename and nothing else."""
    tree = ast.parse((EXAMPLES / f"{name}.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module.startswith("curobo_lite"):
            module = node.module.removeprefix("curobo_lite.")
            assert module in CUROBO_NAMES, f"{name}: curobo.{module} is not a cuRobo module"
            names = {alias.name for alias in node.names}
            assert names <= CUROBO_NAMES[module], f"{name}: {names - CUROBO_NAMES[module]}"
        elif isinstance(node, ast.Import):
            assert not any(a.name.startswith("curobo_lite") for a in node.names)


def test_ik_example_reaches_sampled_goals():
    q_sample, goal, result = _script("ik_example")["demo_basic_ik"](n_goals=8)
    q_sample = q_sample.double().numpy()
    # the goals are the FK of the samples (fk() checked), the samples valid (sample_configs)
    links, local, buffer, ignore, self_buffer = curobo_spheres(ROBOT_FILE)
    for i in range(len(q_sample)):
        _check_pose(q_sample[i], goal.position[i], goal.quaternion[i], 2e-5, 1e-4)
        spheres = place_spheres(_frames(q_sample[i]), links, local)
        spheres[:, 3] += buffer
        assert self_penetration(spheres, links, ignore, self_buffer) <= 1e-5
    success = result.success.numpy()
    assert success.mean() >= 0.85, success
    for i in np.flatnonzero(success):
        _check_pose(
            result.solution[i].double().numpy(),
            goal.position[i],
            goal.quaternion[i],
            0.005 + 1e-5,
            0.05 + 1e-4,
        )


def test_motion_gen_example_plans_above_the_table():
    world, goal_pose, result = _script("motion_gen_example")["demo_motion_gen"]()
    assert result.success.item(), result.status
    plan = result.get_interpolated_plan().position.double().numpy()
    assert result.motion_time.item() == pytest.approx((len(plan) - 1) * result.interpolation_dt)
    kin = _kinematics()
    np.testing.assert_allclose(plan[0], kin["cspace"]["retract_config"][:7], atol=1e-5)
    _check_pose(plan[-1], goal_pose.position[0], goal_pose.quaternion[0], 0.005, 0.05)
    knots = result.optimized_plan.position.double().numpy()
    assert knots.ndim == 2 and knots.shape[1] == 7 and result.optimized_dt.item() > 0
    np.testing.assert_allclose(knots[-1], plan[-1], atol=1e-4)
    table = world.cuboid[0]
    links, local, buffer, _, _ = curobo_spheres(ROBOT_FILE)
    for q in plan:
        spheres = place_spheres(_frames(q), links, local)
        clearance = box_signed_distance(spheres[:, :3], table.pose[:3], table.dims)
        assert (clearance - spheres[:, 3] - buffer).min() >= -1e-4


def test_collision_check_example_matches_numpy_with_curobos_signs():
    world, q_sph, d, q_s, d_world, d_self = _script("collision_check_example")[
        "demo_collision_check"
    ]()
    boxes = [(c["pose"][:3], c["dims"]) for c in world["cuboid"].values()]

    def signed(spheres: np.ndarray) -> np.ndarray:
        each = [box_signed_distance(spheres[:, :3], p, dims) for p, dims in boxes]
        return np.min(each, axis=0) - spheres[:, 3]

    # free spheres: the penetration depth of each, 0 when clear
    spheres = q_sph.reshape(-1, 4).double().numpy()
    np.testing.assert_allclose(
        d.reshape(-1).numpy(), curobo_world_cost(signed(spheres), 0.0), atol=2e-5
    )
    assert (d > 0).any() and (d == 0).any()
    # configurations: world cost summed over the robot's spheres, deepest self overlap
    links, local, buffer, ignore, self_buffer = curobo_spheres(ROBOT_FILE)
    q_s = q_s.double().numpy()
    for i in range(len(q_s)):
        placed = place_spheres(_frames(q_s[i]), links, local)
        placed[:, 3] += buffer
        world_cost = curobo_world_cost(signed(placed), 0.0).sum()
        assert d_world[i].item() == pytest.approx(world_cost, abs=1e-4)
        own = max(0.0, self_penetration(placed, links, ignore, self_buffer))
        assert d_self[i].item() == pytest.approx(own, abs=1e-4)
    assert (d_world > 0).any() and (d_world == 0).any()


def test_mpc_example_reaches_the_goal():
    goal_pose, state, trajectory, converged = _script("mpc_example")["demo_full_config_mpc"]()
    assert converged
    q = state.position[0].double().numpy()
    _check_pose(q, goal_pose.position[0], goal_pose.quaternion[0], 0.0101, 0.1)
    kin = _kinematics()
    limits = UrdfFK(URDF).limits
    for step in trajectory:
        for name, value in zip(kin["cspace"]["joint_names"], step[0].tolist()):
            low, high, _ = limits[name]
            assert low - 1e-5 <= value <= high + 1e-5


def test_the_guide_example_runs():
    """docs/coming_from_curobo.md's quick start runs as written, from the repository root."""
    import os
    import re

    root = EXAMPLES.parents[1]
    text = (root / "docs" / "coming_from_curobo.md").read_text()
    (block,) = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    namespace: dict = {}
    cwd = os.getcwd()
    os.chdir(root)
    try:
        exec(compile(block, "docs/coming_from_curobo.md", "exec"), namespace)
    finally:
        os.chdir(cwd)
    assert namespace["result"].success.item()
    _check_pose(
        namespace["plan"].position[-1].double().numpy(),
        namespace["goal"].position[0],
        namespace["goal"].quaternion[0],
        0.005,
        0.05,
    )
