"""Geometry: the world model (obstacles, world files), sphere-vs-world and self-collision
queries, voxel signed-distance worlds from point clouds and depth images, exact shape-vs-world
distances (coal, imported on first use)."""

from curobo_lite.geom.exact_collision import ExactCollisionChecker, ExactDistance, LinkShape
from curobo_lite.geom.self_collision import (
    SelfCollisionChecker,
    SelfCollisionDistance,
    SelfCollisionModel,
    self_collision_distance,
)
from curobo_lite.geom.voxel_world import VoxelWorld
from curobo_lite.geom.world import (
    Capsule,
    Cuboid,
    Cylinder,
    Mesh,
    Obstacle,
    Sphere,
    WorldConfig,
    available_worlds,
    resolve_world_file,
    world_config_dirs,
)
from curobo_lite.geom.world_collision import WorldCollision, WorldDistance

__all__ = [
    "Capsule",
    "Cuboid",
    "Cylinder",
    "ExactCollisionChecker",
    "ExactDistance",
    "LinkShape",
    "Mesh",
    "Obstacle",
    "SelfCollisionChecker",
    "SelfCollisionDistance",
    "SelfCollisionModel",
    "Sphere",
    "VoxelWorld",
    "WorldCollision",
    "WorldConfig",
    "WorldDistance",
    "available_worlds",
    "resolve_world_file",
    "self_collision_distance",
    "world_config_dirs",
]
