"""Replaying a solver's hot call from a captured CUDA graph (``use_cuda_graph: true``).

A captured graph replays the kernels of one call with the addresses they had at capture, so the
call must read its inputs from tensors that keep their addresses and must make no host reads
(``tests/test_host_sync.py`` checks the MPPI and L-BFGS iterations for both). :class:`GraphedCall`
holds one such call: it runs it eagerly for ``warmup_calls`` calls (on a side stream, as torch
asks before a capture), then captures it once and replays the graph on later calls. The caller
passes a ``key`` of every host-side value the call depends on (batch sizes, which costs run,
the world's revision): a new key captures again.

On a CPU device the call always runs eagerly: there is nothing to capture.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import torch

_warned_cpu = False


def graphs_available(device: torch.device, requested: bool) -> bool:
    """Whether ``use_cuda_graph`` can take effect on ``device``: a CUDA device; a request on
    another device warns once and runs eagerly."""
    global _warned_cpu
    if not requested:
        return False
    if device.type == "cuda":
        return True
    if not _warned_cpu:
        warnings.warn(
            f"use_cuda_graph: true has no effect on device {device}; running eagerly",
            stacklevel=3,
        )
        _warned_cpu = True
    return False


def capturing(device: torch.device) -> bool:
    """Whether work on ``device`` is being recorded into a CUDA graph right now (a host read
    would fail there; CPU-only torch builds have no capture to ask about)."""
    return device.type == "cuda" and torch.cuda.is_current_stream_capturing()


class GraphedCall:
    """``fn()`` run eagerly or replayed from a CUDA graph.

    Args:
        fn: the call; it reads only tensors whose addresses stay fixed between calls with the
            same key, and returns a tensor or a (nested) tuple/dict of tensors. The returned
            tensors are the graph's own outputs: the next call overwrites them, so copy what
            you keep.
        device: where ``fn`` runs.
        enabled: capture (on CUDA); ``False`` always runs ``fn`` eagerly.
        warmup_calls: eager calls before the capture (lazy allocations, library handles).
        generators: private ``torch.Generator`` objects ``fn`` draws from; their state is
            registered with the graph so that every replay draws new numbers.
    """

    def __init__(
        self,
        fn: Callable[[], Any],
        device: torch.device,
        enabled: bool,
        warmup_calls: int = 2,
        generators: Sequence[torch.Generator] = (),
    ) -> None:
        self.fn = fn
        self.device = torch.device(device)
        self.enabled = graphs_available(self.device, enabled)
        self.warmup_calls = warmup_calls
        self.generators = tuple(generators)
        self._key: Hashable = None
        self._graph: torch.cuda.CUDAGraph | None = None
        self._outputs: Any = None
        self._eager_calls = 0
        #: captures made so far (a test and a profile read it)
        self.captures = 0

    def reset(self) -> None:
        """Drop the graph: the next call warms up and captures again."""
        self._graph = None
        self._outputs = None
        self._key = None
        self._eager_calls = 0

    @property
    def captured(self) -> bool:
        return self._graph is not None

    def __call__(self, key: Hashable = None) -> Any:
        if not self.enabled:
            return self.fn()
        if key != self._key:
            self.reset()
            self._key = key
        if self._graph is not None:
            self._graph.replay()
            return self._outputs
        stream = torch.cuda.Stream(self.device)
        stream.wait_stream(torch.cuda.current_stream(self.device))
        if self._eager_calls < self.warmup_calls:
            self._eager_calls += 1
            with torch.cuda.stream(stream):
                out = self.fn()
            torch.cuda.current_stream(self.device).wait_stream(stream)
            return out
        graph = torch.cuda.CUDAGraph()
        for generator in self.generators:
            graph.register_generator_state(generator)
        with torch.cuda.stream(stream), torch.cuda.graph(graph, stream=stream):
            self._outputs = self.fn()
        torch.cuda.current_stream(self.device).wait_stream(stream)
        self._graph = graph
        self.captures += 1
        # capturing records the kernels without running them: run the call once now
        graph.replay()
        return self._outputs
