"""Scale tracking: exact identity in value and gradient, records equal to independent stds.

The record semantics are unit_scaling's (``unit_scaling.utils.ScaleTracker``/``ScalePair``):
``forward``/``backward`` start as ``None``; forward stores the std of the input, backward the std
of the incoming gradient, each as a float overwritten by every new call."""

from __future__ import annotations

import math
import sys
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
import torch.autograd.forward_ad as fwAD

from curobo_lite.debug import (
    ScaleHistory,
    ScalePair,
    ScaleTracker,
    ScaleTrackingSession,
    active_session,
    tensor_std,
    track,
    track_scales,
)
from curobo_lite.types import InputValueError


def _numpy_std(t: torch.Tensor) -> float:
    """Independent reference: sample std (ddof=1) in numpy float64."""
    return float(t.detach().double().numpy().std(ddof=1))


def test_pair_starts_unrecorded() -> None:
    pair = ScalePair()
    assert pair.forward is None and pair.backward is None
    assert str(pair) == "(-> n/a, <- n/a)"
    assert str(ScalePair(forward=1.23456, backward=0.000123456)) == "(-> 1.23, <- 0.000123)"


def test_records_std_of_tensor_and_of_its_gradient() -> None:
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(6, 5, generator=gen, dtype=torch.float64, requires_grad=True)
    w = torch.randn(6, 5, generator=gen, dtype=torch.float64)
    pair = ScalePair()
    y = ScaleTracker.apply(x * 3.0, pair)
    assert isinstance(pair.forward, float) and pair.backward is None
    assert pair.forward == pytest.approx(_numpy_std(x * 3.0), rel=1e-12)
    (w * y).sum().backward()  # gradient arriving at y is exactly w
    assert isinstance(pair.backward, float)
    assert pair.backward == pytest.approx(_numpy_std(w), rel=1e-12)
    torch.testing.assert_close(x.grad, 3.0 * w, rtol=0, atol=0)


def test_each_call_overwrites_the_pair() -> None:
    gen = torch.Generator().manual_seed(3)
    pair = ScalePair()
    inputs = [torch.randn(4, 7, generator=gen, dtype=torch.float64) * s for s in (1.0, 5.0)]
    grads = [torch.randn(4, 7, generator=gen, dtype=torch.float64) * s for s in (2.0, 0.1)]
    outputs = []
    for t in inputs:
        outputs.append(ScaleTracker.apply(t.requires_grad_(), pair))
        assert pair.forward == pytest.approx(_numpy_std(t), rel=1e-12)
    for out, g in zip(outputs, grads, strict=True):
        out.backward(g)
        assert pair.backward == pytest.approx(_numpy_std(g), rel=1e-12)
    # the latest forward call still stands after both backward passes
    assert pair.forward == pytest.approx(_numpy_std(inputs[-1]), rel=1e-12)
    assert pair.backward == pytest.approx(_numpy_std(grads[-1]), rel=1e-12)


def test_history_keeps_every_value() -> None:
    gen = torch.Generator().manual_seed(4)
    pair, history = ScalePair(), ScaleHistory(name="term")
    inputs = [torch.randn(9, generator=gen, dtype=torch.float64) * s for s in (1.0, 3.0, 0.5)]
    grads = [torch.randn(9, generator=gen, dtype=torch.float64) * s for s in (1.0, 7.0, 2.0)]
    for t, g in zip(inputs, grads, strict=True):
        ScaleTracker.apply(t.requires_grad_(), pair, history).backward(g)
    assert history.forward == pytest.approx([_numpy_std(t) for t in inputs], rel=1e-12)
    assert history.backward == pytest.approx([_numpy_std(g) for g in grads], rel=1e-12)
    assert pair.forward == history.forward[-1] and pair.backward == history.backward[-1]


def test_value_is_identity_view() -> None:
    x = torch.randn(4, 3, requires_grad=True)
    y = ScaleTracker.apply(x, ScalePair())
    assert torch.equal(y, x) and y.data_ptr() == x.data_ptr()
    assert y.requires_grad and y.grad_fn is not None
    with pytest.raises(RuntimeError, match="view"):
        y.add_(1.0)  # in-place on a custom-Function view is refused, not silently wrong


def test_gradcheck_and_gradients_unchanged() -> None:
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(5, 4, generator=gen, dtype=torch.float64, requires_grad=True)
    pair = ScalePair()

    def tracked(t: torch.Tensor) -> torch.Tensor:
        return torch.sin(ScaleTracker.apply(t**2, pair)) * t

    def plain(t: torch.Tensor) -> torch.Tensor:
        return torch.sin(t**2) * t

    assert torch.autograd.gradcheck(tracked, (x,))
    assert torch.autograd.gradgradcheck(tracked, (x,))
    g_tracked = torch.autograd.grad(tracked(x).sum(), x)[0]
    g_plain = torch.autograd.grad(plain(x).sum(), x)[0]
    torch.testing.assert_close(g_tracked, g_plain, rtol=0, atol=0)
    assert pair.forward is not None and pair.backward is not None


def test_forward_mode_passes_tangent_through() -> None:
    x = torch.randn(3, dtype=torch.float64)
    tangent = torch.randn(3, dtype=torch.float64)
    pair = ScalePair()
    with fwAD.dual_level():
        out = ScaleTracker.apply(fwAD.make_dual(x, tangent), pair) * 2.0
        torch.testing.assert_close(fwAD.unpack_dual(out).tangent, 2.0 * tangent)
    assert pair.forward == pytest.approx(_numpy_std(x))


def test_none_gradient_records_zero_and_passes_none() -> None:
    pair, history = ScalePair(), ScaleHistory()
    grad, *rest = ScaleTracker.backward(SimpleNamespace(pair=pair, history=history), None)
    assert grad is None and rest == [None, None]
    assert pair.backward == 0.0 and history.backward == [0.0]


def test_edge_dtypes_and_sizes() -> None:
    assert math.isnan(tensor_std(torch.tensor([2.0])))
    assert math.isnan(tensor_std(torch.empty(0)))
    assert math.isnan(tensor_std(torch.tensor(1.0)))
    ints = torch.tensor([1, 2, 3, 10])
    assert tensor_std(ints) == pytest.approx(_numpy_std(ints), rel=1e-12)
    flags = torch.tensor([True, False, False, True])
    assert tensor_std(flags) == pytest.approx(_numpy_std(flags.double()), rel=1e-12)
    half = torch.linspace(-1, 1, 101, dtype=torch.float16)
    assert tensor_std(half) == pytest.approx(_numpy_std(half), rel=1e-6)
    pair = ScalePair()
    out = ScaleTracker.apply(ints, pair)  # integer tensors: forward only
    assert torch.equal(out, ints) and not out.requires_grad
    assert pair.forward == pytest.approx(_numpy_std(ints)) and pair.backward is None


def test_track_is_noop_outside_a_session() -> None:
    assert active_session() is None
    x = torch.randn(3, requires_grad=True)
    assert track("pose", x) is x  # same object: no autograd node, no record
    with track_scales() as session:
        assert active_session() is session
        y = track("pose", x)
        assert y is not x and y.grad_fn is not None
    assert active_session() is None
    assert track("pose", x) is x
    assert session.names == ["pose"]


def test_session_groups_iterations_and_summarizes() -> None:
    gen = torch.Generator().manual_seed(2)
    weights = {"pose": 5.0, "smooth": 0.1}
    expected = {name: {"fwd": [], "bwd": []} for name in weights}
    with track_scales() as session:
        for it in range(4):
            x = torch.randn(8, 3, generator=gen, dtype=torch.float64, requires_grad=True)
            target = torch.randn(8, 3, generator=gen, dtype=torch.float64)
            # Track each term's input: the tracker sees only that term's gradient.
            pose_in = track("pose", x)
            smooth_in = track("smooth", x * (it + 1))
            loss = weights["pose"] * ((pose_in - target) ** 2).sum()
            loss = loss + weights["smooth"] * (smooth_in**3).sum()
            loss.backward()
            expected["pose"]["fwd"].append(_numpy_std(x))
            expected["pose"]["bwd"].append(_numpy_std(2 * weights["pose"] * (x - target)))
            expected["smooth"]["fwd"].append(_numpy_std(x * (it + 1)))
            expected["smooth"]["bwd"].append(
                _numpy_std(3 * weights["smooth"] * (x * (it + 1)) ** 2)
            )
    assert session.num_iterations == 4  # automatic grouping: a repeated name opens an iteration
    for name in weights:
        h = session.history(name)
        assert h.forward == pytest.approx(expected[name]["fwd"], rel=1e-12)
        assert h.backward == pytest.approx(expected[name]["bwd"], rel=1e-12)
        assert isinstance(h, ScaleHistory) and h.name == name
        # the latest pair holds the last iteration's values, as unit_scaling's ScaleDict does
        latest = session.scales[name]
        assert latest.forward == pytest.approx(expected[name]["fwd"][-1], rel=1e-12)
        assert latest.backward == pytest.approx(expected[name]["bwd"][-1], rel=1e-12)
    summary = session.summary()
    fwd_mean = sum(expected["pose"]["fwd"]) / 4
    bwd_mean = sum(expected["pose"]["bwd"]) / 4
    assert summary["pose"]["forward_last"] == pytest.approx(expected["pose"]["fwd"][-1])
    assert summary["pose"]["forward_mean"] == pytest.approx(fwd_mean)
    assert summary["pose"]["backward_mean"] == pytest.approx(bwd_mean)
    assert summary["pose"]["ratio"] == pytest.approx(bwd_mean / fwd_mean)
    assert summary["pose"]["calls"] == 4

    table = session.table()
    assert "pose" in table and "smooth" in table and "4 iterations" in table
    assert f"{fwd_mean:.3e}" in table and f"{bwd_mean:.3e}" in table
    d = session.to_dict()
    assert d["num_iterations"] == 4 and set(d["terms"]) == {"pose", "smooth"}
    assert d["terms"]["smooth"]["backward"] == pytest.approx(expected["smooth"]["bwd"])


def test_manual_iterations_average_repeated_calls() -> None:
    """Line-search style: several evaluations per iteration, grouped by iteration_end()."""
    values = [[torch.tensor([0.0, 2.0]), torch.tensor([0.0, 4.0])], [torch.tensor([1.0, 2.0])]]
    session = ScaleTrackingSession(auto_iteration=False)
    with session:
        for evaluations in values:
            for v in evaluations:
                track("cost", v)
            session.iteration_end()
        session.iteration_end()  # trailing empty iterations are not counted
    h = session.history("cost")
    assert session.num_iterations == 2
    assert h.forward == pytest.approx([(math.sqrt(2) + math.sqrt(8)) / 2, math.sqrt(0.5)])
    assert all(math.isnan(v) for v in h.backward)
    assert session.scales["cost"].forward == pytest.approx(math.sqrt(0.5))
    assert session.scales["cost"].backward is None  # no backward pass ran
    assert "cost" in session.table()


def test_backward_after_session_exit_goes_to_its_iteration() -> None:
    x = torch.randn(5, dtype=torch.float64, requires_grad=True)
    w = torch.randn(5, dtype=torch.float64)
    with track_scales() as session:
        y = track("late", x)
    (w * y).sum().backward()
    assert session.history("late").backward == pytest.approx([_numpy_std(w)])


def test_sessions_nest_and_are_thread_local() -> None:
    x = torch.randn(3)
    with track_scales() as outer:
        with track_scales() as inner:
            track("a", x)
        track("b", x)
        seen = []
        thread = threading.Thread(target=lambda: seen.append(active_session()))
        thread.start()
        thread.join()
    assert inner.names == ["a"] and outer.names == ["b"]
    assert seen == [None]


def test_bad_arguments() -> None:
    session = ScaleTrackingSession()
    with pytest.raises(TypeError, match="name"):
        session.track("", torch.zeros(2))
    with pytest.raises(TypeError, match="torch.Tensor"):
        session.track("x", [1.0, 2.0])
    with pytest.raises(TypeError, match="auto_iteration"):
        ScaleTrackingSession(auto_iteration="yes")
    with pytest.raises(InputValueError, match="nope"):
        session.history("nope")
    assert "no terms" in session.table()


def test_plot_writes_file(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    with track_scales() as session:
        for _ in range(3):
            x = torch.randn(4, 4, requires_grad=True)
            (track("a", x) ** 2).sum().backward()
            track("forward_only", torch.arange(6))
    out = session.plot(tmp_path / "scales.png", title="test")
    assert out == tmp_path / "scales.png"
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    empty = ScaleTrackingSession().plot(tmp_path / "empty.png")
    assert empty.stat().st_size > 0


def test_plot_without_matplotlib_says_how_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for name in list(sys.modules):
        if name == "matplotlib" or name.startswith("matplotlib."):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    with pytest.raises(ImportError, match="pip install matplotlib"):
        ScaleTrackingSession().plot(tmp_path / "x.png")
    assert not (tmp_path / "x.png").exists()
