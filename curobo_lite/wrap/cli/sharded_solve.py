"""Sharded trajectory optimization, launched with ``torchrun``.

One machine, two processes::

    torchrun --nproc_per_node 2 -m curobo_lite.wrap.cli.sharded_solve --robot franka \\
        --goal 0.45 0.2 0.45 0 1 0 0 --seeds 8

Every rank builds the same seeds, optimizes its share, and the best seed per problem is chosen
across ranks; rank 0 prints the result (``--json`` writes it). Run without ``torchrun`` it is a
plain single-process solve (``python -m curobo_lite.wrap.cli.sharded_solve ...``). gloo is used on
CPU, NCCL when CUDA is available.

It lives in ``wrap`` because it drives :class:`~curobo_lite.wrap.TrajOptSolver`;
:mod:`curobo_lite.distributed` below it only provides the process-group helpers.
"""

from __future__ import annotations

import argparse
import json
import sys

import torch.distributed as dist

from curobo_lite.config_files import atomic_open
from curobo_lite.distributed.group import DistributedConfig, init_from_env
from curobo_lite.rollout import TaskConfig
from curobo_lite.types import JointState, TensorDeviceType
from curobo_lite.wrap.cli.args import add_problem_arguments, goal_pose
from curobo_lite.wrap.trajopt.solver import TrajOptSolver


def build_parser() -> argparse.ArgumentParser:
    """The entry point's options: the shared problem group plus ``--seeds`` and ``--json``."""
    parser = argparse.ArgumentParser(
        prog="python -m curobo_lite.wrap.cli.sharded_solve",
        description="Trajectory optimization to a pose with seeds sharded over torchrun ranks.",
    )
    add_problem_arguments(parser, task_default="gradient_trajopt")
    parser.add_argument(
        "--seeds",
        type=int,
        default=None,
        help="seeds in total over all ranks (default: the task's)",
    )
    parser.add_argument("--json", default=None, help="rank 0 writes the result here")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv``, join the ``torchrun`` process group (if any), solve, report on rank 0."""
    args = build_parser().parse_args(argv)
    task = TaskConfig.load(args.task)
    try:
        distributed = DistributedConfig.from_dict(task.distributed)
    except (TypeError, ValueError) as err:
        raise task.error(err) from None
    # every collective gives up after the task's timeout: a rank that raised, exited or hangs
    # ends the others with a DistributedError instead of blocking the job
    context = init_from_env(timeout=distributed.timeout)
    group = dist.group.WORLD if context.initialized else None
    try:
        tensor_args = TensorDeviceType(device=context.device)
        solver = TrajOptSolver.from_config(
            robot=args.robot,
            task=task,
            num_seeds=args.seeds,
            tensor_args=tensor_args,
            process_group=group,
            world=args.world,
        )
        start = JointState.from_position(solver.robot_config.retract_config[None].clone())
        result = solver.solve_pose(start, goal_pose(args, tensor_args))
        summary = {
            "world_size": context.world_size,
            "seeds": solver.config.num_seeds,
            "success": bool(result.success[0]),
            "position_error": float(result.position_error[0]),
            "rotation_error": float(result.rotation_error[0]),
            "best_cost": float(result.debug["best_cost"][0]),
            "motion_time": float(result.motion_time[0]),
            "solve_time": result.solve_time,
            "collision_free": (
                None if result.collision_free is None else bool(result.collision_free[0])
            ),
        }
        if context.rank == 0:
            print(
                f"{context.world_size} rank(s) x {solver.config.num_seeds} seeds in total: "
                f"success {summary['success']}, position error {summary['position_error']:.4f} m,"
                f" rotation error {summary['rotation_error']:.4f} rad, motion "
                f"{summary['motion_time']:.2f} s, solve {summary['solve_time']:.2f} s"
            )
            if args.json:
                with atomic_open(args.json, "w", encoding="utf-8") as f:
                    json.dump(summary, f, indent=2)
    finally:
        if context.initialized:
            dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
