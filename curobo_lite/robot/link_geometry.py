"""The collision geometry of a URDF's links as trimesh meshes, in each link's frame.

:func:`load_urdf_geometry` reads every ``<collision>`` element (meshes with their scale,
``<box>``, ``<cylinder>`` and ``<sphere>`` primitives) and applies its ``<origin>``; the
sphere fit (:mod:`curobo_lite.robot.sphere_fit`) covers these meshes with spheres.
:func:`load_urdf_shapes` reads the same elements but keeps the primitives as primitives, for
the exact collision checks (:mod:`curobo_lite.geom.exact_collision`).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from curobo_lite.robot.urdf import read_urdf
from curobo_lite.types.errors import InputValueError


def require_trimesh():
    """The trimesh module, or an ImportError that says how to install it."""
    try:
        import trimesh
    except ImportError as err:
        raise ImportError(
            "sphere fitting needs the 'trimesh' package: pip install trimesh"
        ) from err
    return trimesh


@dataclass
class LinkGeometry:
    """One solid collision piece of a URDF link.

    Attributes:
        link: the URDF link it belongs to.
        mesh: ``trimesh.Trimesh`` in the link frame (collision origin and mesh scale applied).
        description: where it came from (mesh file and scale, or the primitive).
    """

    link: str
    mesh: Any
    description: str


def _clean(mesh):
    """Merge duplicated vertices (OBJ files split them per face) and drop degenerate faces."""
    mesh.merge_vertices(merge_tex=True, merge_norm=True)
    mesh.update_faces(mesh.nondegenerate_faces())
    mesh.remove_unreferenced_vertices()
    return mesh


def _load_mesh(trimesh, element, urdf_dir: Path):
    """``(path, mesh, scale)`` of a URDF ``<mesh>`` element: the file resolved, cleaned, scaled
    (a mirroring scale turns the faces back outward); ``scale`` is ``None`` or ``[3]``."""
    path = _resolve_mesh_file(element.filename, urdf_dir)
    mesh = _clean(trimesh.load(str(path), force="mesh"))
    scale = element.scale
    if scale is not None:
        scale = np.broadcast_to(np.asarray(scale, dtype=np.float64), (3,))
        mesh.apply_scale(scale)
        if np.prod(scale) < 0:
            mesh.invert()
    return path, mesh, scale


def _resolve_mesh_file(filename: str, urdf_dir: Path) -> Path:
    name = re.sub(r"^(package|file)://", "", filename)
    path = Path(name)
    if path.is_absolute() and path.is_file():
        return path
    # package://pkg/rest: try the path relative to the URDF and to its ancestors, then without
    # the package name
    parts = path.parts
    for base in (urdf_dir, *urdf_dir.parents):
        for k in range(len(parts)):
            candidate = base.joinpath(*parts[k:])
            if candidate.is_file():
                return candidate
    raise InputValueError(f"mesh file '{filename}' not found (searched from {urdf_dir})")


def load_urdf_geometry(urdf_path: str | os.PathLike) -> dict[str, list[LinkGeometry]]:
    """Collision geometry of every link of a URDF, in each link's frame.

    Meshes are loaded with trimesh (``<mesh scale>`` applied); ``<box>``, ``<cylinder>`` and
    ``<sphere>`` primitives become meshes (64-segment cylinders, subdivided icospheres).
    The ``<collision><origin>`` transform is applied. Links without collision geometry are
    left out.
    """
    trimesh = require_trimesh()
    urdf_path = Path(urdf_path)
    if not urdf_path.is_file():
        raise InputValueError(f"{urdf_path}: URDF file does not exist")
    urdf = read_urdf(urdf_path)
    out: dict[str, list[LinkGeometry]] = {}
    for link in urdf.robot.links:
        for collision in link.collisions:
            geometry = collision.geometry
            if geometry.mesh is not None:
                path, mesh, scale = _load_mesh(trimesh, geometry.mesh, urdf_path.parent)
                description = f"mesh {path.name}" + (
                    f" (scale {list(map(float, scale))})" if scale is not None else ""
                )
            elif geometry.box is not None:
                size = [float(v) for v in geometry.box.size]
                mesh = trimesh.creation.box(extents=size)
                description = f"box {size}"
            elif geometry.cylinder is not None:
                radius, length = float(geometry.cylinder.radius), float(geometry.cylinder.length)
                mesh = trimesh.creation.cylinder(radius=radius, height=length, sections=64)
                description = f"cylinder radius {radius} length {length}"
            elif geometry.sphere is not None:
                radius = float(geometry.sphere.radius)
                mesh = trimesh.creation.icosphere(subdivisions=3, radius=radius)
                description = f"sphere radius {radius}"
            else:
                continue
            if collision.origin is not None:
                mesh.apply_transform(np.asarray(collision.origin, dtype=np.float64))
            out.setdefault(link.name, []).append(
                LinkGeometry(link=link.name, mesh=mesh, description=description)
            )
    return out


def load_urdf_shapes(urdf_path: str | os.PathLike) -> dict[str, list[dict[str, Any]]]:
    """The ``<collision>`` elements of every link of a URDF, primitives kept exact.

    Returns ``{link: [shape, ...]}`` (links without collision geometry left out), each shape a
    dict with ``kind`` (``"box"``, ``"sphere"``, ``"cylinder"`` or ``"mesh"``), ``origin``
    (``[4, 4]`` float64, the element's ``<origin>`` in the link frame), ``description``, and
    ``size`` ``[3]`` (box, full edge lengths), ``radius`` (sphere, cylinder), ``length``
    (cylinder, along local z) or ``vertices [V, 3]`` float64 / ``faces [F, 3]`` int64 (mesh,
    ``<mesh scale>`` applied, its own origin not). These are the keyword arguments of
    :class:`curobo_lite.geom.exact_collision.LinkShape`.
    """
    trimesh = require_trimesh()
    urdf_path = Path(urdf_path)
    if not urdf_path.is_file():
        raise InputValueError(f"{urdf_path}: URDF file does not exist")
    urdf = read_urdf(urdf_path)
    out: dict[str, list[dict[str, Any]]] = {}
    for link in urdf.robot.links:
        for collision in link.collisions:
            geometry = collision.geometry
            origin = (
                np.eye(4)
                if collision.origin is None
                else np.asarray(collision.origin, dtype=np.float64)
            )
            if geometry.mesh is not None:
                path, mesh, scale = _load_mesh(trimesh, geometry.mesh, urdf_path.parent)
                shape = {
                    "kind": "mesh",
                    "vertices": np.asarray(mesh.vertices, dtype=np.float64),
                    "faces": np.asarray(mesh.faces, dtype=np.int64),
                    "description": f"mesh {path.name}",
                }
            elif geometry.box is not None:
                size = [float(v) for v in geometry.box.size]
                shape = {"kind": "box", "size": size, "description": f"box {size}"}
            elif geometry.cylinder is not None:
                radius, length = float(geometry.cylinder.radius), float(geometry.cylinder.length)
                shape = {
                    "kind": "cylinder",
                    "radius": radius,
                    "length": length,
                    "description": f"cylinder radius {radius} length {length}",
                }
            elif geometry.sphere is not None:
                radius = float(geometry.sphere.radius)
                shape = {"kind": "sphere", "radius": radius, "description": f"sphere {radius}"}
            else:
                continue
            shape["origin"] = origin
            out.setdefault(link.name, []).append(shape)
    return out
