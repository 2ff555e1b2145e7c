"""All-gather with gradient across real processes (gloo on loopback), and the rank helpers.

The multi-process cases run once per module: two ranks are spawned, each runs every scenario in
the same order (collectives must match), saves what it saw to ``tmp_path``, and the parent checks
the results against closed-form expectations. Ranks are killed if they outlive a deadline.
"""

from __future__ import annotations

import os
import socket
import time
import traceback
from datetime import timedelta
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from curobo_lite.distributed import (
    AllGatherGrad,
    all_gather_with_grad,
    get_rank,
    get_world_size,
    init_from_env,
    is_distributed,
    shard_range,
)

WORLD = 2
DEADLINE_S = 90.0  # whole spawn, including two torch imports on a busy machine
# First dims per rank for the unequal-size case; rank 0 empty for the empty case.
UNEQUAL = (5, 2)
EMPTY = (0, 3)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _inputs(rank: int, rows: int, cols: int, device: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Deterministic input and loss weight of ``rank``; the parent rebuilds the same ones."""
    gen = torch.Generator().manual_seed(1000 * rows + 10 * cols + rank)
    x = torch.randn(rows, cols, generator=gen, dtype=torch.float64)
    w = torch.randn(sum(UNEQUAL) + sum(EMPTY) + 16, cols, generator=gen, dtype=torch.float64)
    return x.to(device), w.to(device)


def _capture_error(fn) -> str:
    try:
        fn()
    except ValueError as e:
        return str(e)
    return ""


def _scenarios(rank: int, device: str) -> dict[str, object]:
    """Every check a rank runs; the order is identical on all ranks."""
    out: dict[str, object] = {
        "rank": get_rank(),
        "world_size": get_world_size(),
        "distributed": is_distributed(),
    }

    # Equal sizes, linear loss on every rank: loss_r = sum(w_r * gathered).
    x, w = _inputs(rank, 3, 4, device)
    x.requires_grad_(True)
    g = all_gather_with_grad(x)
    (w[: g.shape[0]] * g).sum().backward()
    out["equal_out"], out["equal_grad"] = g.detach().cpu(), x.grad.cpu()

    # Unequal sizes, quadratic loss: loss_r = sum(w_r * gathered**2).
    x, w = _inputs(rank, UNEQUAL[rank], 3, device)
    x.requires_grad_(True)
    g = all_gather_with_grad(x)
    (w[: g.shape[0]] * g**2).sum().backward()
    out["unequal_out"], out["unequal_grad"] = g.detach().cpu(), x.grad.cpu()

    # One rank contributes no rows.
    x, w = _inputs(rank, EMPTY[rank], 3, device)
    x.requires_grad_(True)
    g = all_gather_with_grad(x)
    (w[: g.shape[0]] * g).sum().backward()
    out["empty_out"], out["empty_grad"] = g.detach().cpu(), x.grad.cpu()

    # Non-contiguous input and an expanded (stride-0) incoming gradient from .sum().
    base = torch.arange(12.0, dtype=torch.float64, device=device).reshape(3, 4) + 100 * rank
    xt = base.t().requires_grad_(True)  # [4, 3] with transposed strides
    assert not xt.is_contiguous()
    g = all_gather_with_grad(xt)
    g.sum().backward()
    out["noncontig_out"], out["noncontig_grad"] = g.detach().cpu(), xt.grad.cpu()

    # Mismatches raise on every rank, and the group stays usable afterwards.
    cols = 3 if rank == 0 else 4
    out["err_trailing"] = _capture_error(
        lambda: all_gather_with_grad(torch.zeros(2, cols, device=device))
    )
    dtype = torch.float32 if rank == 0 else torch.float64
    out["err_dtype"] = _capture_error(
        lambda: all_gather_with_grad(torch.zeros(2, 3, dtype=dtype, device=device))
    )
    shape = (2,) if rank == 0 else (2, 1)
    out["err_ndim"] = _capture_error(
        lambda: all_gather_with_grad(torch.zeros(shape, device=device))
    )
    out["err_scalar"] = _capture_error(lambda: all_gather_with_grad(torch.zeros((), device=device)))
    g = AllGatherGrad.apply(torch.full((1, 2), float(rank), device=device), None)
    out["after_errors"] = g.cpu()
    return out


def _worker(rank: int, world: int, port: int, out_dir: str, backend: str, device_type: str) -> None:
    os.environ.update(
        RANK=str(rank),
        WORLD_SIZE=str(world),
        LOCAL_RANK=str(rank),
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
    )
    try:
        ctx = init_from_env(backend=backend, timeout=timedelta(seconds=30))
        device = str(ctx.device) if device_type == "cuda" else "cpu"
        results = _scenarios(rank, device)
        results["context"] = (ctx.rank, ctx.world_size, ctx.backend, ctx.initialized)
        torch.save(results, Path(out_dir) / f"rank{rank}.pt")
    except BaseException:
        (Path(out_dir) / f"rank{rank}.err").write_text(traceback.format_exc())
        raise
    finally:
        if dist.is_available() and dist.is_initialized():
            dist.destroy_process_group()


def _spawn(out_dir: Path, world: int, backend: str, device_type: str) -> list[dict]:
    """Run ``_worker`` on ``world`` fresh processes; kill any still alive at the deadline."""
    out_dir.mkdir(parents=True, exist_ok=True)
    ctx = mp.get_context("spawn")
    port = _free_port()
    procs = [
        ctx.Process(target=_worker, args=(r, world, port, str(out_dir), backend, device_type))
        for r in range(world)
    ]
    for p in procs:
        p.start()
    end = time.monotonic() + DEADLINE_S
    for p in procs:
        p.join(timeout=max(0.0, end - time.monotonic()))
    hung = [r for r, p in enumerate(procs) if p.is_alive()]
    for p in procs:
        if p.is_alive():
            p.kill()
            p.join(5)
    errors = {
        r: (out_dir / f"rank{r}.err").read_text()
        for r in range(world)
        if (out_dir / f"rank{r}.err").exists()
    }
    assert not hung, f"ranks {hung} did not finish within {DEADLINE_S} s; errors: {errors}"
    assert not errors, f"ranks failed: {errors}"
    assert all(p.exitcode == 0 for p in procs), [p.exitcode for p in procs]
    return [torch.load(out_dir / f"rank{r}.pt") for r in range(world)]


@pytest.fixture(scope="module")
def gloo_results(tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    if not (dist.is_available() and dist.is_gloo_available()):
        pytest.skip("torch.distributed with gloo is not available")
    return _spawn(tmp_path_factory.mktemp("gloo"), WORLD, "gloo", "cpu")


def _expected(rows: tuple[int, ...], cols: int, quadratic: bool) -> tuple[torch.Tensor, list]:
    """Closed form: gathered = cat(x_r); d/dx_r sum_q loss_q = sum_q w_q[rows of r] (* 2 x_r)."""
    xs, ws = zip(*(_inputs(r, n, cols, "cpu") for r, n in enumerate(rows)), strict=True)
    gathered = torch.cat(xs)
    total = gathered.shape[0]
    w_sum = sum(w[:total] for w in ws)
    grads, start = [], 0
    for r, n in enumerate(rows):
        g = w_sum[start : start + n]
        grads.append(2 * g * xs[r] if quadratic else g)
        start += n
    return gathered, grads


def _check_case(results: list[dict], name: str, rows, cols: int, quadratic: bool) -> None:
    gathered, grads = _expected(rows, cols, quadratic)
    for r, res in enumerate(results):
        torch.testing.assert_close(res[f"{name}_out"], gathered, rtol=0, atol=0)
        torch.testing.assert_close(res[f"{name}_grad"], grads[r], rtol=1e-12, atol=1e-12)


@pytest.mark.slow
def test_gloo_helpers_and_context(gloo_results: list[dict]) -> None:
    for r, res in enumerate(gloo_results):
        assert (res["rank"], res["world_size"], res["distributed"]) == (r, WORLD, True)
        assert res["context"] == (r, WORLD, "gloo", True)


@pytest.mark.slow
def test_gloo_equal_sizes_forward_and_grad(gloo_results: list[dict]) -> None:
    _check_case(gloo_results, "equal", (3, 3), 4, quadratic=False)


@pytest.mark.slow
def test_gloo_unequal_sizes_forward_and_grad(gloo_results: list[dict]) -> None:
    _check_case(gloo_results, "unequal", UNEQUAL, 3, quadratic=True)
    assert gloo_results[0]["unequal_out"].shape == (sum(UNEQUAL), 3)


@pytest.mark.slow
def test_gloo_empty_rank(gloo_results: list[dict]) -> None:
    _check_case(gloo_results, "empty", EMPTY, 3, quadratic=False)
    assert gloo_results[0]["empty_grad"].shape == (0, 3)


@pytest.mark.slow
def test_gloo_noncontiguous_input_and_expanded_grad(gloo_results: list[dict]) -> None:
    blocks = [(torch.arange(12.0, dtype=torch.float64).reshape(3, 4) + 100 * r).t() for r in (0, 1)]
    for res in gloo_results:
        torch.testing.assert_close(res["noncontig_out"], torch.cat(blocks), rtol=0, atol=0)
        # loss = sum(gathered) on each of the 2 ranks: every element gets gradient 2.
        torch.testing.assert_close(
            res["noncontig_grad"], torch.full((4, 3), 2.0, dtype=torch.float64)
        )


@pytest.mark.slow
def test_gloo_mismatches_raise_on_every_rank(gloo_results: list[dict]) -> None:
    for res in gloo_results:
        assert "trailing shape" in res["err_trailing"] and "[[3], [4]]" in res["err_trailing"]
        assert "dtype" in res["err_dtype"] and "torch.float64" in res["err_dtype"]
        assert "number of dimensions" in res["err_ndim"] and "[1, 2]" in res["err_ndim"]
        assert "0-dim" in res["err_scalar"]
        torch.testing.assert_close(res["after_errors"], torch.tensor([[0.0, 0.0], [1.0, 1.0]]))


@pytest.mark.slow
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_tensors_gloo_and_nccl(tmp_path: Path) -> None:
    """Device-generic path: gloo on 2 ranks with CUDA tensors; NCCL on 2 ranks with 2+ GPUs."""
    results = _spawn(tmp_path / "gloo_cuda", WORLD, "gloo", "cuda")
    _check_case(results, "unequal", UNEQUAL, 3, quadratic=True)
    world = min(torch.cuda.device_count(), WORLD)
    if world < WORLD:
        pytest.skip("NCCL with 2 ranks needs 2 GPUs; gloo-on-CUDA case passed")
    results = _spawn(tmp_path / "nccl", world, "nccl", "cuda")
    _check_case(results, "unequal", UNEQUAL, 3, quadratic=True)


def test_identity_without_process_group() -> None:
    assert not is_distributed()
    assert (get_rank(), get_world_size()) == (0, 1)
    x = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    y = all_gather_with_grad(x)
    torch.testing.assert_close(y, x, rtol=0, atol=0)
    w = torch.randn(4, 3, dtype=torch.float64)
    (w * y**2).sum().backward()
    torch.testing.assert_close(x.grad, 2 * w * x.detach())
    # The Function on its own is the identity too, with an exact gradient.
    assert torch.autograd.gradcheck(lambda t: AllGatherGrad.apply(t, None) ** 3, (x,))
    with pytest.raises(ValueError, match="0-dim"):
        all_gather_with_grad(torch.tensor(1.0))
    with pytest.raises(TypeError, match="torch.Tensor"):
        all_gather_with_grad([1.0, 2.0])


def test_init_from_env_single_process(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    ctx = init_from_env()
    assert (ctx.rank, ctx.world_size, ctx.initialized, ctx.is_main) == (0, 1, False, True)
    assert not is_distributed()
    monkeypatch.setenv("RANK", "0")
    with pytest.raises(ValueError, match="WORLD_SIZE"):
        init_from_env()
    with pytest.raises(ValueError, match="backend"):
        init_from_env(backend="mpi2")


@pytest.mark.parametrize("n", [0, 1, 5, 7, 64, 101])
@pytest.mark.parametrize("world_size", [1, 2, 3, 8])
def test_shard_range_tiles_without_overlap(n: int, world_size: int) -> None:
    ranges = [shard_range(n, r, world_size) for r in range(world_size)]
    covered = [i for start, stop in ranges for i in range(start, stop)]
    assert covered == list(range(n))  # in order, each item exactly once
    lengths = [stop - start for start, stop in ranges]
    assert max(lengths) - min(lengths) <= 1
    assert lengths == sorted(lengths, reverse=True)  # remainder goes to the first ranks


def test_shard_range_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="rank"):
        shard_range(10, 2, 2)
    with pytest.raises(ValueError, match="world_size"):
        shard_range(10, 0, 0)
    with pytest.raises(ValueError, match="n must be"):
        shard_range(-1, 0, 1)
    with pytest.raises(TypeError, match="n must be an int"):
        shard_range(4.0, 0, 1)
