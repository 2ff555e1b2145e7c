"""Sphere-vs-world signed distance, cost and gradients against independent references.

References: coal (signed sphere-vs-primitive and sphere-vs-mesh distances), trimesh (signed
distance inside meshes), analytic SDF formulas, finite differences and torch.autograd.gradcheck.
"""

from __future__ import annotations

import math

import coal
import numpy as np
import pytest
import torch
import trimesh
import warp as wp

from curobo_lite.geom import (
    Capsule,
    Cuboid,
    Cylinder,
    Mesh,
    Sphere,
    WorldCollision,
    WorldConfig,
)
from curobo_lite.kernels import primitive_sdf
from curobo_lite.kernels.collision_common import smooth_hinge_torch
from curobo_lite.kernels.launch import as_warp
from curobo_lite.types import Pose, TensorDeviceType

F64 = torch.float64


def _args(device, dtype=F64) -> TensorDeviceType:
    return TensorDeviceType(device=device, dtype=dtype)


# ------------------------------------------------------------------------------------------
# references
# ------------------------------------------------------------------------------------------
def _matrix(pose) -> np.ndarray:
    """4x4 homogeneous matrix of ``[x, y, z, qw, qx, qy, qz]`` (trimesh's wxyz convention)."""
    m = trimesh.transformations.quaternion_matrix(pose[3:])
    m[:3, 3] = pose[:3]
    return m


def _coal_object(obstacle) -> tuple:
    """``(coal geometry, coal.Transform3s)`` of an obstacle in the world frame."""
    m = _matrix(obstacle.pose)
    if isinstance(obstacle, Cuboid):
        geometry = coal.Box(*obstacle.dims)
    elif isinstance(obstacle, Sphere):
        geometry = coal.Sphere(obstacle.radius)
    elif isinstance(obstacle, Cylinder):
        geometry = coal.Cylinder(obstacle.radius, obstacle.height)
    elif isinstance(obstacle, Capsule):
        # coal's capsule is centred on z: move it onto the base-tip segment
        base, tip = np.asarray(obstacle.base), np.asarray(obstacle.tip)
        axis = tip - base
        length = np.linalg.norm(axis)
        align = trimesh.geometry.align_vectors([0.0, 0.0, 1.0], axis / length)
        align[:3, 3] = 0.5 * (base + tip)
        m = m @ align
        geometry = coal.Capsule(obstacle.radius, length)
    else:
        vertices, faces = obstacle.mesh_data()
        geometry = coal.BVHModelOBBRSS()
        geometry.beginModel(len(faces), len(vertices))
        geometry.addVertices(vertices)
        geometry.addTriangles(faces.astype(np.int64))
        geometry.endModel()
    return geometry, coal.Transform3s(m[:3, :3], m[:3, 3])


def cylinder_penetration(cylinder: Cylinder, spheres: np.ndarray) -> np.ndarray:
    """``[S]`` analytic signed distance of spheres to a cylinder (used where they overlap)."""
    m = np.linalg.inv(_matrix(cylinder.pose))
    p = spheres[:, :3] @ m[:3, :3].T + m[:3, 3]
    w = np.stack(
        [np.hypot(p[:, 0], p[:, 1]) - cylinder.radius, np.abs(p[:, 2]) - 0.5 * cylinder.height], 1
    )
    return np.linalg.norm(np.maximum(w, 0.0), axis=1) + np.minimum(w.max(1), 0.0) - spheres[:, 3]


def coal_distances(world: WorldConfig, spheres: np.ndarray) -> np.ndarray:
    """``[S, O]`` signed distance between each sphere and each obstacle (coal).

    coal's sphere-vs-cylinder penetration is not the minimum translation (it reports the side
    when a cap is nearer), so overlapping sphere-cylinder pairs use the analytic formula.
    """
    objects = [_coal_object(o) for o in world.objects]
    out = np.zeros((len(spheres), len(objects)))
    for i, (x, y, z, r) in enumerate(spheres):
        ball = coal.Sphere(r)
        pose = coal.Transform3s(np.eye(3), np.array([x, y, z]))
        for j, (geometry, transform) in enumerate(objects):
            request, result = coal.DistanceRequest(), coal.DistanceResult()
            request.enable_signed_distance = True
            out[i, j] = coal.distance(ball, pose, geometry, transform, request, result)
    for j, obstacle in enumerate(world.objects):
        if isinstance(obstacle, Cylinder):
            overlap = out[:, j] < 0
            out[overlap, j] = cylinder_penetration(obstacle, spheres[overlap])
    return out


def _random_quaternion(rng) -> list[float]:
    q = rng.normal(size=4)
    return (q / np.linalg.norm(q)).tolist()


def random_obstacle(kind: str, name: str, rng, spread: float = 0.5):
    pose = [*rng.uniform(-spread, spread, 3).tolist(), *_random_quaternion(rng)]
    if kind == "cuboid":
        return Cuboid(name, rng.uniform(0.02, 0.4, 3).tolist(), pose=pose)
    if kind == "sphere":
        return Sphere(name, float(rng.uniform(0.02, 0.2)), pose=pose)
    if kind == "capsule":
        base = rng.uniform(-0.15, 0.15, 3)
        tip = base + rng.uniform(-0.3, 0.3, 3)
        return Capsule(name, float(rng.uniform(0.02, 0.1)), base.tolist(), tip.tolist(), pose=pose)
    return Cylinder(name, float(rng.uniform(0.02, 0.2)), float(rng.uniform(0.02, 0.4)), pose=pose)


def random_spheres(world: WorldConfig, count: int, rng, r_max: float = 0.08) -> np.ndarray:
    """Spheres around (and inside) the obstacles: centres near random obstacle centres."""
    centres = np.asarray([o.pose[:3] for o in world.objects])
    pick = centres[rng.integers(0, len(centres), count)]
    xyz = pick + rng.normal(scale=0.15, size=(count, 3))
    return np.concatenate([xyz, rng.uniform(0.005, r_max, (count, 1))], 1)


def icosphere_mesh(name: str, pose, scale=(1.0, 1.0, 1.0)) -> Mesh:
    m = trimesh.creation.icosphere(subdivisions=2, radius=0.12)
    return Mesh(name, vertices=m.vertices, faces=m.faces, scale=list(scale), pose=pose)


def _trimesh_world(mesh: Mesh) -> trimesh.Trimesh:
    vertices, faces = mesh.mesh_data()
    return trimesh.Trimesh(vertices, faces, process=False).apply_transform(_matrix(mesh.pose))


# ------------------------------------------------------------------------------------------
# per-primitive SDF functions
# ------------------------------------------------------------------------------------------
def _sdf_reference(kind: int, params: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Analytic SDFs written independently of the kernels (vectorised numpy)."""
    if kind == primitive_sdf.CUBOID:
        q = np.abs(p) - params[:3]
        outside = np.linalg.norm(np.maximum(q, 0.0), axis=1)
        return outside + np.minimum(q.max(1), 0.0)
    if kind == primitive_sdf.SPHERE:
        return np.linalg.norm(p, axis=1) - params[0]
    if kind == primitive_sdf.CAPSULE:
        a, b = params[1:4], params[4:7]
        t = np.clip((p - a) @ (b - a) / np.dot(b - a, b - a), 0.0, 1.0)
        return np.linalg.norm(p - (a + t[:, None] * (b - a)), axis=1) - params[0]
    rho = np.linalg.norm(p[:, :2], axis=1)
    w = np.stack([rho - params[0], np.abs(p[:, 2]) - params[1]], 1)
    return np.linalg.norm(np.maximum(w, 0.0), axis=1) + np.minimum(w.max(1), 0.0)


PRIMITIVE_PARAMS = {
    primitive_sdf.CUBOID: [0.1, 0.2, 0.15],
    primitive_sdf.SPHERE: [0.12],
    primitive_sdf.CAPSULE: [0.05, -0.1, 0.05, 0.0, 0.15, -0.05, 0.1],
    primitive_sdf.CYLINDER: [0.1, 0.15],
}


@pytest.mark.parametrize("kind", sorted(PRIMITIVE_PARAMS), ids=["box", "sphere", "capsule", "cyl"])
def test_primitive_sdf_functions_match_analytic_formulas(device, kind):
    rng = np.random.default_rng(kind)
    params = np.zeros(8)
    params[: len(PRIMITIVE_PARAMS[kind])] = PRIMITIVE_PARAMS[kind]
    points = rng.uniform(-0.35, 0.35, (400, 3))
    pts = torch.tensor(points, dtype=F64, device=device)
    out = torch.zeros(len(points), 4, dtype=F64, device=device)
    prm = torch.tensor(params[None], dtype=F64, device=device)
    wp.init()
    wp.launch(
        primitive_sdf.sdf_kernel(F64),
        dim=len(points),
        inputs=[as_warp(pts), kind, as_warp(prm), as_warp(out)],
        device=str(device),
    )
    out = out.cpu().numpy()
    np.testing.assert_allclose(out[:, 0], _sdf_reference(kind, params, points), atol=1e-12)
    # gradient: unit length, and equal to central differences of the reference off the kinks
    np.testing.assert_allclose(np.linalg.norm(out[:, 1:], axis=1), 1.0, atol=1e-12)
    h = 1e-6
    fd = np.stack(
        [
            (
                _sdf_reference(kind, params, points + h * e)
                - _sdf_reference(kind, params, points - h * e)
            )
            / (2 * h)
            for e in np.eye(3)
        ],
        1,
    )
    smooth = np.abs(np.linalg.norm(fd, axis=1) - 1.0) < 1e-6  # drop points on a kink
    assert smooth.sum() > 300
    np.testing.assert_allclose(out[smooth, 1:], fd[smooth], atol=1e-6)


def test_box_inside_gradient_is_nearest_face_normal():
    world = WorldConfig(cuboid=[Cuboid("b", [0.4, 0.2, 1.0])])
    collision = WorldCollision(world, _args("cpu"))
    spheres = torch.tensor([[0.15, 0.0, 0.1, 0.01], [0.0, -0.05, 0.0, 0.01]], dtype=F64)
    spheres.requires_grad_(True)
    out = collision.sphere_distance(spheres)
    torch.testing.assert_close(out.distance.detach(), torch.tensor([-0.06, -0.06], dtype=F64))
    out.distance.sum().backward()
    expected = torch.tensor([[1.0, 0, 0, -1], [0, -1.0, 0, -1]], dtype=F64)
    torch.testing.assert_close(spheres.grad, expected)


# ------------------------------------------------------------------------------------------
# distances and costs against coal / trimesh
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["cuboid", "sphere", "capsule", "cylinder"])
@pytest.mark.parametrize("broad_phase", ["loop", "bvh"])
def test_primitive_distance_and_cost_match_coal(device, kind, broad_phase):
    rng = np.random.default_rng(["cuboid", "sphere", "capsule", "cylinder"].index(kind))
    world = WorldConfig(**{kind: [random_obstacle(kind, f"o{i}", rng) for i in range(4)]})
    spheres = random_spheres(world, 150, rng)
    reference = coal_distances(world, spheres)
    inside = (reference < 0).any(1)
    assert inside.sum() > 10 and (~inside).sum() > 10  # both regimes are exercised
    collision = WorldCollision(world, _args(device), broad_phase=broad_phase)
    eta = 0.05
    out = collision.sphere_distance(torch.tensor(spheres, device=device), eta)
    np.testing.assert_allclose(out.distance.cpu().numpy(), reference.min(1), atol=1e-5)
    cost = smooth_hinge_torch(eta - torch.tensor(reference), eta).sum(1)
    np.testing.assert_allclose(out.cost.cpu().numpy(), cost.numpy(), atol=1e-5)


def test_mixed_world_with_max_distance_matches_coal(device):
    rng = np.random.default_rng(7)
    kinds = ["cuboid", "sphere", "capsule", "cylinder"] * 3
    world = WorldConfig()
    for i, kind in enumerate(kinds):
        world.add(random_obstacle(kind, f"o{i}", rng, spread=1.0))
    spheres = random_spheres(world, 200, rng)
    reference = coal_distances(world, spheres).min(1)
    for broad_phase in ("loop", "bvh"):
        collision = WorldCollision(world, _args(device), broad_phase=broad_phase)
        out = collision.sphere_distance(torch.tensor(spheres, device=device), 0.02, 0.1)
        expected = np.minimum(reference, 0.1)
        np.testing.assert_allclose(out.distance.cpu().numpy(), expected, atol=1e-5)


def test_mesh_distance_matches_coal_outside_and_trimesh_inside(device):
    rng = np.random.default_rng(3)
    ball = icosphere_mesh("ball", [0.3, -0.2, 0.4, *_random_quaternion(rng)], (1.0, 1.5, 0.7))
    wedge = WorldConfig.load("mixed").get("wedge")
    world = WorldConfig(mesh=[ball, wedge])
    collision = WorldCollision(world, _args(device))
    # outside: sphere-vs-triangle-set distance from coal
    spheres = random_spheres(world, 200, rng, r_max=0.03)
    spheres[:, :3] += rng.normal(scale=0.1, size=(200, 3))
    reference = coal_distances(world, spheres).min(1)
    out = collision.sphere_distance(torch.tensor(spheres, device=device)).distance.cpu().numpy()
    # coal measures to the triangle set: a sphere inside a closed mesh gets a positive distance
    contained = np.zeros(len(spheres), bool)
    for mesh in world.mesh:
        contained |= _trimesh_world(mesh).contains(spheres[:, :3])
    outside = (reference > 1e-3) & ~contained
    assert outside.sum() > 100
    np.testing.assert_allclose(out[outside], reference[outside], atol=2e-5)
    # inside: trimesh's signed distance (positive inside) of the centre, minus the radius
    for mesh in world.mesh:
        shape = _trimesh_world(mesh)
        lo, hi = shape.bounds
        points = rng.uniform(lo, hi, (400, 3))
        points = points[shape.contains(points)][:60]
        assert len(points) > 20
        radius = np.full((len(points), 1), 0.01)
        query = torch.tensor(np.concatenate([points, radius], 1), device=device)
        out = collision.sphere_distance(query).distance.cpu().numpy()
        expected = -trimesh.proximity.signed_distance(shape, points) - 0.01
        assert (out < 0).all()
        np.testing.assert_allclose(out, expected, atol=2e-5)


def test_mesh_gradient_matches_finite_differences():
    rng = np.random.default_rng(4)
    world = WorldConfig(mesh=[icosphere_mesh("m", [0.1, 0.0, 0.2, *_random_quaternion(rng)])])
    collision = WorldCollision(world, _args("cpu"))
    spheres = random_spheres(world, 40, rng, r_max=0.05)
    x = torch.tensor(spheres, requires_grad=True)
    out = collision.sphere_distance(x, 0.05)
    (out.distance.sum() + out.cost.sum()).backward()
    h = 1e-4
    fd = torch.zeros_like(x)
    for k in range(4):
        e = torch.zeros_like(x)
        e[:, k] = h
        plus, minus = collision.sphere_distance(x.detach() + e, 0.05), None
        minus = collision.sphere_distance(x.detach() - e, 0.05)
        fd[:, k] = (plus.distance + plus.cost - minus.distance - minus.cost) / (2 * h)
    torch.testing.assert_close(x.grad, fd, atol=2e-3, rtol=0)


# ------------------------------------------------------------------------------------------
# gradients
# ------------------------------------------------------------------------------------------
def _primitive_world(seed: int = 11) -> WorldConfig:
    rng = np.random.default_rng(seed)
    world = WorldConfig()
    for i, kind in enumerate(["cuboid", "sphere", "capsule", "cylinder"] * 2):
        world.add(random_obstacle(kind, f"o{i}", rng, spread=0.4))
    return world


@pytest.mark.parametrize("output", ["distance", "cost"])
@pytest.mark.parametrize("broad_phase", ["loop", "bvh"])
def test_gradcheck_float64(device, output, broad_phase):
    world = _primitive_world()
    collision = WorldCollision(world, _args(device), broad_phase=broad_phase)
    rng = np.random.default_rng(1)
    spheres = torch.tensor(random_spheres(world, 24, rng), device=device, requires_grad=True)

    def f(s):
        return getattr(collision.sphere_distance(s, 0.05, 0.3), output)

    assert torch.autograd.gradcheck(f, (spheres,), eps=1e-6, atol=1e-6)


def test_float32_gradient_matches_finite_differences(device):
    world = _primitive_world()
    c32 = WorldCollision(world, _args(device, torch.float32))
    c64 = WorldCollision(world, _args(device))
    rng = np.random.default_rng(2)
    spheres = random_spheres(world, 64, rng)
    x = torch.tensor(spheres, dtype=torch.float32, device=device, requires_grad=True)
    out = c32.sphere_distance(x, 0.05)
    (out.distance.sum() + 0.5 * out.cost.sum()).backward()
    x64 = torch.tensor(spheres, device=device)
    h = 1e-5
    fd = torch.zeros_like(x64)
    for k in range(4):
        e = torch.zeros_like(x64)
        e[:, k] = h
        plus, minus = c64.sphere_distance(x64 + e, 0.05), c64.sphere_distance(x64 - e, 0.05)
        fd[:, k] = (plus.distance - minus.distance + 0.5 * (plus.cost - minus.cost)) / (2 * h)
    torch.testing.assert_close(x.grad.double(), fd, atol=1e-4, rtol=0)


def test_radius_gradient_and_partial_outputs():
    world = WorldConfig(sphere=[Sphere("s", 0.2)])
    collision = WorldCollision(world, _args("cpu"))
    x = torch.tensor([[0.5, 0.0, 0.0, 0.1]], dtype=F64, requires_grad=True)
    out = collision.sphere_distance(x)
    assert out.distance.item() == pytest.approx(0.2)
    out.distance.sum().backward()  # cost unused: its grad is None in backward
    torch.testing.assert_close(x.grad, torch.tensor([[1.0, 0.0, 0.0, -1.0]], dtype=F64))
    x.grad = None
    collision.sphere_distance(x, 0.3).cost.sum().backward()
    # cost = (0.3 - 0.2)^2 / 0.6: d cost/d d = -(0.1 / 0.3)
    torch.testing.assert_close(x.grad, torch.tensor([[-1 / 3, 0.0, 0.0, 1 / 3]], dtype=F64))


def test_disabled_spheres_far_spheres_and_shapes(device):
    world = _primitive_world()
    collision = WorldCollision(world, _args(device))
    rng = np.random.default_rng(5)
    spheres = torch.tensor(random_spheres(world, 2 * 3 * 5, rng), device=device).reshape(2, 3, 5, 4)
    spheres[0, 1, 2, 3] = -1.0
    spheres[1, 2, 4, :3] = 50.0  # far beyond max_distance
    spheres.requires_grad_(True)
    out = collision.sphere_distance(spheres, 0.05, 0.5)
    assert out.distance.shape == (2, 3, 5) and out.cost.shape == (2, 3, 5)
    assert out.distance[0, 1, 2] == 0.5 and out.cost[0, 1, 2] == 0.0
    assert out.distance[1, 2, 4] == 0.5 and out.cost[1, 2, 4] == 0.0
    (out.distance.sum() + out.cost.sum()).backward()
    assert (spheres.grad[0, 1, 2] == 0).all() and (spheres.grad[1, 2, 4] == 0).all()
    flat = collision.sphere_distance(spheres.detach().reshape(-1, 4), 0.05, 0.5)
    torch.testing.assert_close(flat.distance, out.distance.detach().reshape(-1))
    assert math.isinf(collision.sphere_distance(spheres.detach()[0, 1, 2:3]).distance.item())
    for shape in ((0, 4), (3, 0, 4)):
        empty = torch.zeros(shape, dtype=F64, device=device, requires_grad=True)
        out = collision.sphere_distance(empty)
        assert out.distance.shape == shape[:-1]
        out.distance.sum().backward()
    # an empty world: nothing near
    empty_world = WorldCollision(None, _args(device))
    out = empty_world.sphere_distance(spheres.detach(), 0.1, 2.0)
    assert (out.distance == 2.0).all() and (out.cost == 0).all()


# ------------------------------------------------------------------------------------------
# broad phase and runtime edits
# ------------------------------------------------------------------------------------------
def _cuboid_world(count: int, seed: int) -> WorldConfig:
    rng = np.random.default_rng(seed)
    cuboids = [
        Cuboid(
            f"c{i}",
            rng.uniform(0.02, 0.15, 3).tolist(),
            pose=[*rng.uniform(-1.5, 1.5, 3).tolist(), *_random_quaternion(rng)],
        )
        for i in range(count)
    ]
    return WorldConfig(cuboid=cuboids)


@pytest.mark.parametrize("ranges", [(0.0, math.inf), (0.05, math.inf), (0.05, 0.2)])
def test_bvh_matches_brute_force_on_500_cuboids(device, ranges):
    world = _cuboid_world(500, 0)
    rng = np.random.default_rng(1)
    spheres = torch.tensor(
        np.concatenate([rng.uniform(-2.0, 2.0, (3000, 3)), rng.uniform(0.01, 0.1, (3000, 1))], 1),
        device=device,
    )
    bvh = WorldCollision(world, _args(device), broad_phase="bvh")
    loop = WorldCollision(world, _args(device), broad_phase="loop")
    a, b = bvh.sphere_distance(spheres, *ranges), loop.sphere_distance(spheres, *ranges)
    assert torch.equal(a.distance, b.distance)
    torch.testing.assert_close(a.cost, b.cost, atol=1e-12, rtol=1e-12)
    assert (a.cost > 0).sum() > 50  # collisions are exercised


def _edited(collision: WorldCollision, world: WorldConfig) -> None:
    """The same edits on a WorldCollision and on a WorldConfig."""
    moved = [0.2, 0.1, 0.3, math.cos(0.3), 0.0, math.sin(0.3), 0.0]
    new = [
        Sphere("new_ball", 0.1, pose=[0.3, 0.3, 0.3, 1, 0, 0, 0]),
        Cylinder("new_can", 0.05, 0.3, pose=[-0.2, 0.1, 0.0, 1, 0, 0, 0]),
        icosphere_mesh("new_mesh", [0.0, -0.3, 0.2, 1, 0, 0, 0]),
    ]
    collision.remove_obstacle("c3")
    world.remove("c3")
    for obstacle in new:
        collision.add_obstacle(obstacle)
        world.add(obstacle)
    collision.update_obstacle_pose("c5", moved)
    world.get("c5").pose = moved
    collision.update_obstacle_pose(
        "new_mesh", torch.tensor([0.1, -0.3, 0.25, 0, 1, 0, 0], dtype=F64)
    )
    world.get("new_mesh").pose = [0.1, -0.3, 0.25, 0, 1, 0, 0]
    pose = Pose(
        torch.tensor([[0.0, 0.0, 0.1]], dtype=F64), torch.tensor([[0.0, 0.0, 0.0, 1.0]], dtype=F64)
    )
    collision.update_obstacle_pose("c7", pose)
    world.get("c7").pose = [0.0, 0.0, 0.1, 0.0, 0.0, 0.0, 1.0]
    collision.enable_obstacle("c8", False)
    world.get("c8").enabled = False
    collision.enable_obstacle("new_ball", False)
    collision.enable_obstacle("new_ball")
    collision.enable_obstacle("new_can", False)
    world.get("new_can").enabled = False


@pytest.mark.parametrize("broad_phase", ["loop", "bvh"])
def test_runtime_edits_match_fresh_build(device, broad_phase):
    world = _cuboid_world(12, 2)
    for o in world.cuboid:  # pack them near the query region
        o.pose[:3] = (0.3 * np.asarray(o.pose[:3])).tolist()
    collision = WorldCollision(world, _args(device), broad_phase=broad_phase)
    tables = [collision._prim_frame.data_ptr(), collision._mesh_frame.data_ptr()]
    _edited(collision, world)
    assert collision.world.to_dict() == world.to_dict()
    assert collision.obstacle_names == world.names
    assert [collision._prim_frame.data_ptr(), collision._mesh_frame.data_ptr()] == tables
    fresh = WorldCollision(world, _args(device), broad_phase=broad_phase)
    rng = np.random.default_rng(0)
    spheres = torch.tensor(
        np.concatenate([rng.uniform(-0.6, 0.6, (500, 3)), rng.uniform(0.01, 0.1, (500, 1))], 1),
        device=device,
    )
    a, b = collision.sphere_distance(spheres, 0.05), fresh.sphere_distance(spheres, 0.05)
    torch.testing.assert_close(a.distance, b.distance, atol=1e-12, rtol=0)
    torch.testing.assert_close(a.cost, b.cost, atol=1e-12, rtol=0)
    # replacing the world in place gives the fresh result too, and growing capacity works
    collision.update_world(world)
    torch.testing.assert_close(collision.sphere_distance(spheres, 0.05).cost, b.cost)
    big = _cuboid_world(40, 3)
    collision.update_world(big)
    assert collision.capacity["primitive"] >= 40
    for i in range(3):
        collision.add_obstacle(icosphere_mesh(f"m{i}", [0.1 * i, 0, 0, 1, 0, 0, 0]))
        big.add(icosphere_mesh(f"m{i}", [0.1 * i, 0, 0, 1, 0, 0, 0]))
    for i in range(40, 60):  # past the 16-slot default? no: past the 40 just allocated
        c = Cuboid(f"c{i}", [0.1, 0.1, 0.1], pose=[0.01 * i, 0, 0, 1, 0, 0, 0])
        collision.add_obstacle(c)
        big.add(c)
    fresh = WorldCollision(big, _args(device), broad_phase=broad_phase)
    a, b = collision.sphere_distance(spheres, 0.05), fresh.sphere_distance(spheres, 0.05)
    torch.testing.assert_close(a.distance, b.distance, atol=1e-12, rtol=0)
    torch.testing.assert_close(a.cost, b.cost, atol=1e-12, rtol=0)
    # back to a smaller world: the emptied slots count as nothing (enabled count, distances)
    small = _cuboid_world(3, 4)
    collision.update_world(small)
    assert collision.num_enabled == 3
    fresh = WorldCollision(small, _args(device), broad_phase=broad_phase)
    for max_distance in (math.inf, 0.05):
        a = collision.sphere_distance(spheres, 0.05, max_distance)
        b = fresh.sphere_distance(spheres, 0.05, max_distance)
        torch.testing.assert_close(a.distance, b.distance, atol=1e-12, rtol=0)
        torch.testing.assert_close(a.cost, b.cost, atol=1e-12, rtol=0)


def test_rejected_updates_leave_state_unchanged(tmp_path):
    world = WorldConfig.load("mixed")
    collision = WorldCollision(world, _args("cpu"), cache={"primitive": 8, "mesh": 4})
    rng = np.random.default_rng(0)
    spheres = torch.tensor(random_spheres(world, 100, rng))
    before = collision.sphere_distance(spheres, 0.05)
    snapshot = collision.world.to_dict()
    bad_calls = [
        (lambda: collision.update_obstacle_pose("table", [0, 0, 0, 2, 0, 0, 0]), ValueError),
        (lambda: collision.update_obstacle_pose("table", [0, 0, 0, 1, 0, 0]), ValueError),
        (lambda: collision.update_obstacle_pose("table", torch.zeros(2, 7)), ValueError),
        (lambda: collision.update_obstacle_pose("nope", [0, 0, 0, 1, 0, 0, 0]), ValueError),
        (lambda: collision.update_obstacle_pose("ball", [0, 0, math.nan, 1, 0, 0, 0]), ValueError),
        (lambda: collision.add_obstacle(Sphere("table", 0.1)), ValueError),
        (lambda: collision.add_obstacle("table"), TypeError),
        (lambda: collision.remove_obstacle("nope"), ValueError),
        (lambda: collision.enable_obstacle("table", 1), TypeError),
        (lambda: collision.update_world({"cuboid": {}}), TypeError),
    ]
    broken = tmp_path / "broken.obj"
    broken.write_text("this is not a mesh\n")
    bad_mesh = Mesh("bad", file_path=str(broken))
    bad_calls.append((lambda: collision.add_obstacle(bad_mesh), ValueError))
    bad_calls.append((lambda: collision.update_world(WorldConfig(mesh=[bad_mesh])), ValueError))
    for call, error in bad_calls:
        with pytest.raises(error):
            call()
        assert collision.world.to_dict() == snapshot
        after = collision.sphere_distance(spheres, 0.05)
        assert torch.equal(after.distance, before.distance) and torch.equal(after.cost, before.cost)


def test_query_validation():
    collision = WorldCollision(_primitive_world(), _args("cpu"))
    good = torch.zeros(3, 4, dtype=F64)
    cases = [
        (lambda: collision.sphere_distance(good.float()), TypeError, "dtype"),
        (lambda: collision.sphere_distance(good.numpy()), TypeError, "torch.Tensor"),
        (lambda: collision.sphere_distance(torch.zeros(3, 3, dtype=F64)), ValueError, "shape"),
        (lambda: collision.sphere_distance(torch.zeros(4, dtype=F64)), ValueError, "shape"),
        (lambda: collision.sphere_distance(good.to("meta")), ValueError, "device"),
        (lambda: collision.sphere_distance(good * math.nan), ValueError, "NaN"),
        (lambda: collision.sphere_distance(good, -0.1), ValueError, "activation_distance"),
        (lambda: collision.sphere_distance(good, 0.1, 0.0), ValueError, "max_distance"),
        (lambda: collision.sphere_distance(good, 0.1, math.nan), ValueError, "max_distance"),
        (lambda: collision.swept_sphere_distance(good[None]), ValueError, r"\[B, H, N, 4\]"),
        (
            lambda: collision.swept_sphere_distance(good[None, None], sweep_spacing=0.0),
            ValueError,
            "sweep_spacing",
        ),
        (
            lambda: collision.swept_sphere_distance(good[None, None], max_sweep_samples=0),
            ValueError,
            "max_sweep_samples",
        ),
        (lambda: WorldCollision(cache={"prim": 3}), ValueError, "cache"),
        (lambda: WorldCollision(cache={"mesh": -1}), ValueError, "cache.mesh"),
        (lambda: WorldCollision(broad_phase="octree"), ValueError, "broad_phase"),
        (lambda: WorldCollision([Sphere("s", 0.1)]), TypeError, "world"),
    ]
    for call, error, match in cases:
        with pytest.raises(error, match=match):
            call()


# ------------------------------------------------------------------------------------------
# swept queries
# ------------------------------------------------------------------------------------------
def test_swept_query_catches_thin_wall(device):
    world = WorldConfig(cuboid=[Cuboid("wall", [0.005, 1.0, 1.0], pose=[0.5, 0, 0, 1, 0, 0, 0])])
    collision = WorldCollision(world, _args(device))
    spheres = torch.tensor(
        [[[[0.25, 0.0, 0.0, 0.05]], [[0.75, 0.0, 0.0, 0.05]]]], dtype=F64, device=device
    )
    plain = collision.sphere_distance(spheres, 0.01)
    assert (plain.distance > 0.1).all() and (plain.cost == 0).all()
    swept = collision.swept_sphere_distance(spheres, 0.01)
    assert swept.distance[0, 0, 0] == plain.distance[0, 0, 0]
    # 0.5 m in steps <= 0.025 m: some sample is within 0.0125 of the wall's mid-plane
    assert swept.distance[0, 1, 0] < -0.05 + 0.0025 + 0.0125 + 1e-9
    assert swept.cost[0, 1, 0] > 0.03
    # fewer samples than the spacing asks for: the guarantee degrades to L / (2 K)
    coarse = collision.swept_sphere_distance(spheres, 0.01, max_sweep_samples=4)
    assert coarse.distance[0, 1, 0] >= swept.distance[0, 1, 0]


def test_swept_distance_is_within_its_guarantee_of_dense_sampling(device):
    world = _primitive_world()
    collision = WorldCollision(world, _args(device))
    rng = np.random.default_rng(8)
    start = random_spheres(world, 30, rng, r_max=0.05)
    end = start.copy()
    end[:, :3] += rng.normal(scale=0.2, size=(30, 3))
    spheres = torch.tensor(np.stack([start, end])[None], device=device)  # [1, 2, 30, 4]
    swept = collision.swept_sphere_distance(spheres, 0.0, sweep_spacing=0.5)
    t = torch.linspace(0.0, 1.0, 2001, dtype=F64, device=device)[:, None, None]
    dense = spheres[0, 0] * (1 - t) + spheres[0, 1] * t
    exact = collision.sphere_distance(dense).distance.min(0).values
    length = (spheres[0, 1, :, :3] - spheres[0, 0, :, :3]).norm(dim=-1)
    samples = torch.clamp(torch.ceil(length / (0.5 * spheres[0, 0, :, 3])), max=32)
    bound = length / (2 * samples)
    assert (swept.distance[0, 1] >= exact - 1e-9).all()
    assert (swept.distance[0, 1] <= exact + bound + 1e-4).all()


@pytest.mark.parametrize("output", ["distance", "cost"])
def test_swept_gradcheck(device, output):
    world = _primitive_world()
    collision = WorldCollision(world, _args(device))
    rng = np.random.default_rng(9)
    start = random_spheres(world, 4, rng, r_max=0.06)
    path = [start]
    for _ in range(3):
        step = path[-1].copy()
        step[:, :3] += rng.normal(scale=0.08, size=(4, 3))
        path.append(step)
    spheres = torch.tensor(np.stack(path)[None], device=device).repeat(2, 1, 1, 1)
    spheres[1, :, :, :3] += 0.05
    spheres.requires_grad_(True)

    def f(s):
        return getattr(collision.swept_sphere_distance(s, 0.05, 0.4, 0.5, 8), output)

    assert torch.autograd.gradcheck(f, (spheres,), eps=1e-6, atol=1e-6)


def test_far_spheres_and_tiny_initial_range_stay_exact(device):
    """The growing broad-phase search ends exact however far the nearest obstacle is."""
    world = _cuboid_world(60, 4)
    rng = np.random.default_rng(6)
    direction = rng.normal(size=(200, 3))
    direction /= np.linalg.norm(direction, axis=1, keepdims=True)
    centres = direction * rng.uniform(0.0, 12.0, (200, 1))
    spheres = torch.tensor(np.concatenate([centres, np.full((200, 1), 0.05)], 1), device=device)
    loop = WorldCollision(world, _args(device), broad_phase="loop")
    bvh = WorldCollision(world, _args(device), broad_phase="bvh", initial_range=1e-3)
    auto = WorldCollision(world, _args(device))
    expected = loop.sphere_distance(spheres, 0.1)
    for collision in (bvh, auto):
        out = collision.sphere_distance(spheres, 0.1)
        assert torch.equal(out.distance, expected.distance)
        torch.testing.assert_close(out.cost, expected.cost, atol=1e-12, rtol=0)
    reference = coal_distances(world, spheres.cpu().numpy()).min(1)
    np.testing.assert_allclose(expected.distance.cpu().numpy(), reference, atol=1e-5)


def test_wedged_sphere_feels_both_obstacles():
    world = WorldConfig(
        cuboid=[
            Cuboid("left", [0.2, 0.2, 0.2], pose=[-0.14, 0, 0, 1, 0, 0, 0]),
            Cuboid("right", [0.2, 0.2, 0.2], pose=[0.15, 0, 0, 1, 0, 0, 0]),
        ]
    )
    collision = WorldCollision(world, _args("cpu"))
    x = torch.tensor([[0.0, 0.0, 0.0, 0.05]], dtype=F64, requires_grad=True)
    out = collision.sphere_distance(x, 0.02)
    # surface distances: left -0.01, right 0.0; penalties (eta - d) - eta / 2 each
    assert out.distance.item() == pytest.approx(-0.01)
    assert out.cost.item() == pytest.approx((0.03 - 0.01) + (0.02 - 0.01))
    out.cost.sum().backward()
    # pushed right by the left box and left by the right box: they cancel in x
    torch.testing.assert_close(x.grad, torch.tensor([[0.0, 0.0, 0.0, 2.0]], dtype=F64))
