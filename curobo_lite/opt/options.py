"""Parsing of option sections (the solvers', MPC's, planners' and plant's): each option is
checked and normalised, with an error naming ``<section>.<key>``, what was expected and what was
received.

:func:`options_from_dict` builds an options dataclass from a mapping (unknown keys are an error);
the ``as_*`` helpers check one value each, for the dataclasses' ``__post_init__``;
:class:`CheckedOptions` makes a later field assignment pass the same checks.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import fields
from typing import Any, TypeVar

from curobo_lite.types.checks import parse_number, received
from curobo_lite.types.errors import InputTypeError, InputValueError

_Config = TypeVar("_Config")


class _ChecksAfterConstruction(type):
    """Marks an instance as constructed once its whole ``__init__`` (with the ``__post_init__``
    of every class in its hierarchy) has run: from then on assignments are checked."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        instance = super().__call__(*args, **kwargs)
        instance.__dict__["_constructed"] = True
        return instance


class CheckedOptions(metaclass=_ChecksAfterConstruction):
    """Base of an options dataclass whose ``__post_init__`` checks and normalises every field.

    Assigning a field after construction (``config.num_seeds = 8``) runs those same checks on
    a copy first (:func:`dataclasses.replace`), then takes the copy's normalised values: an
    invalid value raises, naming ``<section>.<key>``, and leaves every field as it was.
    Element-wise edits of a mutable field (``config.cost["x"] = ...``) are not seen: assign the
    field. A solver reads its configuration when it is built; assign before building it.
    """

    def __setattr__(self, name: str, value: Any) -> None:
        if "_constructed" not in self.__dict__:
            object.__setattr__(self, name, value)
            return
        init_fields = [f.name for f in fields(self) if f.init]  # type: ignore[arg-type]
        if name not in init_fields:
            raise AttributeError(
                f"{type(self).__name__} has no option {name!r}; options: {sorted(init_fields)}"
            )
        checked = dataclasses.replace(self, **{name: value})  # type: ignore[type-var]
        for option in init_fields:
            object.__setattr__(self, option, getattr(checked, option))


def check_keys(section: str, data: Mapping[str, Any], allowed: Sequence[str]) -> None:
    """Raise on a non-mapping ``data`` or on keys outside ``allowed``."""
    if not isinstance(data, Mapping):
        raise InputTypeError(f"{section}: expected a mapping, received {type(data).__name__}")
    unknown = sorted(str(k) for k in data if k not in allowed)
    if unknown:
        raise InputValueError(
            f"{section}: unknown key(s) {unknown}; expected a subset of {sorted(allowed)}"
        )


def options_from_dict(
    cls: type[_Config], data: Mapping[str, Any] | None, expected: str = "a mapping"
) -> _Config:
    """``cls(**data)`` for an options dataclass whose ``section`` attribute names its YAML
    section: ``None`` means no options (the defaults); data that is not a mapping (``expected``
    describes what is) or holds a key that is no field of ``cls`` raises, naming the section."""
    data = {} if data is None else data
    if not isinstance(data, Mapping):
        raise InputTypeError(f"{cls.section}: expected {expected}, received {type(data).__name__}")
    check_keys(cls.section, data, [f.name for f in fields(cls)])
    return cls(**dict(data))


def as_int(
    section: str, key: str, value: Any, minimum: int | None = None, allow_none: bool = False
) -> int | None:
    """An integer option ``>= minimum`` (see :func:`~curobo_lite.types.checks.parse_number`)."""
    return parse_number(value, f"{section}.{key}", integer=True, low=minimum, allow_none=allow_none)


def as_float(
    section: str,
    key: str,
    value: Any,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """A finite number option in ``[low, high]`` (ends open with ``low_open`` /
    ``high_open``; see :func:`~curobo_lite.types.checks.parse_number`)."""
    return parse_number(
        value, f"{section}.{key}", low=low, high=high, low_open=low_open, high_open=high_open
    )


def as_mapping(
    section: str, key: str, value: Any, allow_none: bool = False
) -> dict[str, Any] | None:
    """A copy of a mapping-valued option (``None`` passes through with ``allow_none``)."""
    if value is None and allow_none:
        return None
    if not isinstance(value, Mapping):
        raise InputTypeError(
            f"{section}.{key}: expected a mapping, received {type(value).__name__}"
        )
    return dict(value)


def as_bool(section: str, key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise InputTypeError(f"{section}.{key}: expected true/false, {received(value)}")
    return value


def as_choice(section: str, key: str, value: Any, choices: Sequence[str]) -> str:
    v = str(value).upper() if isinstance(value, str) else value
    if v not in choices:
        raise InputValueError(
            f"{section}.{key}: expected one of {list(choices)}, {received(value)}"
        )
    return v
