"""cuRobo's names under cuRobo's module paths (issue 36): the modules re-export this package's
classes (never a second implementation), cuRobo's options map or are refused by name, and the
adapters' small pieces (option translation, plan retries, signs, util_file) behave as cuRobo's
documentation describes. The full solvers run in tests/test_curobo_porting.py."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from curobo_reference import box_signed_distance, curobo_world_cost

import curobo_lite.geom as geom
import curobo_lite.robot as robot
import curobo_lite.rollout as rollout
import curobo_lite.types as types
from curobo_lite.types.errors import InputTypeError, InputValueError
from curobo_lite.wrap.motion.config import MotionGenStatus
from curobo_lite.wrap.reacher._compat import CuroboOptionIgnored

CUROBO_FILE = Path(__file__).resolve().parents[1] / "examples" / "curobo" / "franka_curobo.yml"


def test_value_types_are_this_packages_own():
    from curobo_lite.geom.types import Capsule, Cuboid, Cylinder, Mesh, Sphere, WorldConfig
    from curobo_lite.types.base import TensorDeviceType
    from curobo_lite.types.math import Pose
    from curobo_lite.types.robot import JointState, RobotConfig

    assert (Pose, TensorDeviceType, JointState) == (
        types.Pose,
        types.TensorDeviceType,
        types.JointState,
    )
    assert RobotConfig is robot.RobotConfig
    assert (WorldConfig, Cuboid, Sphere, Capsule, Cylinder, Mesh) == (
        geom.WorldConfig,
        geom.world.Cuboid,
        geom.world.Sphere,
        geom.world.Capsule,
        geom.world.Cylinder,
        geom.world.Mesh,
    )


def test_util_file(tmp_path, monkeypatch):
    from curobo_lite.util_file import (
        get_assets_path,
        get_robot_configs_path,
        get_world_configs_path,
        join_path,
        load_yaml,
    )

    assert Path(get_robot_configs_path(), "franka.yml").is_file()
    assert Path(get_world_configs_path(), "table.yml").is_file()
    assert join_path("/a/b", "c.yml") == "/a/b/c.yml"
    assert join_path("/a/b", "/abs/c.yml") == "/abs/c.yml"
    monkeypatch.delenv("CUROBO_LITE_ASSETS", raising=False)
    assert get_assets_path() == get_robot_configs_path()
    monkeypatch.setenv("CUROBO_LITE_ASSETS", str(tmp_path))
    assert get_assets_path() == str(tmp_path)
    data = load_yaml(join_path(get_robot_configs_path(), "franka.yml"))
    assert data["ee_link"] == "panda_hand"
    assert load_yaml({"a": 1}) == {"a": 1}
    with pytest.raises(ValueError, match="nothing.yml"):
        load_yaml(tmp_path / "nothing.yml")


def test_robot_config_from_dict_reads_robot_cfg_as_curobo():
    from curobo_lite.types.robot import RobotConfig
    from curobo_lite.util_file import load_yaml

    data = load_yaml(str(CUROBO_FILE))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        config = RobotConfig.from_dict(data["robot_cfg"], assets_path=CUROBO_FILE.parent)
    assert config.dof == 7 and config.ee_link == "panda_hand"


def test_goal_keeps_curobos_fields_and_refuses_batches():
    from curobo_lite.rollout.rollout_base import Goal

    state = types.JointState.from_position(torch.zeros(1, 7))
    pose = types.Pose.from_list([0.4, 0.0, 0.4, 0.0, 1.0, 0.0, 0.0])
    goal = Goal(current_state=state, goal_state=state, goal_pose=pose)
    assert isinstance(goal, rollout.Goal) and goal.current_state is state
    with pytest.raises(InputValueError, match="links_goal_pose"):
        Goal(goal_pose=pose, links_goal_pose={"panda_hand": pose})
    with pytest.raises(InputValueError, match="neither"):
        Goal(current_state=state)


def test_options_map_to_this_packages_and_the_rest_are_named_errors(monkeypatch):
    from curobo_lite.wrap.reacher.ik_solver import IKSolverConfig
    from curobo_lite.wrap.reacher.motion_gen import MotionGenConfig
    from curobo_lite.wrap.reacher.mpc import MpcSolverConfig

    config = MotionGenConfig.load_from_robot_config(
        "franka.yml",
        {"cuboid": {"table": {"dims": [1, 1, 0.1], "pose": [0.5, 0, -0.06, 1, 0, 0, 0]}}},
        interpolation_dt=0.05,
        num_trajopt_seeds=3,
        position_threshold=0.004,
        self_collision_check=True,
    )
    assert config.robot_config.name == "franka"
    assert config.world_model.cuboid[0].name == "table"
    assert config.options == {
        "interpolation_dt": 0.05,
        "num_trajopt_seeds": 3,
        "ik": {"position_threshold": 0.004},
    }
    with pytest.raises(InputValueError, match=r"'trajopt_tsteps'.*supported cuRobo options"):
        MotionGenConfig.load_from_robot_config("franka", None, trajopt_tsteps=32)
    with pytest.raises(InputValueError, match=r"self_collision_check=False"):
        MotionGenConfig.load_from_robot_config("franka", None, self_collision_check=False)
    # the warning comes once per process and option: forget earlier tests' (the ported
    # examples pass collision_cache too)
    from curobo_lite.wrap.reacher import _compat

    monkeypatch.setattr(_compat, "_warned", set())
    with pytest.warns(CuroboOptionIgnored, match="collision_cache"):
        MotionGenConfig.load_from_robot_config("ur5e", None, collision_cache={"obb": 10})

    ik = IKSolverConfig.load_from_robot_config("franka", None, num_seeds=8, grad_iters=30)
    assert ik.options == {"num_seeds": 8, "lbfgs": {"n_iters": 30}}
    with pytest.raises(InputValueError, match="high_precision"):
        IKSolverConfig.load_from_robot_config("franka", None, high_precision=True)

    mpc = MpcSolverConfig.load_from_robot_config(
        "franka", None, step_dt=0.03, self_collision_check=True, particle_opt_iters=2
    )
    task = mpc.task()
    assert task.model["dt_traj_params"] == {"base_dt": 0.03, "base_ratio": 1.0, "max_dt": 0.03}
    assert task.mpc["control_dt"] == 0.03 and task.mppi["n_iters"] == 2
    assert task.cost["self_collision_cost"]["enabled"] is True
    assert task.cost["self_collision_cost"]["weight"] > 0  # the rest of the section kept
    with pytest.raises(InputValueError, match="use_lbfgs"):
        MpcSolverConfig.load_from_robot_config("franka", None, use_lbfgs=True)
    with pytest.raises(InputTypeError, match="robot_cfg"):
        MpcSolverConfig.load_from_robot_config(7, None)


def test_plan_config_refuses_unsupported_fields_by_name():
    from curobo_lite.wrap.reacher.motion_gen import MotionGenPlanConfig

    config = MotionGenPlanConfig(max_attempts=2, timeout=1.0, enable_graph=False)
    assert config.max_attempts == 2
    with pytest.raises(InputValueError, match="time_dilation_factor"):
        MotionGenPlanConfig(time_dilation_factor=0.5)
    with pytest.raises(InputValueError, match="max_attempts"):
        MotionGenPlanConfig(max_attempts=0)


class _FakeResult:
    def __init__(self, status):
        self.status = status
        self.success = status == MotionGenStatus.SUCCESS
        self.solve_time = 0.0
        self.goal_config = None


class _FakeMotionGen:
    """Answers plan_single with the statuses it is given, in turn."""

    graph_planner = None

    def __init__(self, statuses):
        self.statuses = list(statuses)
        self.calls = 0

    def plan_single(self, start, goal):
        self.calls += 1
        return _FakeResult(self.statuses.pop(0))


@pytest.mark.parametrize(
    ("statuses", "plan", "calls"),
    [
        (["TRAJOPT_FAIL", "TRAJOPT_FAIL", "SUCCESS"], {"max_attempts": 5}, 3),
        (["TRAJOPT_FAIL"] * 5, {"max_attempts": 2}, 2),
        (["INVALID_START_STATE_WORLD_COLLISION", "SUCCESS"], {"max_attempts": 5}, 1),
        (["IK_FAIL", "IK_FAIL", "SUCCESS"], {"max_attempts": 5, "ik_fail_return": 2}, 2),
    ],
)
def test_plan_single_retries_as_curobos_max_attempts(statuses, plan, calls):
    from curobo_lite.wrap.reacher.motion_gen import MotionGen, MotionGenPlanConfig

    adapter = MotionGen.__new__(MotionGen)  # the retry loop alone, over a scripted planner
    adapter.motion_gen = _FakeMotionGen([MotionGenStatus(s) for s in statuses])
    result = adapter.plan_single(None, None, MotionGenPlanConfig(**plan))
    assert adapter.motion_gen.calls == calls and result.attempts == calls
    assert result.success.item() == (result.status == MotionGenStatus.SUCCESS)
    with pytest.raises(InputValueError, match="enable_graph"):
        adapter.plan_single(None, None, MotionGenPlanConfig(enable_graph=True))


def test_robot_world_costs_follow_curobos_sign_convention():
    from curobo_lite.wrap.model.robot_world import RobotWorld, RobotWorldConfig

    world = {"cuboid": {"box": {"dims": [0.4, 0.4, 0.4], "pose": [0.0, 0.0, 0.0, 1, 0, 0, 0]}}}
    rng = np.random.default_rng(0)
    spheres = np.concatenate([rng.uniform(-0.5, 0.5, (40, 3)), np.full((40, 1), 0.05)], 1)
    x_sph = torch.tensor(spheres, dtype=torch.float32).view(4, 10, 1, 4)
    signed = box_signed_distance(spheres[:, :3], [0, 0, 0], [0.4, 0.4, 0.4]) - 0.05
    for eta in (0.0, 0.1):
        checker = RobotWorld(
            RobotWorldConfig.load_from_config("franka", world, collision_activation_distance=eta)
        )
        d = checker.get_collision_distance(x_sph)
        assert d.shape == (4, 10)
        expected = curobo_world_cost(signed, eta).reshape(4, 10)
        np.testing.assert_allclose(d.numpy(), expected, atol=2e-5)
        assert ((d > 0).numpy() == (signed.reshape(4, 10) < eta)).all()
    # clear configurations have zero cost; samples stay inside the limits
    q = checker.sample(16, mask_valid=True)
    low, high = checker.robot_config.joint_limits.position
    assert ((q >= low) & (q <= high)).all() and q.shape[1] == 7
    checker = RobotWorld(
        RobotWorldConfig.load_from_config("franka", world, collision_activation_distance=0.0)
    )
    d_world, d_self = checker.get_world_self_collision_distance_from_joints(q)
    assert (d_world == 0).all() and (d_self == 0).all()
    with pytest.raises(InputValueError, match="n_envs"):
        RobotWorldConfig.load_from_config("franka", world, n_envs=2)
