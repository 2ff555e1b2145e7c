"""The seed API keeps the seed listing's signatures (SPEC §2, "The seed API").

``tests/data/seeds/curobo_integration_utils_api.txt`` is the documentation listing of cuRobo's
``integration_utils`` module that the project started from. It is parsed here, not copied: every
function it lists and every method that a listed class defines beyond ``torch.autograd.Function``
(``forward``, ``backward``) must exist in
:mod:`curobo_lite.rollout.dynamics_model.integration_utils` with the listed parameter names in
order (``*args`` and ``**kwargs`` as such) and the listed defaults. Methods the listing shows
with torch's own signature (``apply``, ``vmap``, ``mark_dirty``, ...) are inherited from torch,
not ours, and are not compared.

The other listings in the folder document other projects' classes (torch's ``Function`` source,
towhee's ``AllGather``, ksuit's ``AllGatherGradAutograd``, unit_scaling's ``ScaleTracker``):
SPEC §2 takes only the autograd contract from them, which the tests of the kernel classes,
``AllGatherGrad`` and ``ScaleTracker`` check; their signatures are not promised.

The listings are copied into ``tests/data/seeds`` so that a clean clone can run this test; where
the workspace's ``../shared/seeds`` exists next to the repository, the copies must equal it.
"""

from __future__ import annotations

import ast
import inspect
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

from curobo_lite.rollout.dynamics_model import integration_utils

SEEDS = Path(__file__).resolve().parent / "data" / "seeds"
SHARED_SEEDS = Path(__file__).resolve().parents[2] / "shared" / "seeds"
LISTING = SEEDS / "curobo_integration_utils_api.txt"

_EMPTY = object()  # a parameter listed without a default
_ENTRY = re.compile(r"^- (?:(static|classmethod) )?(class )?([A-Za-z_]\w*)\((.*)$")
_PARAMETER = re.compile(r"^- (\*{0,2}[A-Za-z_]\w*)(?:\s*:\s*[^=]*?)?(?:\s*=\s*(.+?))?,$")


@dataclass
class Listed:
    """One function or method of the listing: ``owner`` is its class (``None``: module level)."""

    owner: str | None
    name: str
    parameters: list[tuple[str, object]]  # (name with its * or **, default source or _EMPTY)
    line: int

    @property
    def label(self) -> str:
        name = self.name if self.owner is None else f"{self.owner}.{self.name}"
        return f"{name} (listing line {self.line})"


def _split_inline(text: str) -> list[tuple[str, object]]:
    """``a, b=1`` (the parameters of a one-line entry such as ``sum_matrix(h, int_steps, ...)``)."""
    parameters = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, _, default = part.partition("=")
        parameters.append((name.split(":")[0].strip(), default.strip() or _EMPTY))
    return parameters


def parse_listing(path: Path) -> list[Listed]:
    """Every function and method of a Sphinx API listing whose parameters it spells out.

    An entry is ``- name(`` followed by one ``- parameter,`` line per parameter, or a one-line
    ``- name(a, b)¶``; ``- class Name(`` opens a class whose methods follow (``- static
    forward(``). A plain ``- name(`` inside a class that ``torch.autograd.Function`` does not
    define ends the class (the listing's module-level functions after the classes); a private
    one does not (torch's private members differ between versions).
    """
    entries: list[Listed] = []
    owner: str | None = None
    current: Listed | None = None
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if current is not None:
            parameter = _PARAMETER.match(line)
            if parameter is not None:
                default = parameter.group(2)
                current.parameters.append(
                    (parameter.group(1), _EMPTY if default is None else default)
                )
                continue
            current = None
        entry = _ENTRY.match(line)
        if entry is None:
            continue
        decorator, is_class, name, rest = entry.groups()
        if is_class:
            owner = name
            continue
        if (
            owner is not None
            and decorator is None
            and not name.startswith("_")  # torch's private members vary between versions
            and not hasattr(torch.autograd.Function, name)
        ):
            owner = None
        listed = Listed(owner, name, [], number)
        rest = rest.strip()
        if rest.endswith("¶") and ")" in rest:
            inside = rest[: rest.rindex(")")]
            if not inside.strip():
                continue  # ``jvp( ) Any``: the listing elides the signature
            listed.parameters = _split_inline(inside)
        elif rest:
            continue  # something other than a signature
        else:
            current = listed
        entries.append(listed)
    return entries


def _torch_parameters(name: str) -> list[str] | None:
    """``torch.autograd.Function``'s own parameter names for ``name`` (``None``: it has none)."""
    method = inspect.getattr_static(torch.autograd.Function, name, None)
    if method is None:
        return None
    function = method.__func__ if isinstance(method, (staticmethod, classmethod)) else method
    parameters = list(inspect.signature(function).parameters.values())
    if isinstance(method, classmethod) or not isinstance(method, staticmethod):
        parameters = parameters[1:]  # cls / self, which the listing omits
    return [_spelled(p) for p in parameters]


def _spelled(parameter: inspect.Parameter) -> str:
    prefix = {
        inspect.Parameter.VAR_POSITIONAL: "*",
        inspect.Parameter.VAR_KEYWORD: "**",
    }.get(parameter.kind, "")
    return prefix + parameter.name


def _default_value(source: str) -> object:
    """The value a listed default stands for: a literal, or a dotted name such as
    ``torch.float32``."""
    try:
        return ast.literal_eval(source)
    except (ValueError, SyntaxError):
        value: object = {"torch": torch}
        for part in source.split("."):
            value = value[part] if isinstance(value, dict) else getattr(value, part)
        return value


def compared_entries(path: Path) -> list[Listed]:
    """The listed entries that curobo_lite must match: module functions, and class methods
    whose listed parameters are not torch's own (those the listed class defines itself)."""
    return [
        e
        for e in parse_listing(path)
        if e.owner is None or [n for n, _ in e.parameters] != _torch_parameters(e.name)
    ]


def signature_differences(entry: Listed, module: object) -> list[str]:
    """What differs between ``entry`` and the function or method of that name in ``module``
    (empty: they agree)."""
    owner = module if entry.owner is None else getattr(module, entry.owner, None)
    target = None if owner is None else inspect.getattr_static(owner, entry.name, None)
    if target is None:
        return [f"{entry.label}: missing"]
    if isinstance(target, (staticmethod, classmethod)):
        target = target.__func__
    ours = list(inspect.signature(target).parameters.values())
    if entry.owner is not None and not isinstance(
        inspect.getattr_static(owner, entry.name), staticmethod
    ):
        ours = ours[1:]  # cls / self
    listed_names = [name for name, _ in entry.parameters]
    our_names = [_spelled(p) for p in ours]
    if our_names != listed_names:
        return [f"{entry.label}: parameters {our_names}, listed {listed_names}"]
    problems = []
    for (name, default), parameter in zip(entry.parameters, ours, strict=True):
        if default is _EMPTY:
            if parameter.default is not inspect.Parameter.empty:
                problems.append(f"{entry.label}: {name} has a default, listed without one")
            continue
        expected = _default_value(default)
        if parameter.default is inspect.Parameter.empty or parameter.default != expected:
            problems.append(
                f"{entry.label}: {name} defaults to {parameter.default!r}, listed {default}"
            )
    return problems


def test_listing_parses_into_the_seed_api():
    """The parser finds what SPEC §2 names: every module function and the overridden
    ``forward``/``backward`` of each autograd class (a parser that found nothing would make
    the comparison below pass vacuously)."""
    entries = compared_entries(LISTING)
    functions = {e.name for e in entries if e.owner is None}
    assert {
        "build_clique_matrix",
        "build_fd_matrix",
        "build_int_matrix",
        "build_start_state_mask",
        "sum_matrix",
        "interpolate_kernel",
        "action_interpolate_kernel",
        "tensor_linspace",
        "tensor_step_acc",
        "tensor_step_jerk",
        "tensor_step_vel",
        "tensor_step_pos",
        "tensor_step_pos_ik",
        "euler_integrate",
        "step_acc_semi_euler",
        "tensor_step_acc_semi_euler",
        "tensor_step_pos_clique",
        "jit_tensor_step_pos_clique",
        "jit_tensor_step_pos_clique_contiguous",
        "jit_backward_pos_clique",
        "jit_backward_pos_clique_contiguous",
    } <= functions
    methods = {(e.owner, e.name) for e in entries if e.owner is not None}
    classes = {
        "CliqueTensorStep",
        "CliqueTensorStepKernel",
        "CliqueTensorStepIdxKernel",
        "CliqueTensorStepCentralDifferenceKernel",
        "CliqueTensorStepIdxCentralDifferenceKernel",
        "CliqueTensorStepCoalesceKernel",
        "AccelerationTensorStepKernel",
        "AccelerationTensorStepIdxKernel",
    }
    assert methods == {(c, m) for c in classes for m in ("forward", "backward")}
    clique_forward = next(
        e for e in entries if (e.owner, e.name) == ("CliqueTensorStep", "forward")
    )
    assert [n for n, _ in clique_forward.parameters][:3] == ["ctx", "u_act", "start_position"]
    build_fd = next(e for e in entries if e.name == "build_fd_matrix")
    assert dict(build_fd.parameters)["dtype"] == "torch.float32"


@pytest.mark.parametrize("entry", compared_entries(LISTING), ids=lambda e: e.label.split()[0])
def test_signature_matches_the_listing(entry):
    assert signature_differences(entry, integration_utils) == []


def test_a_drifted_signature_is_reported():
    """The comparison catches a renamed parameter, a missing one, a changed default and a
    missing function (stand-ins built from the listing's own entries)."""
    entries = {e.label.split()[0]: e for e in compared_entries(LISTING)}
    ns = {}
    exec(  # noqa: S102 - stand-ins with drifted signatures
        "def build_fd_matrix(horizon, device='cpu', dtype=None, order=1, PREV_STATE=False,"
        " FULL_RANK=False, SHIFT=False): pass\n"
        "def tensor_linspace(start_tensor, end, steps=10): pass\n"
        "class CliqueTensorStep:\n"
        "    @staticmethod\n"
        "    def forward(ctx, u_act, start_position, *matrices): pass\n",
        ns,
    )
    module = type("Drifted", (), ns)
    assert "dtype defaults to None" in " ".join(
        signature_differences(entries["build_fd_matrix"], module)
    )
    assert signature_differences(entries["tensor_linspace"], module)
    assert signature_differences(entries["CliqueTensorStep.forward"], module)
    assert signature_differences(entries["build_clique_matrix"], module) == [
        f"{entries['build_clique_matrix'].label}: missing"
    ]


@pytest.mark.skipif(not SHARED_SEEDS.is_dir(), reason="no ../shared/seeds beside the repository")
def test_copied_listings_equal_the_shared_seeds():
    shared = sorted(p.name for p in SHARED_SEEDS.iterdir() if p.is_file())
    copied = sorted(p.name for p in SEEDS.glob("*.txt"))
    assert copied == shared
    for name in shared:
        assert (SEEDS / name).read_bytes() == (SHARED_SEEDS / name).read_bytes(), name
