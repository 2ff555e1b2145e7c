"""The collision model of a robot file (cuRobo's keys): collision spheres per link, the sphere
buffer and the self-collision rules; see :class:`RobotCollisionConfig` and the robot-file format
in :mod:`curobo_lite.robot.config`."""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from curobo_lite.config_files import YamlReader, preview_names, read_config_file
from curobo_lite.robot.joints import JointSpec, check_tree_links
from curobo_lite.types.checks import excerpt
from curobo_lite.types.errors import ConfigError

# cuRobo's robot-file keys for the collision model (see RobotCollisionConfig)
COLLISION_KEYS = (
    "collision_spheres",
    "collision_link_names",
    "collision_sphere_buffer",
    "self_collision_ignore",
    "self_collision_buffer",
    "world_collision_fixed_links",
    "extra_collision_spheres",
)

#: largest sphere budget of one ``extra_collision_spheres`` link
MAX_EXTRA_SPHERES = 1024
#: a placeholder sphere (disabled: negative radius) of an ``extra_collision_spheres`` link
DISABLED_SPHERE = [0.0, 0.0, 0.0, -1.0]


@dataclass
class RobotCollisionConfig:
    """Collision spheres of a robot and its self-collision rules (cuRobo's robot-file keys).

    Attributes:
        spheres: ``{link: [[x, y, z, radius], ...]}`` sphere centres in the link frame (metres)
            and radii without ``sphere_buffer``; only the links of ``link_names``.
        link_names: links carrying spheres, in the order their spheres are listed.
        sphere_buffer: metres added to every radius (``collision_sphere_buffer``).
        self_collision_ignore: ``{link: sorted links}`` closed under symmetry.
        self_collision_buffer: ``{link: metres}`` added to the link's radii for self-collision.
        spheres_file: the separate spheres file the spheres were read from, if any.
        extra_spheres: ``{link: count}`` (``extra_collision_spheres``, cuRobo's key): spheres
            reserved for an object attached to the link (``attached_object``), allocated
            disabled (radius -1) after the link's own spheres (a link without spheres joins
            ``link_names``), so that attaching writes into them without rebuilding anything.
        world_collision_fixed_links: check the spheres of links that no active joint moves
            (the base and what is rigidly fixed to it) against the world too. Off by default,
            as MoveIt's allowed-collision matrix leaves the base and the table it stands on
            out: their distance to the world is a constant that no plan can change, and a
            table or stand under the robot would make every state "in collision".
    """

    spheres: dict[str, list[list[float]]]
    link_names: list[str]
    sphere_buffer: float = 0.0
    self_collision_ignore: dict[str, list[str]] = field(default_factory=dict)
    self_collision_buffer: dict[str, float] = field(default_factory=dict)
    spheres_file: str | None = None
    world_collision_fixed_links: bool = False
    extra_spheres: dict[str, int] = field(default_factory=dict)

    @property
    def num_spheres(self) -> int:
        return sum(len(self.spheres[link]) for link in self.link_names)

    def ignores(self, link_a: str, link_b: str) -> bool:
        """Whether the pair is excluded from self-collision checks."""
        return link_b in self.self_collision_ignore.get(link_a, ())

    @classmethod
    def from_dict(
        cls,
        data: Mapping[str, Any],
        source: str = "<dict>",
        base_dir: str | os.PathLike | None = None,
    ) -> RobotCollisionConfig | None:
        """Parse the collision keys of a robot file (other keys are ignored).

        Returns ``None`` when the file has no ``collision_spheres``. Link names are checked
        against the kinematic tree by :class:`RobotConfig`, not here.
        """
        reader = YamlReader(source)
        if data.get("collision_spheres") is None:
            extra = [k for k in COLLISION_KEYS if data.get(k) is not None]
            if extra:
                raise reader.error(extra[0], "given without 'collision_spheres'")
            return None
        raw = data["collision_spheres"]
        spheres_file = None
        sphere_reader = reader
        key = "collision_spheres"
        if isinstance(raw, str):
            path = Path(raw)
            if not path.is_absolute():
                path = Path(base_dir or ".") / path
            if not path.is_file():
                raise reader.error(key, f"spheres file '{path}' does not exist")
            try:
                loaded = read_config_file(path, "spheres")
            except ConfigError as err:
                raise reader.error(key, f"spheres file: {err}") from None
            spheres_file = str(path)
            sphere_reader = YamlReader(spheres_file)
            loaded = sphere_reader.mapping(loaded, "<top level>", ("collision_spheres",))
            raw = loaded["collision_spheres"]
        raw = sphere_reader.mapping(raw, key, (), list(raw) if isinstance(raw, Mapping) else ())
        spheres: dict[str, list[list[float]]] = {}
        for link, entries in raw.items():
            link_key = f"{key}.{link}"
            sphere_reader.string(link, link_key)
            if isinstance(entries, str) or not isinstance(entries, Sequence) or not entries:
                raise sphere_reader.error(
                    link_key, f"expected a non-empty list of spheres, received {excerpt(entries)}"
                )
            rows = []
            for i, entry in enumerate(entries):
                entry_key = f"{link_key}[{i}]"
                entry = sphere_reader.mapping(entry, entry_key, ("center", "radius"))
                center = sphere_reader.vector(entry["center"], f"{entry_key}.center", 3)
                radius = sphere_reader.number(entry["radius"], f"{entry_key}.radius")
                if radius <= 0.0:
                    raise sphere_reader.error(
                        f"{entry_key}.radius", f"expected a radius > 0, received {excerpt(radius)}"
                    )
                rows.append([*center, radius])
            spheres[str(link)] = rows

        extra = reader.mapping(
            data.get("extra_collision_spheres") or {},
            "extra_collision_spheres",
            (),
            list(data.get("extra_collision_spheres") or {})
            if isinstance(data.get("extra_collision_spheres"), Mapping)
            else (),
        )
        extra_spheres: dict[str, int] = {}
        for link, count in extra.items():
            extra_key = f"extra_collision_spheres.{link}"
            reader.string(link, extra_key)
            count = reader.number(count, extra_key, integer=True, low=1, high=MAX_EXTRA_SPHERES)
            extra_spheres[str(link)] = int(count)
            # after the link's own spheres, if any (cuRobo adds them to the link's count)
            spheres.setdefault(str(link), [])
            spheres[str(link)] += [list(DISABLED_SPHERE) for _ in range(int(count))]

        if data.get("collision_link_names") is None:
            link_names = list(spheres)
        else:
            link_names = reader.strings(data["collision_link_names"], "collision_link_names")
            for i, link in enumerate(link_names):
                if link not in spheres:
                    raise reader.error(
                        f"collision_link_names[{i}]",
                        f"link '{link}' has no entry in collision_spheres; links with spheres: "
                        f"{preview_names(list(spheres))}",
                    )
        buffer = 0.0
        if data.get("collision_sphere_buffer") is not None:
            buffer = reader.number(data["collision_sphere_buffer"], "collision_sphere_buffer")
        link_names += [link for link in extra_spheres if link not in link_names]
        for link in link_names:
            for i, row in enumerate(
                spheres[link][: len(spheres[link]) - extra_spheres.get(link, 0)]
            ):
                if row[3] + buffer <= 0.0:
                    raise reader.error(
                        "collision_sphere_buffer",
                        f"buffer {buffer!r} makes sphere {key}.{link}[{i}] (radius {row[3]!r}) "
                        "empty; expected radius + buffer > 0",
                    )

        ignore: dict[str, set[str]] = {}
        if data.get("self_collision_ignore") is not None:
            raw_ignore = data["self_collision_ignore"]
            allowed = list(raw_ignore) if isinstance(raw_ignore, Mapping) else ()
            raw_ignore = reader.mapping(raw_ignore, "self_collision_ignore", (), allowed)
            for link, others in raw_ignore.items():
                entry_key = f"self_collision_ignore.{link}"
                reader.string(link, entry_key)
                others = [] if others is None else reader.strings(others, entry_key)
                for other in others:
                    if other == link:
                        raise reader.error(entry_key, f"link '{link}' ignores itself")
                    ignore.setdefault(link, set()).add(other)
                    ignore.setdefault(other, set()).add(link)
        self_buffer = reader.numbers_by_name(
            data.get("self_collision_buffer"), "self_collision_buffer"
        )
        fixed_links = False
        if data.get("world_collision_fixed_links") is not None:
            fixed_links = reader.boolean(
                data["world_collision_fixed_links"], "world_collision_fixed_links"
            )
        return cls(
            spheres={link: spheres[link] for link in link_names},
            link_names=link_names,
            sphere_buffer=buffer,
            self_collision_ignore={k: sorted(v) for k, v in ignore.items()},
            self_collision_buffer=self_buffer,
            spheres_file=spheres_file,
            world_collision_fixed_links=fixed_links,
            extra_spheres=extra_spheres,
        )

    def to_dict(self) -> dict[str, Any]:
        """The robot-file keys, spheres written inline."""
        own = {
            link: self.spheres[link][: len(self.spheres[link]) - self.extra_spheres.get(link, 0)]
            for link in self.link_names
        }
        links = [link for link in self.link_names if own[link]]
        out: dict[str, Any] = {
            "collision_link_names": links,
            "collision_spheres": {
                link: [{"center": row[:3], "radius": row[3]} for row in own[link]] for link in links
            },
            "collision_sphere_buffer": self.sphere_buffer,
        }
        if self.extra_spheres:
            out["extra_collision_spheres"] = dict(self.extra_spheres)
        if self.self_collision_ignore:
            # each pair once, under the link listed first
            written: dict[str, list[str]] = {}
            seen: set[frozenset[str]] = set()
            for link, others in self.self_collision_ignore.items():
                for other in others:
                    pair = frozenset((link, other))
                    if pair not in seen:
                        seen.add(pair)
                        written.setdefault(link, []).append(other)
            out["self_collision_ignore"] = written
        if self.self_collision_buffer:
            out["self_collision_buffer"] = dict(self.self_collision_buffer)
        if self.world_collision_fixed_links:
            out["world_collision_fixed_links"] = True
        return out

    def check_links(
        self,
        reader: YamlReader,
        links: Collection[str],
        attachments: Mapping[str, tuple[str, np.ndarray]],
        blocked: Mapping[str, JointSpec],
        chain_ends: tuple[str, str],
    ) -> None:
        """Check the links named here against the robot's tree: every link exists, and every
        link with spheres is rigidly attached to the chain ``chain_ends = (base_link,
        ee_link)`` (``attachments`` and ``blocked`` from
        :func:`~curobo_lite.robot.joints.rigid_attachments`)."""
        for link in self.link_names:
            check_tree_links(reader, f"collision_spheres.{link}", [link], links)
            if link not in attachments:
                joint = blocked.get(link)
                why = (
                    f" (joint '{joint.name}' is {joint.type} and not in lock_joints)"
                    if joint is not None
                    else ""
                )
                raise reader.error(
                    f"collision_spheres.{link}",
                    f"link '{link}' is not rigidly attached to the chain from '{chain_ends[0]}' "
                    f"to '{chain_ends[1]}' through fixed or locked joints{why}",
                )
        for link, others in self.self_collision_ignore.items():
            check_tree_links(reader, f"self_collision_ignore.{link}", (link, *others), links)
        for link in self.self_collision_buffer:
            check_tree_links(reader, f"self_collision_buffer.{link}", [link], links)
