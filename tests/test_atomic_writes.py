"""Files the package writes appear whole or not at all (issue #34, item 6).

Every writer goes through :func:`curobo_lite.config_files.atomic_path`: a temporary file beside
the target, flushed, then renamed over it. These tests interrupt the write at each stage (an
exception in the writer, an interrupt at the flush, a failed rename, a killed process) and
check that the old file is intact (or that none appears), and that no temporary is left behind
except after a kill.
"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch
import yaml

from curobo_lite.config_files import atomic_open, atomic_path, atomic_write_text
from curobo_lite.geom import WorldConfig
from curobo_lite.robot import RobotConfig
from curobo_lite.types import JointState

OLD = "old contents\n" * 100


def _listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_a_write_replaces_the_file_whole_and_keeps_its_mode(tmp_path):
    target = tmp_path / "out.json"
    target.write_text(OLD)
    target.chmod(0o640)
    atomic_write_text(target, "new\n")
    assert target.read_text() == "new\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert _listing(tmp_path) == ["out.json"]
    fresh = tmp_path / "fresh.yml"
    atomic_write_text(fresh, "x: 1\n")
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o666 & ~umask


@pytest.mark.parametrize("exists", [True, False])
def test_an_error_half_way_leaves_the_old_file_or_none(tmp_path, exists):
    target = tmp_path / "plan.yml"
    if exists:
        target.write_text(OLD)
    with pytest.raises(RuntimeError, match="disk on fire"):
        with atomic_open(target) as f:
            f.write("half of the new file")
            f.flush()
            raise RuntimeError("disk on fire")
    assert (target.read_text() == OLD) if exists else not target.exists()
    assert _listing(tmp_path) == (["plan.yml"] if exists else [])


@pytest.mark.parametrize("stage", ["fsync", "replace"])
def test_an_interrupt_at_the_flush_or_the_rename_leaves_the_old_file(tmp_path, monkeypatch, stage):
    target = tmp_path / "robot.yml"
    target.write_text(OLD)

    def interrupt(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, stage, interrupt)
    with pytest.raises(KeyboardInterrupt):
        atomic_write_text(target, "new " * 10_000)
    monkeypatch.undo()
    assert target.read_text() == OLD
    assert _listing(tmp_path) == ["robot.yml"]


def test_a_killed_writer_leaves_the_old_file_intact(tmp_path):
    """A real interruption: a process writing a large file through atomic_open is killed
    mid-write; the target still holds the old contents, complete."""
    target = tmp_path / "bench.json"
    target.write_text(OLD)
    script = textwrap.dedent(
        f"""
        import sys, time
        from curobo_lite.config_files import atomic_open
        with atomic_open({str(target)!r}) as f:
            for i in range(1000):
                f.write("x" * 10_000)
                f.flush()
                if i == 10:
                    print("writing", flush=True)
                time.sleep(0.01)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "writing"
        partial = [p for p in tmp_path.iterdir() if p.name != "bench.json"]
        assert len(partial) == 1 and partial[0].stat().st_size > 0  # being written
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert target.read_text() == OLD


def test_figures_keep_their_format_through_the_temporary(tmp_path):
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = plt.figure()
    for name, magic in (("a.png", b"\x89PNG"), ("b.pdf", b"%PDF"), ("c.svg", b"<?xml")):
        with atomic_path(tmp_path / name) as temporary:
            assert temporary.suffix == Path(name).suffix and temporary.parent == tmp_path
            fig.savefig(temporary)
        assert (tmp_path / name).read_bytes().startswith(magic)
    plt.close(fig)
    assert _listing(tmp_path) == ["a.png", "b.pdf", "c.svg"]


def _fail_rename(monkeypatch):
    def fail(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", fail)


def test_package_writers_are_atomic(tmp_path, monkeypatch):
    """The package's own writers (robot file, world file, plan --save, plan plot) keep the
    old file when the final step fails, and write a loadable file when it does not."""
    from curobo_lite.wrap.cli.trajopt import plot_plan, save_plan

    robot = RobotConfig.load("planar3")
    world = WorldConfig.load("table")
    plan = JointState.from_position(torch.zeros(5, 3))
    writers = {
        "robot.yml": lambda p: robot.to_yaml(p),
        "world.yml": lambda p: world.save(p),
        "plan.yml": lambda p: save_plan(plan, 0.1, p, "planar3", True, 0.0, 0.0),
    }
    pytest.importorskip("matplotlib")
    writers["plan.png"] = lambda p: plot_plan(
        plan, 0.1, p, robot.joint_limits, plan.position, [0.0, 0.1, 0.2, 0.3, 0.4], "t", "knots"
    )
    for name, write in writers.items():
        target = tmp_path / name
        target.write_text(OLD)
        with monkeypatch.context() as m:
            _fail_rename(m)
            with pytest.raises(OSError, match="No space left"):
                write(target)
        assert target.read_text() == OLD, name
        write(target)
        assert target.read_bytes() != OLD.encode()
    assert _listing(tmp_path) == sorted(writers)
    assert RobotConfig.load(tmp_path / "robot.yml").joint_names == robot.joint_names
    assert len(WorldConfig.load(tmp_path / "world.yml")) == len(world)
    assert yaml.safe_load((tmp_path / "plan.yml").read_text())["robot"] == "planar3"


def test_a_write_in_progress_is_never_visible_under_the_target_name(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text(OLD)
    with atomic_open(target) as f:
        f.write("new")
        f.flush()
        time.sleep(0.01)
        assert target.read_text() == OLD  # readers still see the old file
    assert target.read_text() == "new"
