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
