"""A shard's file format: one Parquet file (pyarrow), one row per problem.

Columns (:data:`SCHEMA`): ``problem_id``, ``name`` (the generator's problem name), ``family``,
``family_index``, ``seed``, ``world`` (the obstacles in cuRobo's world layout, as JSON text),
``target``, ``start`` [D], ``goal_pose`` [7] (``panda_hand``, xyz + wxyz), ``goal_config``
[D] (the generator's IK solution), ``status`` (a ``MotionGenStatus`` value, or
:data:`GENERATION_FAIL` when no valid problem was found for the id), ``success``, ``plan``
[T, D] (the interpolated plan, float32; empty without one), ``dt`` (its sample time),
``motion_time``, ``position_error``, ``rotation_error``, ``generate_s``, ``plan_s`` and
``timings`` (MotionGen's seconds per stage, JSON text), ``scene_tries``, ``error``.
"""

from __future__ import annotations

import hashlib
import io
import json
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

#: ``status`` of an id whose draws gave no valid problem (the row keeps its id: none is lost).
GENERATION_FAIL = "GENERATION_FAIL"

SCHEMA = pa.schema(
    [
        ("problem_id", pa.int64()),
        ("name", pa.string()),
        ("family", pa.string()),
        ("family_index", pa.int64()),
        ("seed", pa.int64()),
        ("world", pa.string()),
        ("target", pa.string()),
        ("start", pa.list_(pa.float64())),
        ("goal_pose", pa.list_(pa.float64())),
        ("goal_config", pa.list_(pa.float64())),
        ("status", pa.string()),
        ("success", pa.bool_()),
        ("plan", pa.list_(pa.list_(pa.float32()))),
        ("dt", pa.float64()),
        ("motion_time", pa.float64()),
        ("position_error", pa.float64()),
        ("rotation_error", pa.float64()),
        ("generate_s", pa.float64()),
        ("plan_s", pa.float64()),
        ("timings", pa.string()),
        ("scene_tries", pa.int32()),
        ("error", pa.string()),
    ]
)


def shard_bytes(rows: list[dict[str, Any]]) -> bytes:
    """The Parquet file of ``rows`` (dicts with the :data:`SCHEMA` columns; ``world`` and
    ``timings`` as mappings), zstd-compressed."""
    columns = {name: [row[name] for row in rows] for name in SCHEMA.names}
    columns["world"] = [json.dumps(w, sort_keys=True) for w in columns["world"]]
    columns["timings"] = [json.dumps(t, sort_keys=True) for t in columns["timings"]]
    table = pa.Table.from_pydict(columns, schema=SCHEMA)
    sink = io.BytesIO()
    pq.write_table(table, sink, compression="zstd")
    return sink.getvalue()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def file_sha256(path: Any, chunk: int = 1 << 20) -> str:
    """The SHA-256 of a file's bytes, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def read_shard(source: Any, columns: list[str] | None = None) -> pa.Table:
    """A shard's table (a path or a file object), checked against :data:`SCHEMA`."""
    table = pq.read_table(source, columns=columns)
    expected = SCHEMA if columns is None else pa.schema([SCHEMA.field(c) for c in columns])
    if not table.schema.equals(expected, check_metadata=False):
        raise ValueError(f"shard schema: expected {expected}, received {table.schema}")
    return table
