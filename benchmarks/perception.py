"""Perception worlds: integrating a depth frame into a VoxelWorld, refreshing its ESDF, and
querying spheres against it, side by side with the primitive world of the same scene.

The scene is the bundled ``table`` world plus a few boxes and a ball on the table; a synthetic
640 x 480 depth camera (60 degrees vertical field of view) looks at it from 1.6 m. The grid
covers 1.5 x 1.5 x 1.0 m at 1 cm (2.25 M voxels). Rows:

- ``render``: the synthetic camera's ray casts (not part of the target; for scale);
- ``integrate``: one frame into the grid (image check, decay with projective carving, marking);
- ``esdf refresh``: the exact distance transform of the whole grid (Felzenszwalb, x/y/z);
- ``integrate + refresh``: both, what a new frame costs (target <= 50 ms on the 2-core CPU);
- the same two with ``max_esdf_distance`` (default 0.2 m: distances exact up to it, what the
  collision costs reach), which skips the space farther than that from every surface;
- ``query voxel`` / ``query primitive``: ``sphere_distance`` of 636,000 spheres (Franka spheres
  of 4,000 configurations along perturbed trajectories: one MPC step of 400 particles x 30
  steps x 53 spheres) with the collision cost's settings (activation and max distance
  2.5 cm; target <= 10 ms), and with ``max_distance = inf`` (exact distance however far);
- ``query static ESDF``: the same against ``VoxelWorld.from_world`` of the primitive scene.

``ms`` is the median wall time, ``min ms`` the smallest; ``cpu ms`` the smallest CPU time of
the process over five calls (all threads: on a host other work shares, the cost of the call
without the waits for a core). On a CPU the two ``integrate + refresh`` rows and the cost query
are then broken down by Warp kernel (the CPU time of each kernel's launches, all row
pieces). Every frame refreshes the whole grid's ESDF (a real camera's noise changes voxels all
over its surfaces, so a refresh of only the changed region would not be representative).

Usage::

    python benchmarks/perception.py [--threads 2] [--device cpu|cuda] [--max-esdf-distance 0.2]

Results go to ``benchmarks/results/perception_<device>.json``.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import statistics
import threading
import time
from pathlib import Path

import torch
import warp as wp
from timing import timeit, write_json

from curobo_lite.geom import Cuboid, Sphere, VoxelWorld, WorldCollision, WorldConfig
from curobo_lite.geom.depth_camera import DepthCamera
from curobo_lite.robot import Kinematics, RobotConfig
from curobo_lite.types import TensorDeviceType

REPO = Path(__file__).resolve().parents[1]
SPHERES = 636_000


def scene() -> WorldConfig:
    world = WorldConfig.load("table")
    for i, (x, y) in enumerate(((0.45, -0.3), (0.7, 0.05), (0.35, 0.35))):
        world.add(Cuboid(f"box{i}", pose=[x, y, 0.08, 1, 0, 0, 0], dims=[0.1, 0.12, 0.16]))
    world.add(Sphere("ball", pose=[0.6, -0.1, 0.3, 1, 0, 0, 0], radius=0.08))
    return world


def mpc_spheres(tensor_args: TensorDeviceType) -> torch.Tensor:
    """``[4000, 159, 4]`` Franka spheres along 400 trajectories x 10 samples of a reach, each
    perturbed (what MPPI's particles look like)."""
    kinematics = Kinematics(RobotConfig.load("franka"), tensor_args)
    gen = torch.Generator().manual_seed(0)
    start = kinematics.robot_config.retract_config.cpu()
    goal = start + torch.tensor([0.8, 0.5, 0.0, -0.5, 0.0, 0.6, 0.0])
    configs = SPHERES // kinematics.num_spheres
    steps = 10
    mean = start + (goal - start) * torch.linspace(0, 1, steps)[:, None]
    q = mean[None] + 0.05 * torch.randn(configs // steps, steps, 7, generator=gen)
    with torch.no_grad():
        spheres = kinematics.forward(q.reshape(-1, 7).to(tensor_args.device)).link_spheres
    return kinematics.world_spheres(spheres).contiguous()


def wall_times(fn, device: torch.device) -> list:
    """Wall seconds of each timed call of ``fn`` (``timing.timeit``'s calls after its warm-up:
    at least one second and ten calls)."""
    samples: list[float] = []

    def timed() -> None:
        start = time.perf_counter()
        fn()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        samples.append(time.perf_counter() - start)

    timeit(timed, device, min_time=1.0, min_reps=10)
    return samples[3:]


def cpu_time(fn, device: torch.device, reps: int = 5) -> float:
    """Smallest CPU time (all of this process's threads) of one call: on a host shared with
    other work, what the call itself costs, whatever the waiting for a core (``ms`` counts
    that too)."""
    best = math.inf
    for _ in range(reps):
        start = time.process_time()
        fn()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        best = min(best, time.process_time() - start)
    return best


def stage_cpu_times(fn, reps: int = 5) -> dict[str, float]:
    """Per Warp kernel, the smallest over ``reps`` calls of ``fn`` of the CPU time its
    launches took in one call (ms; all row pieces, whichever thread ran them): where a
    CPU call's time goes. ``warp.launch`` is wrapped while this runs."""
    lock = threading.Lock()
    calls: list[dict[str, float]] = []
    original = wp.launch

    def timed(kernel, *args, **kwargs):
        start = time.thread_time()
        try:
            return original(kernel, *args, **kwargs)
        finally:
            spent = time.thread_time() - start
            with lock:
                calls[-1][kernel.key] = calls[-1].get(kernel.key, 0.0) + spent

    wp.launch = timed
    try:
        for _ in range(reps):
            calls.append({})
            fn()
    finally:
        wp.launch = original
    return {key: min(call.get(key, 0.0) for call in calls) * 1e3 for key in calls[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--voxel-size", type=float, default=0.01)
    parser.add_argument("--activation-distance", type=float, default=0.025)
    parser.add_argument("--max-esdf-distance", type=float, default=0.2)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    load_start = os.getloadavg()[0]
    device = torch.device(args.device)
    tensor_args = TensorDeviceType(device=device)
    world = scene()
    camera = DepthCamera(world, 640, 480, fov_y_degrees=60.0, tensor_args=tensor_args)
    pose = DepthCamera.look_at([1.45, 0.75, 0.85], [0.45, 0.0, 0.1])
    depth = camera.render(pose)
    grid = VoxelWorld(
        [-0.3, -0.75, -0.1], [1.2, 0.75, 0.9], args.voxel_size, tensor_args, decay=0.9
    )
    # as the solvers build them (no NaN check of the spheres: a host read per query)
    primitive = WorldCollision(world, tensor_args, check_finite=False)
    spheres = mpc_spheres(tensor_args)
    voxel_world = WorldCollision(WorldConfig(voxel=[grid]), tensor_args, check_finite=False)
    bounded = VoxelWorld(
        grid.bounds_min, grid.bounds_max, args.voxel_size, tensor_args, decay=0.9,
        max_esdf_distance=args.max_esdf_distance,
    )  # fmt: skip
    static = VoxelWorld.from_world(primitive, grid.bounds_min, grid.bounds_max, args.voxel_size)
    static_world = WorldCollision(WorldConfig(voxel=[static]), tensor_args, check_finite=False)
    eta = args.activation_distance
    grid.integrate_depth(depth, camera.intrinsics, pose)
    bounded.integrate_depth(depth, camera.intrinsics, pose)

    def query(collision: WorldCollision, max_distance: float):
        return lambda: collision.sphere_distance(spheres, eta, max_distance)

    def integrate(update_esdf: bool, into: VoxelWorld = grid):
        return lambda: into.integrate_depth(depth, camera.intrinsics, pose, update_esdf=update_esdf)

    capped = f"{args.max_esdf_distance:g} m"

    cases = [
        ("render (synthetic camera)", "-", lambda: camera.render(pose)),
        ("integrate", "-", integrate(False)),
        ("esdf refresh", "-", grid.update_esdf),
        ("integrate + refresh", "<= 50 ms", integrate(True)),
        (f"esdf refresh (max {capped})", "-", bounded.update_esdf),
        (f"integrate + refresh ({capped})", "<= 50 ms", integrate(True, bounded)),
        ("query voxel (cost)", "<= 10 ms", query(voxel_world, eta)),
        ("query primitive (cost)", "-", query(primitive, eta)),
        ("query static ESDF (cost)", "-", query(static_world, eta)),
        ("query voxel (exact, inf)", "-", query(voxel_world, math.inf)),
        ("query primitive (exact, inf)", "-", query(primitive, math.inf)),
    ]  # fmt: skip
    rows = []
    print(f"{'case':>34} {'ms':>9} {'min ms':>9} {'cpu ms':>9} {'target':>9}")
    for name, target, fn in cases:
        samples = wall_times(fn, device)
        seconds, fastest = statistics.median(samples), min(samples)
        cpu = cpu_time(fn, device)
        rows.append(
            {
                "case": name, "ms": seconds * 1e3, "min_ms": fastest * 1e3, "cpu_ms": cpu * 1e3,
                "target": target,
            }
        )  # fmt: skip
        print(
            f"{name:>34} {seconds * 1e3:>9.2f} {fastest * 1e3:>9.2f} {cpu * 1e3:>9.2f} {target:>9}"
        )
    stages = {}
    if device.type == "cpu":
        for name, fn in (
            ("integrate + refresh", integrate(True)),
            (f"integrate + refresh ({capped})", integrate(True, bounded)),
            ("query voxel (cost)", query(voxel_world, eta)),
        ):
            stages[name] = stage_cpu_times(fn)
            kernels = ", ".join(f"{k} {v:.2f}" for k, v in stages[name].items())
            print(f"{name} per kernel, CPU ms: {kernels}")
    # how close the two worlds agree on these spheres (enabled ones, clamped at 0.5 m)
    enabled = spheres[..., 3] >= 0
    d_voxel = voxel_world.sphere_distance(spheres, 0.0, 0.5).distance[enabled]
    d_prim = primitive.sphere_distance(spheres, 0.0, 0.5).distance[enabled]
    near = d_prim < 0.1
    diff = (d_voxel - d_prim)[near].abs()
    print(
        f"voxel vs primitive distance on spheres within 10 cm of the scene: median "
        f"{float(diff.median()) * 1e3:.1f} mm (one camera: unseen faces are missing)"
    )
    meta = {
        "device": str(device),
        "machine": platform.machine(),
        "threads": args.threads,
        "voxel_size": args.voxel_size,
        "max_esdf_distance": args.max_esdf_distance,
        "grid_shape": list(grid.shape),
        "image": [camera.width, camera.height],
        "spheres": int(spheres.shape[0] * spheres.shape[1]),
        "activation_distance": eta,
        "occupied_voxels": int((grid.occupancy >= 0.5).sum()),
        "median_abs_diff_near_m": float(diff.median()),
        "kernel_cpu_ms": stages,
        # other work on the host while this ran (1-minute load averages at start and end)
        "load_average": [load_start, os.getloadavg()[0]],
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    out = args.out or str(REPO / "benchmarks" / "results" / f"perception_{device.type}.json")
    write_json(out, meta, rows)


if __name__ == "__main__":
    main()
