"""Fuzz targets shared by ``tests/test_fuzz_*.py`` and ``tools/fuzz.py`` (``make fuzz``).

Each target is a hypothesis strategy that draws one hostile case and a runner that feeds it to a
public entry point. A runner returns ``"ok"`` when the call succeeded (and its output passed the
target's checks: finite commands, plans and poses), or the name of the :class:`CuroboLiteError`
subclass it raised. Any other exception escapes: that is a bug, and the tests fail on it.

Config targets mutate the bundled files structurally: a key deleted, an unknown key added, a
value replaced by a wrong type, NaN/inf, a negative or a huge number, a lower/upper pair swapped,
a string replaced by another name from the same file (unknown joint types, dangling parents,
cycles and duplicate names come out of that), or the whole text replaced by garbage. Issue #34
widened them to the inputs a user's typos and hostile files produce: extreme magnitudes (integers
of hundreds of digits, +-1e308, subnormals, -0.0) and every scalar slot given a string (also one
that reads as a number), None, a bool, a list or a mapping; files in other encodings (binary,
UTF-16 with and without a byte-order mark, Latin-1, UTF-8 with a BOM); paths that are missing,
directories, dangling symlinks or symlink loops (unreadable); YAML alias bombs and recursive
aliases; URDF joints whose parent or child names no link.
"""

from __future__ import annotations

import atexit
import copy
import math
import re
import shutil
import tempfile
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import torch
import yaml
from hypothesis import strategies as st

from curobo_lite.config_files import resolve_config_file
from curobo_lite.geom import WorldCollision, WorldConfig
from curobo_lite.kernels.tensor_step import tensor_step
from curobo_lite.robot import Kinematics, RobotConfig, URDFWarning
from curobo_lite.rollout import TaskConfig
from curobo_lite.types import CuroboLiteError, JointState, Pose, TensorDeviceType
from curobo_lite.wrap import IKSolver, MotionGen, MpcSolver, TrajOptSolver
from curobo_lite.wrap.ik.config import DEFAULT_IK_LBFGS

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = ROOT / "configs"
URDF = CONFIGS / "robot" / "planar3_collision.urdf"
_SCRATCH = Path(tempfile.mkdtemp(prefix="curobo_lite_fuzz_"))
atexit.register(shutil.rmtree, _SCRATCH, ignore_errors=True)


def classify(run: Callable[[], object]) -> str:
    """``"ok"`` or the documented error class's name; anything else propagates (a bug)."""
    try:
        run()
    except CuroboLiteError as err:
        assert str(err), f"{type(err).__name__} without a message"
        return type(err).__name__
    return "ok"


def assert_finite(name: str, *tensors: torch.Tensor | None) -> None:
    for t in tensors:
        if t is not None:
            assert bool(torch.isfinite(t).all()), f"{name}: returned NaN/inf without an error"


# ------------------------------------------------------------------------------------------
# structural mutation of YAML trees
# ------------------------------------------------------------------------------------------
SPECIAL_NUMBERS = (math.nan, math.inf, -math.inf, -1.0, 0.0, -1e-9, 1e9, -1e300)
#: magnitudes outside float range or at its edges (issue #34)
EXTREME_NUMBERS = (10**400, -(10**400), 2**64, 1e308, -1e308, 5e-324, -5e-324, -0.0, 1e13)
#: what a scalar slot may be given instead of a number
CONFUSED_VALUES = (None, True, False, "0.02", "1e3", "fast", "", [0.5], [], {}, {"a": 1})
wrong_values = st.one_of(
    st.sampled_from(EXTREME_NUMBERS),
    st.sampled_from(CONFUSED_VALUES),
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from(SPECIAL_NUMBERS),
    st.floats(-10, 10, allow_nan=False),
    st.text(max_size=6),
    st.lists(st.sampled_from(SPECIAL_NUMBERS + (1.0, 2.0)), max_size=4),
    st.dictionaries(st.sampled_from(["a", "lower", "name", "x"]), st.integers(0, 2), max_size=2),
)
OPS = ("delete", "extra_key", "replace", "swap_limits", "rename", "negate", "duplicate", "retype")


def _paths(tree: Any, prefix: tuple = (), ancestors: frozenset = frozenset()) -> list[tuple]:
    """Every path into a nested dict/list tree (the root excluded); a container already on
    the way down (a tree that holds itself) is not entered again."""
    out = []
    ancestors = ancestors | {id(tree)}
    items = tree.items() if isinstance(tree, dict) else enumerate(tree)
    for key, value in items:
        out.append((*prefix, key))
        if isinstance(value, dict | list) and value and id(value) not in ancestors:
            out.extend(_paths(value, (*prefix, key), ancestors))
    return out


def _at(tree: Any, path: tuple) -> Any:
    for key in path:
        tree = tree[key]
    return tree


def _strings(tree: Any, ancestors: frozenset = frozenset()) -> list[str]:
    if id(tree) in ancestors:
        return []
    inner = ancestors | {id(tree)}
    if isinstance(tree, dict):
        return [s for k, v in tree.items() for s in [str(k), *_strings(v, inner)]]
    if isinstance(tree, list):
        return [s for v in tree for s in _strings(v, inner)]
    return [tree] if isinstance(tree, str) else []


def _fresh(value: Any) -> Any:
    """A copy of a drawn value: CONFUSED_VALUES holds lists and dicts, and a later mutation of
    a shared one (an extra key) would change the constant, or put a container inside itself."""
    return copy.deepcopy(value)


def _mutate_once(tree: Any, draw: Callable) -> None:
    paths = _paths(tree)
    if not paths:
        return
    path = draw(st.sampled_from(paths))
    parent = tree
    for key in path[:-1]:
        parent = parent[key]
    key = path[-1]
    op = draw(st.sampled_from(OPS))
    value = parent[key]
    if op == "delete":
        del parent[key]
    elif op == "extra_key" and isinstance(value, dict):
        value[draw(st.sampled_from(["bogus", "lower", "type", "names"]))] = _fresh(
            draw(wrong_values)
        )
    elif op == "swap_limits" and isinstance(value, dict) and {"lower", "upper"} <= set(value):
        value["lower"], value["upper"] = value["upper"], value["lower"]
    elif op == "rename":
        # another name of the same file: dangling parents, cycles, duplicates, bad joint types
        names = _strings(tree) + ["helical", "floating", "planar", "prismatic", "fixed", ""]
        parent[key] = draw(st.sampled_from(names))
    elif op == "negate" and isinstance(value, int | float) and not isinstance(value, bool):
        parent[key] = -value
    elif op == "duplicate" and isinstance(parent, list):
        parent.append(copy.deepcopy(value))
    elif op == "retype":
        # a scalar slot (number, bool, string) anywhere: an extreme or a confused value
        scalars = [p for p in paths if not isinstance(_at(tree, p), dict | list)]
        if scalars:
            path = draw(st.sampled_from(scalars))
            parent = _at(tree, path[:-1])
            parent[path[-1]] = _fresh(draw(st.sampled_from(EXTREME_NUMBERS + CONFUSED_VALUES)))
    else:
        parent[key] = _fresh(draw(wrong_values))


@st.composite
def mutated_tree(draw: Callable, base: Any) -> Any:
    tree = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, 3))):
        _mutate_once(tree, draw)
    return tree


def alias_bomb(levels: int = 9, width: int = 9) -> str:
    """The "billion laughs" YAML: ``width ** levels`` strings from a few kilobytes."""
    expr = f"&b0 [{', '.join(['lol'] * width)}]"
    for i in range(1, levels):
        expr = f"&b{i} [{', '.join([expr] + [f'*b{i - 1}'] * (width - 1))}]"
    return expr


garbage_text = st.one_of(
    st.text(max_size=80),
    st.sampled_from(["", "- a\n- b", "{", "a: [1, 2", ":\n  :", "!!python/object:os.system x"]),
    st.sampled_from(
        [
            f"joint_names: {alias_bomb()}\n",
            f"model:\n  horizon: {alias_bomb()}\n",
            f"cuboid:\n  box: {alias_bomb()}\n",
            "a: &a [1, *a]\n",
            "[" * 5000 + "]" * 5000,
        ]
    ),
)
ENCODINGS = ("binary", "utf-16", "utf-16-le", "utf-16-be", "latin-1", "utf-8-sig", "nul")
PATH_KINDS = ("missing", "directory", "dangling_symlink", "symlink_loop")


def encode(text: str, encoding: str) -> bytes:
    """``text`` as a file in ``encoding`` (``binary``: random-looking bytes; ``nul``: UTF-8
    with NUL characters; ``latin-1``: with a non-ASCII comment so it is not plain ASCII)."""
    if encoding == "binary":
        return bytes(range(256)) + text.encode()[:64]
    if encoding == "nul":
        return text.encode().replace(b"\n", b"\x00\n", 1)
    if encoding == "latin-1":
        return ("# caf\xe9\n" + text).encode("latin-1", errors="replace")
    return text.encode(encoding)


@dataclass
class Case:
    """One generated input: a parsed tree, raw text or bytes written to a file, or a path that
    is no readable file (``path_kind``, one of :data:`PATH_KINDS`)."""

    tree: Any = None
    text: str | None = None
    data: bytes | None = None
    path_kind: str | None = None

    @property
    def is_file(self) -> bool:
        return self.text is not None or self.data is not None or self.path_kind is not None

    def path(self, suffix: str) -> Path:
        path = _SCRATCH / f"case{suffix}"
        if path.is_symlink() or path.is_file():
            path.unlink()
        elif path.is_dir():
            shutil.rmtree(path)
        loop = _SCRATCH / f"loop{suffix}"
        if loop.is_symlink():
            loop.unlink()
        if self.path_kind == "directory":
            path.mkdir()
        elif self.path_kind == "dangling_symlink":
            path.symlink_to(_SCRATCH / "nowhere" / "missing.yml")
        elif self.path_kind == "symlink_loop":
            path.symlink_to(loop)
            loop.symlink_to(path)
        elif self.data is not None:
            path.write_bytes(self.data)
        elif self.path_kind is None:
            path.write_text(self.text if self.text is not None else yaml.safe_dump(self.tree))
        return path


@cache
def _yaml(kind: str, name: str) -> Any:
    path = resolve_config_file(kind, name)
    data = yaml.safe_load(path.read_text())
    if kind == "robot" and "collision_geometry" in data:
        # relative to the bundled file; the text cases are written elsewhere
        data["collision_geometry"] = str(path.parent / data["collision_geometry"])
    return data


def config_cases(kind: str, names: tuple[str, ...]) -> st.SearchStrategy[Case]:
    trees = st.sampled_from(names).flatmap(lambda n: mutated_tree(_yaml(kind, n)))
    plain = st.sampled_from(names).map(lambda n: yaml.safe_dump(_yaml(kind, n)))
    return st.one_of(
        trees.map(lambda t: Case(tree=t)),
        trees.map(lambda t: Case(text=yaml.safe_dump(t))),
        garbage_text.map(lambda s: Case(text=s)),
        st.tuples(plain, st.sampled_from(ENCODINGS)).map(lambda p: Case(data=encode(*p))),
        st.sampled_from(PATH_KINDS).map(lambda k: Case(path_kind=k)),
    )


# ------------------------------------------------------------------------------------------
# config targets
# ------------------------------------------------------------------------------------------
def run_robot(case: Case) -> str:
    def run() -> None:
        if not case.is_file:
            config = RobotConfig.from_dict(case.tree, source="fuzz.yml", base_dir=CONFIGS / "robot")
        else:
            config = RobotConfig.from_yaml(case.path(".yml"))
        state = Kinematics(config).forward(config.retract_config[None])
        assert_finite("Kinematics.forward", state.ee_position, state.ee_quaternion)

    return classify(run)


@cache
def planar3() -> RobotConfig:
    return RobotConfig.load("planar3")


def small_task(name: str) -> dict:
    """A bundled task, shrunk so one solve takes a few hundred ms on planar3."""
    data = copy.deepcopy(_yaml("task", name))
    if "lbfgs" in data:
        data["lbfgs"]["n_iters"] = 4
        data["trajopt"]["num_seeds"] = 2
        data["trajopt"]["ik"]["num_seeds"] = 4
        data["trajopt"]["ik"]["lbfgs"]["n_iters"] = 4
    if "mppi" in data:
        data["mppi"]["num_particles"] = 16
        data["mppi"]["n_iters"] = 1
    return data


PLANAR_GOAL = ([[0.6, 0.4, 0.0]], [[0.9238795, 0.0, 0.0, 0.3826834]])


def planar_goal() -> Pose:
    return Pose(torch.tensor(PLANAR_GOAL[0]), torch.tensor(PLANAR_GOAL[1]))


@st.composite
def task_cases(draw: Callable) -> tuple[str, Case]:
    name = draw(st.sampled_from(["particle_mpc", "gradient_trajopt"]))
    base = small_task(name)
    kind = draw(st.integers(0, 19))
    if kind < 2:
        return name, Case(text=draw(garbage_text))
    if kind == 2:
        encoding = draw(st.sampled_from(ENCODINGS))
        return name, Case(data=encode(yaml.safe_dump(base), encoding))
    if kind == 3:
        return name, Case(path_kind=draw(st.sampled_from(PATH_KINDS)))
    return name, Case(tree=draw(mutated_tree(base)))


def run_task(drawn: tuple[str, Case]) -> str:
    name, case = drawn
    robot = planar3()
    start = JointState.from_position(robot.retract_config[None].clone())

    def run() -> None:
        if not case.is_file:
            task = TaskConfig.from_dict(case.tree, source="fuzz_task.yml")
        else:
            task = TaskConfig.from_yaml(case.path("_task.yml"))
        if name == "particle_mpc":
            solver = MpcSolver.from_config(robot, task)
            solver.update_goal(planar_goal())
            result = solver.step(start)
            assert_finite("MpcSolver.step", result.action.position, result.action.velocity)
        else:
            solver = TrajOptSolver.from_config(robot, task)
            result = solver.solve_pose(start, planar_goal())
            assert_finite("TrajOptSolver.solve_pose", result.interpolated_solution.position)

    return classify(run)


def run_world(case: Case) -> str:
    def run() -> None:
        if not case.is_file:
            world = WorldConfig.from_dict(case.tree, source="fuzz_world.yml")
        else:
            world = WorldConfig.from_yaml(case.path("_world.yml"))
        collision = WorldCollision(world)
        spheres = torch.tensor([[0.3, 0.0, 0.3, 0.05], [0.6, 0.2, 0.1, 0.02]])
        out = collision.sphere_distance(spheres, activation_distance=0.01)
        # +inf is the distance to an empty world; NaN never
        assert not bool(out.distance.isnan().any()), "sphere_distance: NaN distance"
        assert_finite("WorldCollision.sphere_distance", out.cost)

    return classify(run)


# URDF: textual mutations of the planar3 collision URDF
_URDF_TEXT = URDF.read_text()
_ATTRIBUTE = re.compile(r'(\w+)="([^"]*)"')
_ELEMENT = re.compile(r"<(limit|axis|origin|parent|child|joint|link)\b[^>]*/>")
URDF_VALUES = (
    "nan",
    "inf",
    "-1",
    "0",
    "",
    "abc",
    "1 2",
    "helical",
    "link1",
    "tool",
    "base",
    "joint1",
    "ghost",  # a parent or child that names no link: a dangling joint
    "1e400",
    "-0.0",
    "5e-324",
)


URDF_OPS = ("attribute", "attribute", "attribute", "delete", "duplicate", "truncate")


@st.composite
def urdf_cases(draw: Callable) -> tuple[str, str, str]:
    ends = draw(st.sampled_from([("base", "tool")] * 4 + [("tool", "base"), ("base", "nowhere")]))
    if draw(st.integers(0, 9)) == 0:
        return draw(garbage_text), *ends
    text = _URDF_TEXT
    for _ in range(draw(st.integers(1, 3))):
        op = draw(st.sampled_from(URDF_OPS))
        pattern = _ATTRIBUTE if op == "attribute" else _ELEMENT
        matches = list(pattern.finditer(text))
        if op == "truncate":
            text = text[: draw(st.integers(0, len(text)))]
        elif matches and op == "attribute":
            m = draw(st.sampled_from(matches))
            text = text[: m.start(2)] + draw(st.sampled_from(URDF_VALUES)) + text[m.end(2) :]
        elif matches:
            m = draw(st.sampled_from(matches))
            keep = m.group(0) * 2 if op == "duplicate" else ""
            text = text[: m.start()] + keep + text[m.end() :]
    return text, *ends


def run_urdf(drawn: tuple[str, str, str]) -> str:
    text, base_link, ee_link = drawn
    path = _SCRATCH / "case.urdf"  # meshes are not loaded: the folder does not matter
    path.write_text(text)

    def run() -> None:
        with warnings.catch_warnings():
            # a corrupted file that yourdfpy recovers from loads with a URDFWarning: expected
            warnings.simplefilter("ignore", URDFWarning)
            config = RobotConfig.from_urdf(path, base_link, ee_link)
        state = Kinematics(config).forward(config.retract_config[None])
        assert_finite("Kinematics.forward", state.ee_position, state.ee_quaternion)

    return classify(run)


# ------------------------------------------------------------------------------------------
# tensor targets
# ------------------------------------------------------------------------------------------
TENSOR_FAULTS = (
    "valid",
    "nan",
    "inf",
    "empty_batch",
    "extra_dim",
    "missing_dim",
    "wrong_last_dim",
    "int_dtype",
    "half_dtype",
    "float64",
    "meta_device",
    "list",
    "requires_grad",
    "non_contiguous",
)


def hostile(valid: torch.Tensor, fault: str) -> Any:
    """``valid`` broken in one way (``"valid"``: unchanged)."""
    t = valid.clone()
    if fault == "nan":
        t.view(-1)[0] = math.nan
    elif fault == "inf":
        t.view(-1)[-1] = math.inf
    elif fault == "empty_batch":
        t = t[:0]
    elif fault == "extra_dim":
        t = t[None]
    elif fault == "missing_dim":
        t = t[0]
    elif fault == "wrong_last_dim":
        t = torch.cat([t, t[..., :1]], dim=-1)
    elif fault == "int_dtype":
        t = t.round().long()
    elif fault == "half_dtype":
        t = t.half()
    elif fault == "float64":
        t = t.double()
    elif fault == "meta_device":
        t = t.to("meta")
    elif fault == "list":
        return t.tolist()
    elif fault == "requires_grad":
        t.requires_grad_(True)
    elif fault == "non_contiguous":
        t = torch.cat([t, t], dim=-1)[..., ::2]
    return t


faults = st.sampled_from(TENSOR_FAULTS)
DT_VALUES = (
    *(0.02, 1e-4, 1.0, 0.0, -0.01, math.nan, math.inf, "dt", None),
    *(1e308, 10**400, 5e-324, -0.0, True, "0.02", [0.02]),
)


@st.composite
def step_cases(draw: Callable) -> dict[str, Any]:
    return {
        "batch": draw(st.integers(1, 3)),
        "horizon": draw(st.integers(1, 6)),
        "dof": draw(st.integers(1, 3)),
        "mode": draw(
            st.sampled_from(
                [
                    ("POSITION", "BACKWARD"),
                    ("POSITION", "CENTRAL"),
                    ("POSITION", "TELEPORT"),
                    ("VELOCITY", "BACKWARD"),
                    ("ACCELERATION", "BACKWARD"),
                    ("JERK", "BACKWARD"),
                    ("TORQUE", "BACKWARD"),
                    ("POSITION", "FORWARD"),
                ]
            )
        ),
        "act": draw(faults),
        "start": draw(faults),
        "dt": draw(st.sampled_from(DT_VALUES)),
        "dt_vector": draw(st.booleans()),
        "seed": draw(st.integers(0, 2**16)),
    }


def run_step(case: dict[str, Any]) -> str:
    g = torch.Generator().manual_seed(case["seed"])
    b, h, d = case["batch"], case["horizon"], case["dof"]
    act = hostile(torch.randn(b, h, d, generator=g), case["act"])
    start = hostile(torch.randn(b, d, generator=g), case["start"])
    dt = case["dt"]
    if case["dt_vector"] and isinstance(dt, float):
        dt = torch.full((h,), dt, dtype=torch.float64).float()  # 1e308 becomes inf in float32
    control_space, fd_mode = case["mode"]

    def run() -> None:
        out = tensor_step(act, start, None, None, dt, control_space, fd_mode)
        if case["act"] in FINITE_FAULTS and case["start"] in FINITE_FAULTS:
            assert_finite("tensor_step", *out)

    return classify(run)


@cache
def kinematics() -> Kinematics:
    return Kinematics(planar3())


@st.composite
def fk_cases(draw: Callable) -> tuple[str, bool, int]:
    return draw(faults), draw(st.booleans()), draw(st.integers(0, 2**16))


# the kernels propagate NaN/inf of their inputs (no device sync in the hot path); finite
# inputs must give finite outputs
FINITE_FAULTS = ("valid", "requires_grad", "float64", "non_contiguous")


def run_fk(case: tuple[str, bool, int]) -> str:
    fault, spheres, seed = case
    q = hostile(torch.rand(2, 3, generator=torch.Generator().manual_seed(seed)) - 0.5, fault)

    def run() -> None:
        state = kinematics().forward(q, spheres=spheres)
        if fault in FINITE_FAULTS:
            assert_finite("Kinematics.forward", state.ee_position, state.ee_quaternion)

    return classify(run)


# solvers: small planar3 problems, built once and reused (test_fuzz_state checks that a
# rejected call leaves them as a fresh solver would be)
@cache
def solvers() -> dict[str, Any]:
    robot = planar3()
    task = TaskConfig.from_dict(small_task("gradient_trajopt"), source="small_trajopt")
    ik_options = {"num_seeds": 4, "lbfgs": {**DEFAULT_IK_LBFGS, "n_iters": 4}}
    return {
        "mpc": MpcSolver.from_config(
            robot, TaskConfig.from_dict(small_task("particle_mpc"), source="small_mpc")
        ),
        "trajopt": TrajOptSolver.from_config(robot, task),
        "ik": IKSolver.from_config(robot, **ik_options),
        "motion_gen": MotionGen.from_config(
            robot,
            task=task,
            num_ik_seeds=4,
            num_trajopt_seeds=2,
            ik={"lbfgs": ik_options["lbfgs"]},
            enable_graph=False,
        ),
    }


POSE_FAULTS = ("valid", "zero_quaternion", "unnormalized", "nan", "batch_mismatch", "not_a_pose")
START_FAULTS = (*TENSOR_FAULTS, "outside_limits", "in_collision", "velocity_nan")
SOLVER_CALLS = (
    ("mpc", "step"),
    ("trajopt", "solve_pose"),
    ("trajopt", "solve_joint"),
    ("ik", "solve_single"),
    ("ik", "solve_batch"),
    ("motion_gen", "plan_single"),
    ("motion_gen", "plan_joint"),
)


@st.composite
def solver_cases(draw: Callable) -> dict[str, Any]:
    return {
        "call": draw(st.sampled_from(SOLVER_CALLS)),
        "start": draw(st.sampled_from(START_FAULTS)),
        "goal": draw(st.sampled_from(POSE_FAULTS)),
    }


def hostile_pose(fault: str, batch: int = 1) -> Any:
    position = torch.tensor(PLANAR_GOAL[0]).repeat(batch, 1)
    quaternion = torch.tensor(PLANAR_GOAL[1]).repeat(batch, 1)
    if fault == "zero_quaternion":
        quaternion = torch.zeros_like(quaternion)
    elif fault == "unnormalized":
        quaternion = 3.0 * quaternion
    elif fault == "nan":
        position[0, 0] = math.nan
    elif fault == "batch_mismatch":
        position = position.repeat(2, 1)[: batch + 1]
    elif fault == "not_a_pose":
        return torch.cat([position, quaternion], dim=-1)
    if fault == "batch_mismatch":
        return (position, quaternion)
    return Pose(position, quaternion)


def hostile_start(fault: str, robot: RobotConfig) -> Any:
    q = robot.retract_config[None].clone()
    if fault == "outside_limits":
        return JointState.from_position(q + 10.0)
    if fault == "in_collision":
        # link3 folded back over link1: self-collision
        return JointState.from_position(torch.tensor([[0.0, 2.6, 2.6]]))
    if fault == "velocity_nan":
        state = JointState.from_position(q)
        state.velocity[0, 0] = math.nan
        return state
    position = hostile(q, fault)
    if not isinstance(position, torch.Tensor) or position.ndim == 0:
        return position
    try:
        return JointState.from_position(position)
    except CuroboLiteError:
        return position  # the solver must reject the raw tensor itself


def run_solver(case: dict[str, Any]) -> str:
    solver_name, method = case["call"]
    solver = solvers()[solver_name]
    robot = solver.robot_config

    def run() -> None:
        # built inside: a Pose with a zero quaternion is rejected on construction
        start = hostile_start(case["start"], robot)
        goal = hostile_pose(case["goal"])
        joint_goal = hostile_start(case["goal"] if case["goal"] == "valid" else "nan", robot)
        if method == "step":
            solver.reset()
            solver.update_goal(goal)
            result = solver.step(start)
            assert_finite("MpcSolver.step", result.action.position, result.action.velocity)
        elif method == "solve_pose":
            result = solver.solve_pose(start, goal)
            assert_finite("TrajOptSolver.solve_pose", result.interpolated_solution.position)
        elif method == "solve_joint":
            result = solver.solve_joint(start, joint_goal)
            assert_finite("TrajOptSolver.solve_joint", result.interpolated_solution.position)
        elif method == "solve_single":
            seed = None if case["start"] == "valid" else getattr(start, "position", start)
            result = solver.solve_single(goal, seed)
            assert_finite("IKSolver.solve_single", result.solution)
        elif method == "solve_batch":
            result = solver.solve_batch(goal)
            assert_finite("IKSolver.solve_batch", result.solution)
        elif method == "plan_single":
            result = solver.plan_single(start, goal)
            if result.success:
                assert_finite("MotionGen.plan_single", result.interpolated_plan.position)
        else:
            result = solver.plan_joint(start, joint_goal)
            if result.success:
                assert_finite("MotionGen.plan_joint", result.interpolated_plan.position)

    return classify(run)


@st.composite
def device_cases(draw: Callable) -> tuple[str, str]:
    return draw(st.sampled_from(["cuda", "cuda:0", "cuda:7", "meta", "cpu", "xpu", "nope"])), draw(
        st.sampled_from(["float32", "float64", "int32"])
    )


def run_device(case: tuple[str, str]) -> str:
    device, dtype = case

    def run() -> None:
        tensor_args = TensorDeviceType(device=device, dtype=getattr(torch, dtype))
        Kinematics(RobotConfig.load("planar3", tensor_args)).forward(
            tensor_args.to_device([[0.0, 0.5, -0.5]])
        )

    return classify(run)


#: name -> (strategy, runner): what test_fuzz_*.py and tools/fuzz.py iterate over
TARGETS: dict[str, tuple[st.SearchStrategy, Callable[[Any], str]]] = {
    "robot_yaml": (config_cases("robot", ("planar3", "franka")), run_robot),
    "task_yaml": (task_cases(), run_task),
    "world_yaml": (config_cases("world", ("table", "mixed", "cubbies")), run_world),
    "urdf": (urdf_cases(), run_urdf),
    "tensor_step": (step_cases(), run_step),
    "kinematics_forward": (fk_cases(), run_fk),
    "solvers": (solver_cases(), run_solver),
    "device": (device_cases(), run_device),
}
