"""Rollout benchmark: ``ArmReacher.rollout_fn`` on the Franka, forward and forward+backward,
with the share of time spent in the step kernel, forward kinematics and the costs.

Each component is also timed on its own on the same data (kernel: ``get_state_from_action``;
kinematics: ``Kinematics.forward`` on the trajectory; costs: every enabled cost term on a fixed
rolled-out state); for forward+backward each component's backward is driven by a fixed random
upstream gradient. Shares are component time / sum of component times.

Usage: ``python benchmarks/rollout.py [--device cuda] [--threads N]``; writes
``benchmarks/results/rollout.json``.
"""

from __future__ import annotations

import argparse
import os

import torch
from timing import timeit, write_json

from curobo_lite.robot import Kinematics
from curobo_lite.rollout import ArmReacher, Goal
from curobo_lite.types import JointState, Pose, TensorDeviceType

CASES = [(400, 30, "particle_mpc"), (4, 32, "gradient_trajopt")]


def build(task: str, batch: int, horizon: int, device: torch.device):
    tensor_args = TensorDeviceType(device=device)
    reacher = ArmReacher.from_task(task, "franka", tensor_args)
    assert reacher.action_horizon == horizon, (task, reacher.action_horizon)
    robot = reacher.robot_config
    q_goal = robot.retract_config[None] + 0.3
    fk = Kinematics(robot, tensor_args).forward(q_goal)
    start = JointState.from_position(robot.retract_config[None].clone())
    reacher.update_params(Goal(goal_pose=Pose(fk.ee_position, fk.ee_quaternion)), start)
    g = torch.Generator().manual_seed(0)
    if reacher.dynamics_model.control_space.value == "POSITION":
        act = robot.retract_config + 0.05 * torch.randn(batch, horizon, 7, generator=g).to(device)
    else:
        act = 0.5 * torch.randn(batch, horizon, 7, generator=g).to(device)
    return reacher, act.contiguous()


def bench_case(batch: int, horizon: int, task: str, device: torch.device) -> dict:
    reacher, act = build(task, batch, horizon, device)
    model = reacher.dynamics_model
    start = reacher.start_state
    problem_index = reacher._problem_index(batch)
    row: dict = {
        "batch": batch,
        "horizon": horizon,
        "task": task,
        "control_space": model.control_space.value,
    }

    with torch.no_grad():
        row["rollout_fwd"] = timeit(lambda: reacher.rollout_fn(act), device)
    act_grad = act.clone().requires_grad_()

    def rollout_fb():
        reacher.rollout_fn(act_grad).total.sum().backward()
        act_grad.grad = None

    row["rollout_fwd_bwd"] = timeit(rollout_fb, device)

    # components, forward only
    with torch.no_grad():
        state = model.forward(start, act, problem_index)
        positions = state.state_seq.position.clone()
        row["kernel_fwd"] = timeit(
            lambda: model.get_state_from_action(start, act, problem_index), device
        )
        row["kinematics_fwd"] = timeit(lambda: model.kinematics.forward(positions), device)
        row["costs_fwd"] = timeit(lambda: reacher._cost_terms(state, problem_index), device)

    # components, forward + backward with fixed upstream gradients
    def kernel_fb():
        seq = model.get_state_from_action(start, act_grad, problem_index)
        torch.autograd.backward(
            [seq.position, seq.velocity, seq.acceleration, seq.jerk],
            [torch.ones_like(seq.position)] * 4,
        )
        act_grad.grad = None

    q = positions.clone().requires_grad_()

    def kinematics_fb():
        fk = model.kinematics.forward(q)
        torch.autograd.backward(
            [fk.ee_position, fk.ee_quaternion],
            [torch.ones_like(fk.ee_position), torch.ones_like(fk.ee_quaternion)],
        )
        q.grad = None

    leaf_state = JointState(
        *(
            t.detach().clone().requires_grad_()
            for t in (
                state.state_seq.position,
                state.state_seq.velocity,
                state.state_seq.acceleration,
                state.state_seq.jerk,
            )
        )
    )
    ee_pos = state.ee_position.detach().clone().requires_grad_()
    ee_quat = state.ee_quaternion.detach().clone().requires_grad_()
    grad_state = type(state)(
        leaf_state,
        type(state.kinematics)(
            ee_pos,
            ee_quat,
            state.kinematics.link_position,
            state.kinematics.link_quaternion,
            state.kinematics.link_names,
        ),
    )

    def costs_fb():
        terms = reacher._cost_terms(grad_state, problem_index)
        sum(t.sum() for t in terms.values()).backward()
        for t in (*vars(leaf_state).values(), ee_pos, ee_quat):
            if isinstance(t, torch.Tensor):
                t.grad = None

    row["kernel_fwd_bwd"] = timeit(kernel_fb, device)
    row["kinematics_fwd_bwd"] = timeit(kinematics_fb, device)
    row["costs_fwd_bwd"] = timeit(costs_fb, device)
    for phase in ("fwd", "fwd_bwd"):
        parts = {c: row[f"{c}_{phase}"] for c in ("kernel", "kinematics", "costs")}
        total = sum(parts.values())
        for c, value in parts.items():
            row[f"share_{c}_{phase}"] = value / total
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=None, help="torch intra-op threads")
    parser.add_argument(
        "--out", default=os.path.join(os.path.dirname(__file__), "results", "rollout.json")
    )
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    print(
        f"ArmReacher.rollout_fn on the Franka, float32, device {device}, torch threads "
        f"{torch.get_num_threads()} (ms, median)"
    )
    header = (
        f"{'B x H':>9} {'space':>13} | {'rollout fwd':>11} {'f+b':>8} | "
        f"{'kernel':>7} {'kin':>7} {'costs':>7} (fwd) | "
        f"{'kernel':>7} {'kin':>7} {'costs':>7} (f+b) | shares fwd, f+b"
    )
    print(header)
    print("-" * len(header))
    rows = []
    for batch, horizon, task in CASES:
        row = bench_case(batch, horizon, task, device)
        rows.append(row)
        ms = {
            k: v * 1e3 for k, v in row.items() if isinstance(v, float) and not k.startswith("share")
        }
        shares = " ".join(
            f"{c[:3]} {row[f'share_{c}_fwd']:.0%}/{row[f'share_{c}_fwd_bwd']:.0%}"
            for c in ("kernel", "kinematics", "costs")
        )
        print(
            f"{batch:>4} x {horizon:<3} {row['control_space']:>13} | {ms['rollout_fwd']:>11.2f} "
            f"{ms['rollout_fwd_bwd']:>8.2f} | {ms['kernel_fwd']:>7.2f} "
            f"{ms['kinematics_fwd']:>7.2f} "
            f"{ms['costs_fwd']:>7.2f}       | {ms['kernel_fwd_bwd']:>7.2f} "
            f"{ms['kinematics_fwd_bwd']:>7.2f} {ms['costs_fwd_bwd']:>7.2f}       | {shares}"
        )
    meta = {
        "device": str(device),
        "unit": "seconds (median)",
    }
    write_json(args.out, meta, rows)


if __name__ == "__main__":
    main()
