"""Property-based fuzzing of every public entry point (issue 15): robot, task and world YAML,
URDF text, ``tensor_step``, ``Kinematics.forward``, the solvers' ``step``/``solve_*``/``plan_*``
and device requests.

Each generated case must end in success (with finite commands, plans and poses) or in a
documented :class:`~curobo_lite.CuroboLiteError`; any other exception fails the test. The cases
are derandomized and few per target (~45 s in all on a 2-core CPU); ``make fuzz``
(``tools/fuzz.py``) draws 10 000 per target from the same strategies.
"""

from __future__ import annotations

from collections import Counter

import pytest
from fuzz_targets import TARGETS
from hypothesis import HealthCheck, Phase, given, settings

import curobo_lite
from curobo_lite.types import (
    ConfigError,
    CuroboLiteError,
    DistributedError,
    InputTypeError,
    InputValueError,
)

DOCUMENTED = {"ok", "ConfigError", "InputValueError", "InputTypeError"}
# cases per target: sized by the cost of one case (a solver call ~0.1 s, a kernel ~5 ms)
EXAMPLES = {
    "robot_yaml": 100,
    "task_yaml": 60,
    "world_yaml": 150,
    "urdf": 150,
    "tensor_step": 300,
    "kinematics_forward": 200,
    "solvers": 100,
    "device": 30,
}
# the outcomes each target must reach at least once (a strategy that stopped producing valid or
# invalid inputs would make the test vacuous)
EXPECTED = {
    "robot_yaml": {"ok", "ConfigError"},
    "task_yaml": {"ok", "ConfigError"},
    "world_yaml": {"ok", "ConfigError"},
    "urdf": {"ok", "ConfigError"},
    "tensor_step": {"ok", "InputValueError", "InputTypeError"},
    "kinematics_forward": {"ok", "InputValueError", "InputTypeError"},
    "solvers": {"ok", "InputValueError", "InputTypeError"},
    "device": {"ok", "InputValueError", "InputTypeError"},
}


@pytest.mark.parametrize("target", list(TARGETS))
def test_every_case_succeeds_or_raises_a_documented_error(target):
    strategy, runner = TARGETS[target]
    outcomes: Counter[str] = Counter()

    @settings(
        max_examples=EXAMPLES[target],
        derandomize=True,
        database=None,
        deadline=None,
        phases=(Phase.generate, Phase.shrink),
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def check(case) -> None:
        outcome = runner(case)
        assert outcome in DOCUMENTED, f"{outcome} is not a documented outcome"
        outcomes[outcome] += 1

    check()
    assert EXPECTED[target] <= set(outcomes), dict(outcomes)


def test_error_classes_keep_the_builtin_contract():
    assert issubclass(InputValueError, ValueError) and issubclass(InputValueError, CuroboLiteError)
    assert issubclass(InputTypeError, TypeError) and issubclass(InputTypeError, CuroboLiteError)
    assert issubclass(ConfigError, InputValueError)
    assert issubclass(DistributedError, RuntimeError)
    assert curobo_lite.ConfigError is ConfigError


def test_config_errors_name_the_file_and_the_key_path():
    from fuzz_targets import _yaml

    from curobo_lite.robot import RobotConfig

    data = _yaml("robot", "planar3")
    data = {**data, "joints": [dict(j) for j in data["joints"]]}
    data["joints"][1]["origin"] = {"xyz": [0.5, float("nan"), 0.0], "rpy": [0.0, 0.0, 0.0]}
    with pytest.raises(ConfigError, match=r"my_robot\.yml: 'joints\[1\]\.origin\.xyz\[1\]'"):
        RobotConfig.from_dict(data, source="my_robot.yml")
