"""The browser viewer: robot, obstacles, goal, plans and live MPC in a ``viser`` scene.

Scene nodes (what a test or a user can look up with ``viewer.server.scene``):

- ``/robot/spheres``: the collision spheres (one batched mesh), coloured by clearance
  (:func:`~curobo_lite.viz.scene.clearance_colors`: red in contact, green at ``safe_distance``).
- ``/robot/links``: the URDF's link meshes, when the robot has a URDF.
- ``/robot/ee``: the end-effector frame.
- ``/world/<name>``: one mesh per obstacle (disabled obstacles translucent).
- ``/held/<name>``: an object the robot holds (:meth:`Viewer.attach_object`), its true shape
  on the holding link (whose reserved spheres then show its fitted spheres).
- ``/goal``: the goal frame.
- ``/plan/ee_path``: the end-effector path of the plan shown.
- ``/mpc/best``, ``/mpc/samples``: MPC's predicted end-effector path and sampled traces
  (:class:`~curobo_lite.viz.mpc_view.MpcView`).

GUI: a "Plan" folder with a ``frame`` slider (the plan row shown), the time, a play/pause
button and the playback speed; a status line with the smallest clearance.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import torch
import trimesh

from curobo_lite.geom import WorldCollision, WorldConfig
from curobo_lite.robot import Kinematics, RobotConfig
from curobo_lite.robot.urdf import read_urdf
from curobo_lite.types import JointState, Pose, TensorDeviceType
from curobo_lite.types.errors import InputValueError
from curobo_lite.viz.held import (
    HELD_COLOR,
    HeldObject,
    held_mask,
    link_poses,
    matrix_wxyz,
    object_rows,
)
from curobo_lite.viz.scene import (
    SAFE_DISTANCE,
    SphereClearance,
    clearance_colors,
    obstacle_mesh,
    plan_positions,
    robot_urdf_path,
)

_OBSTACLE_COLOR = (165, 170, 185)
_PLAN_COLOR = (255, 140, 0)


def require_viser() -> Any:
    """The ``viser`` module, or an ImportError naming the extra that installs it."""
    try:
        import viser
    except ImportError as err:
        raise ImportError(
            "the viewer needs the 'viser' package: pip install 'curobo_lite[viz]'"
        ) from err
    return viser


@dataclass
class PlanFrames:
    """A plan prepared for playback: everything a frame shows, computed once.

    Attributes:
        position: ``[T, D]`` joint positions (CPU).
        dt: seconds between rows.
        ee_position: ``[T, 3]``; ee_quaternion: ``[T, 4]`` (wxyz).
        spheres: ``[T, N, 4]`` collision spheres (``None`` without spheres).
        clearance: ``[T, N]`` sphere clearances (m, clamped at ``safe_distance``).
        held_pose: ``[T, 4, 4]`` where the held object is drawn (``None``: nothing held).
        held_rows: ``[T]`` bool: the rows that hold it (its spheres are shown in those).
    """

    position: torch.Tensor
    dt: float
    ee_position: torch.Tensor
    ee_quaternion: torch.Tensor
    spheres: torch.Tensor | None
    clearance: torch.Tensor | None
    held_pose: np.ndarray | None = None
    held_rows: np.ndarray | None = None

    @property
    def num_frames(self) -> int:
        return int(self.position.shape[0])


class Viewer:
    """A ``viser`` server showing one robot, its world, a goal, plans and MPC.

    Args:
        robot: a :class:`RobotConfig`, a bundled robot name or a robot file.
        world: obstacles (a :class:`WorldConfig`, a bundled name, a world file, a cuRobo-layout
            mapping, or a :class:`WorldCollision` to share, e.g. a solver's); ``None``: none.
        host, port: where to serve (a busy port moves on to the next free one; ``0``: any).
        urdf: the URDF whose link meshes to draw; ``None``: the robot's own URDF if it has one
            (:func:`~curobo_lite.viz.scene.robot_urdf_path`), ``False``: spheres only.
        safe_distance: clearance (m) at which spheres turn fully green.
        verbose: let viser log client connections.

    The viewer computes on the CPU (float32): tensors from any device are copied to the host.
    """

    def __init__(
        self,
        robot: RobotConfig | str = "franka",
        world: WorldConfig | WorldCollision | str | Mapping | None = None,
        host: str = "127.0.0.1",
        port: int = 8080,
        urdf: str | Path | bool | None = None,
        safe_distance: float = SAFE_DISTANCE,
        verbose: bool = False,
    ) -> None:
        viser = require_viser()
        if not safe_distance > 0.0:
            raise InputValueError(
                f"safe_distance: expected a number > 0, received {safe_distance!r}"
            )
        self.tensor_args = TensorDeviceType()
        if not isinstance(robot, RobotConfig):
            robot = RobotConfig.load(robot)
        self.robot_config = robot.to(self.tensor_args)
        self.kinematics = Kinematics(self.robot_config)
        self.safe_distance = float(safe_distance)
        self.host = host
        self.server = viser.ViserServer(host=host, port=port, label="curobo_lite", verbose=verbose)
        self.server.scene.set_up_direction("+z")
        self.server.gui.configure_theme(show_share_button=False)
        # just below z = 0, so obstacles resting on the floor hide it instead of flickering
        self.server.scene.add_grid(
            "/ground", width=2.0, height=2.0, cell_size=0.1, position=(0.0, 0.0, -0.002)
        )
        self._lock = threading.RLock()
        self._closed = threading.Event()
        self._playing = threading.Event()
        self._player: threading.Thread | None = None
        self._plan_gui: list[Any] = []
        self.plan: PlanFrames | None = None
        self.held: HeldObject | None = None
        self._held_nodes: list[Any] = []
        self.world_collision: WorldCollision | None = None
        self._obstacle_nodes: dict[str, Any] = {}
        self._obstacle_drawn: dict[str, tuple[list[float], bool]] = {}
        self.clearance = SphereClearance(self.kinematics, None, self.safe_distance)
        #: what the robot shows now: ``[D]`` joints, ``[N]`` clearances and ``[N, 3]`` colours
        self.state = self.robot_config.retract_config.clone()
        self.sphere_clearance: np.ndarray | None = None
        self.sphere_colors: np.ndarray | None = None

        self._status = self.server.gui.add_markdown("")
        self._urdf = self._add_urdf(robot_urdf_path(robot) if urdf is None else urdf)
        self._spheres = None
        if self.kinematics.num_spheres:
            unit = trimesh.creation.icosphere(subdivisions=2, radius=1.0)
            n = self.kinematics.num_spheres
            self._spheres = self.server.scene.add_batched_meshes_simple(
                "/robot/spheres",
                vertices=np.asarray(unit.vertices, np.float32),
                faces=np.asarray(unit.faces, np.uint32),
                batched_wxyzs=np.tile(np.array([1.0, 0.0, 0.0, 0.0], np.float32), (n, 1)),
                batched_positions=np.zeros((n, 3), np.float32),
                opacity=0.45 if self._urdf is not None else None,
            )
        self._ee = self.server.scene.add_frame("/robot/ee", axes_length=0.1, axes_radius=0.005)
        self._aim_camera()
        self.show_world(world)

    # --- serving -------------------------------------------------------------------------------

    @property
    def port(self) -> int:
        return int(self.server.get_port())

    @property
    def url(self) -> str:
        """Address to open in a browser."""
        host = "localhost" if self.host in ("0.0.0.0", "::", "") else self.host
        return f"http://{host}:{self.port}"

    def notebook(self, height: int = 500) -> Any:
        """An IPython ``IFrame`` of the live viewer, for a Jupyter cell's output (the browser
        showing the notebook must reach :attr:`url`). ``self.server.scene.show()`` embeds a
        static snapshot instead."""
        from IPython.display import IFrame

        return IFrame(self.url, width="100%", height=height)

    def wait(self) -> None:
        """Serve until Ctrl-C, then close."""
        try:
            while not self._closed.wait(0.5):
                pass
        except KeyboardInterrupt:
            pass
        finally:
            self.close()

    def close(self) -> None:
        """Stop playback and the server."""
        if self._closed.is_set():
            return
        self._closed.set()
        self._playing.set()  # wake the player so it sees the close
        if self._player is not None:
            self._player.join(timeout=2.0)
        self.server.stop()

    def __enter__(self) -> Viewer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- robot ---------------------------------------------------------------------------------

    def _add_urdf(self, urdf: str | Path | bool | None) -> Any:
        """Link meshes of ``urdf`` under ``/robot/links`` (visual meshes, else collision ones)."""
        if urdf is None or urdf is False:
            return None
        if urdf is True:
            raise InputValueError("urdf: expected a path, None or False, received True")
        import yourdfpy
        from viser.extras import ViserUrdf

        path = Path(urdf)
        if not path.is_file():
            raise InputValueError(f"urdf: file '{path}' does not exist")
        model = read_urdf(
            path,
            meshes=True,
            filename_handler=partial(yourdfpy.filename_handler_magic, dir=str(path.parent)),
        )
        visual = bool(model.scene is not None and model.scene.geometry)
        handle = ViserUrdf(
            self.server,
            model,
            root_node_name="/robot/links",
            load_meshes=visual,
            load_collision_meshes=not visual,
        )
        # URDF actuated joint order -> index into q (or a locked value, or 0)
        names = self.robot_config.joint_names
        locked = self.robot_config.lock_joints
        self._urdf_source = [
            names.index(j) if j in names else float(locked.get(j, 0.0))
            for j in handle.get_actuated_joint_names()
        ]
        return handle

    def _aim_camera(self) -> None:
        """Look at the robot's workspace from the front right, scaled by its reach (the
        distance of the end effector at the retract pose, at least 0.3 m)."""
        with torch.no_grad():
            ee = self.kinematics.forward(self.state[None], spheres=False).ee_position[0]
        reach = max(float(ee.norm()), 0.3)
        camera = self.server.initial_camera
        camera.look_at = (0.5 * reach, 0.0, 0.3 * reach)
        camera.position = (2.6 * reach, -2.0 * reach, 1.6 * reach)

    def _as_configuration(self, q: Any, name: str = "q") -> torch.Tensor:
        """``[D]`` float32 CPU joint positions from ``q`` ([D], [1, D] or a JointState)."""
        q = q.position if isinstance(q, JointState) else q
        q = torch.as_tensor(q).detach().to("cpu", torch.float32).reshape(-1)
        dof = self.robot_config.dof
        if q.numel() != dof:
            raise InputValueError(f"{name}: expected {dof} joint positions, received {q.numel()}")
        return q

    def set_state(self, q: Any) -> None:
        """Show the robot at ``q`` (``[D]``, ``[1, D]`` or a :class:`JointState`): spheres
        coloured by their clearance, link meshes, end-effector frame."""
        q = self._as_configuration(q)
        with torch.no_grad():
            fk = self.kinematics.forward(q[None])
        spheres = None if fk.link_spheres is None else fk.link_spheres[0]
        clearance = None if spheres is None else self.clearance(spheres)
        held_pose = None
        if self.held is not None:
            held_pose = link_poses(self.kinematics, q[None], self.held.link_name)[0]
        self._draw(q, fk.ee_position[0], fk.ee_quaternion[0], spheres, clearance, held_pose)

    def _draw(
        self,
        q: torch.Tensor,
        ee_position: torch.Tensor,
        ee_quaternion: torch.Tensor,
        spheres: torch.Tensor | None,
        clearance: torch.Tensor | None,
        held_pose: np.ndarray | None = None,
    ) -> None:
        with self._lock, self.server.atomic():
            self.state = q.clone()
            if held_pose is not None:
                wxyz = matrix_wxyz(held_pose)
                for node in self._held_nodes:
                    node.position, node.wxyz = held_pose[:3, 3].copy(), wxyz
            if self._urdf is not None:
                values = q.tolist()
                self._urdf.update_cfg(
                    np.array([values[s] if isinstance(s, int) else s for s in self._urdf_source])
                )
            self._ee.position = ee_position.numpy().astype(np.float64)
            self._ee.wxyz = ee_quaternion.numpy().astype(np.float64)
            if self._spheres is None or spheres is None or clearance is None:
                return
            radius = spheres[:, 3].numpy()
            self.sphere_clearance = clearance.numpy().copy()
            self.sphere_colors = clearance_colors(self.sphere_clearance, self.safe_distance)
            self._spheres.batched_positions = spheres[:, :3].numpy()
            self._spheres.batched_scales = np.maximum(radius, 0.0)  # disabled: radius < 0
            self._spheres.batched_colors = self.sphere_colors
            smallest = float(self.sphere_clearance.min())
            self._status.content = f"smallest clearance: **{smallest * 1000:.1f} mm**" + (
                " (or more)" if smallest >= self.safe_distance else ""
            )

    # --- world and goal ------------------------------------------------------------------------

    def show_world(self, world: WorldConfig | WorldCollision | str | Mapping | None) -> None:
        """Draw the obstacles (replacing the previous world) and recolour robot and plan.

        A :class:`WorldCollision` is shared, not copied: :meth:`sync_world` then redraws its
        later edits (moved, added, removed or disabled obstacles)."""
        if isinstance(world, WorldCollision):
            self.world_collision = world
        else:
            config = None if world is None else WorldConfig.load(world)
            self.world_collision = WorldCollision(config, self.tensor_args, check_finite=False)
        self.clearance.world_collision = self.world_collision
        with self._lock:
            for node in self._obstacle_nodes.values():
                node.remove()
            self._obstacle_nodes = {}
            self._obstacle_drawn = {}
            self.sync_world()
            if self.plan is not None:
                self.plan = self._prepare_plan(self.plan.position, self.plan.dt)
        self.set_state(self.state)

    def sync_world(self) -> None:
        """Bring the drawn obstacles up to date with :attr:`world_collision` (poses and
        enabled flags in place; obstacles added or removed are drawn or dropped)."""
        obstacles = {o.name: o for o in self.world_collision.world}
        with self._lock, self.server.atomic():
            for name in [n for n in self._obstacle_nodes if n not in obstacles]:
                self._obstacle_nodes.pop(name).remove()
                self._obstacle_drawn.pop(name, None)
            for name, obstacle in obstacles.items():
                node = self._obstacle_nodes.get(name)
                drawn = (list(obstacle.pose), obstacle.enabled)
                if node is not None and self._obstacle_drawn.get(name) == drawn:
                    continue  # unchanged: send nothing
                if node is None:
                    mesh = obstacle_mesh(obstacle)
                    node = self.server.scene.add_mesh_simple(
                        f"/world/{name}",
                        vertices=np.asarray(mesh.vertices, np.float32),
                        faces=np.asarray(mesh.faces, np.uint32),
                        color=_OBSTACLE_COLOR,
                        flat_shading=True,
                    )
                    self._obstacle_nodes[name] = node
                node.position = np.asarray(obstacle.pose[:3], np.float64)
                node.wxyz = np.asarray(obstacle.pose[3:], np.float64)
                node.opacity = 1.0 if obstacle.enabled else 0.25
                self._obstacle_drawn[name] = drawn
            for grid in self.world_collision.world.voxel:
                # a voxel world's occupied voxels, redrawn on every sync (new frames)
                self._obstacle_nodes[grid.name] = self.server.scene.add_point_cloud(
                    f"/world/{grid.name}",
                    points=grid.occupied_centres().cpu().numpy(),
                    colors=_OBSTACLE_COLOR,
                    point_size=grid.voxel_size,
                )

    def show_goal(self, goal: Pose | Any) -> None:
        """Draw the goal frame: a :class:`Pose` (batch 1) or ``[x, y, z, qw, qx, qy, qz]``."""
        if isinstance(goal, Pose):
            if goal.batch != 1:
                raise InputValueError(
                    f"goal: expected a single pose (batch 1), received {goal.batch}"
                )
            values = torch.cat((goal.position[0], goal.quaternion[0])).detach().cpu()
        else:
            values = torch.as_tensor(goal, dtype=torch.float64).reshape(-1)
            if values.numel() != 7:
                raise InputValueError(
                    f"goal: expected a Pose or 7 numbers (x, y, z, qw, qx, qy, qz), received "
                    f"{values.numel()}"
                )
        values = values.double().numpy()
        self.server.scene.add_frame(
            "/goal", axes_length=0.12, axes_radius=0.006, position=values[:3], wxyz=values[3:]
        )

    # --- plans ---------------------------------------------------------------------------------

    # --- held objects --------------------------------------------------------------------------

    def attach_object(self, held: Any) -> None:
        """Draw what a solver's ``attach_objects_to_robot`` returned (an ``AttachedObjects``):
        its true shape on the link (``/held/<name>``) and its spheres on the link's reserved
        ones, live and in plans (:meth:`show_plan`'s ``held_rows``: the rows that hold it)."""
        new = HeldObject.from_attached(held)
        self.kinematics.reserved_spheres(new.link_name)  # names a link without any
        with self._lock:
            self.detach_object()
            self.kinematics.set_reserved_spheres(new.link_name, new.spheres)
            self.held = new
            for name, mesh in zip(new.names, new.meshes):
                self._held_nodes.append(
                    self.server.scene.add_mesh_simple(
                        f"/held/{name}",
                        vertices=np.asarray(mesh.vertices, np.float32),
                        faces=np.asarray(mesh.faces, np.uint32),
                        color=HELD_COLOR,
                        flat_shading=True,
                    )
                )
            if self.plan is not None:
                self.plan = self._prepare_plan(self.plan.position, self.plan.dt)
        self.set_state(self.state)

    def detach_object(self) -> None:
        """Stop drawing the held object (its spheres are disabled again)."""
        with self._lock:
            if self.held is None:
                return
            self.kinematics.set_reserved_spheres(self.held.link_name, None)
            for node in self._held_nodes:
                node.remove()
            self._held_nodes, self.held = [], None
            if self.plan is not None:
                self.plan = self._prepare_plan(self.plan.position, self.plan.dt)
        self.set_state(self.state)

    @torch.no_grad()
    def _prepare_plan(self, position: torch.Tensor, dt: float, held_rows: Any = None) -> PlanFrames:
        fk = self.kinematics.forward(position)
        spheres = fk.link_spheres
        held_pose = mask = None
        if self.held is not None:
            mask = held_mask(held_rows, position.shape[0])
            held_pose = link_poses(self.kinematics, position, self.held.link_name)
            held_pose = held_pose[object_rows(mask)]
            if spheres is not None:  # the link's spheres only where it holds the object
                begin, end = self.kinematics.reserved_spheres(self.held.link_name)
                spheres = spheres.clone()
                spheres[torch.as_tensor(~mask), begin:end, 3] = -1.0
        clearance = None if spheres is None else self.clearance(spheres)
        if clearance is not None and spheres is not None:
            clearance = clearance.masked_fill(spheres[..., 3] < 0, self.safe_distance)
        return PlanFrames(
            position, dt, fk.ee_position, fk.ee_quaternion, spheres, clearance, held_pose, mask
        )

    def show_plan(self, plan: Any, dt: float | None = None, held_rows: Any = None) -> PlanFrames:
        """Show a plan with a frame slider and play/pause: a :class:`JointState` or tensor
        ``[T, D]`` every ``dt`` seconds, a ``MotionGenResult`` or a ``TrajOptResult`` (see
        :func:`~curobo_lite.viz.scene.plan_positions`). Draws ``/plan/ee_path`` and shows
        frame 0; returns what each frame shows. With an object attached
        (:meth:`attach_object`), ``held_rows`` says which rows hold it: ``None`` (all), a
        ``(first, end)`` pair or ``[T]`` bools; elsewhere it stands where the nearest held row
        leaves it."""
        position, dt = plan_positions(plan, dt)
        if position.shape[1] != self.robot_config.dof:
            raise InputValueError(
                f"plan: expected {self.robot_config.dof} joints per row, received "
                f"{position.shape[1]}"
            )
        self.pause()
        frames = self._prepare_plan(position, dt, held_rows)
        ee = frames.ee_position.numpy()
        with self._lock:  # the player and GUI callbacks see the old plan or the new, whole
            self.plan = frames
            for handle in self._plan_gui:
                handle.remove()
            if frames.num_frames > 1:
                self.server.scene.add_line_segments(
                    "/plan/ee_path",
                    points=np.stack((ee[:-1], ee[1:]), axis=1),
                    colors=_PLAN_COLOR,
                    thickness=0.006,
                )
            self._add_plan_gui(frames)
            self.frame = 0
        return frames

    def _add_plan_gui(self, frames: PlanFrames) -> None:
        gui = self.server.gui
        folder = gui.add_folder("Plan")
        with folder:
            # a slider needs max > min: a one-row plan gets a slider that stays at 0
            self._slider = gui.add_slider(
                "frame", min=0, max=max(frames.num_frames - 1, 1), step=1, initial_value=0
            )
            self._time = gui.add_markdown("")
            self._play_button = gui.add_button("Play")
            self._speed = gui.add_slider("speed", min=0.1, max=4.0, step=0.1, initial_value=1.0)
        self._plan_gui = [folder]
        self._slider.on_update(lambda _: self._show_frame(int(self._slider.value)))
        self._play_button.on_click(lambda _: self.pause() if self.playing else self.play())

    @property
    def frame(self) -> int:
        """The plan row shown (set it to show another; the GUI slider follows)."""
        if self.plan is None:
            raise InputValueError("frame: no plan shown; call show_plan first")
        return int(self._slider.value)

    @frame.setter
    def frame(self, index: int) -> None:
        if self.plan is None:
            raise InputValueError("frame: no plan shown; call show_plan first")
        if not 0 <= int(index) < self.plan.num_frames:
            raise InputValueError(
                f"frame: expected an index in [0, {self.plan.num_frames}), received {index}"
            )
        if int(self._slider.value) == int(index):
            self._show_frame(int(index))  # the slider skips unchanged values
        else:
            self._slider.value = int(index)

    def _show_frame(self, index: int) -> None:
        with self._lock:
            plan = self.plan
            index = min(index, plan.num_frames - 1)
            spheres = None if plan.spheres is None else plan.spheres[index]
            clearance = None if plan.clearance is None else plan.clearance[index]
            self._draw(
                plan.position[index],
                plan.ee_position[index],
                plan.ee_quaternion[index],
                spheres,
                clearance,
                None if plan.held_pose is None else plan.held_pose[index],
            )
            total = (plan.num_frames - 1) * plan.dt
            self._time.content = f"t = {index * plan.dt:.2f} s of {total:.2f} s"

    @property
    def playing(self) -> bool:
        return self._playing.is_set() and not self._closed.is_set()

    def play(self) -> None:
        """Play the plan (looping) at ``dt`` per frame times the speed slider."""
        if self.plan is None:
            raise InputValueError("play: no plan shown; call show_plan first")
        self._play_button.label = "Pause"
        if self._player is None:
            self._player = threading.Thread(target=self._play_loop, daemon=True)
            self._player.start()
        self._playing.set()

    def pause(self) -> None:
        self._playing.clear()
        if self._plan_gui:
            self._play_button.label = "Play"

    def _play_loop(self) -> None:
        while True:
            self._playing.wait()
            if self._closed.is_set():
                return
            started = time.perf_counter()
            with self._lock:
                if not self._playing.is_set():
                    continue  # paused (e.g. by show_plan) while waiting for the lock
                plan = self.plan
                self.frame = (self.frame + 1) % plan.num_frames
                delay = plan.dt / max(float(self._speed.value), 1e-3)
            self._closed.wait(max(delay - (time.perf_counter() - started), 0.0))

    # --- MPC -----------------------------------------------------------------------------------

    def mpc_callback(self, solver: Any, max_rate_hz: float = 10.0, num_traces: int = 16) -> Any:
        """A :class:`~curobo_lite.viz.mpc_view.MpcView` of ``solver`` (an ``MpcSolver``) to
        call after every control step, e.g. ``run_closed_loop(..., on_step=view)``."""
        from curobo_lite.viz.mpc_view import MpcView

        return MpcView(self, solver, max_rate_hz=max_rate_hz, num_traces=num_traces)
