"""The fast geometric stage of MotionGen: batched segment checks, the lazy roadmap, the timing
of its paths, and the damped least-squares IK phase, each against an independent reference
(coal's sphere-box distances on densely resampled paths, finite differences, forward
kinematics)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch
from collision_reference import coal_sphere_box_distance

from curobo_lite.robot import RobotConfig
from curobo_lite.types import Pose, quat_angle_error
from curobo_lite.wrap import IKSolver, RobotWorld
from curobo_lite.wrap.motion.path_timing import (
    PEAK_ACCELERATION,
    PEAK_JERK,
    PEAK_VELOCITY,
    segment_durations,
    time_polyline,
)
from curobo_lite.wrap.motion.roadmap import RoadmapConfig, RoadmapPlanner

# a box straight between the retract pose's hand and a goal to its right (test_motion_gen's)
WALL = {"pose": [0.42, -0.16, 0.45, 1.0, 0.0, 0.0, 0.0], "dims": [0.25, 0.03, 0.3]}
GOAL = [0.42, -0.35, 0.40, 0.0, 1.0, 0.0, 0.0]
BOXES = [(WALL["pose"], WALL["dims"])]


@pytest.fixture(scope="module")
def checker() -> RobotWorld:
    return RobotWorld.from_config("franka", {"cuboid": {"wall": WALL}})


def _dense(path: torch.Tensor, step: float = 0.005) -> torch.Tensor:
    """Points every ``step`` rad (largest joint step) along the polyline ``path [K, D]``."""
    pieces = [path[:1]]
    for a, b in zip(path[:-1], path[1:]):
        n = max(1, math.ceil(float((b - a).abs().max()) / step))
        t = torch.linspace(0.0, 1.0, n + 1, dtype=path.dtype)[1:, None]
        pieces.append(a + t * (b - a))
    return torch.cat(pieces)


def _coal_clearance(checker: RobotWorld, q: torch.Tensor) -> float:
    """Smallest coal distance of the robot's world spheres at ``q [N, D]`` to the wall."""
    spheres = checker.get_world_spheres(q).detach().reshape(-1, 4).double().numpy()
    spheres = spheres[spheres[:, 3] > 0.0]
    return float(coal_sphere_box_distance(spheres, BOXES).min())


def _goal_config(checker: RobotWorld) -> torch.Tensor:
    """A valid IK solution of ``GOAL`` that the straight segment from the retract
    configuration cannot reach (it crosses the wall)."""
    ik = IKSolver.from_config("franka", checker.world_collision).solve_single(Pose.from_list(GOAL))
    start = checker.robot_config.retract_config
    for q in ik.distinct_solutions[0]:
        if not bool(checker.validate_segments(start[None], q[None])[0]):
            return q
    raise AssertionError("every IK solution is in straight reach")


def test_validate_segments_agrees_with_validating_each_sample(checker):
    start = checker.robot_config.retract_config
    goal = _goal_config(checker)
    generator = torch.Generator().manual_seed(3)
    low, high = checker.robot_config.joint_limits.position
    ends = low + (high - low) * torch.rand(12, 7, generator=generator)
    q_from = torch.cat((start[None], start[None], ends[:6]))
    q_to = torch.cat((goal[None], start[None] + 0.01, ends[6:]))
    q_to = torch.cat((q_to, ends[:1]))
    q_from = torch.cat((q_from, ends[:1] + 1e-4))
    resolution = 0.05
    ok = checker.validate_segments(q_from, q_to, resolution)
    for e in range(q_from.shape[0]):
        steps = max(1, math.ceil(float((q_to[e] - q_from[e]).abs().max()) / resolution))
        t = torch.arange(1, steps + 1, dtype=q_from.dtype)[:, None] / steps
        samples = q_from[e] + t * (q_to[e] - q_from[e])
        assert bool(ok[e]) == all(bool(checker.validate(s[None])[0]) for s in samples), e
    assert not bool(ok[0])  # straight through the wall
    assert bool(ok[1])


def test_roadmap_path_goes_around_the_wall_and_is_clear_by_coal(checker):
    start = checker.robot_config.retract_config
    goal = _goal_config(checker)
    assert not bool(checker.validate_segments(start[None], goal[None])[0])
    planner = RoadmapPlanner(checker, RoadmapConfig(approach_distance=0.0, time_limit=20.0))
    result = planner.plan(start, goal)
    assert result.success
    path = result.path
    assert torch.equal(path[0], start) and torch.equal(path[-1], goal)
    assert path.shape[0] >= 3  # it had to turn
    dense = _dense(path)
    assert bool(checker.validate(dense).all())
    assert _coal_clearance(checker, dense) >= -1e-5
    # the same problem gives the same path (the sampler is seeded per call)
    again = planner.plan(start, goal)
    assert torch.equal(again.path, path)


def test_roadmap_reports_which_of_several_goals_it_reached(checker):
    """Goals: one across the joint range, one next to the start; the path ends at the
    nearer one, and ``goal_index`` names it."""
    start = checker.robot_config.retract_config
    far = start.clone()
    far[0] = -2.0
    near = start.clone()
    near[0] = 0.15
    assert bool(checker.validate(torch.stack((far, near))).all())
    planner = RoadmapPlanner(checker, RoadmapConfig(approach_distance=0.0))
    for goals, expected in ((torch.stack((far, near)), 1), (torch.stack((near, far)), 0)):
        result = planner.plan(start, goals)
        assert result.success and result.goal_index == expected
        assert torch.equal(result.path[-1], goals[expected])
        assert bool(checker.validate(_dense(result.path)).all())


def test_segment_check_vetoes_segments_and_reports_clearance(checker):
    """A second judge that refuses every segment whose end effector passes above z = 0.6 m:
    the path obeys it (checked densely), and the clearance it reports is the smallest one
    the judge returned for the path's segments."""
    start = checker.robot_config.retract_config
    goal = _goal_config(checker)
    ceiling = 0.6
    seen: list[tuple[torch.Tensor, torch.Tensor, float]] = []

    def judge(q_from: torch.Tensor, q_to: torch.Tensor):
        t = torch.linspace(0.0, 1.0, 41)[None, :, None]
        z = checker.kinematics.forward(q_from[:, None] + t * (q_to - q_from)[:, None])
        height = z.ee_position[..., 2].amax(-1)
        clearance = ceiling - height
        for a, b, c in zip(q_from, q_to, clearance.tolist()):
            seen.append((a, b, c))
        return clearance >= 0.0, clearance

    planner = RoadmapPlanner(checker, RoadmapConfig(approach_distance=0.0, time_limit=30.0))
    result = planner.plan(start, goal, judge)
    assert result.success
    heights = checker.kinematics.forward(_dense(result.path, 0.002)).ee_position[:, 2]
    assert float(heights.max()) <= ceiling + 1e-3
    reported = [
        c
        for a, b in zip(result.path[:-1], result.path[1:])
        for qa, qb, c in seen
        if torch.equal(qa, a) and torch.equal(qb, b)
    ]
    assert reported and result.clearance == pytest.approx(min(reported))


@pytest.mark.parametrize("variants", [0, 8])
def test_approach_chain_backs_the_hand_off_along_its_axis(checker, variants):
    goal = _goal_config(checker)
    config = RoadmapConfig(approach_distance=0.12, approach_step=0.03, chain_variants=variants)
    planner = RoadmapPlanner(checker, config)
    (chain,) = planner.approach_chains(goal[None])
    assert torch.equal(chain[0], goal) and chain.shape[0] >= 2
    state = checker.kinematics.forward(chain)
    z_axis = torch.tensor([0.0, 0.0, 1.0])
    from curobo_lite.types.math import quat_rotate

    axis = quat_rotate(state.ee_quaternion[:1], z_axis[None])[0]
    for k in range(1, chain.shape[0]):
        expected = state.ee_position[0] - 0.03 * k * axis
        assert float((state.ee_position[k] - expected).norm()) < 2e-3
        assert (
            float(quat_angle_error(state.ee_quaternion[k : k + 1], state.ee_quaternion[:1])) < 0.01
        )
    assert bool(checker.validate(_dense(chain)).all())


def test_escape_chains_leave_a_goal_whose_straight_retreat_is_blocked(checker):
    """A small box just behind the hand (as close as leaves the goal valid) cuts the chain
    along the hand's axis; the escape chains back the hand off along its other directions
    (:data:`~curobo_lite.wrap.motion.roadmap._ESCAPES`), orientation held, and each is clear of
    both boxes by coal on densely resampled segments."""
    from curobo_lite.types.math import quat_rotate
    from curobo_lite.wrap.motion.roadmap import _ESCAPES

    goal = _goal_config(checker)
    state = checker.kinematics.forward(goal[None])
    axis = quat_rotate(state.ee_quaternion, torch.tensor([[0.0, 0.0, 1.0]]))[0]
    config = RoadmapConfig(approach_distance=0.12, approach_step=0.03)
    for distance in np.arange(0.10, 0.30, 0.01):
        centre = state.ee_position[0] - float(distance) * axis
        blocker = {"pose": [*centre.tolist(), 1.0, 0.0, 0.0, 0.0], "dims": [0.05, 0.05, 0.05]}
        world = RobotWorld.from_config("franka", {"cuboid": {"wall": WALL, "blocker": blocker}})
        if bool(world.validate(goal[None])[0]):
            break
    planner = RoadmapPlanner(world, config)
    (chain,) = planner.approach_chains(goal[None])
    assert chain.shape[0] < 5  # the straight retreat is cut short
    escapes = planner.escape_chains(goal[None], [chain])
    assert escapes and all(g == 0 and torch.equal(c[0], goal) for g, c in escapes)
    boxes = BOXES + [(blocker["pose"], blocker["dims"])]
    moves = torch.tensor(_ESCAPES)
    moves = quat_rotate(
        state.ee_quaternion.expand(len(moves), 4), moves / moves.norm(dim=-1)[:, None]
    )
    for _, escape in escapes:
        hand = checker.kinematics.forward(escape)
        step = hand.ee_position[1:] - hand.ee_position[:-1]  # [L - 1, 3], 3 cm each
        direction = step[0] / step[0].norm()
        assert float((moves @ direction).max()) > 0.999  # one of the escape directions
        assert float((step - 0.03 * direction).norm(dim=-1).max()) < 2e-3
        rotation = quat_angle_error(
            hand.ee_quaternion, state.ee_quaternion.expand_as(hand.ee_quaternion)
        )
        assert float(rotation.max()) < 0.01
        spheres = world.get_world_spheres(_dense(escape)).reshape(-1, 4).double().numpy()
        spheres = spheres[spheres[:, 3] > 0.0]
        assert float(coal_sphere_box_distance(spheres, boxes).min()) >= -1e-4


# --- timing ---------------------------------------------------------------------------------


def test_time_polyline_stays_on_the_path_and_within_the_limits():
    limits = RobotConfig.load("franka").joint_limits
    path = torch.tensor(
        [[0.0] * 7, [0.8, -0.3, 0.2, -1.0, 0.0, 0.5, 0.1], [0.9, -0.3, 0.2, -1.0, 0.4, 0.5, 0.1]]
    )
    dt = 0.01
    plan = time_polyline(path, limits, dt)
    q = plan.position
    assert torch.equal(q[0], path[0]) and torch.allclose(q[-1], path[-1])
    # every sample on one of the segments: distance to the nearest segment
    a, b = path[:-1], path[1:]
    t = (((q[:, None] - a) * (b - a)).sum(-1) / ((b - a) ** 2).sum(-1)).clamp(0, 1)
    nearest = (a + t[..., None] * (b - a) - q[:, None]).norm(dim=-1).amin(-1)
    assert float(nearest.max()) < 1e-5
    # the reported derivatives are those of the positions (central differences)
    velocity = (q[2:] - q[:-2]) / (2 * dt)
    assert torch.allclose(plan.velocity[1:-1], velocity, atol=0.02 * float(velocity.abs().max()))
    acceleration = (q[2:] - 2 * q[1:-1] + q[:-2]) / dt**2
    # 6 %: the second difference straddles the jerk's jump at a waypoint
    assert torch.allclose(
        plan.acceleration[1:-1], acceleration, atol=0.06 * float(acceleration.abs().max())
    )
    # within the limits by finite differences, and one joint at a limit: the shortest timing
    ratio = 0.0
    for values, bound in (
        (plan.velocity, limits.velocity[1]),
        (plan.acceleration, limits.acceleration[1]),
        (plan.jerk, limits.jerk[1]),
    ):
        assert bool((values.abs() <= bound * (1 + 1e-4)).all())
        ratio = max(ratio, float((values.abs() / bound).max()))
    assert ratio > 0.9
    # the segment durations: the closed-form peaks, rounded up to whole steps
    durations = segment_durations(path, limits, dt)
    delta = (path[1:] - path[:-1]).abs()
    needed = torch.stack(
        (
            PEAK_VELOCITY * delta / limits.velocity[1],
            (PEAK_ACCELERATION * delta / limits.acceleration[1]).sqrt(),
            (PEAK_JERK * delta / limits.jerk[1]) ** (1 / 3),
        )
    ).amax(dim=(0, 2))
    assert bool((durations >= needed - 1e-9).all()) and bool((durations < needed + dt).all())
    assert q.shape[0] == round(float(durations.sum()) / dt) + 1


def test_time_polyline_rejects_bad_input():
    limits = RobotConfig.load("franka").joint_limits
    with pytest.raises(ValueError, match="path"):
        time_polyline(torch.zeros(7), limits, 0.01)
    with pytest.raises(ValueError, match="interpolation_dt"):
        time_polyline(torch.zeros(2, 7), limits, 0.0)
    single = time_polyline(torch.ones(3, 7), limits, 0.01)  # no motion: one sample at rest
    assert single.position.shape == (1, 7) and float(single.velocity.abs().max()) == 0.0


# --- the IK's damped least-squares phase -------------------------------------------------------


def test_dls_phase_gives_precise_collision_free_solutions(checker):
    """With ``dls_iterations`` the IK reaches reachable poses (checked by forward kinematics)
    with collision-free solutions, as the L-BFGS-only solve does, in fewer iterations."""
    generator = torch.Generator().manual_seed(1)
    low, high = checker.robot_config.joint_limits.position
    q = low + (high - low) * torch.rand(64, 7, generator=generator)
    q = q[checker.validate(q)][:6]
    state = checker.kinematics.forward(q)
    goal = Pose(state.ee_position, state.ee_quaternion)
    world = checker.world_collision
    fast = IKSolver.from_config("franka", world, dls_iterations=16, stop_after=1)
    slow = IKSolver.from_config("franka", world, stop_after=1)
    fast_result = fast.solve_batch(goal)
    slow_result = slow.solve_batch(goal)
    assert int(fast_result.success.sum()) >= int(slow_result.success.sum()) - 1
    ok = fast_result.success
    reached = checker.kinematics.forward(fast_result.solution[ok])
    assert float((reached.ee_position - goal.position[ok]).norm(dim=-1).max()) <= 0.005
    errors = quat_angle_error(reached.ee_quaternion, goal.quaternion[ok])
    assert float(errors.max()) <= 0.05
    assert bool(checker.validate(fast_result.solution[ok]).all())
    assert fast_result.iterations <= slow_result.iterations
    assert np.isfinite(fast_result.solve_time)


# --- the exact band: the meshes judge shallow sphere contacts --------------------------------


def _cage_start_only_the_spheres_refuse() -> tuple[RobotWorld, torch.Tensor]:
    """A checker in the first MBM cage world whose start ``[D]`` the spheres refuse and the
    meshes accept (the checker is left in that problem's world)."""
    import yaml

    from curobo_lite.scenes import MbmProblem

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "data" / "mbm" / "cage.yml"
    problems = [MbmProblem.from_dict(p) for p in yaml.safe_load(path.read_text())["problems"]]
    world = RobotWorld.from_config("franka", problems[0].world)
    for problem in problems:
        world.update_world(problem.world)
        q = torch.tensor(problem.start)[None]
        if not bool(world.validate(q)[0]) and bool(world.validate_mesh(q)[0]):
            return world, q[0]
    raise AssertionError("no cage start that only the spheres refuse")


def test_exact_band_judges_shallow_sphere_contacts_on_the_meshes():
    """MotionBenchMaker's cage with the robot at its start: the spheres of the wrist reach
    into the cage's front bar, the meshes do not. With ``exact_band`` the configuration is
    judged by the meshes (coal); deeper contacts and clear configurations are unchanged, as
    an independent composition of the sphere distance and the mesh check says."""
    world, found = _cage_start_only_the_spheres_refuse()
    found = found[None]
    generator = torch.Generator().manual_seed(0)
    q = torch.cat((found, found + 0.08 * torch.randn(63, 7, generator=generator)))
    band = 0.015
    spheres_ok = world.validate(q)
    depth = world.collision_distance(q, max_distance=band)
    shallow = ~spheres_ok & world.in_limits(q) & (world.self_collision_distance(q) >= 0.0)
    shallow &= depth >= -band
    expected = spheres_ok.clone()
    expected[shallow] = world.validate_mesh(q[shallow])
    judged = world.validate(q, exact_band=band)
    assert torch.equal(judged, expected)
    assert bool(judged[0]) and not bool(spheres_ok[0])
    assert bool((judged & ~spheres_ok).any()) and bool((~judged).any())
    # segments: the same judgement at every sample
    ends = q[1:9]
    ok = world.validate_segments(found.expand(8, 7), ends, 0.05, exact_band=band)
    for e in range(8):
        n = max(1, math.ceil(float((ends[e] - found[0]).abs().max()) / 0.05))
        t = torch.arange(1, n + 1, dtype=q.dtype)[:, None] / n
        samples = found + t * (ends[e] - found)
        assert bool(ok[e]) == bool(world.validate(samples, exact_band=band).all())


def test_segments_in_the_exact_band_agree_with_a_dense_per_sample_reference():
    """validate_segments with ``exact_band`` asks the meshes only about the samples the
    spheres are unsure of, on segments that no sample fails for sure, each segment's deepest
    such sample first. Its verdicts equal an independent per-sample composition (spheres
    clear, or in the band, free of self-contact and clear by coal's mesh distance), on 48
    segments around a cage start that only the spheres refuse: some pass only thanks to the
    meshes, some fail only on the meshes, some fail on the spheres alone."""
    world, found = _cage_start_only_the_spheres_refuse()
    band, resolution = 0.015, 0.05
    generator = torch.Generator().manual_seed(1)
    ends = found + 0.25 * torch.randn(48, 7, generator=generator)
    ok = world.validate_segments(found.expand(48, 7), ends, resolution, exact_band=band)
    expected, by_spheres, deep, meshes_decide = [], [], [], []
    for e in range(48):
        n = max(1, math.ceil(float((ends[e] - found).abs().max()) / resolution))
        t = torch.arange(1, n + 1, dtype=ends.dtype)[:, None] / n
        samples = found + t * (ends[e] - found)
        spheres_ok = (world.collision_distance(samples, max_distance=band) >= 0.0) & (
            world.self_collision_distance(samples) >= 0.0
        )
        spheres_ok &= world.in_limits(samples)
        depth = world.collision_distance(samples, max_distance=band)
        shallow = ~spheres_ok & world.in_limits(samples) & (depth >= -band)
        shallow &= world.self_collision_distance(samples) >= 0.0
        sample_ok = spheres_ok.clone()
        if bool(shallow.any()):
            mesh = torch.as_tensor(world.mesh_distance(samples[shallow]) >= 0.0)
            sample_ok[shallow] = mesh
        expected.append(bool(sample_ok.all()))
        by_spheres.append(bool(spheres_ok.all()))
        deep.append(bool((~spheres_ok & ~shallow).any()))
        if bool(shallow.any()) and bool((spheres_ok | shallow).all()):
            meshes_decide.append(e)
    expected_t = torch.tensor(expected)
    assert torch.equal(ok, expected_t)
    spheres_t = torch.tensor(by_spheres)
    assert bool((expected_t & ~spheres_t).any()), "no segment passes thanks to the meshes"
    assert not all(expected[e] for e in meshes_decide), "none fails only on the meshes"
    assert any(deep), "none fails on the spheres alone"


# --- narrow passages: MotionBenchMaker's cage --------------------------------------------------

CAGE = Path(__file__).resolve().parents[1] / "benchmarks" / "data" / "mbm" / "cage.yml"


@pytest.fixture(scope="module")
def cage():
    """The first cage problem (a cube in the cage, grasped from the front with the hand
    level, MBM's query: the hand reaches in under the lower front bar, the forearm over it),
    its checker with the exact band MotionGen uses, and its start and stored goal
    configuration."""
    import yaml

    from curobo_lite.scenes import MbmProblem

    problem = MbmProblem.from_dict(yaml.safe_load(CAGE.read_text())["problems"][0])
    cage_checker = RobotWorld.from_config("franka", problem.world)
    start = torch.tensor(problem.start, dtype=torch.float32)
    goal = torch.tensor(problem.goal_config, dtype=torch.float32)
    return cage_checker, start, goal


def _segment_distance(points: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distances of ``points [N, 3]`` to the segment ``a -> b`` (closed form)."""
    ab = b - a
    t = np.clip((points - a) @ ab / (ab @ ab), 0.0, 1.0)
    return np.linalg.norm(points - (a + t[:, None] * ab), axis=1)


def test_corridor_samples_follow_the_hand_from_the_goal_to_the_start(cage):
    cage_checker, start, goal = cage
    planner = RoadmapPlanner(cage_checker, RoadmapConfig())
    generator = torch.Generator().manual_seed(0)
    q = planner._corridor(512, start, goal[None], generator)
    low, high = cage_checker.robot_config.joint_limits.position
    assert bool(((q >= low) & (q <= high)).all())
    fk = cage_checker.kinematics.forward(torch.cat((start[None], goal[None], q)))
    points = fk.ee_position.double().numpy()
    near = _segment_distance(points[2:], points[1], points[0])
    # uniform joint samples, for comparison: their hands are spread over the arm's reach
    uniform = low + (high - low) * torch.rand(512, 7, generator=generator)
    spread = cage_checker.kinematics.forward(uniform).ee_position.double().numpy()
    far = _segment_distance(spread, points[1], points[0])
    assert np.median(near) < 0.2 and np.mean(near < 0.35) > 0.9
    assert np.median(far) > 2.0 * np.median(near)


def test_goal_region_samples_back_the_hand_off_and_turn_it_a_little(checker):
    """The goal-region samples put the hand behind the goal's (its own z <= 0, up to the
    radius) and turned by a few tenths of a radian, by forward kinematics; their postures
    stay near the goal's."""
    from curobo_lite.types.math import quat_conjugate, quat_rotate
    from curobo_lite.wrap.motion.roadmap import _REGION_RADIUS

    goal = _goal_config(checker)
    planner = RoadmapPlanner(checker, RoadmapConfig())
    q = planner._goal_region(256, goal[None], torch.Generator().manual_seed(0))
    low, high = checker.robot_config.joint_limits.position
    assert q.shape == (256, 7) and bool(((q >= low) & (q <= high)).all())
    fk = checker.kinematics.forward(torch.cat((goal[None], q)))
    inverse = quat_conjugate(fk.ee_quaternion[:1]).expand(256, 4)
    offset = quat_rotate(inverse, fk.ee_position[1:] - fk.ee_position[:1])  # the goal's frame
    reached = (offset.norm(dim=-1) <= _REGION_RADIUS + 0.02) & (offset[:, 2] <= 0.01)
    assert float(reached.float().mean()) > 0.9
    turn = quat_angle_error(fk.ee_quaternion[1:], fk.ee_quaternion[:1].expand(256, 4))
    assert float(turn.median()) < 0.8 and float(turn.median()) > 0.1
    assert float((q - goal).abs().amax(-1).median()) < 1.0


def _mesh_segments(checker: RobotWorld, step: float = 0.05):
    """A segment check on the collision meshes (coal, swept): ``(ok [E], clearance [E])``."""

    def check(q_from: torch.Tensor, q_to: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        pieces = max(1, math.ceil(float((q_to - q_from).abs().max()) / step))
        t = torch.linspace(0.0, 1.0, pieces + 1)
        return checker.trajectory_mesh_report(
            q_from[:, None] + t[None, :, None] * (q_to - q_from)[:, None]
        )

    return check


@pytest.mark.slow
def test_corridor_samples_thread_the_cage_where_uniform_samples_do_not(cage):
    cage_checker, start, goal = cage
    options = {"num_samples": 512, "max_samples": 512, "exact_band": 0.015, "time_limit": 120.0}
    check = _mesh_segments(cage_checker)
    with_corridor = RoadmapPlanner(cage_checker, RoadmapConfig(**options)).plan(start, goal, check)
    assert with_corridor.success
    path = with_corridor.path
    assert torch.equal(path[0], start) and torch.equal(path[-1], goal)
    # judged again on the collision meshes (coal), every waypoint and swept between them
    mesh_ok, _ = cage_checker.trajectory_mesh_report(_dense(path, 0.05))
    assert bool(mesh_ok)
    without = RoadmapPlanner(cage_checker, RoadmapConfig(corridor_fraction=0.0, **options))
    assert not without.plan(start, goal, check).success


def _bar_distance(angles: np.ndarray, ball: np.ndarray, radius: float) -> np.ndarray:
    """Closed-form distance from a 0.5 x 0.1 x 0.1 bar (from the origin along its x axis,
    turned by ``angles`` about z) to a ball centred in the z = 0 plane: the box's signed
    distance of the ball's centre, in the bar's frame, less the radius."""
    c, s = np.cos(angles), np.sin(angles)
    local = np.stack(
        (c * ball[0] + s * ball[1] - 0.25, -s * ball[0] + c * ball[1], np.zeros_like(c)), -1
    )
    q = np.abs(local) - [0.25, 0.05, 0.05]
    return np.linalg.norm(np.maximum(q, 0.0), axis=-1) + np.minimum(q.max(-1), 0.0) - radius


def test_swept_mesh_check_from_both_ends_agrees_with_the_closed_form(tmp_path):
    """The swept mesh check marches each piece from both ends and drops a segment at its first
    sample in contact. On a one-joint bar turning past a ball, against the closed-form distance
    at 20 000 angles per segment: a segment whose motion stays ``margin`` clear passes, one that
    passes keeps ``margin - resolution / 2``; no sample reads below the closed form; and in one
    call with others, a segment that fails (mid-piece, its waypoints clear) leaves the others'
    verdicts and clearances as they are alone."""
    pytest.importorskip("coal")
    from test_exact_collision import bar_urdf

    from curobo_lite.geom import WorldConfig
    from curobo_lite.robot import Kinematics
    from curobo_lite.types import TensorDeviceType
    from curobo_lite.wrap.base.mesh_check import MeshCheck

    urdf = bar_urdf(tmp_path)
    f64 = TensorDeviceType(dtype=torch.float64)
    robot = RobotConfig.from_urdf(urdf, "base", "arm", tensor_args=f64)
    robot.collision = None
    radius, resolution = 0.1, 1e-3

    def world(centre: float) -> object:
        ball = {"radius": radius, "position": [0.0, centre, 0.0]}
        return WorldConfig.load({"sphere": {"ball": ball}})

    check = MeshCheck(robot, Kinematics(robot, f64), world(0.8))
    # at pi/2 the bar's end face (y = 0.5) faces the ball: clearance = centre - 0.6
    spans = [(1.0, 2.2), (0.2, 1.3), (1.3, 2.9), (-1.0, 0.5)]
    outcomes = set()
    for centre in (0.595, 0.6032, 0.65, 0.52):  # 5 mm in, 3.2 mm clear, 50 mm, 80 mm in
        check.update_world(world(centre))
        ball = np.array([0.0, centre, 0.0])
        segments = torch.stack([torch.linspace(a, b, 4, dtype=torch.float64) for a, b in spans])
        reference = [
            float(_bar_distance(np.linspace(a, b, 20001), ball, radius).min()) for a, b in spans
        ]
        for margin in (0.0, 0.002, 0.004):
            ok_all, low_all, _ = check.sweep(segments[..., None], margin, resolution)
            for k, lowest in enumerate(reference):
                ok, low, _ = check.sweep(segments[k : k + 1, :, None], margin, resolution)
                assert bool(ok_all[k]) == bool(ok[0]), (centre, k, margin)
                if lowest >= margin:
                    assert bool(ok[0]), (centre, k, margin, lowest)
                if bool(ok[0]):
                    assert lowest >= margin - resolution / 2, (centre, k, margin, lowest)
                    # (coal's GJK answers agree to about a micrometre)
                    assert float(low_all[k]) == pytest.approx(float(low[0]), abs=1e-6)
                    outcomes.add("clear")
                else:
                    assert float(low[0]) < margin
                    outcomes.add("contact")
                assert float(low[0]) >= lowest - 1e-9, (centre, k, margin)
    # the shallow crossing of the first span lies mid-piece: its waypoints are clear
    waypoints = np.linspace(1.0, 2.2, 4)
    assert (_bar_distance(waypoints, np.array([0.0, 0.595, 0.0]), radius) > 0.0).all()
    assert outcomes == {"clear", "contact"}


#: MBM bookshelf_tall problem 33: the IK's two solutions of its grasp (0.04 mm clear on the
#: spheres) put link5's mesh about 1 mm into a shelf board
_REFUSED_GOALS = [
    [-1.195871, 0.925094, 0.059555, -0.900411, -2.104155, 2.636254, 2.8973],
    [2.440896, -1.217132, 1.919895, -0.901533, -1.030651, 3.071351, 2.8973],
]


def test_goals_the_meshes_refuse_give_way_to_clear_postures_of_the_same_pose():
    """The roadmap stage keeps the goal configurations that the meshes find clear; where they
    refuse all (MBM bookshelf_tall 33: the roadmap spent its 3 072 samples on goals no edge can
    leave), postures of the same pose near them. Judged by an independent coal check (yourdfpy
    kinematics, coal shapes built from the STL files) and the hand's pose from yourdfpy."""
    for name in ("coal", "trimesh", "yourdfpy"):
        pytest.importorskip(name)
    import yaml
    from test_exact_collision import _reference_distance, _reference_links, _reference_obstacles
    from trimesh.transformations import quaternion_matrix

    from curobo_lite.scenes import MbmProblem
    from curobo_lite.wrap import MotionGen
    from curobo_lite.wrap.motion.roadmap_stage import MESH_GRAZE

    data = Path(__file__).resolve().parents[1] / "benchmarks/data/mbm/bookshelf_tall.yml"
    problem = MbmProblem.from_dict(yaml.safe_load(data.read_text())["problems"][33])
    motion_gen = MotionGen.from_config("franka", problem.world)
    links, urdf = _reference_links()
    obstacles = _reference_obstacles(motion_gen.checker.world_collision.world)
    goal = np.asarray(problem.goal_pose)
    target = quaternion_matrix(goal[3:])[:3, :3]

    def clearance_and_pose_error(q: torch.Tensor) -> tuple[float, float, float]:
        d = _reference_distance(links, urdf, obstacles, q.double().numpy())
        hand = urdf.get_transform("panda_hand", "panda_link0")  # at q (set by the call above)
        cos = (np.trace(target.T @ hand[:3, :3]) - 1.0) / 2.0
        return d, float(np.linalg.norm(hand[:3, 3] - goal[:3])), math.acos(min(1.0, cos))

    thresholds = motion_gen.ik_solver.config
    refused = torch.tensor(_REFUSED_GOALS)
    for q in refused:  # IK solutions of the pose, in contact by the reference
        d, position, rotation = clearance_and_pose_error(q)
        assert d < 0.0 and position <= thresholds.position_threshold
        assert rotation <= thresholds.rotation_threshold
    pose = Pose.from_list(problem.goal_pose)
    clear = motion_gen._mesh_clear_goals(refused, pose)
    assert clear.shape[0] >= 1
    assert bool(motion_gen.checker.validate(clear, motion_gen.exact_band).all())
    for q in clear:
        d, position, rotation = clearance_and_pose_error(q)
        assert d >= MESH_GRAZE - 1e-6
        assert position <= thresholds.position_threshold
        assert rotation <= thresholds.rotation_threshold
    # a clear goal (the problem's own) is kept as it is, the refused ones dropped
    stored = torch.tensor(problem.goal_config, dtype=refused.dtype)
    assert clearance_and_pose_error(stored)[0] >= MESH_GRAZE
    mixed = motion_gen._mesh_clear_goals(torch.stack((refused[0], stored, refused[1])), pose)
    torch.testing.assert_close(mixed, stored[None])


def test_chain_variants_option_is_checked():
    assert RoadmapConfig.from_dict({}).chain_variants == 0
    assert RoadmapConfig.from_dict({"chain_variants": 8}).chain_variants == 8
    with pytest.raises(ValueError, match="chain_variants"):
        RoadmapConfig.from_dict({"chain_variants": -1})


def test_graph_search_matches_floyd_warshall_as_states_change():
    """The lazy search's shortest path (its sparse matrix cached between rounds, invalid
    edges weighing inf) against all-pairs shortest paths in numpy, over rounds that mark
    edges invalid and add nodes and edges."""
    from curobo_lite.wrap.motion.roadmap import _INVALID, _Graph

    rng = np.random.default_rng(5)
    graph = _Graph(torch.as_tensor(rng.uniform(-1.0, 1.0, (30, 3))))
    graph.connect_neighbors(4)
    targets = [1, 2, 3]
    for round_ in range(8):
        if round_ == 4:
            graph.add_nodes(torch.as_tensor(rng.uniform(-1.0, 1.0, (10, 3))))
            graph.connect_neighbors(4)
        graph.states[rng.random(len(graph.states)) < 0.15] = _INVALID
        n = graph.nodes.shape[0]
        weight = np.full((n, n), np.inf)
        np.fill_diagonal(weight, 0.0)
        for (a, b), length, state in zip(graph.pairs, graph.length, graph.states):
            if state >= 0:
                weight[a, b] = weight[b, a] = length
        for k in range(n):
            weight = np.minimum(weight, weight[:, k : k + 1] + weight[k : k + 1, :])
        nearest = min(weight[0, t] for t in targets)
        found = graph.shortest_path(0, targets)
        if not math.isfinite(nearest):
            assert found is None
            continue
        path = found[0]
        assert path[0] == 0 and path[-1] in targets
        rows = [graph.row(a, b) for a, b in zip(path[:-1], path[1:])]
        assert (graph.states[rows] >= 0).all()
        assert graph.length[rows].sum() == pytest.approx(nearest, rel=1e-12)
