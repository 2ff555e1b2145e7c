"""Rank faults in a whole sharded solve (issue #34, item 7).

``tests/test_distributed_faults.py`` injects faults around ``all_gather_with_grad`` alone; here
every rank runs the real entry point, ``curobo_lite.wrap.cli.sharded_solve.main`` (task file,
process group with the task's ``distributed.timeout_s``, TrajOptSolver sharded over the ranks,
the seed gather), and the last rank raises, exits or hangs in the middle of its optimization.
Every other rank must end with a :class:`~curobo_lite.DistributedError` naming itself, within
the configured timeout plus a margin; the parent kills whatever outlives a deadline and fails
the test if a survivor did.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
import yaml
from rank_processes import free_port, run_ranks

TIMEOUT_S = 3.0  # the task file's distributed.timeout_s
DEADLINE_S = 120.0  # whole spawn, including torch imports and solver builds on a busy machine
GOAL = ["0.6", "0.4", "0.0", "0.9238795", "0.0", "0.0", "0.3826834"]  # planar3, reachable


def _task_file(folder: Path) -> Path:
    """The bundled trajopt task, small (a few hundred ms per solve), with a short timeout."""
    from curobo_lite.config_files import resolve_config_file

    data = yaml.safe_load(resolve_config_file("task", "gradient_trajopt").read_text())
    data["lbfgs"]["n_iters"] = 6
    data["trajopt"]["ik"]["num_seeds"] = 4
    data["trajopt"]["ik"]["lbfgs"]["n_iters"] = 4
    data["distributed"] = {"timeout_s": TIMEOUT_S}
    path = folder / "task.yml"
    path.write_text(yaml.safe_dump(data))
    return path


def _rank(rank: int, world: int, port: int, fault: str, task: str, out_dir: str) -> None:
    os.environ.update(
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
        RANK=str(rank),
        WORLD_SIZE=str(world),
        LOCAL_RANK=str(rank),
        OMP_NUM_THREADS="1",
    )
    import torch

    from curobo_lite.types import DistributedError
    from curobo_lite.wrap.cli import sharded_solve
    from curobo_lite.wrap.trajopt import solve as trajopt_solve

    torch.set_num_threads(1)
    faulty = rank == world - 1 and fault != "none"
    record: dict = {"rank": rank}
    if faulty:
        original = trajopt_solve.TrajOptPhases._optimize

        def broken(self, *args, **kwargs):
            # the fault strikes inside the solve, after the ranks joined the group and before
            # this rank's share reaches the seed gather
            if fault == "raise":
                raise RuntimeError("injected failure in rank's optimization")
            if fault == "exit":
                os._exit(3)
            time.sleep(600)  # hang
            return original(self, *args, **kwargs)

        trajopt_solve.TrajOptPhases._optimize = broken
    start = time.monotonic()
    argv = ["--robot", "planar3", "--task", task, "--goal", *GOAL, "--seeds", "4"]
    argv += ["--json", str(Path(out_dir, "summary.json"))]
    try:
        record["status"] = sharded_solve.main(argv)
        record["outcome"] = "ok"
    except DistributedError as err:
        record["outcome"], record["message"] = "DistributedError", str(err)
    except RuntimeError as err:
        record["outcome"], record["message"] = type(err).__name__, str(err)
    record["elapsed"] = time.monotonic() - start
    Path(out_dir, f"rank{rank}.json").write_text(json.dumps(record))
    os._exit(0)  # skip the interpreter's teardown, which could wait on a dead peer


def _run(fault: str, world: int, tmp_path: Path) -> list[dict]:
    task = _task_file(tmp_path)
    port = free_port()
    args = [(r, world, port, fault, str(task), str(tmp_path)) for r in range(world)]
    survivors = world if fault == "none" else world - 1
    hung = run_ranks(_rank, args, survivors, DEADLINE_S)
    assert not hung, f"ranks {hung} still running after {DEADLINE_S} s"
    return [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(survivors)]


@pytest.mark.parametrize("fault, world", [("raise", 2), ("exit", 3), ("hang", 2)])
def test_a_failing_rank_ends_every_other_rank_of_a_sharded_solve(fault, world, tmp_path):
    records = _run(fault, world, tmp_path)
    for rank, record in enumerate(records):
        assert record["outcome"] == "DistributedError", record
        assert f"rank {rank} of {world}" in record["message"], record
        # bounded: a peer that raised or exited is noticed at once, a hung one after the timeout
        assert record["elapsed"] < TIMEOUT_S + 15.0, record
    assert not (tmp_path / "summary.json").exists()  # no result from a failed run


def test_the_same_sharded_solve_without_a_fault_succeeds(tmp_path):
    """The control: the same ranks and task, no fault, end normally with a result."""
    records = _run("none", 2, tmp_path)
    assert [r["outcome"] for r in records] == ["ok", "ok"], records
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["world_size"] == 2 and summary["seeds"] == 4
    assert summary["position_error"] < 0.05
