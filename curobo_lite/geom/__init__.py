"""Geometry queries: collision distances and costs."""

from curobo_lite.geom.self_collision import *  # noqa: F403  (SelfCollisionChecker, ...)
