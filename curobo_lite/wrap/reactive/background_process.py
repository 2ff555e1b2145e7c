"""Planning in a separate process: :class:`ProcessPlanner`, the same interface as
:class:`~curobo_lite.wrap.reactive.background.BackgroundPlanner` (``submit``, ``poll``,
``wait``, ``discard``, ``close``), with the planner's :class:`~curobo_lite.wrap.MotionGen` in a
child process.

Why a process: a planner thread shares Python's global interpreter lock with the control
thread, and MotionGen runs many small Python-side steps; measured on the 2-core CPU (quiet,
Franka, 400 particles), an MPC step made while a thread plans took 37-47 ms instead of 21. A
child process has an interpreter of its own. It is a fresh interpreter running this module
(``python -m``; not a fork: forking a process with Warp and torch threads is unsafe, and not
multiprocessing's ``spawn``, which re-runs the caller's script when it lacks a ``__main__``
guard), connected by a socket pair. It builds its MotionGen once from the pickled robot
(:class:`RobotConfig`), world and options (a few seconds, in :meth:`ProcessPlanner.__init__`),
and then serves one job at a time: a world snapshot (loaded when its revision
changed), the start and the goal in, the :class:`MotionGenResult` out. It runs at nice +10 on
Linux (``background.WORKER_NICENESS``) and with one torch thread.
"""

from __future__ import annotations

import dataclasses
import socket
import subprocess
import sys
import time
import weakref
from itertools import count
from multiprocessing.connection import Connection
from typing import Any

import torch

from curobo_lite.geom import WorldConfig
from curobo_lite.robot import RobotConfig
from curobo_lite.types import Pose, TensorDeviceType
from curobo_lite.types.errors import InputValueError
from curobo_lite.wrap.base.attach import AttachedObjects
from curobo_lite.wrap.motion.config import MotionGenResult
from curobo_lite.wrap.reactive import plan_server
from curobo_lite.wrap.reactive.background import (
    WORKER_NICENESS,
    JobSlot,
    PlanJob,
    same_held,
)

_CHILD = (
    "import sys; from curobo_lite.wrap.reactive.plan_server import main; main(int(sys.argv[1]))"
)
#: seconds the child may take to import and build its MotionGen
START_TIMEOUT = 300.0


def _on_cpu(objects: AttachedObjects) -> AttachedObjects:
    """``objects`` with its tensors on the CPU (the child process plans on a CPU)."""
    return dataclasses.replace(
        objects, spheres=objects.spheres.detach().cpu(), config=objects.config.detach().cpu()
    )


def _stop(process: subprocess.Popen, conn: Connection) -> None:
    """Ask the child to end, then make sure it did."""
    try:
        plan_server.send(conn, None)
    except (OSError, ValueError):
        pass
    try:
        process.wait(timeout=10.0)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    conn.close()


class ProcessPlanner(JobSlot):
    """A :class:`MotionGen` in a child process (see the module docstring).

    Args:
        robot: the robot (pickled to the child).
        world: the initial obstacles.
        tensor_args: the device: a CPU (on a GPU the planner's work runs outside the
            interpreter lock already; use the thread worker there).
        options: :meth:`MotionGen.from_config` options.
    """

    def __init__(
        self,
        robot: RobotConfig,
        world: WorldConfig,
        tensor_args: TensorDeviceType,
        options: dict[str, Any],
    ) -> None:
        super().__init__()
        if tensor_args.device.type != "cpu":
            raise InputValueError(
                f"tensor_args: expected a CPU device for a planning process (on a GPU use "
                f"background_worker 'thread'), received {tensor_args.device}"
            )
        ours, theirs = socket.socketpair()
        self._process = subprocess.Popen(
            [sys.executable, "-c", _CHILD, str(theirs.fileno())],
            pass_fds=(theirs.fileno(),),
        )
        theirs.close()
        self._conn = Connection(ours.detach())
        self._stopper = weakref.finalize(self, _stop, self._process, self._conn)
        setup = (robot, world, str(tensor_args.device), options, WORKER_NICENESS)
        plan_server.send(self._conn, setup)
        answer = self._conn.poll(START_TIMEOUT) and plan_server.receive(self._conn)
        state, error = answer or ("silent", None)
        if state != "ready":
            self._stopper()
            if error is not None:
                raise error
            raise InputValueError(
                f"background planner: expected the planning process to start within "
                f"{START_TIMEOUT:g} s, received no answer (exit code {self._process.poll()})"
            )
        self._ids = count()
        self._job_id = -1
        self._held: dict[str, AttachedObjects] = {}  # what the child holds
        self._result: tuple[MotionGenResult | None, BaseException | None] | None = None

    def submit(
        self,
        start: torch.Tensor,
        goal: Pose,
        world: WorldConfig,
        revision: int,
        held: dict[str, AttachedObjects] | None = None,
    ) -> PlanJob:
        """Plan from ``start [1, D]`` (at rest) to ``goal`` in the obstacles ``world`` (loaded
        in the child unless it holds ``revision`` already), holding ``held`` (link -> objects;
        sent when it changed). A job still running is dropped."""
        job = PlanJob(start.detach().cpu().clone(), goal, revision, dict(held or {}))
        self._job_id = next(self._ids)
        goal_cpu = Pose(goal.position.detach().cpu(), goal.quaternion.detach().cpu())
        sent = None
        if not same_held(job.held, self._held):  # what the robot holds changed
            sent = {link: _on_cpu(objects) for link, objects in job.held.items()}
            self._held = job.held
        message = (self._job_id, job.start, goal_cpu, world, revision, sent)
        plan_server.send(self._conn, message)
        self._job, self._result = job, None
        return job

    def _receive(self, timeout: float | None) -> bool:
        """Read the child's answers for up to ``timeout`` s (``None``: until the current job's
        comes); ``True`` once the current job's is in (answers to dropped jobs are skipped)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self._result is None:
            left = None if deadline is None else max(deadline - time.monotonic(), 0.0)
            if not self._conn.poll(left):
                break
            answer = plan_server.receive(self._conn)
            if answer is None:
                raise InputValueError("background planner: the planning process ended")
            job_id, result, error = answer
            if job_id == self._job_id:
                self._result = (result, error)
        return self._result is not None

    def poll(self) -> tuple[PlanJob, MotionGenResult] | None:
        """The finished job and its result (then no job is pending), or ``None`` while it
        runs or when none was submitted. An exception of the child is raised here."""
        if self._job is None or not self._receive(0.0):
            return None
        job, (result, error) = self._job, self._result
        self._job, self._result = None, None
        if error is not None:
            raise error
        return job, result

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the pending job is done (``True``) or ``timeout`` seconds passed
        (``False``; ``None``: no limit, as the thread worker's :meth:`wait`)."""
        if self._job is None:
            return True
        return self._receive(timeout)

    def discard(self) -> None:
        """Forget the pending job: the child completes it, its answer is skipped."""
        self._job, self._result = None, None

    def close(self) -> None:
        """Stop the child process (after the plan under way, at most 10 s)."""
        self._job = None
        self.closed = True
        self._stopper()
