"""What a dataset is: its run configuration (:class:`DatasetConfig`), the deterministic layout
of problems into shards, and the file names in a dataset folder.

A dataset of ``problems`` problems over ``families`` is laid out by problem id ``i`` alone:
problem ``i`` is problem ``i // F`` of family ``families[i % F]`` (``F`` families, round
robin, so every shard mixes them) under ``seed``, made by
:class:`~curobo_lite.scenes.ProblemGenerator`; shard ``k`` holds ids
``[k * shard_size, (k + 1) * shard_size)``. Nothing else enters: a shard is a function of
(configuration, seed, shard index), and a rerun or another machine makes the same problems.
"""

from __future__ import annotations

import functools
import json
import platform
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from curobo_lite.opt.options import as_int, as_mapping, check_keys, options_from_dict
from curobo_lite.scenes import FAMILIES
from curobo_lite.types.checks import received
from curobo_lite.types.errors import InputTypeError, InputValueError

#: Bumped when the shard schema or the layout changes (a reader refuses other versions).
FORMAT_VERSION = 1
#: The run configuration, written once when a dataset folder is started.
CONFIG_FILE = "dataset.json"
#: One JSON line per finished shard (appended by the driver after the shard's rename).
MANIFEST_FILE = "manifest.jsonl"
#: The shards that kept failing in the last run (rewritten by every run; absent when none).
FAILED_FILE = "failed.json"
#: ProblemGenerator options a dataset may set.
GENERATOR_KEYS = ("ik_seeds", "max_scenes", "dls_iterations")


def shard_file(shard: int) -> str:
    """The file name of shard ``shard`` (relative to the dataset folder)."""
    return f"shard-{shard:06d}.parquet"


@dataclass(frozen=True)
class ProblemSlot:
    """Where problem ``problem_id`` comes from: problem ``index`` of ``family`` under the
    dataset's seed."""

    problem_id: int
    family: str
    index: int


@dataclass
class DatasetConfig:
    """A dataset's identity: everything that decides its problems and how they are solved.

    Attributes:
        families: MotionBenchMaker families (:data:`~curobo_lite.scenes.FAMILIES`), in order.
        problems: problems in all (ids ``0 .. problems-1``).
        seed: the generator's seed.
        shard_size: problems per shard (the unit of work, retry and resume).
        robot: the robot (bundled name; the generator's grasps are ``panda_hand`` poses).
        generator: :class:`~curobo_lite.scenes.ProblemGenerator` options
            (:data:`GENERATOR_KEYS`).
        motion_gen: :meth:`~curobo_lite.wrap.MotionGen.from_config` options.
    """

    section = "dataset"

    families: list[str] = field(default_factory=lambda: list(FAMILIES))
    problems: int = 100
    seed: int = 0
    shard_size: int = 16
    robot: str = "franka"
    generator: dict[str, Any] = field(default_factory=dict)
    motion_gen: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        s = self.section
        if isinstance(self.families, str) or not isinstance(self.families, (list, tuple)):
            raise InputTypeError(
                f"{s}.families: expected a list of names, {received(self.families)}"
            )
        self.families = list(self.families)
        unknown = [f for f in self.families if f not in FAMILIES]
        if not self.families or unknown:
            raise InputValueError(
                f"{s}.families: expected one or more of {list(FAMILIES)}, "
                f"received {self.families!r}"
            )
        if len(set(self.families)) != len(self.families):
            raise InputValueError(
                f"{s}.families: expected distinct names, received {self.families!r}"
            )
        self.problems = as_int(s, "problems", self.problems, 1)
        self.seed = as_int(s, "seed", self.seed, 0)
        self.shard_size = as_int(s, "shard_size", self.shard_size, 1)
        if not isinstance(self.robot, str) or not self.robot:
            raise InputTypeError(f"{s}.robot: expected a robot name, {received(self.robot)}")
        self.generator = as_mapping(s, "generator", self.generator)
        check_keys(f"{s}.generator", self.generator, GENERATOR_KEYS)
        self.motion_gen = as_mapping(s, "motion_gen", self.motion_gen)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> DatasetConfig:
        return options_from_dict(cls, data)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def num_shards(self) -> int:
        return -(-self.problems // self.shard_size)

    def slot(self, problem_id: int) -> ProblemSlot:
        """Where problem ``problem_id`` comes from (the layout of the module docstring)."""
        count = len(self.families)
        return ProblemSlot(problem_id, self.families[problem_id % count], problem_id // count)

    def shard_ids(self, shard: int) -> range:
        """The problem ids of shard ``shard``."""
        if not 0 <= shard < self.num_shards:
            raise InputValueError(f"shard: expected 0 .. {self.num_shards - 1}, received {shard!r}")
        first = shard * self.shard_size
        return range(first, min(first + self.shard_size, self.problems))


@functools.cache
def versions() -> dict[str, str]:
    """Versions of what made a shard (recorded in its manifest line; looked up once)."""
    found = {"python": platform.python_version(), "format": str(FORMAT_VERSION)}
    for name in ("curobo_lite", "torch", "warp-lang", "ray", "pyarrow", "numpy"):
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = "absent"
    return found


def read_config(folder: str | Path) -> DatasetConfig:
    """The :class:`DatasetConfig` stored in a dataset folder."""
    path = Path(folder) / CONFIG_FILE
    if not path.is_file():
        raise InputValueError(f"dataset folder: expected {path} (not a dataset folder?)")
    data = json.loads(path.read_text(encoding="utf-8"))
    if data.get("format") != FORMAT_VERSION:
        raise InputValueError(
            f"{path}: expected format {FORMAT_VERSION}, received {data.get('format')!r}"
        )
    return DatasetConfig.from_dict(data["config"])


def config_text(config: DatasetConfig) -> str:
    """The contents of :data:`CONFIG_FILE` for ``config``."""
    return json.dumps({"format": FORMAT_VERSION, "config": config.to_dict()}, indent=2) + "\n"


def check_same_config(stored: DatasetConfig, wanted: DatasetConfig, folder: Path) -> None:
    """Refuse to continue a dataset under another configuration (naming the first field that
    differs), before anything is written."""
    for name, value in wanted.to_dict().items():
        if stored.to_dict()[name] != value:
            raise InputValueError(
                f"{name}: {folder} holds a dataset made with {name}={stored.to_dict()[name]!r}, "
                f"received {value!r} (use another --out, or the same arguments to resume)"
            )
