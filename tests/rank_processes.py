"""Spawning ranks for the fault tests (``test_distributed_faults.py``,
``test_sharded_faults.py``): a free loopback port, and a run of rank processes that kills
whatever outlives a deadline and reports which survivors hung."""

from __future__ import annotations

import multiprocessing
import socket
import time
from collections.abc import Callable, Sequence


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_ranks(
    target: Callable[..., None], args: Sequence[tuple], survivors: int, deadline_s: float
) -> list[int]:
    """Spawn ``target(*args[r])`` per rank ``r``, wait up to ``deadline_s`` for the first
    ``survivors`` ranks, kill every process still alive; the survivors that were still
    running at the deadline (hung)."""
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=target, args=a) for a in args]
    for p in procs:
        p.start()
    deadline = time.monotonic() + deadline_s
    for p in procs[:survivors]:
        p.join(max(0.0, deadline - time.monotonic()))
    hung = [r for r, p in enumerate(procs[:survivors]) if p.is_alive()]
    for p in procs:
        if p.is_alive():
            p.kill()
        p.join()
    return hung
