"""kernels.launch.launch_rows: a CPU launch split over the pool gives the rows of one unsplit
launch (against plain torch arithmetic), also in a child forked after the pool started."""

from __future__ import annotations

import os

import pytest
import torch
import warp as wp
from forked_child import check_in_forked_child

from curobo_lite.kernels import launch


@wp.kernel
def _scale_rows(x: wp.array2d(dtype=wp.float32), row_begin: int, out: wp.array2d(dtype=wp.float32)):
    i, j = wp.tid()
    row = row_begin + i
    out[row, j] = 2.0 * x[row, j] + float(row)


def _launch(x: torch.Tensor, elements: int) -> torch.Tensor:
    out = torch.full_like(x, float("nan"))
    wx, wout = launch.as_warp(x), launch.as_warp(out)

    def make_launch(begin: int, end: int):
        return (end - begin, x.shape[1]), [wx, begin, wout]

    launch.launch_rows(_scale_rows, x.shape[0], x.device, make_launch, elements)
    return out


def _expected(x: torch.Tensor) -> torch.Tensor:
    return 2.0 * x + torch.arange(x.shape[0], dtype=x.dtype)[:, None]


@pytest.fixture
def two_threads():
    wp.init()
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(threads)


def test_split_launch_covers_every_row_once(two_threads):
    x = torch.randn(37, 5)
    elements = launch.CPU_CHUNK_MIN_ELEMENTS  # worth splitting: one chunk per worker
    assert len(launch.cpu_row_chunks(x.shape[0], elements, 3)) == 6
    torch.testing.assert_close(_launch(x, elements), _expected(x), rtol=0, atol=1e-6)
    torch.testing.assert_close(_launch(x, 1), _expected(x), rtol=0, atol=1e-6)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
def test_split_launch_runs_in_a_forked_child(two_threads):
    x = torch.randn(16, 3)
    elements = launch.CPU_CHUNK_MIN_ELEMENTS
    torch.testing.assert_close(_launch(x, elements), _expected(x), rtol=0, atol=1e-6)
    assert launch._cpu_pool is not None  # the parent's pool has started
    check_in_forked_child(
        lambda: bool((_launch(x, elements) - _expected(x)).abs().max() < 1e-6), "split launch"
    )
