"""Base classes and shared helpers for the rollout's cost terms.

Every cost maps a batch of trajectories to a per-step cost ``[B, H]`` (batch, horizon) that is
differentiable with respect to its inputs. Terminal terms put their value at ``h = H-1`` and zero
elsewhere. Costs hold no autograd state between calls: each ``forward`` builds a fresh graph, and
the only cached tensors are constant per-step weight schedules (rebuilt when a weight changes).
"""

from __future__ import annotations

import abc
import dataclasses
import functools
import math
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, TypeVar

import torch

from curobo_lite.types import JointState, Pose, TensorDeviceType
from curobo_lite.types.checks import excerpt, parse_number, received
from curobo_lite.types.errors import InputTypeError, InputValueError

#: Joint-space quantities, in the order used by per-quantity lists (``[4]`` options).
QUANTITIES: tuple[str, ...] = ("position", "velocity", "acceleration", "jerk")


# --------------------------------------------------------------------------------------------------
# option validation


def as_scalar(owner: str, name: str, value: Any, nonnegative: bool = True) -> float:
    """A finite real number (``bool`` rejected), optionally ``>= 0``; checked by
    :func:`~curobo_lite.types.checks.parse_number`."""
    value = parse_number(value, f"{owner}.{name}")
    if nonnegative and value < 0:
        raise InputValueError(f"{owner}.{name}: expected a weight >= 0, received {value}")
    return value


def as_bool(owner: str, name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise InputTypeError(f"{owner}.{name}: expected true or false, {received(value)}")
    return value


def as_choice(owner: str, name: str, value: Any, choices: Sequence[str]) -> str:
    """Case-insensitive choice among upper-case ``choices``."""
    if not isinstance(value, str) or value.upper() not in choices:
        raise InputValueError(f"{owner}.{name}: expected one of {list(choices)}, {received(value)}")
    return value.upper()


def as_vector(
    owner: str,
    name: str,
    value: Any,
    tensor_args: TensorDeviceType,
    length: int | None = None,
    nonnegative: bool = False,
    allow_inf: bool = False,
) -> torch.Tensor:
    """A 1-D tensor on ``tensor_args`` from a list, array or tensor; checked for length and NaN."""
    if isinstance(value, (str, bytes, Mapping)):
        raise InputTypeError(f"{owner}.{name}: expected a list of numbers, {received(value)}")
    if isinstance(value, Sequence):
        for i, v in enumerate(value):
            if allow_inf and isinstance(v, float) and math.isinf(v):
                continue
            if not isinstance(v, Sequence) or isinstance(v, str):
                parse_number(v, f"{owner}.{name}[{i}]")
    try:
        tensor = tensor_args.to_device(value)
    except (TypeError, ValueError, RuntimeError, OverflowError):
        raise InputTypeError(
            f"{owner}.{name}: expected a list of numbers, {received(value)}"
        ) from None
    if tensor.ndim != 1:
        raise InputValueError(
            f"{owner}.{name}: expected a flat list of numbers, received shape {tuple(tensor.shape)}"
        )
    if length is not None and tensor.numel() != length:
        raise InputValueError(
            f"{owner}.{name}: expected {length} values, received {tensor.numel()}: "
            f"{excerpt(tensor.tolist())}"
        )
    finite = ~torch.isnan(tensor) if allow_inf else torch.isfinite(tensor)
    if not bool(finite.all()):
        raise InputValueError(
            f"{owner}.{name}: expected finite numbers, received {excerpt(tensor.tolist())}"
        )
    if nonnegative and bool((tensor < 0).any()):
        raise InputValueError(
            f"{owner}.{name}: expected values >= 0, received {excerpt(tensor.tolist())}"
        )
    return tensor


def parse_joint_limits(
    owner: str, value: Any, tensor_args: TensorDeviceType
) -> dict[str, torch.Tensor]:
    """Joint limits as ``{quantity: [2, D]}`` (row 0 lower, row 1 upper) for the four quantities.

    Accepts a mapping or any object (e.g. the robot's ``JointLimits``) with attributes
    ``position``, ``velocity``, ``acceleration`` and ``jerk``, each ``[2, D]`` (nested lists,
    arrays or tensors) or ``{lower: [D], upper: [D]}`` as in a robot file. Infinite limits are
    allowed (an unlimited joint); NaN, ``lower > upper`` and mismatched ``D`` are errors.
    """
    if isinstance(value, Mapping):
        missing = [q for q in QUANTITIES if q not in value]
        if missing:
            raise InputValueError(
                f"{owner}.joint_limits: missing {missing}; expected keys {list(QUANTITIES)}, "
                f"received {sorted(map(str, value))}"
            )
    limits: dict[str, torch.Tensor] = {}
    for quantity in QUANTITIES:
        where = f"{owner}.joint_limits.{quantity}"
        if isinstance(value, Mapping):
            raw = value[quantity]
        elif hasattr(value, quantity):
            raw = getattr(value, quantity)
        else:
            raise InputTypeError(
                f"{owner}.joint_limits: expected a mapping or an object with {list(QUANTITIES)} "
                f"([2, D] each), received {type(value).__name__}"
            )
        if isinstance(raw, Mapping):
            # the robot file's form: {lower: [D], upper: [D]}
            if set(raw) != {"lower", "upper"}:
                raise InputValueError(
                    f"{where}: expected keys ['lower', 'upper'], received {sorted(map(str, raw))}"
                )
            raw = [raw["lower"], raw["upper"]]
        try:
            tensor = tensor_args.to_device(raw)
        except (TypeError, ValueError, RuntimeError):
            raise InputTypeError(f"{where}: expected [2, D] numbers, {received(raw)}") from None
        if tensor.ndim != 2 or tensor.shape[0] != 2:
            raise InputValueError(
                f"{where}: expected shape [2, D] (lower row, upper row), "
                f"received {tuple(tensor.shape)}"
            )
        if bool(torch.isnan(tensor).any()):
            raise InputValueError(f"{where}: contains NaN: {tensor.tolist()}")
        if bool((tensor[0] > tensor[1]).any()):
            raise InputValueError(f"{where}: lower limit above upper limit: {tensor.tolist()}")
        limits[quantity] = tensor
    dofs = {q: t.shape[1] for q, t in limits.items()}
    if len(set(dofs.values())) != 1:
        raise InputValueError(f"{owner}.joint_limits: quantities have different dof: {dofs}")
    return limits


# --------------------------------------------------------------------------------------------------
# input validation (cheap shape/dtype/device checks, no device synchronisation)


# shape labels of the checked tensors by rank (the last one is replaced by ``last_dim``)
_DIM_LABELS = {2: ("G", "D"), 3: ("B", "H", "D"), 4: ("B", "H", "N", "D")}


def check_tensor(
    owner: str,
    name: str,
    value: Any,
    ndim: int,
    tensor_args: TensorDeviceType,
    last_dim: int | None = None,
) -> torch.Tensor:
    """``value`` when it is a tensor of rank ``ndim`` (last dimension ``last_dim`` when given)
    with ``tensor_args``' dtype and device; otherwise an error naming ``owner`` and ``name``
    with the expected shape (e.g. ``[B, H, N, 4]``) and what was received."""
    dims = list(_DIM_LABELS.get(ndim, [f"d{i}" for i in range(ndim)]))
    if last_dim is not None:
        dims[-1] = str(last_dim)
    expected = f"[{', '.join(dims)}]"
    if not isinstance(value, torch.Tensor):
        raise InputTypeError(
            f"{owner}: {name} must be a torch.Tensor {expected}, received {type(value).__name__}"
        )
    if value.ndim != ndim or (last_dim is not None and value.shape[-1] != last_dim):
        raise InputValueError(
            f"{owner}: {name} expected shape {expected}, received {tuple(value.shape)}"
        )
    if value.dtype != tensor_args.dtype or value.device != tensor_args.device:
        raise InputTypeError(
            f"{owner}: {name} expected dtype {tensor_args.dtype} on {tensor_args.device} (the "
            f"cost's tensor_args), received {value.dtype} on {value.device}"
        )
    return value


def trajectory_state(owner: str, state: Any, tensor_args: TensorDeviceType) -> JointState:
    """Check a ``JointState`` with ``[B, H, D]`` fields."""
    if not isinstance(state, JointState):
        raise InputTypeError(
            f"{owner}: state must be a JointState, received {type(state).__name__}"
        )
    check_tensor(owner, "state.position", state.position, 3, tensor_args)
    return state


def trajectory_position(owner: str, state: Any, tensor_args: TensorDeviceType) -> torch.Tensor:
    """Joint positions ``[B, H, D]`` from a ``JointState`` or a plain tensor."""
    if isinstance(state, JointState):
        return check_tensor(owner, "state.position", state.position, 3, tensor_args)
    return check_tensor(owner, "state", state, 3, tensor_args)


def check_dof(owner: str, name: str, dof: int, expected: torch.Tensor | None) -> None:
    if expected is not None and expected.shape[-1] != dof:
        raise InputValueError(
            f"{owner}: state has {dof} dof but {name} has {expected.shape[-1]} entries"
        )


def select_goal(
    owner: str, name: str, goal: torch.Tensor, goal_idx: torch.Tensor | None, batch: int
) -> torch.Tensor:
    """Goal rows for each trajectory: ``goal [G, k]`` -> ``[B, k]`` (or ``[1, k]`` to broadcast).

    Without ``goal_idx``, ``G`` must be 1 (shared goal) or ``B`` (one goal per trajectory). With
    ``goal_idx [B]`` (integer), trajectory ``b`` uses ``goal[goal_idx[b]]``. The index range is
    checked on CPU only: on CUDA a range check would synchronise the device on every call.
    """
    num_goals = goal.shape[0]
    if goal_idx is None:
        if num_goals not in (1, batch):
            raise InputValueError(
                f"{owner}: {name} has batch {num_goals}; without goal_idx it must be 1 or the "
                f"trajectory batch {batch}"
            )
        return goal
    if not isinstance(goal_idx, torch.Tensor):
        raise InputTypeError(
            f"{owner}: goal_idx must be an integer torch.Tensor [B], "
            f"received {type(goal_idx).__name__}"
        )
    if goal_idx.dtype not in (torch.int64, torch.int32) or goal_idx.shape != (batch,):
        raise InputValueError(
            f"{owner}: goal_idx expected an int64/int32 tensor of shape [{batch}], received "
            f"{goal_idx.dtype} of shape {tuple(goal_idx.shape)}"
        )
    if goal_idx.device != goal.device:
        raise InputTypeError(
            f"{owner}: goal_idx expected device {goal.device}, received {goal_idx.device}"
        )
    if goal_idx.device.type == "cpu" and batch > 0:
        low, high = int(goal_idx.min()), int(goal_idx.max())
        if low < 0 or high >= num_goals:
            raise InputValueError(
                f"{owner}: goal_idx entries must lie in [0, {num_goals - 1}] ({name} has batch "
                f"{num_goals}), received values in [{low}, {high}]"
            )
    return goal.index_select(0, goal_idx)


def check_pose(owner: str, goal: Any, tensor_args: TensorDeviceType) -> Pose:
    if not isinstance(goal, Pose):
        raise InputTypeError(f"{owner}: goal must be a Pose, received {type(goal).__name__}")
    if goal.position.dtype != tensor_args.dtype or goal.position.device != tensor_args.device:
        raise InputTypeError(
            f"{owner}: goal expected dtype {tensor_args.dtype} on {tensor_args.device}, "
            f"received {goal.position.dtype} on {goal.position.device}"
        )
    return goal


def step_schedule(
    run: torch.Tensor, terminal: torch.Tensor, horizon: int, ramp: bool
) -> torch.Tensor:
    """Per-step weights ``[k, H]`` from running and terminal weights ``[k]``.

    Steps ``h < H-1`` get ``run`` (times ``h / (H-1)`` when ``ramp``); step ``H-1`` gets
    ``terminal`` alone (the terminal weight replaces the running weight there).
    """
    steps = torch.arange(horizon, device=run.device, dtype=run.dtype)
    if ramp and horizon > 1:
        factor = steps / (horizon - 1)
    else:
        factor = torch.ones_like(steps)
    schedule = run[:, None] * factor[None, :]
    schedule[:, -1] = terminal
    return schedule


# --------------------------------------------------------------------------------------------------
# configuration and cost base classes


@dataclass
class CostConfig:
    """Options shared by every cost.

    Attributes:
        weight: overall scale (``>= 0``) multiplying the whole cost term.
        enabled: a disabled cost returns zeros ``[B, H]`` (not attached to any graph).
        tensor_args: device and dtype of the cost's tensors; inputs must match it.

    Assigning a field after construction (``cost.config.weight = 2.0``) checks and normalises
    the value like the constructor (an invalid one raises and changes nothing), increments
    :attr:`revision` and re-derives the tensors of every cost using this configuration, so the
    edit takes effect exactly as :meth:`CostBase.update_weight` would. Element-wise edits of a
    tensor field (``config.run_weight[0] = 5.0``) are not seen: assign the field.
    """

    section: ClassVar[str] = "cost"

    weight: float = 1.0
    enabled: bool = True
    tensor_args: TensorDeviceType = field(default_factory=TensorDeviceType)

    def __post_init__(self) -> None:
        if not isinstance(self.tensor_args, TensorDeviceType):
            raise InputTypeError(
                f"{self.section}.tensor_args: expected a TensorDeviceType, "
                f"received {type(self.tensor_args).__name__}"
            )
        self.weight = as_scalar(self.section, "weight", self.weight)
        self.enabled = as_bool(self.section, "enabled", self.enabled)
        self._validate()
        # from here on, field assignments go through the checks below
        self.__dict__["_revision"] = 0
        self.__dict__["_costs"] = weakref.WeakSet()

    def __setattr__(self, name: str, value: Any) -> None:
        if "_revision" not in self.__dict__ or name not in _field_names(type(self)):
            object.__setattr__(self, name, value)
            return
        # replace() runs every check of the constructor on a copy before anything is changed
        checked = dataclasses.replace(self, **{name: value})
        for option in _field_names(type(self)):
            object.__setattr__(self, option, getattr(checked, option))
        self.__dict__["_revision"] += 1
        for cost in list(self._costs):
            cost._setup()

    def __getstate__(self) -> dict[str, Any]:
        # copies and pickles are new configurations: no cost uses them yet
        return {k: v for k, v in self.__dict__.items() if k != "_costs"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state, _costs=weakref.WeakSet())

    @property
    def revision(self) -> int:
        """How many field assignments this configuration has had since construction."""
        return self._revision

    def _validate(self) -> None:
        """Subclass hook: check and normalise the subclass's own options."""

    def _require(self, name: str, expected: str, hint: str) -> None:
        """Raise :class:`InputValueError` when option ``name`` is missing (``None``):
        ``expected`` says what it holds, ``hint`` where else it may come from."""
        if getattr(self, name) is None:
            raise InputValueError(f"{self.section}.{name}: required ({expected}); {hint}")

    def _joint_weights(self, name: str, dof: int | None = None) -> torch.Tensor | None:
        """Option ``name`` as optional per-joint weights ``[D]`` (``>= 0``; ``dof`` of them when
        given); ``None`` (every weight one) stays ``None``."""
        value = getattr(self, name)
        if value is None:
            return None
        return as_vector(self.section, name, value, self.tensor_args, length=dof, nonnegative=True)

    @classmethod
    def known_keys(cls) -> list[str]:
        return [f.name for f in dataclasses.fields(cls) if f.name != "tensor_args"]

    @classmethod
    def from_dict(
        cls,
        data: Mapping[str, Any] | None,
        tensor_args: TensorDeviceType | None = None,
        **defaults: Any,
    ) -> CostConfig:
        """Build from a YAML section; unknown keys are an error.

        ``defaults`` (e.g. ``joint_limits``, ``retract_config`` from the robot) fill options the
        section leaves out; defaults naming options this cost does not have are ignored, and
        ``None`` defaults are skipped. An empty (``None``) section means all defaults.
        """
        if data is None:
            data = {}
        if not isinstance(data, Mapping):
            raise InputTypeError(
                f"{cls.section}: expected a mapping of options, received {type(data).__name__}"
            )
        known = cls.known_keys()
        unknown = sorted(str(k) for k in data if k not in known)
        if unknown:
            raise InputValueError(f"{cls.section}: unknown key(s) {unknown}; known keys: {known}")
        kwargs = {k: v for k, v in defaults.items() if k in known and v is not None}
        kwargs.update(data)
        return cls(**kwargs, tensor_args=tensor_args or TensorDeviceType())


@functools.cache
def _field_names(config_cls: type) -> frozenset[str]:
    return frozenset(f.name for f in dataclasses.fields(config_cls))


#: the configuration class of a :class:`CostBase` subclass
_ConfigT = TypeVar("_ConfigT", bound=CostConfig)


class CostBase(abc.ABC, Generic[_ConfigT]):
    """A cost term: ``forward(...) -> [B, H]``; see each subclass for its inputs. The type
    parameter is the cost's configuration class (``config_cls``), the type of ``config``.

    Weights can change at runtime through :meth:`update_weight`; the new values are validated
    like the configuration and new weight tensors replace the old ones (never written in place,
    so a graph built before the update still backpropagates correctly).
    """

    config_cls: ClassVar[type[CostConfig]] = CostConfig
    #: Configuration fields that :meth:`update_weight` may change.
    weight_fields: ClassVar[tuple[str, ...]] = ("weight",)

    def __init__(self, config: _ConfigT) -> None:
        self.config = config

    @property
    def config(self) -> _ConfigT:
        """The cost's configuration. Assigning a new one, or a field of this one
        (``cost.config.weight = 2.0``), re-derives the cost's tensors as :meth:`update_weight`
        does."""
        return self._config

    @config.setter
    def config(self, config: _ConfigT) -> None:
        if not isinstance(config, self.config_cls):
            raise InputTypeError(
                f"{type(self).__name__}: expected a {self.config_cls.__name__}, "
                f"received {type(config).__name__}"
            )
        previous = self.__dict__.get("_config")
        if previous is not None:
            previous._costs.discard(self)
        self._config = config
        self.tensor_args = config.tensor_args
        self._setup()
        config._costs.add(self)

    @classmethod
    def from_dict(
        cls,
        data: Mapping[str, Any] | None,
        tensor_args: TensorDeviceType | None = None,
        **defaults: Any,
    ) -> CostBase:
        """``cls(cls.config_cls.from_dict(data, tensor_args, **defaults))``."""
        return cls(cls.config_cls.from_dict(data, tensor_args, **defaults))

    def _setup(self) -> None:
        """Derive tensors from ``self.config``; called again after every weight update.

        Subclasses extend it (calling ``super()._setup()``); ``_cache`` holds constant per-horizon
        tensors (weight schedules), dropped whenever the weights change.
        """
        self._cache: dict[int, torch.Tensor] = {}

    @property
    def name(self) -> str:
        return self.config.section

    @property
    def weight(self) -> float:
        return self.config.weight

    @property
    def enabled(self) -> bool:
        return self.config.enabled

    @enabled.setter
    def enabled(self, value: bool) -> None:
        # the config's field assignment checks the value (as the constructor does)
        self.config.enabled = value

    def update_weight(self, weight: Any = None, **weights: Any) -> None:
        """Change the overall ``weight`` and/or named weight options (see ``weight_fields``)."""
        unknown = sorted(set(weights) - set(self.weight_fields))
        if unknown:
            raise InputValueError(
                f"{self.config.section}.update_weight: unknown weight(s) {unknown}; "
                f"known: {list(self.weight_fields)}"
            )
        changes = dict(weights)
        if weight is not None:
            changes["weight"] = weight
        # replace() re-runs the configuration's validation before anything is changed.
        self.config = dataclasses.replace(self.config, **changes)

    def _disabled(self, batch: int, horizon: int) -> torch.Tensor:
        return torch.zeros(batch, horizon, **self.tensor_args.as_kwargs())

    @abc.abstractmethod
    def forward(self, *args: Any, **kwargs: Any) -> torch.Tensor:
        """Per-step cost ``[B, H]``."""

    def __call__(self, *args: Any, **kwargs: Any) -> torch.Tensor:
        return self.forward(*args, **kwargs)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.config!r})"
