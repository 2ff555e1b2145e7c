"""MPC among obstacles: the closed loop keeps clear of the world, also when it moves."""

from __future__ import annotations

import pytest
import torch
from collision_reference import coal_sphere_box_distance

from curobo_lite.robot import Kinematics
from curobo_lite.sim import IdealTracker, run_closed_loop
from curobo_lite.types import JointState, Pose
from curobo_lite.wrap import MpcSolver

TABLE = {"pose": [0.75, 0.0, 0.2, 1.0, 0.0, 0.0, 0.0], "dims": [0.6, 1.0, 0.04]}


def _independent_clearance(kinematics: Kinematics, positions: torch.Tensor, boxes) -> torch.Tensor:
    """``[T]`` smallest sphere-to-box distance along measured positions, by coal."""
    spheres = kinematics.forward(positions).link_spheres.detach()
    distance = coal_sphere_box_distance(spheres.reshape(-1, 4).double().numpy(), boxes)
    return torch.as_tensor(distance).reshape(spheres.shape[:2]).amin(-1)


@pytest.mark.slow
def test_mpc_reaches_over_a_table_without_touching_it():
    mpc = MpcSolver.from_config(robot="franka", world={"cuboid": {"table": TABLE}})
    start = JointState.from_position(mpc.robot_config.retract_config[None].clone())
    # low over the table top (z = 0.22): the fingertips end ~8 cm above the board
    goal = Pose.from_list([0.55, 0.1, 0.40, 0.0, 1.0, 0.0, 0.0])
    record = run_closed_loop(mpc, IdealTracker(start), goal, 220)
    clearance = _independent_clearance(
        mpc.kinematics, record.position, [(TABLE["pose"], TABLE["dims"])]
    )
    assert float(clearance.min()) >= 0.0, f"touched the table: {float(clearance.min()):.4f} m"
    assert float(record.world_distance.min()) >= 0.0
    assert float(record.self_distance.min()) >= 0.0
    assert float(record.position_error[-1]) < 0.02
    assert float(record.rotation_error[-1]) < 0.1


@pytest.mark.slow
def test_mpc_keeps_clear_of_an_obstacle_moved_into_its_path():
    post = {"pose": [0.4, 0.6, 0.41, 1.0, 0.0, 0.0, 0.0], "dims": [0.08, 0.08, 0.22]}
    mpc = MpcSolver.from_config(robot="franka", world={"cuboid": {"post": post}})
    start = JointState.from_position(mpc.robot_config.retract_config[None].clone())
    goal = Pose.from_list([0.4, -0.3, 0.45, 0.0, 1.0, 0.0, 0.0])
    # onto the way the arm takes without it (6 cm clear of the arm when it appears, 3 cm deep
    # into the arm's free path)
    moved = [0.42, -0.08, 0.33, 1.0, 0.0, 0.0, 0.0]

    def move(solver: MpcSolver) -> None:
        solver.world_collision.update_obstacle_pose("post", moved)

    record = run_closed_loop(mpc, IdealTracker(start), goal, 250, events={10: move})
    clearance = _independent_clearance(
        mpc.kinematics, record.position[10:], [(moved, post["dims"])]
    )
    assert float(clearance.min()) >= 0.0, f"hit the moved post: {float(clearance.min()):.4f} m"
    assert float(record.world_distance[10:].min()) >= 0.0
    assert float(record.position_error[-1]) < 0.03


def test_mpc_command_move_option_moves_the_obstacle_before_its_step():
    from curobo_lite.wrap.cli.mpc import obstacle_moves

    mpc = MpcSolver.from_config(robot="franka", world="moving_post")
    events = obstacle_moves([["post", "10", "0.42", "-0.08", "0.33"]], mpc)
    assert set(events) == {10}
    probe = torch.tensor([[[0.42, -0.08, 0.33, 0.01]]], **mpc.tensor_args.as_kwargs())
    before = float(mpc.world_collision.sphere_distance(probe).distance.min())
    events[10](mpc)
    after = float(mpc.world_collision.sphere_distance(probe).distance.min())
    # the post's centre (half-size 4 cm): the probe of radius 1 cm is 5 cm deep afterwards
    assert before > 0.3 and after == pytest.approx(-0.05, abs=1e-5)
    for bad, match in (
        ([["wall", "3", "0", "0", "0"]], "no obstacle 'wall'"),
        ([["post", "x", "0", "0", "0"]], "integer step"),
        ([["post", "3", "0", "0"]], "NAME STEP X Y Z"),
        ([["post", "-1", "0", "0", "0"]], "STEP: expected >= 0"),
    ):
        with pytest.raises(ValueError, match=match):
            obstacle_moves(bad, mpc)
