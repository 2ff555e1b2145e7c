"""Planning datasets on Ray (issue 33): nothing lost, nothing twice, and a format to train on.

A local Ray (2 CPUs) is started by this module and shut down after it. The dataset is small:
bookshelf_small problems with a cheap generator (4 IK seeds, one scene draw per id: ids
whose draw fails become ``GENERATION_FAIL`` rows) and a short roadmap time.

- :func:`crashed_dataset` makes a dataset the hard way: the CLI driver (a subprocess joined
  to this Ray) is interrupted (SIGINT) after its first shard; the same configuration again
  (in this process) has one of its busy workers killed (SIGKILL); Ray retries that shard.
- ``verify`` must then find every id exactly once and every checksum right (it is checked
  itself on damaged copies in ``tests/test_dataset_files.py``).
- A second dataset of the same configuration has one shard's worker killed as it starts,
  with no retries left: that shard is reported (not dropped) and the rest match the first
  dataset problem for problem; run again, it completes and matches in full.
- The loaded items are checked against independent references: forward kinematics of the
  plan's last step against the goal pose, the plan's first step against the start.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import torch

ray = pytest.importorskip("ray")
pytest.importorskip("pyarrow")
pytest.importorskip("coal")  # the generator's exact (mesh) checks

# worker processes start, build a ProblemGenerator and a MotionGen, and are killed and started
# again: 35-60 s on the 2 shared cores of the CI machine (tests/test_dataset_files.py and
# tests/test_dataset_batch.py hold the fast checks)
pytestmark = pytest.mark.slow

from curobo_lite.cli import main as cli_main  # noqa: E402
from curobo_lite.data import DatasetConfig, generate_dataset, load_dataset, verify_dataset  # noqa: E402
from curobo_lite.data.config import FAILED_FILE, shard_file  # noqa: E402
from curobo_lite.data.manifest import read_manifest  # noqa: E402
from curobo_lite.data.shard import read_shard  # noqa: E402
from curobo_lite.types.errors import InputValueError  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
PROBLEMS = 4
CONFIG = {
    "families": ["bookshelf_small"],
    "problems": PROBLEMS,
    "seed": 0,
    "shard_size": 1,
    "generator": {"ik_seeds": 4, "max_scenes": 1},
    # ids 0 and 3 plan in 0.3-0.6 s on a quiet core; the roadmap's limit is wall time, so it
    # is generous for a loaded machine (a made problem left unsolved would cost it in full)
    "motion_gen": {"roadmap": {"time_limit": 10.0}},
}
#: for the interrupted run's first shard: the driver's start (a Ray client, imports) and one
#: shard, on a machine where the suite's other worker process shares the two cores
DEADLINE_S = 300.0


def _cli_command(out: Path, address: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "curobo_lite.cli",
        "dataset",
        "generate",
        "--families",
        *CONFIG["families"],
        "--problems",
        str(PROBLEMS),
        "--seed",
        str(CONFIG["seed"]),
        "--shard-size",
        str(CONFIG["shard_size"]),
        "--generator",
        json.dumps(CONFIG["generator"]),
        "--motion-gen",
        json.dumps(CONFIG["motion_gen"]),
        "--workers",
        "1",  # each worker process costs seconds to start: one is enough to be interrupted
        "--address",
        address,
        "--out",
        str(out),
        "--no-progress",
    ]


def _parent(pid: int) -> int:
    """The parent pid (0 when the process is gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0
    return int(stat.rsplit(")", 1)[1].split()[1])


def _descends_from_us(pid: int) -> bool:
    """Whether ``pid`` is a descendant of this process (the Ray this module started: its
    raylet is our child, the workers are the raylet's)."""
    while pid > 1:
        pid = _parent(pid)
        if pid == os.getpid():
            return True
    return False


def busy_workers(prefix: str = "ray::shard-") -> dict[int, str]:
    """pid -> process title of this module's Ray workers running one of our shard tasks now
    (a worker is titled ``ray::<task name>`` while it runs a task; other Ray instances on
    the machine are left alone)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            title = (entry / "cmdline").read_bytes().split(b"\0")[0].decode()
        except OSError:
            continue
        if title.startswith(prefix) and _descends_from_us(int(entry.name)):
            found[int(entry.name)] = title
    return found


def _manifest_lines(out: Path) -> int:
    return len(read_manifest(out)[0])


def _wait_for(condition, what: str, deadline: float, process=None) -> None:
    """Poll ``condition`` until ``deadline``; a ``process`` that ends first fails the wait
    with its output (a crashed driver is not a slow one)."""
    while not condition():
        if process is not None and process.poll() is not None:
            output = process.communicate()[0].decode(errors="replace")
            raise AssertionError(
                f"the driver ended (rc {process.returncode}) before {what}:\n{output[-3000:]}"
            )
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


@pytest.fixture(scope="module")
def ray_address():
    context = ray.init(
        num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR"
    )
    yield context.address_info["gcs_address"]
    ray.shutdown()


def kill_busy_workers(prefix: str, stop: threading.Event, once: bool) -> list[tuple[int, str]]:
    """Start a thread that SIGKILLs every worker whose title starts with ``prefix`` as soon as
    it appears (``once``: the first one only) until ``stop``; returns the list it fills with
    the (pid, title) it killed."""
    killed: list[tuple[int, str]] = []

    def loop() -> None:
        while not stop.is_set() and not (once and killed):
            for pid, title in busy_workers(prefix).items():
                os.kill(pid, signal.SIGKILL)
                killed.append((pid, title))
                break
            time.sleep(0.02)

    threading.Thread(target=loop, daemon=True).start()
    return killed


@pytest.fixture(scope="module")
def crashed_dataset(ray_address, tmp_path_factory) -> dict:
    """The dataset of :data:`CONFIG`, made by the command-line driver (a subprocess) that is
    interrupted (SIGINT) after its first shard, then by the same configuration again, in this
    process, while one busy worker is killed (SIGKILL)."""
    out = tmp_path_factory.mktemp("dataset") / "a"
    deadline = time.monotonic() + DEADLINE_S
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    first = subprocess.Popen(
        _cli_command(out, ray_address),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        # a job started in the background (`&` in a script) ignores SIGINT, and a child that
        # starts with it ignored never turns it into KeyboardInterrupt: the driver gets the
        # default disposition back, as in a terminal
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        _wait_for(lambda: _manifest_lines(out) >= 1, "the first shard", deadline, first)
        first.send_signal(signal.SIGINT)
        first_output = first.communicate(timeout=60)[0].decode()
    finally:
        first.kill()
    after_interrupt = _manifest_lines(out)
    stop = threading.Event()
    killed = kill_busy_workers("ray::shard-", stop, once=True)
    try:
        summary = generate_dataset(DatasetConfig.from_dict(CONFIG), out, workers=2, progress=False)
    finally:
        stop.set()
    return {
        "out": out,
        "first_rc": first.returncode,
        "first_output": first_output,
        "after_interrupt": after_interrupt,
        "summary": summary,
        "killed": killed,
    }


def test_interrupted_and_killed_runs_complete_with_each_problem_once(crashed_dataset):
    out = crashed_dataset["out"]
    # the interrupted driver stopped short and said so (exit 130), having written shards
    assert crashed_dataset["first_rc"] == 130, crashed_dataset["first_output"]
    assert "interrupted" in crashed_dataset["first_output"]
    assert 1 <= crashed_dataset["after_interrupt"] < PROBLEMS
    # the rerun skipped what was done, survived the killed worker and finished
    summary = crashed_dataset["summary"]
    assert summary.complete and summary.skipped == crashed_dataset["after_interrupt"]
    assert summary.written == PROBLEMS - summary.skipped
    assert len(crashed_dataset["killed"]) == 1
    killed_pid, killed_title = crashed_dataset["killed"][0]
    lines, bad = read_manifest(out)
    assert not bad
    by_shard = {line["shard"]: line for line in lines}
    assert sorted(by_shard) == list(range(PROBLEMS))
    # the killed worker's shard was redone by another process (Ray's retry)
    assert by_shard[int(killed_title.removeprefix("ray::shard-"))]["pid"] != killed_pid
    assert len(lines) == PROBLEMS  # no shard written twice
    report = verify_dataset(out)
    assert report.ok, report.report()
    assert report.problems == PROBLEMS and report.shards == PROBLEMS
    assert cli_main(["dataset", "verify", str(out)]) == 0
    # recount by hand from the files: every id exactly once
    ids = sorted(
        i
        for k in range(PROBLEMS)
        for i in read_shard(out / shard_file(k)).column("problem_id").to_pylist()
    )
    assert ids == list(range(PROBLEMS))
    assert not list(out.glob(".shard-*"))  # no temporary file left behind
    # a finished dataset: the same command does nothing
    summary = generate_dataset(DatasetConfig.from_dict(CONFIG), out, workers=2, progress=False)
    assert (summary.written, summary.skipped, summary.complete) == (0, PROBLEMS, True)


def _problems(out: Path, shards: list[int]) -> dict[int, tuple]:
    """id -> (name, status if generation failed, world, start, goal_pose): the problem
    itself, without the plan (a plan depends on the roadmap's time limit)."""
    found = {}
    for k in shards:
        for row in read_shard(out / shard_file(k)).to_pylist():
            failed = row["status"] == "GENERATION_FAIL"
            found[row["problem_id"]] = (
                row["name"],
                failed,
                json.loads(row["world"]),
                row["start"],
                row["goal_pose"],
            )
    return found


def test_a_shard_that_keeps_failing_is_reported_and_runs_are_deterministic(
    crashed_dataset, tmp_path
):
    config = DatasetConfig.from_dict(CONFIG)
    out = tmp_path / "b"
    stop = threading.Event()
    killed = kill_busy_workers("ray::shard-000001", stop, once=False)
    try:  # no retries here: the first attempt's death is final; one worker: no new process
        summary = generate_dataset(config, out, workers=1, max_retries=0, progress=False)
    finally:
        stop.set()
    assert len(killed) == 1
    assert sorted(summary.failed) == [1] and not summary.complete
    assert "FAILED shard 1" in summary.report()
    assert json.loads((out / FAILED_FILE).read_text()).keys() == {"1"}
    report = verify_dataset(out)
    assert any("missing: ids 1" in e for e in report.errors)
    assert any(FAILED_FILE in e for e in report.errors)
    reference = crashed_dataset["out"]
    assert _problems(out, [0, 2, 3]) == _problems(reference, [0, 2, 3])
    # the same command again: only shard 1 is made, and now everything matches
    summary = generate_dataset(config, out, workers=1, progress=False)
    assert (summary.written, summary.skipped, summary.complete) == (1, 3, True)
    assert not (out / FAILED_FILE).exists()
    assert verify_dataset(out).ok
    assert _problems(out, list(range(PROBLEMS))) == _problems(reference, list(range(PROBLEMS)))
    # a shard damaged later: verify names it, deleting it and running again redoes it
    path = out / shard_file(2)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    assert any("shard-000002" in e and "corrupt" in e for e in verify_dataset(out).errors)
    path.unlink()
    summary = generate_dataset(config, out, workers=1, progress=False)
    assert (summary.written, summary.complete) == (1, True) and verify_dataset(out).ok
    assert _problems(out, [2]) == _problems(reference, [2])


def test_loaded_items_match_independent_references(crashed_dataset):
    from curobo_lite.robot import RobotConfig
    from curobo_lite.robot.joints import link_poses
    from curobo_lite.scenes.families import matrix_from_quat

    dataset = load_dataset(crashed_dataset["out"])
    assert isinstance(dataset, torch.utils.data.Dataset) and len(dataset) == PROBLEMS
    items = [dataset[i] for i in range(len(dataset))]
    assert sorted(item["problem_id"] for item in items) == list(range(PROBLEMS))
    solved = [item for item in items if item["success"]]
    statuses = [(item["problem_id"], item["status"], item["timings"]) for item in items]
    assert len(solved) == 2, statuses  # ids 0 and 3 (1 and 2: no valid grasp in one draw)
    robot = RobotConfig.load("franka")
    for item in items:
        assert item["family"] == "bookshelf_small"
        assert item["plan"].ndim == 2 and item["plan"].shape[1] == 7
        assert set(item["timings"]) >= {"generate_s", "plan_s"}
        if item["status"] == "GENERATION_FAIL":
            assert item["plan"].shape[0] == 0 and item["world"] == {}
            continue
        assert item["start"].shape == (7,) and item["goal_pose"].shape == (7,)
        assert set(item["world"]) <= {"cuboid", "cylinder"} and item["world"]["cuboid"]["stand"]
    for item in solved:
        plan = item["plan"].double()
        assert item["dt"] > 0 and plan.shape[0] >= 2
        assert torch.allclose(plan[0], item["start"].double(), atol=1e-4)
        # the hand at the plan's last step, by the robot file's joint tree (not MotionGen's FK)
        values = dict(zip(robot.joint_names, plan[-1].tolist(), strict=True))
        hand = link_poses(robot.joints, robot.base_link, values | dict(robot.lock_joints))
        hand = torch.as_tensor(hand["panda_hand"], dtype=torch.float64)
        goal = item["goal_pose"].double()
        assert torch.linalg.norm(hand[:3, 3] - goal[:3]) < 0.005
        goal_rotation = torch.as_tensor(matrix_from_quat(goal[3:].numpy()))
        cos_angle = ((goal_rotation.T @ hand[:3, :3]).trace() - 1) / 2
        assert cos_angle > torch.cos(torch.tensor(0.05, dtype=torch.float64))


def test_bad_arguments_are_refused_before_anything_is_written(crashed_dataset, tmp_path):
    if not torch.cuda.is_available():  # this Ray has no GPU: refused before the folder exists
        with pytest.raises(InputValueError, match="device: cuda needs a GPU"):
            generate_dataset(DatasetConfig.from_dict(CONFIG), tmp_path / "new", device="cuda")
        assert not (tmp_path / "new").exists()
    # resuming a folder under another configuration names what differs, writes nothing
    out = crashed_dataset["out"]
    before = {p.name: p.stat().st_mtime_ns for p in out.iterdir()}
    with pytest.raises(InputValueError, match="seed"):
        generate_dataset(DatasetConfig.from_dict({**CONFIG, "seed": 1}), out, progress=False)
    assert {p.name: p.stat().st_mtime_ns for p in out.iterdir()} == before
