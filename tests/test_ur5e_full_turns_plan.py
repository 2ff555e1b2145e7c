"""MotionGen from wound UR5e starts (:mod:`curobo_lite.wrap.motion.joint_barriers`,
:mod:`curobo_lite.wrap.motion.reachable_goals`): the UR5e's joints span ``+-2 pi``, but its
elbow cannot pass ``+-pi`` (the forearm folds onto the upper arm) nor its shoulder lift the band
where the upper arm points down through the base, so a start past such a barrier reaches only
the goal configurations on its side of it.

References, none of them the planner's: the forward kinematics and a hand-written quaternion
angle for the pose reached, the joint limits read from the robot, ``RobotWorld``'s sphere
clearance (world and self) at every interpolated waypoint, fresh random configurations for the
barriers' claim (every one self-collides there), and hand arithmetic of whole turns. The
problems are those of ``benchmarks/user_sweep.py`` (seed 0) that failed before the fix:
TRAJOPT_FAIL after 3-4 s of roadmap and optimizer."""

from __future__ import annotations

import math

import pytest
import torch

from curobo_lite.types import JointState, Pose
from curobo_lite.wrap import MotionGen, RobotWorld

TURN = 2.0 * math.pi

#: user sweep (seed 0) mixed 14: the shoulder lift wound to 4.21 rad (past the base band)
MIXED_START = [
    1.348365306854248,
    4.210530757904053,
    -2.30824875831604,
    -4.411849498748779,
    1.5429601669311523,
    5.731081485748291,
]
MIXED_GOAL = [
    -0.8179593086242676,
    -1.2481179237365723,
    -5.391727447509766,
    -6.120742321014404,
    4.170375347137451,
    2.156881809234619,
]
#: user sweep (seed 0) bookshelf 10: the elbow wound to 4.80 rad; the goal pose's collision-free
#: postures all bend the elbow the other way (0.48 rad; 0.48 + 2 pi is past the limit)
BOOKSHELF_START = [
    1.5628867149353027,
    -1.6543159484863281,
    4.803664684295654,
    -1.5762519836425781,
    -4.451254844665527,
    -1.6704750061035156,
]
BOOKSHELF_GOAL = [
    0.30488109588623047,
    -6.273748874664307,
    0.47539710998535156,
    -1.857485294342041,
    4.731154918670654,
    2.8076424598693848,
]


@pytest.fixture(scope="module")
def planner() -> MotionGen:
    return MotionGen.from_config("ur5e", "mixed")


def _pose_of(checker: RobotWorld, q: list[float]) -> Pose:
    fk = checker.kinematics.forward(torch.tensor([q]), spheres=False)
    return Pose(fk.ee_position, fk.ee_quaternion)


def _angle(a: torch.Tensor, b: torch.Tensor) -> float:
    """Radians between unit quaternions ``a [4]`` and ``b [4]`` (either sign)."""
    return 2.0 * math.acos(min(1.0, abs(float((a * b).sum()))))


def test_wound_shoulder_start_plans_within_its_side(planner: MotionGen):
    planner.update_world("mixed")
    checker = RobotWorld.from_config("ur5e", "mixed")
    goal = _pose_of(checker, MIXED_GOAL)
    result = planner.plan_single(JointState.from_position(torch.tensor([MIXED_START])), goal)
    assert result.success, result.status
    path = result.interpolated_plan.position
    assert torch.allclose(path[0], torch.tensor(MIXED_START), atol=1e-5)
    # the pose reached, from the forward kinematics of the last waypoint
    end = checker.kinematics.forward(path[-1:], spheres=False)
    assert float((end.ee_position[0] - goal.position[0]).norm()) <= 5e-3
    assert _angle(end.ee_quaternion[0], goal.quaternion[0]) <= 0.05
    # every waypoint within the limits, clear of the world and of itself (spheres, -1 mm)
    low, high = checker.kinematics.robot_config.joint_limits.position
    assert bool(((path >= low - 1e-6) & (path <= high + 1e-6)).all())
    assert float(checker.collision_distance(path, max_distance=0.1).min()) >= -1e-3
    assert float(checker.self_collision_distance(path).min()) >= -1e-3
    # the start's shoulder lift (4.21) stays on its side of the base band (about 0.5-2.7 rad)
    assert float(path[:, 1].min()) > 2.7


def test_goal_past_the_elbow_barrier_fails_at_once_and_names_it(planner: MotionGen):
    planner.update_world("bookshelf")
    checker = RobotWorld.from_config("ur5e", "bookshelf")
    goal = _pose_of(checker, BOOKSHELF_GOAL)
    start = JointState.from_position(torch.tensor([BOOKSHELF_START]))
    result = planner.plan_single(start, goal)
    assert result.status.value == "IK_FAIL"
    assert result.solve_time < 1.5  # not the roadmap's budget (3-4 s before)
    barrier = [o for o in result.offenders if o.kind == "barrier"]
    assert [o.link for o in barrier] == ["elbow_joint"]
    angle = barrier[0].limit
    elbow_start = BOOKSHELF_START[2]
    # the claim, checked on fresh configurations: with the elbow at that angle every one of
    # them self-collides (other joints uniform within the limits)
    low, high = checker.kinematics.robot_config.joint_limits.position
    generator = torch.Generator().manual_seed(1234)
    q = low + (high - low) * torch.rand(512, 6, generator=generator)
    q[:, 2] = angle
    assert bool((checker.self_collision_distance(q) < 0.0).all())
    # and every whole turn of the goal's elbow value within the limits lies beyond it
    value = barrier[0].value
    turns = [value + TURN * m for m in (-2, -1, 0, 1, 2)]
    inside = [v for v in turns if float(low[2]) <= v <= float(high[2])]
    assert inside and all(min(elbow_start, v) <= angle <= max(elbow_start, v) for v in inside)
    # the elbow at 0.48 rad bends the other way: in (-pi, pi) like the sampled goal's
    assert abs(value - BOOKSHELF_GOAL[2]) < 0.3


def test_barriers_and_the_start_side(planner: MotionGen):
    barriers = planner._barriers
    angles, blocked = barriers.scan()
    elbow = angles[2][blocked[2]]
    # the folded elbow on both sides, the straight one free
    assert bool(((elbow - math.pi).abs() < 0.1).any()) and bool(
        ((elbow + math.pi).abs() < 0.1).any()
    )
    assert not bool((elbow.abs() < 2.0).any())
    # a start with the elbow at 4.80 rad: its side of the elbow's range is above pi
    low, high = barriers.piece(torch.tensor(BOOKSHELF_START))
    assert math.pi < float(low[2]) < 4.0 and abs(float(high[2]) - TURN) < 1e-5
    # goals by hand: the elbow at -0.50 is reached one turn up (5.78), at +0.50 not at all
    # (0.50 is past pi from 4.80, 0.50 + 2 pi past the limit)
    goals = torch.tensor([BOOKSHELF_START, BOOKSHELF_START])
    goals[0, 2], goals[1, 2] = -0.5, 0.5
    q, reachable = barriers.reachable_turns(goals, torch.tensor(BOOKSHELF_START))
    assert reachable.tolist() == [True, False]
    assert abs(float(q[0, 2]) - (-0.5 + TURN)) < 1e-5


def test_roadmap_samples_keep_to_the_start_side_within_a_quarter_turn(planner: MotionGen):
    barriers = planner._barriers
    start = torch.tensor(BOOKSHELF_START)
    goal = start.clone()
    goal[0], goal[2] = start[0] + 1.0, 5.78
    low, high = barriers.sample_box(start, goal[None])
    side_low, side_high = barriers.piece(start)
    quarter = 0.5 * math.pi
    # by hand: the pan between its two values, a quarter turn either way; the elbow on the
    # start's side of pi, up to the limit (5.78 + a quarter turn is past it)
    assert abs(float(low[0]) - (start[0] - quarter)) < 1e-5
    assert abs(float(high[0]) - (start[0] + 1.0 + quarter)) < 1e-5
    assert float(low[2]) == float(side_low[2]) and abs(float(high[2]) - TURN) < 1e-5
    planner.roadmap._bounds = (low, high)
    generator = torch.Generator().manual_seed(0)
    corridor = (start, goal[None])
    q = planner.roadmap._sample(256, torch.stack((start, goal)), generator, corridor)
    assert q.shape[0] > 0
    assert bool(((q >= low - 1e-6) & (q <= high + 1e-6)).all())


def test_joint_goal_past_the_elbow_barrier_is_refused_at_once(planner: MotionGen):
    planner.update_world("bookshelf")
    checker = RobotWorld.from_config("ur5e", "bookshelf")
    goal_q = torch.tensor([BOOKSHELF_GOAL])
    assert bool(checker.validate(goal_q)[0])  # a valid configuration, on the elbow's far side
    start = JointState.from_position(torch.tensor([BOOKSHELF_START]))
    result = planner.plan_single_js(start, JointState.from_position(goal_q))
    assert result.status.value == "INVALID_GOAL_STATE"
    assert result.solve_time < 1.0
    # a joint goal's own values count, not their turns: the shoulder lift too (-6.27 from
    # -1.65 passes the base band; the turn at 0.01 would not, but it is another goal)
    named = {(o.kind, o.link) for o in result.offenders}
    assert named == {("barrier", "elbow_joint"), ("barrier", "shoulder_lift_joint")}
    # the straight joint-space line between them self-collides where the elbow passes pi
    t = torch.linspace(0.0, 1.0, 201)[:, None]
    line = torch.tensor(BOOKSHELF_START) + t * (goal_q - torch.tensor(BOOKSHELF_START))
    folded = (line[:, 2] - math.pi).abs() < 0.05
    assert bool(folded.any()) and bool((checker.self_collision_distance(line[folded]) < 0).all())
    # a joint goal on the start's side is planned as before
    near = torch.tensor([BOOKSHELF_START])
    near[0, 0] += 0.3
    assert bool(checker.validate(near)[0])
    assert planner.plan_single_js(start, JointState.from_position(near)).success
