"""Why a plan was refused: the offenders of an invalid start, goal configuration or IK, and the
plan command's --start / --goal-joints.

References are computed here, apart from the code under test: box distances of the spheres by
the analytic box SDF (tests/collision_reference.py), sphere-pair distances in plain torch over
every pair of sphere of the two links, the links fixed to the base read off the robot file's
joint tree, joint limits read from the robot file.
"""

from __future__ import annotations

import math

import pytest
import torch
import yaml
from collision_reference import box_sdf

from curobo_lite.config_files import resolve_config_file
from curobo_lite.geom import WorldCollision, WorldConfig
from curobo_lite.types import JointState, Pose, quat_angle_error
from curobo_lite.wrap import MotionGen, MotionGenStatus, Offender, RobotWorld

# a table whose top is 15 cm above the base plane: the base's own spheres are left out of world
# checks (links fixed to the base), panda_link1's lowest sphere (bottom ~11.5 cm) is inside
TABLE = {"pose": [0.3, 0.0, 0.05, 1.0, 0.0, 0.0, 0.0], "dims": [1.2, 1.0, 0.2]}
FAR_GOAL = [0.5, -0.3, 0.4, 0.0, 1.0, 0.0, 0.0]
# a start in limits whose hand folds back onto the shoulder
FOLDED = {3: -3.0, 5: 0.5}


@pytest.fixture(scope="module")
def motion_gen() -> MotionGen:
    # small solver settings: the failures under test happen before or at the IK
    return MotionGen.from_config(
        "franka", None, num_ik_seeds=8, num_trajopt_seeds=2, enable_graph=False
    )


@pytest.fixture()
def world(motion_gen):
    """The module's planner with a given world for one test (emptied afterwards)."""

    def use(world_dict):
        motion_gen.update_world(world_dict)
        return motion_gen

    yield use
    motion_gen.update_world({})


def _retract(motion_gen) -> torch.Tensor:
    return motion_gen.robot_config.retract_config[None].clone()


def _fixed_links(robot) -> set[str]:
    """Links reached from the base through joints that are not active joints."""
    fixed, grew = {robot.base_link}, True
    while grew:
        grew = False
        for joint in robot.joints:
            if joint.parent in fixed and joint.child not in fixed:
                if joint.name not in robot.joint_names:
                    fixed.add(joint.child)
                    grew = True
    return fixed


def _link_box_depths(checker: RobotWorld, q: torch.Tensor, boxes: dict) -> dict:
    """``{(link, box): depth}`` of every moving link inside a box, deepest sphere, by the
    analytic box SDF of the link's spheres (spheres from forward kinematics)."""
    spheres = checker.kinematics.forward(q).link_spheres[0].detach().double()
    fixed = _fixed_links(checker.robot_config)
    depths: dict[tuple[str, str], float] = {}
    for name, box in boxes.items():
        distance = box_sdf(spheres[:, :3], box["pose"], box["dims"]) - spheres[:, 3]
        for link, d in zip(checker.kinematics.sphere_link_names, distance.tolist(), strict=True):
            if link not in fixed and d < 0.0:
                depths[(link, name)] = max(depths.get((link, name), 0.0), -d)
    return depths


def _link_pair_distance(checker: RobotWorld, q: torch.Tensor, a: str, b: str) -> float:
    """Smallest ``|c_i - c_j| - r_i - r_j`` over every sphere of link ``a`` and of ``b``."""
    spheres = checker.kinematics.forward(q).link_spheres[0].detach().double()
    names = checker.kinematics.sphere_link_names
    sa = spheres[[i for i, n in enumerate(names) if n == a]]
    sb = spheres[[i for i, n in enumerate(names) if n == b]]
    gap = torch.cdist(sa[:, :3], sb[:, :3]) - sa[:, 3, None] - sb[None, :, 3]
    return float(gap.min())


def test_obstacle_distances_attribute_each_sphere_to_each_obstacle():
    boxes = {
        "a": {"pose": [0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0], "dims": [0.2, 0.2, 0.2]},
        "b": {"pose": [1.0, 0.0, 0.0, 0.9239, 0.0, 0.0, 0.3827], "dims": [0.2, 0.4, 0.2]},
    }
    world = WorldCollision(WorldConfig.load({"cuboid": boxes}))
    gen = torch.Generator().manual_seed(0)
    spheres = torch.rand(2, 40, 4, generator=gen) * torch.tensor([1.6, 0.6, 0.6, 0.1])
    spheres[..., :3] -= torch.tensor([0.3, 0.3, 0.3])
    spheres[0, 0, 3] = -1.0  # disabled
    names, distance = world.obstacle_distances(spheres)
    assert names == ["a", "b"] and distance.shape == (2, 40, 2)
    for k, name in enumerate(names):
        reference = box_sdf(spheres[..., :3].double(), **boxes[name]) - spheres[..., 3]
        reference[0, 0] = math.inf
        torch.testing.assert_close(distance[..., k].double(), reference, atol=2e-6, rtol=0)
    # their minimum is the plain query; a disabled obstacle drops out, a clamp applies
    torch.testing.assert_close(distance.amin(-1), world.sphere_distance(spheres).distance)
    world.enable_obstacle("a", False)
    names, clamped = world.obstacle_distances(spheres, max_distance=0.05)
    assert names == ["b"]
    torch.testing.assert_close(clamped[..., 0], distance[..., 1].clamp(max=0.05))


def test_obstacle_distances_match_queries_with_the_other_obstacles_disabled():
    """Every obstacle kind, meshes included: column ``o`` is the plain query of a world where
    only obstacle ``o`` is enabled."""
    world = WorldCollision(WorldConfig.load("mixed"))
    gen = torch.Generator().manual_seed(1)
    spheres = torch.rand(300, 4, generator=gen) * torch.tensor([1.6, 1.6, 1.2, 0.1])
    spheres -= torch.tensor([0.8, 0.8, 0.2, 0.0])
    names, distance = world.obstacle_distances(spheres)
    assert names == world.obstacle_names and len(names) >= 5
    for k, name in enumerate(names):
        for other in names:
            world.enable_obstacle(other, other == name)
        alone = world.sphere_distance(spheres).distance
        torch.testing.assert_close(distance[:, k], alone, atol=1e-6, rtol=0)


def test_world_collision_start_names_link_obstacle_and_depth(motion_gen, world):
    hand_box = {"pose": [0.307, 0.0, 0.58, 1.0, 0.0, 0.0, 0.0], "dims": [0.05, 0.05, 0.05]}
    boxes = {"table": TABLE, "cube": hand_box}
    planner = world({"cuboid": boxes})
    q = _retract(planner)
    result = planner.plan_single(JointState.from_position(q), Pose.from_list(FAR_GOAL))
    assert result.status is MotionGenStatus.INVALID_START_STATE_WORLD_COLLISION
    expected = _link_box_depths(planner.checker, q, boxes)
    assert ("panda_link1", "table") in expected and ("panda_hand", "cube") in expected
    assert not any(link in _fixed_links(planner.robot_config) for link, _ in expected)
    worst = sorted(expected.items(), key=lambda item: -item[1])[:3]
    got = [o for o in result.offenders if o.kind == "world"]
    assert [(o.link, o.other) for o in got] == [key for key, _ in worst]
    for offender, (_, depth) in zip(got, worst, strict=True):
        assert offender.depth == pytest.approx(depth, abs=1e-5)
    first = got[0]
    assert f"{first.link} is {first.depth * 1000:.0f} mm inside '{first.other}'" in (
        result.status_message
    )
    assert result.explain().startswith("INVALID_START_STATE_WORLD_COLLISION; at the start state")
    # the status and the report agree: the base link penetrates the table but is not checked
    spheres = planner.checker.get_link_spheres(q)[0].detach().double()
    base = [
        i for i, n in enumerate(planner.checker.kinematics.sphere_link_names) if n == "panda_link0"
    ]
    base_depth = box_sdf(spheres[base, :3], **TABLE) - spheres[base, 3]
    assert float(base_depth.min()) < -0.05
    assert all(o.link != "panda_link0" for o in got)
    # RobotWorld gives the same report for any configuration, top_k caps it per kind
    assert planner.checker.offenders(q[0], top_k=1) == got[:1]
    assert planner.checker.offenders(q, kinds=("joint_limit",)) == []


def test_start_outside_joint_limits_names_the_joint_and_its_limit(motion_gen):
    data = yaml.safe_load(resolve_config_file("robot", "franka").read_text())
    upper = data["joint_limits"]["position"]["upper"][3]  # panda_joint4's upper limit
    lower = data["joint_limits"]["position"]["lower"][0]
    q = _retract(motion_gen)
    q[0, 3] = 0.2
    q[0, 0] = lower - 0.05
    result = motion_gen.plan_single(JointState.from_position(q), Pose.from_list(FAR_GOAL))
    assert result.status is MotionGenStatus.INVALID_START_STATE_JOINT_LIMITS
    limits = [o for o in result.offenders if o.kind == "joint_limit"]
    assert [(o.link, o.other) for o in limits] == [
        ("panda_joint4", "upper"),
        ("panda_joint1", "lower"),
    ]  # farthest first
    joint4 = limits[0]
    assert joint4.value == pytest.approx(0.2) and joint4.limit == pytest.approx(upper)
    assert joint4.depth == pytest.approx(0.2 - upper)
    assert joint4.message == f"panda_joint4 = 0.2 rad, above its upper limit {upper:.4g} rad"
    assert limits[1].limit == pytest.approx(lower) and "below its lower limit" in limits[1].message
    assert "panda_joint4 = 0.2 rad" in result.status_message


def test_self_colliding_start_names_a_link_pair_in_contact(motion_gen):
    q = _retract(motion_gen)
    for joint, value in FOLDED.items():
        q[0, joint] = value
    result = motion_gen.plan_single(JointState.from_position(q), Pose.from_list(FAR_GOAL))
    assert result.status is MotionGenStatus.INVALID_START_STATE_SELF_COLLISION
    pairs = [o for o in result.offenders if o.kind == "self"]
    assert 1 <= len(pairs) <= 3
    ignored = yaml.safe_load(resolve_config_file("robot", "franka").read_text())[
        "self_collision_ignore"
    ]
    for offender in pairs:
        gap = _link_pair_distance(motion_gen.checker, q, offender.link, offender.other)
        assert gap < 0.0 and offender.depth == pytest.approx(-gap, abs=1e-5)
        assert offender.other not in ignored.get(offender.link, [])
        assert offender.link not in ignored.get(offender.other, [])
        assert f"{offender.link} and {offender.other} overlap by" in offender.message
    # the first is the deepest contact of the whole robot
    assert pairs[0].depth == pytest.approx(
        -float(motion_gen.checker.self_collision_distance(q)[0]), abs=1e-5
    )
    assert [o.depth for o in pairs] == sorted((o.depth for o in pairs), reverse=True)


def test_moving_start_names_the_moving_joint(motion_gen):
    start = JointState.from_position(_retract(motion_gen))
    start.velocity[0, 2] = 0.5
    result = motion_gen.plan_single(start, Pose.from_list(FAR_GOAL))
    assert result.status is MotionGenStatus.INVALID_START_STATE_NOT_AT_REST
    assert [(o.kind, o.link, o.other) for o in result.offenders] == [
        ("moving", "panda_joint3", "velocity")
    ]


def test_ik_fail_of_a_grasp_goal_says_what_kept_the_best_seed_invalid(motion_gen, world):
    """A goal pose at the hand of the retract configuration with an object wider than the open
    fingers between them: the pose is reachable, the fingers' spheres sit inside the object."""
    q = _retract(motion_gen)
    state = motion_gen.checker.kinematics.forward(q)
    fingers = [
        i
        for i, n in enumerate(motion_gen.checker.kinematics.sphere_link_names)
        if n.endswith("finger")
    ]
    centre = state.link_spheres[0, fingers, :3].mean(0).tolist()
    box = {"pose": [*centre, 1.0, 0.0, 0.0, 0.0], "dims": [0.04, 0.14, 0.04]}
    planner = world({"cuboid": {"object": box}})
    goal = Pose(state.ee_position.detach(), state.ee_quaternion.detach())
    start = q.clone()
    start[0, 0] += 0.8  # swung away from the object
    result = planner.plan_single(JointState.from_position(start), goal)
    assert result.status is MotionGenStatus.IK_FAIL
    config = planner.ik_solver.config
    for offender in result.offenders:
        if offender.kind == "pose":  # the best seed stopped short of the pose
            assert offender.value > offender.limit
            assert offender.limit in (config.position_threshold, config.rotation_threshold)
    # the contacts are those at the goal pose: the configuration reported reaches it (by FK
    # here) and its fingers' spheres are inside the object (by the box SDF here)
    at = result.offenders_config[None]
    reached = planner.checker.kinematics.forward(at)
    assert float((reached.ee_position - goal.position).norm()) <= config.position_threshold
    angle = quat_angle_error(reached.ee_quaternion, goal.quaternion)
    assert float(angle[0]) <= config.rotation_threshold
    expected = _link_box_depths(planner.checker, at, {"object": box})
    worst = sorted(expected.items(), key=lambda item: -item[1])[:3]
    got = [o for o in result.offenders if o.kind == "world"]
    assert [(o.link, o.other) for o in got] == [key for key, _ in worst]
    for offender, (_, depth) in zip(got, worst, strict=True):
        assert offender.depth == pytest.approx(depth, abs=1e-5)
    assert {"panda_leftfinger", "panda_rightfinger"} <= {o.link for o in got}
    assert "panda_leftfinger is" in result.explain() and "inside 'object'" in result.explain()


def test_ik_fail_of_an_unreachable_goal_gives_the_pose_error(motion_gen):
    goal = Pose.from_list([1.6, 0.0, 0.5, 0.0, 1.0, 0.0, 0.0])  # beyond the arm's reach
    result = motion_gen.plan_single(JointState.from_position(_retract(motion_gen)), goal)
    assert result.status is MotionGenStatus.IK_FAIL
    assert result.offenders_at == "best IK seed"
    position = [o for o in result.offenders if (o.kind, o.other) == ("pose", "position")]
    assert len(position) == 1
    reached = motion_gen.checker.kinematics.forward(result.offenders_config[None])
    error = float((reached.ee_position - goal.position).norm())
    assert position[0].value == pytest.approx(error, abs=1e-4) and error > 0.4
    assert "from the goal position (tolerance 5.0 mm)" in result.status_message


def test_invalid_goal_configuration_names_its_contacts(motion_gen, world):
    start_box = {"table": {**TABLE, "pose": [0.3, 0.0, -0.2, 1.0, 0.0, 0.0, 0.0]}}
    planner = world({"cuboid": start_box})
    start = _retract(planner)
    goal = start.clone()
    goal[0, 1], goal[0, 3] = 1.5, -1.2  # lean forward: the hand goes below the table's top
    expected = _link_box_depths(planner.checker, goal, start_box)
    assert expected
    result = planner.plan_single_js(JointState.from_position(start), JointState.from_position(goal))
    assert result.status is MotionGenStatus.INVALID_GOAL_STATE
    got = [o for o in result.offenders if o.kind == "world"]
    worst = sorted(expected.items(), key=lambda item: -item[1])[:3]
    assert [(o.link, o.other) for o in got] == [key for key, _ in worst]
    assert result.explain().startswith("INVALID_GOAL_STATE; at the goal configuration:")
    # plan_joint is the same entry point
    again = planner.plan_joint(JointState.from_position(start), JointState.from_position(goal))
    assert [o.link for o in again.offenders] == [o.link for o in result.offenders]


def test_offenders_check_their_arguments(motion_gen):
    checker = motion_gen.checker
    with pytest.raises(ValueError, match=r"q: expected shape \[7\] or \[1, 7\]"):
        checker.offenders(torch.zeros(2, 7))
    with pytest.raises(ValueError, match="top_k"):
        checker.offenders(torch.zeros(7), top_k=0)
    with pytest.raises(ValueError, match="kinds"):
        checker.offenders(torch.zeros(7), kinds=("walls",))
    assert isinstance(Offender("world", "a", "b", 0.1, "m"), Offender)
    assert str(Offender("world", "a", "b", 0.1, "a is 100 mm inside 'b'")) == (
        "a is 100 mm inside 'b'"
    )


def test_plan_cli_start_and_goal_joints(tmp_path, capsys):
    from curobo_lite.cli import main

    start = [0.0, -0.8, 0.0, -2.2, 0.0, 1.6, 0.8]
    goal = [0.8, -0.6, 0.1, -2.0, 0.0, 1.5, 0.7]
    out = tmp_path / "plan.yml"
    argv = ["plan", "--start", *map(str, start), "--goal-joints", *map(str, goal)]
    code = main([*argv, "--save", str(out)])
    printed = capsys.readouterr()
    assert code == 0, printed.err + printed.out
    positions = torch.tensor(yaml.safe_load(out.read_text())["positions"], dtype=torch.float64)
    torch.testing.assert_close(
        positions[0], torch.tensor(start, dtype=torch.float64), atol=1e-4, rtol=0
    )
    torch.testing.assert_close(
        positions[-1], torch.tensor(goal, dtype=torch.float64), atol=0.01, rtol=0
    )
    # wrong counts name the option and the joints expected
    for option, values in (("--start", start[:3]), ("--goal-joints", goal + [0.0])):
        argv = ["plan", "--start", *map(str, start), "--goal-joints", *map(str, goal)]
        at = argv.index(option)
        argv[at + 1 : at + 8] = map(str, values)
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert f"{option}: expected 7 joint values (panda_joint1, " in err, err
        assert f"received {len(values)}" in err
    # the option spelled as trajopt spells it, and a refused start printed with its reason
    bad_start = list(start)
    bad_start[3] = 0.2
    argv = ["plan", "--start", *map(str, bad_start), "--joint-goal", *map(str, goal)]
    assert main(argv) == 1
    printed = capsys.readouterr().out
    assert "INVALID_START_STATE_JOINT_LIMITS; at the start state:" in printed
    assert "panda_joint4 = 0.2 rad, above its upper limit" in printed
    with pytest.raises(SystemExit):
        main(["plan", "--goal", *map(str, FAR_GOAL), "--goal-joints", *map(str, goal)])
    assert "not allowed with" in capsys.readouterr().err
