"""The errors curobo_lite raises on bad input, and the one it raises when a rank fails.

The contract: every bad input to a public function, class or file loader raises a
:class:`CuroboLiteError` before any buffer, solver state or file is written. Wrong values derive
from ``ValueError`` and wrong types from ``TypeError``, so code written against the built-in
classes keeps working; the message names the argument (or the YAML key path, e.g.
``joints[3].limits.lower``), what was expected and what came.

============================  =======================  ===========================================
class                         also an instance of      raised for
============================  =======================  ===========================================
:class:`InputValueError`      ``ValueError``           a bad value: shape, range, NaN/inf, device,
                                                       empty batch, dt <= 0
:class:`InputTypeError`       ``TypeError``            an argument of the wrong type
:class:`ConfigError`          ``InputValueError``      a robot, task or world file (or mapping) or
                                                       a URDF that does not validate
:class:`DistributedError`     ``RuntimeError``         another rank raised, exited or timed out
:class:`ConcurrentUseError`   ``RuntimeError``         a solver called from a second thread while
                                                       a call of it is running
============================  =======================  ===========================================
"""

from __future__ import annotations


class CuroboLiteError(Exception):
    """Base of every error curobo_lite raises on purpose (catch this to catch them all)."""


class InputValueError(CuroboLiteError, ValueError):
    """An argument has an acceptable type but a bad value (shape, range, NaN/inf, device)."""


class InputTypeError(CuroboLiteError, TypeError):
    """An argument has the wrong type (a list where a tensor is needed, a string for a number)."""


class ConfigError(InputValueError):
    """A configuration file or mapping is invalid: the message starts with the file (or
    ``<dict>``) and names the key path (``joints[3].limits.lower``)."""


class DistributedError(CuroboLiteError, RuntimeError):
    """A collective could not complete: another rank raised, exited or did not answer within the
    configured timeout. Raised on every surviving rank instead of hanging."""


class ConcurrentUseError(CuroboLiteError, RuntimeError):
    """A solver (MotionGen, MpcSolver, TrajOptSolver, IKSolver) was called while another
    thread's call of the same solver is still running. Solvers hold buffers and warm starts
    that one call at a time may use: the second call is refused at once, before it touches
    them, and the first completes unharmed. Use one solver per thread, or a lock of yours."""


__all__ = [
    "ConcurrentUseError",
    "ConfigError",
    "CuroboLiteError",
    "DistributedError",
    "InputTypeError",
    "InputValueError",
]
