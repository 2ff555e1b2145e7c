"""Geometry: the world model (obstacles, world files) and sphere-vs-world collision queries."""

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
    "Mesh",
    "Obstacle",
    "Sphere",
    "WorldCollision",
    "WorldConfig",
    "WorldDistance",
    "available_worlds",
    "resolve_world_file",
    "world_config_dirs",
]
