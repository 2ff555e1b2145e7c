"""``mpc.cpu_overlap: auto``: rollouts share their kernels with the helper thread only while the
helper runs beside the calling thread (:class:`curobo_lite.rollout.overlap.HelperGate`: both
threads' CPU time over the wall time of each shared section). On one core the threads can only
take turns, so the gate closes and the rollouts stay on the calling thread, with the commands of
the sequential step bit for bit."""

from __future__ import annotations

import os

import pytest
import torch
from forked_child import check_in_forked_child

from curobo_lite.rollout import TaskConfig, overlap
from curobo_lite.rollout.overlap import MIN_PARALLELISM, PROBE_EVERY, HelperGate
from curobo_lite.types import JointState, Pose
from curobo_lite.wrap import MpcSolver

GOAL = [0.45, 0.1, 0.35, 0.0, 1.0, 0.0, 0.0]


def test_the_gate_closes_probes_and_reopens():
    gate = HelperGate()
    assert gate.pays()  # nothing measured yet
    gate.record(cpu_seconds=1.0e-3, wall_seconds=1.0e-3)  # the threads took turns
    assert gate.parallelism < MIN_PARALLELISM
    assert [gate.pays() for _ in range(PROBE_EVERY)] == [False] * (PROBE_EVERY - 1) + [True]
    gate.record(cpu_seconds=1.9e-3, wall_seconds=1.0e-3)  # the probe: side by side again
    assert gate.pays() and gate.pays()
    gate.record(cpu_seconds=1.0e-3, wall_seconds=1.0e-3)  # one section on one core: still open
    assert gate.pays()
    for _ in range(3):  # a few in a row close it
        gate.record(cpu_seconds=1.0e-3, wall_seconds=1.0e-3)
    assert not gate.pays()


def _commands(cpu_overlap: bool | str, steps: int) -> list[torch.Tensor]:
    task = TaskConfig.load("particle_mpc")
    task.mpc = dict(task.mpc, cpu_overlap=cpu_overlap)
    solver = MpcSolver.from_config(task=task)
    solver.update_goal(Pose.from_list(GOAL))
    state = JointState.from_position(solver.robot_config.retract_config[None].clone())
    commands = []
    for _ in range(steps):
        state = solver.step(state).action
        commands.append(state.position.clone())
    return commands


@pytest.mark.skipif(
    not hasattr(os, "fork") or not hasattr(os, "sched_setaffinity"), reason="no fork/affinity"
)
def test_on_one_core_the_rollouts_stay_on_the_calling_thread():
    """In a child pinned to one core (one torch thread: torch's OpenMP pool hangs a forked
    child by itself); the gate is the child's copy, measured afresh."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:

        def check() -> bool:
            os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
            overlap.GATE = HelperGate()
            submitted = []
            submit = overlap._submit
            overlap._submit = lambda *args: submitted.append(1) or submit(*args)
            commands = _commands("auto", 8)
            closed = overlap.GATE.parallelism < MIN_PARALLELISM
            expected = _commands(False, 8)
            same = all(torch.equal(a, b) for a, b in zip(commands, expected))
            # the first rollouts measured the gate shut, the later ones ran alone
            return closed and 0 < len(submitted) < 8 and same

        check_in_forked_child(check, "MPC steps on one core")
    finally:
        torch.set_num_threads(threads)


def test_a_call_sites_first_passes_run_on_the_calling_thread_alone(monkeypatch):
    """Its first launches load the kernels' Warp modules: two threads launching a kernel whose
    module is still loading race inside Warp. Later calls share the rows with the helper."""
    import threading

    from curobo_lite.rollout.cost.collision_cost import RowPass

    seen: list[tuple[int, int, int]] = []

    def run(begin: int, end: int) -> None:
        seen.append((threading.get_ident(), begin, end))

    submitted = []
    real_submit = overlap._submit

    def counting_submit(fn, *args):
        submitted.append(fn)
        return real_submit(fn, *args)

    monkeypatch.setattr(overlap, "_submit", counting_submit)
    monkeypatch.setattr(overlap, "GATE", HelperGate())  # the tiny sections' measure stays here
    me = threading.get_ident()
    for call in range(2):
        seen.clear()
        pieces = [overlap.SharedPass(RowPass(8, run, lambda: None), 4)]
        assert overlap.shared(pieces, lambda: "done") == "done"
        assert sorted((b, e) for _, b, e in seen) == [(0, 2), (2, 4), (4, 6), (6, 8)]
        if call == 0:  # the first: no helper, every row on this thread
            assert not submitted and {t for t, _, _ in seen} == {me}
    assert len(submitted) == 1  # the second call handed rows to the helper
