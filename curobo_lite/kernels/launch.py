"""Launching row-parallel Warp kernels on the tensors' device.

Warp runs a CPU launch on one thread (and releases the GIL while it runs): a CPU launch with
enough work is split into contiguous row chunks launched from a small thread pool, one chunk per
torch intra-op thread. CUDA launches go on torch's current stream in one piece.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from queue import Empty, SimpleQueue
from typing import Any

import torch
import warp as wp

#: descriptors by (address, dtype, shape, strides, device), which is all a descriptor holds:
#: the constant tables and reused buffers of every launch hit it (~1.2 us instead of ~4 us)
_DESCRIPTORS: dict[tuple, object] = {}
_DESCRIPTOR_CACHE_SIZE = 4096


def as_warp(t: torch.Tensor, dtype: type | None = None):
    """Zero-copy Warp descriptor of a tensor for a kernel launch; ``requires_grad=False`` stops
    Warp allocating a gradient array for inputs that require grad on the torch side (autograd
    is ours, not Warp's tape).

    The descriptor keeps ``t`` alive, as Warp's own does (an argument list may hold the only
    reference to a temporary). It is a copy of one cached by what it holds (address, dtype,
    shape, strides, device): the cached one must not keep its tensor alive, or it would hold
    every tensor ever launched on until the cache clears (memory the allocator cannot reuse, and
    gradients autograd must copy instead of taking).

    ``dtype``: a Warp vector type whose length is ``t``'s last dimension, to see ``t`` as an
    array of such vectors (the last dimension must be contiguous); ``None``: ``t``'s scalars."""
    key = (t.data_ptr(), t.dtype, t.shape, t.stride(), t.device, dtype)
    template = _DESCRIPTORS.get(key)
    if template is None:
        if len(_DESCRIPTORS) >= _DESCRIPTOR_CACHE_SIZE:
            _DESCRIPTORS.clear()
        template = wp.from_torch(t, dtype=dtype, requires_grad=False, return_ctype=True)
        template._ref = None
        template._gradref = None
        _DESCRIPTORS[key] = template
    descriptor = type(template).from_buffer_copy(template)
    descriptor._ref = t
    return descriptor


#: below this many elements of work a CPU launch is not worth splitting. Measured on 2 cores:
#: split launches between torch ops lose to the torch threads' spin-waits and the pool's
#: hand-offs (MotionGen's median 0.41-0.47 s with 1 << 17, 0.29-0.33 s unsplit: its launches
#: are 0.1-2 ms); from ~10 ms of work they gain ~2x (the 10 000 x 32 x 7 step kernels, MPC's
#: 12 000-configuration FK, self-collision and world queries), and those lie above this
CPU_CHUNK_MIN_ELEMENTS = 1 << 21
_cpu_pool: ThreadPoolExecutor | None = None
#: CPU launch workers while :func:`torch_cpu_threads` holds torch's threads down (None: torch's)
_cpu_workers: int | None = None
#: per thread: inside :func:`serial_cpu_launches`
_serial = threading.local()
#: per thread: the launches :func:`recorded_cpu_launches` records (None: launches run)
_recording = threading.local()


def _forget_cpu_pool() -> None:
    """In a forked child: the parent's pool threads do not exist there (a chunk submitted to
    the pool would never run and the launch would wait forever), so the next split launch
    starts a pool of its own."""
    global _cpu_pool
    _cpu_pool = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_cpu_pool)

#: ``make_launch(row_begin, row_end) -> (dim, inputs)`` for rows ``row_begin:row_end``
MakeLaunch = Callable[[int, int], tuple[int | Sequence[int], list]]


def cpu_launch_workers() -> int:
    """Threads a CPU row launch is split over: torch's intra-op threads, or the count they had
    before :func:`torch_cpu_threads` lowered them; 1 inside :func:`serial_cpu_launches`."""
    if getattr(_serial, "on", False):
        return 1
    return _cpu_workers if _cpu_workers is not None else torch.get_num_threads()


@contextlib.contextmanager
def torch_cpu_threads(threads: int | None, device: torch.device) -> Iterator[None]:
    """Run the block with torch's intra-op threads set to ``threads`` on a CPU ``device``
    (nothing changes on CUDA or with ``None``); Warp's row launches keep the threads torch had.

    Why: a planner's torch ops are small (tens to thousands of rows), and with 2 threads
    torch's OpenMP workers spin after every parallel op: MotionGen on MBM problems used 2.7x
    the CPU time for no shorter wall time, and beside other work the spinning workers wait
    for each other (3x the wall time). The heavy, row-parallel Warp kernels still split."""
    global _cpu_workers
    restore = torch.get_num_threads()
    if threads is None or device.type != "cpu" or threads == restore or _cpu_workers is not None:
        yield
        return
    _cpu_workers = restore
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(restore)
        _cpu_workers = None


@contextlib.contextmanager
def serial_cpu_launches() -> Iterator[None]:
    """Run the block's CPU row launches in one piece each (no worker threads): for a caller
    that already shares rows between threads itself (the fused MPPI rollout), where a split
    launch inside each share would put four threads on two cores. Per thread: two threads
    sharing a rollout enter and leave it in any order (a process-wide setting restored by one
    of them would keep the other's value after both left)."""
    restore = getattr(_serial, "on", False)
    _serial.on = True
    try:
        yield
    finally:
        _serial.on = restore


@contextlib.contextmanager
def recorded_cpu_launches() -> Iterator[list]:
    """Record the block's CPU :func:`launch_rows` launches instead of running them: the list it
    yields fills with Warp's ``Launch`` objects (one per launch, each in one piece), which
    ``launch.launch()`` replays on the arguments they were recorded with (the same tensors:
    their addresses, shapes and strides, and the same scalars). Replaying skips Warp's
    argument packing (~13 us of a 10-argument launch, ~2.6 us left): for a caller that
    launches the same kernels on the same buffers every call (the fused MPPI rollout) and
    keys the recordings by what their arguments hold. Nothing is computed inside the block,
    so it must not read what its launches would write. Per thread."""
    restore = getattr(_recording, "launches", None)
    _recording.launches = launches = []
    try:
        yield launches
    finally:
        _recording.launches = restore


def launch_key(*tensors: torch.Tensor) -> tuple:
    """What a Warp descriptor of each tensor holds (address, shape, strides): launches whose
    tensor arguments have equal keys (and equal scalars) are the same launch."""
    return tuple((t.data_ptr(), t.shape, t.stride()) for t in tensors)


def replayed(cache: dict, key: tuple, launch: Callable[[], Any], device: torch.device) -> Any:
    """``launch()``'s value, its CPU :func:`launch_rows` launches recorded the first time under
    ``key`` and replayed after (:func:`recorded_cpu_launches`): ``key`` must hold what those
    launches' arguments hold (:func:`launch_key` of their tensors, their scalars), and
    ``launch()`` must compute nothing but them (its value, e.g. an output tensor, is kept and
    returned again: the replays rewrite it). On CUDA ``launch()`` runs every time."""
    if device.type != "cpu":
        return launch()
    entry = cache.get(key)
    if entry is None:
        with recorded_cpu_launches() as launches:
            value = launch()
        if len(cache) >= 16:
            cache.clear()
        entry = cache[key] = (launches, value)
    for recorded in entry[0]:
        recorded.launch()
    return entry[1]


def cpu_row_chunks(rows: int, elements: int, pieces_per_worker: int = 1) -> list[tuple[int, int]]:
    """Contiguous ``(begin, end)`` row ranges for a CPU launch of ``elements`` work:
    ``pieces_per_worker`` per worker thread (:func:`cpu_launch_workers`; one range if not
    worth splitting)."""
    workers = min(cpu_launch_workers(), rows)
    if workers < 2 or elements < CPU_CHUNK_MIN_ELEMENTS:
        return [(0, rows)]
    pieces = min(workers * max(pieces_per_worker, 1), rows)
    bounds = [rows * k // pieces for k in range(pieces + 1)]
    return list(zip(bounds[:-1], bounds[1:]))


def launch_rows(
    kernel: wp.Kernel,
    rows: int,
    device: torch.device,
    make_launch: MakeLaunch,
    elements: int,
    pieces_per_worker: int = 1,
) -> None:
    """Launch ``kernel`` over ``rows`` independent rows: in one piece on CUDA (torch's current
    stream), in row chunks over worker threads on a busy-enough CPU launch.

    ``pieces_per_worker > 1`` cuts a CPU launch finer than one chunk per thread: the threads
    take the next chunk as they finish one, so rows of uneven cost, or a core that other work
    holds for a while, do not leave one thread idle while the other finishes (each chunk costs
    one ``wp.launch``, ~30 us on a CPU)."""
    global _cpu_pool
    if rows == 0:
        return
    wp_device = wp.device_from_torch(device)
    if device.type == "cuda":
        dim, inputs = make_launch(0, rows)
        wp.launch(
            kernel, dim=dim, inputs=inputs, device=wp_device, stream=wp.stream_from_torch(device)
        )
        return
    recorded = getattr(_recording, "launches", None)
    if recorded is not None:  # recorded whole, to replay later (recorded_cpu_launches)
        dim, inputs = make_launch(0, rows)
        launch = wp.launch(kernel, dim=dim, inputs=inputs, device=wp_device, record_cmd=True)
        recorded.append(launch)
        return
    chunks = cpu_row_chunks(rows, elements, pieces_per_worker)
    if len(chunks) == 1:
        dim, inputs = make_launch(0, rows)
        wp.launch(kernel, dim=dim, inputs=inputs, device=wp_device)
        return
    helpers = min(cpu_launch_workers(), len(chunks)) - 1
    if _cpu_pool is None or _cpu_pool._max_workers < helpers:
        _cpu_pool = ThreadPoolExecutor(max_workers=helpers, thread_name_prefix="curobo_lite")
    pending: SimpleQueue = SimpleQueue()
    for begin, end in chunks:
        pending.put(make_launch(begin, end))

    def drain() -> None:
        while True:
            try:
                dim, inputs = pending.get_nowait()
            except Empty:
                return
            wp.launch(kernel, dim=dim, inputs=inputs, device=wp_device)

    # the calling thread drains too (Warp releases the GIL during a CPU launch) instead of
    # idling while the pool works: one hand-off fewer per launch
    futures = [_cpu_pool.submit(drain) for _ in range(helpers)]
    try:
        drain()
    finally:
        for future in futures:
            future.result()
