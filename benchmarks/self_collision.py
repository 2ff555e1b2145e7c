"""Robot self-collision: curobo_lite's Warp pair kernel vs a dense torch reference.

The spheres are the Franka's collision spheres at random configurations within its joint
limits (``batch`` configurations x ``N`` spheres, the pairs its robot file leaves checked). For
each batch:

- ``distance fwd``: :meth:`SelfCollisionModel.distance` with exact distances however far
  (``max_distance=inf``): what a validity check runs;
- ``cost fwd+bwd``: what the self-collision cost runs in an optimizer: ``max_distance`` equal
  to the activation distance (link pairs farther apart are skipped whole), plus the backward
  pass to the spheres;
- ``dense torch``: every checked pair gathered and measured with torch ops (the minimum and the
  summed smooth hinge, the same formulas), forward, and forward plus autograd's backward.

The dense distances and costs are compared with ours (largest differences printed).

Usage::

    python benchmarks/self_collision.py [--threads 2] [--batches 1000 12000] [--device cpu]

Results go to ``benchmarks/results/self_collision.json``.
"""

from __future__ import annotations

import argparse
import platform
from collections.abc import Callable
from pathlib import Path

import torch
from timing import timeit, write_json

from curobo_lite.geom import SelfCollisionModel
from curobo_lite.kernels.collision_common import smooth_hinge_torch
from curobo_lite.robot import Kinematics, RobotConfig
from curobo_lite.types import TensorDeviceType

REPO = Path(__file__).resolve().parents[1]


def dense_self_collision(
    spheres: torch.Tensor, pairs: torch.Tensor, pair_buffer: torch.Tensor, eta: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(distance [B], cost [B])`` of ``spheres [B, N, 4]`` over ``pairs [P, 2]``, every pair
    measured: ``d = |c_i - c_j| - r_i - r_j - buffer``, the minimum and the summed
    ``smooth_hinge(eta - d, eta)``; pairs with a disabled sphere (radius < 0) count as apart."""
    a = spheres[:, pairs[:, 0]]
    b = spheres[:, pairs[:, 1]]
    d = (a[..., :3] - b[..., :3]).norm(dim=-1) - a[..., 3] - b[..., 3] - pair_buffer
    enabled = (a[..., 3] >= 0) & (b[..., 3] >= 0)
    d = torch.where(enabled, d, torch.full_like(d, torch.inf))
    cost = torch.where(enabled, smooth_hinge_torch(eta - d, eta), torch.zeros_like(d))
    return d.min(dim=-1).values, cost.sum(dim=-1)


def timed_calls(
    model: SelfCollisionModel,
    pairs: torch.Tensor,
    pair_buffer: torch.Tensor,
    eta: float,
    spheres: torch.Tensor,
) -> dict[str, Callable[[], object]]:
    """The four timed calls on ``spheres [B, N, 4]``, by the name printed."""
    leaf = spheres.clone().requires_grad_(True)

    def ours_cost_backward():
        leaf.grad = None
        model.distance(leaf, eta, max_distance=eta).cost.sum().backward()

    def dense_backward():
        leaf.grad = None
        dense_self_collision(leaf, pairs, pair_buffer, eta)[1].sum().backward()

    return {
        "curobo_lite distance fwd": lambda: model.distance(spheres, eta),
        "dense torch fwd": lambda: dense_self_collision(spheres, pairs, pair_buffer, eta),
        "curobo_lite cost fwd+bwd": ours_cost_backward,
        "dense torch fwd+bwd": dense_backward,
    }


def run(args: argparse.Namespace) -> dict:
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    tensor_args = TensorDeviceType(device=device, dtype=torch.float32)
    config = RobotConfig.load("franka", tensor_args)
    kinematics = Kinematics(config)
    model = SelfCollisionModel.from_kinematics(kinematics)
    pairs = kinematics.self_collision_pairs.long()
    pair_buffer = kinematics.self_collision_pair_buffer
    eta = args.activation_distance
    low, high = config.joint_limits.position
    gen = torch.Generator().manual_seed(0)
    rows = []
    print(
        f"self-collision on {device}: Franka, {kinematics.num_spheres} spheres, "
        f"{model.num_pairs} checked pairs, activation distance {eta} m, float32, "
        f"{args.threads} torch threads"
    )
    print(f"{'batch':>7} {'what':<28} {'median ms':>10} {'pairs/us':>9}")
    for batch in args.batches:
        q = (low.cpu() + torch.rand(batch, config.dof, generator=gen) * (high - low).cpu()).to(
            device
        )
        spheres = kinematics.forward(q).link_spheres.detach().contiguous()
        ours = model.distance(spheres, eta)
        reference = dense_self_collision(spheres, pairs, pair_buffer, eta)
        distance_diff = float((ours.distance - reference[0]).abs().max())
        cost_diff = float(((ours.cost - reference[1]).abs() / reference[1].clamp_min(1.0)).max())
        colliding = float(ours.in_collision.float().mean())
        for name, fn in timed_calls(model, pairs, pair_buffer, eta, spheres).items():
            seconds = timeit(fn, device, min_time=args.min_time)
            pair_rate = batch * model.num_pairs / (seconds * 1e6)
            print(f"{batch:>7} {name:<28} {seconds * 1e3:>10.3f} {pair_rate:>9.1f}")
            rows.append(
                {
                    "batch": batch,
                    "what": name,
                    "median_ms": seconds * 1e3,
                    "pairs_per_us": pair_rate,
                    "max_abs_distance_diff_vs_dense": distance_diff,
                    "max_rel_cost_diff_vs_dense": cost_diff,
                    "fraction_in_self_collision": colliding,
                }
            )
        print(
            f"{batch:>7} agreement with dense: distance {distance_diff:.2e} m, cost "
            f"{cost_diff:.2e} (relative); {colliding:.1%} of the configurations self-collide"
        )
    return {
        "meta": {
            "benchmark": "Franka self-collision",
            "device": str(device),
            "dtype": "float32",
            "num_spheres": kinematics.num_spheres,
            "num_pairs": model.num_pairs,
            "activation_distance": eta,
            "platform": platform.platform(),
        },
        "rows": rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batches", type=int, nargs="+", default=[1000, 12000])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--activation-distance", type=float, default=0.01)
    parser.add_argument("--min-time", type=float, default=0.5, help="seconds per timing")
    parser.add_argument(
        "--out", default=str(REPO / "benchmarks" / "results" / "self_collision.json")
    )
    args = parser.parse_args()
    result = run(args)
    write_json(args.out, result["meta"], result["rows"])


if __name__ == "__main__":
    main()
