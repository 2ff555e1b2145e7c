"""Collision checking of sampled configurations, written as cuRobo's
examples/collision_check_example.py is.

Ported from cuRobo by replacing ``curobo.`` with ``curobo_lite.`` in the imports; the robot is
``franka_curobo.yml``, a robot file in cuRobo's layout. The distances follow cuRobo's sign
convention: positive in collision, zero when clear.
Run: ``python examples/curobo/collision_check_example.py``.
"""

import os

import torch

from curobo_lite.types.base import TensorDeviceType
from curobo_lite.util_file import join_path
from curobo_lite.wrap.model.robot_world import RobotWorld, RobotWorldConfig

ROBOT_FILE = join_path(os.path.dirname(os.path.abspath(__file__)), "franka_curobo.yml")

WORLD = {
    "cuboid": {
        "table": {"dims": [2.0, 2.0, 0.2], "pose": [0.4, 0.0, -0.11, 1, 0, 0, 0]},
        "cube_1": {"dims": [0.1, 0.1, 0.2], "pose": [0.4, 0.0, 0.5, 1, 0, 0, 0]},
    }
}


def demo_collision_check(robot_file=ROBOT_FILE, n_samples=64):
    tensor_args = TensorDeviceType()
    config = RobotWorldConfig.load_from_config(
        robot_file, WORLD, tensor_args, collision_activation_distance=0.0
    )
    curobo_fn = RobotWorld(config)

    generator = torch.Generator().manual_seed(0)
    q_sph = torch.rand((10, 1, 1, 4), generator=generator, dtype=tensor_args.dtype)
    # centres in a 0.8 m cube around the table top and the cube
    q_sph[..., :3] = q_sph[..., :3] * 0.8 + torch.tensor([0.0, -0.4, -0.2])
    q_sph[..., 3] = 0.2
    q_sph = q_sph.to(tensor_args.device)
    d = curobo_fn.get_collision_distance(q_sph)
    print("Sphere collision distance:", d.view(-1))

    q_s = curobo_fn.sample(n_samples, mask_valid=False)
    d_world, d_self = curobo_fn.get_world_self_collision_distance_from_joints(q_s)
    print("Collision Distance:")
    print("World:", d_world)
    print("Self:", d_self)
    return WORLD, q_sph, d, q_s, d_world, d_self


if __name__ == "__main__":
    demo_collision_check()
