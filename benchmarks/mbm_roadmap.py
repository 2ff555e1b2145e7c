"""Where MotionGen's roadmap stage spends its time on MotionBenchMaker problems (#29).

Runs ``MotionGen.plan_single`` on MBM problems (``benchmarks/data/mbm``) with one torch thread
and counts, per plan, in thread CPU time (``time.thread_time``, so that the other processes on
a shared host weigh less): the IK, the mesh screening of the goals, the approach / escape
chains, the sample rounds (samples drawn and validated), the lazy search (rounds, coarse and
fine segment checks: segments and samples), the shortcuts, the mesh queries of the segment
check (calls, segments, rows, time), the mesh queries of the exact band (inside the sphere
checks), the time-parametrisation and clearance of the final plan (``_from_path``), and the
rest (Python, graph search); where the first roadmap connects no goal, the goal retry
(``goal_retry``: its IK and its roadmaps, which count in the stages above too). Every plan is
judged as ``benchmarks/mbm.py`` does (exact mesh check, 5 mm / 0.05 rad).

``--variants`` compares option sets (``name:key=value,key=value``, MotionGen roadmap options;
``base`` = no change), interleaved problem by problem in one process.

Measured (first 30 of cage and table_under_pick, before #29's session-9 changes; 1 thread,
thread CPU, load ~3, medians per plan; "calls" = batched calls, "rows" = configurations):

=============================================  ==================  ==================
stage                                          cage                table_under_pick
=============================================  ==================  ==================
whole ``plan_single``                          0.336 s             0.360 s
IK                                             0.034 s             0.033 s
roadmap stage (all below)                      0.261 s             0.283 s
- goal mesh screening                          0.003 s             0.004 s
- approach chains (64 segments, 385 samples)   0.016 s             0.018 s
- escape chains (256 segments, 1 098 samples)  0.027 s             0.014 s
- sample rounds (1; 512 validated, ~49 mesh)   0.026 s             0.019 s
- lazy search: sphere checks                   5.5 calls, 107      14.5 calls, 369
  (segments, samples at 0.1 / 0.02 rad)        segs, 1 359 smp,    segs, 3 224 smp,
                                               0.034 s             0.094 s
- lazy search: exact-band mesh queries         5.5 calls, 34 rows  17.5 calls, 72 rows
                                               0.007 s             0.020 s
- Dijkstra (2 per search round)                8 calls, 0.007 s    16.5 calls, 0.014 s
- shortcut: sphere checks                      10 calls, 28 segs,  8 calls, 22 segs,
                                               691 smp, 0.037 s    727 smp, 0.025 s
- shortcut: segment mesh check (coal, swept)   11.5 calls, 543     8 calls, 387 rows,
                                               rows, 0.064 s       0.048 s
- plan timing + clearance (``_from_path``)     0.019 s             0.020 s
=============================================  ==================  ==================

Unit costs behind it: ``validate_segments`` ~1.4-2 ms per call plus ~11-12 us per sample;
a coal mesh query ~0.1 ms per row plus ~1 ms per call (frames, broad phase); a Dijkstra
~0.85 ms at 250-350 nodes. In the segment mesh check half the rows are within 1 cm of an
obstacle (fingers about the grasped object, 7 065 rows of 12 cage plans: 50 % < 1 cm, 71 %
< 2 cm, 94 % < 5 cm), so a sphere-based lower bound (spheres reach up to 15 mm past the
meshes) would spare few of them.

After this session's changes (one shortcut pass; ``collision_distance`` on the per-link
kernel; the segment mesh check's pieces per segment, dense near obstacles), interleaved with
the earlier code in one process (same paths in all 90 problems; load 0.9-1.5): median thread
CPU per plan cage (30) 0.324 -> 0.297 s, table_under_pick (30) 0.346 -> 0.292 s, box (15)
0.181 -> 0.168 s, bookshelf_thin (15) 0.105 -> 0.098 s; success 30/30, 29/30, 15/15, 15/15
both ways; ``_from_path`` 19 -> 10 ms, shortcut 108 -> 89 / 68 -> 49 ms (cage / tup).

Usage::

    python benchmarks/mbm_roadmap.py [--families cage table_under_pick] [--problems 30]
        [--variants base small:num_samples=256] [--json out/mbm_roadmap.json]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import torch
import yaml
from mbm import judge, load_problems
from timing import write_json

from curobo_lite.types import JointState, Pose, TensorDeviceType
from curobo_lite.wrap import MotionGen, RobotWorld
from curobo_lite.wrap.base.mesh_check import MeshCheck
from curobo_lite.wrap.motion import roadmap as roadmap_module
from curobo_lite.wrap.motion.motion_gen import MotionGen as MotionGenClass
from curobo_lite.wrap.motion.roadmap_stage import RoadmapStage

REPO = Path(__file__).resolve().parents[1]


class Profile:
    """Thread-CPU seconds and counts per phase; leaf queries are charged to the innermost
    phase that is open when they run."""

    def __init__(self) -> None:
        self.stack: list[str] = ["other"]
        self.stats: dict[str, float] = defaultdict(float)

    def reset(self) -> None:
        self.stack = ["other"]
        self.stats = defaultdict(float)

    def phase(self, owner: type, name: str, label: str) -> None:
        original = getattr(owner, name)
        profile = self

        def wrapped(*args, **kwargs):
            profile.stack.append(label)
            t0 = time.thread_time()
            try:
                return original(*args, **kwargs)
            finally:
                profile.stats[f"{label}_s"] += time.thread_time() - t0
                profile.stats[f"{label}_calls"] += 1
                profile.stack.pop()

        setattr(owner, name, wrapped)

    def leaf(self, owner: type, name: str, label: str, count: Callable | None = None) -> None:
        original = getattr(owner, name)
        profile = self

        def wrapped(*args, **kwargs):
            where = profile.stack[-1]
            t0 = time.thread_time()
            out = original(*args, **kwargs)
            profile.stats[f"{where}.{label}_s"] += time.thread_time() - t0
            profile.stats[f"{where}.{label}_calls"] += 1
            if count is not None:
                for key, value in count(*args, **kwargs).items():
                    profile.stats[f"{where}.{label}_{key}"] += value
            return out

        setattr(owner, name, wrapped)


def _segment_counts(self, q_from, q_to, resolution=0.02, *args, **kwargs) -> dict:
    steps = ((q_to - q_from).abs().amax(-1) / resolution).ceil().clamp(min=1)
    coarse = resolution >= 0.1 - 1e-9
    return {
        "segments": q_from.shape[0],
        "samples": float(steps.sum()),
        "coarse_calls": float(coarse),
    }


def _rows(self, q, *args, **kwargs) -> dict:
    return {"rows": q.shape[0]}


def instrument(profile: Profile) -> None:
    planner = roadmap_module.RoadmapPlanner
    profile.phase(MotionGenClass, "_ik", "ik")
    profile.phase(RoadmapStage, "_mesh_clear_goals", "goal_screen")
    profile.phase(RoadmapStage, "_from_path", "from_path")
    profile.phase(RoadmapStage, "_mesh_segments", "segment_mesh")
    profile.phase(planner, "approach_chains", "chains")
    profile.phase(planner, "escape_chains", "escapes")
    profile.phase(planner, "_sample", "sample")
    profile.phase(planner, "_lazy_search", "search")
    profile.phase(planner, "_shortcut_checked", "shortcut")
    profile.phase(roadmap_module._Graph, "connect_neighbors", "neighbors")
    profile.phase(roadmap_module._Graph, "shortest_path", "dijkstra")
    profile.phase(RoadmapStage, "_roadmap_path", "roadmap")
    profile.phase(RoadmapStage, "_roadmap_retry", "goal_retry")
    profile.leaf(RobotWorld, "validate_segments", "segcheck", _segment_counts)
    profile.leaf(RobotWorld, "validate", "validate", _rows)
    profile.leaf(MeshCheck, "distance", "mesh", _rows)


def parse_variants(items: list[str]) -> tuple[dict[str, dict], dict[str, dict]]:
    """Per variant: MotionGen roadmap options, and module constants to set while it plans
    (``@module.NAME=value``, a module of ``curobo_lite.wrap.motion`` or ``.base``)."""
    variants, constants = {}, {}
    for item in items:
        name, _, rest = item.partition(":")
        options, patch = {}, {}
        for pair in filter(None, rest.split(",")):
            key, _, value = pair.partition("=")
            (patch if key.startswith("@") else options)[key.lstrip("@")] = yaml.safe_load(value)
        variants[name], constants[name] = options, patch
    return variants, constants


def _module(path: str):
    import importlib

    for package in ("curobo_lite.wrap.motion", "curobo_lite.wrap.base"):
        try:
            return importlib.import_module(f"{package}.{path}")
        except ModuleNotFoundError:
            continue
    raise SystemExit(f"no module {path!r} in curobo_lite.wrap.motion or .base")


class patched:
    """Set module constants ``{"module.NAME": value}`` for a ``with`` block."""

    def __init__(self, patch: dict) -> None:
        self.items = [
            (_module(k.rpartition(".")[0]), k.rpartition(".")[2], v) for k, v in patch.items()
        ]
        self.saved: list = []

    def __enter__(self) -> None:
        for module, name, value in self.items:
            self.saved.append((module, name, getattr(module, name)))
            setattr(module, name, value)

    def __exit__(self, *exc) -> None:
        for module, name, value in reversed(self.saved):
            setattr(module, name, value)
        self.saved = []


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--families", nargs="+", default=["cage", "table_under_pick"])
    parser.add_argument("--problems", type=int, default=30)
    parser.add_argument("--skip", type=int, default=0, help="skip the first N problems")
    parser.add_argument("--variants", nargs="+", default=["base"])
    parser.add_argument("--json", default=str(REPO / "out" / "mbm_roadmap.json"))
    parser.add_argument("--detail", action="store_true", help="print every counter's median")
    args = parser.parse_args()
    torch.set_num_threads(1)
    tensor_args = TensorDeviceType(device=torch.device("cpu"))
    variants, constants = parse_variants(args.variants)
    problems = {f: load_problems(f, args.skip + args.problems)[args.skip :] for f in args.families}
    first = next(p for ps in problems.values() for p in ps)
    profile = Profile()
    instrument(profile)
    planners = {
        name: MotionGen.from_config("franka", first.world, tensor_args=tensor_args, roadmap=opts)
        for name, opts in variants.items()
    }
    checker = RobotWorld.from_config("franka", first.world, tensor_args)
    for name, motion_gen in planners.items():  # warm-up
        start0 = JointState.from_position(tensor_args.to_device(first.start)[None])
        with patched(constants[name]):
            motion_gen.plan_single(start0, Pose.from_list(first.goal_pose, tensor_args))
    rows = []
    for family, family_problems in problems.items():
        for problem in family_problems:
            checker.update_world(problem.world)
            start = JointState.from_position(tensor_args.to_device(problem.start)[None])
            goal = Pose.from_list(problem.goal_pose, tensor_args)
            for name, motion_gen in planners.items():
                motion_gen.update_world(problem.world)
                profile.reset()
                with patched(constants[name]):
                    t0, w0 = time.thread_time(), time.perf_counter()
                    result = motion_gen.plan_single(start, goal)
                    cpu, wall = time.thread_time() - t0, time.perf_counter() - w0
                stats = dict(profile.stats)
                ok = False
                if result.success and result.interpolated_plan is not None:
                    verdict = judge(checker, result.interpolated_plan.position, problem.goal_pose)
                    ok = verdict["success"]
                row = {
                    "name": problem.name,
                    "family": family,
                    "variant": name,
                    "cpu_s": cpu,
                    "wall_s": wall,
                    "success": ok,
                    "by_roadmap": result.waypoints is not None,
                    # the same path in two variants: same waypoints and checksum
                    "path_waypoints": 0 if result.waypoints is None else len(result.waypoints),
                    "path_checksum": (
                        0.0 if result.waypoints is None else float(result.waypoints.sum())
                    ),
                    **stats,
                }
                rows.append(row)
                print(
                    f"{problem.name:>26} {name:>10} {str(ok):>5} cpu {cpu:.3f} wall {wall:.3f} "
                    f"roadmap {row.get('roadmap_s', 0):.3f} search {row.get('search_s', 0):.3f} "
                    f"shortcut {row.get('shortcut_s', 0):.3f} "
                    f"segmesh {row.get('segment_mesh_s', 0):.3f}",
                    flush=True,
                )
    print(f"\nload average {os.getloadavg()}")
    keys = sorted(
        {
            k
            for r in rows
            for k in r
            if k.endswith(("_s", "_calls", "_segments", "_samples", "_rows"))
        }
    )
    for family in problems:
        for name in planners:
            sel = [r for r in rows if r["family"] == family and r["variant"] == name]
            n_ok = sum(r["success"] for r in sel)
            print(
                f"\n{family} {name}: success {n_ok}/{len(sel)}, median cpu "
                f"{statistics.median(r['cpu_s'] for r in sel):.3f} s, wall "
                f"{statistics.median(r['wall_s'] for r in sel):.3f} s, mean cpu "
                f"{statistics.mean(r['cpu_s'] for r in sel):.3f} s"
            )
            if args.detail:
                for key in keys:
                    values = [r.get(key, 0.0) for r in sel]
                    if any(values):
                        print(
                            f"   {key:>40} median {statistics.median(values):9.4f} "
                            f"mean {statistics.mean(values):9.4f}"
                        )
    meta = {"variants": variants, "constants": constants, "load": os.getloadavg()}
    write_json(args.json, meta, rows)


if __name__ == "__main__":
    main()
