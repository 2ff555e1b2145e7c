"""MPPI draws the next iteration's normals beside the rollout's kinematics (``Mppi._rollout``,
on the calling thread while a CPU rollout's helper thread computes forward kinematics): the
same draws in the same order from the same generator, so the MPC steps equal those of an Mppi
that draws at sampling time (the reference: ``_rollout`` replaced by a plain ``rollout_fn``
call), through a reset and with either sampling mode, overlapped or not."""

from __future__ import annotations

import pytest
import torch

from curobo_lite.opt import Mppi
from curobo_lite.rollout import TaskConfig
from curobo_lite.types import JointState, Pose
from curobo_lite.wrap import MpcSolver

GOAL = [0.45, 0.1, 0.35, 0.0, 1.0, 0.0, 0.0]


def _steps(sample_mode: str, overlap: bool, draw_ahead: bool, monkeypatch) -> list:
    task = TaskConfig.load("particle_mpc")
    task.mpc = dict(task.mpc, cpu_overlap=overlap)
    solver = MpcSolver.from_config(task=task, sample_mode=sample_mode, num_particles=120)
    if not draw_ahead:
        monkeypatch.setattr(Mppi, "_rollout", lambda self, act: self.rollout.rollout_fn(act))
    solver.update_goal(Pose.from_list(GOAL))
    state = JointState.from_position(solver.robot_config.retract_config[None].clone())
    out, ahead = [], []
    for step in range(6):
        if step == 3:
            solver.reset()  # reseeds: a draw made ahead before it must not be used
        result = solver.step(state)
        ahead.append(solver.mppi._drawn_ahead)
        out.append((result.action.position.clone(), result.plan.clone(), result.metrics["cost"]))
        state = result.action
    monkeypatch.undo()
    return out, ahead


@pytest.mark.parametrize(("sample_mode", "overlap"), [("GAUSSIAN", True), ("KNOT", False)])
def test_draws_ahead_give_the_steps_of_draws_at_sampling(sample_mode, overlap, monkeypatch):
    expected, _ = _steps(sample_mode, overlap, False, monkeypatch)
    got, ahead = _steps(sample_mode, overlap, True, monkeypatch)
    assert all(ahead)  # every step drew the next one's normals beside its kinematics
    for (position, plan, cost), (want_position, want_plan, want_cost) in zip(got, expected):
        assert torch.equal(position, want_position)
        assert torch.equal(plan, want_plan)
        assert cost == want_cost


def test_a_rollout_that_skips_the_hook_leaves_it_to_its_caller():
    task = TaskConfig.load("particle_mpc")
    task.mpc = dict(task.mpc, fused_rollout=False, cpu_overlap=False)  # never runs the hook
    solver = MpcSolver.from_config(task=task, num_particles=40)
    solver.update_goal(Pose.from_list(GOAL))
    start = JointState.from_position(solver.robot_config.retract_config[None].clone())
    solver.rollout.update_start_state(start)
    calls = []
    solver.rollout.beside_kinematics = lambda: calls.append(1)
    with torch.no_grad():
        solver.mppi.optimize()
    assert calls == [] and solver.mppi._drawn_ahead is False
    solver.rollout.beside_kinematics()  # the caller's hook is back, to run itself
    assert calls == [1]
