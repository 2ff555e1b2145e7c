"""The dataset worker's batched planning (issue 33): problems that share one world go to
MotionGen.plan_batch together, and each row gets its own problem's result.

Checked against independent references: each solved plan starts at its own start and ends,
by the robot file's joint tree (not MotionGen's kinematics), at its own goal pose.
"""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("pyarrow")

from curobo_lite.data.worker import plan_problems  # noqa: E402
from curobo_lite.geom import WorldConfig  # noqa: E402
from curobo_lite.robot.joints import link_poses  # noqa: E402
from curobo_lite.scenes import MbmProblem  # noqa: E402
from curobo_lite.scenes.families import matrix_from_quat  # noqa: E402
from curobo_lite.wrap import MotionGen  # noqa: E402

GOALS = [
    [0.5, -0.3, 0.25, 0.0, 1.0, 0.0, 0.0],
    [0.45, 0.25, 0.35, 0.0, 1.0, 0.0, 0.0],
]


def test_problems_sharing_a_world_are_planned_in_one_batch(monkeypatch):
    world = WorldConfig.load("table")
    motion_gen = MotionGen.from_config("franka", world)
    retract = motion_gen.robot_config.retract_config.tolist()
    problems = [
        MbmProblem("table", 0, i, world, retract, goal, retract, target="")
        for i, goal in enumerate(GOALS)
    ]
    calls = []
    plan_batch = motion_gen.plan_batch

    def counting(start, goal):
        calls.append(goal.batch)
        return plan_batch(start, goal)

    monkeypatch.setattr(motion_gen, "plan_batch", counting)
    columns = plan_problems(motion_gen, problems)
    assert calls == [len(GOALS)]
    assert [c["status"] for c in columns] == ["SUCCESS"] * len(GOALS)
    robot = motion_gen.robot_config
    for goal, c in zip(GOALS, columns, strict=True):
        plan = torch.tensor(c["plan"], dtype=torch.float64)
        assert plan.shape[1] == 7 and plan.shape[0] >= 2 and c["dt"] > 0
        assert torch.allclose(plan[0], torch.tensor(retract, dtype=torch.float64), atol=1e-4)
        values = dict(zip(robot.joint_names, plan[-1].tolist(), strict=True))
        hand = link_poses(robot.joints, robot.base_link, values | dict(robot.lock_joints))
        hand = torch.as_tensor(hand[robot.ee_link], dtype=torch.float64)
        assert torch.linalg.norm(hand[:3, 3] - torch.tensor(goal[:3], dtype=torch.float64)) < 0.005
        rotation = torch.as_tensor(matrix_from_quat(torch.tensor(goal[3:]).numpy()))
        cos_angle = ((rotation.T @ hand[:3, :3]).trace() - 1) / 2
        assert cos_angle > torch.cos(torch.tensor(0.05, dtype=torch.float64))
