"""ArmReacher rollout: task files, cost composition, gradients end to end, batching, NaN."""

from __future__ import annotations

import copy
import pickle

import pytest
import torch
import yaml

from curobo_lite.robot import Kinematics, RobotConfig
from curobo_lite.rollout.arm_reacher import ArmReacher, Goal
from curobo_lite.rollout.task import TaskConfig, available_tasks
from curobo_lite.types import JointState, Pose, StateType, TensorDeviceType

F64 = TensorDeviceType(dtype=torch.float64)


@pytest.fixture(scope="module")
def franka() -> RobotConfig:
    return RobotConfig.load("franka")


def reachable_goal(robot: RobotConfig, offset: float = 0.3, tensor_args=None) -> Pose:
    q = robot.retract_config[None] + offset
    fk = Kinematics(robot, tensor_args).forward(
        q.to(**(tensor_args or robot.tensor_args).as_kwargs())
    )
    return Pose(fk.ee_position, fk.ee_quaternion)


def test_bundled_tasks_load():
    assert {"particle_mpc", "gradient_trajopt"} <= set(available_tasks())
    task = TaskConfig.load("particle_mpc")
    assert task.model["horizon"] == 30 and "mppi" in task.to_dict()


def test_costs_sum_to_total_and_gradient_matches_finite_differences(franka):
    robot = franka.to(F64)
    reacher = ArmReacher.from_task("particle_mpc", robot, F64)
    start = JointState.from_position(robot.retract_config[None].clone())
    reacher.update_params(Goal(goal_pose=reachable_goal(robot, tensor_args=F64)), start)
    act = 0.5 * torch.randn(
        2, 30, 7, dtype=torch.float64, generator=torch.Generator().manual_seed(1)
    )
    result = reacher.rollout_fn(act)
    assert result.costs.shape == (2, 30) and result.total.shape == (2,)
    torch.testing.assert_close(result.total, result.costs.sum(-1))
    torch.testing.assert_close(sum(reacher.cost_terms.values()), result.costs)
    act.requires_grad_()
    (grad,) = torch.autograd.grad(reacher.rollout_fn(act).total.sum(), act)
    direction = torch.randn_like(act)
    eps = 1e-6
    with torch.no_grad():
        plus = reacher.rollout_fn(act + eps * direction).total.sum()
        minus = reacher.rollout_fn(act - eps * direction).total.sum()
    numeric = (plus - minus) / (2 * eps)
    torch.testing.assert_close((grad * direction).sum(), numeric, rtol=1e-5, atol=1e-6)


def test_descent_with_torch_optim_lowers_pose_error(franka):
    reacher = ArmReacher.from_task("gradient_trajopt", franka)
    start = JointState.from_position(franka.retract_config[None].clone())
    reacher.update_params(Goal(goal_pose=reachable_goal(franka)), start)
    act = franka.retract_config.expand(1, 32, 7).clone().requires_grad_()
    with torch.no_grad():
        before = reacher.convergence(reacher.rollout_fn(act).state).position_error.item()
    optimizer = torch.optim.LBFGS(
        [act], lr=1.0, max_iter=60, history_size=10, line_search_fn="strong_wolfe"
    )

    def closure():
        optimizer.zero_grad()
        total = reacher.rollout_fn(act).total.sum()
        total.backward()
        return total

    optimizer.step(closure)
    with torch.no_grad():
        after = reacher.convergence(reacher.rollout_fn(act).state).position_error.item()
    assert before > 0.1
    assert after < 0.6 * before


def test_problems_use_their_own_start_and_goal(franka):
    reacher = ArmReacher.from_task("particle_mpc", franka)
    starts = JointState.from_position(
        torch.stack((franka.retract_config, franka.retract_config + 0.1))
    )
    pose_a, pose_b = reachable_goal(franka, 0.2), reachable_goal(franka, -0.2)
    goals = Pose(
        torch.cat((pose_a.position, pose_b.position)),
        torch.cat((pose_a.quaternion, pose_b.quaternion)),
    )
    reacher.update_params(Goal(goal_pose=goals), starts)
    act = torch.randn(6, 30, 7, generator=torch.Generator().manual_seed(0))
    joint = reacher.rollout_fn(act).total.clone()
    single = ArmReacher.from_task("particle_mpc", franka)
    for p, pose in enumerate((pose_a, pose_b)):
        single.update_params(Goal(goal_pose=pose), starts[p : p + 1])
        torch.testing.assert_close(
            single.rollout_fn(act[3 * p : 3 * p + 3]).total, joint[3 * p : 3 * p + 3]
        )


def test_joint_space_goal(franka):
    reacher = ArmReacher.from_task("gradient_trajopt", franka)
    target = franka.retract_config + 0.2
    reacher.update_params(
        Goal(goal_state=JointState.from_position(target[None])),
        JointState.from_position(franka.retract_config[None].clone()),
    )
    act = target.expand(1, 32, 7).clone()
    result = reacher.rollout_fn(act)
    assert "cspace_cost" in reacher.cost_terms and "pose_cost" not in reacher.cost_terms
    metrics = reacher.convergence(result.state)
    assert metrics.position_error is None
    assert metrics.cspace_error.item() < 1e-6


def test_nan_action_is_flagged_not_propagated(franka):
    reacher = ArmReacher.from_task("particle_mpc", franka)
    reacher.update_params(
        Goal(goal_pose=reachable_goal(franka)),
        JointState.from_position(franka.retract_config[None].clone()),
    )
    act = torch.zeros(4, 30, 7)
    clean = reacher.rollout_fn(act).total.clone()
    bad = act.clone()
    bad[1, 3, 2] = float("nan")
    result = reacher.rollout_fn(bad)
    assert reacher.last_invalid.tolist() == [False, True, False, False]
    assert torch.isinf(result.total[1]) and torch.isfinite(result.total[[0, 2, 3]]).all()
    again = reacher.rollout_fn(act)
    torch.testing.assert_close(again.total, clean)
    assert not reacher.last_invalid.any()


def test_rollout_requires_goal_and_checks_batches(franka):
    reacher = ArmReacher.from_task("particle_mpc", franka)
    with pytest.raises(ValueError, match="update_params"):
        reacher.rollout_fn(torch.zeros(2, 30, 7))
    starts = JointState.from_position(franka.retract_config.expand(2, 7).clone())
    with pytest.raises(ValueError, match="goal_pose.*batch 1 or 2.*3"):
        reacher.update_params(Goal(goal_pose=reachable_goal(franka).repeat(3)), starts)
    reacher.update_params(Goal(goal_pose=reachable_goal(franka)), starts)
    with pytest.raises(ValueError, match="multiple of the 2 start states.*3"):
        reacher.rollout_fn(torch.zeros(3, 30, 7))
    with pytest.raises(ValueError, match="NaN"):
        reacher.update_start_state(JointState.from_position(torch.full((1, 7), float("nan"))))


@pytest.mark.parametrize(
    "mutate,words",
    [
        (lambda d: d.update(solver={}), ["unknown task section", "solver"]),
        (lambda d: d["model"].update(horizont=3), ["model", "horizont"]),
        (lambda d: d["cost"].update(collision_cost={}), ["collision_cost", "known sections"]),
        (lambda d: d["cost"]["pose_cost"].update(terminal_weight=[1.0]), ["terminal_weight"]),
        (lambda d: d.pop("model"), ["model"]),
    ],
)
def test_task_file_errors_name_file_and_key(tmp_path, franka, mutate, words):
    data = TaskConfig.load("particle_mpc").to_dict()
    mutate(data)
    path = tmp_path / "broken_task.yml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ValueError) as info:
        ArmReacher.from_task(str(path), franka)
    message = str(info.value)
    assert "broken_task.yml" in message
    for word in words:
        assert word in message, (word, message)


def test_scale_tracking_sees_each_terms_own_gradient(franka):
    from curobo_lite.debug import track_scales

    reacher = ArmReacher.from_task("particle_mpc", franka)
    reacher.update_params(
        Goal(goal_pose=reachable_goal(franka)),
        JointState.from_position(franka.retract_config[None].clone()),
    )
    act = torch.randn(3, 30, 7, generator=torch.Generator().manual_seed(5), requires_grad=True)
    with track_scales() as session:
        reacher.rollout_fn(act).total.sum().backward()
    assert {"pose_cost", "pose_cost.ee_position", "bound_cost.velocity"} <= set(session.names)
    # independent: the gradient of the pose term alone w.r.t. the end-effector positions
    state = reacher.dynamics_model.forward(
        reacher.start_state, act.detach(), reacher._problem_index(3)
    )
    ee_position = state.ee_position.detach().clone().requires_grad_()
    pose = reacher.costs["pose_cost"].forward(
        ee_position, state.ee_quaternion.detach(), reacher.goal.goal_pose
    )
    (grad,) = torch.autograd.grad(pose.sum(), ee_position)
    recorded = session.history("pose_cost.ee_position").backward[-1]
    assert abs(recorded - grad.std().item()) <= 1e-5 * max(1.0, grad.std().item())


def _edited(value, dof: int):
    """A different valid value for a weight option: scaled up, or per-joint weights for ``None``."""
    if value is None:
        return [0.7] * dof
    if isinstance(value, torch.Tensor):
        return (value * 3.0 + 0.1).tolist()
    return value * 3.0 + 0.1


# two start states: the forearm in the table, the arm folded onto itself (both in collision, so
# the collision costs' weights show in the output)
_COLLIDING_STARTS = [[0.0, 1.5, 0.0, -0.5, 0.0, 1.0, 0.0], [0.0, 0.3, 0.0, -3.0, 0.0, 0.2, 0.0]]


def _reacher_with_goals(task: TaskConfig, franka: RobotConfig) -> ArmReacher:
    rollout = ArmReacher.from_task(task, franka)
    rollout.attach_world("table")
    start = JointState.from_position(torch.tensor(_COLLIDING_STARTS))
    goal_state = JointState.from_position(franka.retract_config[None] + 0.2)
    rollout.update_params(Goal(goal_pose=reachable_goal(franka), goal_state=goal_state), start)
    if "tracking_cost" in rollout.costs:  # it pulls towards a followed plan: give it one
        horizon = rollout.action_horizon
        offsets = torch.linspace(0.0, 0.3, horizon)[None, :, None]
        plan = franka.retract_config[None, None] + offsets.expand(1, horizon, franka.dof)
        rollout.update_reference(JointState.from_position(plan))
    return rollout


def _actions(rollout: ArmReacher, batch: int) -> torch.Tensor:
    """``[2 batch, H, D]`` random actions that keep the trajectories near their start states."""
    model = rollout.dynamics_model
    noise = torch.randn(
        (2 * batch, model.horizon, model.d_action), generator=torch.Generator().manual_seed(0)
    )
    if model.control_space is StateType.POSITION:
        return torch.tensor(_COLLIDING_STARTS).repeat_interleave(batch, 0)[:, None] + 0.02 * noise
    return 0.3 * noise


@pytest.mark.parametrize("task_name", ["particle_mpc", "gradient_trajopt"])
def test_cost_config_edits_in_place_act_like_a_config_built_with_them(franka, task_name):
    """``cost.config.<weight> = value`` changes the rollout's costs exactly as a task file that
    had the value from the start (pose and bound costs used to keep their old weights)."""
    task = TaskConfig.load(task_name)
    rollout = _reacher_with_goals(task, franka)
    act = _actions(rollout, 3)
    before = rollout.rollout_fn(act).costs
    changed = []
    for name, cost in rollout.costs.items():
        for option in cost.weight_fields:
            value = _edited(getattr(cost.config, option), franka.dof)
            edited = _reacher_with_goals(task, franka)
            edited.rollout_fn(act)  # any per-horizon caches filled with the old value
            revision = edited.costs[name].config.revision
            setattr(edited.costs[name].config, option, value)
            assert edited.costs[name].config.revision == revision + 1
            built = TaskConfig.load(task_name)
            built.cost = {**built.cost, name: {**(built.cost[name] or {}), option: value}}
            reference = _reacher_with_goals(built, franka).rollout_fn(act).costs
            torch.testing.assert_close(edited.rollout_fn(act).costs, reference, msg=option)
            if not torch.allclose(reference, before):
                changed.append(f"{name}.{option}")
    # the edits reach every enabled cost's output (not a comparison of unchanged rollouts)
    enabled = {name for name, cost in rollout.costs.items() if cost.enabled}
    assert {name.split(".")[0] for name in changed} == enabled, changed


def test_invalid_cost_config_edit_raises_and_changes_nothing(franka):
    rollout = _reacher_with_goals(TaskConfig.load("particle_mpc"), franka)
    act = _actions(rollout, 2)
    before = rollout.rollout_fn(act).costs
    config = rollout.costs["pose_cost"].config
    for option, value, words in [
        ("weight", -1.0, "pose_cost.weight: expected a weight >= 0, received -1.0"),
        ("run_weight", [1.0, float("nan")], "pose_cost.run_weight"),
        ("position_norm", "L7", "pose_cost.position_norm: expected one of"),
    ]:
        with pytest.raises(ValueError, match=words):
            setattr(config, option, value)
    assert config.revision == 0 and config.weight == 1.0
    torch.testing.assert_close(rollout.rollout_fn(act).costs, before)


def test_cost_config_copies_and_replacements(franka):
    """A copy (or pickle) of a configuration is used by no cost until assigned to one; assigning
    a configuration re-derives the cost as update_weight does."""
    rollout = _reacher_with_goals(TaskConfig.load("particle_mpc"), franka)
    act = _actions(rollout, 2)
    before = rollout.rollout_fn(act).costs
    cost = rollout.costs["bound_cost"]
    for duplicate in (copy.deepcopy(cost.config), pickle.loads(pickle.dumps(cost.config))):
        duplicate.weight = 9.0
        assert duplicate.weight == 9.0 and cost.config.weight == 1.0
        torch.testing.assert_close(rollout.rollout_fn(act).costs, before)
    cost.config = duplicate
    reference = _reacher_with_goals(TaskConfig.load("particle_mpc"), franka)
    reference.costs["bound_cost"].update_weight(9.0)
    torch.testing.assert_close(rollout.rollout_fn(act).costs, reference.rollout_fn(act).costs)
    # the configuration it replaced no longer drives the cost
    with pytest.raises(TypeError, match="expected a BoundCostConfig"):
        cost.config = rollout.costs["pose_cost"].config
