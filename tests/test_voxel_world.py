"""VoxelWorld: the Warp ESDF against scipy's exact transform, distances from point clouds
against the analytic distances of the shapes that produced them, gradients against finite
differences, carving, decay, self-filtering, bad inputs, and the world plumbing (WorldConfig,
WorldCollision mixed with primitives, live updates)."""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
import torch
from scipy.ndimage import distance_transform_edt

from curobo_lite.geom import Cuboid, VoxelWorld, WorldCollision, WorldConfig
from curobo_lite.kernels import voxel_kernels as vk
from curobo_lite.types import Pose, TensorDeviceType
from curobo_lite.types.errors import InputTypeError, InputValueError

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def _box_sdf(p: np.ndarray, centre, dims) -> np.ndarray:
    """Analytic signed distance of points ``[N, 3]`` to an axis-aligned box."""
    q = np.abs(p - np.asarray(centre)) - 0.5 * np.asarray(dims)
    outside = np.linalg.norm(np.maximum(q, 0.0), axis=-1)
    return outside + np.minimum(q.max(-1), 0.0)


def _sphere_surface(centre, radius: float, count: int, rng) -> np.ndarray:
    v = rng.normal(size=(count, 3))
    return np.asarray(centre) + radius * v / np.linalg.norm(v, axis=-1, keepdims=True)


def _box_surface(centre, dims, count: int, rng) -> np.ndarray:
    """Points uniform on the six faces of an axis-aligned box."""
    half = 0.5 * np.asarray(dims)
    p = rng.uniform(-half, half, size=(count, 3))
    axis = rng.integers(0, 3, size=count)
    side = rng.choice([-1.0, 1.0], size=count)
    p[np.arange(count), axis] = side * half[axis]
    return np.asarray(centre) + p


def _assert_scipy_esdf(grid: VoxelWorld, occupied: np.ndarray, cap: float = math.inf) -> None:
    """The grid's ESDF equals scipy's exact transform of ``occupied``: ``v edt`` outside
    (capped at ``cap``), ``-v (edt - 1)`` inside."""
    v = grid.voxel_size
    outside = np.minimum(distance_transform_edt(~occupied) * v, cap)
    inside = distance_transform_edt(occupied) * v - v
    expected = np.where(occupied, -inside, outside)
    np.testing.assert_allclose(grid.esdf.cpu().numpy(), expected, atol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
def test_esdf_equals_scipy_exact_transform(device: str) -> None:
    """Random occupancy on a grid with three different sides: the signed field equals
    ``v edt`` outside and ``-v (edt - 1)`` inside by scipy's exact transform."""
    rng = np.random.default_rng(0)
    grid = VoxelWorld([0.0, 0.0, 0.0], [0.46, 0.34, 0.22], 0.02, TensorDeviceType(device))
    assert grid.shape == (23, 17, 11)
    for fraction in (0.01, 0.3, 0.7):
        occupied = rng.random(grid.shape) < fraction
        grid.occupancy.copy_(torch.from_numpy(occupied).float())
        grid.update_esdf()
        _assert_scipy_esdf(grid, occupied)
    # long lines and large squared distances (the transform's integer arithmetic)
    grid = VoxelWorld([0, 0, 0], [6.0, 0.4, 0.2], 0.02, TensorDeviceType(device))
    occupied = np.zeros(grid.shape, bool)
    occupied[0, 0, 0] = occupied[-1, -1, -1] = occupied[150, 5, 3] = True
    grid.occupancy.copy_(torch.from_numpy(occupied).float())
    grid.update_esdf()
    expected = np.where(
        occupied, 0.0, distance_transform_edt(~occupied) * 0.02
    )  # single voxels: inside distance 0
    np.testing.assert_allclose(grid.esdf.cpu().numpy(), expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("cap", [math.inf, 0.07])
def test_esdf_equals_scipy_on_plates_walls_and_solids(device: str, cap: float) -> None:
    """What cameras and worlds give, against scipy's exact transform (capped at ``cap``
    outside): a two-voxel plate across the whole grid (no free voxel along x or y), a
    one-voxel wall, a solid block (deep insides), a column ending at the grid's top, and a
    fully occupied slab along one side (runs with no free end). The grid is large enough
    for the CPU launches to be split over threads (560 000 voxels)."""
    grid = VoxelWorld(
        [0, 0, 0], [2.0, 1.6, 1.4], 0.02, TensorDeviceType(device), max_esdf_distance=cap
    )
    assert grid.shape == (100, 80, 70)
    occupied = np.zeros(grid.shape, bool)
    occupied[:, :, 15:17] = True  # the plate
    occupied[50, 8:72, 17:60] = True  # the wall, standing on it
    occupied[10:40, 30:50, 20:45] = True  # the block
    occupied[80, 60, 40:] = True  # the column
    occupied[:, :2, :] = True  # the slab
    occupied[60:90, 10:25, 40] = True  # a shelf
    grid.occupancy.copy_(torch.from_numpy(occupied).float())
    grid.update_esdf()
    _assert_scipy_esdf(grid, occupied, cap)
    assert float(grid.esdf.min()) < -0.05  # the block's inside is deep


@pytest.mark.parametrize("device", DEVICES)
def test_truncated_esdf_is_the_exact_one_capped(device: str) -> None:
    """With ``max_esdf_distance`` the field equals scipy's exact transform capped at it
    outside (and exact inside); an empty truncated grid still reads "nothing there"."""
    rng = np.random.default_rng(1)
    cap = 0.07  # 3.5 voxels: squared distances 9 and 13 kept, 16 capped
    grid = VoxelWorld(
        [0, 0, 0], [0.46, 0.34, 0.22], 0.02, TensorDeviceType(device), max_esdf_distance=cap
    )
    for fraction in (0.002, 0.05, 0.6):
        occupied = rng.random(grid.shape) < fraction
        grid.occupancy.copy_(torch.from_numpy(occupied).float())
        grid.update_esdf()
        _assert_scipy_esdf(grid, occupied, cap)
    grid.clear()
    grid.update_esdf()
    assert float(grid.esdf.min()) >= vk.FAR
    query = torch.tensor([[0.2, 0.2, 0.1, 0.01]], device=device)
    assert float(grid.sphere_distance(query).distance) == math.inf
    with pytest.raises(InputValueError, match="max_esdf_distance: expected a number > 0"):
        VoxelWorld([0, 0, 0], [1, 1, 1], 0.1, max_esdf_distance=0.0)


def test_point_cloud_distances_within_one_voxel_of_the_shapes() -> None:
    """Clouds sampled on a sphere and a box: at random points outside both, the grid's
    distance is within one voxel of the analytic distance to the nearer shape."""
    rng = np.random.default_rng(1)
    voxel = 0.02
    ball, radius = np.array([0.2, 0.25, 0.3]), 0.1
    box, dims = np.array([0.45, 0.3, 0.2]), np.array([0.12, 0.3, 0.16])
    cloud = np.concatenate(
        (_sphere_surface(ball, radius, 20000, rng), _box_surface(box, dims, 30000, rng))
    )
    grid = VoxelWorld([0.0, 0.0, 0.0], [0.64, 0.6, 0.56], voxel)
    grid.integrate_points(torch.from_numpy(cloud))
    # within the box of voxel centres (half a voxel in from the grid's faces), and beyond it
    for low, high, inside in (
        ([0.01] * 3, [0.63, 0.59, 0.55], True),
        ([-0.3] * 3, [0.9] * 3, False),
    ):
        query = rng.uniform(low, high, size=(4000, 3))
        truth = np.minimum(
            np.linalg.norm(query - ball, axis=-1) - radius, _box_sdf(query, box, dims)
        )
        query, truth = query[truth > 0], truth[truth > 0]  # the insides are not observed
        spheres = torch.from_numpy(np.concatenate((query, np.zeros((len(query), 1))), -1))
        measured = grid.sphere_distance(spheres.float()).distance.numpy()
        error = measured - truth
        if inside:
            assert np.abs(error).max() <= voxel, np.abs(error).max()
            assert abs(error.mean()) <= 0.25 * voxel  # no bias
        else:  # outside the grid: a lower bound, within a voxel of the truth at its faces
            assert error.max() <= voxel, error.max()
    # and the radius is subtracted
    spheres[:, 3] = 0.03
    np.testing.assert_allclose(
        grid.sphere_distance(spheres.float()).distance.numpy(), measured - 0.03, atol=1e-6
    )


@pytest.mark.parametrize("device", DEVICES)
def test_gradient_matches_finite_differences(device: str) -> None:
    """Distance and cost gradients (centre and radius, float64 queries), inside the grid and
    outside its box, against central differences of the query itself."""
    rng = np.random.default_rng(2)
    grid = VoxelWorld([0.0, 0.0, 0.0], [0.4, 0.4, 0.4], 0.02, TensorDeviceType(device))
    grid.integrate_points(_box_surface([0.2, 0.2, 0.2], [0.1, 0.16, 0.12], 20000, rng))
    centres = np.concatenate(
        (
            rng.uniform(0.02, 0.38, size=(40, 3)),
            rng.uniform(-0.2, 0.6, size=(40, 3)),  # many outside the grid's box
        )
    )
    spheres = np.concatenate((centres, rng.uniform(0.0, 0.05, size=(80, 1))), -1)
    spheres = torch.tensor(spheres, dtype=torch.float64, device=device, requires_grad=True)
    activation = 0.08
    result = grid.sphere_distance(spheres, activation)
    for output in ("distance", "cost"):
        (grad,) = torch.autograd.grad(getattr(result, output).sum(), spheres, retain_graph=True)
        numeric = torch.zeros_like(spheres)
        eps = 1e-6
        for column in range(4):
            step = torch.zeros_like(spheres)
            step[:, column] = eps
            with torch.no_grad():
                plus = getattr(grid.sphere_distance(spheres + step, activation), output)
                minus = getattr(grid.sphere_distance(spheres - step, activation), output)
            numeric[:, column] = (plus - minus) / (2 * eps)
        torch.testing.assert_close(grad, numeric, atol=2e-5, rtol=1e-4)
        assert float(grad.abs().sum()) > 0.0


def test_from_world_samples_the_exact_sdf() -> None:
    """A static world's grid: at voxel centres it equals the analytic box distance (negative
    inside); between them the interpolation stays within half a voxel's diagonal."""
    centre, dims = [0.3, 0.2, 0.25], [0.2, 0.1, 0.3]
    world = WorldConfig(cuboid=[Cuboid("box", pose=[*centre, 1, 0, 0, 0], dims=dims)])
    voxel = 0.02
    grid = VoxelWorld.from_world(WorldCollision(world), [0, 0, 0], [0.6, 0.4, 0.5], voxel)
    centres = grid.voxel_centres().reshape(-1, 3).double().numpy()
    np.testing.assert_allclose(
        grid.esdf.reshape(-1).numpy(), _box_sdf(centres, centre, dims), atol=1e-5
    )
    assert bool((grid.occupancy.reshape(-1) > 0.5).eq(torch.from_numpy(
        _box_sdf(centres, centre, dims) < 0)).all())  # fmt: skip
    rng = np.random.default_rng(3)
    query = rng.uniform([0.01, 0.01, 0.01], [0.59, 0.39, 0.49], size=(3000, 3))
    spheres = torch.from_numpy(np.concatenate((query, np.zeros((3000, 1))), -1)).float()
    error = grid.sphere_distance(spheres).distance.numpy() - _box_sdf(query, centre, dims)
    assert np.abs(error).max() <= 0.5 * math.sqrt(3) * voxel
    with pytest.raises(InputTypeError, match="world: expected a WorldCollision"):
        VoxelWorld.from_world(world, [0, 0, 0], [1, 1, 1], voxel)


def test_carving_frees_voxels_in_front_of_new_points() -> None:
    """A box seen at one place, then (moved) the wall behind where it was: with carving along
    the sensor's rays its ghost is gone, without it the ghost stays."""
    rng = np.random.default_rng(4)
    sensor = Pose.from_list([0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0])
    box = _box_surface([0.5, 0.0, 0.0], [0.06, 0.2, 0.2], 20000, rng)
    box = box[box[:, 0] < 0.48]  # the face the sensor sees
    wall = _box_surface([0.8, 0.0, 0.0], [0.02, 0.6, 0.6], 40000, rng)
    wall = wall[wall[:, 0] < 0.795]
    ghost = torch.tensor([[0.47, 0.0, 0.0, 0.0]])
    for carve, expect_ghost in ((True, False), (False, True)):
        grid = VoxelWorld([0.2, -0.4, -0.4], [1.0, 0.4, 0.4], 0.02)
        grid.integrate_points(box, sensor, carve=carve)
        assert float(grid.sphere_distance(ghost).distance) <= 0.02
        grid.integrate_points(wall, sensor, carve=carve)
        distance = float(grid.sphere_distance(ghost).distance)
        if expect_ghost:
            assert distance <= 0.02
        else:
            assert distance >= 0.3  # the wall, 0.32 m behind
            # the wall itself was not carved away
            assert (
                float(grid.sphere_distance(torch.tensor([[0.79, 0.0, 0.0, 0.0]])).distance) < 0.02
            )


def test_decay_forgets_voxels_not_seen_again() -> None:
    """With ``decay = 0.8`` a voxel not measured again stays for three more integrations
    (0.8^3 >= 0.5) and is gone at the fourth; decay 1 keeps it."""
    first = torch.tensor([[0.05, 0.05, 0.05]])
    other = torch.tensor([[0.15, 0.15, 0.15]])
    for decay, frames_kept in ((0.8, 3), (1.0, 10)):
        grid = VoxelWorld([0, 0, 0], [0.2, 0.2, 0.2], 0.02, decay=decay)
        grid.integrate_points(first)
        for frame in range(1, 11):
            grid.integrate_points(other)
            still = float(grid.sphere_distance(torch.tensor([[0.05, 0.05, 0.05, 0.0]])).distance)
            assert (still <= 0.0) == (frame <= frames_kept), (decay, frame)
    grid.clear()
    assert not bool((grid.occupancy > 0).any())
    assert float(grid.sphere_distance(torch.tensor([[0.1, 0.1, 0.1, 0.0]])).distance) == math.inf


def test_self_filter_drops_points_on_the_robot() -> None:
    """Points on two robot spheres (plus a box): given the spheres, no voxel within them is
    occupied and the box is; without them the spheres' surfaces are occupied."""
    rng = np.random.default_rng(5)
    robot = torch.tensor([[0.2, 0.2, 0.2, 0.06], [0.3, 0.2, 0.2, 0.05], [0.0, 0.0, 0.0, -1.0]])
    cloud = np.concatenate(
        (
            _sphere_surface([0.2, 0.2, 0.2], 0.06, 4000, rng),
            _sphere_surface([0.3, 0.2, 0.2], 0.05, 4000, rng),
            _box_surface([0.2, 0.45, 0.2], [0.1, 0.05, 0.1], 8000, rng),
        )
    )
    for filtered in (True, False):
        grid = VoxelWorld([0, 0, 0], [0.5, 0.6, 0.4], 0.01, self_filter_margin=0.015)
        grid.integrate_points(cloud, robot_spheres=robot if filtered else None)
        centres = grid.occupied_centres()
        near_robot = (centres[:, None] - robot[None, :2, :3]).norm(dim=-1) < robot[:2, 3] + 0.005
        assert bool(near_robot.any()) != filtered
        assert bool((centres[:, 1] > 0.4).any())  # the box
    # the robot's spheres are clear of the filtered grid except for the box
    grid = VoxelWorld([0, 0, 0], [0.5, 0.6, 0.4], 0.01)
    grid.integrate_points(cloud, robot_spheres=robot)
    assert float(grid.sphere_distance(robot[:2]).distance.min()) > 0.05


IDENTITY = [0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0]
BAD_POINTS = [
    (torch.tensor([[0.1, 0.1, math.nan]]), "points: expected finite"),
    (torch.tensor([[0.1, math.inf, 0.1]]), "points: expected finite"),
    (torch.zeros(4, 2), r"points: expected shape \[N, 3\]"),
    (torch.zeros(0, 3), "points: expected at least one point"),
    ("0.1 0.2 0.3", "points: expected a torch.Tensor"),
]


def test_bad_inputs_raise_named_errors_and_leave_the_world_unchanged() -> None:
    grid = VoxelWorld([0, 0, 0], [0.3, 0.3, 0.3], 0.02)
    grid.integrate_points(torch.tensor([[0.1, 0.1, 0.1]]))
    occupancy, esdf = grid.occupancy.clone(), grid.esdf.clone()
    calls = [
        (lambda p=p: grid.integrate_points(p), match) for p, match in BAD_POINTS
    ] + [
        (lambda: grid.integrate_points(torch.ones(2, 3) * 0.2, [0, 0, 0, 1, 0, math.nan, 0]),
         "frame_pose: expected a finite pose"),
        (lambda: grid.integrate_points(torch.ones(2, 3) * 0.2, [0, 0, 0, 0, 0, 0, 0]),
         "frame_pose: expected a unit quaternion"),
        (lambda: grid.integrate_points(torch.ones(2, 3) * 0.2, robot_spheres=torch.ones(2, 3)),
         r"robot_spheres: expected shape \[N, 4\]"),
        (lambda: grid.integrate_depth(torch.full((4, 5), math.nan), torch.eye(3), IDENTITY),
         "depth: expected finite"),
        (lambda: grid.integrate_depth(-torch.ones(4, 5), torch.eye(3), IDENTITY),
         "depth: expected values >= 0"),
        (lambda: grid.integrate_depth(torch.ones(4, 5, 1), torch.eye(3), IDENTITY),
         r"depth: expected shape \[H, W\]"),
        (lambda: grid.integrate_depth(torch.ones(4, 5), torch.zeros(3, 3), IDENTITY),
         "intrinsics: expected a"),
        (lambda: grid.integrate_depth(torch.ones(4, 5), torch.eye(3), [0, 0, math.inf, 1, 0, 0, 0]),
         "camera_pose: expected a finite pose"),
        (lambda: grid.integrate_depth(torch.ones(4, 5), torch.eye(3), IDENTITY, 0.0),
         "depth_scale: expected a number"),
    ]  # fmt: skip
    for call, match in calls:
        with pytest.raises((InputValueError, InputTypeError), match=match):
            call()
        assert torch.equal(grid.occupancy, occupancy) and torch.equal(grid.esdf, esdf), match
    for args, match in (
        (([0, 0, 0], [0, 1, 1], 0.1), "bounds_max: expected every coordinate above"),
        (([0, 0, math.nan], [1, 1, 1], 0.1), "bounds_min: expected finite"),
        (([0, 0, 0], [1, 1, 1], 0.0), "voxel_size: expected a number"),
        (([0, 0, 0], [30, 30, 30], 0.01), "voxel_size: .* more than 700 along an axis"),
        (([0, 0, 0], [6, 6, 6], 0.01), "voxel_size: .* more than 67108864"),
    ):
        with pytest.raises(InputValueError, match=match):
            VoxelWorld(*args)
    with pytest.raises(InputValueError, match="spheres: expected shape"):
        grid.sphere_distance(torch.zeros(3, 3))


def test_point_cloud_world_mixes_with_primitives_and_stays_live() -> None:
    """``WorldConfig.from_point_cloud`` plus a cuboid in one WorldCollision: the distance is
    the smaller of the grid's and the cuboid's exact one, obstacle_distances names both, and
    frames integrated later into the shared grid reach an existing WorldCollision."""
    rng = np.random.default_rng(6)
    cloud = torch.from_numpy(_sphere_surface([0.3, 0.0, 0.3], 0.08, 8000, rng)).float()
    world = WorldConfig.from_point_cloud(cloud, voxel_size=0.02, name="camera")
    world.add(Cuboid("table", pose=[0.3, 0.0, -0.02, 1, 0, 0, 0], dims=[1.0, 1.0, 0.04]))
    assert world.copy().voxel[0] is world.voxel[0]
    collision = WorldCollision(world)
    assert collision.num_enabled == 2
    query = torch.tensor([[0.3, 0.0, 0.5, 0.01], [0.3, 0.0, 0.05, 0.01], [0.7, 0.0, 0.3, 0.0]])
    grid_d = world.voxel[0].sphere_distance(query).distance
    table_d = query[:, 2] + 0.0 - query[:, 3]  # the table top is z = 0
    torch.testing.assert_close(
        collision.sphere_distance(query).distance, torch.minimum(grid_d, table_d)
    )
    names, per_obstacle = collision.obstacle_distances(query)
    assert names == ["table", "camera"]
    torch.testing.assert_close(per_obstacle[:, 1], grid_d)
    # a new frame (a point just above the first query) is seen without update_world
    above = torch.tensor([[0.3, 0.0, 0.45, 0.01]])  # 6 cm above the ball, inside the grid
    before = float(collision.sphere_distance(above).distance)
    world.voxel[0].integrate_points(torch.tensor([[0.3, 0.0, 0.42]]))
    after = float(collision.sphere_distance(above).distance)
    assert after < before - 0.03
    # a world with a grid pickles (Ray workers, torchrun ranks) and answers the same
    copied = pickle.loads(pickle.dumps(world))
    torch.testing.assert_close(
        WorldCollision(copied).sphere_distance(query).distance,
        collision.sphere_distance(query).distance,
    )
    # a VoxelWorld loads as a world of its own
    assert WorldConfig.load(world.voxel[0]).voxel == [world.voxel[0]]
    with pytest.raises(InputTypeError, match=r"WorldConfig.voxel\[0\]"):
        WorldConfig(voxel=["not a grid"])


def test_swept_query_catches_a_thin_wall_between_steps() -> None:
    """A sphere jumping across a one-voxel wall between two steps: the plain query sees it
    clear at both steps, the swept one in collision; swept distances never exceed plain ones."""
    grid = VoxelWorld([0, 0, 0], [0.4, 0.4, 0.4], 0.02)
    y, z = torch.meshgrid(
        torch.linspace(0.02, 0.38, 40), torch.linspace(0.02, 0.38, 40), indexing="ij"
    )
    grid.integrate_points(torch.stack((torch.full_like(y, 0.2), y, z), -1).reshape(-1, 3))
    spheres = torch.tensor([[[[0.05, 0.2, 0.2, 0.02]], [[0.35, 0.2, 0.2, 0.02]]]])
    world = WorldCollision(WorldConfig(voxel=[grid]))
    plain = world.sphere_distance(spheres).distance
    swept = world.swept_sphere_distance(spheres).distance
    assert bool((plain > 0.1).all())
    assert float(swept[0, 1, 0]) < 0.0
    assert bool((swept <= plain + 1e-6).all())


def test_exact_band_does_not_let_the_meshes_judge_a_voxel_contact():
    """RobotWorld.validate's exact band hands shallow sphere contacts to the mesh check, which
    does not see voxel grids: with a grid in the world a contact stays a contact. A plate of
    points 4 mm into the lowest sphere of the retract pose (its depth by the grid within one
    voxel of 4 mm) is refused with and without the band."""
    from curobo_lite.wrap import RobotWorld

    free = RobotWorld.from_config("franka", None)
    q = free.robot_config.retract_config[None]
    spheres = free.get_world_spheres(q)[0]
    spheres = spheres[spheres[:, 3] > 0]
    bottom = spheres[:, 2] - spheres[:, 3]
    lowest = spheres[int(bottom.argmin())]
    grid = torch.linspace(-0.1, 0.1, 41)
    x, y = torch.meshgrid(grid + float(lowest[0]), grid + float(lowest[1]), indexing="ij")
    top = float(bottom.min()) + 0.004
    points = torch.stack((x.reshape(-1), y.reshape(-1), torch.full((41 * 41,), top)), -1)
    world = RobotWorld.from_config("franka", WorldConfig.from_point_cloud(points, 0.01))
    depth = float(world.collision_distance(q)[0])
    assert -0.015 < depth < 0.0 and abs(depth + 0.004) <= 0.01
    assert not bool(world.validate(q)[0])
    assert not bool(world.validate(q, exact_band=0.015)[0])


@pytest.mark.parametrize("device", DEVICES)
def test_grid_query_writes_every_row_it_does_not_fold(device: str) -> None:
    """A world of grids alone has the grid write its query's outputs (no fill first): every
    row of a swept query with gradients, over outputs holding NaN, equals the grid folded into
    an empty world's outputs, and a world holding the grid and a far-off box (which fills them
    first) answers the same. Large enough for the CPU launch to be split over threads."""
    rng = np.random.default_rng(4)
    tensor_args = TensorDeviceType(device)
    grid = VoxelWorld([0.0, 0.0, 0.0], [0.4, 0.4, 0.4], 0.02, tensor_args)
    points = _box_surface([0.2, 0.2, 0.2], [0.1, 0.16, 0.12], 20000, rng)
    grid.integrate_points(torch.tensor(points, dtype=torch.float32, device=device))
    centres = rng.uniform(-0.1, 0.5, size=(20, 25, 40, 3))
    radii = rng.uniform(-0.01, 0.04, size=(20, 25, 40, 1))  # some disabled
    spheres = torch.tensor(np.concatenate((centres, radii), -1), dtype=torch.float32, device=device)
    rows = spheres.numel() // 4
    query = (0.05, math.inf, 1, 0.5, 8, True)  # activation, max distance, sweep, ... grads

    def outputs(fill: float) -> list[torch.Tensor]:
        return [torch.full((rows,), fill, device=device) for _ in range(2)] + [
            torch.full((rows, 4), fill, device=device) for _ in range(4)
        ]

    folded = outputs(0.0)
    folded[0].fill_(math.inf)
    grid.fold_query(spheres, *query, folded[0], folded[1], folded[2:])
    written = outputs(math.nan)
    grid.fold_query(spheres, *query, written[0], written[1], written[2:], overwrite=True)
    for a, b in zip(written, folded, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    assert bool((folded[1] > 0).any()) and bool((folded[2].abs().sum(-1) > 0).any())
    far_box = Cuboid("far", pose=[50.0, 0, 0, 1, 0, 0, 0], dims=[0.1, 0.1, 0.1])
    grads = []
    for world in (WorldConfig(voxel=[grid]), WorldConfig(cuboid=[far_box], voxel=[grid])):
        s = spheres.clone().requires_grad_(True)
        collision = WorldCollision(world, tensor_args)
        result = collision.swept_sphere_distance(s, 0.05, max_sweep_samples=8)
        torch.testing.assert_close(result.distance.reshape(-1), folded[0], rtol=0, atol=0)
        torch.testing.assert_close(result.cost.reshape(-1), folded[1], rtol=0, atol=0)
        grads.append(torch.autograd.grad(result.cost.sum(), s)[0])
    assert bool(torch.isfinite(grads[0]).all()) and bool((grads[0] != 0).any())
    torch.testing.assert_close(grads[0], grads[1], rtol=0, atol=0)
