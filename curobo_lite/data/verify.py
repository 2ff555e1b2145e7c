"""``curobo-lite dataset verify DIR``: check a dataset folder from its files alone.

Nothing the writer computed is trusted: every shard file's SHA-256 is recomputed and compared
with its manifest line, every file is parsed and its rows recounted (problems, successes),
and the ``problem_id`` column of *every* shard file in the folder (listed or not) is read, so
that each id ``0 .. problems-1`` of ``dataset.json`` must appear exactly once, in the shard
the layout puts it in. A row is also checked for shape: its family is the one the layout gives
its id, a solved problem has status ``SUCCESS`` and a plan ``[T, D]`` with ``T >= 2``, the goal
pose has 7 numbers with a unit quaternion.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from curobo_lite.data.config import FAILED_FILE, DatasetConfig, read_config, shard_file
from curobo_lite.data.manifest import read_manifest
from curobo_lite.data.shard import file_sha256, read_shard

_SHARD_NAME = re.compile(r"shard-(\d+)\.parquet")
#: how many ids an error lists before it only counts them
_LISTED = 10


@dataclass
class VerifyReport:
    """The verdict on a dataset folder.

    Attributes:
        errors: what is wrong (empty: the dataset is complete and intact).
        warnings: what was tolerated (a partial manifest line left by a killed driver).
        problems: ids found in all; ``shards``: shard files read; ``successes``: solved rows.
    """

    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    problems: int = 0
    shards: int = 0
    successes: int = 0

    @property
    def ok(self) -> bool:
        return not self.errors

    def report(self) -> str:
        head = "OK" if self.ok else f"{len(self.errors)} error(s)"
        lines = [
            f"{head}: {self.shards} shard files, {self.problems} problems, {self.successes} solved"
        ]
        lines += [f"error: {e}" for e in self.errors]
        lines += [f"warning: {w}" for w in self.warnings]
        return "\n".join(lines)


def _ids_text(ids: list[int]) -> str:
    shown = ", ".join(str(i) for i in ids[:_LISTED])
    return shown + (f" and {len(ids) - _LISTED} more" if len(ids) > _LISTED else "")


def _check_rows(table, config: DatasetConfig, name: str, report: VerifyReport) -> None:
    """Per row: the layout's family, a plan for every success, a 7-number unit goal pose."""
    families = config.families
    columns = table.select(["problem_id", "family", "status", "success", "plan", "goal_pose"])
    for row in columns.to_pylist():
        pid = row["problem_id"]
        if row["family"] != families[pid % len(families)]:
            report.errors.append(
                f"{name}: problem {pid} is {row['family']!r}, the layout gives "
                f"{families[pid % len(families)]!r}"
            )
        if row["success"]:
            plan = row["plan"]
            widths = {len(step) for step in plan}
            if row["status"] != "SUCCESS" or len(plan) < 2 or len(widths) != 1:
                report.errors.append(
                    f"{name}: problem {pid} marked solved with status {row['status']} and a "
                    f"plan of {len(plan)} steps"
                )
        pose = row["goal_pose"]
        if row["status"] != "GENERATION_FAIL" and (
            len(pose) != 7 or abs(math.sqrt(sum(v * v for v in pose[3:])) - 1.0) > 1e-4
        ):
            report.errors.append(
                f"{name}: problem {pid} has a goal pose {pose} (expected xyz wxyz)"
            )


def verify_dataset(folder: str | Path) -> VerifyReport:
    """Check the dataset in ``folder`` (see the module docstring); never raises on a damaged
    dataset, it reports."""
    folder = Path(folder)
    report = VerifyReport()
    try:
        config = read_config(folder)
    except Exception as err:  # unreadable dataset.json: nothing else can be judged
        report.errors.append(f"dataset.json: {err}")
        return report
    lines, bad = read_manifest(folder)
    for text in bad:
        report.warnings.append(f"manifest: a line that does not parse was skipped: {text[:80]!r}")
    latest = {line["shard"]: line for line in lines}
    if (folder / FAILED_FILE).is_file():
        report.errors.append(f"{FAILED_FILE}: the last run left shards that kept failing")
    files = {
        int(m.group(1)): m.group(0)
        for p in folder.glob("shard-*.parquet")
        if (m := _SHARD_NAME.fullmatch(p.name))
    }
    seen: Counter[int] = Counter()
    for shard_index, name in sorted(files.items()):
        line = latest.get(shard_index)
        if line is None or line.get("file") != name:
            report.errors.append(f"{name}: no manifest line (a write that was never recorded)")
        elif file_sha256(folder / name) != line.get("sha256"):
            report.errors.append(
                f"{name}: checksum differs from its manifest line (corrupt: delete the file "
                "and run the same generate command again to redo it)"
            )
            continue
        try:
            table = read_shard(folder / name)
        except Exception as err:
            report.errors.append(f"{name}: unreadable ({type(err).__name__}: {err})")
            continue
        report.shards += 1
        ids = table.column("problem_id").to_pylist()
        seen.update(ids)
        successes = sum(table.column("success").to_pylist())
        report.successes += successes
        if line is not None and (line.get("problems"), line.get("successes")) != (
            len(ids),
            successes,
        ):
            report.errors.append(
                f"{name}: {len(ids)} rows and {successes} successes, its manifest line says "
                f"{line.get('problems')} and {line.get('successes')}"
            )
        if 0 <= shard_index < config.num_shards:
            expected = list(config.shard_ids(shard_index))
            if sorted(ids) != expected:
                report.errors.append(
                    f"{name}: holds ids {_ids_text(sorted(ids))}, expected "
                    f"{expected[0]} .. {expected[-1]}"
                )
        else:
            report.errors.append(f"{name}: shard index beyond the {config.num_shards} shards")
        _check_rows(table, config, name, report)
    for shard_index in sorted(set(latest) - set(files)):
        report.errors.append(f"{shard_file(shard_index)}: in the manifest, file missing")
    report.problems = len(seen)
    missing = [i for i in range(config.problems) if seen[i] == 0]
    twice = sorted(i for i, n in seen.items() if n > 1)
    extra = sorted(i for i in seen if not 0 <= i < config.problems)
    if missing:
        report.errors.append(f"{len(missing)} problem(s) missing: ids {_ids_text(missing)}")
    if twice:
        report.errors.append(f"{len(twice)} problem(s) more than once: ids {_ids_text(twice)}")
    if extra:
        report.errors.append(f"ids outside 0 .. {config.problems - 1}: {_ids_text(extra)}")
    return report
