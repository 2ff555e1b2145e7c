"""Process-group helpers shared by the all-gather function and the sharded solvers.

Every helper works without ``torch.distributed``: with no initialized process group the program is
a single rank (rank 0 of a world of size 1), so solver code can call them unconditionally.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist

from curobo_lite.types.checks import excerpt
from curobo_lite.types.errors import DistributedError, InputTypeError, InputValueError

_SUPPORTED_BACKENDS = ("gloo", "nccl")
# Variables torchrun (and the env:// rendezvous) sets for every worker.
_TORCHRUN_VARS = ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


def is_distributed() -> bool:
    """True when ``torch.distributed`` is available and a default process group is initialized."""
    return dist.is_available() and dist.is_initialized()


def get_rank(group: dist.ProcessGroup | None = None) -> int:
    """Rank of this process in ``group`` (default group when ``None``); 0 when not distributed."""
    if not is_distributed():
        return 0
    return dist.get_rank(group)


def get_world_size(group: dist.ProcessGroup | None = None) -> int:
    """Number of ranks in ``group`` (the default group when ``None``); 1 when not distributed."""
    if not is_distributed():
        return 1
    return dist.get_world_size(group)


def shard_range(n: int, rank: int, world_size: int) -> tuple[int, int]:
    """Half-open range ``(start, stop)`` of the ``n`` items that ``rank`` owns.

    Items are split as evenly as possible: every rank gets ``n // world_size`` items and the first
    ``n % world_size`` ranks get one more, so the ranges of ranks ``0..world_size-1`` tile
    ``[0, n)`` in order without overlap (ranks past ``n`` get an empty range).
    """
    for arg, value in (("n", n), ("rank", rank), ("world_size", world_size)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise InputTypeError(f"shard_range: {arg} must be an int, received {excerpt(value)}")
    if n < 0:
        raise InputValueError(f"shard_range: n must be >= 0, received {n}")
    if world_size < 1:
        raise InputValueError(f"shard_range: world_size must be >= 1, received {world_size}")
    if not 0 <= rank < world_size:
        raise InputValueError(f"shard_range: rank must be in [0, {world_size}), received {rank}")
    base, remainder = divmod(n, world_size)
    start = rank * base + min(rank, remainder)
    stop = start + base + (1 if rank < remainder else 0)
    return start, stop


@dataclass(frozen=True)
class DistributedContext:
    """Where this process sits in the job: what :func:`init_from_env` set up.

    ``device`` is the device collectives of this rank's group run on (``cuda:LOCAL_RANK`` for NCCL,
    CPU for gloo); ``initialized`` is False for a plain single-process run.
    """

    rank: int
    world_size: int
    local_rank: int
    backend: str | None
    device: torch.device
    initialized: bool

    @property
    def is_main(self) -> bool:
        """True on rank 0, the rank that should print and write files."""
        return self.rank == 0


def _env_int(name: str) -> int:
    raw = os.environ[name]
    try:
        return int(raw)
    except ValueError:
        raise InputValueError(
            f"init_from_env: environment variable {name} must be an integer, "
            f"received {excerpt(raw)}"
        ) from None


def init_from_env(
    backend: str | None = None, timeout: timedelta | None = None
) -> DistributedContext:
    """Initialize the default process group from the variables ``torchrun`` sets.

    Reads ``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT`` and ``LOCAL_RANK`` (default
    0). ``backend`` defaults to ``"nccl"`` when CUDA is available and ``"gloo"`` otherwise; with
    NCCL the current CUDA device is set to ``cuda:LOCAL_RANK``. When none of the variables is set
    (a plain ``python script.py`` run) nothing is initialized and a single-rank context is
    returned, so the same script runs with and without ``torchrun``. When a default group already
    exists it is reused.

    Raises:
        ValueError: unknown backend, NCCL without CUDA, some but not all variables set, or a
            variable that is not an integer.
    """
    if backend is not None and backend not in _SUPPORTED_BACKENDS:
        raise InputValueError(
            f"init_from_env: backend must be one of {_SUPPORTED_BACKENDS} or None, "
            f"received {excerpt(backend)}"
        )
    if backend == "nccl" and not torch.cuda.is_available():
        raise InputValueError("init_from_env: backend 'nccl' needs CUDA, but CUDA is not available")
    if is_distributed():
        active = dist.get_backend()
        if backend is not None and backend != active:
            raise InputValueError(
                f"init_from_env: a process group with backend {active!r} already exists, "
                f"received backend={backend!r}"
            )
        return DistributedContext(
            rank=dist.get_rank(),
            world_size=dist.get_world_size(),
            local_rank=_env_int("LOCAL_RANK") if "LOCAL_RANK" in os.environ else 0,
            backend=active,
            device=_backend_device(active),
            initialized=True,
        )
    present = [name for name in _TORCHRUN_VARS if name in os.environ]
    if not present:
        return DistributedContext(0, 1, 0, None, torch.device("cpu"), initialized=False)
    missing = [name for name in _TORCHRUN_VARS if name not in os.environ]
    if missing:
        raise InputValueError(
            f"init_from_env: environment variables {missing} are missing "
            f"(found {present}); launch with torchrun or set all of {list(_TORCHRUN_VARS)}"
        )
    if not dist.is_available():
        raise InputValueError(
            "init_from_env: torch.distributed is not available in this torch build"
        )
    rank = _env_int("RANK")
    world_size = _env_int("WORLD_SIZE")
    _env_int("MASTER_PORT")  # validated here for a clear message instead of a rendezvous error
    local_rank = _env_int("LOCAL_RANK") if "LOCAL_RANK" in os.environ else 0
    if world_size < 1 or not 0 <= rank < world_size:
        raise InputValueError(
            f"init_from_env: expected 0 <= RANK < WORLD_SIZE, received RANK={rank}, "
            f"WORLD_SIZE={world_size}"
        )
    if backend is None:
        backend = "nccl" if torch.cuda.is_available() else "gloo"
    if backend == "nccl":
        # One GPU per local rank; set before init so NCCL binds its communicator to it.
        torch.cuda.set_device(local_rank)
    kwargs = {} if timeout is None else {"timeout": timeout}
    dist.init_process_group(
        backend=backend, init_method="env://", rank=rank, world_size=world_size, **kwargs
    )
    return DistributedContext(
        rank=rank,
        world_size=world_size,
        local_rank=local_rank,
        backend=backend,
        device=_backend_device(backend),
        initialized=True,
    )


def _backend_device(backend: str) -> torch.device:
    if backend == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def group_device(group: dist.ProcessGroup | None = None) -> torch.device:
    """Device whose tensors the collectives of ``group`` accept: current CUDA device for NCCL,
    CPU otherwise (and CPU when not distributed)."""
    if not is_distributed():
        return torch.device("cpu")
    return _backend_device(dist.get_backend(group))


DEFAULT_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class DistributedConfig:
    """The ``distributed`` section of a task file.

    ``timeout_s``: seconds a collective waits for the other ranks before every waiting rank
    raises :class:`~curobo_lite.types.errors.DistributedError` (a rank that raised, exited or
    hangs then ends the job instead of blocking it); passed to ``init_process_group``.
    """

    timeout_s: float = DEFAULT_TIMEOUT_S

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> DistributedConfig:
        data = {} if data is None else data
        if not isinstance(data, Mapping):
            raise InputTypeError(f"distributed: expected a mapping, received {type(data).__name__}")
        unknown = sorted(str(k) for k in data if k != "timeout_s")
        if unknown:
            raise InputValueError(
                f"distributed: unknown key(s) {unknown}; allowed keys: ['timeout_s']"
            )
        value = data.get("timeout_s", DEFAULT_TIMEOUT_S)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise InputTypeError(
                f"distributed.timeout_s: expected a number, received {excerpt(value)}"
            )
        if not (math.isfinite(value) and value > 0):
            raise InputValueError(
                f"distributed.timeout_s: expected a finite number > 0, received {excerpt(value)}"
            )
        return cls(timeout_s=float(value))

    @property
    def timeout(self) -> timedelta:
        return timedelta(seconds=self.timeout_s)


@contextmanager
def collective_errors(what: str) -> Iterator[None]:
    """Turn the backend's error of a failed collective (gloo/NCCL: a peer closed the
    connection, or the process-group timeout passed) into a :class:`DistributedError` that says
    which rank saw it and what it was doing."""
    try:
        yield
    except DistributedError:
        raise
    except RuntimeError as err:  # torch's DistBackendError and gloo's errors are RuntimeErrors
        raise DistributedError(
            f"rank {get_rank()} of {get_world_size()}: {what}: another rank raised, exited or "
            f"did not answer within the process-group timeout ({type(err).__name__}: "
            f"{str(err).splitlines()[0] if str(err) else ''})"
        ) from err
