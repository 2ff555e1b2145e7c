"""Launching row-parallel Warp kernels on the tensors' device.

Warp runs a CPU launch on one thread (and releases the GIL while it runs): a CPU launch with
enough work is split into contiguous row chunks launched from a small thread pool, one chunk per
torch intra-op thread. CUDA launches go on torch's current stream in one piece.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

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

#: ``make_launch(row_begin, row_end) -> (dim, inputs)`` for rows ``row_begin:row_end``
MakeLaunch = Callable[[int, int], tuple[int | Sequence[int], list]]


def cpu_row_chunks(rows: int, elements: int) -> list[tuple[int, int]]:
    """Contiguous ``(begin, end)`` row ranges for a CPU launch of ``elements`` work."""
    workers = min(torch.get_num_threads(), rows)
    if workers < 2 or elements < CPU_CHUNK_MIN_ELEMENTS:
        return [(0, rows)]
    bounds = [rows * k // workers for k in range(workers + 1)]
    return list(zip(bounds[:-1], bounds[1:]))


def launch_rows(
    kernel: wp.Kernel, rows: int, device: torch.device, make_launch: MakeLaunch, elements: int
) -> None:
    """Launch ``kernel`` over ``rows`` independent rows: in one piece on CUDA (torch's current
    stream), in row chunks over worker threads on a busy-enough CPU launch."""
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
    chunks = cpu_row_chunks(rows, elements)
    if len(chunks) == 1:
        dim, inputs = make_launch(0, rows)
        wp.launch(kernel, dim=dim, inputs=inputs, device=wp_device)
        return
    # the calling thread runs the first chunk itself (Warp releases the GIL during a CPU
    # launch) instead of idling while the pool runs it: one hand-off fewer per launch
    if _cpu_pool is None or _cpu_pool._max_workers < len(chunks) - 1:
        _cpu_pool = ThreadPoolExecutor(
            max_workers=len(chunks) - 1, thread_name_prefix="curobo_lite"
        )
    launches = [make_launch(begin, end) for begin, end in chunks]
    futures = [
        _cpu_pool.submit(wp.launch, kernel, dim=dim, inputs=inputs, device=wp_device)
        for dim, inputs in launches[1:]
    ]
    dim, inputs = launches[0]
    try:
        wp.launch(kernel, dim=dim, inputs=inputs, device=wp_device)
    finally:
        for future in futures:
            future.result()
