"""Distributed faults (issue 15): when one rank raises, exits or hangs, every other rank ends with
a :class:`~curobo_lite.DistributedError` within the process-group timeout (read from the task
file's ``distributed`` section), never a hang. Real processes on gloo over loopback, 2-3 ranks;
the parent kills whatever outlives a deadline, and fails the test if a survivor did."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from rank_processes import free_port, run_ranks

TIMEOUT_S = 3.0  # the process-group timeout the ranks read from their task section
DEADLINE_S = 90.0  # whole spawn, including torch imports on a busy machine


def _rank(rank: int, world: int, port: int, fault: str, out_dir: str) -> None:
    os.environ.update(
        MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world)
    )
    import torch
    import torch.distributed as dist

    from curobo_lite.distributed import DistributedConfig, all_gather_with_grad, init_from_env
    from curobo_lite.rollout import TaskConfig
    from curobo_lite.types import DistributedError

    torch.set_num_threads(1)
    task = TaskConfig.from_dict({"model": {}, "distributed": {"timeout_s": TIMEOUT_S}})
    init_from_env("gloo", timeout=DistributedConfig.from_dict(task.distributed).timeout)
    x = torch.full((2, 3), float(rank), requires_grad=True)
    first = all_gather_with_grad(x)  # one good round: every rank is up
    record = {"rank": rank, "first": first.detach().tolist()}
    start = time.monotonic()
    faulty = rank == world - 1
    try:
        if faulty and fault == "raise":
            try:
                raise ValueError("injected failure")
            finally:  # what sharded_solve.main does on its way out
                dist.destroy_process_group()
        if faulty and fault == "exit":
            os._exit(3)
        if faulty and fault == "hang":
            time.sleep(600)
        for _ in range(3):
            all_gather_with_grad(x).sum().backward()
        record["outcome"] = "ok"
    except DistributedError as err:
        record["outcome"], record["message"] = "DistributedError", str(err)
    record["elapsed"] = time.monotonic() - start
    Path(out_dir, f"rank{rank}.json").write_text(json.dumps(record))
    os._exit(0)  # skip the process-group teardown, which would wait on the dead peer


@pytest.mark.parametrize("fault, world", [("raise", 2), ("exit", 3), ("hang", 3)])
def test_a_failing_rank_ends_every_other_rank_with_a_clear_error(fault, world, tmp_path):
    port = free_port()
    args = [(r, world, port, fault, str(tmp_path)) for r in range(world)]
    hung = run_ranks(_rank, args, world - 1, DEADLINE_S)
    assert not hung, f"ranks {hung} still running after {DEADLINE_S} s"
    for rank in range(world - 1):
        record = json.loads((tmp_path / f"rank{rank}.json").read_text())
        # the first round gathered every rank's rows, in rank order
        assert record["first"] == [[float(r)] * 3 for r in range(world) for _ in range(2)]
        assert record["outcome"] == "DistributedError", record
        assert f"rank {rank} of {world}" in record["message"]
        assert "all_gather_with_grad" in record["message"]
        # bounded: a dead peer is noticed at once, a hung one after the timeout
        assert record["elapsed"] < TIMEOUT_S + 10.0, record["elapsed"]
