"""Rollouts on a CPU with forward kinematics and the world cost beside the joint-space costs.

An MPPI rollout without a gradient (400 particles x 30 steps) spends about half its time in
two Warp kernels, forward kinematics and the world-collision cost read from the link frames,
and the rest in torch costs that read only the joint states (bounds, smoothness, stopping,
the null space, tracking). A Warp CPU kernel runs on the thread that launches it and releases
the GIL, so on a CPU with a second core :func:`overlapped_terms` launches the kernels from a
helper thread while the calling thread evaluates the joint-space costs, then the pose cost
while the helper computes the world cost. Every term is computed by the same code as in the
sequential rollout, so the results are identical.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import torch

from curobo_lite.rollout.cost import (
    CostBase,
    PoseCost,
    PrimitiveCollisionCost,
    SelfCollisionCost,
)
from curobo_lite.rollout.dynamics_model import KinematicModel, KinematicModelState
from curobo_lite.types import JointState

#: fewer configurations per rollout than this run sequentially: the two hand-offs to the
#: helper thread (tens of microseconds) would cost more than they save
OVERLAP_MIN_CONFIGS = 2048

#: costs that read the link frames (everything else reads only the joint states)
_FRAME_COSTS = (PoseCost, PrimitiveCollisionCost, SelfCollisionCost)

_helper: ThreadPoolExecutor | None = None

#: ``cost_terms(state, names) -> {name: [B, H] term}`` for the named enabled costs
CostTerms = Callable[[KinematicModelState, Collection[str]], dict[str, torch.Tensor]]


def _submit(fn: Callable[..., Any], *args: Any) -> Future:
    """Run ``fn(*args)`` on the helper thread without a gradient (grad mode is per thread)."""
    global _helper
    if _helper is None:
        _helper = ThreadPoolExecutor(max_workers=1, thread_name_prefix="curobo_lite_rollout")

    def job() -> Any:
        with torch.no_grad():
            return fn(*args)

    return _helper.submit(job)


def overlapped_terms(
    model: KinematicModel,
    state_seq: JointState,
    spheres: bool,
    costs: Mapping[str, CostBase],
    cost_terms: CostTerms,
    in_frames_kernel: Callable[[CostBase], bool],
) -> tuple[KinematicModelState, dict[str, torch.Tensor]]:
    """The rolled-out state (``state_seq`` and its forward kinematics, with the spheres when
    ``spheres``) and every enabled cost term ``[B, H]`` in the order of ``costs``, with the
    kinematics and the world costs that ``in_frames_kernel`` accepts computed on the helper
    thread (module docstring). Call without a gradient, on a CPU device."""
    frames = _submit(model.frames, state_seq.position, spheres)
    enabled = [name for name, cost in costs.items() if cost.enabled]
    joint = [name for name in enabled if not isinstance(costs[name], _FRAME_COSTS)]
    try:
        terms = cost_terms(KinematicModelState(state_seq, None), joint)
    finally:  # the helper writes the frame buffers: never leave it running
        kinematics = frames.result()
    state = KinematicModelState(state_seq, kinematics)
    on_helper = [name for name in enabled if in_frames_kernel(costs[name])]
    rest = [name for name in enabled if name not in joint and name not in on_helper]
    helper_terms = _submit(cost_terms, state, on_helper) if on_helper else None
    try:
        terms.update(cost_terms(state, rest))
    finally:
        if helper_terms is not None:
            terms.update(helper_terms.result())
    return state, {name: terms[name] for name in costs if name in terms}
