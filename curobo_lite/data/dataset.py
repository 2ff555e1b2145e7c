"""Reading a dataset folder for training: :func:`load_dataset` -> a ``torch`` ``Dataset``.

Only the shards with a manifest line are read (a file written by a driver that was killed
before recording it is not part of the dataset until a rerun records it). Shards are read
lazily, a few kept in memory, so a large dataset costs memory by the shard, not in all.
"""

from __future__ import annotations

import bisect
import json
from collections import OrderedDict
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import torch
from torch.utils.data import Dataset

from curobo_lite.data.config import DatasetConfig, read_config
from curobo_lite.data.manifest import finished_shards
from curobo_lite.data.shard import read_shard
from curobo_lite.types.errors import InputTypeError

#: columns returned as tensors of the dataset's dtype
_VECTORS = ("start", "goal_pose", "goal_config")
#: scalar columns passed through as Python values
_SCALARS = (
    "problem_id",
    "name",
    "family",
    "family_index",
    "seed",
    "target",
    "status",
    "success",
    "dt",
    "motion_time",
    "position_error",
    "rotation_error",
    "scene_tries",
    "error",
)


class ProblemDataset(Dataset):
    """The solved problems of a dataset folder, one item per problem.

    An item is a dict: ``problem_id`` (int), ``name``, ``family``, ``world`` (the obstacles,
    cuRobo's world layout dict), ``start`` [D], ``goal_pose`` [7] (xyz, wxyz), ``goal_config``
    [D], ``success`` (bool), ``status``, ``plan`` [T, D] (``[0, D]`` when there is none),
    ``dt`` (s between plan steps), ``timings`` (``generate_s``, ``plan_s`` and MotionGen's
    seconds per stage), and ``motion_time``, ``position_error``, ``rotation_error``,
    ``target``, ``scene_tries``, ``error``.

    Args:
        folder: the dataset folder.
        dtype: floating type of the tensors.
        cached_shards: shards kept in memory at once.
    """

    def __init__(
        self, folder: str | Path, dtype: torch.dtype = torch.float32, cached_shards: int = 4
    ) -> None:
        if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
            raise InputTypeError(f"dtype: expected a floating torch.dtype, received {dtype!r}")
        self.folder = Path(folder)
        self.config: DatasetConfig = read_config(self.folder)
        self.dtype = dtype
        self._cached_shards = max(1, int(cached_shards))
        self._cache: OrderedDict[int, list[dict[str, Any]]] = OrderedDict()
        lines = finished_shards(self.folder)
        self.shards = sorted(lines)
        #: the robot's joints (a row without a problem still gets a ``[0, D]`` plan)
        self.dof = int(next(iter(lines.values()))["dof"]) if lines else 0
        self._files = [self.folder / lines[k]["file"] for k in self.shards]
        self._starts: list[int] = []
        total = 0
        for path in self._files:
            self._starts.append(total)
            total += pq.ParquetFile(path).metadata.num_rows
        self._length = total

    def __len__(self) -> int:
        return self._length

    def _rows(self, position: int) -> list[dict[str, Any]]:
        if position not in self._cache:
            self._cache[position] = read_shard(self._files[position]).to_pylist()
            while len(self._cache) > self._cached_shards:
                self._cache.popitem(last=False)
        self._cache.move_to_end(position)
        return self._cache[position]

    def __getitem__(self, index: int) -> dict[str, Any]:
        if not -self._length <= index < self._length:
            raise IndexError(
                f"index: expected -{self._length} .. {self._length - 1}, received {index}"
            )
        index %= self._length
        position = bisect.bisect_right(self._starts, index) - 1
        row = self._rows(position)[index - self._starts[position]]
        item = {key: row[key] for key in _SCALARS}
        item["world"] = json.loads(row["world"])
        for key in _VECTORS:
            item[key] = torch.tensor(row[key], dtype=self.dtype)
        plan = torch.tensor(row["plan"], dtype=self.dtype)
        item["plan"] = plan if plan.numel() else plan.reshape(0, self.dof)
        item["timings"] = {
            "generate_s": row["generate_s"],
            "plan_s": row["plan_s"],
            **json.loads(row["timings"]),
        }
        return item

    def to_table(self, columns: list[str] | None = None) -> pa.Table:
        """All recorded rows as one Arrow table (``columns`` only), for statistics."""
        tables = [read_shard(path, columns) for path in self._files]
        return pa.concat_tables(tables) if tables else pa.table({})


def load_dataset(folder: str | Path, dtype: torch.dtype = torch.float32) -> ProblemDataset:
    """The dataset in ``folder`` (written by ``curobo-lite dataset generate``) as a
    ``torch.utils.data.Dataset`` of dicts (see :class:`ProblemDataset`)."""
    return ProblemDataset(folder, dtype)
