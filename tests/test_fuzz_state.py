"""State stays intact (issue 15): after any rejected call, the next valid call of the same solver
returns exactly what a freshly built solver returns (MPC, trajectory optimization, motion
generation; small planar3 problems, fixed seeds)."""

from __future__ import annotations

import pytest
import torch
from fuzz_targets import (
    POSE_FAULTS,
    START_FAULTS,
    hostile_pose,
    hostile_start,
    planar3,
    planar_goal,
    small_task,
)

from curobo_lite.rollout import TaskConfig
from curobo_lite.types import CuroboLiteError, JointState
from curobo_lite.wrap import MotionGen, MpcSolver, TrajOptSolver
from curobo_lite.wrap.ik.config import DEFAULT_IK_LBFGS


def build(kind: str):
    robot = planar3()
    if kind == "mpc":
        task = TaskConfig.from_dict(small_task("particle_mpc"), source="small_mpc")
        return MpcSolver.from_config(robot, task)
    data = small_task("gradient_trajopt")
    if kind == "trajopt":
        return TrajOptSolver.from_config(robot, TaskConfig.from_dict(data, source="small"))
    data["lbfgs"]["n_iters"] = 20  # enough for a successful plan, whose trajectory is compared
    return MotionGen.from_config(
        robot,
        task=TaskConfig.from_dict(data, source="small"),
        num_ik_seeds=8,
        num_trajopt_seeds=2,
        ik={"lbfgs": {**DEFAULT_IK_LBFGS, "n_iters": 20}},
        enable_graph=False,
    )


def start_state() -> JointState:
    return JointState.from_position(planar3().retract_config[None].clone())


def valid_calls(kind: str, solver) -> list[torch.Tensor]:
    """The outputs of a short valid sequence: three MPC steps, or one plan."""
    if kind == "mpc":
        solver.update_goal(planar_goal())
        state, out = start_state(), []
        for _ in range(3):
            action = solver.step(state).action
            out += [action.position, action.velocity, action.acceleration]
            state = JointState(action.position, action.velocity, action.acceleration)
        return out
    if kind == "trajopt":
        result = solver.solve_pose(start_state(), planar_goal())
        return [result.solution.position, result.interpolated_solution.position]
    result = solver.plan_single(start_state(), planar_goal())
    assert result.success, result.status
    return [result.interpolated_plan.position, result.goal_config]


def hostile_calls(kind: str, solver) -> int:
    """Every single-fault call that the solver rejects; returns how many were rejected."""
    rejected = 0
    # inputs that are valid in another form (float64, non-contiguous...) are solved, not rejected
    disguised = {"valid", "float64", "requires_grad", "non_contiguous", "unnormalized"}
    cases = [(s, "valid") for s in START_FAULTS if s not in disguised]
    cases += [("valid", g) for g in POSE_FAULTS if g not in disguised]
    for start_fault, goal_fault in cases:
        try:
            start = hostile_start(start_fault, planar3())
            goal = hostile_pose(goal_fault)
            if kind == "mpc":
                solver.update_goal(goal)
                solver.step(start)
            elif kind == "trajopt":
                solver.solve_pose(start, goal)
            else:
                solver.plan_single(start, goal)
        except CuroboLiteError:
            rejected += 1
            continue
        if kind == "mpc":
            solver.reset()  # an accepted hostile step moved the warm start on: start over
    return rejected


@pytest.mark.parametrize("kind", ["mpc", "trajopt", "motion_gen"])
def test_rejected_calls_leave_the_solver_as_fresh(kind):
    expected = valid_calls(kind, build(kind))
    solver = build(kind)
    rejected = hostile_calls(kind, solver)
    assert rejected >= 12, rejected
    got = valid_calls(kind, solver)
    for a, b in zip(got, expected, strict=True):
        assert torch.equal(a, b)
