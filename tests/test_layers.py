"""Package layering: no module imports a higher layer, and no import cycle between modules.

The layers, lowest first (``docs/architecture.md`` draws them)::

    types                                     value types and the error classes; imports nothing
    config_files, debug, distributed          leaves: import only types
    kernels                                   Warp step kernels, launch helpers, SDF functions
    robot, geom                               robot files, forward kinematics, link spheres;
                                              world obstacles and collision distances
    opt                                       optimizers over any rollout
    rollout                                   dynamics model, costs, ArmReacher
    sim                                       closed-loop runner
    viz                                       browser viewer (robot, world, plans, live MPC)
    wrap                                      solvers, their command lines, sharded_solve
    cli, curobo_lite/__init__.py, scenes      entry points; generated benchmark scenes and
                                              problems (MotionBenchMaker families)
    data                                      planning datasets on Ray: the scenes'
                                              problems solved by MotionGen (above scenes)

Inside ``wrap`` the solver families are layers of their own (``WRAP_LAYERS``), lowest first::

    base                                      RobotWorld, held objects, offenders, the guard
    ik                                        IKSolver
    trajopt, mpc                              TrajOptSolver (uses IK); MpcSolver
    motion                                    MotionGen, graph planner, roadmap
    reactive                                  ReactivePlanner (MotionGen + MpcSolver)
    wrap/__init__.py                          the public names of all of them
    cli, reacher                              command lines, sharded_solve; cuRobo's
    model                                     import paths (model uses reacher's adapters)

A module may import its own package and any package of a lower layer; packages of one layer
do not import each other (``robot`` and ``geom`` share ``config_files.YamlReader`` and
``kernels.launch.as_warp``). Deferred imports (inside a function) and ``TYPE_CHECKING`` imports
count for the layers: they are dependencies all the same.

Cycles are checked twice: on the imports that run when a module is imported (module and class
bodies, outside ``TYPE_CHECKING``), where a cycle breaks the import, and on every import,
deferred ones included, where a cycle means two modules that cannot be understood or changed
apart (``robot/config.py`` and ``robot/urdf.py`` once imported each other, one of them inside
functions). A module importing its own parent package is not a cycle (the parent is already
being initialised).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "curobo_lite"

LAYERS: tuple[tuple[str, ...], ...] = (
    ("types",),
    ("config_files", "debug", "distributed"),
    ("kernels",),
    ("robot", "geom"),
    ("opt",),
    ("rollout",),
    ("sim",),
    ("viz",),
    ("wrap",),
    ("cli", "__init__", "scenes", "util_file"),
    ("data",),
)
RANK = {package: rank for rank, packages in enumerate(LAYERS) for package in packages}
WRAP_LAYERS: tuple[tuple[str, ...], ...] = (
    ("base",),
    ("ik",),
    ("trajopt", "mpc"),
    ("motion",),
    ("reactive",),
    ("__init__",),
    ("cli", "reacher"),
    ("model",),
)
WRAP_RANK = {part: rank for rank, parts in enumerate(WRAP_LAYERS) for part in parts}
#: cuRobo's import paths (issue 36) that lie in a low package's folder but re-export a higher
#: layer's classes: they are entry points, in the top layer, and nothing else imports them
TOP_LAYER_MODULES = {"curobo_lite.types.robot": "__init__"}


@dataclass(frozen=True)
class Import:
    """One import statement's target module, where it is and whether it runs at import time."""

    source: str  # importing module, dotted
    target: str  # imported module (or package), dotted
    path: Path
    line: int
    at_import_time: bool


def module_name(path: Path) -> str:
    """``curobo_lite/robot/config.py`` -> ``curobo_lite.robot.config``; packages by their dir."""
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def all_modules() -> dict[str, Path]:
    """Every module of the package: dotted name -> file."""
    return {module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def layer_of(module: str) -> str:
    """The layer key of a ``curobo_lite`` module: its top-level package or module name."""
    if module in TOP_LAYER_MODULES:
        return TOP_LAYER_MODULES[module]
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _resolve(node: ast.ImportFrom, source: str, is_package: bool, modules: set[str]) -> list[str]:
    """Targets of ``from X import a, b``: ``X.a`` where that is a module, else ``X`` itself."""
    base = node.module or ""
    if node.level:
        anchor = source.split(".")
        anchor = anchor[: len(anchor) - node.level + (1 if is_package else 0)]
        base = ".".join(anchor + ([base] if base else []))
    targets = []
    for alias in node.names:
        sub = f"{base}.{alias.name}"
        targets.append(sub if sub in modules else base)
    return targets


def module_imports(source: str, path: Path, modules: set[str]) -> list[Import]:
    """The ``curobo_lite`` imports of module ``source`` (file ``path``), each flagged with
    whether it runs at import time (not in a function body or a ``TYPE_CHECKING`` block)."""
    is_package = path.name == "__init__.py"
    found: list[Import] = []

    def walk(node: ast.AST, eager: bool) -> None:
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            targets = _resolve(node, source, is_package, modules)
        else:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                    walk(child, False)
                elif isinstance(child, ast.If) and _is_type_checking(child.test):
                    for stmt in child.body:
                        walk(stmt, False)
                    for stmt in child.orelse:
                        walk(stmt, eager)
                else:
                    walk(child, eager)
            return
        for target in targets:
            if target == "curobo_lite" or target.startswith("curobo_lite."):
                found.append(Import(source, target, path, node.lineno, eager))

    walk(ast.parse(path.read_text(), filename=str(path)), True)
    return found


def collect_imports(modules: dict[str, Path]) -> list[Import]:
    """Every ``curobo_lite`` import in the given modules (dotted name -> file)."""
    names = set(modules)
    return [imp for name, path in modules.items() for imp in module_imports(name, path, names)]


def _where(imp: Import) -> str:
    return f"{imp.path.relative_to(ROOT.parent)}:{imp.line}"


def test_every_package_has_a_layer() -> None:
    unplaced = sorted({layer_of(m) for m in all_modules()} - set(RANK))
    assert not unplaced, f"place these in LAYERS (tests/test_layers.py): {unplaced}"


def test_no_module_imports_a_higher_layer() -> None:
    bad = []
    for imp in collect_imports(all_modules()):
        here, there = layer_of(imp.source), layer_of(imp.target)
        if here == there or there not in RANK:
            continue
        if RANK[there] >= RANK[here]:
            relation = "in the same layer as" if RANK[there] == RANK[here] else "a layer above"
            bad.append(
                f"{_where(imp)}: {imp.source} imports {imp.target} ({there} is {relation} {here})"
            )
    assert not bad, "upward imports:\n" + "\n".join(dict.fromkeys(bad))


def find_cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            connect(v)
    return cycles


def dependency_graph(imports: list[Import], import_time_only: bool) -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for imp in imports:
        # a submodule importing its own (already initialising) parent package is not a cycle
        if (imp.at_import_time or not import_time_only) and not imp.source.startswith(
            imp.target + "."
        ):
            edges.setdefault(imp.source, set()).add(imp.target)
    return edges


@pytest.mark.parametrize("import_time_only", [True, False], ids=["import-time", "all-imports"])
def test_no_import_cycle_between_modules(import_time_only: bool) -> None:
    imports = collect_imports(all_modules())
    cycles = find_cycles(dependency_graph(imports, import_time_only))
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def wrap_part(module: str) -> str | None:
    """The ``wrap`` subpackage of a module (``curobo_lite.wrap.ik.solver`` -> ``ik``),
    ``__init__`` for the package itself, None outside ``wrap``."""
    parts = module.split(".")
    if parts[:2] != ["curobo_lite", "wrap"]:
        return None
    return parts[2] if len(parts) > 2 else "__init__"


def wrap_imports() -> list[Import]:
    """Imports from one ``wrap`` subpackage into another (deferred ones included)."""
    imports = collect_imports(all_modules())
    return [
        imp
        for imp in imports
        if wrap_part(imp.source) is not None
        and wrap_part(imp.target) is not None
        and wrap_part(imp.source) != wrap_part(imp.target)
    ]


def test_every_wrap_subpackage_has_a_layer() -> None:
    parts = {wrap_part(m) for m in all_modules()} - {None}
    unplaced = sorted(parts - set(WRAP_RANK))
    assert not unplaced, f"place these in WRAP_LAYERS (tests/test_layers.py): {unplaced}"
    # wrap/ keeps no loose modules: each solver family is a folder
    assert not [p for p in (ROOT / "wrap").glob("*.py") if p.name != "__init__.py"]


def test_wrap_subpackages_import_downwards() -> None:
    bad = []
    for imp in wrap_imports():
        here, there = wrap_part(imp.source), wrap_part(imp.target)
        if WRAP_RANK[there] >= WRAP_RANK[here]:
            relation = "beside" if WRAP_RANK[there] == WRAP_RANK[here] else "above"
            bad.append(
                f"{_where(imp)}: {imp.source} imports {imp.target} (wrap.{there} is "
                f"{relation} wrap.{here})"
            )
    assert not bad, "upward imports inside wrap:\n" + "\n".join(dict.fromkeys(bad))


def test_no_cycle_between_wrap_subpackages() -> None:
    edges: dict[str, set[str]] = {}
    for imp in wrap_imports():
        edges.setdefault(wrap_part(imp.source), set()).add(wrap_part(imp.target))
    cycles = find_cycles(edges)
    assert not cycles, "cycles between wrap subpackages:\n" + "\n".join(
        " <-> ".join(c) for c in cycles
    )


# --- the checker itself, on small hand-made cases -----------------------------------------------


def test_cycle_finder_on_hand_made_graphs() -> None:
    assert find_cycles({"a": {"b"}, "b": {"c"}}) == []
    assert find_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert find_cycles({"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"c"}}) == [["a", "b"], ["c", "d"]]


@pytest.mark.parametrize(
    "code,eager",
    [
        ("from curobo_lite.types import Pose\n", [True]),
        ("def f():\n    from curobo_lite.wrap import TrajOptSolver\n", [False]),
        (
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import curobo_lite.wrap\n",
            [False],
        ),
        ("class A:\n    import curobo_lite.types\n", [True]),
        ("try:\n    from curobo_lite import cli\nexcept ImportError:\n    pass\n", [True]),
    ],
)
def test_import_collection_marks_deferred_imports(
    tmp_path: Path, code: str, eager: list[bool]
) -> None:
    fake = tmp_path / "example.py"
    fake.write_text(code)
    modules = {"curobo_lite.types.example", "curobo_lite.cli"}
    found = module_imports("curobo_lite.types.example", fake, modules)
    assert [i.at_import_time for i in found] == eager
    if "import cli" in code:
        assert found[0].target == "curobo_lite.cli"  # `from pkg import module` -> the module


#: The names users import from ``curobo_lite.wrap`` (its API before the subpackages): moving a
#: module inside ``wrap`` must not drop one. New names may be added, none removed.
WRAP_PUBLIC = {
    "base": ["Offender", "RobotWorld"],
    "ik": ["IKResult", "IKSolver", "IKSolverConfig"],
    "trajopt": ["TrajOptResult", "TrajOptSolver", "TrajOptSolverConfig"],
    "mpc": ["MpcResult", "MpcSolver", "MpcSolverConfig"],
    "motion": ["MotionGen", "MotionGenConfig", "MotionGenResult", "MotionGenStatus"],
    "reactive": ["ReactivePlanner", "ReactivePlannerConfig", "ReactiveStepResult"],
}


@pytest.mark.parametrize("part", sorted(WRAP_PUBLIC))
def test_wrap_public_names_stay_importable(part: str) -> None:
    import importlib

    import curobo_lite.wrap as wrap

    family = importlib.import_module(f"curobo_lite.wrap.{part}")
    for name in WRAP_PUBLIC[part]:
        assert name in wrap.__all__, f"curobo_lite.wrap.__all__ lost {name}"
        # the same object from the package and from its family's subpackage
        assert getattr(wrap, name) is getattr(family, name), name
