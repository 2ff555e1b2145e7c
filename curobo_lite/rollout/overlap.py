"""Rollouts on a CPU with the Warp kernels shared between two threads beside the torch costs.

An MPPI rollout without a gradient (400 particles x 30 steps) spends about half its time in
two Warp kernels, forward kinematics and the world-collision cost read from the link frames,
and the rest in torch costs. A Warp CPU kernel runs on the thread that launches it and releases
the GIL, so on a CPU with a second core :func:`overlapped_terms` runs the kernels' row chunks on
a helper thread while the calling thread evaluates the costs that read only the joint states
(bounds, smoothness, stopping, the null space, tracking); then the calling thread takes the
chunks the helper has not started. Likewise the world cost's chunks beside the pose cost. Every
term is computed by the same code as in the sequential rollout, so the results are identical.

The helper pays only where the process gets a second core: on a host whose other core is busy
with other processes, the two threads take turns on one core (two GIL-free Warp launches on two
threads took twice the wall time of one, load 3-5 on the 2-core host) and each hand-off costs
time. :func:`worth_sharing` therefore measures every shared section's parallelism (both
threads' CPU time over its wall time): while its running mean is below
``MIN_PARALLELISM``, rollouts run on the calling thread alone, and one in ``PROBE_EVERY`` is
shared again to measure anew. Either way the results are the same.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Collection, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from queue import Empty, SimpleQueue
from typing import Any

import torch

from curobo_lite.rollout.cost import (
    CostBase,
    PoseCost,
    PrimitiveCollisionCost,
    SelfCollisionCost,
)
from curobo_lite.rollout.cost.collision_cost import RowPass
from curobo_lite.rollout.dynamics_model import KinematicModel, KinematicModelState
from curobo_lite.types import JointState

#: fewer configurations per rollout than this run sequentially: the two hand-offs to the
#: helper thread (tens of microseconds) would cost more than they save
OVERLAP_MIN_CONFIGS = 2048

#: row chunks per shared kernel pass: the calling thread takes those the helper has not
#: started when it is done with its torch costs (each chunk is one launch, ~50-100 us of
#: Python). On the loaded 2-core host (load 6-8, other agents running), interleaved, the
#: table step's median was 72 / 75 / 80 ms with 1 / 2 / 4 pieces: one, until a quiet host
#: says otherwise (``benchmarks/mpc.py --pieces N``)
PIECES = 1

#: shared sections whose threads ran side by side less than this (CPU time over wall time, 1 to
#: 2 on two cores) say that the helper does not pay (at most 1 where the threads share one
#: core; near 2 where both stay busy side by side)
MIN_PARALLELISM = 1.3
#: while the helper does not pay, one rollout in this many is shared to measure again
PROBE_EVERY = 50

#: costs that read the link frames (everything else reads only the joint states)
_FRAME_COSTS = (PoseCost, PrimitiveCollisionCost, SelfCollisionCost)

_helper: ThreadPoolExecutor | None = None


def _forget_helper() -> None:
    """In a forked child: the parent's helper thread does not exist there (a job submitted to
    its executor would never run), so the next rollout starts a new one."""
    global _helper
    _helper = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_helper)

#: ``cost_terms(state, names) -> {name: [B, H] term}`` for the named enabled costs
CostTerms = Callable[[KinematicModelState, Collection[str]], dict[str, torch.Tensor]]


class HelperGate:
    """Whether sharing a rollout with the helper thread pays (module docstring): the running
    mean of the shared sections' parallelism (:meth:`record`) against ``MIN_PARALLELISM``,
    with a probe every ``PROBE_EVERY`` rollouts while it does not (a probe's measurement
    replaces the mean: one section side by side reopens the gate, a few in a row that are
    not close it)."""

    def __init__(self) -> None:
        self.parallelism: float | None = None  # None: not measured yet (share)
        self._skipped = 0

    def pays(self) -> bool:
        """Whether the next rollout shares (counting the skipped ones towards a probe)."""
        if self.parallelism is None or self.parallelism >= MIN_PARALLELISM:
            return True
        self._skipped += 1
        if self._skipped < PROBE_EVERY:
            return False
        self._skipped = 0
        return True

    def record(self, cpu_seconds: float, wall_seconds: float) -> None:
        """A shared section's CPU time (both threads) and wall time."""
        if wall_seconds <= 0.0:
            return
        measured = cpu_seconds / wall_seconds
        previous = self.parallelism
        if previous is None or previous < MIN_PARALLELISM:  # first, or a probe: as measured
            self.parallelism = measured
        else:
            self.parallelism = 0.7 * previous + 0.3 * measured


#: the process's gate: whether it gets a second core is a property of the host and its load
GATE = HelperGate()


def worth_sharing(configurations: int, gated: bool = True) -> bool:
    """Whether a rollout of ``configurations`` (``B * H``) shares its kernels with the helper
    thread: enough of them to pay for the hand-offs and (``gated``) a helper that runs beside
    the calling thread (:class:`HelperGate`)."""
    if configurations < OVERLAP_MIN_CONFIGS:
        return False
    return GATE.pays() if gated else True


def _submit(fn: Callable[..., Any], *args: Any) -> Future:
    """Run ``fn(*args)`` on the helper thread without a gradient (grad mode is per thread);
    the future's result is ``(fn's value, the helper's CPU seconds for it)``."""
    global _helper
    if _helper is None:
        _helper = ThreadPoolExecutor(max_workers=1, thread_name_prefix="curobo_lite_rollout")

    def job() -> Any:
        start = time.thread_time()
        with torch.no_grad():
            value = fn(*args)
        return value, time.thread_time() - start

    return _helper.submit(job)


class SharedPass:
    """A :class:`RowPass` cut into chunks that the helper and the calling thread drain:
    ``pieces`` equal ones, or chunks of the fractions ``shares`` of the rows in that order
    (the helper takes the first: a larger first chunk keeps it busy while the calling thread
    does its own work)."""

    def __init__(
        self, row_pass: RowPass, pieces: int, shares: tuple[float, ...] | None = None
    ) -> None:
        self.row_pass = row_pass
        self._pending: SimpleQueue = SimpleQueue()
        rows = row_pass.rows
        if shares is None:
            pieces = max(1, min(pieces, rows))
            shares = (1.0 / pieces,) * pieces
        total, bounds = 0.0, [0]
        for share in shares:
            total += share
            bounds.append(min(rows, round(rows * total / sum(shares))))
        for begin, end in zip(bounds[:-1], bounds[1:]):
            if end > begin:
                self._pending.put((begin, end))

    def drain(self) -> None:
        while True:
            try:
                begin, end = self._pending.get_nowait()
            except Empty:
                return
            self.row_pass.run(begin, end)


#: call sites (the code of a pass's ``run``) that have run once: their Warp modules are loaded
_LOADED_SITES: set[Any] = set()


def shared(passes: list[SharedPass], calling_thread_work: Callable[[], Any]) -> Any:
    """Run ``passes`` on the helper while this thread runs ``calling_thread_work()``, then
    help drain them; returns once every chunk has run (the helper never outlives the call:
    it writes buffers the caller reads). A call site's first passes run on this thread alone:
    their first launches load the kernels' Warp modules, and two threads launching a kernel
    whose module is still loading race inside Warp (an ``AttributeError`` on the half-built
    kernel, seen on a fresh process's first MPC step)."""

    def drain_all() -> None:
        for piece in passes:
            piece.drain()

    if not passes:
        return calling_thread_work()
    sites = {getattr(piece.row_pass.run, "__code__", piece.row_pass.run) for piece in passes}
    if not sites <= _LOADED_SITES:
        value = calling_thread_work()
        drain_all()
        _LOADED_SITES.update(sites)
        return value
    wall, cpu = time.perf_counter(), time.thread_time()
    helper = _submit(drain_all)
    try:
        value = calling_thread_work()
        drain_all()
    finally:
        helper_cpu = helper.result()[1]
    GATE.record(time.thread_time() - cpu + helper_cpu, time.perf_counter() - wall)
    return value


def _frames_pass(model: KinematicModel, position: torch.Tensor, spheres: bool) -> RowPass:
    """Forward kinematics of ``position [B, H, D]`` into the model's kept buffers, by rows."""
    kinematics = model.kinematics
    flat = position.reshape(-1, position.shape[-1])
    out = model.frame_buffers(flat.shape[0], spheres)
    if kinematics.backend != "warp":  # one piece: the torch backend computes all rows at once
        return RowPass(1, lambda begin, end: None, lambda: model.frames(position, spheres))
    return RowPass(
        flat.shape[0],
        lambda begin, end: kinematics.forward_rows(flat, out, (begin, end), spheres),
        lambda: kinematics.outputs_state(out, position.shape[:-1], spheres),
    )


def overlapped_terms(
    model: KinematicModel,
    state_seq: JointState,
    spheres: bool,
    costs: Mapping[str, CostBase],
    cost_terms: CostTerms,
    frames_pass: Callable[[CostBase, KinematicModelState], RowPass | None],
    beside_kinematics: Callable[[], Any] | None = None,
) -> tuple[KinematicModelState, dict[str, torch.Tensor]]:
    """The rolled-out state (``state_seq`` and its forward kinematics, with the spheres when
    ``spheres``) and every enabled cost term ``[B, H]`` in the order of ``costs``: forward
    kinematics shared with the helper thread beside the joint-space costs, then the passes
    that ``frames_pass(cost, state)`` gives (the world costs read from the link frames; ``None``
    for the others) beside the remaining costs (module docstring). ``beside_kinematics``: more
    work for the calling thread after the joint-space costs, while the helper still computes
    forward kinematics (the longest pass: the calling thread would otherwise wait for it).
    Call without a gradient, on a CPU device."""
    enabled = [name for name, cost in costs.items() if cost.enabled]
    joint = [name for name in enabled if not isinstance(costs[name], _FRAME_COSTS)]
    fk = _frames_pass(model, state_seq.position, spheres)

    def joint_terms() -> dict[str, torch.Tensor]:
        terms = cost_terms(KinematicModelState(state_seq, None), joint)
        if beside_kinematics is not None:
            beside_kinematics()
        return terms

    terms = shared([SharedPass(fk, PIECES)], joint_terms)
    state = KinematicModelState(state_seq, fk.result())
    passes = {}
    for name in enabled:
        if name not in joint:
            row_pass = frames_pass(costs[name], state)
            if row_pass is not None:
                passes[name] = SharedPass(row_pass, PIECES)
    rest = [name for name in enabled if name not in joint and name not in passes]
    terms.update(shared(list(passes.values()), lambda: cost_terms(state, rest)))
    terms.update({name: piece.row_pass.result() for name, piece in passes.items()})
    return state, {name: terms[name] for name in costs if name in terms}
