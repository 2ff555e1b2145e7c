"""Scale tracking: which cost terms dominate an optimization.

:class:`ScaleTracker` is an identity autograd function that records the standard deviation of a
tensor in the forward pass and of its gradient in the backward pass. :class:`ScaleTrackingSession`
collects those records per named term and per optimizer iteration.

The record follows ``unit_scaling.utils`` (Graphcore): a :class:`ScalePair`'s ``forward`` and
``backward`` are ``None`` until recorded, then hold the std of the latest tensor and of the latest
gradient as floats, overwritten by each new call (:attr:`ScaleTrackingSession.scales` gives the
latest pair of every term). The values over time live apart, in :class:`ScaleHistory`: the
session's :meth:`~ScaleTrackingSession.history`, table and plot are built from it::

    with track_scales() as session:
        for _ in range(iters):
            cost = rollout(x)            # cost code calls track("pose", pose_cost), ...
            cost.sum().backward()
            optimizer.step()
    print(session.table())
    session.plot("scales.png")

What to track: the backward record is the std of the gradient arriving at the tracked tensor.
Tracking a term's *output* shows the weight the loss puts on it (a plain weighted sum gives a
constant gradient, std 0). To see how hard a term pulls on the optimization variables, track
the term's *input* instead, e.g. ``pose_cost(track("pose", ee_position))``: the tracker then sees
only the gradient flowing through that term.

Cost code calls the module-level :func:`track` unconditionally: outside a session it returns the
tensor itself after a single context-variable lookup, so it costs nothing in production.

Each record reads a value back to the host (``.item()``), which synchronizes the device: tracking
is a debugging tool, not something to leave on in a timed loop or a captured CUDA graph.

Standard deviations use Bessel's correction (``Tensor.std()``), computed in float32 for
half-precision inputs, float64 for integer and bool inputs. A tensor with fewer than two elements
has no defined standard deviation and records ``nan`` (rather than being skipped), so every
forward call leaves exactly one record.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar, Token
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from curobo_lite.types.errors import InputTypeError, InputValueError


@dataclass
class ScalePair:
    """The standard deviations of one tensor in the forward and the backward pass, as in
    ``unit_scaling.utils.ScalePair``: ``None`` until :class:`ScaleTracker` records a value, then
    the std of the *latest* tensor (forward) and of the *latest* gradient (backward); each new
    call overwrites the previous value. Every value is kept in :class:`ScaleHistory`."""

    forward: float | None = None
    backward: float | None = None

    def __str__(self) -> str:
        fwd = "n/a" if self.forward is None else f"{self.forward:.3}"
        bwd = "n/a" if self.backward is None else f"{self.backward:.3}"
        return f"(-> {fwd}, <- {bwd})"


@dataclass
class ScaleHistory:
    """A list of standard deviations per pass for the term ``name``: what a session reports.

    Kept by :class:`ScaleTracker` when given one (one ``forward`` entry per forward call, one
    ``backward`` entry per backward call), and returned by :meth:`ScaleTrackingSession.history`
    as one entry per iteration."""

    name: str = ""
    forward: list[float] = field(default_factory=list)
    backward: list[float] = field(default_factory=list)


def tensor_std(t: torch.Tensor) -> float:
    """``t.std()`` as a float; ``nan`` with fewer than 2 elements. Any shape and dtype."""
    if t.numel() < 2:
        return math.nan
    t = t.detach()
    if not (t.is_floating_point() or t.is_complex()):
        t = t.to(torch.float64)
    elif t.element_size() < 4:
        # half/bfloat16 sums lose precision over large tensors
        t = t.float()
    return float(t.std())


class ScaleTracker(torch.autograd.Function):
    """``ScaleTracker.apply(t, pair[, history])``: returns ``t`` unchanged and records its scales.

    As ``unit_scaling.utils.ScaleTracker``: forward sets ``pair.forward = t.std()``; backward sets
    ``pair.backward`` to the incoming gradient's std and passes the gradient through unchanged.
    Both are overwritten by every new call. When a :class:`ScaleHistory` is passed as well, every
    value is also appended to it. A gradient that arrives as ``None`` (the output did not reach
    the loss) records ``0.0``, the std of the zero gradient it stands for, and is passed on as
    ``None``.

    The output is a view of ``t`` (autograd's handling of an input returned as-is): like any
    custom-Function view it must not be modified in place; clone it first if needed. Forward-mode
    AD passes tangents through; double backward works (backward is the identity).
    """

    @staticmethod
    def forward(
        ctx: Any, t: torch.Tensor, pair: ScalePair, history: ScaleHistory | None = None
    ) -> torch.Tensor:
        ctx.set_materialize_grads(False)
        ctx.pair = pair
        ctx.history = history
        pair.forward = tensor_std(t)
        if history is not None:
            history.forward.append(pair.forward)
        return t

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor | None) -> tuple[torch.Tensor | None, None, None]:
        ctx.pair.backward = 0.0 if grad is None else tensor_std(grad)
        if ctx.history is not None:
            ctx.history.backward.append(ctx.pair.backward)
        return grad, None, None

    @staticmethod
    def jvp(ctx: Any, t_dot: torch.Tensor, *_rest: Any) -> torch.Tensor:
        # The primal output is a view of the input, so autograd requires a view tangent too.
        return t_dot.view_as(t_dot)


@dataclass
class _Call:
    """One ``track`` call: the iteration it happened in, its latest scales and all of them."""

    iteration: int
    pair: ScalePair
    history: ScaleHistory


def _mean(values: list[float]) -> float:
    finite = [v for v in values if not math.isnan(v)]
    return sum(finite) / len(finite) if finite else math.nan


def _last(values: list[float]) -> float:
    for v in reversed(values):
        if not math.isnan(v):
            return v
    return math.nan


_ACTIVE: ContextVar[ScaleTrackingSession | None] = ContextVar(
    "curobo_lite_scale_session", default=None
)


class ScaleTrackingSession:
    """Forward and backward scales of named terms, grouped by optimizer iteration.

    Iterations: :meth:`iteration_end` closes the current one. With ``auto_iteration=True`` a term
    tracked a second time in the open iteration also closes it first, which fits the plain loop
    "rollout, backward, step" with each term tracked once per iteration; solvers that evaluate the
    cost several times per iteration (line search) pass ``auto_iteration=False`` and call
    :meth:`iteration_end` themselves. Within an iteration a term's value is the mean over its
    calls (and over repeated backward passes). A backward pass that runs after the session has
    been exited is still recorded in the iteration of its forward call.
    """

    def __init__(self, auto_iteration: bool = True) -> None:
        if not isinstance(auto_iteration, bool):
            raise InputTypeError(
                f"ScaleTrackingSession: auto_iteration must be a bool, received {auto_iteration!r}"
            )
        self.auto_iteration = auto_iteration
        self._calls: dict[str, list[_Call]] = {}
        self._iteration = 0
        self._seen_this_iteration: set[str] = set()
        self._tokens: list[Token] = []

    # -- recording ---------------------------------------------------------------------------

    def track(self, name: str, tensor: torch.Tensor) -> torch.Tensor:
        """Record ``tensor``'s scale (and later its gradient's) under ``name``; returns an
        identity view of ``tensor`` (any shape and dtype)."""
        if not isinstance(name, str) or not name:
            raise InputTypeError(f"track: name must be a non-empty str, received {name!r}")
        if not isinstance(tensor, torch.Tensor):
            raise InputTypeError(
                f"track: tensor must be a torch.Tensor, received {type(tensor).__name__}"
            )
        if self.auto_iteration and name in self._seen_this_iteration:
            self.iteration_end()
        self._seen_this_iteration.add(name)
        call = _Call(self._iteration, ScalePair(), ScaleHistory(name=name))
        self._calls.setdefault(name, []).append(call)
        return ScaleTracker.apply(tensor, call.pair, call.history)

    def iteration_end(self) -> None:
        """Close the current iteration; later records belong to the next one. Iterations with
        no record at the end are not counted."""
        self._iteration += 1
        self._seen_this_iteration.clear()

    # -- results -----------------------------------------------------------------------------

    @property
    def names(self) -> list[str]:
        """Tracked term names, in the order they were first tracked."""
        return list(self._calls)

    @property
    def num_iterations(self) -> int:
        """Number of iterations up to the last one that has a record."""
        last = [calls[-1].iteration for calls in self._calls.values() if calls]
        return max(last) + 1 if last else 0

    @property
    def scales(self) -> dict[str, ScalePair]:
        """The latest :class:`ScalePair` of each term (that of its last ``track`` call), like
        ``unit_scaling``'s ``ScaleDict``; ``None`` fields where nothing was recorded yet."""
        return {name: calls[-1].pair for name, calls in self._calls.items()}

    def history(self, name: str) -> ScaleHistory:
        """Per-iteration scales of ``name``: ``forward[i]`` / ``backward[i]`` are the means over
        iteration ``i`` (``nan`` where nothing was recorded), each of length
        :attr:`num_iterations`."""
        if name not in self._calls:
            raise InputValueError(f"history: no term named {name!r}; tracked terms: {self.names}")
        n = self.num_iterations
        fwd: list[list[float]] = [[] for _ in range(n)]
        bwd: list[list[float]] = [[] for _ in range(n)]
        for call in self._calls[name]:
            fwd[call.iteration].extend(call.history.forward)
            bwd[call.iteration].extend(call.history.backward)
        return ScaleHistory(
            name=name, forward=[_mean(v) for v in fwd], backward=[_mean(v) for v in bwd]
        )

    def summary(self) -> dict[str, dict[str, float]]:
        """Per term: ``forward_last``, ``forward_mean``, ``backward_last``, ``backward_mean`` and
        ``ratio`` = ``backward_mean / forward_mean`` (means over iterations, ``nan`` ignored)."""
        out: dict[str, dict[str, float]] = {}
        for name in self._calls:
            h = self.history(name)
            fwd_mean, bwd_mean = _mean(h.forward), _mean(h.backward)
            ratio = bwd_mean / fwd_mean if fwd_mean and not math.isnan(fwd_mean) else math.nan
            out[name] = {
                "calls": len(self._calls[name]),
                "forward_last": _last(h.forward),
                "forward_mean": fwd_mean,
                "backward_last": _last(h.backward),
                "backward_mean": bwd_mean,
                "ratio": ratio,
            }
        return out

    def to_dict(self) -> dict[str, Any]:
        """Plain-Python record: ``{"num_iterations", "terms": {name: {"forward": [...],
        "backward": [...], "summary": {...}}}}`` (lists per iteration, ``nan`` where absent)."""
        summary = self.summary()
        terms = {}
        for name in self._calls:
            h = self.history(name)
            terms[name] = {"forward": h.forward, "backward": h.backward, "summary": summary[name]}
        return {"num_iterations": self.num_iterations, "terms": terms}

    def table(self) -> str:
        """Fixed-width text table, one row per term: calls, last/mean forward std, last/mean
        backward std and the backward/forward ratio of the means."""
        header = ("term", "calls", "fwd last", "fwd mean", "bwd last", "bwd mean", "bwd/fwd")
        stats = ("forward_last", "forward_mean", "backward_last", "backward_mean", "ratio")
        rows = [
            (name, str(int(s["calls"])), *(f"{s[k]:.3e}" for k in stats))
            for name, s in self.summary().items()
        ]
        if not rows:
            return "scale tracking: no terms tracked"
        widths = [max(len(r[i]) for r in (header, *rows)) for i in range(len(header))]

        def fmt(row: tuple[str, ...]) -> str:
            first = row[0].ljust(widths[0])
            rest = (cell.rjust(w) for cell, w in zip(row[1:], widths[1:], strict=True))
            return "  ".join((first, *rest))

        lines = [
            f"scale tracking: {len(rows)} terms over {self.num_iterations} iterations",
            fmt(header),
            "  ".join("-" * w for w in widths),
            *(fmt(r) for r in rows),
        ]
        return "\n".join(lines)

    def plot(self, path: str | Path, title: str | None = None) -> Path:
        """Write a figure of forward (top) and backward (bottom) std per term over iterations,
        log y axis, to ``path`` (format from the suffix, e.g. ``.png``, ``.pdf``). Returns the
        path. Needs matplotlib; drawn on the Agg canvas, so no display and no pyplot state."""
        try:
            from matplotlib.backends.backend_agg import FigureCanvasAgg
            from matplotlib.figure import Figure
            from matplotlib.ticker import MaxNLocator
        except ImportError as e:
            raise ImportError(
                "ScaleTrackingSession.plot needs matplotlib: pip install matplotlib"
            ) from e
        path = Path(path)
        fig = Figure(figsize=(8, 6), constrained_layout=True)
        FigureCanvasAgg(fig)
        axes = fig.subplots(2, 1, sharex=True)
        histories = [self.history(name) for name in self._calls]
        iterations = list(range(self.num_iterations))
        for ax, kind in zip(axes, ("forward", "backward"), strict=True):
            drawn = False
            for h in histories:
                values = getattr(h, kind)
                if any(v > 0 for v in values):  # log axis: nan and 0 are not drawable
                    ax.plot(iterations, values, marker=".", label=h.name)
                    drawn = True
            if drawn:
                ax.set_yscale("log", nonpositive="mask")
                ax.legend(fontsize="small", loc="best")
            else:
                ax.text(
                    0.5,
                    0.5,
                    f"no positive {kind} std to draw",
                    ha="center",
                    va="center",
                    transform=ax.transAxes,
                )
            ax.set_ylabel(f"{kind} std")
            ax.grid(True, which="both", alpha=0.3)
        axes[-1].set_xlabel("iteration")
        axes[-1].xaxis.set_major_locator(MaxNLocator(integer=True))
        if title:
            fig.suptitle(title)
        fig.savefig(path)
        return path

    # -- activation --------------------------------------------------------------------------

    def __enter__(self) -> ScaleTrackingSession:
        self._tokens.append(_ACTIVE.set(self))
        return self

    def __exit__(self, *exc: object) -> None:
        _ACTIVE.reset(self._tokens.pop())


@contextmanager
def track_scales(auto_iteration: bool = True) -> Iterator[ScaleTrackingSession]:
    """Activate a new :class:`ScaleTrackingSession` for the ``with`` block and yield it;
    module-level :func:`track` calls inside record into it (nested sessions: the innermost)."""
    with ScaleTrackingSession(auto_iteration=auto_iteration) as session:
        yield session


def active_session() -> ScaleTrackingSession | None:
    """The innermost active session, or ``None``."""
    return _ACTIVE.get()


def track(name: str, tensor: torch.Tensor) -> torch.Tensor:
    """``tensor`` tracked under ``name`` in the active session; ``tensor`` itself when none is
    active (no autograd node, no copy, no device sync)."""
    session = _ACTIVE.get()
    if session is None:
        return tensor
    return session.track(name, tensor)
