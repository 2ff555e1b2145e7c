"""The manifest of a dataset folder: one JSON line per finished shard, appended by the driver
after the shard's file is in place (renamed), so a line always names a complete file.

A line: ``{"shard", "file", "problems", "successes", "generation_failures", "first_id",
"last_id", "seed", "sha256", "bytes", "versions", "host", "pid", "solve_s", "written"}``.
A driver killed while appending leaves at most one partial last line: readers skip a line
that does not parse (its shard is then simply redone by the next run).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from curobo_lite.data.config import MANIFEST_FILE


def append_line(folder: Path, line: dict[str, Any]) -> None:
    """Append ``line`` to the manifest and flush it to disk (one ``write`` of the whole line;
    a partial line left by a kill is dropped by :func:`read_manifest`)."""
    path = Path(folder) / MANIFEST_FILE
    text = json.dumps(line, sort_keys=True) + "\n"
    with open(path, "a", encoding="utf-8") as f:
        # a partial line from a killed driver: start ours on a line of its own
        if f.tell() > 0 and not _ends_with_newline(path):
            text = "\n" + text
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


def _ends_with_newline(path: Path) -> bool:
    with open(path, "rb") as f:
        f.seek(-1, os.SEEK_END)
        return f.read(1) == b"\n"


def read_manifest(folder: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """The manifest's parsed lines, and the lines that did not parse (as text)."""
    path = Path(folder) / MANIFEST_FILE
    if not path.is_file():
        return [], []
    good: list[dict[str, Any]] = []
    bad: list[str] = []
    for text in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if not text.strip():
            continue
        try:
            line = json.loads(text)
        except json.JSONDecodeError:
            bad.append(text)
            continue
        if isinstance(line, dict) and isinstance(line.get("shard"), int):
            good.append(line)
        else:
            bad.append(text)
    return good, bad


def finished_shards(folder: Path) -> dict[int, dict[str, Any]]:
    """Shard index -> its latest manifest line, for the shards whose file is present with
    the size the line records (a rerun skips these)."""
    done: dict[int, dict[str, Any]] = {}
    for line in read_manifest(folder)[0]:
        path = Path(folder) / str(line.get("file", ""))
        if path.is_file() and path.stat().st_size == line.get("bytes"):
            done[line["shard"]] = line
    return done
