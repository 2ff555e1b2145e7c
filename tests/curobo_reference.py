"""Independent references for the cuRobo-compatibility tests: forward kinematics of a URDF
(read here with xml.etree, pinocchio when it is installed), collision spheres placed with it,
signed distances to boxes, and cuRobo's collision costs, all in numpy."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import yaml


def _rpy_matrix(rpy) -> np.ndarray:
    r, p, y = rpy
    cr, sr = math.cos(r), math.sin(r)
    cp, sp = math.cos(p), math.sin(p)
    cy, sy = math.cos(y), math.sin(y)
    return np.array(
        [
            [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
            [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
            [-sp, cp * sr, cp * cr],
        ]
    )


def _axis_angle(axis, angle) -> np.ndarray:
    a = np.asarray(axis, float)
    a = a / np.linalg.norm(a)
    k = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    return np.eye(3) + math.sin(angle) * k + (1 - math.cos(angle)) * (k @ k)


def _numbers(text: str | None, default) -> list[float]:
    return [float(v) for v in text.split()] if text else list(default)


class UrdfFK:
    """Forward kinematics of every link of a URDF, from its XML (no curobo_lite code)."""

    def __init__(self, path: str | Path) -> None:
        root = ET.parse(path).getroot()
        self.joints = []
        for j in root.findall("joint"):
            origin = j.find("origin")
            axis = j.find("axis")
            mimic = j.find("mimic")
            self.joints.append(
                {
                    "name": j.get("name"),
                    "type": j.get("type"),
                    "parent": j.find("parent").get("link"),
                    "child": j.find("child").get("link"),
                    "xyz": _numbers(origin.get("xyz") if origin is not None else None, (0, 0, 0)),
                    "rpy": _numbers(origin.get("rpy") if origin is not None else None, (0, 0, 0)),
                    "axis": _numbers(axis.get("xyz") if axis is not None else None, (1, 0, 0)),
                    "mimic": None
                    if mimic is None
                    else (
                        mimic.get("joint"),
                        float(mimic.get("multiplier", 1)),
                        float(mimic.get("offset", 0)),
                    ),
                }
            )
        self.limits = {}
        for j in root.findall("joint"):
            limit = j.find("limit")
            if limit is not None:
                self.limits[j.get("name")] = (
                    float(limit.get("lower", "nan")),
                    float(limit.get("upper", "nan")),
                    float(limit.get("velocity", "nan")),
                )

    def link_transforms(self, base: str, values: dict[str, float]) -> dict[str, np.ndarray]:
        """``{link: T [4, 4]}`` in ``base``'s frame for joint ``values`` (missing: 0)."""
        out = {base: np.eye(4)}
        pending = list(self.joints)
        while pending:
            progressed = False
            for j in list(pending):
                if j["parent"] not in out:
                    continue
                t = np.eye(4)
                t[:3, :3] = _rpy_matrix(j["rpy"])
                t[:3, 3] = j["xyz"]
                q = values.get(j["name"], 0.0)
                if j["mimic"] is not None:
                    q = j["mimic"][1] * values.get(j["mimic"][0], 0.0) + j["mimic"][2]
                motion = np.eye(4)
                if j["type"] in ("revolute", "continuous"):
                    motion[:3, :3] = _axis_angle(j["axis"], q)
                elif j["type"] == "prismatic":
                    motion[:3, 3] = np.asarray(j["axis"]) / np.linalg.norm(j["axis"]) * q
                out[j["child"]] = out[j["parent"]] @ t @ motion
                pending.remove(j)
                progressed = True
            if not progressed:
                break
        return out


def pinocchio_fk(urdf: str | Path, link: str, names: list[str], q: np.ndarray):
    """``T [4, 4]`` of ``link`` by pinocchio (``None`` when pinocchio is not installed). The
    URDF's root must be the base link."""
    try:
        import pinocchio as pin
    except ImportError:
        return None
    model = pin.buildModelFromUrdf(str(urdf))
    data = model.createData()
    config = pin.neutral(model)
    for name, value in zip(names, q):
        jid = model.getJointId(name)
        config[model.joints[jid].idx_q] = value
    pin.forwardKinematics(model, data, config)
    pin.updateFramePlacements(model, data)
    return data.oMf[model.getFrameId(link)].homogeneous


def matrix_to_quat_wxyz(m: np.ndarray) -> np.ndarray:
    """Unit quaternion (w >= 0) of a rotation matrix."""
    w = math.sqrt(max(0.0, 1 + m[0, 0] + m[1, 1] + m[2, 2])) / 2
    x = math.copysign(math.sqrt(max(0.0, 1 + m[0, 0] - m[1, 1] - m[2, 2])) / 2, m[2, 1] - m[1, 2])
    y = math.copysign(math.sqrt(max(0.0, 1 - m[0, 0] + m[1, 1] - m[2, 2])) / 2, m[0, 2] - m[2, 0])
    z = math.copysign(math.sqrt(max(0.0, 1 - m[0, 0] - m[1, 1] + m[2, 2])) / 2, m[1, 0] - m[0, 1])
    q = np.array([w, x, y, z])
    q /= np.linalg.norm(q)
    return q if q[0] >= 0 else -q


def rotation_angle(q1: np.ndarray, q2: np.ndarray) -> float:
    """Angle (rad) between two unit quaternions (from the chord, well conditioned near 0)."""
    chord = min(np.linalg.norm(q1 - q2), np.linalg.norm(q1 + q2))
    return 4 * math.asin(min(1.0, chord / 2))


def curobo_spheres(robot_file: str | Path) -> tuple[list[str], np.ndarray, float, dict, dict]:
    """From a cuRobo robot file (inline spheres): per sphere its link and ``[x, y, z, r]`` in
    the link frame, the global buffer, the self-collision ignore pairs and buffers."""
    kin = yaml.safe_load(Path(robot_file).read_text())["robot_cfg"]["kinematics"]
    links, rows = [], []
    for link in kin["collision_link_names"]:
        for s in kin["collision_spheres"][link]:
            if s["radius"] > 0:
                links.append(link)
                rows.append([*s["center"], s["radius"]])
    return (
        links,
        np.asarray(rows, float),
        float(kin.get("collision_sphere_buffer") or 0.0),
        kin.get("self_collision_ignore") or {},
        kin.get("self_collision_buffer") or {},
    )


def place_spheres(transforms: dict[str, np.ndarray], links: list[str], local: np.ndarray):
    """``[N, 4]`` sphere centres in the base frame (radius column unchanged)."""
    out = local.copy()
    for i, link in enumerate(links):
        out[i, :3] = transforms[link][:3, :3] @ local[i, :3] + transforms[link][:3, 3]
    return out


def box_signed_distance(points: np.ndarray, centre, dims) -> np.ndarray:
    """Signed distance of ``points [..., 3]`` to an axis-aligned box (negative inside)."""
    d = np.abs(points - np.asarray(centre, float)) - np.asarray(dims, float) / 2
    outside = np.linalg.norm(np.maximum(d, 0.0), axis=-1)
    inside = np.minimum(d.max(-1), 0.0)
    return outside + inside


def curobo_world_cost(signed: np.ndarray, eta: float) -> np.ndarray:
    """cuRobo's per-sphere world cost of signed distances (its sphere-OBB kernel): with
    ``p = eta - signed``: ``p - eta / 2`` past ``eta``, ``p^2 / (2 eta)`` inside ``(0, eta]``,
    else 0 (``eta = 0``: the penetration depth)."""
    p = eta - signed
    if eta == 0.0:
        return np.maximum(p, 0.0)
    return np.where(p > eta, p - 0.5 * eta, np.where(p > 0, 0.5 / eta * p * p, 0.0))


def self_penetration(spheres: np.ndarray, links: list[str], ignore: dict, buffers: dict) -> float:
    """Deepest overlap of two spheres on different links that are not ignored (0 when none),
    each link's self-collision buffer added to its radii."""
    ignored = {frozenset((a, b)) for a, others in ignore.items() for b in others}
    names = sorted(set(links))
    allowed = np.array(
        [[a != b and frozenset((a, b)) not in ignored for b in names] for a in names]
    )
    index = np.array([names.index(link) for link in links])
    pair_ok = allowed[index[:, None], index[None, :]]
    reach = spheres[:, 3] + np.array([buffers.get(link, 0.0) for link in links])
    gap = np.linalg.norm(spheres[:, None, :3] - spheres[None, :, :3], axis=-1)
    overlap = reach[:, None] + reach[None, :] - gap
    return max(0.0, float(overlap[pair_ok].max(initial=0.0)))
