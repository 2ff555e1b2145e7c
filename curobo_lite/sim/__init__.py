"""Simulation stand-ins for running controllers without a simulator.

:class:`IdealTracker` is a robot that follows every command exactly; :func:`run_closed_loop`
runs an :class:`~curobo_lite.wrap.MpcSolver` against it and records what happened.
"""

from curobo_lite.sim.closed_loop import ClosedLoopRecord, IdealTracker, run_closed_loop

__all__ = ["ClosedLoopRecord", "IdealTracker", "run_closed_loop"]
