"""Plot a closed-loop MPC run against the MuJoCo plant: writes ``docs/img/closed_loop.png``.

The Franka reaches over the table scene's block with MPC (``particle_mpc``) while MuJoCo
simulates it at 1 kHz with 20 % heavier links than the controller's model and 10 ms command
latency. Panels: simulated joint positions, joint tracking error (command minus simulation),
end-effector error, and clearance (the MPC's sphere-to-obstacle distance, reported up to its
10 cm check range, and MuJoCo's robot-obstacle penetration).

Usage: ``python tools/make_closed_loop_figure.py [--out docs/img/closed_loop.png]
[--steps 150]`` (about a minute on a laptop CPU; no download).
"""

from __future__ import annotations

import argparse
import os

import torch
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from curobo_lite.sim import MujocoPlant, run_closed_loop
from curobo_lite.types import JointState, Pose
from curobo_lite.wrap import MpcSolver

GOAL = [0.5, 0.2, 0.28, 0.0, 1.0, 0.0, 0.0]  # just above the table scene's block
MASS_SCALE, LATENCY = 1.2, 0.01


class CommandLog:
    """Wraps a plant and keeps every command it receives (for the plot)."""

    def __init__(self, plant: MujocoPlant) -> None:
        self.plant = plant
        self.commands: list[torch.Tensor] = []

    def __getattr__(self, name: str):
        return getattr(self.plant, name)

    def step(self, command: JointState) -> JointState:
        self.commands.append(command.position[0].detach().cpu().clone())
        return self.plant.step(command)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=os.path.join("docs", "img", "closed_loop.png"))
    parser.add_argument("--steps", type=int, default=150)
    args = parser.parse_args()
    torch.set_num_threads(1)
    solver = MpcSolver.from_config(robot="franka", task="particle_mpc", world="table")
    start = JointState.from_position(solver.robot_config.retract_config[None].clone())
    options = {"control_dt": solver.control_dt, "mass_scale": MASS_SCALE}
    plant = CommandLog(
        MujocoPlant(
            solver.robot_config,
            solver.world_collision.world,
            {**options, "command_latency": LATENCY},
            start,
        )
    )
    record = run_closed_loop(
        solver, plant, Pose.from_list(GOAL), args.steps, latency_compensation=LATENCY
    )
    commands = torch.stack(plant.commands)
    t = record.time.numpy()

    fig = Figure(figsize=(15, 3.8), dpi=85)
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, 4)
    tracking = (commands - record.position).abs() * 1000
    for j, name in enumerate(solver.robot_config.joint_names):
        (line,) = axes[0].plot(t, record.position[:, j].numpy(), lw=1.4, label=name[-6:])
        axes[3].semilogy(t, tracking[:, j].numpy().clip(1e-3), color=line.get_color(), lw=0.9)
    axes[0].set_title("joint position in MuJoCo [rad]", fontsize=9)
    axes[0].legend(fontsize=6, ncol=2)
    axes[3].set_title("joint tracking error |command - MuJoCo| [mrad]", fontsize=9)
    axes[1].semilogy(t, record.position_error.numpy(), label="position [m]")
    axes[1].semilogy(t, record.rotation_error.numpy(), label="rotation [rad]")
    axes[1].axhline(0.01, color="C0", ls=":", lw=0.8)
    axes[1].axhline(0.05, color="C1", ls=":", lw=0.8)
    axes[1].set_title("end-effector error (dotted: 1 cm, 0.05 rad)", fontsize=9)
    axes[1].legend(fontsize=7)
    axes[2].plot(t, record.world_distance.numpy() * 1000, label="MPC sphere clearance (<= 100)")
    axes[2].plot(t, -record.max_penetration.numpy() * 1000, label="MuJoCo contact (-penetration)")
    axes[2].axhline(0.0, color="k", lw=0.6)
    axes[2].set_title("clearance to obstacles [mm]", fontsize=9)
    axes[2].legend(fontsize=7)
    for ax in axes:
        ax.set_xlabel("simulated time [s]")
    fig.suptitle(
        f"MPC vs MuJoCo (1 kHz, computed torque): Franka over the table scene's block, links "
        f"{MASS_SCALE:g}x heavier than modelled, {LATENCY * 1000:.0f} ms command latency",
        fontsize=10,
    )
    fig.tight_layout()
    directory = os.path.dirname(args.out)
    if directory:
        os.makedirs(directory, exist_ok=True)
    fig.savefig(args.out)
    print(
        f"{args.out}: final error {float(record.position_error[-1]) * 100:.2f} cm, "
        f"{float(record.rotation_error[-1]):.4f} rad; contacts "
        f"{int((record.contact_count > 0).sum())}; median solve "
        f"{float(record.solve_time.median()) * 1e3:.1f} ms"
    )


if __name__ == "__main__":
    main()
