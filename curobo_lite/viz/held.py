"""Objects the robot holds, as the viewer draws them: their true shapes riding on the holding
link, and the link's reserved collision spheres fitted to them.

:class:`HeldObject` takes what a solver's ``attach_objects_to_robot`` returns (anything with
``link_name``, ``object_names``, ``spheres [n, 4]`` and ``shapes``, each shape a mesh with
``vertices`` and ``faces`` in the link frame). In a plan, the object may be held for some rows
only (a pick and place): before the first held row it stands where the hand takes it, after
the last where the hand leaves it, so it is drawn at the link's pose of the nearest held row
(:func:`object_rows`), and the link's spheres are shown only in held rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import trimesh

from curobo_lite.robot import Kinematics
from curobo_lite.types import matrix_to_quat, quat_to_matrix
from curobo_lite.types.errors import InputValueError

#: colour of a held object's true shape
HELD_COLOR = (70, 120, 220)


@dataclass
class HeldObject:
    """What one link holds, in the link's frame.

    Attributes:
        link_name: the holding link (its reserved spheres carry the object).
        names: the objects' names.
        spheres: ``[n, 4]`` sphere centres and radii.
        meshes: the objects' true shapes.
    """

    link_name: str
    names: list[str]
    spheres: torch.Tensor
    meshes: list[trimesh.Trimesh]

    @classmethod
    def from_attached(cls, held: Any) -> HeldObject:
        """From an ``AttachedObjects`` (``MotionGen.attach_objects_to_robot``'s return)."""
        missing = [
            k for k in ("link_name", "object_names", "spheres", "shapes") if not hasattr(held, k)
        ]
        if missing:
            raise InputValueError(
                f"held: expected what attach_objects_to_robot returns (link_name, object_names, "
                f"spheres, shapes), received a {type(held).__name__} without {missing}"
            )
        meshes = []
        for shape in held.shapes:
            mesh = trimesh.Trimesh(
                np.asarray(shape.vertices), np.asarray(shape.faces), process=False
            )
            mesh.apply_transform(np.asarray(getattr(shape, "origin", np.eye(4))))
            meshes.append(mesh)
        spheres = torch.as_tensor(held.spheres, dtype=torch.float64).cpu()
        return cls(held.link_name, list(held.object_names), spheres, meshes)


@torch.no_grad()
def link_poses(kinematics: Kinematics, q: torch.Tensor, link: str) -> np.ndarray:
    """``[T, 4, 4]`` poses (base frame) of ``link`` (a link that carries spheres: on the chain
    or fixed to it) at ``q [T, D]``."""
    frames = kinematics.tables.sphere_link_frames
    if link not in frames:
        raise InputValueError(f"link_name: expected a link with spheres, received {link!r}")
    frame, to_frame = frames[link]
    to_frame = np.asarray(to_frame, np.float64)
    if frame < 0:  # fixed to the base
        return np.repeat(to_frame[None], q.shape[0], axis=0)
    state = kinematics.forward(q, spheres=False)
    out = np.repeat(np.eye(4)[None], q.shape[0], axis=0)
    out[:, :3, :3] = quat_to_matrix(state.link_quaternion[:, frame].double().cpu()).numpy()
    out[:, :3, 3] = state.link_position[:, frame].double().cpu().numpy()
    return out @ to_frame


def matrix_wxyz(matrix: np.ndarray) -> np.ndarray:
    """``[4]`` quaternion (wxyz, float64) of the rotation of ``matrix [4, 4]``."""
    return matrix_to_quat(torch.as_tensor(matrix[:3, :3], dtype=torch.float64)).numpy()


def held_mask(rows: Any, count: int) -> np.ndarray:
    """``[count]`` bool: which plan rows hold the object. ``rows``: ``None`` (all), a
    ``(first, end)`` pair, or ``[count]`` bools."""
    if rows is None:
        return np.ones(count, dtype=bool)
    if isinstance(rows, tuple) and len(rows) == 2:
        first, end = (int(v) for v in rows)
        if not 0 <= first < end <= count:
            raise InputValueError(
                f"held_rows: expected (first, end) with 0 <= first < end <= {count}, received "
                f"{rows}"
            )
        mask = np.zeros(count, dtype=bool)
        mask[first:end] = True
        return mask
    mask = np.asarray(rows, dtype=bool).reshape(-1)
    if mask.shape[0] != count or not mask.any():
        raise InputValueError(
            f"held_rows: expected {count} bools with at least one True, a (first, end) pair or "
            f"None, received {mask.shape[0]} values ({int(mask.sum())} True)"
        )
    return mask


def object_rows(mask: np.ndarray) -> np.ndarray:
    """``[T]`` per row, the held row whose link pose places the object: the row itself when
    held, else the last held row before it, or the first held row (before any)."""
    index = np.where(mask, np.arange(mask.shape[0]), -1)
    index = np.maximum.accumulate(index)
    first = int(np.argmax(mask))
    return np.where(index < 0, first, index)
