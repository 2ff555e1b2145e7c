"""A short soak of the MPC loop (issue 15): 1 000 steps of planar3 MPC (16 particles) with the
goal jumping every 250 steps and a ball obstacle moving every 200, in a fresh process
(``benchmarks/soak.py``; ``make soak`` runs 10 000). About 20-40 s on a 2-core CPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_thousand_mpc_steps_hold_memory_and_never_command_nan(tmp_path):
    out = tmp_path / "soak.json"
    args = ["--steps", "1000", "--warmup", "200", "--sample-every", "100", "--particles", "16"]
    args += ["--goal-every", "250", "--json", str(out)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "soak.py"), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    report = json.loads(out.read_text())
    assert report["steps"] == 1000 and report["particles"] == 16
    assert report["nan_commands"] == 0
    assert report["rss_growth_after_warmup_mb"] < 20.0
    assert len(report["rss_mb"]) == 11  # start + every 100 steps
    # every goal (4 of them) was reached: the loop kept controlling, not just kept running
    errors = report["goal_position_error_m"]
    assert len(errors) == 4 and max(errors) < 0.01, errors
