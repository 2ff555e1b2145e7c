"""Forward kinematics (and FK + backward) of the Franka Panda: curobo_lite vs pytorch_kinematics.

Both libraries load the same URDF (``tests/data/franka_panda.urdf``, chain panda_link0 ->
panda_hand) in the same process. Timings are wall-clock medians (and minima) over interleaved
rounds, so a busy machine slows every implementation alike.

- ``fk``: joint positions ``[N, 7]`` -> end-effector pose (ours also returns every link frame).
- ``fk+backward``: the same plus ``backward()`` of a weighted sum of the ee position and
  orientation (ours: quaternion; pytorch_kinematics: rotation matrix).

Usage::

    python benchmarks/kinematics.py [--threads 2] [--sizes 1000 12000] [--device cpu]

pytorch_kinematics is optional (``pip install --no-deps pytorch-kinematics`` plus its light
dependencies, so the installed torch stays as it is); without it only ours is timed.
Results go to ``benchmarks/results/kinematics.json``.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import torch

from curobo_lite.config_files import atomic_write_text
from curobo_lite.robot import Kinematics, RobotConfig
from curobo_lite.types import TensorDeviceType

REPO = Path(__file__).resolve().parents[1]
URDF = REPO / "tests" / "data" / "franka_panda.urdf"
BASE, EE = "panda_link0", "panda_hand"


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _ours(kinematics: Kinematics) -> Callable:
    def fk(q):
        state = kinematics.forward(q)
        return state.ee_position, state.ee_quaternion

    return fk


def _pytorch_kinematics(device: torch.device, dtype: torch.dtype):
    try:
        import pytorch_kinematics as pk
    except ImportError:
        return None
    chain = pk.build_serial_chain_from_urdf(URDF.read_text(), EE, BASE).to(
        device=device, dtype=dtype
    )

    def fk(q):
        matrix = chain.forward_kinematics(q).get_matrix()
        return matrix[:, :3, 3], matrix[:, :3, :3]

    return fk, importlib.metadata.version("pytorch-kinematics")


def _make_call(fk: Callable, q: torch.Tensor, weights: dict, backward: bool) -> Callable:
    """A no-argument timed call: FK only, or FK and backward of a weighted pose sum."""
    if not backward:
        return lambda: fk(q)
    qg = q.clone().requires_grad_()

    def step():
        position, rotation = fk(qg)
        w_rot = weights["matrix"] if rotation.ndim == 3 else weights["quaternion"]
        ((position * weights["position"]).sum() + (rotation * w_rot).sum()).backward()
        qg.grad = None

    return step


def _time(fn: Callable, device: torch.device, reps: int) -> list[float]:
    times = []
    for _ in range(reps):
        _sync(device)
        start = time.perf_counter()
        fn()
        _sync(device)
        times.append((time.perf_counter() - start) * 1e3)
    return times


def run(args: argparse.Namespace) -> dict:
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    tensor_args = TensorDeviceType(device=device, dtype=torch.float32)
    config = RobotConfig.from_urdf(URDF, BASE, EE, tensor_args=tensor_args)
    impls: dict[str, Callable] = {}
    for backend in Kinematics.BACKENDS:
        impls[f"curobo_lite[{backend}]"] = _ours(Kinematics(config, backend=backend))
    pk_version = None
    reference = _pytorch_kinematics(device, tensor_args.dtype)
    if reference is not None:
        impls["pytorch_kinematics"], pk_version = reference

    gen = torch.Generator().manual_seed(0)
    low, high = config.joint_limits.position
    results = []
    for n in args.sizes:
        q = low.cpu() + torch.rand(n, config.dof, generator=gen) * (high - low).cpu()
        q = q.to(device)
        weights = {
            "position": torch.randn(n, 3, generator=gen).to(device),
            "quaternion": torch.randn(n, 4, generator=gen).to(device),
            "matrix": torch.randn(n, 3, 3, generator=gen).to(device),
        }

        # agreement check: ee position of every implementation against ours (warp)
        ours_pos = impls["curobo_lite[warp]"](q)[0]
        agreement = {name: (fk(q)[0] - ours_pos).abs().max().item() for name, fk in impls.items()}
        for mode in ("fk", "fk+backward"):
            calls = {name: _make_call(fk, q, weights, mode != "fk") for name, fk in impls.items()}
            for call in calls.values():  # warm-up (Warp module load, allocator)
                call()
                call()
            samples: dict[str, list[float]] = {name: [] for name in calls}
            for _ in range(args.rounds):
                for name, call in calls.items():
                    samples[name] += _time(call, device, args.reps)
            for name, times in samples.items():
                results.append(
                    {
                        "impl": name,
                        "n": n,
                        "mode": mode,
                        "median_ms": statistics.median(times),
                        "min_ms": min(times),
                        "samples": len(times),
                        "max_abs_ee_position_diff_vs_ours": agreement[name],
                    }
                )
    return {
        "benchmark": "franka panda forward kinematics",
        "urdf": str(URDF.relative_to(REPO)),
        "device": str(device),
        "dtype": "float32",
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "pytorch_kinematics": pk_version,
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
        "load_average_at_end": os.getloadavg() if hasattr(os, "getloadavg") else None,
        "results": results,
    }


def print_table(report: dict) -> None:
    print(
        f"FK benchmark on {report['device']} ({report['torch_threads']} torch threads, "
        f"torch {report['torch']}, pytorch_kinematics {report['pytorch_kinematics']})"
    )
    print(f"{'impl':<22} {'N':>6} {'mode':<12} {'median ms':>10} {'min ms':>9} {'vs pk':>7}")
    pk = {
        (r["n"], r["mode"]): r["median_ms"]
        for r in report["results"]
        if r["impl"] == "pytorch_kinematics"
    }
    for r in report["results"]:
        ratio = pk.get((r["n"], r["mode"]))
        speedup = f"{ratio / r['median_ms']:.1f}x" if ratio else "-"
        print(
            f"{r['impl']:<22} {r['n']:>6} {r['mode']:<12} {r['median_ms']:>10.3f} "
            f"{r['min_ms']:>9.3f} {speedup:>7}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 12000])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds")
    parser.add_argument("--reps", type=int, default=10, help="timed calls per round")
    parser.add_argument(
        "--output", type=Path, default=REPO / "benchmarks" / "results" / "kinematics.json"
    )
    args = parser.parse_args()
    report = run(args)
    print_table(report)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(args.output, json.dumps(report, indent=2) + "\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
