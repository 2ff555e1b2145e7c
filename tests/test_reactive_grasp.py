"""ReactivePlanner reaches a grasp whose hand spheres cannot clear the object (issue #30).

The object, a box between the open fingers, is 2 mm from the finger meshes and 1 mm into the
finger spheres at the goal, so no configuration that reaches the goal is sphere-clear: plans
with the spheres alone fail in IK, and the planner plans with MotionGen's exact band and
relieves the MPC's spheres along the plan (``curobo_lite.wrap.reactive.band_relief``).

Judged independently: the goal by forward kinematics of a separate :class:`Kinematics`, the
executed motion by the exact mesh check (coal) of a separate :class:`RobotWorld`, the reliefs
by coal's sphere-box distances of the plan's spheres.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from collision_reference import coal_sphere_box_distance

from curobo_lite.robot import Kinematics, RobotConfig
from curobo_lite.sim import IdealTracker
from curobo_lite.types import JointState, Pose, quat_angle_error
from curobo_lite.wrap import ReactivePlanner, RobotWorld
from curobo_lite.wrap.motion.config import MotionGenStatus
from curobo_lite.wrap.motion.motion_gen import EXACT_BAND
from curobo_lite.wrap.reactive.band_relief import BAND_SPEED, MIN_RADIUS, RELIEF_STEP, SLOW_REACH

pytest.importorskip("coal")

# the hand pointing down 12 cm below the retract pose's; the object between the fingertips
# (9 cm out along the hand's axis), 7.6 cm across the fingers' axis (y): finger spheres 1.1 mm
# deep, finger meshes 2 mm clear
GOAL = [0.307, 0.0, 0.47, 0.0, 1.0, 0.0, 0.0]
RETRACT = [0.307, 0.0, 0.59, 0.0, 1.0, 0.0, 0.0]  # the retract pose's hand, clear of it
OBJECT_DIMS = [0.02, 0.076, 0.03]
OBJECT_POSE = [0.307, 0.0, 0.38, 0.0, 1.0, 0.0, 0.0]
WORLD = {"cuboid": {"object": {"dims": OBJECT_DIMS, "pose": OBJECT_POSE}}}
FEW = {"num_particles": 100}  # a short test: the plan carries the motion


@pytest.fixture(scope="module")
def planner() -> ReactivePlanner:
    return ReactivePlanner.from_config("franka", WORLD, mpc=FEW)


def _run(planner: ReactivePlanner, steps: int) -> torch.Tensor:
    """Closed loop on an ideal tracker from the retract pose until the goal is held (1 cm,
    0.05 rad, nearly at rest); the measured positions ``[T, D]``. A background plan is waited
    for (the first step asks for it)."""
    start = JointState.from_position(planner.mpc.robot_config.retract_config[None].clone())
    tracker = IdealTracker(start)
    planner.set_goal(Pose.from_list(GOAL))
    positions = [start.position[0]]
    for _ in range(steps):
        result = planner.step(tracker.state)
        if result.plan_pending:
            assert planner.wait_for_plan(120.0)
        state = tracker.step(result.action)
        positions.append(state.position[0])
        held = result.position_error <= 0.008 and result.rotation_error <= 0.04
        if held and float(state.velocity.abs().max()) < 0.05:
            break
    return torch.stack(positions)


def _assert_reached_without_mesh_contact(path: torch.Tensor) -> None:
    """The last of ``path [T, D]`` at the goal (forward kinematics), its spheres dipping into
    the object; the whole path clear by the exact mesh check (a checker of its own)."""
    fk = Kinematics(RobotConfig.load("franka")).forward(path[-1:])
    goal = Pose.from_list(GOAL)
    assert float((fk.ee_position - goal.position).norm()) <= 0.01
    assert float(quat_angle_error(fk.ee_quaternion, goal.quaternion)[0]) <= 0.05
    judge = RobotWorld.from_config("franka", WORLD)
    assert float(judge.collision_distance(path[-1:]).min()) < 0.0  # the spheres dip at the end
    clear, clearance = judge.trajectory_mesh_report(path)
    assert bool(clear), f"mesh contact {float(clearance) * 1e3:.2f} mm"


def test_a_grasp_without_sphere_clear_ik_is_reached_without_mesh_contact(planner):
    start = JointState.from_position(planner.mpc.robot_config.retract_config[None].clone())
    spheres_only = planner.motion_gen.plan_single(start, Pose.from_list(GOAL))
    assert spheres_only.status == MotionGenStatus.IK_FAIL  # the premise
    _assert_reached_without_mesh_contact(_run(planner, 300))


@pytest.mark.parametrize("worker", ["thread", pytest.param("process", marks=pytest.mark.slow)])
def test_a_background_planner_reaches_the_grasp_too(worker):
    planner = ReactivePlanner.from_config(
        "franka", WORLD, background_planning=True, background_worker=worker, mpc=FEW
    )
    try:
        _assert_reached_without_mesh_contact(_run(planner, 300))
        assert planner._plan_band == EXACT_BAND  # told by the plan's spheres
    finally:
        planner.close()


def test_reliefs_are_each_spheres_deepest_contact_over_the_horizon_and_come_back(planner):
    """Per sphere and plan sample: coal's deepest sphere-box penetration over the samples the
    horizon reaches (the plan held at its end), rounded up to RELIEF_STEP; the robot file's
    radii once the plan is dropped."""
    kinematics = planner.mpc.rollout.dynamics_model.kinematics
    radii = Kinematics(RobotConfig.load("franka")).tables.sphere_local[:, 3].clone()
    start = JointState.from_position(planner.mpc.robot_config.retract_config[None].clone())
    planner.set_goal(Pose.from_list(GOAL))
    planner.step(start)  # plans with the band and relieves the spheres
    tracked = planner.mpc.following
    relief = planner._relief.plan_relief(tracked)
    planner._relief.update(tracked)  # (plan_relief gave the radii back to measure)
    spheres = planner.motion_gen.checker.get_world_spheres(tracked.position)
    box = [(OBJECT_POSE, OBJECT_DIMS)]
    enabled = spheres[..., 3] > 0
    distance = coal_sphere_box_distance(spheres.reshape(-1, 4).double().numpy(), box)
    distance = distance.reshape(spheres.shape[:2])
    depth = np.where(enabled.numpy(), np.clip(-distance, 0.0, EXACT_BAND), 0.0)
    reach = math.ceil(float(tracked.offsets[-1]) / tracked.dt) + 1
    held = np.concatenate((depth, np.repeat(depth[-1:], reach - 1, axis=0)))
    expected = np.stack([held[t : t + reach].max(0) for t in range(depth.shape[0])])
    expected = np.ceil(expected / RELIEF_STEP - 1e-6).clip(min=0.0) * RELIEF_STEP
    assert float(expected[-1].max()) > 0.0  # the finger spheres at the goal
    relieved = {kinematics.sphere_link_names[i] for i in np.nonzero(expected.any(0))[0]}
    assert relieved <= {"panda_leftfinger", "panda_rightfinger"}  # the rest keep their radii
    np.testing.assert_allclose(relief.numpy(), expected, atol=1e-5)
    now = relief[min(int(tracked.time / tracked.dt), relief.shape[0] - 1)]
    torch.testing.assert_close(kinematics.tables.sphere_local[:, 3], radii - now)
    planner.set_goal(Pose.from_list(RETRACT))  # a sphere-clear plan: the radii come back
    planner.step(start)
    assert planner._plan_band == 0.0
    torch.testing.assert_close(kinematics.tables.sphere_local[:, 3], radii)


def test_a_banded_plan_runs_at_band_speed_where_its_spheres_dip_and_at_full_speed_elsewhere(
    planner, monkeypatch
):
    """A straight joint-space line sampled ``dt`` apart, its contact set by hand: the re-timed
    samples stay on the line, ``dt`` apart in time, and advance ``BAND_SPEED`` times as far
    per sample where the contact is (and its ramp), as far as before elsewhere."""
    relief = planner._relief
    dt, steps = 0.01, 201
    s = torch.linspace(0.0, 1.0, steps, dtype=torch.float32)[:, None]
    q0 = planner.mpc.robot_config.retract_config.clone()
    line = q0 + s * torch.full_like(q0, 0.2)
    plan = JointState.from_position(line)
    spheres = planner.mpc.rollout.dynamics_model.kinematics.num_spheres

    def contact_from(first: int):
        depth = torch.zeros(steps, spheres)
        depth[first:, 0] = 1e-3
        return lambda position: depth

    monkeypatch.setattr(relief, "depth", contact_from(0))  # in contact all along
    slowed = relief.slowed(plan, dt, BAND_SPEED).position
    step = (line[1] - line[0]).norm()
    advance = (slowed[1:] - slowed[:-1]).norm(dim=-1)
    torch.testing.assert_close(advance[:-1], torch.full_like(advance[:-1], BAND_SPEED * step))
    assert abs(slowed.shape[0] - 1 - (steps - 1) / BAND_SPEED) <= 1
    torch.testing.assert_close(slowed[-1], line[-1])
    monkeypatch.setattr(relief, "depth", contact_from(steps))  # clear all along
    torch.testing.assert_close(relief.slowed(plan, dt, BAND_SPEED).position, line)
    monkeypatch.setattr(relief, "depth", contact_from(150))  # the last quarter
    slowed = relief.slowed(plan, dt, BAND_SPEED).position
    advance = (slowed[1:] - slowed[:-1]).norm(dim=-1)
    full = 150 - 2 * round(SLOW_REACH / dt) - 1  # before the contact's reach and its ramp
    torch.testing.assert_close(advance[:full], step.expand(full))
    tail = advance[-(steps - 150) : -1]
    torch.testing.assert_close(tail, torch.full_like(tail, BAND_SPEED * step))
    # every sample on the line: its offset from q0 is a multiple of the direction
    offsets = slowed - q0
    torch.testing.assert_close(offsets, offsets[:, :1].expand_as(offsets))


def test_a_relief_leaves_every_sphere_a_radius(planner, monkeypatch):
    """Contact as deep as the band everywhere: each relief is the band, or the sphere's radius
    less MIN_RADIUS where that is smaller (no sphere disabled by a negative radius)."""
    start = JointState.from_position(planner.mpc.robot_config.retract_config[None].clone())
    planner.set_goal(Pose.from_list(GOAL))
    planner.step(start)  # a plan to relieve
    relief = planner._relief
    relief.stop()
    radii = planner.mpc.rollout.dynamics_model.kinematics.tables.sphere_local[:, 3].clone()
    tracked = planner.mpc.following
    monkeypatch.setattr(
        relief, "depth", lambda position: torch.full((position.shape[0], radii.shape[0]), 0.015)
    )
    expected = torch.minimum(torch.full_like(radii, 0.015), (radii - MIN_RADIUS).clamp(min=0.0))
    got = relief.plan_relief(tracked)
    torch.testing.assert_close(got, expected.expand_as(got))
    enabled = radii > 0.0  # (reserved spheres with nothing held: radius -1, no relief)
    assert bool((radii - got[0] >= MIN_RADIUS - 1e-7)[enabled].all())
    assert not bool(got[:, ~enabled].any())


def test_replans_to_a_goal_that_needed_the_band_plan_with_it_at_once(planner, monkeypatch):
    """The bands MotionGen plans with, read at each call: the spheres alone, then the band for
    a new goal; the band alone for a replan to it; both again after a new goal."""
    motion_gen = planner.motion_gen
    bands, plan_single = [], motion_gen.plan_single

    def recorded(*args, **kwargs):
        bands.append(motion_gen.exact_band)
        return plan_single(*args, **kwargs)

    monkeypatch.setattr(motion_gen, "plan_single", recorded)
    position = planner.mpc.robot_config.retract_config[None].clone()
    planner.set_goal(Pose.from_list(GOAL))
    planner.step(JointState.from_position(position))
    assert bands == [0.0, EXACT_BAND]
    planner._replan(position, "retry")
    assert bands == [0.0, EXACT_BAND, EXACT_BAND]
    planner.set_goal(Pose.from_list(GOAL))
    planner.step(JointState.from_position(position))
    assert bands == [0.0, EXACT_BAND, EXACT_BAND, 0.0, EXACT_BAND]
