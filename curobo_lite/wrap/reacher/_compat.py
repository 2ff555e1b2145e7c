"""What the cuRobo-named adapters share: their robot and world arguments, cuRobo's option names
(mapped, accepted without effect, or refused by name), a sampler inside the joint limits and
the kinematics view cuRobo's scripts read (``ee_position``, ``ee_pos_seq``, ...)."""

from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import torch

from curobo_lite.geom import WorldConfig
from curobo_lite.robot import Kinematics, RobotConfig
from curobo_lite.types import JointState, TensorDeviceType
from curobo_lite.types.errors import InputTypeError, InputValueError


class CuroboOptionIgnored(UserWarning):
    """A cuRobo option accepted without effect: it sizes GPU buffers or picks a GPU code path,
    and the results here are the same without it."""


_warned: set[tuple[str, str]] = set()
_warned_lock = threading.Lock()

#: options of every ``load_from_robot_config`` that only size GPU buffers or pick GPU code paths
GPU_ONLY_OPTIONS = (
    "collision_cache",
    "collision_checker_type",
    "n_collision_envs",
    "n_envs",
    "n_meshes",
    "n_cuboids",
    "use_cuda_graph_metrics",
    "use_cuda_graph_full_step",
    "sync_cuda_time",
    "store_debug",
    "store_ik_debug",
    "store_trajopt_debug",
    "world_coll_checker",
)


def report_ignored(where: str, names: list[str], stacklevel: int = 3) -> None:
    """One :class:`CuroboOptionIgnored` warning per ``(where, option)``, attributed to the
    caller ``stacklevel - 1`` frames up (default: the caller of this function's caller)."""
    new = []
    with _warned_lock:
        for name in names:
            if (where, name) not in _warned:
                _warned.add((where, name))
                new.append(name)
    if new:
        warnings.warn(
            f"{where}: {new} accepted without effect (GPU buffer sizes and code paths; the "
            "results do not depend on them here)",
            CuroboOptionIgnored,
            stacklevel=stacklevel,
        )


def translate_options(
    where: str,
    options: Mapping[str, Any],
    mapped: Mapping[str, Callable[[Any], dict[str, Any]]],
    defaults_only: Mapping[str, Any] = {},
) -> dict[str, Any]:
    """This package's options for cuRobo's ``options``.

    ``mapped[name](value)`` gives the options a cuRobo option turns into (merged; nested
    mappings merged one level deep); ``defaults_only[name]`` is the only value accepted for a
    cuRobo option with no equivalent here; :data:`GPU_ONLY_OPTIONS` are accepted and reported
    once. Anything else is an :class:`InputValueError` naming the option and the supported ones.
    """
    out: dict[str, Any] = {}
    ignored = []
    for name, value in options.items():
        if name in mapped:
            for key, part in mapped[name](value).items():
                if isinstance(part, Mapping) and isinstance(out.get(key), Mapping):
                    out[key] = {**out[key], **part}
                else:
                    out[key] = part
        elif name in defaults_only:
            if value != defaults_only[name]:
                raise InputValueError(
                    f"{where}: {name}={value!r} is not supported by curobo_lite (only "
                    f"{defaults_only[name]!r}, cuRobo's default)"
                )
        elif name in GPU_ONLY_OPTIONS:
            ignored.append(name)
        else:
            supported = sorted([*mapped, *defaults_only, *GPU_ONLY_OPTIONS])
            raise InputValueError(
                f"{where}: option {name!r} is not supported by curobo_lite; supported cuRobo "
                f"options: {supported} (docs/coming_from_curobo.md)"
            )
    report_ignored(where, ignored, stacklevel=4)  # the caller of load_from_robot_config
    return out


def _bundled_name(value: str) -> str:
    """cuRobo names bundled files with their suffix (``"franka.yml"``): a bare file name that
    is not a file here means the bundled one."""
    path = Path(value)
    if path.suffix in (".yml", ".yaml") and not path.is_file() and path.name == value:
        return path.stem
    return value


def load_robot(
    robot: Any, tensor_args: TensorDeviceType | None = None, where: str = "robot_cfg"
) -> RobotConfig:
    """A :class:`RobotConfig` from a robot file, a bundled name (``"franka"`` or
    ``"franka.yml"``), a parsed robot file (either layout) or a :class:`RobotConfig`."""
    if isinstance(robot, RobotConfig):
        return robot if tensor_args is None else robot.to(tensor_args)
    if isinstance(robot, Mapping):
        return RobotConfig.from_dict(robot, tensor_args, source=f"<{where}>")
    if isinstance(robot, str | os.PathLike):
        return RobotConfig.load(_bundled_name(os.fspath(robot)), tensor_args)
    raise InputTypeError(
        f"{where}: expected a robot file, a bundled name, a mapping or a RobotConfig, received "
        f"{type(robot).__name__}"
    )


def load_world(world: Any) -> WorldConfig | None:
    """A :class:`WorldConfig` (or ``None``) from a world file, a bundled name (with or without
    ``.yml``), a cuRobo-layout mapping or a :class:`WorldConfig`."""
    if world is None or isinstance(world, WorldConfig):
        return world
    if isinstance(world, str | os.PathLike):
        world = _bundled_name(os.fspath(world))
    return WorldConfig.load(world)


def sample_in_limits(robot: RobotConfig, n: int, engine: torch.quasirandom.SobolEngine):
    """``[n, D]`` configurations spread over the position limits (scrambled Sobol)."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise InputValueError(f"n: expected an integer >= 0, received {n!r}")
    low, high = robot.joint_limits.position
    u = engine.draw(n).to(low)
    return low + u * (high - low)


@dataclass
class CuroboKinematicsState:
    """Forward kinematics under cuRobo's attribute names: ``ee_position [B, 3]``,
    ``ee_quaternion [B, 4]`` (wxyz; aliases ``ee_pos_seq`` / ``ee_quat_seq``),
    ``link_spheres_tensor [B, N, 4]`` and the links' poses (``link_names``,
    ``links_position [B, L, 3]``, ``links_quaternion [B, L, 4]``)."""

    ee_position: torch.Tensor
    ee_quaternion: torch.Tensor
    link_spheres_tensor: torch.Tensor | None
    link_names: list[str]
    links_position: torch.Tensor
    links_quaternion: torch.Tensor

    @property
    def ee_pos_seq(self) -> torch.Tensor:
        return self.ee_position

    @property
    def ee_quat_seq(self) -> torch.Tensor:
        return self.ee_quaternion

    @property
    def ee_pose(self):
        from curobo_lite.types import Pose

        return Pose(self.ee_position.reshape(-1, 3), self.ee_quaternion.reshape(-1, 4))


def forward_kinematics(kinematics: Kinematics, q: Any) -> CuroboKinematicsState:
    """:class:`CuroboKinematicsState` of ``q`` (a ``[..., D]`` tensor or a
    :class:`JointState`)."""
    position = q.position if isinstance(q, JointState) else q
    state = kinematics.forward(position)
    return CuroboKinematicsState(
        state.ee_position,
        state.ee_quaternion,
        state.link_spheres,
        list(state.link_names),
        state.link_position,
        state.link_quaternion,
    )


class DynamicsModelView:
    """``rollout_fn.dynamics_model`` as cuRobo's scripts read it: ``retract_config`` ``[D]``
    and ``joint_names``."""

    def __init__(self, robot: RobotConfig) -> None:
        self.retract_config = robot.retract_config
        self.joint_names = list(robot.joint_names)
        self.d_action = robot.dof


class RolloutView:
    """``rollout_fn`` as cuRobo's scripts read it: ``compute_kinematics(state)``,
    ``joint_names`` and ``dynamics_model.retract_config``."""

    def __init__(self, kinematics: Kinematics, robot: RobotConfig) -> None:
        self._kinematics = kinematics
        self.dynamics_model = DynamicsModelView(robot)
        self.joint_names = list(robot.joint_names)

    def compute_kinematics(self, state: Any) -> CuroboKinematicsState:
        return forward_kinematics(self._kinematics, state)


@dataclass
class SolverConfig:
    """What a cuRobo-named solver is built from: a robot, a world (``None``: no obstacles)
    and this package's options translated from cuRobo's (``options``). Subclasses name the
    options: ``MAPPED`` (cuRobo name -> this package's options), ``DEFAULTS_ONLY`` (cuRobo
    names accepted at cuRobo's default only)."""

    robot_config: RobotConfig
    world_model: WorldConfig | None
    options: dict[str, Any]
    tensor_args: TensorDeviceType

    MAPPED: ClassVar[Mapping[str, Callable[[Any], dict[str, Any]]]] = {}
    DEFAULTS_ONLY: ClassVar[Mapping[str, Any]] = {}

    @classmethod
    def load_from_robot_config(
        cls,
        robot_cfg: Any,
        world_model: Any = None,
        tensor_args: TensorDeviceType | None = None,
        **options: Any,
    ):
        """From a robot (file, bundled name, mapping in either layout or ``RobotConfig``), a
        world (``None``, file, bundled name, cuRobo-layout mapping or ``WorldConfig``) and
        cuRobo's option names (:attr:`MAPPED`; GPU buffer options are accepted without
        effect; any other is refused by name)."""
        tensor_args = tensor_args or TensorDeviceType()
        robot = load_robot(robot_cfg, tensor_args)
        where = f"{cls.__name__}.load_from_robot_config"
        translated = translate_options(where, options, cls.MAPPED, cls.DEFAULTS_ONLY)
        return cls(robot, load_world(world_model), translated, tensor_args)


class Adapter:
    """A cuRobo-named object over one of this package's (``self.<INNER>``): attributes it does
    not define are the inner object's."""

    INNER: ClassVar[str] = "solver"

    @staticmethod
    def check_config(config: Any, kind: type) -> None:
        if not isinstance(config, kind):
            raise InputTypeError(
                f"config: expected a {kind.__name__} from {kind.__name__}.load_from_robot_config,"
                f" received {type(config).__name__}"
            )

    def __getattr__(self, name: str) -> Any:
        inner = self.__dict__.get(self.INNER)
        if inner is None:
            raise AttributeError(name)
        return getattr(inner, name)
