"""Dataset folders without Ray (issue 33): ``verify`` finds every kind of damage, ``load_dataset``
reads what is recorded, the layout partitions the ids, and only ``curobo_lite/data`` imports Ray.

The folder here is written by hand in the documented layout (``dataset.json``, Parquet shards
of the schema, one manifest line each), with made-up problems: the verifier is judged on
copies damaged in known ways, independently of how the rows were computed (the Ray runs of
``tests/test_dataset.py`` check real ones).
"""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path

import pytest
import torch

pytest.importorskip("pyarrow")

from curobo_lite.data import DatasetConfig, load_dataset, verify_dataset  # noqa: E402
from curobo_lite.data.config import CONFIG_FILE, MANIFEST_FILE, config_text, shard_file  # noqa: E402
from curobo_lite.data.manifest import append_line, read_manifest  # noqa: E402
from curobo_lite.data.shard import file_sha256, shard_bytes  # noqa: E402
from curobo_lite.types.errors import InputValueError  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
CONFIG = {"families": ["cage", "box"], "problems": 7, "seed": 3, "shard_size": 3}


def _row(config: DatasetConfig, problem_id: int) -> dict:
    """A made-up problem of the right shape; every third id a generation failure."""
    slot = config.slot(problem_id)
    row = {
        "problem_id": problem_id,
        "name": f"{slot.family}_{config.seed}_{slot.index:04d}",
        "family": slot.family,
        "family_index": slot.index,
        "seed": config.seed,
        "target": "",
        "generate_s": 0.5,
        "plan_s": 0.0,
        "timings": {},
        "scene_tries": 0,
        "error": "",
    }
    if problem_id % 3 == 2:
        nan = float("nan")
        return row | {
            "world": {},
            "start": [],
            "goal_pose": [],
            "goal_config": [],
            "status": "GENERATION_FAIL",
            "success": False,
            "plan": [],
            "dt": nan,
            "motion_time": nan,
            "position_error": nan,
            "rotation_error": nan,
            "error": "no valid problem",
        }
    steps = 3 + problem_id
    plan = [[0.1 * problem_id + 0.01 * t] * 7 for t in range(steps)]
    return row | {
        "world": {
            "cuboid": {"stand": {"dims": [0.3, 0.25, 0.8], "pose": [0, 0, -0.4, 1, 0, 0, 0]}}
        },
        "target": "can",
        "start": plan[0],
        "goal_pose": [0.5, 0.0, 0.4, 0.0, 1.0, 0.0, 0.0],
        "goal_config": plan[-1],
        "status": "SUCCESS",
        "success": True,
        "plan": plan,
        "dt": 0.01,
        "motion_time": 0.01 * (steps - 1),
        "position_error": 0.001,
        "rotation_error": 0.002,
        "plan_s": 0.3,
        "timings": {"ik": 0.1, "roadmap": 0.2},
    }


@pytest.fixture()
def folder(tmp_path) -> Path:
    """A complete dataset of :data:`CONFIG` in the documented layout."""
    config = DatasetConfig.from_dict(CONFIG)
    out = tmp_path / "dataset"
    out.mkdir()
    (out / CONFIG_FILE).write_text(config_text(config))
    for shard in range(config.num_shards):
        rows = [_row(config, i) for i in config.shard_ids(shard)]
        data = shard_bytes(rows)
        (out / shard_file(shard)).write_bytes(data)
        line = {
            "shard": shard,
            "file": shard_file(shard),
            "problems": len(rows),
            "successes": sum(r["success"] for r in rows),
            "sha256": file_sha256(out / shard_file(shard)),
            "bytes": len(data),
            "dof": 7,
        }
        append_line(out, line)
    return out


def _copy(source: Path, target: Path) -> Path:
    shutil.copytree(source, target)
    return target


def test_verify_passes_a_complete_dataset_and_finds_each_kind_of_damage(folder, tmp_path):
    report = verify_dataset(folder)
    assert report.ok, report.report()
    assert (report.problems, report.shards, report.successes) == (7, 3, 5)
    # a flipped byte in the middle of a shard: checksum, and its ids no longer count
    flipped = _copy(folder, tmp_path / "flipped")
    path = flipped / shard_file(1)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    report = verify_dataset(flipped)
    assert any("shard-000001" in e and "checksum" in e for e in report.errors)
    assert any("3 problem(s) missing: ids 3, 4, 5" in e for e in report.errors)
    # a truncated shard
    truncated = _copy(folder, tmp_path / "truncated")
    path = truncated / shard_file(2)
    path.write_bytes(path.read_bytes()[:100])
    assert any("shard-000002" in e and "checksum" in e for e in verify_dataset(truncated).errors)
    # a removed shard: its manifest line names a missing file
    removed = _copy(folder, tmp_path / "removed")
    (removed / shard_file(0)).unlink()
    errors = verify_dataset(removed).errors
    assert any("file missing" in e for e in errors)
    assert any("missing: ids 0, 1, 2" in e for e in errors)
    # one shard's file (and checksum) under another's name: its ids twice, the other's missing
    twice = _copy(folder, tmp_path / "twice")
    lines = {line["shard"]: line for line in read_manifest(twice)[0]}
    shutil.copyfile(twice / shard_file(0), twice / shard_file(1))
    lines[1].update(sha256=lines[0]["sha256"], bytes=lines[0]["bytes"])
    (twice / MANIFEST_FILE).write_text("".join(json.dumps(v) + "\n" for v in lines.values()))
    errors = verify_dataset(twice).errors
    assert any("more than once: ids 0, 1, 2" in e for e in errors)
    assert any("shard-000001" in e and "expected 3 .. 5" in e for e in errors)
    # a manifest that lies about the counts (checksum right, count wrong)
    miscounted = _copy(folder, tmp_path / "miscounted")
    lines = [dict(line, successes=line["successes"] + 1) for line in read_manifest(miscounted)[0]]
    (miscounted / MANIFEST_FILE).write_text("".join(json.dumps(v) + "\n" for v in lines))
    assert any("manifest line says" in e for e in verify_dataset(miscounted).errors)
    # a partial last manifest line (a driver killed mid-append) is tolerated: a warning
    partial = _copy(folder, tmp_path / "partial")
    with open(partial / MANIFEST_FILE, "a") as f:
        f.write('{"shard": 3, "file": "shard-0')
    report = verify_dataset(partial)
    assert report.ok and len(report.warnings) == 1
    # the next line appended after it starts on a line of its own
    append_line(partial, {"shard": 0, **read_manifest(folder)[0][0]})
    assert len(read_manifest(partial)[0]) == 4 and verify_dataset(partial).ok
    # a shard file nobody recorded
    unlisted = _copy(folder, tmp_path / "unlisted")
    shutil.copyfile(unlisted / shard_file(0), unlisted / shard_file(7))
    assert any(
        "shard-000007" in e and "no manifest line" in e for e in verify_dataset(unlisted).errors
    )
    # a solved row without a plan
    config = DatasetConfig.from_dict(CONFIG)
    broken = _copy(folder, tmp_path / "broken")
    rows = [_row(config, i) for i in config.shard_ids(0)]
    rows[0]["plan"] = []
    data = shard_bytes(rows)
    (broken / shard_file(0)).write_bytes(data)
    lines = read_manifest(broken)[0]
    lines[0].update(sha256=file_sha256(broken / shard_file(0)), bytes=len(data))
    (broken / MANIFEST_FILE).write_text("".join(json.dumps(v) + "\n" for v in lines))
    assert any("problem 0 marked solved" in e for e in verify_dataset(broken).errors)
    # not a dataset folder
    assert any("dataset.json" in e for e in verify_dataset(tmp_path).errors)


def test_load_dataset_gives_the_recorded_problems(folder):
    config = DatasetConfig.from_dict(CONFIG)
    dataset = load_dataset(folder)
    assert isinstance(dataset, torch.utils.data.Dataset) and len(dataset) == 7
    for i in range(7):
        item, expected = dataset[i], _row(config, i)
        assert item["problem_id"] == i and item["family"] == expected["family"]
        assert item["world"] == expected["world"] and item["success"] == expected["success"]
        plan = torch.tensor(expected["plan"], dtype=torch.float32).reshape(-1, 7)
        assert torch.equal(item["plan"], plan) and item["plan"].dtype == torch.float32
        assert torch.equal(item["start"], torch.tensor(expected["start"], dtype=torch.float32))
        assert item["goal_pose"].shape == ((7,) if expected["goal_pose"] else (0,))
        assert (
            item["timings"]
            == {"generate_s": 0.5, "plan_s": expected["plan_s"]} | (expected["timings"])
        )
    assert dataset[-1]["problem_id"] == 6
    with pytest.raises(IndexError, match="index"):
        dataset[7]
    table = dataset.to_table(["family", "success"])
    assert table.num_rows == 7 and sum(table.column("success").to_pylist()) == 5
    # a shard without a manifest line is not part of the dataset
    lines = read_manifest(folder)[0]
    (folder / MANIFEST_FILE).write_text("".join(json.dumps(v) + "\n" for v in lines[:2]))
    assert len(load_dataset(folder)) == 6


def test_layout_is_round_robin_and_shards_partition_the_ids():
    config = DatasetConfig.from_dict(
        {"families": ["cage", "box", "table_pick"], "problems": 10, "shard_size": 4}
    )
    assert config.num_shards == 3
    assert [list(config.shard_ids(k)) for k in range(3)] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    slots = [config.slot(i) for i in range(7)]
    assert [(s.family, s.index) for s in slots] == [
        ("cage", 0), ("box", 0), ("table_pick", 0), ("cage", 1), ("box", 1), ("table_pick", 1),
        ("cage", 2),
    ]  # fmt: skip
    with pytest.raises(InputValueError, match="shard"):
        config.shard_ids(3)


def test_bad_configurations_name_the_argument():
    with pytest.raises(InputValueError, match="families"):
        DatasetConfig.from_dict({**CONFIG, "families": ["cage", "kitchen"]})
    with pytest.raises(InputValueError, match="families"):
        DatasetConfig.from_dict({**CONFIG, "families": ["cage", "cage"]})
    with pytest.raises(InputValueError, match="shard_size"):
        DatasetConfig.from_dict({**CONFIG, "shard_size": 0})
    with pytest.raises(InputValueError, match="problems"):
        DatasetConfig.from_dict({**CONFIG, "problems": 0})
    with pytest.raises(InputValueError, match="generator"):
        DatasetConfig.from_dict({**CONFIG, "generator": {"seeds": 4}})
    with pytest.raises(InputValueError, match="colour"):
        DatasetConfig.from_dict({**CONFIG, "colour": "red"})


def test_generate_refuses_bad_arguments_before_writing(tmp_path):
    pytest.importorskip("ray")
    from curobo_lite.data.runner import generate_dataset

    config = DatasetConfig.from_dict(CONFIG)
    for kwargs, name in [
        ({"workers": 0}, "workers"),
        ({"device": "tpu"}, "device"),
        ({"max_retries": -1}, "max_retries"),
        ({"gpus_per_worker": 2.0}, "gpus_per_worker"),
    ]:
        with pytest.raises(InputValueError, match=name):
            generate_dataset(config, tmp_path / "new", **kwargs)
    assert not (tmp_path / "new").exists()
    (tmp_path / "file").write_text("")
    with pytest.raises(InputValueError, match="out: expected a folder"):
        generate_dataset(config, tmp_path / "file")


def test_command_line_verify(folder, capsys):
    from curobo_lite.cli import main

    assert main(["dataset", "verify", str(folder)]) == 0
    assert capsys.readouterr().out.startswith("OK: 3 shard files, 7 problems, 5 solved")
    (folder / shard_file(2)).write_bytes(b"not parquet")
    assert main(["dataset", "verify", str(folder)]) == 1
    assert "checksum" in capsys.readouterr().out
    # bad generate arguments: exit status 2, the argument named, nothing written
    out = folder.parent / "never"
    code = main(
        ["dataset", "generate", "--families", "kitchen", "--problems", "3", "--out", str(out)]
    )
    assert code == 2 and "families" in capsys.readouterr().err and not out.exists()


def test_only_the_data_package_imports_ray():
    package = REPO / "curobo_lite"
    importers = []
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            if any(n == "ray" or n.startswith("ray.") for n in names):
                importers.append(path.relative_to(package).as_posix())
    assert importers == ["data/runner.py"], importers
    # importing the package or its command line (which every `curobo-lite` call does) runs no
    # import of the Ray driver: the modules they import at import time, transitively
    from test_layers import all_modules, collect_imports

    eager: dict[str, set[str]] = {}
    for imp in collect_imports(all_modules()):
        if imp.at_import_time:
            eager.setdefault(imp.source, set()).add(imp.target)
    reached, todo = set(), ["curobo_lite.data", "curobo_lite.data.cli"]
    while todo:
        module = todo.pop()
        if module not in reached:
            reached.add(module)
            todo.extend(eager.get(module, ()))
    assert "curobo_lite.data.runner" not in reached and "curobo_lite.data.cli" in reached
