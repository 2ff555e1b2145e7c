"""The fused forward-only MPPI rollout (:mod:`curobo_lite.rollout.fused_rollout`) gives the
modular path's cost terms, costs and states, and every configuration it does not support
takes the modular path.

The reference is the modular rollout (``ArmReacher.fused_rollout = False``): the step kernel,
the torch cost classes, forward kinematics and the frame world kernel, each tested against
analytic values, finite differences and coal in their own files."""

from __future__ import annotations

import pytest
import torch

from curobo_lite.debug import track_scales
from curobo_lite.geom import WorldConfig
from curobo_lite.rollout import ArmReacher, Goal, TaskConfig
from curobo_lite.rollout import fused_rollout as fused_module
from curobo_lite.rollout.cost import PoseCostMetric
from curobo_lite.types import JointState, Pose, TensorDeviceType
from curobo_lite.types.errors import InputValueError

# a table, a tilted post and a ball in the arm's reach: random actions hit them
WORLD = {
    "cuboid": {
        "table": {"dims": [1.26, 1.4, 0.04], "pose": [0.47, 0.0, -0.02, 1, 0, 0, 0]},
        "post": {"dims": [0.05, 0.05, 0.6], "pose": [0.4, -0.2, 0.3, 0.96, 0.0, 0.28, 0.0]},
    },
    "sphere": {"ball": {"radius": 0.08, "position": [0.35, 0.1, 0.45]}},
}
GOAL = [0.45, 0.1, 0.35, 0.0, 1.0, 0.0, 0.0]
BATCH = 96


def _reacher(world: bool, dtype: torch.dtype = torch.float32, **cost) -> ArmReacher:
    task = TaskConfig.load("particle_mpc")
    task.cost = dict(task.cost, **cost)
    reacher = ArmReacher.from_task(task, "franka", TensorDeviceType(dtype=dtype))
    if world:
        reacher.attach_world(WorldConfig.load(WORLD))
    return reacher


def _start(reacher: ArmReacher, rows: int = 1) -> JointState:
    """Start states near the upper position limits, moving towards them: the bound terms of
    position, velocity and acceleration are active on many samples."""
    limits = reacher.robot_config.joint_limits.position
    generator = torch.Generator().manual_seed(5)
    kw = reacher.tensor_args.as_kwargs()
    position = limits[1] - 0.1 * (limits[1] - limits[0])
    position = position + 0.02 * torch.randn(rows, position.shape[0], generator=generator).to(**kw)
    position = torch.minimum(position, limits[1])
    velocity = torch.full_like(position, 0.8)
    return JointState(position, velocity, torch.full_like(position, 2.0))


def _actions(reacher: ArmReacher, batch: int = BATCH, seed: int = 0) -> torch.Tensor:
    horizon, dof = reacher.dynamics_model.horizon, reacher.robot_config.dof
    generator = torch.Generator().manual_seed(seed)
    actions = 4.0 * torch.randn(batch, horizon, dof, generator=generator)
    return actions.to(**reacher.tensor_args.as_kwargs())


def _rollout(reacher: ArmReacher, actions: torch.Tensor, fused: bool) -> tuple:
    reacher.fused_rollout = fused
    with torch.no_grad():
        result = reacher.rollout_fn(actions)
    state = result.state
    return (
        {name: term.clone() for name, term in reacher.cost_terms.items()},
        result.costs.clone(),
        result.total.clone(),
        [t.clone() for t in (state.state_seq.position, state.state_seq.velocity)],
        [t.clone() for t in (state.state_seq.acceleration, state.state_seq.jerk)],
        [state.ee_position.clone(), state.ee_quaternion.clone()],
    )


def _assert_equal_rollouts(reacher: ArmReacher, actions: torch.Tensor) -> dict:
    with torch.no_grad():
        assert reacher.fused_reason() is None
    terms, costs, total, *states = _rollout(reacher, actions, fused=False)
    got_terms, got_costs, got_total, *got_states = _rollout(reacher, actions, fused=True)
    assert list(got_terms) == list(terms)  # the same terms, in the order of the costs
    tight = reacher.tensor_args.dtype == torch.float64
    rtol = 1e-9 if tight else 2e-5
    for name, term in terms.items():
        # absolute slack: float rounding of sums of terms up to ~1e4 per step
        atol = rtol * max(1.0, float(term.abs().max()))
        torch.testing.assert_close(got_terms[name], term, rtol=rtol, atol=atol, msg=name)
    torch.testing.assert_close(got_costs, costs, rtol=rtol, atol=rtol * float(costs.max()))
    torch.testing.assert_close(got_total, total, rtol=rtol, atol=rtol * float(total.max()))
    for got, expected in zip(got_states, states):
        for g, e in zip(got, expected):
            torch.testing.assert_close(g, e, rtol=rtol, atol=10 * rtol)
    return terms


@pytest.mark.parametrize(
    ("world", "follow", "dtype"),
    [
        (False, False, torch.float32),
        (True, False, torch.float32),
        (True, True, torch.float32),
        (False, True, torch.float64),
    ],
)
def test_fused_terms_equal_the_modular_ones(world, follow, dtype):
    reacher = _reacher(world, dtype)
    start = _start(reacher)
    reacher.update_params(Goal(goal_pose=Pose.from_list(GOAL, reacher.tensor_args)), start)
    horizon, dof = reacher.dynamics_model.horizon, reacher.robot_config.dof
    if follow:
        kw = reacher.tensor_args.as_kwargs()
        steps = torch.linspace(0, 1, horizon, **kw)[:, None]
        position = start.position + steps * (reacher.robot_config.retract_config - start.position)
        reacher.update_reference(
            JointState(position[None], torch.full((1, horizon, dof), 0.3, **kw))
        )
    terms = _assert_equal_rollouts(reacher, _actions(reacher))
    # the terms the test is about are there and active on some samples
    expected = {"pose_cost", "bound_cost", "smooth_cost", "stop_cost", "null_space_cost"}
    expected |= {"primitive_collision_cost"} if world else set()
    expected |= {"tracking_cost"} if follow else set()
    assert set(terms) == expected
    assert (terms["bound_cost"] > 0).any() and (terms["bound_cost"] == 0).any()
    if world:
        collision = terms["primitive_collision_cost"]
        assert (collision > 0).any() and (collision == 0).any()


def test_fused_cspace_goal_with_several_problems():
    """Two start states with a goal state (then also a pose goal) each, in problem-major rows;
    a running c-space cost with per-joint weights and a jerk term in the smoothness cost."""
    reacher = _reacher(
        False,
        cspace_cost={
            "terminal_weight": 3.0,
            "run_weight": 0.5,
            "run_weight_ramp": True,
            "cspace_weights": [0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0],
        },
        smooth_cost={"acceleration_weight": 0.002, "jerk_weight": 1e-6},
    )
    start = _start(reacher, rows=2)
    goal = JointState.from_position(start.position.flip(0) - 0.2)
    reacher.update_params(Goal(goal_state=goal), start)
    terms = _assert_equal_rollouts(reacher, _actions(reacher, 2 * 40, seed=3))
    assert "cspace_cost" in terms and "pose_cost" not in terms
    # and a pose goal per problem beside them
    poses = Pose(
        torch.tensor([[0.45, 0.1, 0.35], [0.3, -0.3, 0.5]]),
        torch.tensor([[0.0, 1.0, 0.0, 0.0], [0.0, 0.7071068, 0.7071068, 0.0]]),
    )
    reacher.update_params(Goal(goal_pose=poses, goal_state=goal))
    terms = _assert_equal_rollouts(reacher, _actions(reacher, 2 * 40, seed=4))
    assert "cspace_cost" in terms and "pose_cost" in terms


def test_a_nan_action_flags_its_row_only():
    reacher = _reacher(True)
    reacher.update_params(Goal(goal_pose=Pose.from_list(GOAL)), _start(reacher))
    actions = _actions(reacher)
    actions[3, 5, 2] = float("nan")
    for fused in (False, True):
        reacher.fused_rollout = fused
        with torch.no_grad():
            total = reacher.rollout_fn(actions).total
        assert torch.isinf(total[3]) and torch.isfinite(total[:3]).all()
        assert reacher.last_invalid.nonzero().flatten().tolist() == [3]


@pytest.mark.parametrize(
    "case",
    [
        "self-collision",
        "pose metric",
        "gradient",
        "scale tracking",
        "velocity",
        "switched off",
        "joint count",
    ],
)
def test_unsupported_configurations_take_the_modular_path(case, monkeypatch):
    cost = {"self_collision_cost": {"enabled": True}} if case == "self-collision" else {}
    if case == "joint count":  # 6 joint weights for the 7 joints: the modular path's error
        cost = {"smooth_cost": {"acceleration_weight": 0.002, "joint_weights": [1.0] * 6}}
    if case == "velocity":
        task = TaskConfig.load("particle_mpc")
        task.model = dict(task.model, control_space="VELOCITY")
        reacher = ArmReacher.from_task(task, "franka", TensorDeviceType())
    else:
        reacher = _reacher(True, **cost)
    reacher.update_params(Goal(goal_pose=Pose.from_list(GOAL)), _start(reacher))
    if case == "pose metric":
        reacher.update_pose_cost_metric(
            PoseCostMetric(hold_partial_pose=True, hold_vec_weight=[1, 1, 1, 0, 0, 0])
        )
    if case == "switched off":
        reacher.fused_rollout = False

    def refuse(*args, **kwargs):
        raise AssertionError("the fused rollout ran")

    monkeypatch.setattr(fused_module.FusedRollout, "rollout", refuse)
    actions = _actions(reacher, 8)
    if case == "gradient":
        actions.requires_grad_(True)
        assert reacher.fused_reason() is not None
        reacher.rollout_fn(actions).total.sum().backward()
        assert actions.grad is not None
        return
    with torch.no_grad():
        if case == "scale tracking":
            with track_scales():
                assert reacher.fused_reason() is not None
                reacher.rollout_fn(actions)
            return
        if case != "switched off":
            assert reacher.fused_reason() is not None
        if case == "joint count":
            with pytest.raises(InputValueError, match="joint_weights"):
                reacher.rollout_fn(actions)
            return
        reacher.rollout_fn(actions)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_on_cuda_the_modular_path_serves(monkeypatch):
    """The fused path is a CPU path (one thread per particle row): on CUDA the modular rollout
    (and its CUDA graphs) serve, with the option on."""
    task = TaskConfig.load("particle_mpc")
    reacher = ArmReacher.from_task(task, "franka", TensorDeviceType(device=torch.device("cuda")))
    reacher.attach_world(WorldConfig.load(WORLD))
    goal = Pose.from_list(GOAL, reacher.tensor_args)
    reacher.update_params(Goal(goal_pose=goal), _start(reacher))
    with torch.no_grad():
        assert reacher.fused_reason() == "not a CPU device"
    monkeypatch.setattr(
        fused_module.FusedRollout, "rollout", lambda *a, **k: pytest.fail("fused on CUDA")
    )
    actions = _actions(reacher, 64)
    with torch.no_grad():
        assert torch.isfinite(reacher.rollout_fn(actions).total).all()
