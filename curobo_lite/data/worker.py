"""One shard's work, in a worker process: make its problems with the seeded generator, plan
each with MotionGen, return the Parquet bytes.

Plain functions (no Ray here): :mod:`curobo_lite.data.runner` runs :func:`solve_shard` as a
Ray task. A worker process keeps one :class:`~curobo_lite.scenes.ProblemGenerator` and one
:class:`~curobo_lite.wrap.MotionGen` (:func:`planners`) for every shard it runs, and swaps each
problem's world in (``update_world``): nothing is rebuilt or recompiled per problem.
"""

from __future__ import annotations

import ctypes
import gc
import json
import os
import resource
import socket
import sys
import time
from typing import Any

import torch

from curobo_lite.data.config import DatasetConfig
from curobo_lite.data.shard import GENERATION_FAIL, sha256, shard_bytes
from curobo_lite.scenes import MbmProblem, ProblemGenerator
from curobo_lite.types import JointState, Pose, TensorDeviceType
from curobo_lite.types.errors import CuroboLiteError
from curobo_lite.wrap import MotionGen

#: (configuration key, device) -> (generator, motion_gen): one pair per worker process
_PLANNERS: dict[tuple[str, str], tuple[ProblemGenerator, MotionGen]] = {}


def planners(config: DatasetConfig, device: str) -> tuple[ProblemGenerator, MotionGen]:
    """This process's generator and MotionGen for ``config`` on ``device`` (built on first
    use, then reused; one torch thread: a worker is one CPU)."""
    key = (json.dumps([config.robot, config.generator, config.motion_gen], sort_keys=True), device)
    if key not in _PLANNERS:
        torch.set_num_threads(1)
        _PLANNERS.clear()  # another configuration: drop the old pair's memory
        tensor_args = TensorDeviceType(device=torch.device(device))
        generator = ProblemGenerator(config.robot, tensor_args, **config.generator)
        motion_gen = MotionGen.from_config(config.robot, None, tensor_args, **config.motion_gen)
        _PLANNERS[key] = (generator, motion_gen)
    return _PLANNERS[key]


def release_memory() -> None:
    """Collect garbage and hand freed heap pages back to the OS (glibc ``malloc_trim``; a
    no-op elsewhere): without it a worker's resident memory drifts up and down by tens of MB
    with whatever the allocator keeps from the last problems, which is not a leak but reads
    like one over a long run."""
    gc.collect()
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (AttributeError, OSError):  # not glibc
        pass


def rss_mb() -> float:
    """This process's resident memory (MB): ``/proc/self/statm`` on Linux, else its peak."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak / (2**20 if sys.platform == "darwin" else 2**10)


def _failed_row(config: DatasetConfig, problem_id: int, family: str, index: int) -> dict:
    return {
        "problem_id": problem_id,
        "name": f"{family}_{config.seed}_{index:04d}",
        "family": family,
        "family_index": index,
        "seed": config.seed,
        "world": {},
        "target": "",
        "start": [],
        "goal_pose": [],
        "goal_config": [],
        "status": GENERATION_FAIL,
        "success": False,
        "plan": [],
        "dt": float("nan"),
        "motion_time": float("nan"),
        "position_error": float("nan"),
        "rotation_error": float("nan"),
        "plan_s": 0.0,
        "timings": {},
        "scene_tries": 0,
    }


def _problem_row(problem: MbmProblem, problem_id: int) -> dict:
    return {
        "problem_id": problem_id,
        "name": problem.name,
        "family": problem.family,
        "family_index": problem.index,
        "seed": problem.seed,
        "world": problem.world.to_dict(),
        "target": problem.target,
        "start": [float(v) for v in problem.start],
        "goal_pose": [float(v) for v in problem.goal_pose],
        "goal_config": [float(v) for v in problem.goal_config],
        "scene_tries": problem.tries,
        "error": "",
    }


def plan_problems(motion_gen: MotionGen, problems: list[MbmProblem]) -> list[dict]:
    """Plan ``problems`` that share one world (their first's): one ``plan_batch`` call for
    all; per problem the result's columns (status, success, plan, dt, errors, timings).
    ``plan_s`` is the call's time shared evenly."""
    tensor_args = motion_gen.tensor_args
    motion_gen.update_world(problems[0].world)
    start = JointState.from_position(tensor_args.to_device([p.start for p in problems]))
    goal = tensor_args.to_device([p.goal_pose for p in problems])
    t0 = time.perf_counter()
    results = motion_gen.plan_batch(start, Pose(goal[:, :3].contiguous(), goal[:, 3:].contiguous()))
    seconds = (time.perf_counter() - t0) / len(problems)
    columns = []
    for result in results:
        plan = result.interpolated_plan
        columns.append(
            {
                "status": result.status.value,
                "success": bool(result.success),
                "plan": [] if plan is None else plan.position.detach().cpu().float().tolist(),
                "dt": float(result.interpolation_dt),
                "motion_time": float(result.motion_time),
                "position_error": float(result.position_error),
                "rotation_error": float(result.rotation_error),
                "plan_s": seconds,
                "timings": {k: float(v) for k, v in result.timings.items()},
            }
        )
    return columns


def solve_shard(config_data: dict[str, Any], shard: int, device: str = "cpu") -> dict[str, Any]:
    """Make and plan the problems of shard ``shard`` of the dataset ``config_data``
    (:meth:`DatasetConfig.to_dict`).

    Returns ``{"data": Parquet bytes, "sha256", "problems", "successes",
    "generation_failures", "families" (family -> [problems, successes]), "seconds",
    "cpu_seconds" (this process's CPU time), "rss_mb", "host", "pid"}``. An id whose draws give no
    valid problem (the generator's :class:`CuroboLiteError`) becomes a
    :data:`GENERATION_FAIL` row; any other error fails the shard (Ray retries it).
    """
    config = DatasetConfig.from_dict(config_data)
    t_start, cpu_start = time.perf_counter(), time.process_time()
    generator, motion_gen = planners(config, device)
    rows: list[dict] = []
    group: list[tuple[dict, MbmProblem]] = []  # consecutive problems sharing one world

    def flush() -> None:
        for (row, _), columns in zip(
            group, plan_problems(motion_gen, [p for _, p in group]), strict=True
        ):
            row.update(columns)
        group.clear()

    for problem_id in config.shard_ids(shard):
        slot = config.slot(problem_id)
        t0 = time.perf_counter()
        try:
            problem = generator.make(slot.family, config.seed, slot.index)
        except CuroboLiteError as err:  # no valid scene within max_scenes: recorded, not lost
            row = _failed_row(config, problem_id, slot.family, slot.index)
            row.update(generate_s=time.perf_counter() - t0, error=str(err))
            rows.append(row)
            continue
        row = _problem_row(problem, problem_id)
        row["generate_s"] = time.perf_counter() - t0
        if group and group[0][1].world.to_dict() != problem.world.to_dict():
            flush()
        group.append((row, problem))
        rows.append(row)
    if group:
        flush()
    data = shard_bytes(rows)
    release_memory()
    families: dict[str, list[int]] = {}
    for row in rows:
        counts = families.setdefault(row["family"], [0, 0])
        counts[0] += 1
        counts[1] += int(row["success"])
    return {
        "data": data,
        "sha256": sha256(data),
        "problems": len(rows),
        "successes": sum(r["success"] for r in rows),
        "generation_failures": sum(r["status"] == GENERATION_FAIL for r in rows),
        "families": families,
        "dof": motion_gen.dof,
        "seconds": time.perf_counter() - t_start,
        "cpu_seconds": time.process_time() - cpu_start,
        "rss_mb": rss_mb(),
        "host": socket.gethostname(),
        "pid": os.getpid(),
    }
