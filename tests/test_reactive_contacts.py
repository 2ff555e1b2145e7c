"""The contacts of reactive control in MotionBenchMaker scenes (issue #30), each as a small case
judged independently:

- a command 1-2 ulp past a joint limit (the MPC's own numbers kept where they equal the limited
  state up to rounding, table_pick_0_0001 moved: joint 5 at -2.8973 + 2.4e-7) is written on the
  limit, judged by strict comparison with the limits; a real overshoot is not snapped (its
  braking step by hand in float64);
- a followed plan's clock waits for a robot that falls behind and the collision margin capped
  at the plan's clearance widens to the follow margin off the plan (table_under_pick_0_0001:
  0.25 rad behind a fast stretch, the corner cut 12 mm into the table under a 0.5 mm margin):
  the rule by hand on a straight plan, and a stuck robot under a real MpcSolver whose plan
  passes 3 mm over a block (the clearance by the world's own analytic box distance);
- ``cost.update_weight`` between steps while following lasts (the next step wrote the task's
  weight back over it), and a narrow margin scales the collision weight and the tracking
  position weight by the same gain (by hand), the cost of probe spheres checked against the
  smooth hinge on the world kernel's distances;
- the moved variant's cube placement (benchmarks/reactive_mbm.py) measures its clearances by
  the same distance as the world's box kernel.
"""

from __future__ import annotations

import gc
import importlib.util
import math
import sys
from pathlib import Path

import pytest
import torch

from curobo_lite.geom import WorldCollision, WorldConfig
from curobo_lite.kernels import command_kernels
from curobo_lite.robot import RobotConfig
from curobo_lite.types import JointState, TensorDeviceType
from curobo_lite.wrap import MpcSolver, RobotWorld
from curobo_lite.wrap.mpc.tracking import FEEDBACK_REACH, TrackedPlan


def _franka_bounds(dtype: torch.dtype) -> torch.Tensor:
    limits = RobotConfig.load("franka").joint_limits
    return torch.stack((limits.position, limits.velocity, limits.acceleration)).to(dtype)


def _limited(start, command, bounds, dt=0.02):
    rows, dof = start[0].shape
    out = tuple(torch.empty(rows, dof, dtype=bounds.dtype) for _ in range(4))
    flags = torch.empty(rows, 2, dtype=bounds.dtype)
    command_kernels.limited_command(start, command, bounds.contiguous(), dt, out, flags)
    return out, flags


def test_a_command_past_a_joint_limit_by_rounding_is_written_on_the_limit():
    bounds = _franka_bounds(torch.float32)
    low, high = bounds[0, 0], bounds[0, 1]
    rows = 4000
    generator = torch.Generator().manual_seed(0)
    # at rest on a limit (odd joints on the high one), a command 0-2e-6 rad past it: equal to
    # the limited state (the limit) up to the kernel's rounding tolerance, so kept as given
    at_limit = low.expand(rows, -1).clone()
    at_limit[:, 1::2] = high[1::2]
    outward = torch.where(at_limit == high, 1.0, -1.0)
    past = at_limit + outward * 2e-6 * torch.rand(rows, 7, generator=generator)
    zeros = torch.zeros(rows, 7)
    assert bool(((past > high) | (past < low)).any())  # the case as built
    out, flags = _limited((at_limit, zeros, zeros), (past, zeros, zeros, None), bounds)
    assert bool(((out[0] >= low) & (out[0] <= high)).all())
    assert float(flags[:, 1].max()) == 0.0  # no violation reported either
    inside = (past >= low) & (past <= high)
    assert torch.equal(out[0][inside], past[inside])  # the command's own numbers elsewhere


def test_a_real_overshoot_is_not_snapped_onto_the_limit():
    bounds = _franka_bounds(torch.float64)
    low, high, a_low = bounds[0, 0], bounds[0, 1], bounds[2, 0]
    dt = 0.02
    # 1 cm past the high limits: at rest (it stays there), and moving out at twice what the
    # acceleration limit takes away in a step (it brakes at the limit): by hand
    x0 = (high + 0.01)[None].expand(2, -1).clone()
    v0 = torch.stack((torch.zeros_like(high), -2.0 * a_low * dt))
    zeros = torch.zeros_like(x0)
    out, flags = _limited((x0, v0, zeros), (x0 + v0 * dt, v0, zeros, None), bounds, dt)
    velocity = torch.stack((torch.zeros_like(high), v0[1] + a_low * dt))
    torch.testing.assert_close(out[1], velocity, rtol=0.0, atol=1e-9)
    torch.testing.assert_close(out[0], x0 + velocity * dt, rtol=0.0, atol=1e-9)
    assert bool((out[0] >= high + 0.01).all()) and bool((flags[:, 1] >= 0.01 - 1e-12).all())
    assert bool((out[0] >= low).all())


def _straight_plan(speed: float, steps: int = 101, dt: float = 0.01) -> TrackedPlan:
    """A plan along joint 0 at ``speed`` rad/s (float64)."""
    f64 = TensorDeviceType(dtype=torch.float64)
    position = torch.zeros(steps, 7, dtype=torch.float64)
    position[:, 0] = speed * dt * torch.arange(steps, dtype=torch.float64)
    plan = JointState.from_position(position)
    traj_dt = torch.full((30,), 0.02, dtype=torch.float64)
    return TrackedPlan.from_plan(plan, dt, 7, f64, traj_dt)


def test_the_plan_clock_waits_and_the_margin_widens_as_the_robot_strays():
    tracked = _straight_plan(speed=1.0)
    tracked.margins = [0.002] * tracked.position.shape[0]
    tracked.off_plan_margin = 0.01
    low, high = FEEDBACK_REACH
    for off, rate in ((0.0, 1.0), (low, 1.0), ((low + high) / 2, 0.5), (high, 0.0), (0.3, 0.0)):
        tracked.time = 0.2
        here = torch.zeros(1, 7, dtype=torch.float64)
        here[0, 0] = 0.2  # the plan's sample of now, then moved `off` across the plan
        here[0, 3] = off
        tracked.observe(here)
        assert tracked.strayed_now == pytest.approx(off, abs=1e-9)
        wanted = 0.002 + (0.01 - 0.002) * (1.0 - rate)
        assert tracked.margin() == pytest.approx(math.floor(wanted / 5e-4 + 1e-9) * 5e-4)
        tracked.advance(0.02)
        assert tracked.time == pytest.approx(0.2 + 0.02 * rate)
    tracked.margins = None
    assert tracked.margin() is None
    # a plan wider than the off-plan margin keeps its own
    tracked.margins, tracked.off_plan_margin = [0.02] * tracked.position.shape[0], 0.01
    assert tracked.margin() == pytest.approx(0.02)


def _block_under_the_hand(mpc: MpcSolver, gap: float) -> tuple[torch.Tensor, RobotWorld]:
    """A wide block ``gap`` m under the retract hand's lowest sphere, in ``mpc``'s world and in
    a checker's; and a plan ``[101, D]`` at 1 rad/s that spins the last joint (the hand turns
    about its vertical axis over the block)."""
    retract = mpc.robot_config.retract_config.clone()
    checker = RobotWorld.from_config("franka", None)
    spheres = checker.get_world_spheres(retract[None])[0]
    hand = checker.kinematics.forward(retract[None]).ee_position[0]
    near = ((spheres[:, :2] - hand[:2]).norm(dim=-1) < 0.12) & (spheres[:, 3] > 0)
    top = float((spheres[near, 2] - spheres[near, 3]).min()) - gap
    pose = [float(hand[0]), float(hand[1]), top - 0.05, 1, 0, 0, 0]
    world = WorldConfig.from_dict({"cuboid": {"block": {"dims": [0.3, 0.3, 0.1], "pose": pose}}})
    mpc.update_world(world)
    checker.update_world(world)
    position = retract[None].repeat(101, 1)
    position[:, 6] += 0.01 * torch.arange(101, dtype=position.dtype)
    return position, checker


def test_a_stuck_robot_holds_the_plan_clock_and_gets_the_follow_margin_back():
    mpc = MpcSolver.from_config(robot="franka", num_particles=50)
    follow_margin = mpc.config.follow_activation_distance
    cost = mpc.rollout.costs["primitive_collision_cost"]
    position, checker = _block_under_the_hand(mpc, 0.003)
    clearance = checker.collision_distance(position)
    assert float(clearance.max()) < 0.006 and float(clearance.min()) > 0.0  # the case as built
    mpc.update_goal(JointState.from_position(position[-1:].clone()))
    mpc.follow(JointState.from_position(position), 0.01)
    assert cost.config.activation_distance < 0.006  # capped at the plan's clearance
    stuck = JointState.from_position(position[:1].clone())
    for _ in range(40):  # the robot never moves: 0.8 s of plan time before the change
        mpc.step(stuck)
    # the clock stops where the plan's sample (1 rad/s) is FEEDBACK_REACH[1] rad away (at
    # most a step past it)
    assert FEEDBACK_REACH[0] <= mpc.following.time <= FEEDBACK_REACH[1] + 0.02 + 1e-9
    assert cost.config.activation_distance == pytest.approx(follow_margin)


def test_update_weight_while_following_lasts_and_the_narrow_margin_scales_both_weights():
    mpc = MpcSolver.from_config(robot="franka", num_particles=50)
    cost = mpc.rollout.costs["primitive_collision_cost"]
    tracking = mpc.rollout.costs["tracking_cost"]
    task_margin = cost.config.activation_distance
    task_tracking = tracking.config.position_weight
    position, checker = _block_under_the_hand(mpc, 0.003)
    mpc.update_goal(JointState.from_position(position[-1:].clone()))
    mpc.follow(JointState.from_position(position), 0.01)
    # a plan 2-4 mm over the block: the narrow margin's gain on both weights, by hand
    gain = min(task_margin / cost.config.activation_distance, 8.0)
    assert gain > 1.0 and tracking.config.position_weight == pytest.approx(task_tracking * gain)
    state = JointState.from_position(position[:1].clone())
    for step in range(12):
        if step in (3, 7):  # a new configuration object each time (dataclasses.replace)
            cost.update_weight(weight=1000.0 * step)
            gc.collect()  # the replaced one is gone: nothing may still read it
        if step == 5:
            tracking.update_weight(position_weight=3000.0)
        result = mpc.step(state)
        state = JointState(
            result.action.position, result.action.velocity, result.action.acceleration
        )
    assert all(math.isfinite(v) for v in result.metrics.values())
    margin = cost.config.activation_distance
    gain = min(task_margin / margin, 8.0)
    assert cost.config.weight == pytest.approx(7000.0 * gain)  # the user's weight, scaled
    assert tracking.config.position_weight == pytest.approx(3000.0 * gain)
    # the cost of probe spheres against the block's top (clearance by the checker's kernel)
    probe = checker.get_world_spheres(position[:1])[0]
    probe = probe[probe[:, 3] > 0][None, None]
    probe[..., 2] -= 0.004  # the lowest 1 mm into the block, others within the margin
    distance = checker.world_collision.sphere_distance(probe).distance
    hinge = torch.clamp(margin - distance, min=0.0)
    hinge = torch.where(hinge < margin, hinge * hinge / (2.0 * margin), hinge - 0.5 * margin)
    expected = float(7000.0 * gain * hinge.sum())
    assert float(distance.min()) < 0.0 and expected > 0.0  # the probe as built
    assert float(cost(probe.to(**mpc.tensor_args.as_kwargs()))) == pytest.approx(expected, rel=1e-3)
    mpc.follow(None)  # the user's weight is the task's now
    assert cost.config.weight == pytest.approx(7000.0)
    assert cost.config.activation_distance == pytest.approx(task_margin)
    assert tracking.config.position_weight == pytest.approx(3000.0)


def _load_reactive_mbm():
    benchmarks = Path(__file__).resolve().parents[1] / "benchmarks"
    sys.path.insert(0, str(benchmarks))
    try:
        spec = importlib.util.spec_from_file_location(
            "reactive_mbm_benchmark", benchmarks / "reactive_mbm.py"
        )
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(benchmarks))
    return module


def test_the_moved_cube_placement_distance_matches_the_world_box_distance():
    bench = _load_reactive_mbm()
    generator = torch.Generator().manual_seed(3)
    centre = [0.4, -0.1, 0.5]
    cube = {"dims": [bench.CUBE] * 3, "pose": [*centre, 1.0, 0.0, 0.0, 0.0]}
    world = WorldCollision(WorldConfig.from_dict({"cuboid": {"cube": cube}}))
    # spheres inside, touching and outside the cube (faces, edges, corners)
    spheres = torch.cat(
        (
            torch.tensor(centre) + (torch.rand(200, 3, generator=generator) - 0.5) * 0.16,
            0.005 + 0.04 * torch.rand(200, 1, generator=generator),
        ),
        dim=1,
    )
    reference = world.sphere_distance(spheres[None]).distance[0]
    mine = bench.cube_distance(torch.tensor(centre), spheres)
    assert float(reference.min()) < -0.01 and float(reference.max()) > 0.02  # both sides
    torch.testing.assert_close(mine, reference, rtol=0.0, atol=1e-5)
