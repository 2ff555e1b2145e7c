"""Validity verdicts in MotionBenchMaker scenes: the pass/fail kernel vs the distance kernel.

For the Franka at random configurations in one scene per family (``tools``' MBM generator,
seed 0, problem 0), per configuration:

- ``distance``: ``WorldCollision.sphere_distance`` of every world sphere at ``max_distance``
  (what ``RobotWorld.validate`` ran before), minimum over the spheres;
- ``verdict``: ``kernels.collision_verdict_kernels.link_world_distance`` (one thread per
  configuration and link, broad phase per link, early exit), minimum over the links;
- ``validate``: the whole ``RobotWorld.validate`` (forward kinematics, self-collision, limits,
  the world verdict; ``exact_band`` 0.015, the meshes judging the unsure ones).

Both world queries at ``max_distance`` 1e-4 (spheres only) and 0.015 (MotionGen's exact band:
exact down to -0.015). The verdicts are compared (they must agree on every configuration).
Time: median wall time per call (``timing.timeit``), as microseconds per configuration; on a
CPU also the process CPU time of the same calls (one torch thread).

Usage::

    python benchmarks/collision_verdict.py [--batch 1024] [--device cpu] [--families cage box]
        [--json out/collision_verdict.json]
"""

from __future__ import annotations

import argparse
import functools
import platform
import time
from pathlib import Path

import torch
from timing import timeit, write_json

from curobo_lite.kernels.collision_verdict_kernels import link_world_distance
from curobo_lite.scenes import FAMILIES, family_rng, sample_scene
from curobo_lite.types import TensorDeviceType
from curobo_lite.wrap import RobotWorld

REPO = Path(__file__).resolve().parents[1]
BAND = 0.015


def _cpu_us(fn, batch: int, reps: int = 7) -> float:
    """Smallest process CPU time of ``fn`` over ``reps`` calls, microseconds per configuration."""
    best = float("inf")
    for _ in range(reps):
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return best * 1e6 / batch


def _family_rows(family: str, batch: int, tensor_args: TensorDeviceType) -> list[dict]:
    """The two rows (ranges) of one family's scene; prints them."""
    device = tensor_args.device
    world = sample_scene(family, family_rng(family, 0, 0)).world
    checker = RobotWorld.from_config("franka", world, tensor_args)
    low, high = checker.robot_config.joint_limits.position
    generator = torch.Generator().manual_seed(0)
    unit = torch.rand(batch, low.shape[0], generator=generator, dtype=low.dtype)
    q = (low.cpu() + (high - low).cpu() * unit).to(device)
    spheres = checker.kinematics.world_spheres(checker.get_link_spheres(q)).contiguous()
    groups = checker.kinematics.sphere_groups.to(torch.int32).contiguous()
    collision = checker.world_collision

    def distance(reach: float) -> torch.Tensor:
        return collision.sphere_distance(spheres, max_distance=reach).distance.amin(-1)

    def verdict(reach: float, deep: float) -> torch.Tensor:
        tables = collision.world_tables
        return link_world_distance(spheres, groups, tables, tables.num_active, reach, deep).amin(-1)

    rows = []
    for reach, deep in [(1e-4, 0.0), (BAND, -BAND)]:
        old, new = distance(reach), verdict(reach, deep)
        agree = bool(torch.equal(old >= 0.0, new >= 0.0) and torch.equal(old >= deep, new >= deep))
        t_distance = timeit(functools.partial(distance, reach), device) * 1e6 / batch
        t_verdict = timeit(functools.partial(verdict, reach, deep), device) * 1e6 / batch
        band = BAND if reach == BAND else 0.0
        t_validate = timeit(functools.partial(checker.validate, q, band), device)
        row = {
            "family": family,
            "range": reach,
            "distance_us": t_distance,
            "verdict_us": t_verdict,
            "validate_us": t_validate * 1e6 / batch,
            "agree": agree,
        }
        line = (
            f"{family:>18} {reach:>8.4f} {t_distance:>11.2f} {t_verdict:>10.2f} "
            f"{t_distance / t_verdict:>5.1f} {str(agree):>6} {row['validate_us']:>11.2f}"
        )
        if device.type == "cpu":
            row["distance_cpu_us"] = _cpu_us(functools.partial(distance, reach), batch)
            row["verdict_cpu_us"] = _cpu_us(functools.partial(verdict, reach, deep), batch)
            line += f"  {row['distance_cpu_us']:>8.2f} {row['verdict_cpu_us']:>7.2f}"
        print(line)
        rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=1024)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--families", nargs="+", default=list(FAMILIES), choices=list(FAMILIES))
    parser.add_argument("--json", default=str(REPO / "out" / "collision_verdict.json"))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    tensor_args = TensorDeviceType(device=device)
    print(
        f"{'family':>18} {'range m':>8} {'distance us':>11} {'verdict us':>10} {'x':>5} "
        f"{'agree':>6} {'validate us':>11}"
        + ("  cpu us: distance verdict" if device.type == "cpu" else "")
    )
    rows = []
    for family in args.families:
        rows += _family_rows(family, args.batch, tensor_args)
    meta = {
        "device": str(device),
        "batch": args.batch,
        "platform": platform.platform(),
        "gpu": torch.cuda.get_device_name(device) if device.type == "cuda" else None,
    }
    write_json(args.json, meta, rows)


if __name__ == "__main__":
    main()
