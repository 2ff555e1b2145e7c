"""Planning beside the control loop: :class:`BackgroundPlanner` runs ``MotionGen.plan_single``
on a worker thread so that the loop keeps stepping its MPC while a plan is made.

Why: a plan costs 0.1-0.7 s on a CPU, 5 to 35 control periods at 50 Hz; planned inside the
control step, the loop misses those deadlines (the robot's controller then holds or faults).

The worker plans with its own :class:`~curobo_lite.wrap.MotionGen`, on its own copy of the
obstacles: the control thread may edit its world (``move_obstacle``, ``update_world``) while a
plan runs, so each job carries a snapshot of the world (a :class:`WorldConfig` copied on the
control thread), loaded into the worker's world before it plans. A job's plan is made for that
snapshot; the caller checks it against the world of the moment before following it.
One job runs at a time; a result nobody wants (a newer goal, :meth:`discard`) is dropped.

The control loop comes first: on Linux, where the nice value is a thread's own, the worker runs
at nice +10, so that on a busy CPU the MPC thread gets the cores (``WORKER_NICENESS``).
"""

from __future__ import annotations

import os
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

import torch

from curobo_lite.geom import WorldConfig
from curobo_lite.types import JointState, Pose
from curobo_lite.wrap.base.attach import AttachedObjects
from curobo_lite.wrap.motion.config import MotionGenResult
from curobo_lite.wrap.motion.motion_gen import MotionGen
from curobo_lite.wrap.reactive.band_relief import plan_with_band

#: nice value added to the worker thread on Linux (0: as the caller)
WORKER_NICENESS = 10


def _lower_priority() -> None:
    if sys.platform.startswith("linux") and WORKER_NICENESS:
        os.nice(WORKER_NICENESS)  # this thread only (Linux: the nice value is per thread)


@dataclass
class PlanJob:
    """One background plan: where it started, for which goal and world revision.

    Attributes:
        start: ``[1, D]`` joint position the plan starts from (at rest).
        goal: the end-effector goal it plans to.
        revision: the control thread's world revision of the snapshot it planned in.
        held: what the robot holds (link -> objects), as the control thread's planner does.
    """

    start: torch.Tensor
    goal: Pose
    revision: int
    held: dict[str, AttachedObjects] = field(default_factory=dict)
    future: Future | None = None


def apply_held(motion_gen: MotionGen, held: dict[str, AttachedObjects]) -> None:
    """Make ``motion_gen`` hold exactly ``held`` (link -> objects, as the control thread's
    planner holds them) in every copy of its robot (:meth:`RobotWorld.mirror_held`); its
    world is left alone: each job's snapshot has the held obstacles disabled already."""
    checker = motion_gen.checker
    if not same_held(checker.attached, held):
        checker.mirror_held(held, motion_gen._others(checker))


def same_held(a: dict[str, AttachedObjects], b: dict[str, AttachedObjects]) -> bool:
    """Whether two records of held objects (link -> objects) are the same attachments."""
    return a.keys() == b.keys() and all(a[link] is b[link] for link in a)


class JobSlot:
    """The one job of a planner beside the loop: what both workers (thread, process) keep."""

    def __init__(self) -> None:
        self._job: PlanJob | None = None
        self.closed = False

    @property
    def pending(self) -> bool:
        """A job was submitted and its result not taken yet (it may be done already)."""
        return self._job is not None

    def discard(self) -> None:
        """Forget the pending job: a plan under way completes, unread."""
        self._job = None


class BackgroundPlanner(JobSlot):
    """A :class:`MotionGen` served by one worker thread.

    Args:
        motion_gen: the planner the worker uses; its world must not be shared with the control
            thread (the worker loads each job's snapshot into it).
    """

    def __init__(self, motion_gen: MotionGen) -> None:
        super().__init__()
        self.motion_gen = motion_gen
        self._executor = ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="curobo_lite-plan", initializer=_lower_priority
        )
        self._loaded_revision: int | None = None  # the snapshot the worker's world holds

    def submit(
        self,
        start: torch.Tensor,
        goal: Pose,
        world: WorldConfig,
        revision: int,
        held: dict[str, AttachedObjects] | None = None,
    ) -> PlanJob:
        """Plan from ``start [1, D]`` (at rest) to ``goal`` in the obstacles ``world`` (a copy
        the worker owns, loaded unless the worker holds ``revision`` already), holding ``held``
        (link -> objects). A job still running is dropped (its result is never returned)."""
        self.discard()
        job = PlanJob(start.detach().clone(), goal, revision, dict(held or {}))
        job.future = self._executor.submit(self._plan, job, world)
        self._job = job
        return job

    def _plan(self, job: PlanJob, world: WorldConfig) -> MotionGenResult:
        # jobs run in order on the one worker: the revision it loaded last is what it holds
        if self._loaded_revision != job.revision:
            self.motion_gen.update_world(world)
            self._loaded_revision = job.revision
        apply_held(self.motion_gen, job.held)
        # (a plan that needed the exact band is told by its spheres: ReactivePlanner._adopt)
        return plan_with_band(self.motion_gen, JointState.from_position(job.start), job.goal)[0]

    def poll(self) -> tuple[PlanJob, MotionGenResult] | None:
        """The finished job and its result (then no job is pending), or ``None`` while it
        runs or when none was submitted. An exception of the worker is raised here."""
        job = self._job
        if job is None or not job.future.done():
            return None
        self._job = None
        return job, job.future.result()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the pending job is done (``True``), or ``timeout`` seconds passed
        (``False``); ``True`` when none is pending."""
        job = self._job
        if job is None:
            return True
        try:
            job.future.exception(timeout=timeout)
        except TimeoutError:
            return False
        return True

    def close(self) -> None:
        """Stop the worker (after the running plan, if any)."""
        self._job = None
        self.closed = True
        self._executor.shutdown(wait=True, cancel_futures=True)
