"""One solver called from two threads (issue #34, item 5).

A second thread's call of a busy solver raises :class:`ConcurrentUseError` at once, before it
touches any state, and the running call completes unharmed: after two threads hammer one
solver, it gives the same answer as a fresh one.
"""

from __future__ import annotations

import threading
import time
from functools import cache

import pytest
import torch

from curobo_lite.robot import Kinematics, RobotConfig
from curobo_lite.types import ConcurrentUseError, CuroboLiteError, JointState, Pose
from curobo_lite.wrap import IKSolver, MotionGen, MpcSolver, TrajOptSolver
from curobo_lite.wrap.base.exclusive import exclusive


@cache
def robot() -> RobotConfig:
    return RobotConfig.load("planar3")


def goal() -> Pose:
    state = Kinematics(robot()).forward(torch.tensor([[0.4, 0.5, -0.3]]))
    return Pose(state.ee_position, state.ee_quaternion)


def start() -> JointState:
    return JointState.from_position(robot().retract_config[None].clone())


def make(kind: str):
    if kind == "trajopt":
        return TrajOptSolver.from_config(robot(), num_seeds=2)
    if kind == "ik":
        return IKSolver.from_config(robot(), num_seeds=8)
    if kind == "mpc":
        solver = MpcSolver.from_config(robot(), num_particles=32)
        solver.update_goal(goal())
        return solver
    return MotionGen.from_config(robot(), num_ik_seeds=8, num_trajopt_seeds=2)


def call(kind: str, solver) -> torch.Tensor:
    """One public call; returns what a fresh solver must reproduce."""
    if kind == "trajopt":
        return solver.solve_pose(start(), goal()).interpolated_solution.position
    if kind == "ik":
        return solver.solve_single(goal()).solution
    if kind == "mpc":
        solver.reset()
        solver.update_goal(goal())
        return solver.step(start()).action.position
    result = solver.plan_single(start(), goal())
    return result.interpolated_plan.position if result.success else torch.tensor([])


#: a method every public call of a kind goes through (slowed down in the tests)
INNER = {"trajopt": "_solve", "ik": "_seeds", "mpc": "_plan_and_command", "motion": "plan_batch"}


KINDS = ["trajopt", "ik", "mpc", "motion"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_second_thread_is_refused_at_once_and_the_first_completes(kind, monkeypatch):
    solver = make(kind)
    expected = call(kind, make(kind))
    entered, release = threading.Event(), threading.Event()
    method = INNER[kind]
    original = getattr(type(solver), method)

    def slow(self, *args, **kwargs):
        entered.set()
        assert release.wait(30)
        return original(self, *args, **kwargs)

    if kind == "motion":  # plan_batch is itself guarded: slow the IK it calls instead
        original_ik = solver.ik_solver.solve_batch

        def slow_ik(*args, **kwargs):
            entered.set()
            assert release.wait(30)
            return original_ik(*args, **kwargs)

        monkeypatch.setattr(solver.ik_solver, "solve_batch", slow_ik)
    else:
        monkeypatch.setattr(type(solver), method, slow)
    outcome: dict[str, object] = {}

    def first():
        try:
            outcome["first"] = call(kind, solver)
        except BaseException as err:  # reported below
            outcome["first"] = err

    thread = threading.Thread(target=first)
    thread.start()
    try:
        assert entered.wait(30)
        t0 = time.perf_counter()
        with pytest.raises(ConcurrentUseError) as err:
            call(kind, solver)
        assert time.perf_counter() - t0 < 0.5  # at once, not after the first call
        message = str(err.value)
        assert message.startswith(f"{type(solver).__name__}.") and "another thread" in message
        assert "busy with" in message
    finally:
        release.set()
        thread.join(60)
    monkeypatch.undo()
    assert not isinstance(outcome["first"], BaseException), outcome["first"]
    torch.testing.assert_close(outcome["first"], expected, rtol=0, atol=0)


@pytest.mark.parametrize("kind", ["trajopt", "mpc"])
def test_two_threads_hammering_one_solver_leave_it_as_a_fresh_one(kind):
    solver = make(kind)
    results: list[torch.Tensor] = []
    refused = 0
    failures: list[BaseException] = []
    lock = threading.Lock()
    barrier = threading.Barrier(2)

    def hammer():
        nonlocal refused
        barrier.wait()
        for _ in range(6):
            try:
                out = call(kind, solver)
            except ConcurrentUseError:
                with lock:
                    refused += 1
            except BaseException as err:
                failures.append(err)
            else:
                with lock:
                    results.append(out)

    threads = [threading.Thread(target=hammer) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert not failures, failures
    assert results and len(results) + refused == 12
    fresh = call(kind, make(kind))
    after = call(kind, solver)
    # every completed call, and the solver afterwards, agree with a fresh solver
    for out in [*results, after]:
        torch.testing.assert_close(out, fresh, rtol=0, atol=0)


def test_nested_calls_in_one_thread_are_allowed():
    class Solver:
        @exclusive
        def outer(self):
            return self.inner() + 1

        @exclusive
        def inner(self):
            return 1

    assert Solver().outer() == 2


def test_concurrent_use_error_is_a_documented_error():
    assert issubclass(ConcurrentUseError, CuroboLiteError)
    assert issubclass(ConcurrentUseError, RuntimeError)


def test_guard_runs_the_call_under_the_solvers_cpu_thread_setting(monkeypatch):
    """A solver's ``cpu_torch_threads`` holds torch's threads during its outermost guarded call
    on a CPU device, keeps Warp's row launches on the threads torch had, and restores torch's
    setting afterwards, also when the call raises."""
    from curobo_lite.kernels import launch

    seen = []

    class Solver:
        tensor_args = type("T", (), {"device": torch.device("cpu")})()
        cpu_torch_threads = 1

        @exclusive
        def outer(self, fail=False):
            seen.append((torch.get_num_threads(), launch.cpu_launch_workers()))
            if fail:
                raise ValueError("boom")
            return self.inner()

        @exclusive
        def inner(self):
            seen.append((torch.get_num_threads(), launch.cpu_launch_workers()))

    restore = torch.get_num_threads()
    torch.set_num_threads(3)
    try:
        Solver().outer()
        assert seen == [(1, 3), (1, 3)]
        assert torch.get_num_threads() == 3 and launch.cpu_launch_workers() == 3
        monkeypatch.setattr(launch, "CPU_CHUNK_MIN_ELEMENTS", 1)
        with launch.torch_cpu_threads(1, torch.device("cpu")):
            assert len(launch.cpu_row_chunks(7, 100)) == 3  # still split over 3
        with pytest.raises(ValueError, match="boom"):
            Solver().outer(fail=True)
        assert torch.get_num_threads() == 3 and launch.cpu_launch_workers() == 3
        solver = Solver()
        solver.cpu_torch_threads = None  # None: torch's own setting
        seen.clear()
        solver.outer()
        assert seen == [(3, 3), (3, 3)]
    finally:
        torch.set_num_threads(restore)


@pytest.mark.parametrize("kind", ["ik", "trajopt", "motion"])
def test_solvers_run_on_their_cpu_thread_setting(kind, monkeypatch):
    """IKSolver's and MotionGen's ``cpu_torch_threads`` and TrajOptSolver's (task
    ``trajopt.cpu_torch_threads``) reach their solves; a bad value is refused with the
    option's name."""
    solver = make(kind)
    inner = solver.ik_solver if kind == "motion" else solver
    name = {"ik": "_solve_batch", "trajopt": "_solve", "motion": "solve_batch"}[kind]
    seen = []
    original = getattr(inner, name)

    def spy(*args, **kwargs):
        seen.append(torch.get_num_threads())
        return original(*args, **kwargs)

    monkeypatch.setattr(inner, name, spy)
    restore = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        call(kind, solver)
        assert seen and set(seen) == {1} and torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(restore)
    with pytest.raises(CuroboLiteError, match="cpu_torch_threads"):
        {"ik": IKSolver, "trajopt": TrajOptSolver, "motion": MotionGen}[kind].from_config(
            robot(), cpu_torch_threads=0
        )
