"""The planning process of :class:`~curobo_lite.wrap.reactive.background_process.ProcessPlanner`:
a fresh interpreter that runs :func:`main` with the socket ``FD`` to its parent. It receives the
robot, world, device and MotionGen options, builds its planner and makes one short plan (the
first plan of a process loads the Warp modules, ~2 s), answers ``("ready", None)`` (or
``("failed", error)``), then plans each job
``(job_id, start [1, D], goal, world snapshot, revision, held)`` (``held``: what the robot
holds, link -> objects, when it changed, else ``None``) into ``(job_id, result, error)`` until
the parent sends ``None`` or goes away. Messages are plain pickles (:func:`send`, :func:`receive`):
multiprocessing's own pickler would hand tensors over by file descriptor, which needs a process
that multiprocessing started.
"""

from __future__ import annotations

import os
import pickle
import sys
from multiprocessing.connection import Connection
from typing import Any

import torch


def send(conn: Connection, message: Any) -> None:
    """Pickle ``message`` by value onto ``conn``."""
    conn.send_bytes(pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))


def receive(conn: Connection) -> Any:
    """The next message of ``conn``, ``None`` when the other side closed it."""
    try:
        return pickle.loads(conn.recv_bytes())
    except (EOFError, OSError):
        return None


def serve(conn: Connection) -> None:
    """Build the planner from the first message, then plan each job until ``None``."""
    from curobo_lite.geom import WorldCollision
    from curobo_lite.types import JointState, Pose, TensorDeviceType
    from curobo_lite.wrap.motion.motion_gen import MotionGen
    from curobo_lite.wrap.reactive.background import apply_held
    from curobo_lite.wrap.reactive.band_relief import plan_with_band

    setup = receive(conn)
    if setup is None:
        return
    robot, world, device, options, niceness = setup
    if sys.platform.startswith("linux") and niceness:
        os.nice(niceness)
    torch.set_num_threads(1)
    try:
        tensor_args = TensorDeviceType(device=torch.device(device))
        motion_gen = MotionGen.from_config(
            robot, WorldCollision(world, tensor_args), tensor_args, **options
        )
        # warm up: from the retract pose to where its first joint turned by 0.1 rad takes it
        start = robot.retract_config[None].to(**tensor_args.as_kwargs()).clone()
        low, high = robot.joint_limits.position.to(start)
        goal_q = torch.minimum(
            torch.maximum(start + 0.1 * (torch.arange(start.shape[1]) == 0).to(start), low), high
        )
        frames = motion_gen.checker.kinematics.forward(goal_q)
        motion_gen.plan_single(
            JointState.from_position(start), Pose(frames.ee_position, frames.ee_quaternion)
        )
    except Exception as error:  # the parent raises it
        send(conn, ("failed", error))
        return
    send(conn, ("ready", None))
    loaded = None
    while (message := receive(conn)) is not None:
        job_id, start, goal, snapshot, revision, held = message
        try:
            if revision != loaded:
                motion_gen.update_world(snapshot)
                loaded = revision
            if held is not None:  # what the robot holds changed
                apply_held(motion_gen, held)
            result = plan_with_band(motion_gen, JointState.from_position(start), goal)[0]
            send(conn, (job_id, result, None))
        except Exception as error:
            send(conn, (job_id, None, error))


def main(fd: int) -> None:
    """The child's entry: serve the parent on socket ``fd``."""
    serve(Connection(fd))
