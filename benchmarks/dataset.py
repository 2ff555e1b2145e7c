"""Planning datasets on Ray (``curobo_lite.data``): throughput per worker count, driver overhead
per shard, worker memory over a long run, and a projection to N machines.

1. **Throughput**: the same dataset (same seed, so the same problems) generated with each
   ``--workers`` count, each on a fresh local Ray of that many CPUs (or GPUs). Reported: wall
   problems/s (worker start and MotionGen build included) and steady problems/s (problems
   stored after every worker returned its first shard, over the time since then), and the
   speedup over the first count. On a machine shared with other work the workers get less
   than a core each: the table also gives each worker's CPU seconds per problem and the share
   of a core it got, and the "free-core speedup" W / cpu_s(W) over 1 / cpu_s(1), what the
   same workers would reach with a core each.
2. **Driver overhead**: per stored shard, the driver's own time (fetching the result, the
   checksum, the atomic write, the manifest line), and its share of a shard's worker time.
3. **Memory**: a long run (``--long-problems``, by default with the cheap generator of the
   tests: 4 IK seeds, one scene draw per id) records each worker's resident memory after each
   shard (the worker collects garbage and trims the heap first); growth = last - after its
   first shard, and the least-squares slope in MB per 1000 problems (all, second half).
4. **Projection**: throughput on N machines like this one = min(N x steady per machine,
   what one driver stores: shard_size / driver seconds per shard).

Usage::

    python benchmarks/dataset.py [--problems 24] [--workers 1 2] [--families bookshelf_small]
        [--shard-size 2] [--long-problems 200] [--device cpu|cuda] [--gpus-per-worker 1]
        [--json out/dataset.json]

On a CUDA machine: ``--device cuda --workers 1 --gpus-per-worker 1`` and ``... 0.25
--workers 4`` (four workers sharing one GPU) give the per-GPU throughput.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

from timing import write_json

from curobo_lite.data import DatasetConfig

REPO = Path(__file__).resolve().parents[1]
CHEAP_GENERATOR = {"ik_seeds": 4, "max_scenes": 1}


def _load() -> str:
    try:
        return " ".join(f"{v:.2f}" for v in os.getloadavg())
    except OSError:
        return "n/a"


def run_once(config: DatasetConfig, workers: int, device: str, gpus_per_worker: float) -> dict:
    """Generate ``config`` into a fresh folder on a fresh local Ray of ``workers`` CPUs."""
    resources = {"num_cpus": workers}
    if device == "cuda":
        import torch

        resources = {"num_cpus": max(workers, 1), "num_gpus": torch.cuda.device_count()}
    import ray  # the direct mode (--direct) runs without it

    from curobo_lite.data import generate_dataset, verify_dataset

    ray.init(include_dashboard=False, log_to_driver=False, logging_level="ERROR", **resources)
    try:
        with tempfile.TemporaryDirectory() as folder:
            summary = generate_dataset(
                config,
                folder,
                workers=workers,
                device=device,
                progress=False,
                gpus_per_worker=gpus_per_worker,
            )
            verified = verify_dataset(folder)
    finally:
        ray.shutdown()
    return _row(
        workers,
        summary.shard_stats,
        summary.solve_seconds,
        summary.driver_seconds,
        summary.complete and verified.ok,
    )


def run_direct(config: DatasetConfig, device: str) -> dict:
    """One worker without Ray: the shards one after another in this process (what one Ray
    worker does, less the driver), for a machine without Ray (``--direct``)."""
    from curobo_lite.data.worker import solve_shard

    stats = []
    t0 = time.perf_counter()
    for shard in range(config.num_shards):
        result = solve_shard(config.to_dict(), shard, device)
        keys = ("pid", "rss_mb", "seconds", "cpu_seconds", "problems", "successes")
        stats.append(
            {"shard": shard, **{k: result[k] for k in keys}, "done_s": time.perf_counter() - t0}
        )
    return _row(1, stats, time.perf_counter() - t0, [], True)


def _row(
    workers: int, shard_stats: list[dict], seconds: float, driver_s: list[float], complete: bool
) -> dict:
    """The table row of one run from its per-shard records."""
    stats = sorted(shard_stats, key=lambda s: s["done_s"])
    problems = sum(s["problems"] for s in stats)
    first_of = {}
    for s in stats:
        first_of.setdefault(s["pid"], s["done_s"])
    warm_from = max(first_of.values())
    warm = [s for s in stats if s["done_s"] > warm_from]
    warm_stats = [s for s in stats if s["done_s"] > first_of[s["pid"]]] or stats
    steady = sum(s["problems"] for s in warm) / (stats[-1]["done_s"] - warm_from) if warm else None
    return {
        "workers": workers,
        "problems": problems,
        "successes": sum(s.get("successes", 0) for s in stats),
        "complete": complete,
        "solve_s": seconds,
        "wall_problems_per_s": problems / seconds,
        "steady_problems_per_s": steady,
        "worker_s_per_problem": statistics.mean(s["seconds"] / s["problems"] for s in stats),
        # after each worker's first shard (its MotionGen build): CPU time per problem, and the
        # share of a core the worker got (below 1: the cores were shared with other work)
        "worker_cpu_s_per_problem": _per_problem(warm_stats, "cpu_seconds"),
        "worker_core_share": _per_problem(warm_stats, "cpu_seconds")
        / _per_problem(warm_stats, "seconds"),
        "driver_ms_per_shard": [1000 * d for d in driver_s] or [float("nan")],
        "shard_stats": stats,
    }


def _per_problem(stats: list[dict], key: str) -> float:
    return sum(s[key] for s in stats) / sum(s["problems"] for s in stats)


def _slope(points: list[tuple[int, float]]) -> float:
    """Least-squares slope of ``(x, y)`` points."""
    mx = statistics.mean(p[0] for p in points)
    my = statistics.mean(p[1] for p in points)
    return sum((x - mx) * (y - my) for x, y in points) / sum((x - mx) ** 2 for x, _ in points)


def memory_growth(stats: list[dict]) -> dict[str, dict]:
    """Per worker: RSS after its first shard, at its end, and the slope (MB / 1000 problems)."""
    per_pid: dict[int, list[tuple[int, float]]] = {}
    for s in sorted(stats, key=lambda s: s["done_s"]):
        done = per_pid.setdefault(s["pid"], [])
        total = (done[-1][0] if done else 0) + s["problems"]
        done.append((total, s["rss_mb"]))
    out = {}
    for pid, points in per_pid.items():
        points = points[1:]  # from the end of its first shard (MotionGen built, warmed up)
        if len(points) < 4:
            continue
        xs, ys = [p[0] for p in points], [p[1] for p in points]
        out[str(pid)] = {
            "problems": xs[-1],
            "rss_first_mb": ys[0],
            "rss_last_mb": ys[-1],
            "rss_max_mb": max(ys),
            "growth_mb": ys[-1] - ys[0],
            "slope_mb_per_1000": 1000 * _slope(points),
            # the second half alone: code paths first taken early on (Warp modules, caches
            # that fill to their bound) are done growing by then
            "slope_second_half_mb_per_1000": 1000 * _slope(points[len(points) // 2 :]),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--families", nargs="+", default=["bookshelf_small"])
    parser.add_argument("--problems", type=int, default=24)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--shard-size", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--generator", default="{}", help="ProblemGenerator options (JSON)")
    parser.add_argument("--motion-gen", default="{}", help="MotionGen options (JSON)")
    parser.add_argument("--long-problems", type=int, default=200, help="0: no memory run")
    parser.add_argument("--long-generator", default=json.dumps(CHEAP_GENERATOR))
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--gpus-per-worker", type=float, default=1.0)
    parser.add_argument(
        "--direct",
        action="store_true",
        help="no Ray: one worker's shards in this process (throughput and memory only)",
    )
    parser.add_argument("--json", default=str(REPO / "out" / "dataset.json"))
    args = parser.parse_args()
    base = {
        "families": args.families,
        "seed": args.seed,
        "shard_size": args.shard_size,
        "motion_gen": json.loads(args.motion_gen),
    }
    config = DatasetConfig.from_dict(
        {**base, "problems": args.problems, "generator": json.loads(args.generator)}
    )
    print(f"load average at start: {_load()} (this machine's cores are shared with other work)")
    rows = []
    print(
        f"{'workers':>7} {'problems':>8} {'solved':>6} {'wall s':>7} {'wall p/s':>8} "
        f"{'steady p/s':>10} {'worker s/p':>10} {'cpu s/p':>7} {'core':>5} {'driver ms':>9} "
        f"{'speedup':>7} {'free-core speedup':>17}"
    )
    for workers in [1] if args.direct else args.workers:
        if args.direct:
            row = run_direct(config, args.device)
        else:
            row = run_once(config, workers, args.device, args.gpus_per_worker)
        rows.append(row)
        first = rows[0]
        speedup = (
            row["steady_problems_per_s"] / first["steady_problems_per_s"]
            if row["steady_problems_per_s"] and first["steady_problems_per_s"]
            else None
        )
        row["steady_speedup"] = speedup
        row["wall_speedup"] = row["wall_problems_per_s"] / first["wall_problems_per_s"]
        # what the workers would do with a core each: W / (CPU s per problem), vs the first
        row["free_core_speedup"] = (
            workers
            / row["worker_cpu_s_per_problem"]
            / (first["workers"] / first["worker_cpu_s_per_problem"])
        )
        steady = row["steady_problems_per_s"]
        print(
            f"{workers:>7} {row['problems']:>8} {row['successes']:>6} {row['solve_s']:>7.1f} "
            f"{row['wall_problems_per_s']:>8.3f} {steady or float('nan'):>10.3f} "
            f"{row['worker_s_per_problem']:>10.2f} {row['worker_cpu_s_per_problem']:>7.2f} "
            f"{row['worker_core_share']:>5.2f} "
            f"{statistics.median(row['driver_ms_per_shard']):>9.1f} "
            f"{speedup or float('nan'):>7.2f} {row['free_core_speedup']:>17.2f}",
            flush=True,
        )
    driver_ms = [d for r in rows for d in r["driver_ms_per_shard"]]
    driver = {
        "median_ms": statistics.median(driver_ms),
        "max_ms": max(driver_ms),
        "share_of_shard_time": statistics.median(driver_ms)
        / 1000
        / statistics.median(s["seconds"] for r in rows for s in r["shard_stats"]),
    }
    print(
        f"\ndriver per shard: median {driver['median_ms']:.1f} ms, max {driver['max_ms']:.1f} ms "
        f"({100 * driver['share_of_shard_time']:.2f}% of a shard's worker time)"
    )
    memory = {}
    if args.long_problems:
        long_config = DatasetConfig.from_dict(
            {
                **base,
                "problems": args.long_problems,
                "generator": json.loads(args.long_generator),
            }
        )
        workers = 1 if args.direct else max(args.workers)
        if args.direct:
            long_row = run_direct(long_config, args.device)
        else:
            long_row = run_once(long_config, workers, args.device, args.gpus_per_worker)
        memory = memory_growth(long_row["shard_stats"])
        print(
            f"\nmemory over {args.long_problems} problems ({workers} workers, generator "
            f"{args.long_generator}, {long_row['wall_problems_per_s']:.2f} problems/s):"
        )
        for pid, m in memory.items():
            print(
                f"  worker {pid}: {m['problems']} problems, RSS {m['rss_first_mb']:.1f} -> "
                f"{m['rss_last_mb']:.1f} MB (max {m['rss_max_mb']:.1f}), growth "
                f"{m['growth_mb']:+.1f} MB, slope {m['slope_mb_per_1000']:+.2f} MB/1000 problems "
                f"({m['slope_second_half_mb_per_1000']:+.2f} over the second half)"
            )
    best = max(rows, key=lambda r: r["steady_problems_per_s"] or 0.0)
    per_machine = best["steady_problems_per_s"] or best["wall_problems_per_s"]
    driver_cap = (
        args.shard_size / (driver["median_ms"] / 1000)
        if math.isfinite(driver["median_ms"])
        else math.inf  # --direct: no driver measured
    )
    projection = {n: min(n * per_machine, driver_cap) for n in (1, 4, 16, 64, 256, 1024, 4096)}
    print(
        f"\nprojection ({best['workers']} workers per machine, {per_machine:.3f} problems/s "
        f"each; one driver stores up to {driver_cap:.0f} problems/s at shard size "
        f"{args.shard_size}):"
    )
    for n, rate in projection.items():
        print(f"  {n:>5} machines: {rate:>10.1f} problems/s, {rate * 86400 / 1e6:>8.2f} M/day")
    print(f"load average at end: {_load()}")
    meta = {
        "machine": platform.machine(),
        "device": args.device,
        "gpus_per_worker": args.gpus_per_worker,
        "families": args.families,
        "shard_size": args.shard_size,
        "driver": driver,
        "memory": memory,
        "projection_problems_per_s": projection,
        "load_average_end": _load(),
    }
    write_json(args.json, meta, [{k: v for k, v in r.items() if k != "shard_stats"} for r in rows])


if __name__ == "__main__":
    main()
