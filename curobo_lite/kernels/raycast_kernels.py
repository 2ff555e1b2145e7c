"""Warp kernel of the synthetic depth camera (:mod:`curobo_lite.geom.depth_camera`): one thread
per pixel casts its ray against a ``wp.Mesh`` (``wp.mesh_query_ray``, a BVH traversal)."""

from __future__ import annotations

import warp as wp

wp.config.log_level = 30  # WARNING
wp.set_module_options({"enable_backward": False})


@wp.kernel
def render_depth(
    mesh: wp.uint64,
    rotation: wp.mat33f,
    position: wp.vec3f,
    k_inv: wp.mat33f,
    max_range: float,
    depth: wp.array2d(dtype=wp.float32),
):
    """``depth[v, u]``: depth along the optical axis (z of the camera frame, metres) of the
    first surface that pixel ``(u, v)``'s ray meets within ``max_range`` along the ray, 0 where
    it meets none. ``rotation``/``position``: the camera frame (OpenCV axes) in the world;
    ``k_inv``: the inverse pinhole matrix."""
    v, u = wp.tid()
    ray = k_inv @ wp.vec3f(float(u), float(v), 1.0)
    direction = rotation @ ray
    norm = wp.length(direction)
    hit = wp.mesh_query_ray(mesh, position, direction / norm, max_range)
    value = wp.float32(0.0)
    if hit.result:
        value = hit.t / norm * ray[2]
    depth[v, u] = value
