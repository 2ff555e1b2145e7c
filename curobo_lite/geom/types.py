"""cuRobo's ``curobo.geom.types`` names: the world and its obstacles."""

from curobo_lite.geom.world import Capsule, Cuboid, Cylinder, Mesh, Obstacle, Sphere, WorldConfig

__all__ = ["Capsule", "Cuboid", "Cylinder", "Mesh", "Obstacle", "Sphere", "WorldConfig"]
