"""Shared fixtures: every device-generic test runs on CPU and, where present, CUDA."""

from __future__ import annotations

import os
import sys

import pytest
import torch

# tests import their independent references (e.g. step_reference) as plain modules
sys.path.insert(0, os.path.dirname(__file__))

DEVICES = [
    pytest.param("cpu", id="cpu"),
    pytest.param(
        "cuda",
        id="cuda",
        marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device"),
    ),
]


@pytest.fixture(params=DEVICES)
def device(request) -> torch.device:
    return torch.device(request.param)


if os.environ.get("CUROBO_LITE_WARP_DEBUG"):
    # `make test-debug`: every Warp kernel built with bounds-checked array indexing (an
    # out-of-bounds read or write aborts with the kernel and index instead of corrupting memory),
    # in a kernel cache of its own
    import warp as wp

    from curobo_lite.kernels import launch

    wp.config.mode = "debug"
    wp.config.kernel_cache_dir = os.path.join(
        os.path.expanduser("~"), ".cache", "curobo_lite", "warp_debug"
    )
    # CPU launches in one piece: Warp's debug build of the FK kernel crashed when two threads
    # launched it at once (warp-lang 1.19; run one after the other, on any thread, it matches
    # the reference, and release builds launched from two threads match it too)
    launch.CPU_CHUNK_MIN_ELEMENTS = 1 << 62
