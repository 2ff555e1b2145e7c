"""Solver and optimizer options checked after construction (issue #35): assigning a field runs
the constructor's checks on a copy first, so an invalid value raises, names ``section.key`` and
changes nothing; a valid one is normalised as the constructor would. Also: one name for the
distance beyond which collision queries stop resolving (``max_distance``)."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import math

import pytest

from curobo_lite.geom import SelfCollisionModel, WorldCollision
from curobo_lite.opt import GradientDescentConfig, LbfgsConfig, MppiConfig
from curobo_lite.types.errors import InputTypeError, InputValueError
from curobo_lite.wrap import (
    IKSolverConfig,
    MotionGenConfig,
    MpcSolverConfig,
    ReactivePlannerConfig,
    TrajOptSolverConfig,
)
from curobo_lite.wrap.motion.roadmap import RoadmapConfig
from curobo_lite.wrap.trajopt.config import EarlyStopConfig, IkConfig

# (config class, an integer option >= 1, a positive float option)
CASES = [
    (IKSolverConfig, "num_seeds", "position_threshold"),
    (TrajOptSolverConfig, "num_seeds", "position_threshold"),
    (MotionGenConfig, "num_trajopt_seeds", "interpolation_dt"),
    (MpcSolverConfig, "shift_steps", "control_dt"),
    (ReactivePlannerConfig, "retry_interval", "max_deviation"),
    (RoadmapConfig, "num_samples", None),
    (LbfgsConfig, "n_iters", None),
    (GradientDescentConfig, "n_iters", None),
    (MppiConfig, "n_problems", None),
    (IkConfig, "num_seeds", None),
    (EarlyStopConfig, None, None),
]


def _values(config) -> dict:
    return {f.name: copy.deepcopy(getattr(config, f.name)) for f in dataclasses.fields(config)}


@pytest.mark.parametrize("cls,int_key,float_key", CASES, ids=[c[0].__name__ for c in CASES])
def test_invalid_assignment_raises_and_changes_nothing(cls, int_key, float_key) -> None:
    config = cls()
    init_fields = [f.name for f in dataclasses.fields(config) if f.init]
    for name in init_fields:
        before = _values(config)
        with pytest.raises((InputTypeError, InputValueError, TypeError, ValueError)) as info:
            setattr(config, name, object())  # no option accepts an arbitrary object
        assert name in str(info.value), f"{cls.__name__}.{name}: {info.value}"
        assert _values(config) == before, f"{cls.__name__}.{name} changed on a bad value"
    if int_key is not None:
        before = _values(config)
        with pytest.raises(InputValueError, match=int_key):
            setattr(config, int_key, 0)
        with pytest.raises((InputTypeError, InputValueError), match=int_key):
            setattr(config, int_key, 2.5)
        assert _values(config) == before
        setattr(config, int_key, 3)
        assert getattr(config, int_key) == 3 and isinstance(getattr(config, int_key), int)
    if float_key is not None:
        with pytest.raises(InputValueError, match=float_key):
            setattr(config, float_key, -1.0)
        with pytest.raises(InputValueError, match=float_key):
            setattr(config, float_key, math.nan)
        setattr(config, float_key, 0.125)
        assert getattr(config, float_key) == 0.125


@pytest.mark.parametrize("cls", [c[0] for c in CASES], ids=[c[0].__name__ for c in CASES])
def test_unknown_option_is_named(cls) -> None:
    config = cls()
    with pytest.raises(AttributeError, match="no option 'num_sedes'"):
        config.num_sedes = 4
    assert not hasattr(config, "num_sedes")


def test_copies_and_replacements_keep_the_checks() -> None:
    config = IKSolverConfig(num_seeds=4)
    clone = copy.deepcopy(config)
    with pytest.raises(InputValueError):
        clone.num_seeds = -1
    assert clone.num_seeds == 4
    other = dataclasses.replace(config, num_seeds=8)
    assert other.num_seeds == 8 and config.num_seeds == 4
    with pytest.raises(InputValueError):
        other.num_seeds = 0


def test_from_dict_still_rejects_unknown_keys() -> None:
    with pytest.raises(InputValueError, match="unknown key"):
        MpcSolverConfig.from_dict({"shift_step": 2})
    with pytest.raises(InputValueError, match="unknown key"):
        ReactivePlannerConfig.from_dict({"max_deviaton": 0.2})
    assert MpcSolverConfig.from_dict({"shift_steps": 2, "control_dt": None}).shift_steps == 2


def test_collision_queries_share_one_name_for_their_range() -> None:
    world = inspect.signature(WorldCollision.sphere_distance).parameters
    own = inspect.signature(SelfCollisionModel.distance).parameters
    assert "max_distance" in world and "max_distance" in own
    assert "distance_range" not in own
