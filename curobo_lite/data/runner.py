"""The driver of ``curobo-lite dataset generate``: shards as Ray tasks, written as they finish.

Ray does the scheduling and the retries: each missing shard is one task
(:func:`~curobo_lite.data.worker.solve_shard`, ``num_cpus=1`` or ``num_gpus=1``,
``max_retries``), at most ``workers`` in flight, collected with ``ray.wait``. The driver is the
only writer: it checks the bytes against the worker's checksum, writes the shard atomically
(temporary file, fsync, rename: :func:`~curobo_lite.config_files.atomic_open`) and then
appends its manifest line. A worker that dies is retried by Ray; a shard that still fails is
listed in ``failed.json`` and the summary (and the exit status), never dropped in silence; a
rerun of the same command redoes exactly the shards without a manifest line.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ray
from tqdm import tqdm

from curobo_lite.config_files import atomic_open, atomic_write_text
from curobo_lite.data.config import (
    CONFIG_FILE,
    FAILED_FILE,
    DatasetConfig,
    check_same_config,
    config_text,
    read_config,
    shard_file,
    versions,
)
from curobo_lite.data.manifest import append_line, finished_shards
from curobo_lite.data.shard import sha256
from curobo_lite.data.worker import solve_shard
from curobo_lite.types.checks import parse_number, received
from curobo_lite.types.errors import CuroboLiteError, InputTypeError, InputValueError

DEVICES = ("cpu", "cuda")


class ShardTransferError(CuroboLiteError, RuntimeError):
    """A shard's bytes reached the driver with another checksum than the worker computed."""


@dataclass
class GenerateSummary:
    """What one ``generate`` run did.

    Attributes:
        shards: shards of the dataset; ``skipped``: finished before this run; ``written``:
            written by it; ``failed``: shard -> error, after Ray's retries.
        problems, successes: in the shards this run wrote; ``families``: family ->
            ``[problems, successes]`` of those.
        seconds: wall time of the run (Ray start included); ``solve_seconds``: from the first
            submission to the last result.
        driver_seconds: per written shard, the driver's own time (fetching the result,
            checking, writing, the manifest line).
        shard_stats: per written shard ``{shard, pid, host, rss_mb, seconds, cpu_seconds,
            problems, successes, done_s}`` (``seconds``, ``cpu_seconds``: wall and CPU time
            in the worker; ``done_s``: when it was stored, since the first submission).
        interrupted: the run was stopped (Ctrl-C) before it finished.
    """

    shards: int = 0
    skipped: int = 0
    written: int = 0
    failed: dict[int, str] = field(default_factory=dict)
    problems: int = 0
    successes: int = 0
    families: dict[str, list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0]))
    seconds: float = 0.0
    solve_seconds: float = 0.0
    driver_seconds: list[float] = field(default_factory=list)
    shard_stats: list[dict[str, Any]] = field(default_factory=list)
    interrupted: bool = False

    @property
    def complete(self) -> bool:
        return (
            not self.failed and not self.interrupted and self.skipped + self.written == self.shards
        )

    @property
    def problems_per_s(self) -> float:
        return self.problems / self.solve_seconds if self.solve_seconds > 0 else 0.0

    def report(self) -> str:
        """The end-of-run summary, a few lines."""
        lines = [
            f"shards: {self.written} written, {self.skipped} already done, "
            f"{len(self.failed)} failed, of {self.shards}"
            + (" (interrupted: run the same command again to resume)" if self.interrupted else ""),
            f"problems: {self.problems} in {self.solve_seconds:.1f} s "
            f"({self.problems_per_s:.2f}/s), success {self.successes}/{self.problems}",
        ]
        for family, (n, ok) in sorted(self.families.items()):
            lines.append(f"  {family:>17}: {ok}/{n} solved")
        if self.driver_seconds:
            mean = sum(self.driver_seconds) / len(self.driver_seconds)
            lines.append(f"driver time per shard: {1000 * mean:.1f} ms")
        for shard, error in sorted(self.failed.items()):
            lines.append(f"FAILED shard {shard}: {error.splitlines()[-1] if error else ''}")
        return "\n".join(lines)


def _check_arguments(workers: int | None, device: str, address: str | None) -> None:
    if workers is not None and (
        isinstance(workers, bool) or not isinstance(workers, int) or workers < 1
    ):
        raise InputValueError(f"workers: expected an integer >= 1, {received(workers)}")
    if device not in DEVICES:
        raise InputValueError(f"device: expected one of {list(DEVICES)}, received {device!r}")
    if address is not None and (not isinstance(address, str) or not address):
        raise InputTypeError(
            f"address: expected 'auto', 'ray://host:port' or host:port, {received(address)}"
        )


def _check_folder(config: DatasetConfig, out: Path) -> None:
    """Refuse a file, or a dataset folder of another configuration (nothing is written)."""
    if (out / CONFIG_FILE).is_file():
        check_same_config(read_config(out), config, out)
    elif out.exists() and not out.is_dir():
        raise InputValueError(f"out: expected a folder, received the file {out}")


def _start_folder(config: DatasetConfig, out: Path) -> None:
    """Write ``dataset.json`` in a new folder; remove what a killed driver left half-written."""
    if not (out / CONFIG_FILE).is_file():
        out.mkdir(parents=True, exist_ok=True)
        atomic_write_text(out / CONFIG_FILE, config_text(config))
    # temporary files of a driver killed mid-write (atomic_open's names): never a shard
    for stale in out.glob(".shard-*.tmp.parquet"):
        stale.unlink(missing_ok=True)


def _connect(address: str | None, workers: int | None) -> bool:
    """Join the cluster at ``address``, or start a local Ray (``workers`` CPUs); True when
    this call started Ray (and the run shuts it down)."""
    if ray.is_initialized():
        return False
    if address is None:
        ray.init(
            num_cpus=workers or os.cpu_count() or 1,
            include_dashboard=False,
            log_to_driver=False,
            logging_level="ERROR",
        )
    else:
        ray.init(address=address, log_to_driver=False, logging_level="ERROR")
    return True


def _write_failed(out: Path, failed: dict[int, str]) -> None:
    path = out / FAILED_FILE
    if failed:
        atomic_write_text(
            path, json.dumps({str(k): v for k, v in sorted(failed.items())}, indent=2)
        )
    else:
        path.unlink(missing_ok=True)


def _store(
    out: Path, config: DatasetConfig, shard: int, result: dict[str, Any], device: str
) -> dict:
    """Write one finished shard (atomic rename) and then its manifest line."""
    data = result["data"]
    digest = sha256(data)
    if digest != result["sha256"]:
        raise ShardTransferError(f"shard {shard}: bytes changed in transit (checksum mismatch)")
    name = shard_file(shard)
    with atomic_open(out / name, "wb") as f:
        f.write(data)
    ids = config.shard_ids(shard)
    line = {
        "shard": shard,
        "file": name,
        "problems": result["problems"],
        "successes": result["successes"],
        "generation_failures": result["generation_failures"],
        "families": result["families"],
        "dof": result["dof"],
        "first_id": ids.start,
        "last_id": ids.stop - 1,
        "seed": config.seed,
        "sha256": digest,
        "bytes": len(data),
        "device": device,
        "versions": dict(versions()),
        "host": result["host"],
        "pid": result["pid"],
        "solve_s": round(result["seconds"], 3),
        "written": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    append_line(out, line)
    return line


def generate_dataset(
    config: DatasetConfig,
    out: str | Path,
    workers: int | None = None,
    address: str | None = None,
    device: str = "cpu",
    max_retries: int = 3,
    progress: bool = True,
    gpus_per_worker: float = 1.0,
) -> GenerateSummary:
    """Generate (or resume) the dataset ``config`` in the folder ``out``.

    Args:
        config: the dataset (problems, families, seed, shard size, planner options).
        out: its folder; a folder holding another configuration is refused.
        workers: shards in flight at once (each one CPU, or one GPU); default: the cluster's
            CPUs (GPUs with ``device="cuda"``). Without ``address`` a local Ray with this many
            CPUs is started.
        address: a Ray cluster to join (``auto``, ``ray://host:10001``, ``host:6379``); an
            already initialised Ray (``ray.init`` by the caller) is used as it is.
        device: where workers plan (``cpu``: one thread each; ``cuda``: one GPU each).
        max_retries: Ray's retries of a shard whose worker died or that raised.
        progress: show the live bar (problems per second, success so far).
        gpus_per_worker: with ``device="cuda"``, the GPU share of a worker (Ray's fractional
            GPUs: 0.25 puts four workers on one GPU, which keeps it busier than one).

    Returns:
        A :class:`GenerateSummary`; it lists the shards that kept failing.
    """
    if not isinstance(config, DatasetConfig):
        raise InputTypeError(f"config: expected a DatasetConfig, received {type(config).__name__}")
    _check_arguments(workers, device, address)
    if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
        raise InputValueError(f"max_retries: expected an integer >= 0, {received(max_retries)}")
    gpus_per_worker = parse_number(
        gpus_per_worker, "gpus_per_worker", low=0.0, high=1.0, low_open=True
    )
    t_run = time.perf_counter()
    out = Path(out)
    _check_folder(config, out)
    summary = GenerateSummary(shards=config.num_shards)
    done = finished_shards(out) if out.is_dir() else {}
    summary.skipped = len(done)
    todo = [k for k in range(config.num_shards) if k not in done]
    if not todo:
        _write_failed(out, {})
        summary.seconds = time.perf_counter() - t_run
        return summary
    started = _connect(address, workers)
    try:
        resources = ray.cluster_resources()
        unit = "GPU" if device == "cuda" else "CPU"
        if resources.get(unit, 0) < 1:
            raise InputValueError(
                f"device: {device} needs a {unit} in the Ray cluster, which has {resources}"
            )
        _start_folder(config, out)  # the run can start: only now is anything written
        share = gpus_per_worker if device == "cuda" else 1.0
        workers = workers or int(resources[unit] / share)
        task = ray.remote(
            num_cpus=1,
            num_gpus=share if device == "cuda" else 0,
            max_retries=max_retries,
            retry_exceptions=True,
        )(solve_shard)
        _run(task, config, out, todo, workers, device, summary, done, progress)
    finally:
        if started:
            ray.shutdown()
    _write_failed(out, summary.failed)
    summary.seconds = time.perf_counter() - t_run
    return summary


def _run(
    task: Any,
    config: DatasetConfig,
    out: Path,
    todo: list[int],
    workers: int,
    device: str,
    summary: GenerateSummary,
    done: dict[int, dict],
    progress: bool,
) -> None:
    """Submit ``todo`` (at most ``workers`` in flight), store results as they come."""
    data = config.to_dict()
    pending = list(reversed(todo))
    in_flight: dict[Any, int] = {}
    done_problems = sum(line["problems"] for line in done.values())
    bar = tqdm(
        total=config.problems,
        initial=done_problems,
        unit="problem",
        disable=not progress,
        file=sys.stderr,
        dynamic_ncols=True,
    )
    t0 = time.perf_counter()
    try:
        while pending or in_flight:
            while pending and len(in_flight) < workers:
                shard = pending.pop()
                ref = task.options(name=f"shard-{shard:06d}").remote(data, shard, device)
                in_flight[ref] = shard
            ready, _ = ray.wait(list(in_flight), num_returns=1, timeout=1.0)
            for ref in ready:
                shard = in_flight.pop(ref)
                t_driver = time.perf_counter()
                try:
                    result = ray.get(ref)
                    _store(out, config, shard, result, device)
                except (ray.exceptions.RayError, ShardTransferError) as err:
                    summary.failed[shard] = f"{type(err).__name__}: {err}"
                    _write_failed(out, summary.failed)  # reported even if the run is then cut
                    continue
                summary.driver_seconds.append(time.perf_counter() - t_driver)
                summary.written += 1
                summary.problems += result["problems"]
                summary.successes += result["successes"]
                for family, (n, ok) in result["families"].items():
                    summary.families[family][0] += n
                    summary.families[family][1] += ok
                summary.shard_stats.append(
                    {
                        "shard": shard,
                        "pid": result["pid"],
                        "host": result["host"],
                        "rss_mb": result["rss_mb"],
                        "seconds": result["seconds"],
                        "cpu_seconds": result["cpu_seconds"],
                        "problems": result["problems"],
                        "successes": result["successes"],
                        "done_s": time.perf_counter() - t0,
                    }
                )
                bar.update(result["problems"])
                bar.set_postfix(success=f"{summary.successes}/{summary.problems}", refresh=False)
    except KeyboardInterrupt:
        summary.interrupted = True
        for ref in in_flight:
            ray.cancel(ref, force=True)
    finally:
        summary.solve_seconds = time.perf_counter() - t0
        bar.close()
