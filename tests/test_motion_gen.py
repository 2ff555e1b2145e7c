"""MotionGen: collision-free plans among obstacles, checked independently (coal, finite
differences), and the named failure statuses."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch
from collision_reference import coal_sphere_box_distance

from curobo_lite.types import JointState, Pose, quat_angle_error
from curobo_lite.wrap import IKSolver, MotionGen, MotionGenStatus
from curobo_lite.wrap.motion.graph_planner import ompl_available

# a box straight between the retract pose's hand and a goal to its right
WALL = {"pose": [0.42, -0.16, 0.45, 1.0, 0.0, 0.0, 0.0], "dims": [0.25, 0.03, 0.3]}
GOAL = [0.42, -0.35, 0.40, 0.0, 1.0, 0.0, 0.0]


@pytest.fixture(scope="module")
def motion_gen() -> MotionGen:
    return MotionGen.from_config("franka", {"cuboid": {"wall": WALL}})


def _start(motion_gen: MotionGen) -> JointState:
    return JointState.from_position(motion_gen.robot_config.retract_config[None].clone())


def _dense(positions: torch.Tensor, factor: int = 4) -> torch.Tensor:
    """``[T, D]`` -> ``[(T-1)*factor+1, D]`` linear resampling (checks between samples)."""
    t = torch.linspace(0.0, 1.0, factor + 1, dtype=positions.dtype)[:-1]
    pieces = positions[:-1, None] + t[None, :, None] * (positions[1:] - positions[:-1])[:, None]
    return torch.cat((pieces.reshape(-1, positions.shape[1]), positions[-1:]))


@pytest.mark.parametrize("stage", ["roadmap", "trajopt"])
def test_plan_around_a_wall_is_collision_free_and_within_limits(motion_gen, stage):
    """The roadmap's timed path (the default) and, with ``enable_roadmap=False``, the
    optimized trajectory: both reach the goal within the limits, clear of the wall."""
    if stage == "trajopt":
        motion_gen = MotionGen.from_config(
            "franka", {"cuboid": {"wall": WALL}}, enable_roadmap=False
        )
    result = motion_gen.plan_single(_start(motion_gen), Pose.from_list(GOAL))
    assert result.success, result
    assert result.status is MotionGenStatus.SUCCESS
    plan = result.interpolated_plan.position
    # the goal, by forward kinematics of the last sample
    fk = motion_gen.checker.kinematics.forward(plan[-1:])
    goal = Pose.from_list(GOAL)
    assert float((fk.ee_position - goal.position).norm()) <= 0.005
    assert float(quat_angle_error(fk.ee_quaternion, goal.quaternion)[0]) <= 0.05
    # limits by finite differences of the samples (5 % for the differences' own error)
    limits = motion_gen.robot_config.joint_limits
    dt = result.interpolation_dt
    velocity = torch.diff(plan, dim=0) / dt
    acceleration = torch.diff(velocity, dim=0) / dt
    low, high = limits.position
    assert bool(((plan >= low - 1e-6) & (plan <= high + 1e-6)).all())
    assert bool((velocity.abs() <= limits.velocity[1] * 1.05).all())
    assert bool((acceleration.abs() <= limits.acceleration[1] * 1.05).all())
    # collision-free: coal on the same spheres, densely resampled, down to the exact band
    # (15 mm: the meshes judge shallower sphere contacts), and the swept check on the meshes
    spheres = motion_gen.checker.get_world_spheres(_dense(plan)).detach().reshape(-1, 4)
    spheres = spheres[spheres[:, 3] > 0]
    clearance = coal_sphere_box_distance(spheres.double().numpy(), [(WALL["pose"], WALL["dims"])])
    band = motion_gen.exact_band if stage == "roadmap" else 0.0
    assert float(clearance.min()) >= -band
    assert result.min_distance >= -band
    assert bool(motion_gen.checker.validate_trajectory_mesh(plan))
    assert result.solve_time > 0.0 and "ik" in result.timings and stage in result.timings
    assert result.used_graph == (stage == "roadmap")


def test_start_in_collision_is_a_status_not_an_exception(motion_gen):
    start = _start(motion_gen)
    hand = motion_gen.checker.kinematics.forward(start.position).ee_position[0].tolist()
    motion_gen.world_collision.add_obstacle(
        _cuboid("block", [*hand, 1.0, 0.0, 0.0, 0.0], [0.1, 0.1, 0.1])
    )
    try:
        result = motion_gen.plan_single(start, Pose.from_list(GOAL))
    finally:
        motion_gen.world_collision.remove_obstacle("block")
    assert not result.success
    assert result.status is MotionGenStatus.INVALID_START_STATE_WORLD_COLLISION
    assert result.interpolated_plan is None


def test_start_outside_limits_and_moving_start_are_named(motion_gen):
    start = _start(motion_gen)
    outside = start.clone()
    outside.position[0, 0] = float(motion_gen.robot_config.joint_limits.position[1, 0]) + 0.2
    result = motion_gen.plan_single(outside, Pose.from_list(GOAL))
    assert result.status is MotionGenStatus.INVALID_START_STATE_JOINT_LIMITS
    moving = start.clone()
    moving.velocity[0, 2] = 0.5
    result = motion_gen.plan_single(moving, Pose.from_list(GOAL))
    assert result.status is MotionGenStatus.INVALID_START_STATE_NOT_AT_REST


def test_unreachable_goal_fails_with_ik_fail(motion_gen):
    result = motion_gen.plan_single(_start(motion_gen), Pose.from_list([1.6, 0, 0.5, 0, 1, 0, 0]))
    assert not result.success
    assert result.status is MotionGenStatus.IK_FAIL


def test_update_world_gives_the_plan_of_a_fresh_motion_gen(motion_gen):
    other = {"cuboid": {"wall": {**WALL, "pose": [0.45, -0.13, 0.42, 1.0, 0.0, 0.0, 0.0]}}}
    goal = Pose.from_list(GOAL)
    motion_gen.update_world(other)
    try:
        edited = motion_gen.plan_single(_start(motion_gen), goal)
    finally:
        motion_gen.update_world({"cuboid": {"wall": WALL}})
    fresh = MotionGen.from_config("franka", other).plan_single(_start(motion_gen), goal)
    assert edited.status is fresh.status
    torch.testing.assert_close(
        edited.interpolated_plan.position, fresh.interpolated_plan.position, atol=1e-5, rtol=0
    )


def test_collision_aware_ik_starts_from_the_pose_solutions_shallowest_in_contact_first(
    motion_gen,
):
    """The L-BFGS phase's first seeds: the start, then the pose-only phase's solutions that
    reach the pose (forward kinematics), ordered by their clearance from the wall, largest
    first (coal on the same spheres)."""
    start = _start(motion_gen).position
    goal = Pose.from_list(GOAL)
    quick = motion_gen.ik_solver.solve_batch(
        goal, lbfgs_fallback=False, seed_config=start[:, None], rank_config=start
    )
    seeds = motion_gen._contact_seeds(quick, [0], goal, start)
    assert seeds.shape[0] == 1 and seeds.shape[1] >= 2
    assert torch.equal(seeds[0, 0], start[0])
    reached = seeds[0, 1:]
    reached = reached[~(reached == start[0]).all(-1)]  # the padding, if any
    fk = motion_gen.checker.kinematics.forward(reached)
    assert float((fk.ee_position - goal.position).norm(dim=-1).max()) <= 0.005
    assert (
        float(quat_angle_error(fk.ee_quaternion, goal.quaternion.expand_as(fk.ee_quaternion)).max())
        <= 0.05
    )
    spheres = motion_gen.checker.get_world_spheres(reached).detach()
    clearance = [  # the order looks 10 cm out at most
        min(
            0.1,
            coal_sphere_box_distance(
                row[row[:, 3] > 0].double().numpy(), [(WALL["pose"], WALL["dims"])]
            ).min(),
        )
        for row in spheres
    ]
    assert all(a >= b - 1e-4 for a, b in zip(clearance[:-1], clearance[1:]))


def test_plan_joint_and_invalid_goal_state(motion_gen):
    start = _start(motion_gen)
    goal = start.position.clone()
    goal[0, 0] += 0.8  # swing left, away from the wall
    result = motion_gen.plan_joint(start, JointState.from_position(goal))
    assert result.success, result
    assert float((result.interpolated_plan.position[-1] - goal[0]).abs().max()) < 0.01
    into_wall = start.position.clone()
    into_wall[0, 0] -= 0.8  # swing right: the hand ends inside the wall (coal agrees)
    spheres = motion_gen.checker.get_link_spheres(into_wall).detach()
    clearance = coal_sphere_box_distance(
        spheres.reshape(-1, 4).double().numpy(), [(WALL["pose"], WALL["dims"])]
    )
    assert float(clearance.min()) < 0.0
    bad = motion_gen.plan_joint(start, JointState.from_position(into_wall))
    assert not bad.success and bad.status is MotionGenStatus.INVALID_GOAL_STATE


@pytest.mark.skipif(not ompl_available(), reason="OMPL's Python bindings are not installed")
def test_graph_planner_path_is_valid_and_connects():
    from curobo_lite.wrap.motion.graph_planner import OmplPlanner, resample_path

    motion_gen = MotionGen.from_config("franka", {"cuboid": {"wall": WALL}})
    start = motion_gen.robot_config.retract_config.clone()
    goal = start.clone()
    goal[0] = -0.9  # the hand swings right, through the wall's place
    planner = OmplPlanner(motion_gen.checker, time_limit=5.0)
    result = planner.plan(start, goal)
    assert result.success
    torch.testing.assert_close(result.path[0], start)
    torch.testing.assert_close(result.path[-1], goal)
    dense = resample_path(result.path, 200)
    assert bool(motion_gen.checker.validate(dense).all())
    assert result.length >= float((goal - start).norm()) - 1e-9
    assert not math.isinf(result.length) and np.isfinite(result.plan_time)


@pytest.mark.skipif(not ompl_available(), reason="OMPL's Python bindings are not installed")
def test_graph_planner_reaches_one_of_several_goals():
    from curobo_lite.wrap.motion.graph_planner import OmplPlanner, resample_path

    motion_gen = MotionGen.from_config("franka", {"cuboid": {"wall": WALL}})
    start = motion_gen.robot_config.retract_config.clone()
    far, near = start.clone(), start.clone()
    far[0], near[0] = -0.9, start[0] + 0.3
    planner = OmplPlanner(motion_gen.checker, time_limit=5.0)
    goals = torch.stack((far, near))
    result = planner.plan(start, goals)
    assert result.success and result.goal_index in (0, 1)
    torch.testing.assert_close(result.path[-1], goals[result.goal_index])
    # valid where the planner checks (every `resolution` rad along each segment); between its
    # samples a sphere may graze an obstacle by a hair, never more
    path = result.path
    assert bool(motion_gen.checker.validate_segments(path[:-1], path[1:], planner.resolution).all())
    dense = resample_path(path, 400)
    assert float(motion_gen.checker.collision_distance(dense).min()) >= -1e-3
    with pytest.raises(ValueError, match=r"goal: expected \[7\] or \[G, 7\]"):
        planner.plan(start, torch.zeros(2, 3))


def _cuboid(name, pose, dims):
    from curobo_lite.geom import Cuboid

    return Cuboid(name=name, pose=pose, dims=dims)


def test_plan_cli_saves_a_collision_free_plan(tmp_path):
    import yaml

    from curobo_lite.cli import main
    from curobo_lite.wrap import RobotWorld

    out = tmp_path / "plan.yml"
    world = tmp_path / "wall.yml"
    world.write_text(yaml.safe_dump({"cuboid": {"wall": WALL}}))
    code = main(["plan", "--world", str(world), "--goal", *map(str, GOAL), "--save", str(out)])
    assert code == 0
    saved = yaml.safe_load(out.read_text())
    positions = torch.tensor(saved["positions"])
    assert saved["success"] and positions.shape[1] == 7
    checker = RobotWorld.from_config("franka", {"cuboid": {"wall": WALL}})
    assert bool(checker.validate_trajectory_mesh(positions))  # the meshes judge (exact band)
    bad = main(["plan", "--world", "no_such_world", "--goal", *map(str, GOAL)])
    assert bad == 2


def test_ik_stop_after_ends_at_the_first_precise_collision_free_seed(motion_gen):
    """``stop_after: 1`` ends the IK at the check where a seed is within a quarter of both
    thresholds and collision-free: fewer iterations than without, the solution checked by
    forward kinematics and coal."""

    goal = Pose.from_list(GOAL)
    world = motion_gen.world_collision
    early = IKSolver.from_config("franka", world, stop_after=1).solve_single(goal)
    full = IKSolver.from_config("franka", world, stop_after=0).solve_single(goal)
    assert bool(early.success[0]) and bool(full.success[0])
    assert early.iterations % 4 == 0 and early.iterations < full.iterations
    fk = motion_gen.checker.kinematics.forward(early.solution)
    assert float((fk.ee_position - goal.position).norm()) <= 0.25 * 0.005
    assert float(quat_angle_error(fk.ee_quaternion, goal.quaternion)[0]) <= 0.25 * 0.05
    spheres = motion_gen.checker.get_link_spheres(early.solution).detach()
    clearance = coal_sphere_box_distance(
        spheres.reshape(-1, 4).double().numpy(), [(WALL["pose"], WALL["dims"])]
    )
    assert float(clearance.min()) >= 0.0
    with pytest.raises(ValueError, match="ik.stop_after"):
        IKSolver.from_config("franka", world, stop_after=-1)


def test_use_cuda_graph_reaches_every_lbfgs_solve_and_keeps_their_options(monkeypatch):
    """``use_cuda_graph`` turns graphs on for the IK's, the trajectory's and its inner IK's
    L-BFGS, each keeping its other options (the IK's defaults, the task's sections)."""
    from curobo_lite.opt import cuda_graph
    from curobo_lite.wrap.ik.config import DEFAULT_IK_LBFGS

    monkeypatch.setattr(cuda_graph, "_warned_cpu", False)  # the CPU warning comes once
    plain = MotionGen.from_config("franka", "table")
    with pytest.warns(UserWarning, match="use_cuda_graph"):
        # no roadmap and no pose-only IK phase: the plan runs the L-BFGS solves
        graphed = MotionGen.from_config(
            "franka",
            "table",
            use_cuda_graph=True,
            enable_roadmap=False,
            ik={"dls_iterations": 0},
        )
        graphed.plan_single(
            JointState.from_position(graphed.robot_config.retract_config[None].clone()),
            Pose.from_list([0.45, 0.2, 0.45, 0, 1, 0, 0]),
        )
    pairs = [
        (plain.ik_solver.lbfgs_config, graphed.ik_solver.lbfgs_config),
        (plain.trajopt.lbfgs_config, graphed.trajopt.lbfgs_config),
        (plain.trajopt.ik_solver.lbfgs_config, graphed.trajopt.ik_solver.lbfgs_config),
    ]
    for before, after in pairs:
        assert not before.use_cuda_graph and after.use_cuda_graph
        assert dataclasses.replace(after, use_cuda_graph=False) == before
    assert list(graphed.ik_solver.lbfgs_config.line_search_scale) == list(
        DEFAULT_IK_LBFGS.get("line_search_scale", plain.ik_solver.lbfgs_config.line_search_scale)
    )


def test_ik_lbfgs_option_adjusts_the_ik_defaults_and_cost_sections_replace_them():
    """A partial ``lbfgs`` option keeps the IK's other L-BFGS defaults (line search, stop
    rule); ``cost`` sections replace the default set, so a section left out is off."""
    from curobo_lite.opt import LbfgsConfig
    from curobo_lite.wrap.ik.config import DEFAULT_IK_COST, DEFAULT_IK_LBFGS, IKSolverConfig

    expected = {key: (7 if key == "n_iters" else value) for key, value in DEFAULT_IK_LBFGS.items()}
    solver = IKSolver.from_config("franka", None, num_seeds=2, lbfgs={"n_iters": 7})
    assert solver.config.lbfgs == expected
    assert solver.lbfgs_config == LbfgsConfig.from_dict(expected)
    assert solver.lbfgs_config.line_search != LbfgsConfig().line_search  # not the bare defaults
    pose_only = {"pose_cost": DEFAULT_IK_COST["pose_cost"]}
    assert IKSolverConfig.from_dict({"cost": pose_only}).cost == pose_only
    with pytest.raises(TypeError, match="ik.lbfgs"):
        IKSolverConfig.from_dict({"lbfgs": [1, 2]})


def test_plan_batch_plans_each_problem_and_fails_only_the_unreachable_one(motion_gen):
    """Three problems in one call: two reachable goals (one behind the wall) and one far out
    of reach; each reachable plan ends at its own goal by forward kinematics and stays clear
    of the wall (coal on densely resampled spheres), the unreachable one alone is IK_FAIL."""
    goals = [GOAL, [0.45, 0.25, 0.45, 0.0, 1.0, 0.0, 0.0], [2.5, 0.0, 0.4, 0.0, 1.0, 0.0, 0.0]]
    values = torch.tensor(goals)
    goal = Pose(values[:, :3].contiguous(), values[:, 3:].contiguous())
    start = JointState.from_position(motion_gen.robot_config.retract_config[None].clone())
    results = motion_gen.plan_batch(start, goal)
    assert [r.status for r in results][2] is MotionGenStatus.IK_FAIL
    for result, target in zip(results[:2], goals[:2]):
        assert result.success, result
        plan = result.interpolated_plan.position
        fk = motion_gen.checker.kinematics.forward(plan[-1:])
        assert float((fk.ee_position[0] - torch.tensor(target[:3])).norm()) <= 0.005
        spheres = motion_gen.checker.get_world_spheres(_dense(plan)).detach().reshape(-1, 4)
        spheres = spheres[spheres[:, 3] > 0]
        clearance = coal_sphere_box_distance(
            spheres.double().numpy(), [(WALL["pose"], WALL["dims"])]
        )
        # the meshes judge contacts shallower than the exact band (15 mm) on a roadmap plan
        assert float(clearance.min()) >= -0.015
        assert bool(motion_gen.checker.validate_trajectory_mesh(plan))
