"""The IK's pose phase in chunks (``dls_chunk``, ``dls_enough``) and its ranking measured only
where it can decide (:func:`curobo_lite.wrap.ik.ranking.ranking_metrics`).

References: the full metrics of every row (:meth:`ArmReacher.convergence`, the computation the
ranking replaces), the pose by the numpy forward kinematics of the collision URDF
(``tests/curobo_reference.UrdfFK``) and the clearance by :meth:`RobotWorld.validate`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from curobo_reference import UrdfFK, matrix_to_quat_wxyz, rotation_angle

import curobo_lite.wrap.ik.solver as ik_solver_module
from curobo_lite.types import Pose
from curobo_lite.wrap import IKSolver, RobotWorld
from curobo_lite.wrap.ik.ranking import ranking_metrics

REPO = Path(__file__).resolve().parents[1]
URDF = REPO / "configs" / "robot" / "franka_collision.urdf"
THRESHOLDS = (0.005, 0.05)
WORLD = {
    "cuboid": {
        "table": {"dims": [1.2, 1.2, 0.04], "pose": [0.4, 0.0, -0.02, 1, 0, 0, 0]},
        "block": {"dims": [0.1, 0.3, 0.3], "pose": [0.45, -0.2, 0.15, 1, 0, 0, 0]},
    }
}
#: a grasp above the table beside the block, and a pose 2 m away (out of reach)
GOALS = [[0.45, 0.15, 0.2, 0.0, 1.0, 0.0, 0.0], [2.0, 0.0, 0.5, 0.0, 1.0, 0.0, 0.0]]


@pytest.fixture(scope="module")
def solver() -> IKSolver:
    return IKSolver.from_config("franka", WORLD, dls_iterations=16)


def test_ranking_metrics_equal_the_full_metrics_where_they_decide(solver):
    """Two goals x 64 pose-phase rows: every row's pose errors, and the clearances and limit
    violations of the rows that reach the pose, equal the full metrics bitwise; the rows left
    out read ``-inf`` clearance (they cannot succeed either way)."""
    S, n = 2, 64
    goal = Pose(
        torch.tensor([GOALS[0][:3], [0.4, -0.45, 0.35]]),
        torch.tensor([GOALS[0][3:], [0.0, 1.0, 0.0, 0.0]]),
    )
    solver._set_goal(goal)
    seeds = solver._seeds(S, None, n)
    q = solver._pose_steps(goal, seeds, THRESHOLDS[0] / THRESHOLDS[1])
    full = solver.rollout.convergence(solver.rollout.rollout_state(q[:, None]))
    ours = ranking_metrics(solver.rollout, q, S, n, THRESHOLDS, None)
    assert torch.equal(ours.position_error, full.position_error)
    assert torch.equal(ours.rotation_error, full.rotation_error)
    reach = (full.position_error <= THRESHOLDS[0]) & (full.rotation_error <= THRESHOLDS[1])
    assert 0 < int(reach.view(S, n).sum(1).min()) and int(reach.sum()) < S * n
    assert torch.equal(ours.world_distance[reach], full.world_distance[reach])
    assert torch.equal(ours.self_distance[reach], full.self_distance[reach])
    for kind, violation in full.limit_violation.items():
        assert torch.equal(ours.limit_violation[kind][reach], violation[reach])
    measured = torch.isfinite(ours.world_distance)
    # beyond the reaching rows, only each goal's best other row is measured
    assert int((measured & ~reach).view(S, n).sum(1).max()) <= 1


def test_chunked_pose_phase_runs_the_rest_only_where_needed(solver, monkeypatch):
    """``dls_chunk=32, dls_enough=2`` with 128 pose-phase seeds for a reachable grasp and a
    pose out of reach: the first chunk runs for both goals, the other 96 seeds only for the
    goal out of reach. The grasp's solutions reach the pose (numpy FK) and are valid
    (:meth:`RobotWorld.validate`)."""
    batches = []
    steps = ik_solver_module.dls_steps

    def counted(kinematics, q, *args, **kwargs):
        batches.append(q.shape[0])
        return steps(kinematics, q, *args, **kwargs)

    monkeypatch.setattr(ik_solver_module, "dls_steps", counted)
    chunked = IKSolver.from_config(
        "franka",
        solver.world_collision,
        dls_iterations=16,
        dls_seeds=128,
        dls_chunk=32,
        dls_enough=2,
    )
    goal = Pose(torch.tensor([g[:3] for g in GOALS]), torch.tensor([g[3:] for g in GOALS]))
    result = chunked.solve_batch(goal, lbfgs_fallback=False)
    assert batches == [2 * 32, 96]
    assert result.success.tolist() == [True, False]
    solutions = result.distinct_solutions[0]
    assert solutions.shape[0] >= 2
    urdf = UrdfFK(URDF)
    names = chunked.robot_config.joint_names
    for q in solutions:
        hand = urdf.link_transforms("panda_link0", dict(zip(names, q.tolist(), strict=True)))
        hand = hand["panda_hand"]
        assert np.linalg.norm(hand[:3, 3] - np.array(GOALS[0][:3])) <= THRESHOLDS[0]
        assert (
            rotation_angle(matrix_to_quat_wxyz(hand[:3, :3]), np.array(GOALS[0][3:]))
            <= (THRESHOLDS[1])
        )
    checker = RobotWorld.from_config("franka", WORLD)
    assert bool(checker.validate(solutions).all())


def test_chunk_options_are_checked():
    for key in ("dls_chunk", "dls_enough"):
        with pytest.raises(ValueError, match=key):
            IKSolver.from_config("franka", None, **{key: -1})
