"""Hostile and mistyped input files and arguments (issue #34, items 1 and 9).

Every rejection names where (the file, the key path or the argument), what was expected and an
excerpt of what came; alias bombs and huge values are refused fast and quoted short; bytes that
are not UTF-8 text, missing files and directories are a ``ConfigError`` naming the path.
"""

from __future__ import annotations

import copy
import math
import re
import time
import tracemalloc
from pathlib import Path

import pytest
import torch
import yaml

from curobo_lite.config_files import MAX_YAML_NODES, load_yaml
from curobo_lite.geom import WorldConfig
from curobo_lite.robot import RobotConfig
from curobo_lite.rollout import TaskConfig
from curobo_lite.types import ConfigError, CuroboLiteError, InputTypeError, InputValueError
from curobo_lite.types.checks import EXCERPT_CHARS, MAX_INT, MAX_MAGNITUDE, excerpt, parse_number
from curobo_lite.wrap import IKSolver, MotionGen, MpcSolver, TrajOptSolver

REPO = Path(__file__).resolve().parents[1]
ROBOT = REPO / "configs" / "robot" / "planar3.yml"
URDF = Path(__file__).parent / "data" / "franka_panda.urdf"
TASKS = {name: REPO / "configs" / "task" / f"{name}.yml" for name in ("particle_mpc",)}
WORLD = REPO / "configs" / "world" / "table.yml"


def _robot_dict() -> dict:
    data = yaml.safe_load(ROBOT.read_text())
    data["collision_geometry"] = str(ROBOT.parent / data["collision_geometry"])
    return data


def _write(tmp_path: Path, name: str, data: dict) -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data))
    return path


# ------------------------------------------------------------------------------------------
# 9. alias bombs and capped excerpts
# ------------------------------------------------------------------------------------------
def _alias_bomb(levels: int = 8, width: int = 9) -> str:
    """The "billion laughs" pattern as one flow value: each level lists the previous one
    ``width`` times (its first copy defined inline with an anchor, the others aliases), so it
    expands to ``width ** levels`` strings from a few kilobytes."""
    expr = f"&b0 [{', '.join(['lol'] * width)}]"
    for i in range(1, levels):
        expr = f"&b{i} [{', '.join([expr] + [f'*b{i - 1}'] * (width - 1))}]"
    return expr


@pytest.mark.parametrize("kind", ["robot", "task", "world"])
def test_alias_bomb_fails_fast_small_and_named(tmp_path, kind):
    bomb = _alias_bomb()
    if kind == "robot":  # joint_names is the bomb, the rest a valid robot file
        rest = {k: v for k, v in _robot_dict().items() if k != "joint_names"}
        text = f"joint_names: {bomb}\n" + yaml.safe_dump(rest)
    elif kind == "task":
        text = f"model:\n  horizon: {bomb}\n"
    else:
        text = f"cuboid:\n  box: {bomb}\n"
    path = tmp_path / f"bomb_{kind}.yml"
    path.write_text(text)
    assert len(path.read_bytes()) < 5000
    load = {"robot": RobotConfig.load, "task": TaskConfig.load, "world": WorldConfig.load}[kind]
    tracemalloc.start()
    start = time.perf_counter()
    try:
        with pytest.raises(ConfigError) as err:
            load(path)
        elapsed = time.perf_counter() - start
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    message = str(err.value)
    assert str(path) in message and "alias" in message
    assert len(message) < 1000
    assert elapsed < 1.0, elapsed
    assert peak < 50e6, peak


def test_alias_expansion_bound_counts_each_use():
    ok = "a: &a [1, 2]\nb: [*a, *a, *a]\n"
    assert load_yaml(ok, "ok.yml") == {"a": [1, 2], "b": [[1, 2]] * 3}
    depth = math.ceil(math.log(MAX_YAML_NODES, 3))  # 3^depth strings: over the bound
    with pytest.raises(ConfigError, match="bomb.yml: the YAML expands to more than"):
        load_yaml(f"a: {_alias_bomb(depth, 3)}", "bomb.yml")
    fine = load_yaml(f"a: {_alias_bomb(depth - 3, 3)}", "fine.yml")  # 1/27 of it: accepted

    def leaves(node):
        return sum(leaves(n) for n in node) if isinstance(node, list) else 1

    assert leaves(fine["a"]) == 3 ** (depth - 3)


def test_recursive_alias_and_deep_nesting_are_named():
    with pytest.raises(ConfigError, match="loop.yml: recursive YAML alias"):
        load_yaml("a: &a [1, *a]\n", "loop.yml")
    with pytest.raises(ConfigError, match="deep.yml: "):
        load_yaml("[" * 100_000 + "]" * 100_000, "deep.yml")


def test_a_legitimate_anchor_still_loads(tmp_path):
    data = _robot_dict()
    plain = RobotConfig.from_dict(copy.deepcopy(data), source="plain")
    text = yaml.safe_dump(data).replace(
        "retract_config:", "retract_config: &retract"
    )  # an anchor nobody uses is legal YAML
    path = tmp_path / "anchored.yml"
    path.write_text(text)
    loaded = RobotConfig.load(path)
    assert loaded.retract_config.tolist() == plain.retract_config.tolist()


def test_error_excerpts_are_capped(tmp_path):
    huge = ["x" * 1000] * 10_000
    path = _write(tmp_path, "huge.yml", {**_robot_dict(), "retract_config": [huge, 0, 0]})
    with pytest.raises(ConfigError) as err:
        RobotConfig.load(path)
    message = str(err.value)
    assert "retract_config[0]" in message and str(path) in message
    assert len(message) < len(str(path)) + 300
    # the excerpt itself: reprlib-abridged and cut to the cap, whatever came
    for value in (huge, "y" * 10**6, {str(i): i for i in range(10**4)}, [[[[[[1]]]]]] * 99):
        text = excerpt(value)
        assert len(text) <= EXCERPT_CHARS and "..." in text
    assert excerpt(10**5000) == "<int of about 5001 digits>"
    assert excerpt(-(2**200)) == f"<-int of about {len(str(2**200))} digits>"


# ------------------------------------------------------------------------------------------
# 1. files that cannot be read: encodings, missing, directories, unreadable
# ------------------------------------------------------------------------------------------
LOADERS = {
    "robot": (RobotConfig.load, ROBOT),
    "task": (TaskConfig.load, TASKS["particle_mpc"]),
    "world": (WorldConfig.load, WORLD),
}


def _encoded(text: str, encoding: str) -> bytes:
    if encoding == "binary":
        return bytes(range(256)) * 4
    if encoding == "latin-1":
        return ("# caf\xe9 au lait\n" + text).encode("latin-1")
    return text.encode(encoding)


@pytest.mark.parametrize("kind", list(LOADERS))
@pytest.mark.parametrize("encoding", ["binary", "latin-1", "utf-16", "utf-16-le", "utf-32"])
def test_undecodable_files_name_the_path(tmp_path, kind, encoding):
    load, original = LOADERS[kind]
    path = tmp_path / f"{kind}.yml"
    path.write_bytes(_encoded(original.read_text(), encoding))
    with pytest.raises(ConfigError) as err:
        load(path)
    assert str(path) in str(err.value)
    assert "UTF" in str(err.value) or "binary" in str(err.value)


@pytest.mark.parametrize("kind", list(LOADERS))
def test_utf8_with_bom_loads_like_without(tmp_path, kind):
    load, original = LOADERS[kind]
    (tmp_path / "bom").mkdir()
    (tmp_path / "plain").mkdir()
    path = tmp_path / "bom" / f"{kind}.yml"
    text = original.read_text()
    if kind == "robot":
        text = yaml.safe_dump(_robot_dict())
    path.write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))
    plain = tmp_path / "plain" / f"{kind}.yml"
    plain.write_text(text)
    assert repr(load(path)).replace(str(path), "P") == repr(load(plain)).replace(str(plain), "P")


@pytest.mark.parametrize("kind", list(LOADERS))
def test_missing_files_and_directories_name_the_path(tmp_path, kind):
    load, _ = LOADERS[kind]
    for path in (tmp_path / "missing.yml", tmp_path / "folder.yml"):
        if path.name == "folder.yml":
            path.mkdir()
        with pytest.raises(ConfigError, match=str(path)) as err:
            load(path)
        assert ("directory" if path.is_dir() else "does not exist") in str(err.value)
    with pytest.raises(ConfigError, match="is a directory"):
        (TaskConfig.from_yaml if kind == "task" else load)(tmp_path)


def test_unreadable_file_names_the_path(tmp_path, monkeypatch):
    path = tmp_path / "locked.yml"
    path.write_text(TASKS["particle_mpc"].read_text())

    def refuse(self):
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "read_bytes", refuse)
    with pytest.raises(ConfigError, match=f"{path}: cannot read the task file: Permission denied"):
        TaskConfig.load(path)


# ------------------------------------------------------------------------------------------
# 1. numbers: one checked path, every error naming the key path, expected and received
# ------------------------------------------------------------------------------------------
# value -> how the message must quote it (Python's repr, with the type where repr hides it)
HOSTILE_NUMBERS = {
    "huge int": (10**400, "received <int of about 401 digits>"),
    "1e308": (1e308, "received 1e+308"),
    "nan": (math.nan, "received nan"),
    "-inf": (-math.inf, "received -inf"),
    "quoted": ("0.5", "received '0.5' (str) (write it without quotes)"),
    "word": ("fast", "received 'fast' (str)"),
    "none": (None, "received None"),
    "bool": (True, "received True"),
    "list": ([[0.5]], "received [[0.5]] (list)"),
    "dict": ({"a": 1}, "received {'a': 1} (dict)"),
}
# keys whose null means "the default" (max_dt: base_dt; control_dt: the first step's dt; the
# sphere buffer: 0)
NONE_MEANS_DEFAULT = {"model.dt_traj_params.max_dt", "mpc.control_dt", "collision_sphere_buffer"}
TASK_NUMBER_KEYS = [
    "model.horizon",
    "model.vel_scale",
    "model.dt_traj_params.base_dt",
    "model.dt_traj_params.base_ratio",
    "model.dt_traj_params.max_dt",
    "model.state_filter_cfg.filter_coeff.position",
    "mppi.beta",
    "mppi.seed",
    "mppi.num_particles",
    "mppi.gamma",
    "mpc.control_dt",
    "cost.smooth_cost.acceleration_weight",
    "cost.null_space_cost.weight",
]


ROBOT_NUMBER_KEYS = [
    "retract_config.0",
    "cspace_weights.1",
    "joint_limits.velocity.upper.2",
    "collision_sphere_buffer",
]
# (file kind, key path as the test writes it, key path as the message must name it)
NUMBER_SLOTS = [("task", key, key) for key in TASK_NUMBER_KEYS] + [
    ("robot", key, "'" + re.sub(r"\.(\d+)$", r"[\1]", key) + "'") for key in ROBOT_NUMBER_KEYS
]


@pytest.mark.parametrize(("kind", "key", "where"), NUMBER_SLOTS)
@pytest.mark.parametrize("case", list(HOSTILE_NUMBERS))
def test_file_numbers_name_file_key_expected_received(tmp_path, kind, key, where, case):
    value, received = HOSTILE_NUMBERS[case]
    if value is None and key in NONE_MEANS_DEFAULT:
        pytest.skip(f"{key}: null is documented as the default")
    if kind == "task":
        data = yaml.safe_load(TASKS["particle_mpc"].read_text())
    else:
        data = _robot_dict()
    *parents, last = key.split(".")
    node = data
    for k in parents:
        node = node[k]
    node[int(last) if last.isdigit() else last] = value
    path = _write(tmp_path, f"{kind}.yml", data)
    with pytest.raises(ConfigError) as err:
        if kind == "task":
            MpcSolver.from_config(robot="planar3", task=path)
        else:
            RobotConfig.load(path)
    message = str(err.value)
    assert message.startswith(f"{path}: {where}: expected"), message
    assert received in message, message
    assert len(message) < len(str(path)) + 300


@pytest.mark.parametrize(
    "value",
    [0, -3, 7, 2**39 + 1, 0.5, -1e-29, 1e-30, -0.0, 0.0, 1e12, -1e12, 3.0],
)
def test_parse_number_agrees_with_float_on_ordinary_values(value):
    assert parse_number(value, "x") == float(value)
    if isinstance(value, int):
        assert parse_number(value, "x", integer=True) == value
    assert math.copysign(1.0, parse_number(value, "x")) == math.copysign(1.0, float(value))


@pytest.mark.parametrize("tiny", [5e-324, -5e-324, 1e-170, 6.768174828267706e-170, -9e-31])
def test_parse_number_rejects_magnitudes_that_underflow_float32(tiny):
    # found by the widened fuzzer: mppi.beta = 6.8e-170 became 0 in float32 and the MPPI
    # weights NaN; zero itself stays a valid setting
    assert torch.tensor(tiny, dtype=torch.float32).item() == 0.0 or abs(tiny) < 1e-30
    with pytest.raises(InputValueError, match=r"^beta: expected 0 or a magnitude >= 1e-30"):
        parse_number(tiny, "beta")
    assert parse_number(tiny, "x", max_magnitude=None) == tiny  # the caller's own check


def test_parse_number_bounds_and_kinds():
    assert parse_number(MAX_INT, "seed", integer=True) == MAX_INT
    with pytest.raises(InputValueError, match="seed: expected an integer of magnitude"):
        parse_number(MAX_INT + 1, "seed", integer=True)
    with pytest.raises(InputTypeError, match="n: expected an integer, received 2.0"):
        parse_number(2.0, "n", integer=True)
    with pytest.raises(InputValueError, match="magnitude <= 1e\\+12"):
        parse_number(MAX_MAGNITUDE * 1.5, "w")
    assert parse_number(MAX_MAGNITUDE * 1.5, "w", max_magnitude=None) == MAX_MAGNITUDE * 1.5
    with pytest.raises(InputValueError, match=r"r: expected a number in \(0, 1\], received 0"):
        parse_number(0, "r", low=0.0, high=1.0, low_open=True)
    assert parse_number(None, "r", allow_none=True) is None
    import numpy as np
    import torch

    assert parse_number(np.float32(0.25), "a") == 0.25
    assert parse_number(torch.tensor(3), "a", integer=True) == 3
    with pytest.raises(InputTypeError):
        parse_number(np.bool_(True), "a")


# ------------------------------------------------------------------------------------------
# 1. call arguments name the argument
# ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("solver", [MpcSolver, TrajOptSolver, IKSolver, MotionGen])
@pytest.mark.parametrize("robot", [12, None, 3.5, ["franka"]])
def test_from_config_robot_of_wrong_type_names_robot(solver, robot):
    with pytest.raises(InputTypeError, match=r"^robot: expected a bundled robot name"):
        solver.from_config(robot=robot)


@pytest.mark.parametrize("solver", [MpcSolver, TrajOptSolver])
@pytest.mark.parametrize("task", [None, 12, {"model": {}}])
def test_from_config_task_of_wrong_type_names_task(solver, task):
    with pytest.raises(InputTypeError, match=r"^task: expected a bundled task name"):
        solver.from_config(robot="planar3", task=task)


@pytest.mark.parametrize(
    "kwargs, error, where",
    [
        ({"ee_link": [1.0, 2.0]}, InputTypeError, "ee_link: expected a link name"),
        ({"base_link": None}, InputTypeError, "base_link: expected a link name"),
        ({"jerk_limit": None}, InputTypeError, "jerk_limit: expected a number, received None"),
        ({"acceleration_limit": "l2"}, InputTypeError, "acceleration_limit: expected a number"),
        ({"acceleration_limit": 10**400}, InputValueError, "acceleration_limit: expected a fin"),
        ({"acceleration_limit": -1.0}, InputValueError, "acceleration_limit: expected a positive"),
        ({"jerk_limit": [1.0, "x"]}, InputTypeError, r"jerk_limit\[1\]: expected a number"),
        ({"jerk_limit": [1.0] * 3}, InputValueError, "jerk_limit: expected a positive number or 7"),
    ],
)
def test_from_urdf_arguments_are_named(kwargs, error, where):
    args = {"base_link": "panda_link0", "ee_link": "panda_hand", **kwargs}
    with pytest.raises(error, match=f"^{where}"):
        RobotConfig.from_urdf(URDF, **args)


@pytest.mark.parametrize("end", ["parent", "child"])
@pytest.mark.parametrize("how", ["dangling", "removed"])
def test_urdf_joint_with_a_missing_link_is_named(tmp_path, end, how):
    text = URDF.read_text()
    element = f'<{end} link="panda_link3"/>'
    assert element in text
    text = text.replace(element, f'<{end} link="ghost"/>' if how == "dangling" else "", 1)
    path = tmp_path / "broken.urdf"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        RobotConfig.from_urdf(path, "panda_link0", "panda_hand")
    message = str(err.value)
    assert message.startswith(f"{path}: ")
    if how == "dangling":
        joint = "panda_joint3" if end == "child" else "panda_joint4"
        assert f"joint '{joint}': {end} link 'ghost' is not a <link>" in message


def test_every_error_here_is_a_curobo_lite_error():
    # the classes the tests above expect are the documented ones
    for cls in (ConfigError, InputTypeError, InputValueError):
        assert issubclass(cls, CuroboLiteError)
