"""The dynamics section of a robot file: link masses, centres of mass and inertia tensors, and
joint effort limits (read by physics simulators such as :class:`curobo_lite.sim.MujocoPlant`);
see :class:`RobotDynamicsConfig`."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from curobo_lite.config_files import YamlReader
from curobo_lite.robot.joints import check_tree_links
from curobo_lite.types.checks import excerpt

# order of the six inertia numbers in a robot file (MuJoCo's fullinertia order)
INERTIA_KEYS = ("ixx", "iyy", "izz", "ixy", "ixz", "iyz")


def inertia_matrix_np(values: Sequence[float]) -> np.ndarray:
    """``[3, 3]`` symmetric inertia tensor from ``[ixx, iyy, izz, ixy, ixz, iyz]``."""
    ixx, iyy, izz, ixy, ixz, iyz = (float(v) for v in values)
    return np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])


@dataclass
class LinkInertial:
    """Mass properties of one link, in the link frame.

    Attributes:
        mass: kg, > 0.
        com: ``[3]`` centre of mass (metres).
        inertia: ``[6]`` ``ixx, iyy, izz, ixy, ixz, iyz`` about the centre of mass (kg m^2);
            the tensor is positive definite and its principal moments satisfy the triangle
            inequality (``a + b >= c``), as every rigid body's do.
    """

    mass: float
    com: tuple[float, float, float]
    inertia: tuple[float, float, float, float, float, float]

    def validate(self, reader: YamlReader, key: str) -> None:
        self.mass = reader.number(self.mass, f"{key}.mass")
        if self.mass <= 0.0:
            raise reader.error(
                f"{key}.mass", f"expected a mass > 0 kg, received {excerpt(self.mass)}"
            )
        self.com = tuple(reader.vector(list(self.com), f"{key}.com", 3))
        self.inertia = tuple(reader.vector(list(self.inertia), f"{key}.inertia", 6))
        moments = np.linalg.eigvalsh(inertia_matrix_np(self.inertia))
        if moments[0] <= 0.0:
            raise reader.error(
                f"{key}.inertia",
                f"expected a positive definite tensor [ixx, iyy, izz, ixy, ixz, iyz], received "
                f"{list(self.inertia)} (principal moments {moments.round(8).tolist()})",
            )
        if moments[0] + moments[1] < moments[2] * (1.0 - 1e-6):
            raise reader.error(
                f"{key}.inertia",
                f"principal moments {moments.round(8).tolist()} of {list(self.inertia)} break "
                "the triangle inequality (the two smallest must add up to the largest)",
            )

    def to_dict(self) -> dict[str, Any]:
        return {"mass": self.mass, "com": list(self.com), "inertia": list(self.inertia)}


@dataclass
class RobotDynamicsConfig:
    """Mass properties and actuator limits (the robot file's ``dynamics`` section).

    Attributes:
        link_inertials: ``{link: LinkInertial}``; links without an entry are massless.
        effort_limit: ``[D]`` torque (N m) or force (N) limits of ``joint_names``, ``None``
            when unknown.
    """

    link_inertials: dict[str, LinkInertial] = field(default_factory=dict)
    effort_limit: list[float] | None = None

    @classmethod
    def from_dict(
        cls, data: Any, dof: int | None = None, source: str = "<dict>", key: str = "dynamics"
    ) -> RobotDynamicsConfig:
        """``{link_inertials: {link: {mass, com, inertia}}, effort_limit: [D]}``; ``dof``
        ``None`` leaves the length of ``effort_limit`` to :class:`RobotConfig`'s checks."""
        reader = YamlReader(source)
        data = reader.mapping(data, key, (), ("link_inertials", "effort_limit"))
        inertials: dict[str, LinkInertial] = {}
        raw = data.get("link_inertials") or {}
        raw = reader.mapping(
            raw, f"{key}.link_inertials", (), list(raw) if isinstance(raw, Mapping) else ()
        )
        for link, entry in raw.items():
            entry_key = f"{key}.link_inertials.{link}"
            reader.string(link, entry_key)
            entry = reader.mapping(entry, entry_key, ("mass", "inertia"), ("com",))
            inertial = LinkInertial(
                mass=entry["mass"],
                com=tuple(reader.vector(entry.get("com", [0.0, 0.0, 0.0]), f"{entry_key}.com", 3)),
                inertia=tuple(reader.vector(entry["inertia"], f"{entry_key}.inertia", 6)),
            )
            inertial.validate(reader, entry_key)
            inertials[str(link)] = inertial
        effort = None
        if data.get("effort_limit") is not None:
            effort = reader.vector(data["effort_limit"], f"{key}.effort_limit", dof)
            bad = [i for i, v in enumerate(effort) if v <= 0.0]
            if bad:
                raise reader.error(
                    f"{key}.effort_limit[{bad[0]}]",
                    f"expected a limit > 0, received {excerpt(effort[bad[0]])}",
                )
        return cls(link_inertials=inertials, effort_limit=effort)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "link_inertials": {k: v.to_dict() for k, v in self.link_inertials.items()}
        }
        if self.effort_limit is not None:
            out["effort_limit"] = list(self.effort_limit)
        return out

    def check_links(self, reader: YamlReader, links: Collection[str], dof: int) -> None:
        """Check against the robot: the inertials name links of the tree (and are valid) and
        ``effort_limit`` has one entry per joint."""
        for link, inertial in self.link_inertials.items():
            key = f"dynamics.link_inertials.{link}"
            check_tree_links(reader, key, [link], links)
            inertial.validate(reader, key)
        if self.effort_limit is not None and len(self.effort_limit) != dof:
            raise reader.error(
                "dynamics.effort_limit",
                f"expected {dof} numbers (one per joint), received {len(self.effort_limit)}",
            )
