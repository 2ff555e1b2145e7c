"""One call at a time per solver: :func:`exclusive` guards a solver's public methods.

A solver keeps buffers, warm starts and optimizer state between calls, so two threads calling
the same solver at once (a ROS callback and a timer) would corrupt each other's results. A
guarded method takes the solver's lock without waiting: while a call of that solver runs in
one thread, a call from another thread raises :class:`~curobo_lite.types.ConcurrentUseError`
at once, naming the solver and both methods, before it touches any state; the running call
completes unharmed. Calls from the same thread nest (a re-entrant lock), so a guarded method
may call another one of its solver. Solvers that share a world (a MotionGen's inner solvers)
each have their own lock.

The outermost guarded call also runs under the solver's CPU thread setting: a solver with a
``cpu_torch_threads`` attribute (an int, or None to leave torch alone) runs its torch ops on
that many threads on a CPU device (:func:`~curobo_lite.kernels.launch.torch_cpu_threads`).

The guard costs one uncontended lock acquire per call (no device sync).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from curobo_lite.kernels.launch import torch_cpu_threads
from curobo_lite.types.errors import ConcurrentUseError

_Method = TypeVar("_Method", bound=Callable[..., Any])
_LOCK = "_exclusive_lock"
_RUNNING = "_exclusive_running"


def exclusive(method: _Method) -> _Method:
    """Decorate a solver method so that a concurrent call from another thread raises
    :class:`~curobo_lite.types.ConcurrentUseError` instead of running."""

    @functools.wraps(method)
    def guarded(self: Any, *args: Any, **kwargs: Any) -> Any:
        lock = self.__dict__.get(_LOCK)
        if lock is None:  # dict.setdefault is atomic: one lock per solver, however it races
            lock = self.__dict__.setdefault(_LOCK, threading.RLock())
        if not lock.acquire(blocking=False):
            running = self.__dict__.get(_RUNNING, "a call")
            raise ConcurrentUseError(
                f"{type(self).__name__}.{method.__name__}: the solver is busy with {running} "
                f"in another thread; a solver serves one thread at a time (use one solver per "
                f"thread, or serialize the calls with a lock of your own)"
            )
        outer = _RUNNING not in self.__dict__
        try:
            if not outer:
                return method(self, *args, **kwargs)
            self.__dict__[_RUNNING] = f"{method.__name__}()"
            threads = getattr(self, "cpu_torch_threads", None)
            if threads is None:
                return method(self, *args, **kwargs)
            with torch_cpu_threads(threads, self.tensor_args.device):
                return method(self, *args, **kwargs)
        finally:
            if outer:
                self.__dict__.pop(_RUNNING, None)
            lock.release()

    return guarded  # type: ignore[return-value]
