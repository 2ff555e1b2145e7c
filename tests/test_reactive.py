"""ReactivePlanner: MotionGen plans, MPC tracks, replans when the world moves onto the plan.

Judged independently: the robot's spheres along the executed motion (resampled between control
steps) against the true boxes with coal's exact signed distance, the boxes read from the world
files themselves; the goal by forward kinematics of the last measured state. The closed-loop
scenarios are marked slow (``pytest -m slow tests/test_reactive.py``).
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
import yaml
from collision_reference import coal_sphere_box_distance

from curobo_lite.sim import IdealTracker
from curobo_lite.types import JointState, Pose, quat_angle_error
from curobo_lite.wrap import ReactivePlanner

pytest.importorskip("coal")

WORLDS = Path(__file__).resolve().parents[1] / "configs" / "world"
# a box straight between the retract pose's hand and a goal to its right (test_motion_gen's)
WALL = {"pose": [0.42, -0.16, 0.45, 1.0, 0.0, 0.0, 0.0], "dims": [0.25, 0.03, 0.3]}
C = math.sqrt(0.5)
# a short test: 100 particles (the task has 400); the plan carries the motion
FEW = {"num_particles": 100}


def _boxes(world: dict) -> list[tuple[list, list]]:
    return [(box["pose"], box["dims"]) for box in world["cuboid"].values()]


def _bundled(name: str) -> dict:
    return yaml.safe_load((WORLDS / f"{name}.yml").read_text())


def _clearance(planner: ReactivePlanner, positions: torch.Tensor, boxes) -> float:
    """Smallest coal distance of the spheres along ``positions [T, D]``, 4 samples a step."""
    t = torch.linspace(0.0, 1.0, 5, dtype=positions.dtype)[:-1]
    pieces = positions[:-1, None] + t[None, :, None] * (positions[1:] - positions[:-1])[:, None]
    dense = torch.cat((pieces.reshape(-1, positions.shape[1]), positions[-1:]))
    # the spheres of the links the joints move (the base's sit on the stand by design)
    spheres = planner.motion_gen.checker.get_world_spheres(dense).detach()
    distance = coal_sphere_box_distance(spheres.reshape(-1, 4).double().numpy(), boxes)
    return float(distance.min())


def _run(planner: ReactivePlanner, goal: list[float], steps: int, events=None):
    """Closed loop on an ideal tracker until the goal is held (1 cm, 0.05 rad, nearly at
    rest); returns the measured positions ``[T, D]`` and the step results."""
    start = JointState.from_position(planner.mpc.robot_config.retract_config[None].clone())
    tracker = IdealTracker(start)
    planner.set_goal(Pose.from_list(goal))
    positions, results = [start.position[0]], []
    for i in range(steps):
        if events and i in events:
            events[i](planner)
        result = planner.step(tracker.state)
        state = tracker.step(result.action)
        positions.append(state.position[0])
        results.append(result)
        p, r = planner.mpc.pose_error(state)
        if p <= 0.008 and r <= 0.04 and float(state.velocity.abs().max()) < 0.05:
            break
    return torch.stack(positions), results


def _assert_at_goal(planner: ReactivePlanner, position: torch.Tensor, goal: list[float]):
    fk = planner.mpc.kinematics.forward(position[None])
    target = Pose.from_list(goal)
    assert float((fk.ee_position - target.position).norm()) <= 0.01
    assert float(quat_angle_error(fk.ee_quaternion, target.quaternion)[0]) <= 0.05


@pytest.fixture(scope="module")
def wall_planner() -> ReactivePlanner:
    return ReactivePlanner.from_config("franka", {"cuboid": {"wall": WALL}}, mpc=FEW)


@pytest.mark.slow  # 100-160 control steps and 1-2 plans: ~20 s on a quiet 2-core CPU
def test_goal_behind_a_wall_is_reached_without_contact(wall_planner):
    goal = [0.42, -0.35, 0.40, 0.0, 1.0, 0.0, 0.0]
    positions, results = _run(wall_planner, goal, 260)
    _assert_at_goal(wall_planner, positions[-1], goal)
    assert _clearance(wall_planner, positions, [(WALL["pose"], WALL["dims"])]) >= 0.0
    assert results[0].replanned and results[0].replan_reason == "goal"
    assert results[-1].plan_status.value == "SUCCESS" and results[-1].following


@pytest.mark.slow  # 100-160 control steps and 1-2 plans: ~20 s on a quiet 2-core CPU
def test_side_facing_goal_inside_a_cubby_is_reached_without_contact():
    planner = ReactivePlanner.from_config("franka", "cubbies", mpc=FEW)
    goal = [0.66, 0.0, 0.55, C, 0.0, C, 0.0]  # the hand points into the middle cubby, 6 cm deep
    positions, _ = _run(planner, goal, 260)
    _assert_at_goal(planner, positions[-1], goal)
    assert _clearance(planner, positions, _boxes(_bundled("cubbies"))) >= 0.0


@pytest.mark.slow  # 100-160 control steps and 1-2 plans: ~20 s on a quiet 2-core CPU
def test_an_obstacle_moved_onto_the_rest_of_the_plan_is_avoided_and_the_goal_reached():
    world = _bundled("moving_post")
    planner = ReactivePlanner.from_config("franka", world, mpc=FEW)
    goal = [0.4, -0.3, 0.45, 0.0, 1.0, 0.0, 0.0]
    dims = world["cuboid"]["post"]["dims"]
    # onto the plan's way (test_mpc_world's pose: 6 cm clear of the arm when it appears)
    moved = [0.42, -0.08, 0.33, 1.0, 0.0, 0.0, 0.0]
    move_step = 10

    def move(p: ReactivePlanner) -> None:
        rest = p.mpc.following.rest()
        assert p._rest_is_free(rest[:1], p.mpc.following)
        p.move_obstacle("post", moved)
        assert not p._rest_is_free(rest[:1], p.mpc.following)  # onto the rest of the plan

    positions, results = _run(planner, goal, 300, events={move_step: move})
    now = positions[move_step : move_step + 1]
    boxes = [(moved, dims), (world["cuboid"]["stand"]["pose"], world["cuboid"]["stand"]["dims"])]
    assert _clearance(planner, now, boxes[:1]) > 0.03  # it appeared clear of the arm
    # the moving arm brakes (MPC alone, no plan followed), then plans from rest
    assert not results[move_step].following
    replan = next(r for r in results[move_step:] if r.replanned)
    assert replan.replan_reason == "blocked"
    assert _clearance(planner, positions[move_step:], boxes) >= 0.0
    _assert_at_goal(planner, positions[-1], goal)


def test_errors_name_the_argument_and_leave_the_planner_as_it_was(wall_planner):
    from curobo_lite.wrap import ReactivePlannerConfig

    with pytest.raises(ValueError, match="reactive: unknown key"):
        ReactivePlannerConfig.from_dict({"max_deviaton": 0.2})
    with pytest.raises(ValueError, match="reactive.plan_speed"):
        ReactivePlannerConfig.from_dict({"plan_speed": 1.5})
    goal = wall_planner.goal
    with pytest.raises(ValueError, match="goal: expected batch 1, received 2"):
        wall_planner.set_goal(Pose(torch.zeros(2, 3), torch.tensor([[1.0, 0, 0, 0]] * 2)))
    assert wall_planner.goal is goal
    with pytest.raises(ValueError, match="no obstacle named 'shelf'|'shelf'"):
        wall_planner.move_obstacle("shelf", [0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="current_state"):
        wall_planner.step(JointState.from_position(torch.zeros(1, 6)))
