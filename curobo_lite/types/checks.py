"""The one checked path every configuration and option number goes through, and the capped
excerpts error messages quote.

:func:`parse_number` turns a raw value (from YAML, a mapping or a keyword argument) into a
``float`` or ``int``, or raises an error naming where it came from, what was expected and an
excerpt of what was received. It catches, at the boundary: ``bool`` given as a number, strings
(``'0.02'``), ``None``, lists and mappings, integers too large for a float (a few hundred digits)
or for a 64-bit integer, NaN and infinities, magnitudes above :data:`MAX_MAGNITUDE`, which no
setting means and whose products overflow float32 tensors, and nonzero magnitudes below
:data:`MIN_MAGNITUDE`, which underflow to 0 in float32.

:func:`excerpt` is ``reprlib`` with a hard length cap: an error message never embeds more than
:data:`EXCERPT_CHARS` characters of a received value, however large or deeply nested it is.
"""

from __future__ import annotations

import math
import numbers
import os
import reprlib
from collections.abc import Callable
from typing import Any

from curobo_lite.types.errors import InputTypeError, InputValueError

#: The largest magnitude a configuration or option number may have (larger ones are an error).
MAX_MAGNITUDE = 1e12
#: The smallest nonzero magnitude a configuration or option number may have: smaller ones
#: (1e-170, subnormals) underflow to 0 in float32 and turn divisions (MPPI's temperature) into
#: NaN. Exact zeros pass.
MIN_MAGNITUDE = 1e-30
#: Integers must fit a signed 64-bit integer (seeds, counts).
MAX_INT = 2**63 - 1
#: The most characters of a received value an error message quotes.
EXCERPT_CHARS = 120

_REPR = reprlib.Repr()
_REPR.maxlevel = 3
_REPR.maxlist = _REPR.maxtuple = _REPR.maxset = _REPR.maxdict = 6
_REPR.maxstring = _REPR.maxother = 60
_REPR.maxlong = 40


def excerpt(value: Any, limit: int = EXCERPT_CHARS) -> str:
    """A short ``repr`` of ``value`` for an error message: nested containers, long strings and
    long integers abridged with ``...`` (``reprlib``), then cut to ``limit`` characters."""
    if isinstance(value, int) and value.bit_length() > 128:
        # repr() of a huge int is slow or refused (sys.set_int_max_str_digits): its size only
        digits = int(value.bit_length() * math.log10(2)) + 1
        return f"<{'-' if value < 0 else ''}int of about {digits} digits>"
    try:
        text = _REPR.repr(value)
    except Exception:  # a hostile __repr__: name the type only
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def received(value: Any) -> str:
    """``"received <excerpt>"`` plus the type where the excerpt alone hides it
    (``'0.02'`` is a string, ``[...]`` a list)."""
    if isinstance(value, bool | int | float) or value is None:
        return f"received {excerpt(value)}"
    return f"received {excerpt(value)} ({type(value).__name__})"


#: Builds the exception for a bad value: ``(where, problem, is_type_error)``.
ErrorFactory = Callable[[str, str, bool], Exception]


def _default_error(where: str, problem: str, is_type: bool) -> Exception:
    cls = InputTypeError if is_type else InputValueError
    return cls(f"{where}: {problem}")


def _expected(
    kind: str, low: float | None, high: float | None, low_open: bool, high_open: bool
) -> str:
    """``"a positive number"``, ``"an integer >= 1"``, ``"a number in [0, 1]"``, ..."""
    if high is None and low == 0 and low_open:
        return f"a positive {kind.split()[-1]}"
    if high is None and low is not None:
        return f"{kind} {'>' if low_open else '>='} {low:g}"
    lo = "(-inf" if low is None else ("(" if low_open else "[") + f"{low:g}"
    hi = "inf)" if high is None else f"{high:g}" + (")" if high_open else "]")
    return f"{kind} in {lo}, {hi}"


def _numeric_text(value: Any) -> bool:
    """Whether ``value`` is a string that reads as a number (``'0.02'``: quoted by mistake)."""
    if not isinstance(value, str):
        return False
    try:
        float(value)
    except ValueError:
        return False
    return True


def parse_number(
    value: Any,
    where: str,
    *,
    integer: bool = False,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
    allow_none: bool = False,
    max_magnitude: float | None = MAX_MAGNITUDE,
    error: ErrorFactory | None = None,
) -> Any:
    """``value`` as a ``float`` (or an ``int`` with ``integer``), checked; ``where`` names it in
    errors (``model.dt_traj_params.base_ratio``).

    A 0-d/one-element tensor or NumPy scalar counts as its number. Rejected with an
    ``InputTypeError``: ``bool``, strings, ``None`` (unless ``allow_none``: then it is
    returned), containers, and for ``integer`` any non-integral type. Rejected with an
    ``InputValueError``: NaN, infinities, magnitudes above :data:`MAX_MAGNITUDE` (integers:
    above :data:`MAX_INT`), nonzero magnitudes below :data:`MIN_MAGNITUDE` and values outside
    ``[low, high]`` (ends open with ``low_open`` / ``high_open``). ``max_magnitude=None``
    leaves the magnitude (both ends) to the caller's own, tighter check; ``error`` replaces the
    exception factory (file readers add the file name).
    """
    make = error or _default_error
    if value is None and allow_none:
        return None
    if hasattr(value, "numel") and hasattr(value, "item") and not isinstance(value, bool):
        try:
            if value.numel() == 1:  # a one-element tensor
                value = value.item()
        except Exception:
            pass
    elif hasattr(value, "item") and getattr(value, "shape", None) == ():
        value = value.item()  # a NumPy scalar
    kind = "an integer" if integer else "a number"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        hint = " (write it without quotes)" if _numeric_text(value) else ""
        raise make(where, f"expected {kind}, {received(value)}{hint}", True)
    if integer:
        if not isinstance(value, numbers.Integral):
            raise make(where, f"expected {kind}, {received(value)}", True)
        number: float | int = int(value)
        if abs(number) > MAX_INT:
            raise make(
                where, f"expected an integer of magnitude <= 2**63 - 1, {received(value)}", False
            )
    else:
        try:
            number = float(value)
        except OverflowError:
            raise make(
                where,
                f"expected a finite number, {received(value)} (beyond the float range)",
                False,
            ) from None
        if not math.isfinite(number):
            raise make(where, f"expected a finite number, {received(value)}", False)
        if max_magnitude is not None and abs(number) > max_magnitude:
            raise make(
                where, f"expected a magnitude <= {max_magnitude:g}, {received(value)}", False
            )
        if max_magnitude is not None and 0.0 < abs(number) < MIN_MAGNITUDE:
            problem = f"expected 0 or a magnitude >= {MIN_MAGNITUDE:g}, {received(value)}"
            raise make(where, problem, False)
    bad = (low is not None and (number <= low if low_open else number < low)) or (
        high is not None and (number >= high if high_open else number > high)
    )
    if bad:
        raise make(
            where,
            f"expected {_expected(kind, low, high, low_open, high_open)}, {received(value)}",
            False,
        )
    return number


#: Set to 1 to turn :func:`finite_checks` on by default (``check_finite=None`` arguments).
ENV_CHECK_FINITE = "CUROBO_LITE_CHECK_FINITE"


def finite_checks(check_finite: bool | None) -> bool:
    """Whether a kernel entry point (``tensor_step``, ``Kinematics.forward``) checks its inputs
    for NaN/inf: ``check_finite`` when given, else ``$CUROBO_LITE_CHECK_FINITE`` (``1``: on).
    Off by default: the check reads a value back from the device (a sync per call)."""
    if check_finite is not None:
        return bool(check_finite)
    return os.environ.get(ENV_CHECK_FINITE, "0") not in ("", "0", "false", "False")


def require_finite(name: str, tensor: Any) -> None:
    """Raise an ``InputValueError`` naming ``name`` and the first NaN/inf element's index
    (one device read); ``None`` and non-tensors pass."""
    if tensor is None or not hasattr(tensor, "isfinite") or tensor.numel() == 0:
        return
    bad = ~tensor.detach().isfinite()
    if bool(bad.any()):
        index = tuple(int(i) for i in bad.nonzero()[0])
        value = float(tensor.detach()[index])
        raise InputValueError(
            f"{name}: expected finite values (check_finite), received {value} at index "
            f"{list(index)}"
        )


__all__ = [
    "ENV_CHECK_FINITE",
    "EXCERPT_CHARS",
    "MAX_INT",
    "MAX_MAGNITUDE",
    "MIN_MAGNITUDE",
    "excerpt",
    "finite_checks",
    "parse_number",
    "received",
    "require_finite",
]
