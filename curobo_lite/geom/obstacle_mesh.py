"""Obstacle surfaces as triangle meshes (trimesh): what the viewer draws and the synthetic depth
camera ray-casts."""

from __future__ import annotations

import numpy as np
import trimesh

from curobo_lite.geom.world import Capsule, Cuboid, Cylinder, Mesh, Obstacle, Sphere
from curobo_lite.types.errors import InputTypeError


def obstacle_mesh(obstacle: Obstacle) -> trimesh.Trimesh:
    """The surface of ``obstacle`` in its own frame (its ``pose`` is not applied): boxes,
    spheres, capsules and cylinders tessellated by trimesh, meshes as given (scale applied)."""
    if isinstance(obstacle, Cuboid):
        return trimesh.creation.box(extents=obstacle.dims)
    if isinstance(obstacle, Sphere):
        return trimesh.creation.icosphere(subdivisions=3, radius=obstacle.radius)
    if isinstance(obstacle, Cylinder):
        return trimesh.creation.cylinder(radius=obstacle.radius, height=obstacle.height)
    if isinstance(obstacle, Capsule):
        base, tip = np.asarray(obstacle.base, float), np.asarray(obstacle.tip, float)
        axis = tip - base
        length = float(np.linalg.norm(axis))
        # trimesh's capsule runs along z, centred: turn it onto base -> tip
        mesh = trimesh.creation.capsule(height=length, radius=obstacle.radius)
        transform = np.eye(4)
        if length > 0.0:
            transform[:3, :3] = trimesh.geometry.align_vectors([0.0, 0.0, 1.0], axis / length)[
                :3, :3
            ]
        transform[:3, 3] = 0.5 * (base + tip)
        return mesh.apply_transform(transform)
    if isinstance(obstacle, Mesh):
        vertices, faces = obstacle.mesh_data()
        return trimesh.Trimesh(vertices, faces, process=False)
    raise InputTypeError(
        f"obstacle: expected a curobo_lite.geom obstacle, received {type(obstacle)}"
    )
