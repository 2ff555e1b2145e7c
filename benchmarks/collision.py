"""Sphere-vs-world signed distances: curobo_lite's Warp kernels vs coal on the same queries.

The spheres are the Franka's collision spheres at random configurations (``batch``
configurations x ``N`` spheres each); the worlds are 10 or 500 random cuboids, optionally plus
one mesh obstacle. For each case:

- ``fwd``: ``WorldCollision.sphere_distance`` with the exact distance to the nearest obstacle
  however far (``max_distance=inf``) and the activation cost, spheres per second;
- ``cost fwd+bwd``: what the collision cost runs in an optimizer: only obstacles within the
  activation distance are looked up (``max_distance = activation_distance``, BVH broad
  phase), plus the backward pass to the spheres;
- ``coal``: coal (the maintained successor of FCL) on a subset of the same spheres: its exact
  sphere-vs-shape distance behind a numpy branch-and-bound broad phase (see
  :func:`coal_distances`), spheres per second. Its distances are compared with ours on that
  subset (largest difference printed).

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
    """Signed distances of ``spheres [M, 4]`` to ``world`` with coal; ``(distance, seconds)``.

    coal's exact pairwise sphere-vs-shape distance (GJK/EPA) behind a branch-and-bound broad
    phase: per sphere, obstacles in order of their world-AABB distance (numpy), stopping once
    that lower bound exceeds the best distance found. (coal's own broad-phase manager with its
    default distance callback returned distances off by up to 0.5 m on these scenes, so it is
    not used.)
    """
    import coal

    request = coal.DistanceRequest()
    request.enable_signed_distance = True
    shapes, lows, highs = [], [], []
    for cuboid in world.cuboid:
        transform = _transform(cuboid.pose)
        shapes.append((coal.Box(*map(float, cuboid.dims)), transform))
        rotation = np.abs(_rotation(cuboid.pose))
        half = rotation @ (np.asarray(cuboid.dims, dtype=np.float64) / 2)
        lows.append(np.asarray(cuboid.pose[:3]) - half)
        highs.append(np.asarray(cuboid.pose[:3]) + half)
    for mesh in world.mesh:
        vertices, faces = mesh.mesh_data()
        model = coal.BVHModelOBBRSS()
        model.beginModel(len(faces), len(vertices))
        points = np.asarray(vertices, dtype=np.float64)
        for face in np.asarray(faces, dtype=np.int64):
            model.addTriangle(*(points[v] for v in face))
        model.endModel()
        transform = _transform(mesh.pose)
        shapes.append((model, transform))
        corners = np.asarray(vertices, dtype=np.float64) @ _rotation(mesh.pose).T
        corners += np.asarray(mesh.pose[:3])
        lows.append(corners.min(0))
        highs.append(corners.max(0))
    lows, highs = np.stack(lows), np.stack(highs)
    out = np.empty(len(spheres))
    start = time.perf_counter()
    for i, (x, y, z, r) in enumerate(spheres):
        centre = np.array([x, y, z])
        gap = np.linalg.norm(np.maximum(0.0, np.maximum(lows - centre, centre - highs)), axis=1)
        # a lower bound of the signed distance; none (-inf) when the centre is inside the box
        bound = np.where(gap > 0.0, gap - r, -np.inf)
        sphere = coal.Sphere(float(r))
        where = _transform([x, y, z, 1.0, 0.0, 0.0, 0.0])
        best = np.inf
        for k in np.argsort(bound):
            if bound[k] > best:
                break
            result = coal.DistanceResult()
            coal.distance(sphere, where, shapes[k][0], shapes[k][1], request, result)
            best = min(best, result.min_distance)
        out[i] = best
    return out, time.perf_counter() - start


def _rotation(pose) -> np.ndarray:
    """Rotation matrix of a pose's unit ``wxyz`` quaternion."""
    w, x, y, z = np.asarray(pose[3:], dtype=np.float64) / np.linalg.norm(pose[3:])
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


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
        f"{'world':>18} {'configs':>8} {'spheres':>9} {'fwd ms':>9} {'cost f+b ms':>11} "
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
                result = collision.sphere_distance(
                    grad_input, activation_distance=eta, max_distance=eta
                )
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
                    # coal has no signed distance inside a triangle mesh: compare outside only;
                    # disabled spheres (radius < 0) read as max_distance (inf) here, not in coal
                    compared = reference > 0.0 if with_mesh else np.ones_like(reference, bool)
                    compared &= subset[:, 3].cpu().numpy() >= 0.0
                    max_diff = float(np.abs(ours - reference)[compared].max())
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
