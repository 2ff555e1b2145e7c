"""Options of :class:`~curobo_lite.wrap.ik.solver.IKSolver` (:class:`IKSolverConfig`, the
module docstring of :mod:`curobo_lite.wrap.ik.solver` lists them) and their defaults."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from curobo_lite.opt.options import (
    CheckedOptions,
    as_bool,
    as_float,
    as_int,
    as_mapping,
    options_from_dict,
)

#: Costs of the IK rollout unless ``cost=`` is given: squared errors suit quasi-Newton steps;
#: the collision penalties are linear past contact, so a few millimetres of penetration already
#: outweigh the pose error of the same size. Narrow activation bands: a goal pose may lie
#: close to an obstacle, and a wider band would cost pose accuracy there.
DEFAULT_IK_COST: dict[str, Any] = {
    "pose_cost": {
        "terminal_weight": [20000.0, 5000.0],
        "position_norm": "SQUARED_L2",
        "rotation_error": "ONE_MINUS_DOT",
    },
    "bound_cost": {
        "bound_weight": [1000.0, 0.0, 0.0, 0.0],
        "activation_distance": [0.002, 0.0, 0.0, 0.0],
    },
    # 2 mm: grasp goals put the object 3-10 mm from the fingers; a 10 mm band held the hand
    # 11-40 mm off such goals
    "primitive_collision_cost": {"weight": 2000.0, "activation_distance": 0.002},
    "self_collision_cost": {"weight": 2000.0, "activation_distance": 0.005},
}

#: L-BFGS options of the IK; an ``lbfgs=`` option overrides some of them.
DEFAULT_IK_LBFGS: dict[str, Any] = {
    "n_iters": 50,
    "history": 10,
    "line_search": "ARMIJO",
    "line_search_scale": [0.01, 0.05, 0.1, 0.3, 0.5, 0.75, 1.0],
    "convergence_tol": 0.0,
    # a goal's seeds stop once its best seed gains less than 1e-3 + 5 % over 4 iterations (it
    # has settled on the pose; the other seeds have mostly settled too, or are stuck in local
    # minima): 20-30 iterations instead of 50
    "stall_atol": 0.001,
    "stall_rtol": 0.05,
    "convergence_check_every": 4,
    "stop_rule": "BEST_SEED",
    "fixed_iters": False,
}

#: seeds per pose of a goal set at least, L-BFGS and pose phase (:meth:`IKSolver.solve_goalset`)
GOALSET_MIN_SEEDS = (4, 16)

#: defaults of the IK options that the trajectory optimizer and MotionGen pass on to their IK
#: solver (so that their own defaults are these): seeds per goal, the random seed, and the
#: success thresholds (m, rad)
DEFAULT_IK_SEEDS = 32
DEFAULT_SEED = 0
DEFAULT_POSITION_THRESHOLD = 0.005
DEFAULT_ROTATION_THRESHOLD = 0.05


@dataclass
class IKSolverConfig(CheckedOptions):
    """Options of :class:`IKSolver` (see the module docstring)."""

    section = "ik"

    num_seeds: int = DEFAULT_IK_SEEDS
    seed: int = DEFAULT_SEED
    position_threshold: float = DEFAULT_POSITION_THRESHOLD
    rotation_threshold: float = DEFAULT_ROTATION_THRESHOLD
    distinct_tolerance: float = 0.05
    limit_margin: float = 0.02
    stop_after: int = 0
    dls_iterations: int = 0
    dls_seeds: int = 0
    dls_chunk: int = 0
    dls_enough: int = 0
    lbfgs_fallback: bool = True
    cost: dict[str, Any] = field(default_factory=lambda: dict(DEFAULT_IK_COST))
    lbfgs: dict[str, Any] = field(default_factory=lambda: dict(DEFAULT_IK_LBFGS))
    cpu_torch_threads: int | None = 1

    def __post_init__(self) -> None:
        s = self.section
        self.num_seeds = as_int(s, "num_seeds", self.num_seeds, 1)
        self.seed = as_int(s, "seed", self.seed, 0)
        for key in ("position_threshold", "rotation_threshold", "distinct_tolerance"):
            setattr(self, key, as_float(s, key, getattr(self, key), 0.0, low_open=True))
        self.limit_margin = as_float(s, "limit_margin", self.limit_margin, 0.0, 0.5)
        self.stop_after = as_int(s, "stop_after", self.stop_after, 0)
        self.dls_iterations = as_int(s, "dls_iterations", self.dls_iterations, 0)
        self.dls_seeds = as_int(s, "dls_seeds", self.dls_seeds, 0)
        self.dls_chunk = as_int(s, "dls_chunk", self.dls_chunk, 0)
        self.dls_enough = as_int(s, "dls_enough", self.dls_enough, 0)
        self.lbfgs_fallback = as_bool(s, "lbfgs_fallback", self.lbfgs_fallback)
        self.cost = as_mapping(s, "cost", self.cost)
        # a partial lbfgs section adjusts the IK's defaults, as a trajopt's adjusts its task's
        self.lbfgs = {**DEFAULT_IK_LBFGS, **as_mapping(s, "lbfgs", self.lbfgs)}
        self.cpu_torch_threads = as_int(
            s, "cpu_torch_threads", self.cpu_torch_threads, 1, allow_none=True
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> IKSolverConfig:
        """Build from a mapping of the options; unknown keys raise ``ValueError``."""
        return options_from_dict(cls, data, "a mapping of options")
