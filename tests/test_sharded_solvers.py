"""Solves sharded over 2 gloo ranks on loopback agree with each other and with one process."""

from __future__ import annotations

import os
import pickle
import socket
import time
from datetime import timedelta
from pathlib import Path

import pytest
import torch
import torch.multiprocessing as mp

WORLD = 2
DEADLINE_S = 150.0


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _mppi_problem(process_group=None):
    from curobo_lite.opt import Mppi, MppiConfig
    from curobo_lite.robot import Kinematics
    from curobo_lite.rollout import ArmReacher, Goal, TaskConfig
    from curobo_lite.types import JointState, Pose

    torch.set_num_threads(1)
    reacher = ArmReacher.from_task("particle_mpc", "franka")
    robot = reacher.robot_config
    fk = Kinematics(robot).forward(robot.retract_config[None] + 0.2)
    reacher.update_params(
        Goal(goal_pose=Pose(fk.ee_position, fk.ee_quaternion)),
        JointState.from_position(robot.retract_config[None].clone()),
    )
    options = dict(TaskConfig.load("particle_mpc").mppi)
    options.update(num_particles=64, n_iters=3, seed=3)
    mppi = Mppi(MppiConfig.from_dict(options), reacher, process_group=process_group)
    result = mppi.optimize()
    return {"mean": result.action, "best_cost": result.best_cost, "cov": mppi.cov_action.clone()}


def _trajopt_problem(process_group=None):
    from curobo_lite.robot import Kinematics, RobotConfig
    from curobo_lite.types import JointState, Pose, TensorDeviceType
    from curobo_lite.wrap import TrajOptSolver

    torch.set_num_threads(1)
    tensor_args = TensorDeviceType(dtype=torch.float64)
    robot = RobotConfig.load("franka").to(tensor_args)
    solver = TrajOptSolver.from_config(
        robot=robot, num_seeds=4, tensor_args=tensor_args, process_group=process_group
    )
    targets = robot.retract_config + torch.tensor([[0.3], [-0.25]], dtype=torch.float64)
    fk = Kinematics(robot, tensor_args).forward(targets)
    start = JointState.from_position(robot.retract_config.expand(2, 7).clone())
    result = solver.solve_batch_pose(start, Pose(fk.ee_position, fk.ee_quaternion))
    return {
        "best_cost": result.debug["best_cost"],
        "seed_index": result.debug["seed_index"],
        "knots": result.solution.position,
        "success": result.success,
    }


def _mpc_commands(process_group=None):
    from curobo_lite.sim import IdealTracker, run_closed_loop
    from curobo_lite.types import JointState, Pose
    from curobo_lite.wrap import MpcSolver

    torch.set_num_threads(1)
    solver = MpcSolver.from_config(
        robot="franka", task="particle_mpc", num_particles=64, process_group=process_group
    )
    start = JointState.from_position(solver.robot_config.retract_config[None].clone())
    goal = Pose.from_list([0.45, 0.2, 0.45, 0.0, 1.0, 0.0, 0.0])
    return run_closed_loop(solver, IdealTracker(start), goal, 4).position


def _worker(rank: int, world: int, port: int, out_dir: str) -> None:
    import torch.distributed as dist

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=60))
    try:
        outcome = {
            "mppi": _mppi_problem(dist.group.WORLD),
            "trajopt": _trajopt_problem(dist.group.WORLD),
            "mpc": _mpc_commands(dist.group.WORLD),
        }
    except Exception as err:  # reported to the parent, which fails the test with it
        outcome = {"error": repr(err)}
    finally:
        dist.destroy_process_group()
    with open(Path(out_dir) / f"rank{rank}.pkl", "wb") as f:
        pickle.dump(outcome, f)


@pytest.fixture(scope="module")
def sharded(tmp_path_factory) -> list[dict]:
    out_dir = tmp_path_factory.mktemp("sharded")
    ctx = mp.get_context("spawn")
    port = _free_port()
    procs = [ctx.Process(target=_worker, args=(r, WORLD, port, str(out_dir))) for r in range(WORLD)]
    for p in procs:
        p.start()
    deadline = time.monotonic() + DEADLINE_S
    for p in procs:
        p.join(max(0.0, deadline - time.monotonic()))
    alive = [p for p in procs if p.is_alive()]
    for p in alive:
        p.kill()
    assert not alive, f"ranks did not finish within {DEADLINE_S} s"
    results = []
    for r in range(WORLD):
        path = out_dir / f"rank{r}.pkl"
        assert path.exists(), f"rank {r} wrote no result (exit code {procs[r].exitcode})"
        results.append(pickle.loads(path.read_bytes()))
    for r, outcome in enumerate(results):
        assert "error" not in outcome, f"rank {r}: {outcome['error']}"
    return results


@pytest.mark.slow
def test_sharded_mppi_agrees_across_ranks_and_with_one_process(sharded):
    rank0, rank1 = (r["mppi"] for r in sharded)
    for key in ("mean", "best_cost", "cov"):
        assert torch.equal(rank0[key], rank1[key]), key  # identical updates on every rank
    single = _mppi_problem()
    torch.testing.assert_close(rank0["best_cost"], single["best_cost"], rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(rank0["mean"], single["mean"], rtol=1e-4, atol=1e-4)


@pytest.mark.slow
def test_sharded_mpc_commands_agree_across_ranks_and_with_one_process(sharded):
    rank0, rank1 = (r["mpc"] for r in sharded)
    assert torch.equal(rank0, rank1)
    torch.testing.assert_close(rank0, _mpc_commands(), rtol=1e-4, atol=1e-5)


@pytest.mark.slow
def test_sharded_trajopt_agrees_across_ranks_and_with_one_process(sharded):
    rank0, rank1 = (r["trajopt"] for r in sharded)
    for key in ("best_cost", "seed_index", "knots", "success"):
        assert torch.equal(rank0[key], rank1[key]), key
    single = _trajopt_problem()
    assert torch.equal(rank0["seed_index"], single["seed_index"])
    torch.testing.assert_close(rank0["best_cost"], single["best_cost"], rtol=1e-6, atol=1e-9)
    torch.testing.assert_close(rank0["knots"], single["knots"], rtol=1e-6, atol=1e-8)
    assert bool(single["success"].all())


@pytest.mark.slow
def test_torchrun_entry_point(tmp_path):
    import json
    import subprocess
    import sys

    out = tmp_path / "result.json"
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node",
        "2",
        "-m",
        "curobo_lite.wrap.cli.sharded_solve",
        "--robot",
        "franka",
        "--goal",
        "0.45",
        "0.2",
        "0.45",
        "0",
        "1",
        "0",
        "0",
        "--seeds",
        "4",
        "--json",
        str(out),
    ]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    completed = subprocess.run(command, capture_output=True, text=True, timeout=DEADLINE_S, env=env)
    assert completed.returncode == 0, completed.stderr[-3000:]
    summary = json.loads(out.read_text())
    assert summary["world_size"] == 2 and summary["seeds"] == 4
    assert summary["success"] and summary["position_error"] < 0.005
