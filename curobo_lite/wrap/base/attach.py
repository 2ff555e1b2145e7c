"""Objects held by the robot: spheres fitted to their shapes on a link's reserved spheres.

A robot file reserves spheres for a link that carries grasped objects (cuRobo's
``extra_collision_spheres: {attached_object: N}`` on an ``attached_object`` link fixed to the
hand). :func:`attach_objects` takes obstacles of the world at a joint configuration:

1. their shapes (cuboid, sphere, cylinder, capsule, mesh) are placed in the link's frame at
   that configuration;
2. :func:`cover_spheres` covers them with at most ``N`` spheres: the bounding box in the
   link frame is cut into a grid of equal cells, as fine as the budget allows, and every cell
   that meets the solid gets the sphere through its corners (the union covers the solid: a
   point of the solid lies in some cell, and a cell lies in its sphere), grown by
   ``surface_sphere_radius``;
3. the spheres are written into the reserved ones of every :class:`~curobo_lite.robot.Kinematics`
   of the solver (in place: no kernel, buffer or CUDA graph is rebuilt), so world collision,
   self-collision (against the links the robot file's ``self_collision_ignore`` does not exempt
   for the held link: by default the hand and the fingers, which the grasp touches), the swept
   checks and the costs see them;
4. the obstacles are disabled in the world (the robot is not in collision with what it holds),
   and their true shapes join the exact mesh check as shapes of the link.

:func:`detach_objects` disables the spheres and enables the obstacles again.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from curobo_lite.geom.exact_collision import LinkShape
from curobo_lite.geom.obstacle_mesh import obstacle_mesh
from curobo_lite.geom.world import WorldConfig
from curobo_lite.geom.world_collision import WorldCollision
from curobo_lite.robot import Kinematics
from curobo_lite.types import TensorDeviceType, matrix_to_quat, quat_to_matrix
from curobo_lite.types.errors import InputTypeError, InputValueError

#: the link cuRobo's robot files reserve for held objects
ATTACHED_LINK = "attached_object"


@dataclass
class AttachedObjects:
    """What is held on one link.

    Attributes:
        link_name: the link (its reserved spheres carry the objects).
        object_names: the obstacles taken from the world (disabled there until detached).
        spheres: ``[n, 4]`` float64 centres in the link frame and radii.
        shapes: the objects' true shapes in the link frame, for the exact mesh check.
        config: ``[D]`` the joint configuration they were attached at.
    """

    link_name: str
    object_names: list[str]
    spheres: torch.Tensor
    shapes: list[LinkShape]
    config: torch.Tensor


def _pose_matrix(pose: Sequence[float]) -> np.ndarray:
    """``[4, 4]`` of ``[x, y, z, qw, qx, qy, qz]``."""
    matrix = np.eye(4)
    quaternion = torch.as_tensor(pose[3:7], dtype=torch.float64)
    matrix[:3, :3] = quat_to_matrix(quaternion / quaternion.norm()).numpy()
    matrix[:3, 3] = pose[:3]
    return matrix


def cover_spheres(points_inside: Any, bounds: np.ndarray, budget: int) -> np.ndarray:
    """``[n <= budget, 4]`` spheres whose union covers a solid: the circumscribed spheres of
    the cells of the finest grid over ``bounds [2, 3]`` whose cells meeting the solid number
    at most ``budget``. ``points_inside(centres [K, 3], reach [K]) -> [K] bool`` says whether
    the solid comes within ``reach`` of each cell centre (a cell meets the solid only then)."""
    extent = np.maximum(bounds[1] - bounds[0], 1e-6)
    best = None
    # grids from one cell up, the cells as cubic as the extents allow
    for scale in np.geomspace(1.0, 64.0, 40):
        counts = np.maximum(1, np.ceil(extent / extent.max() * scale)).astype(int)
        cell = extent / counts
        axes = [bounds[0, k] + cell[k] * (np.arange(counts[k]) + 0.5) for k in range(3)]
        centres = np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, 3)
        reach = 0.5 * float(np.linalg.norm(cell))
        kept = centres[points_inside(centres, np.full(len(centres), reach))]
        if len(kept) > budget:
            break
        best = np.concatenate((kept, np.full((len(kept), 1), reach)), axis=1)
    if best is None or len(best) == 0:
        raise InputValueError(f"object: cannot be covered with {budget} spheres")
    return best


def object_spheres(
    world: WorldCollision,
    object_names: Sequence[str],
    link_pose: np.ndarray,
    budget: int,
    surface_sphere_radius: float,
) -> tuple[np.ndarray, list[LinkShape]]:
    """Spheres ``[n, 4]`` covering the named obstacles, and their shapes as
    :class:`LinkShape` s, both in the frame ``link_pose [4, 4]`` (base frame) of the link.
    Whether a cell meets the solid is the signed distance of its centre to the obstacles
    placed in the link frame (this package's own exact distances), against its reach."""
    to_link = np.linalg.inv(link_pose)
    placed, shapes, corners = [], [], []
    for name in object_names:
        obstacle = copy.deepcopy(world.world.get(name))
        in_link = to_link @ _pose_matrix(obstacle.pose)
        quaternion = matrix_to_quat(torch.as_tensor(in_link[:3, :3]))
        obstacle.pose = [*in_link[:3, 3].tolist(), *quaternion.tolist()]
        obstacle.enabled = True
        placed.append(obstacle)
        mesh = obstacle_mesh(obstacle)
        mesh.apply_transform(in_link)
        corners.append(np.asarray(mesh.bounds))
        shapes.append(
            LinkShape(
                kind="mesh",
                vertices=np.asarray(mesh.vertices),
                faces=np.asarray(mesh.faces),
                description=f"attached object '{name}'",
            )
        )
    objects = WorldConfig()
    for obstacle in placed:
        objects.add(obstacle)
    local = WorldCollision(objects, TensorDeviceType(dtype=torch.float64))
    bounds = np.stack((np.min([c[0] for c in corners], 0), np.max([c[1] for c in corners], 0)))

    def meets(centres: np.ndarray, reach: np.ndarray) -> np.ndarray:
        points = torch.zeros(len(centres), 4, dtype=torch.float64)
        points[:, :3] = torch.as_tensor(centres)
        distance = local.sphere_distance(points[None]).distance[0].numpy()
        return distance <= reach

    spheres = cover_spheres(meets, bounds, budget)
    spheres[:, 3] += surface_sphere_radius
    return spheres, shapes


def solver_kinematics(root: Any, depth: int = 5) -> list[Kinematics]:
    """Every :class:`Kinematics` a solver holds (its own, its rollouts', its inner IK's...):
    attaching must reach each copy of the robot's spheres."""
    found: dict[int, Kinematics] = {}
    seen: set[int] = set()

    def walk(node: Any, level: int) -> None:
        if id(node) in seen or level > depth:
            return
        seen.add(id(node))
        if isinstance(node, Kinematics):
            found[id(node)] = node
            return
        if isinstance(node, dict):
            values = list(node.values())
        elif isinstance(node, (list, tuple)):
            values = list(node)
        elif type(node).__module__.startswith("curobo_lite") and hasattr(node, "__dict__"):
            values = list(vars(node).values())
        else:
            return
        for value in values:
            walk(value, level + 1)

    walk(root, 0)
    return list(found.values())


def attach_objects(
    world: WorldCollision,
    kinematics: Sequence[Kinematics],
    joint_state: Any,
    object_names: Sequence[str],
    link_name: str = ATTACHED_LINK,
    surface_sphere_radius: float = 0.001,
) -> AttachedObjects:
    """The spheres and shapes that hold the obstacles ``object_names`` of ``world`` on
    ``link_name`` from ``joint_state`` (a :class:`JointState` or a tensor ``[D]`` /
    ``[1, D]``; the first of ``kinematics`` places them), every argument checked; nothing
    changes until :func:`hold` (see the module docstring)."""
    if isinstance(object_names, str) or not isinstance(object_names, Sequence):
        raise InputTypeError(
            f"object_names: expected a list of obstacle names, received {object_names!r}"
        )
    if not object_names:
        raise InputValueError("object_names: expected at least one obstacle name, received []")
    known = world.obstacle_names
    missing = [name for name in object_names if name not in known]
    if missing:
        raise InputValueError(
            f"object_names: {missing} are not obstacles of the world (it has {known})"
        )
    if not isinstance(surface_sphere_radius, (int, float)) or not 0.0 <= surface_sphere_radius:
        raise InputValueError(
            f"surface_sphere_radius: expected a number >= 0, received {surface_sphere_radius!r}"
        )
    first = kinematics[0]
    begin, end = first.reserved_spheres(link_name)  # names the link when it has none
    q = getattr(joint_state, "position", joint_state)
    if not isinstance(q, torch.Tensor) or q.numel() != first.dof:
        raise InputValueError(
            f"joint_state: expected a position [{first.dof}] or [1, {first.dof}], received "
            f"{tuple(q.shape) if isinstance(q, torch.Tensor) else type(q).__name__}"
        )
    q = q.reshape(1, first.dof).to(first.tensor_args.device, first.tensor_args.dtype)
    if not bool(torch.isfinite(q).all()):
        raise InputValueError("joint_state: contains NaN or infinite values")
    link_pose = _link_pose(first, q, link_name)
    spheres, shapes = object_spheres(
        world, list(object_names), link_pose, end - begin, float(surface_sphere_radius)
    )
    return AttachedObjects(
        link_name, list(object_names), torch.as_tensor(spheres), shapes, q[0].detach()
    )


def hold(world: WorldCollision, kinematics: Sequence[Kinematics], held: AttachedObjects) -> None:
    """Make ``held`` (from :func:`attach_objects`) real: its spheres on every one of
    ``kinematics``, its obstacles disabled in ``world``."""
    for kin in kinematics:
        kin.set_reserved_spheres(held.link_name, held.spheres)
    for name in held.object_names:
        world.enable_obstacle(name, False)


def detach_objects(
    world: WorldCollision, kinematics: Sequence[Kinematics], attached: AttachedObjects
) -> None:
    """Disable the link's reserved spheres and enable the held obstacles again."""
    for kin in kinematics:
        kin.set_reserved_spheres(attached.link_name, None)
    for name in attached.object_names:
        if name in world.obstacle_names:
            world.enable_obstacle(name, True)


def _link_pose(kinematics: Kinematics, q: torch.Tensor, link: str) -> np.ndarray:
    """``[4, 4]`` of ``link`` (a sphere link: on the chain or fixed to it) at ``q [1, D]``."""
    frame, to_frame = kinematics.tables.sphere_link_frames[link]
    if frame < 0:
        return to_frame
    state = kinematics.forward(q, spheres=False)
    matrix = np.eye(4)
    quaternion = state.link_quaternion[0, frame].detach().double().cpu()
    matrix[:3, :3] = quat_to_matrix(quaternion).numpy()
    matrix[:3, 3] = state.link_position[0, frame].detach().double().cpu().numpy()
    return matrix @ to_frame


def take_hold(
    world: WorldCollision,
    kinematics: Sequence[Kinematics],
    held: dict[str, AttachedObjects],
    joint_state: Any,
    object_names: Sequence[str],
    link_name: str,
    surface_sphere_radius: float,
) -> AttachedObjects:
    """Attach (:func:`attach_objects`, every argument checked first), let go of what
    ``link_name`` held before, then :func:`hold`; ``held`` (link -> objects) records it. A
    refused call changes nothing."""
    new = attach_objects(
        world, kinematics, joint_state, object_names, link_name, surface_sphere_radius
    )
    let_go(world, kinematics, held, link_name)
    hold(world, kinematics, new)
    held[link_name] = new
    return new


def let_go(
    world: WorldCollision,
    kinematics: Sequence[Kinematics],
    held: dict[str, AttachedObjects],
    link_name: str,
) -> bool:
    """Detach what ``held`` records on ``link_name``; whether anything was held (nothing: no
    change, but a link without reserved spheres is named)."""
    if link_name in held:
        detach_objects(world, kinematics, held.pop(link_name))
        return True
    kinematics[0].reserved_spheres(link_name)
    return False


class HoldsObjects:
    """``attach_objects_to_robot`` / ``detach_object_from_robot`` (cuRobo's names) for a solver.
    A solver with a :class:`~curobo_lite.wrap.RobotWorld` ``checker`` (MotionGen) has it hold
    the objects (its mesh check then sees their shapes); one without (MpcSolver) holds them
    itself, in ``world_collision``. Every other copy of the robot's spheres in the solver (its
    IK's, its optimizer's or MPPI's rollouts) gets the same spheres."""

    def attach_objects_to_robot(
        self,
        joint_state: Any,
        object_names: Sequence[str],
        surface_sphere_radius: float = 0.001,
        link_name: str = ATTACHED_LINK,
    ) -> AttachedObjects:
        """Hold the world's obstacles ``object_names`` on ``link_name`` from ``joint_state``
        on (see :mod:`curobo_lite.wrap.base.attach`); returns what is held."""
        checker = getattr(self, "checker", None)
        if checker is not None:
            return checker.attach_objects_to_robot(
                joint_state, object_names, link_name, surface_sphere_radius, self._others(checker)
            )
        world, everyone, held = self._holding()
        return take_hold(
            world, everyone, held, joint_state, object_names, link_name, surface_sphere_radius
        )

    def detach_object_from_robot(self, link_name: str = ATTACHED_LINK) -> None:
        """Let go of what ``link_name`` holds; the objects return to the world."""
        checker = getattr(self, "checker", None)
        if checker is not None:
            checker.detach_object_from_robot(link_name, self._others(checker))
            return
        let_go(*self._holding(), link_name)

    def _others(self, checker: Any) -> list[Kinematics]:
        """The solver's copies of the robot's spheres besides its checker's."""
        return [k for k in solver_kinematics(self, depth=8) if k is not checker.kinematics]

    def _holding(self) -> tuple[WorldCollision, list[Kinematics], dict[str, AttachedObjects]]:
        world = getattr(self, "world_collision", None)
        if world is None:
            raise InputValueError(
                f"{type(self).__name__} has no world: the objects to hold come from its world"
            )
        held = self.__dict__.setdefault("attached", {})
        return world, solver_kinematics(self, depth=8), held
