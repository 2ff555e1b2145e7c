"""Where the time goes: a per-stage table for a trajopt solve and for MPC steps.

Each stage is a function of the library wrapped (here, not in the library) with a timer that
keeps *exclusive* times: a stage's time excludes the stages called inside it, so the rows add up
to the wall time of the solve. Stages:

- ``dynamics``: the step kernel (``KinematicModel.get_state_from_action``);
- ``forward kinematics``: ``Kinematics.forward`` (link poses and collision spheres);
- ``cost <name>``: each cost term's ``forward``;
- ``rollout (rest)``: ``ArmReacher.rollout_fn`` around the above (stacking, totals);
- ``backward``: the autograd pass of every evaluation (``_evaluate`` minus its rollout);
- ``line search``: ``Lbfgs._line_search`` minus its evaluations (candidates, Armijo, picks);
- ``L-BFGS update``: the rest of an iteration (direction, history push, bookkeeping);
- ``optimizer loop``: convergence checks and histories (``optimize`` minus its steps);
- ``MPPI sample`` / ``MPPI update``: drawing the particles / the weighted mean and covariance;
- ``MPC step (rest)``, ``trajopt (rest)``: filter, command, limits, metrics / IK ranking,
  seeds, retiming, interpolation and the final checks.

The wrapper costs about a microsecond per call, small next to every stage here.

Usage: ``python benchmarks/profile_stages.py [--threads N] [--goals 8] [--mpc-steps 50]``;
prints two tables and writes ``benchmarks/results/profile_stages.json``.
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import torch
from timing import write_json

from curobo_lite.opt import Lbfgs, Mppi
from curobo_lite.opt.gradient_base import GradientOptimizerBase
from curobo_lite.robot import Kinematics
from curobo_lite.rollout import ArmReacher
from curobo_lite.rollout.dynamics_model.kinematic_model import KinematicModel
from curobo_lite.types import JointState, Pose, TensorDeviceType
from curobo_lite.wrap import MpcSolver
from curobo_lite.wrap.trajopt.solver import TrajOptSolver

RESULTS = Path(__file__).resolve().parent / "results" / "profile_stages.json"


class StageTimer:
    """Exclusive wall time and call counts per stage of wrapped functions."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self._stack: list[list[float]] = []  # [start, time spent in child stages]
        self._undo: list[Callable[[], None]] = []

    def wrap(self, owner: object, attr: str, stage: str) -> None:
        original = getattr(owner, attr)
        is_class = isinstance(owner, type)

        def timed(*args, **kwargs):
            frame = [time.perf_counter(), 0.0]
            self._stack.append(frame)
            try:
                return original(*args, **kwargs)
            finally:
                self._stack.pop()
                elapsed = time.perf_counter() - frame[0]
                self.seconds[stage] += elapsed - frame[1]
                self.calls[stage] += 1
                if self._stack:
                    self._stack[-1][1] += elapsed

        if is_class:
            # a plain function on the class: bound like a method
            setattr(owner, attr, lambda obj, *a, **k: timed(obj, *a, **k))
            self._undo.append(lambda: setattr(owner, attr, original))
        else:
            setattr(owner, attr, timed)
            self._undo.append(lambda: delattr(owner, attr))

    def restore(self) -> None:
        while self._undo:
            self._undo.pop()()

    def reset(self) -> None:
        self.seconds.clear()
        self.calls.clear()

    def table(self, title: str, wall: float, runs: int) -> list[dict]:
        rows = sorted(self.seconds.items(), key=lambda kv: -kv[1])
        print(f"\n{title}: {wall / runs * 1e3:.1f} ms per run ({runs} runs)")
        print(f"{'stage':<28}{'ms/run':>10}{'share':>8}{'calls/run':>11}")
        out = []
        for stage, sec in rows:
            share = sec / wall
            per_run = sec / runs * 1e3
            calls = self.calls[stage] / runs
            print(f"{stage:<28}{per_run:>10.2f}{share:>8.1%}{calls:>11.1f}")
            out.append({"stage": stage, "ms_per_run": per_run, "share": share, "calls": calls})
        covered = sum(self.seconds.values()) / wall
        print(f"{'(stages cover)':<28}{'':>10}{covered:>8.1%}")
        return out


def wrap_common(timer: StageTimer, rollouts: list[ArmReacher]) -> None:
    timer.wrap(KinematicModel, "get_state_from_action", "dynamics")
    timer.wrap(Kinematics, "forward", "forward kinematics")
    timer.wrap(ArmReacher, "rollout_fn", "rollout (rest)")
    for rollout in rollouts:
        for name, cost in rollout.costs.items():
            timer.wrap(cost, "forward", f"cost {name}")


def profile_trajopt(timer: StageTimer, goals: int, tensor_args: TensorDeviceType) -> list[dict]:
    solver = TrajOptSolver.from_config(robot="franka", task="gradient_trajopt")
    robot = solver.robot_config
    low, high = robot.joint_limits.position
    u = torch.rand(goals + 1, robot.dof, generator=torch.Generator().manual_seed(3))
    fk = Kinematics(robot, tensor_args).forward(low + (high - low) * u)
    start = JointState.from_position(robot.retract_config[None].clone())
    solver.solve_pose(start, Pose(fk.ee_position[:1], fk.ee_quaternion[:1]))  # warm-up
    wrap_common(timer, [solver.rollout, solver.ik_rollout])
    timer.wrap(GradientOptimizerBase, "_evaluate", "backward")
    timer.wrap(Lbfgs, "_line_search", "line search")
    timer.wrap(Lbfgs, "_step", "L-BFGS update")
    timer.wrap(GradientOptimizerBase, "optimize", "optimizer loop")
    timer.wrap(solver, "solve_pose", "trajopt (rest)")
    timer.reset()
    t0 = time.perf_counter()
    for i in range(1, goals + 1):
        solver.solve_pose(start, Pose(fk.ee_position[i : i + 1], fk.ee_quaternion[i : i + 1]))
    wall = time.perf_counter() - t0
    rows = timer.table("trajopt solve_pose (Franka, 4 seeds)", wall, goals)
    timer.restore()
    return rows


def profile_mpc(timer: StageTimer, steps: int, tensor_args: TensorDeviceType) -> list[dict]:
    solver = MpcSolver.from_config(robot="franka", task="particle_mpc")
    robot = solver.robot_config
    fk = Kinematics(robot, tensor_args).forward(robot.retract_config[None] + 0.3)
    solver.update_goal(Pose(fk.ee_position, fk.ee_quaternion))
    state = JointState.from_position(robot.retract_config[None].clone())
    for _ in range(5):
        state = solver.step(state).action
    wrap_common(timer, [solver.rollout])
    timer.wrap(Mppi, "_sample", "MPPI sample")
    timer.wrap(Mppi, "_update", "MPPI update")
    timer.wrap(Mppi, "optimize", "MPPI (rest)")
    timer.wrap(solver, "step", "MPC step (rest)")
    timer.reset()
    t0 = time.perf_counter()
    for _ in range(steps):
        state = solver.step(state).action
    wall = time.perf_counter() - t0
    rows = timer.table("MpcSolver.step (Franka, 400 particles x 30 steps)", wall, steps)
    timer.restore()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=None, help="torch intra-op threads")
    parser.add_argument("--goals", type=int, default=8, help="trajopt goals (default 8)")
    parser.add_argument("--mpc-steps", type=int, default=50, help="MPC steps (default 50)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    tensor_args = TensorDeviceType()
    timer = StageTimer()
    trajopt_rows = profile_trajopt(timer, args.goals, tensor_args)
    mpc_rows = profile_mpc(timer, args.mpc_steps, tensor_args)
    write_json(
        str(RESULTS),
        {"goals": args.goals, "mpc_steps": args.mpc_steps},
        {"trajopt": trajopt_rows, "mpc": mpc_rows},
    )


if __name__ == "__main__":
    main()
