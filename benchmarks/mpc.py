"""MPC benchmark: one MPPI iteration, ours vs pytorch_mppi on the same problem, and our MPC step.

Same problem on both sides: the Franka, 400 particles, horizon 30, ACCELERATION control with
semi-implicit Euler at a uniform 20 ms, and the same costs (end-effector pose with running and
terminal weights, joint position/velocity bounds, acceleration smoothness) evaluated by our cost
classes and our forward kinematics. pytorch_mppi rolls out step by step through callables; we roll
out the whole batch at once with the Warp kernel. Also timed: ``MpcSolver.step`` with the bundled
``particle_mpc`` task (what the closed loop runs). The two iterations are timed in five
alternating rounds, and the speedup is the median of the rounds' ratios (with their range), so
that a drift of the machine's speed during the run weighs on both sides alike.

On CUDA the iteration and the step are also timed replayed from CUDA graphs
(``use_cuda_graph: true``).

Usage: ``python benchmarks/mpc.py [--threads N] [--device cuda]``; writes
``benchmarks/results/mpc.json``. pytorch_mppi: ``pip install --no-deps pytorch-mppi`` (optional;
skipped when missing).
"""

from __future__ import annotations

import argparse
import os
import statistics
from collections.abc import Callable
from functools import partial

import torch
from timing import timeit as _timeit
from timing import write_json

from curobo_lite.opt import Mppi, MppiConfig
from curobo_lite.opt.cuda_graph import GraphedCall
from curobo_lite.robot import Kinematics
from curobo_lite.rollout import ArmReacher, Goal, TaskConfig
from curobo_lite.rollout.cost import BoundCost, PoseCost, SmoothnessCost
from curobo_lite.types import JointState, Pose, TensorDeviceType
from curobo_lite.wrap import MpcSolver

timeit = partial(_timeit, min_time=0.4, min_reps=10)
ROUNDS = 5  # alternating rounds of ours and pytorch_mppi

PARTICLES, HORIZON, DT = 400, 30, 0.02
COSTS = {
    "pose_cost": {"terminal_weight": [60.0, 15.0], "run_weight": [15.0, 4.0]},
    "bound_cost": {
        "bound_weight": [5000.0, 5000.0, 0.0, 0.0],
        "activation_distance": [0.05, 0.1, 0.1, 0.1],
    },
    "smooth_cost": {"acceleration_weight": 0.002},
}


def problem(tensor_args: TensorDeviceType):
    task = TaskConfig.load("particle_mpc")
    task.model = {
        "horizon": HORIZON,
        "control_space": "ACCELERATION",
        "dt_traj_params": {"base_dt": DT},
    }
    task.cost = COSTS
    reacher = ArmReacher.from_task(task, "franka", tensor_args)
    robot = reacher.robot_config
    fk = Kinematics(robot, tensor_args).forward(robot.retract_config[None] + 0.3)
    goal = Pose(fk.ee_position, fk.ee_quaternion)
    start = JointState.from_position(robot.retract_config[None].clone())
    reacher.update_params(Goal(goal_pose=goal), start)
    mppi_options = dict(task.mppi, num_particles=PARTICLES, n_iters=1, sample_mode="GAUSSIAN")
    return reacher, goal, mppi_options


def ours_iteration(reacher, mppi_options, cuda_graph: bool = False) -> Callable[[], object]:
    """One shift + MPPI iteration; with ``cuda_graph`` (CUDA only) replayed from a graph."""
    mppi = Mppi(MppiConfig.from_dict(mppi_options), reacher)

    def iterate():
        with torch.no_grad():
            mppi.shift(1)
            return mppi.optimize()

    if not cuda_graph:
        return iterate
    return GraphedCall(iterate, reacher.tensor_args.device, True, generators=(mppi._gen,))


def mpc_solver(tensor_args: TensorDeviceType, goal: Pose, cuda_graph: bool) -> MpcSolver:
    task = TaskConfig.load("particle_mpc")
    task.mpc = dict(task.mpc, use_cuda_graph=cuda_graph)
    solver = MpcSolver.from_config(robot="franka", task=task, tensor_args=tensor_args)
    solver.update_goal(goal)
    return solver


def pytorch_mppi_iteration(reacher, goal, mppi_options, tensor_args) -> Callable[[], object]:
    from pytorch_mppi import MPPI

    robot = reacher.robot_config
    kinematics = Kinematics(robot, tensor_args)
    dof = robot.dof
    pose_cost = PoseCost.from_dict(COSTS["pose_cost"], tensor_args)
    bound_cost = BoundCost.from_dict(
        COSTS["bound_cost"], tensor_args, joint_limits=robot.joint_limits
    )
    smooth_cost = SmoothnessCost.from_dict(COSTS["smooth_cost"], tensor_args)
    run_weights = pose_cost.config.run_weight
    # the bound cost as a pytorch_mppi user writes it (plain torch, per step): BoundCost's
    # formula, sum_q w_q |x - clamp(x, lower_q, upper_q)|^2 over position and velocity
    bounds = bound_cost.config.activation_bounds()
    weights = bound_cost.config.bound_weight * bound_cost.config.weight

    def torch_bound_cost(q, qd):
        cost = q.new_zeros(q.shape[0])
        for i, (name, x) in enumerate((("position", q), ("velocity", qd))):
            excess = x - torch.clamp(x, bounds[name][0], bounds[name][1])
            cost = cost + weights[i] * excess.square().sum(-1)
        return cost

    def dynamics(state, action):
        q, qd = state[:, :dof], state[:, dof:]
        qd = qd + action * DT
        return torch.cat((q + qd * DT, qd), dim=1)

    def joint_state(state, action):
        q, qd = state[:, None, :dof], state[:, None, dof:]
        return JointState(q, qd, action[:, None])

    def running_cost(state, action):
        fk = kinematics.forward(state[:, :dof])
        position_error = (fk.ee_position - goal.position).norm(dim=-1)
        dot = (fk.ee_quaternion * goal.quaternion).sum(-1).abs().clamp(max=1.0)
        rotation_error = 2.0 * torch.acos(dot)
        js = joint_state(state, action)
        return (
            run_weights[0] * position_error
            + run_weights[1] * rotation_error
            + torch_bound_cost(state[:, :dof], state[:, dof:])
            + smooth_cost.forward(js)[:, 0]
        )

    def terminal_cost(states, actions):
        final = states[0, :, -1, :dof]
        fk = kinematics.forward(final)
        cost = pose_cost.forward(fk.ee_position[:, None], fk.ee_quaternion[:, None], goal)
        return cost[:, -1]

    sigma = torch.eye(dof, **tensor_args.as_kwargs()) * float(mppi_options["init_cov"])
    controller = MPPI(
        dynamics,
        running_cost,
        2 * dof,
        sigma,
        num_samples=PARTICLES,
        horizon=HORIZON,
        device=tensor_args.device,
        terminal_state_cost=terminal_cost,
        lambda_=float(mppi_options["beta"]),
        u_min=reacher.action_bound_lows,
        u_max=reacher.action_bound_highs,
    )
    state = torch.cat((robot.retract_config, torch.zeros(dof, **tensor_args.as_kwargs())))

    def iterate():
        with torch.no_grad():
            return controller.command(state)

    return iterate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=None, help="torch intra-op threads")
    parser.add_argument(
        "--out", default=os.path.join(os.path.dirname(__file__), "results", "mpc.json")
    )
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    tensor_args = TensorDeviceType(device=device)
    reacher, goal, mppi_options = problem(tensor_args)
    ours = ours_iteration(reacher, mppi_options)
    try:
        baseline = pytorch_mppi_iteration(reacher, goal, mppi_options, tensor_args)
    except ImportError:
        baseline = None
        print("pytorch_mppi not installed: `pip install --no-deps pytorch-mppi` to compare")
    if baseline is None:
        rows = {"ours_mppi_iteration": timeit(ours, device)}
    else:
        # side by side: alternating rounds, so a drift of the machine's speed (up to 2x within
        # an hour on a shared VM) weighs on both; the speedup is the median of the rounds' ratios
        rounds = [(timeit(ours, device), timeit(baseline, device)) for _ in range(ROUNDS)]
        ratios = sorted(theirs / mine for mine, theirs in rounds)
        rows = {
            "ours_mppi_iteration": statistics.median(mine for mine, _ in rounds),
            "pytorch_mppi_iteration": statistics.median(theirs for _, theirs in rounds),
            "speedup": statistics.median(ratios),
            "speedup_range": [ratios[0], ratios[-1]],
        }

    solver = mpc_solver(tensor_args, goal, cuda_graph=False)
    state = JointState.from_position(solver.robot_config.retract_config[None].clone())
    rows["mpc_step"] = timeit(lambda: solver.step(state), device, min_time=1.0)
    if device.type == "cuda":
        # the same iteration and step replayed from CUDA graphs (use_cuda_graph: true)
        rows["ours_mppi_iteration_cuda_graph"] = timeit(
            ours_iteration(reacher, mppi_options, cuda_graph=True), device
        )
        graphed = mpc_solver(tensor_args, goal, cuda_graph=True)
        rows["mpc_step_cuda_graph"] = timeit(lambda: graphed.step(state), device, min_time=1.0)
    cfg = solver.mppi.config
    print(
        f"MPPI on the Franka, {PARTICLES} particles x horizon {HORIZON}, float32, device "
        f"{device}, torch threads {torch.get_num_threads()} (median ms)"
    )
    print(f"  one MPPI iteration, curobo_lite : {rows['ours_mppi_iteration'] * 1e3:8.2f}")
    if "pytorch_mppi_iteration" in rows:
        print(
            f"  one MPPI iteration, pytorch_mppi: {rows['pytorch_mppi_iteration'] * 1e3:8.2f}"
            f"   ({rows['speedup']:.1f}x, rounds {rows['speedup_range'][0]:.1f}-"
            f"{rows['speedup_range'][1]:.1f}x)"
        )
    print(
        f"  MpcSolver.step (particle_mpc: {cfg.num_particles} particles, {cfg.n_iters} "
        f"iteration(s), horizon {solver.dynamics_model.horizon}): {rows['mpc_step'] * 1e3:.2f}"
    )
    if "mpc_step_cuda_graph" in rows:
        print(
            f"  with use_cuda_graph: one MPPI iteration "
            f"{rows['ours_mppi_iteration_cuda_graph'] * 1e3:.2f}, MpcSolver.step "
            f"{rows['mpc_step_cuda_graph'] * 1e3:.2f}"
        )
    meta = {
        "device": str(device),
        "particles": PARTICLES,
        "horizon": HORIZON,
        "mpc_task_particles": cfg.num_particles,
        "mpc_task_iters": cfg.n_iters,
        "unit": "seconds (median)",
    }
    write_json(args.out, meta, rows)


if __name__ == "__main__":
    main()
