"""Sphere-vs-world signed distances: curobo_lite's Warp kernels vs coal on the same queries.

The spheres are the Franka's collision spheres at random configurations (``batch``
configurations x ``N`` spheres each); the worlds are 10 or 500 random cuboids, optionally plus
one mesh obstacle. For each case:

- ``fwd``: ``WorldCollision.sphere_distance`` (distance and activation cost, all obstacles in
  range found through the BVH broad phase), spheres per second;
- ``fwd+bwd``: the same plus the backward pass to the sphere centres;
- ``coal``: coal (the maintained successor of FCL) on a subset of the same spheres: one
  ``DynamicAABBTreeCollisionManager`` over the obstacles, ``manager.distance`` per sphere with
  coal's own C++ callback (its broad phase plus exact narrow phase), spheres per second. Its
  distances are compared with ours on that subset (largest difference printed).

Usage::

    python benchmarks/collision.py [--threads 2] [--batches 1000 10000 100000] [--device cpu]

Results go to ``benchmarks/results/collision.json``.
"""

from __future__ import annotations

import argparse
import platform
import time
from pathlib import Path

import numpy as np
import torch
from timing import timeit, write_json

from curobo_lite.geom import Cuboid, Mesh, WorldCollision, WorldConfig
from curobo_lite.robot import Kinematics, RobotConfig
from curobo_lite.types import TensorDeviceType

REPO = Path(__file__).resolve().parents[1]


def random_world(n_cuboids: int, with_mesh: bool, seed: int = 0) -> WorldConfig:
    """``n_cuboids`` boxes (5-30 cm sides) scattered in the Franka's workspace, plus a mesh."""
    rng = np.random.default_rng(seed)
    cuboids = []
    for i in range(n_cuboids):
        position = rng.uniform([-0.9, -0.9, 0.0], [0.9, 0.9, 1.2])
        quat = rng.normal(size=4)
        quat /= np.linalg.norm(quat)
        cuboids.append(
            Cuboid(
                name=f"box{i}",
                pose=[*position.tolist(), *quat.tolist()],
                dims=rng.uniform(0.05, 0.3, size=3).tolist(),
            )
        )
    meshes = []
    if with_mesh:
        import trimesh

        torus = trimesh.creation.torus(major_radius=0.2, minor_radius=0.05)
        meshes.append(
            Mesh(
                name="torus",
                pose=[0.5, 0.0, 0.4, 1.0, 0.0, 0.0, 0.0],
                vertices=torus.vertices.tolist(),
                faces=torus.faces.tolist(),
            )
        )
    return WorldConfig(cuboid=cuboids, mesh=meshes)


def coal_distances(world: WorldConfig, spheres: np.ndarray) -> tuple[np.ndarray, float]:
    """Signed distances of ``spheres [M, 4]`` to ``world`` with coal; ``(distance, seconds)``."""
    import coal

    objects = []
    for cuboid in world.cuboid:
        objects.append(coal.CollisionObject(coal.Box(*cuboid.dims), _transform(cuboid.pose)))
    for mesh in world.mesh:
        model = coal.BVHModel()
        vertices, faces = mesh.load()
        model.beginModel(len(faces), len(vertices))
        model.addSubModel(np.asarray(vertices, dtype=np.float64), np.asarray(faces, dtype=np.int64))
        model.endModel()
        objects.append(coal.CollisionObject(model, _transform(mesh.pose)))
    manager = coal.DynamicAABBTreeCollisionManager()
    for obj in objects:
        manager.registerObject(obj)
    manager.setup()
    out = np.empty(len(spheres))
    start = time.perf_counter()
    for i, (x, y, z, r) in enumerate(spheres):
        query = coal.CollisionObject(coal.Sphere(float(r)), _transform([x, y, z, 1.0, 0, 0, 0]))
        callback = coal.DistanceCallBackDefault()
        callback.data.request.enable_signed_distance = True
        manager.distance(query, callback)
        out[i] = callback.data.result.min_distance
    return out, time.perf_counter() - start


def _transform(pose) -> object:
    import coal

    x, y, z, qw, qx, qy, qz = (float(v) for v in pose)
    rotation = coal.Quaternion(qw, qx, qy, qz).toRotationMatrix()
    return coal.Transform3s(rotation, np.array([x, y, z]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batches", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--coal-spheres", type=int, default=2000, help="spheres timed with coal")
    parser.add_argument("--activation-distance", type=float, default=0.025)
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "collision.json"))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    tensor_args = TensorDeviceType(device=device)
    kinematics = Kinematics(RobotConfig.load("franka"), tensor_args)
    low, high = kinematics.robot_config.joint_limits.position.to(device)
    gen = torch.Generator(device="cpu").manual_seed(0)

    rows = []
    print(
        f"{'world':>18} {'configs':>8} {'spheres':>9} {'fwd ms':>9} {'fwd+bwd ms':>11} "
        f"{'Msph/s':>8} {'coal sph/s':>11} {'speed-up':>9} {'max |diff| m':>13}"
    )
    for n_cuboids, with_mesh in ((10, False), (500, False), (500, True)):
        world = random_world(n_cuboids, with_mesh)
        collision = WorldCollision(world, tensor_args)
        label = f"{n_cuboids} cuboids" + (" + mesh" if with_mesh else "")
        for batch in args.batches:
            q = low + (high - low) * torch.rand(batch, kinematics.dof, generator=gen).to(device)
            with torch.no_grad():
                spheres = kinematics.forward(q).link_spheres.contiguous()
            eta = args.activation_distance

            def forward(spheres=spheres, collision=collision, eta=eta):
                return collision.sphere_distance(spheres, activation_distance=eta)

            grad_input = spheres.clone().requires_grad_(True)

            def forward_backward(grad_input=grad_input, collision=collision, eta=eta):
                result = collision.sphere_distance(grad_input, activation_distance=eta)
                result.cost.sum().backward()
                grad_input.grad = None

            t_fwd = timeit(forward, device)
            t_bwd = timeit(forward_backward, device)
            n_spheres = spheres.shape[0] * spheres.shape[1]
            row = {
                "world": label,
                "configs": batch,
                "spheres": n_spheres,
                "fwd_s": t_fwd,
                "fwd_bwd_s": t_bwd,
                "spheres_per_s": n_spheres / t_fwd,
            }
            coal_rate = speedup = max_diff = float("nan")
            if batch == args.batches[0]:
                subset = spheres.reshape(-1, 4)[: args.coal_spheres]
                try:
                    reference, seconds = coal_distances(world, subset.double().cpu().numpy())
                except ImportError:
                    reference = None
                if reference is not None:
                    ours = collision.sphere_distance(subset).distance.double().cpu().numpy()
                    coal_rate = len(subset) / seconds
                    speedup = row["spheres_per_s"] / coal_rate
                    max_diff = float(np.abs(ours - reference).max())
                    row.update(coal_spheres_per_s=coal_rate, max_abs_diff_m=max_diff)
            rows.append(row)
            print(
                f"{label:>18} {batch:>8} {n_spheres:>9} {t_fwd * 1e3:>9.2f} {t_bwd * 1e3:>11.2f} "
                f"{row['spheres_per_s'] / 1e6:>8.2f} {coal_rate:>11.0f} {speedup:>9.1f} "
                f"{max_diff:>13.2e}"
            )
    meta = {
        "device": str(device),
        "machine": platform.machine(),
        "threads": args.threads,
        "activation_distance": args.activation_distance,
        "spheres_per_config": kinematics.num_spheres,
    }
    write_json(args.out, meta, rows)


if __name__ == "__main__":
    main()
