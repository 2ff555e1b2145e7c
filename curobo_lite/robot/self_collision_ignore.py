"""Link pairs to leave out of a robot's self-collision checks, found by sampling
configurations (adjacent links, pairs whose spheres always overlap, and with python-fcl pairs
whose meshes never collide), as cuRobo's robot tooling does.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from curobo_lite.robot.config import RobotConfig
from curobo_lite.robot.joints import link_poses
from curobo_lite.types.errors import InputValueError


def suggest_self_collision_ignore(
    config: RobotConfig,
    num_samples: int = 20000,
    seed: int = 0,
    meshes: dict[str, list] | None = None,
    mesh_samples: int = 5000,
) -> tuple[dict[str, list[str]], dict[str, Any]]:
    """Link pairs to leave out of self-collision checks, by sampling configurations.

    A pair of collision links is ignored when the links are joined by a joint (adjacent, the
    fixed joints between them folded) or when their spheres overlap at every one of
    ``num_samples`` configurations drawn uniformly within the position limits (a pair that
    always overlaps cannot be separated, so checking it only blocks planning).
    With ``meshes`` (``{link: [trimesh in the link frame]}``, needs python-fcl), a pair two
    moving joints apart whose spheres sometimes overlap is also ignored when its meshes collide
    in none of the first ``mesh_samples`` configurations: the link between them keeps them
    apart, and the overlap of their spheres is the approximation's, not the robot's.

    Returns:
        ``(ignore, report)``: ``{link: [links]}`` (each pair once, under the link that comes
        first in ``collision_link_names``), and numbers behind it (per pair: fraction of
        samples in collision).
    """
    import torch

    from curobo_lite.robot.kinematics import Kinematics
    from curobo_lite.types import TensorDeviceType

    if config.collision is None:
        raise InputValueError(f"robot '{config.name}' has no collision spheres")
    ta = TensorDeviceType(dtype=torch.float64)
    collision = config.collision
    stripped = config.to(ta)
    kinematics = Kinematics(stripped, backend="torch")
    generator = torch.Generator().manual_seed(seed)
    low, high = stripped.joint_limits.position
    q = low + torch.rand(num_samples, stripped.dof, generator=generator, dtype=ta.dtype) * (
        high - low
    )
    with torch.no_grad():
        spheres = kinematics.forward(q).link_spheres
    names = kinematics.sphere_link_names
    links = list(collision.link_names)
    index = {link: torch.tensor([i for i, n in enumerate(names) if n == link]) for link in links}

    # rigid bodies are numbered by the moving chain joint that carries them (-1: the base);
    # adjacent links are on the same body or on bodies one moving joint apart
    frame_of, count = {config.base_link: -1}, -1
    for joint in config.chain:
        count += int(joint.is_moving)
        frame_of[joint.child] = count
    body = {link: frame_of[config.rigid_attachment(link)[0]] for link in links}

    ignore: dict[str, list[str]] = {}
    fractions: dict[str, float] = {}
    reasons: dict[str, str] = {}
    for a_i, a in enumerate(links):
        for b in links[a_i + 1 :]:
            adjacent = abs(body[a] - body[b]) <= 1
            sa, sb = spheres[:, index[a]], spheres[:, index[b]]
            gap = (
                torch.cdist(sa[..., :3], sb[..., :3])
                - sa[..., 3][..., :, None]
                - sb[..., 3][..., None, :]
            )
            overlap = gap.flatten(1).min(1).values < 0
            colliding = overlap.double().mean().item()
            fractions[f"{a}/{b}"] = colliding
            reason = "adjacent" if adjacent else "always overlapping" if colliding == 1.0 else None
            if reason is None and meshes is not None and abs(body[a] - body[b]) == 2:
                if overlap.any() and not _meshes_ever_collide(
                    config, q[:mesh_samples], meshes, a, b
                ):
                    reason = f"meshes never collide in {min(mesh_samples, num_samples)} samples"
            if reason is not None:
                ignore.setdefault(a, []).append(b)
                reasons[f"{a}/{b}"] = reason
    return ignore, {"fractions": fractions, "reasons": reasons, "num_samples": num_samples}


def _meshes_ever_collide(config: RobotConfig, q, meshes: dict[str, list], a: str, b: str) -> bool:
    """Whether the meshes of links ``a`` and ``b`` collide at any configuration of ``q``."""
    try:
        import fcl
    except ImportError as err:
        raise ImportError("mesh collision checks need python-fcl: pip install python-fcl") from err

    def model(mesh):
        bvh = fcl.BVHModel()
        bvh.beginModel(len(mesh.vertices), len(mesh.faces))
        bvh.addSubModel(np.asarray(mesh.vertices), np.asarray(mesh.faces))
        bvh.endModel()
        return bvh

    models = {link: [model(m) for m in meshes[link]] for link in (a, b)}
    request = fcl.CollisionRequest()
    for row in q.tolist():
        values = {**config.lock_joints, **dict(zip(config.joint_names, row))}
        poses = link_poses(config.joints, config.base_link, values)
        objects = {
            link: [
                fcl.CollisionObject(m, fcl.Transform(poses[link][:3, :3], poses[link][:3, 3]))
                for m in models[link]
            ]
            for link in (a, b)
        }
        for oa in objects[a]:
            for ob in objects[b]:
                if fcl.collide(oa, ob, request, fcl.CollisionResult()) > 0:
                    return True
    return False
