"""The problem options (robot, task, world, goal) are declared once and parsed alike by the
``mpc`` and ``trajopt`` commands and the ``torchrun`` entry point."""

from __future__ import annotations

import argparse

import numpy as np
import pytest
import torch

from curobo_lite.types import TensorDeviceType
from curobo_lite.wrap.cli.args import add_problem_arguments, goal_pose

GOAL = ["0.4", "-0.1", "0.5", "0", "2", "0", "0"]  # unnormalized quaternion on purpose


def _front_end_parsers() -> dict[str, argparse.ArgumentParser]:
    from curobo_lite.wrap.cli import mpc as mpc_command
    from curobo_lite.wrap.cli import trajopt as trajopt_cli
    from curobo_lite.wrap.cli.sharded_solve import build_parser

    mpc_root = argparse.ArgumentParser(prog="curobo-lite")
    mpc_command.register(mpc_root.add_subparsers(dest="command"))
    trajopt = argparse.ArgumentParser(prog="trajopt")
    trajopt_cli.add_arguments(trajopt)
    return {
        "mpc": _Sub(mpc_root, "mpc"),
        "trajopt": trajopt,
        "sharded_solve": build_parser(),
    }


class _Sub:
    """A root parser seen as its sub-command: ``parse_args(argv)`` prepends the command."""

    def __init__(self, root: argparse.ArgumentParser, command: str) -> None:
        self.root, self.command = root, command

    def parse_args(self, argv: list[str]) -> argparse.Namespace:
        return self.root.parse_args([self.command, *argv])


def test_front_ends_parse_the_problem_alike() -> None:
    defaults = {"mpc": "particle_mpc", "trajopt": "gradient_trajopt"}
    defaults["sharded_solve"] = "gradient_trajopt"
    for name, parser in _front_end_parsers().items():
        args = parser.parse_args(["--goal", *GOAL, "--world", "table", "--robot", "ur5e"])
        assert args.goal == [float(x) for x in GOAL], name
        assert (args.world, args.robot, args.task) == ("table", "ur5e", defaults[name]), name
        plain = parser.parse_args(["--goal", *GOAL])
        assert plain.world is None and plain.robot == "franka", name


@pytest.mark.parametrize("argv", [[], ["--goal", "1", "2", "3"], ["--goal", *GOAL[:6], "x"]])
def test_front_ends_reject_a_missing_or_short_goal(argv, capsys) -> None:
    for name, parser in _front_end_parsers().items():
        with pytest.raises(SystemExit) as err:
            parser.parse_args(argv)
        assert err.value.code == 2, name
    assert "--goal" in capsys.readouterr().err


def test_joint_goal_only_where_offered(capsys) -> None:
    parsers = _front_end_parsers()
    args = parsers["trajopt"].parse_args(["--joint-goal", "0.1", "0.2"])
    assert args.goal is None and args.joint_goal == [0.1, 0.2]
    with pytest.raises(SystemExit):
        parsers["trajopt"].parse_args(["--goal", *GOAL, "--joint-goal", "0.1"])
    assert "not allowed with" in capsys.readouterr().err
    for name in ("mpc", "sharded_solve"):
        with pytest.raises(SystemExit):
            parsers[name].parse_args(["--joint-goal", "0.1"])


def test_goal_pose_normalizes_on_the_requested_device_and_dtype() -> None:
    parser = argparse.ArgumentParser()
    group = add_problem_arguments(parser, task_default="some_task")
    assert {a.dest for a in group._group_actions} == {"robot", "task", "world", "goal"}
    args = parser.parse_args(["--goal", *GOAL])
    pose = goal_pose(args, TensorDeviceType(dtype=torch.float64))
    values = np.array([float(x) for x in GOAL])
    np.testing.assert_allclose(pose.position.numpy(), values[None, :3], rtol=0, atol=0)
    q = values[3:] / np.linalg.norm(values[3:])
    np.testing.assert_allclose(pose.quaternion.numpy(), q[None], rtol=1e-15)
    assert pose.position.dtype == torch.float64
    assert goal_pose(argparse.Namespace(goal=None), TensorDeviceType()) is None
    with pytest.raises(ValueError, match="zero norm"):
        goal_pose(
            parser.parse_args(["--goal", "0", "0", "0", "0", "0", "0", "0"]), TensorDeviceType()
        )


def test_device_option_is_declared_alike_and_checked() -> None:
    from curobo_lite.wrap.cli.args import device_tensor_args

    for name, parser in _front_end_parsers().items():
        if name == "sharded_solve":  # its device comes from the torchrun rank
            continue
        args = parser.parse_args(["--goal", *GOAL])
        assert args.device == "cpu" and args.cuda_graph is False, name
        args = parser.parse_args(["--goal", *GOAL, "--device", "cpu", "--cuda-graph"])
        assert device_tensor_args(args).device == torch.device("cpu") and args.cuda_graph, name
    for bad in ("tpu", "gpu0", "cuda:x", ""):
        with pytest.raises(ValueError, match=f"--device: expected cpu, cuda or cuda:N.*{bad!r}"):
            device_tensor_args(argparse.Namespace(device=bad))
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if count == 0:
        with pytest.raises(ValueError, match="--device: received 'cuda', but torch sees no CUDA"):
            device_tensor_args(argparse.Namespace(device="cuda"))
    with pytest.raises(ValueError, match="--device"):
        device_tensor_args(argparse.Namespace(device=f"cuda:{count}"))


@pytest.mark.parametrize("command", ["mpc", "plan", "trajopt"])
def test_commands_report_an_unusable_device_before_solving(command, capsys) -> None:
    from curobo_lite.cli import main

    try:  # trajopt exits through SystemExit, mpc and plan return the status
        code = main([command, "--goal", *GOAL, "--device", "tpu"])
    except SystemExit as exit_:
        code = exit_.code
    assert code == 2
    assert "--device: expected cpu, cuda or cuda:N, received 'tpu'" in capsys.readouterr().err
