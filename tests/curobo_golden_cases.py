"""The fixed cases of the cuRobo 0.7.8 golden-output test (``tests/data/curobo_golden.npz``).

Shared by ``tools/make_curobo_golden.py`` (which runs cuRobo's own ``integration_utils`` on them)
and ``tests/test_integration_utils_golden.py`` (which runs ours). A case is a function name plus
an argument list built from a seeded numpy generator; array arguments are stored in the fixture
next to cuRobo's outputs, so the test reads the exact inputs back. Argument markers:

- ``np.ndarray``: a tensor (in the case's dtype);
- ``Joint(position, velocity, acceleration, jerk)``: a joint state of four arrays;
- ``TDA``: the case's ``TensorDeviceType``; ``DTYPE``: the case's torch dtype;
- anything else is passed as is.

Pseudo-functions ``"CliqueTensorStep:grad"`` (forward + action gradient of a weighted sum of the
four outputs; the last four arguments are the weights), ``"CliqueTensorStep:fwd"`` and
``"grad:<function>"`` (the outputs of ``<function>`` plus the gradient of the sum of their squares
with respect to its second argument, the action).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

DTYPES = {"f32": torch.float32, "f64": torch.float64}


@dataclass
class Joint:
    position: np.ndarray
    velocity: np.ndarray
    acceleration: np.ndarray
    jerk: np.ndarray


class _Marker:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


TDA = _Marker("TDA")
DTYPE = _Marker("DTYPE")


@dataclass
class Case:
    key: str
    func: str
    args: list[Any]
    kwargs: dict[str, Any]


def _dts(rng: np.random.Generator, h: int) -> dict[str, np.ndarray]:
    return {"udt": np.full(h, 0.05), "ndt": 0.02 + 0.08 * rng.random(h)}


def iu_like_int(h: int, dt: np.ndarray) -> np.ndarray:
    """A dt-weighted lower-triangular integrator (positive entries, long float32 sums)."""
    return np.tril(np.ones((h, h))) * dt[None, :]


def _cases_for(tag: str) -> list[Case]:
    rng = np.random.default_rng(20240 + len(tag))
    out: list[Case] = []

    def add(func: str, *args: Any, **kwargs: Any) -> None:
        out.append(Case(f"{tag}/{func}/{len(out):03d}", func, list(args), kwargs))

    def randn(*shape: int) -> np.ndarray:
        return rng.standard_normal(shape)

    def joint(*shape: int) -> Joint:
        return Joint(randn(*shape), randn(*shape), randn(*shape), randn(*shape))

    # ---- matrix builders -------------------------------------------------------------------
    for h in (1, 2, 5, 12):
        for dt in _dts(rng, h).values():
            add("build_clique_matrix", h, dt, dtype=DTYPE)
    add("build_clique_matrix", 4, np.array([0.1, 0.0, 0.2, 0.3]), dtype=DTYPE)  # NaN in cuRobo
    flags = [
        {},
        {"PREV_STATE": True},
        {"FULL_RANK": True},
        {"SHIFT": True},
        {"PREV_STATE": True, "SHIFT": True},
        {"FULL_RANK": True, "SHIFT": True},
        {"PREV_STATE": True, "FULL_RANK": True},
    ]
    for h in (0, 1, 2, 3, 6, 7):
        for order in (0, 1, 2, 3):
            for flag in flags:
                add("build_fd_matrix", h, dtype=DTYPE, order=order, **flag)
    for h in (1, 4, 9):
        for diagonal in (0, -1, 1):
            for order in (0, 1, 2, 3):
                add("build_int_matrix", h, diagonal, dtype=DTYPE, order=order)
                for dt in _dts(rng, h).values():
                    add("build_int_matrix", h, diagonal, dtype=DTYPE, order=order, traj_dt=dt)
    for order in (1, 2):  # an [H, H] traj_dt: cuRobo takes its diagonal (a vector for order 1)
        add("build_int_matrix", 4, 0, dtype=DTYPE, order=order, traj_dt=randn(4, 4))
    add("build_int_matrix", 4, 0, dtype=DTYPE, order=1, traj_dt=randn(5))  # wrong length
    for h in (1, 2, 6):
        add("build_start_state_mask", h, TDA)
    for h, s in ((1, 3), (2, 1), (4, 3), (5, 0), (3, 7)):
        add("sum_matrix", h, s, TDA)
    for h, s in ((2, 2), (4, 5), (3, 1), (1, 1), (3, 0), (6, 3)):
        add("interpolate_kernel", h, s, TDA)
    for h, s, offset in (
        (2, 10, 4),
        (4, 8, 4),
        (3, 6, 0),
        (3, 5, 5),
        (5, 7, 2),
        (3, 4, 6),
        (1, 5, 4),
        (3, 5, -1),
        (4, 6, 3),
    ):
        add("action_interpolate_kernel", h, s, TDA, offset)
    add("action_interpolate_kernel", 3, 6, TDA)
    for start_shape, end_shape, steps in (
        ((3, 2, 1), (3, 2, 1), 5),
        ((4,), (4,), 4),
        ((3, 1), (1, 1), 6),
        ((2, 5), (2, 5), 7),  # cuRobo: broadcast error
        ((2, 1), (2, 1), 1),
        ((2, 6), (2, 6), 6),
    ):
        add("tensor_linspace", randn(*start_shape), randn(*end_shape), steps)

    # ---- dense steps -----------------------------------------------------------------------
    for b, h, d in ((3, 6, 2), (1, 5, 3), (4, 4, 1)):
        for dt in _dts(rng, h).values():
            m, fd = randn(h, h), randn(h, h)
            add("tensor_step_acc", randn(b, 1, 3 * d), randn(b, h, d), randn(b, h, 4 * d), dt, d, m)
            add(
                "tensor_step_acc",
                randn(b, 1, 3 * d),
                randn(b, h, d),
                randn(b, h, 3 * d),
                dt,
                d,
                m,
                fd,
            )
            add("tensor_step_acc", randn(b, 3 * d), randn(b, h, d), randn(b, h, 4 * d), dt, d, m)
            add("tensor_step_jerk", randn(b, 3 * d), randn(b, h, d), randn(b, h, 4 * d), dt, d, m)
            add("tensor_step_jerk", randn(h, 3 * d), randn(h, h, d), randn(h, h, 4 * d), dt, d, m)
            add(
                "tensor_step_jerk", randn(b, 1, 3 * d), randn(b, h, d), randn(b, h, 4 * d), dt, d, m
            )
            add(
                "tensor_step_vel",
                randn(b, 1, 3 * d),
                randn(b, h, d),
                randn(b, h, 4 * d),
                dt,
                d,
                m,
                fd,
            )
            add(
                "tensor_step_vel", randn(b, 3 * d), randn(b, h, d), randn(b, h, 3 * d), dt, d, m, fd
            )
            add("tensor_step_pos", joint(b, d), randn(b, h, d), joint(b, h, d), fd)
            add("tensor_step_pos_ik", randn(b, h, d), joint(b, h, d))
            add("euler_integrate", randn(b, 1, d), randn(b, h, d), np.diag(dt), m)
            add("euler_integrate", randn(b, d), randn(b, h, d), np.diag(dt), m)
            add("step_acc_semi_euler", randn(b, 1, 3 * d), randn(b, h, d), np.diag(dt), d, m)
            add("step_acc_semi_euler", randn(h, 3 * d), randn(h, h, d), np.diag(dt), d, m)
            add(
                "tensor_step_acc_semi_euler",
                joint(b, d),
                randn(b, h, d),
                joint(b, h, d),
                np.diag(dt),
                m,
                randn(h, h),
            )
            add(
                "tensor_step_acc_semi_euler",
                joint(b, 1, d),
                randn(b, h, d),
                joint(b, h, d),
                np.diag(dt),
                m,
                randn(h, h),
            )
        dt = 0.02 + 0.08 * rng.random(h)
        dt_zero_mid, dt_zero_last = dt.copy(), dt.copy()
        dt_zero_mid[1], dt_zero_last[-1] = 0.0, 0.0
        for dtz in (dt_zero_mid, dt_zero_last):
            add(
                "tensor_step_vel",
                randn(b, 1, 3 * d),
                randn(b, h, d),
                randn(b, h, 4 * d),
                dtz,
                d,
                randn(h, h),
                randn(h, h),
            )

    # gradients through the in-place writes (state_seq's autograd graph)
    b, h, d = 2, 5, 2
    dt = 0.02 + 0.08 * rng.random(h)
    m, fd = randn(h, h), randn(h, h)
    add("grad:tensor_step_acc", randn(b, 1, 3 * d), randn(b, h, d), randn(b, h, 4 * d), dt, d, m)
    add("grad:tensor_step_jerk", randn(1, 3 * d), randn(1, h, d), randn(1, h, 4 * d), dt, d, m)
    add(
        "grad:tensor_step_vel", randn(b, 1, 3 * d), randn(b, h, d), randn(b, h, 4 * d), dt, d, m, fd
    )
    add("grad:tensor_step_pos", joint(b, d), randn(b, h, d), joint(b, h, d), fd)
    add("grad:euler_integrate", randn(b, 1, d), randn(b, h, d), np.diag(dt), m)
    add("grad:step_acc_semi_euler", randn(b, 1, 3 * d), randn(b, h, d), np.diag(dt), d, m)
    add(
        "grad:tensor_step_acc_semi_euler",
        joint(b, d),
        randn(b, h, d),
        joint(b, h, d),
        np.diag(dt),
        m,
        randn(h, h),
    )
    add("grad:tensor_linspace", randn(b, d, 1), randn(b, d, 1), 4)

    # a longer horizon, where float32 sums are long enough to expose any reordering
    b, h, d = 1, 30, 3
    dt = 0.02 + 0.08 * rng.random(h)
    m, fd = iu_like_int(h, dt), randn(h, h)
    add("tensor_step_acc", randn(b, 1, 3 * d), randn(b, h, d), randn(b, h, 4 * d), dt, d, m)
    add("tensor_step_vel", randn(b, 1, 3 * d), randn(b, h, d), randn(b, h, 4 * d), dt, d, m, fd)
    add("tensor_step_jerk", randn(b, 3 * d), randn(b, h, d), randn(b, h, 4 * d), dt, d, m)
    add("step_acc_semi_euler", randn(b, 1, 3 * d), randn(b, h, d), np.diag(dt), d, m)

    # ---- clique ----------------------------------------------------------------------------
    for b, h, d in ((3, 6, 2), (1, 5, 3), (2, 8, 4)):
        mask = np.zeros((h, 1))
        mask[0, 0] = 1.0
        n_mask = np.diag(np.ones(h - 1), -1)
        for fds in ([randn(h, h) for _ in range(3)],):
            for func in (
                "jit_tensor_step_pos_clique",
                "jit_tensor_step_pos_clique_contiguous",
                "CliqueTensorStep:fwd",
            ):
                add(func, randn(b, h, d), randn(b, d), mask, n_mask, *fds)
            add("jit_tensor_step_pos_clique", randn(h, d), randn(1, d), mask, n_mask, *fds)
            for func in ("jit_backward_pos_clique", "jit_backward_pos_clique_contiguous"):
                add(func, *(randn(b, h, d) for _ in range(4)), n_mask, *fds)
            add(
                "CliqueTensorStep:grad",
                randn(b, h, d),
                randn(b, d),
                mask,
                n_mask,
                *fds,
                *(randn(b, h, d) for _ in range(4)),
            )
            add(
                "tensor_step_pos_clique",
                joint(b, d),
                randn(b, h, d),
                joint(b, h, d),
                [mask, n_mask],
                fds,
            )
            add(
                "tensor_step_pos_clique",
                joint(b, d),
                randn(b, h, d),
                joint(b, h, d),
                [mask, n_mask, mask],
                [*fds, randn(h, h)],
            )  # extra entries: ignored
    return out


def all_cases() -> list[Case]:
    return [case for tag in DTYPES for case in _cases_for(tag)]


def dtype_of(case: Case) -> torch.dtype:
    return DTYPES[case.key.split("/")[0]]


def arrays_of(case: Case) -> list[np.ndarray]:
    """The case's array arguments in a fixed order (what the fixture stores as inputs)."""
    found: list[np.ndarray] = []

    def walk(value: Any) -> None:
        if isinstance(value, np.ndarray):
            found.append(value)
        elif isinstance(value, Joint):
            found.extend((value.position, value.velocity, value.acceleration, value.jerk))
        elif isinstance(value, (list, tuple)):
            for v in value:
                walk(v)

    for value in [*case.args, *case.kwargs.values()]:
        walk(value)
    return found


def materialize(case: Case, arrays: list[np.ndarray], joint_cls: type, tda_cls: type):
    """(args, kwargs) with arrays (taken in order from ``arrays``) turned into tensors."""
    dtype = dtype_of(case)
    pending = iter(arrays)

    def tensor() -> torch.Tensor:
        return torch.as_tensor(np.asarray(next(pending)), dtype=dtype).clone()

    def convert(value: Any) -> Any:
        if isinstance(value, np.ndarray):
            return tensor()
        if isinstance(value, Joint):
            return joint_cls(tensor(), tensor(), tensor(), tensor())
        if isinstance(value, list):
            return [convert(v) for v in value]
        if value is TDA:
            return tda_cls(device=torch.device("cpu"), dtype=dtype)
        if value is DTYPE:
            return dtype
        return value

    args = [convert(v) for v in case.args]
    kwargs = {k: convert(v) for k, v in case.kwargs.items()}
    return args, kwargs


def run(module: Any, case: Case, args: list[Any], kwargs: dict[str, Any]) -> list[torch.Tensor]:
    """Call ``case.func`` of ``module`` (cuRobo's or ours) and flatten the result to tensors."""
    if case.func == "CliqueTensorStep:fwd":
        result: Any = module.CliqueTensorStep.apply(*args)
    elif case.func == "CliqueTensorStep:grad":
        u = args[0].clone().requires_grad_(True)
        outputs = module.CliqueTensorStep.apply(u, *args[1:7])
        loss = sum((o * w).sum() for o, w in zip(outputs, args[7:11], strict=True))
        loss.backward()
        result = [*(o.detach() for o in outputs), u.grad]
    elif case.func.startswith("grad:"):
        act = args[1].clone().requires_grad_(True)
        outputs = flatten(getattr(module, case.func[5:])(args[0], act, *args[2:], **kwargs), False)
        sum(o.square().sum() for o in outputs if o.requires_grad).backward()
        result = [*outputs, act.grad]
    else:
        result = getattr(module, case.func)(*args, **kwargs)
    return flatten(result)


def flatten(result: Any, detach: bool = True) -> list[torch.Tensor]:
    if isinstance(result, torch.Tensor):
        return [result.detach() if detach else result]
    if isinstance(result, (list, tuple)):
        return [t for r in result for t in flatten(r, detach)]
    fields = ("position", "velocity", "acceleration", "jerk")
    if all(hasattr(result, f) for f in fields):
        return flatten([getattr(result, f) for f in fields], detach)
    raise TypeError(f"unexpected result type {type(result).__name__}")
