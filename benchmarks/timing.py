"""Shared timing and reporting for the benchmark scripts (run them from the repo root)."""

from __future__ import annotations

import json
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch

from curobo_lite.config_files import atomic_open


def timeit(
    fn: Callable[[], object],
    device: torch.device,
    min_time: float = 0.5,
    min_reps: int = 5,
    max_reps: int = 1000,
) -> float:
    """Median seconds per call of ``fn`` after a warm-up, repeated for at least ``min_time``
    seconds and ``min_reps`` calls; CUDA work is synchronized before each clock read."""

    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    for _ in range(3):
        fn()
    sync()
    samples: list[float] = []
    start = time.perf_counter()
    while len(samples) < max_reps and (
        time.perf_counter() - start < min_time or len(samples) < min_reps
    ):
        t0 = time.perf_counter()
        fn()
        sync()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def write_json(path: str, meta: dict[str, Any], rows: Any) -> None:
    """Write ``{"meta": ..., "rows": ...}`` with the torch version and threads added to meta."""
    directory = os.path.dirname(path)
    if directory:
        os.makedirs(directory, exist_ok=True)
    meta = {
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "cpu_count": os.cpu_count(),
        **meta,
    }
    with atomic_open(path, "w", encoding="utf-8") as f:
        json.dump({"meta": meta, "rows": rows}, f, indent=2)
    print(f"wrote {path}")
