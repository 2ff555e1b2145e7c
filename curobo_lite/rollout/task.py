"""Task files (``configs/task/*.yml``): horizon, dt schedule, control space, costs, optimizer.

A task file has these top-level sections (unknown ones are an error)::

    model:   {...}   # KinematicModelConfig.from_dict (see rollout.dynamics_model)
    cost:    {...}   # one sub-section per cost term (see rollout.cost.build_costs)
    mppi:    {...}   # MppiConfig.from_dict, for MPC tasks
    lbfgs:   {...}   # LbfgsConfig.from_dict, for trajectory optimization
    mpc:     {...}   # MpcSolver options
    trajopt: {...}   # TrajOptSolver options
    distributed: {timeout_s: 300}   # DistributedConfig: sharded runs (wrap.sharded_solve)

``TaskConfig.load("particle_mpc")`` reads a bundled file; a path works too. Sections are
validated by the classes that consume them; errors are re-raised naming the file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from curobo_lite.config_files import available_configs, read_config_file, resolve_config_file
from curobo_lite.types.checks import excerpt, received
from curobo_lite.types.errors import ConfigError, InputTypeError

TASK_SECTIONS = ("model", "cost", "mppi", "lbfgs", "mpc", "trajopt", "distributed")


@dataclass
class TaskConfig:
    """The raw sections of a task file plus where it came from (for error messages)."""

    name: str
    model: dict[str, Any] = field(default_factory=dict)
    cost: dict[str, Any] = field(default_factory=dict)
    mppi: dict[str, Any] | None = None
    lbfgs: dict[str, Any] | None = None
    mpc: dict[str, Any] | None = None
    trajopt: dict[str, Any] | None = None
    distributed: dict[str, Any] | None = None
    source: str = "<dict>"

    @classmethod
    def from_dict(cls, data: Any, source: str = "<dict>", name: str | None = None) -> TaskConfig:
        if not isinstance(data, dict):
            raise ConfigError(f"{source}: expected a mapping of task sections, {received(data)}")
        unknown = sorted(str(k) for k in set(data) - set(TASK_SECTIONS))
        if unknown:
            raise ConfigError(
                f"{source}: unknown task section(s) {excerpt(unknown)}; expected some of "
                f"{list(TASK_SECTIONS)}"
            )
        if "model" not in data:
            raise ConfigError(f"{source}: missing required section 'model'")
        sections = {}
        for key in TASK_SECTIONS:
            value = data.get(key)
            if value is not None and not isinstance(value, dict):
                raise ConfigError(
                    f"{source}: section '{key}' must be a mapping, received {type(value).__name__}"
                )
            sections[key] = dict(value) if value is not None else None
        sections["model"] = sections["model"] or {}
        sections["cost"] = sections["cost"] or {}
        return cls(
            name=name or os.path.splitext(os.path.basename(source))[0], source=source, **sections
        )

    @classmethod
    def from_yaml(cls, path: str | os.PathLike) -> TaskConfig:
        """Read the task file at ``path``: a missing file, a directory, undecodable text
        (binary, UTF-16, Latin-1) or invalid YAML is a :class:`ConfigError` naming the path."""
        if not isinstance(path, str | os.PathLike):
            raise InputTypeError(f"path: expected a path to a task file, {received(path)}")
        path = os.fspath(path)
        return cls.from_dict(read_config_file(Path(path), "task"), source=path)

    @classmethod
    def load(cls, name_or_path: str | os.PathLike | TaskConfig) -> TaskConfig:
        """A bundled task by name (``"particle_mpc"``), a path, or an existing config."""
        if isinstance(name_or_path, TaskConfig):
            return name_or_path
        if not isinstance(name_or_path, str | os.PathLike):
            raise InputTypeError(
                "task: expected a bundled task name, a path to a task file or a TaskConfig, "
                f"{received(name_or_path)}"
            )
        return cls.from_yaml(resolve_config_file("task", name_or_path))

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in TASK_SECTIONS if getattr(self, k) is not None}

    def __repr__(self) -> str:
        model = self.model
        sections = ", ".join(
            f"{key}: {sorted(getattr(self, key))}"
            for key in TASK_SECTIONS[1:]
            if getattr(self, key)
        )
        return (
            f"TaskConfig(name={self.name!r}, horizon={model.get('horizon')}, "
            f"control_space={model.get('control_space')}, {sections}, source={self.source!r})"
        )

    def error(self, err: Exception) -> ConfigError:
        """Re-raise a consumer's validation error with this file's name in front."""
        return ConfigError(f"{self.source}: {err}")


def available_tasks() -> list[str]:
    return available_configs("task")
