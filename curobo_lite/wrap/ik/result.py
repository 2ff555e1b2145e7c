"""The result of an IK solve (:class:`IKResult`) and what is computed from results: the best
pose of a goal set (:func:`goalset_result`), the merge of a second phase's goals into the first
(:func:`merge_results`), distinct solutions (:func:`distinct_rows`)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from curobo_lite.types import JointState

#: ranking: offset of one tier (precise, successful, failed) over any joint-space distance
TIER = 1e6


@dataclass
class IKResult:
    """Solutions for ``S`` goal poses.

    Attributes:
        success: ``[S]`` bool: the best solution reaches the goal and is collision-free.
        solution: ``[S, D]`` best configuration per goal (the best attempt where none
            succeeded).
        position_error: ``[S]`` metres, rotation_error ``[S]`` radians, of ``solution``.
        min_distance: ``[S]`` signed clearance (m) of ``solution`` to the world and itself
            (``None`` for a robot without collision spheres).
        solutions: ``[S, n, D]`` every seed's result, ranked (successful first).
        solutions_success: ``[S, n]`` bool, in the same order.
        distinct_solutions: per goal, the successful solutions that differ by more than
            ``distinct_tolerance`` rad (``[k_s, D]``, ranked).
        solve_time: seconds; iterations: damped least-squares steps (``dls_iterations``)
            plus L-BFGS iterations run.
        solutions_precise: ``[S, n]`` bool, in the same order: successful and within a quarter
            of both thresholds.
        goalset_index: ``[S]`` long, :meth:`IKSolver.solve_goalset` only: which of the goal
            set's poses ``solution`` reaches (or comes nearest to, where none succeeded).
        goalset_success: ``[S, G]`` bool, :meth:`IKSolver.solve_goalset` only: which poses of
            the set have a solution.
    """

    success: torch.Tensor
    solution: torch.Tensor
    position_error: torch.Tensor
    rotation_error: torch.Tensor
    min_distance: torch.Tensor | None
    solutions: torch.Tensor
    solutions_success: torch.Tensor
    distinct_solutions: list[torch.Tensor]
    solve_time: float
    iterations: int = 0
    solutions_precise: torch.Tensor | None = None
    goalset_index: torch.Tensor | None = None
    goalset_success: torch.Tensor | None = None

    @property
    def js_solution(self) -> JointState:
        """``solution`` as a :class:`JointState` ``[S, D]``."""
        return JointState.from_position(self.solution)

    def __repr__(self) -> str:
        return (
            f"IKResult(success {int(self.success.sum())}/{self.success.shape[0]}, "
            f"position_error max {float(self.position_error.max()) * 1000:.3f} mm, "
            f"rotation_error max {float(self.rotation_error.max()):.4f} rad, distinct solutions "
            f"{[int(d.shape[0]) for d in self.distinct_solutions]}, "
            f"solve_time {self.solve_time:.3f} s)"
        )


def goalset_result(result: IKResult, rank_config: torch.Tensor) -> IKResult:
    """Batch 1 from the per-pose ``result`` of a goal set (``S = G``): the best pose's row,
    ranked as within one goal (successful, then precise, then nearest ``rank_config [D]``;
    among failures the smallest pose error), with ``goalset_index`` and ``goalset_success``."""
    precise = result.solutions_precise[:, 0] if result.solutions_precise is not None else None
    distance = (result.solution - rank_config).square().sum(-1)
    if precise is not None:
        distance = distance + torch.where(precise, 0.0, TIER)
    error = (result.position_error + result.rotation_error).clamp(max=1e12)
    key = torch.where(result.success, distance, distance.new_full((), 2 * TIER) + error)
    g = int(key.argmin())
    row = slice(g, g + 1)

    def pick(value: torch.Tensor | None) -> torch.Tensor | None:
        return None if value is None else value[row]

    return IKResult(
        success=result.success[row],
        solution=result.solution[row],
        position_error=result.position_error[row],
        rotation_error=result.rotation_error[row],
        min_distance=pick(result.min_distance),
        solutions=result.solutions[row],
        solutions_success=result.solutions_success[row],
        distinct_solutions=[result.distinct_solutions[g]],
        solve_time=result.solve_time,
        iterations=result.iterations,
        solutions_precise=pick(result.solutions_precise),
        goalset_index=torch.tensor([g], device=result.solution.device),
        goalset_success=result.success[None],
    )


def merge_results(
    found: IKResult, solved: IKResult, rows: torch.Tensor, use: torch.Tensor
) -> IKResult:
    """``found`` with its goals ``rows`` replaced by ``solved``'s (in order) where ``use``
    (``[len(rows)]`` bool)."""
    rows, picked = rows[use], use.nonzero()[:, 0]
    merged = {}
    for name in (
        "success",
        "solution",
        "position_error",
        "rotation_error",
        "min_distance",
        "solutions",
        "solutions_success",
        "solutions_precise",
    ):
        value = getattr(found, name)
        if value is not None:
            value = value.clone()
            value[rows] = getattr(solved, name)[picked]
        merged[name] = value
    distinct = list(found.distinct_solutions)
    for k, row in zip(picked.tolist(), rows.tolist()):
        distinct[row] = solved.distinct_solutions[k]
    return IKResult(
        **merged,
        distinct_solutions=distinct,
        solve_time=solved.solve_time,
        iterations=solved.iterations,
    )


def distinct_rows(solutions: torch.Tensor, tolerance: float) -> torch.Tensor:
    """Rows of ``solutions [k, D]`` (ranked) farther than ``tolerance`` from every kept one."""
    if solutions.shape[0] == 0:
        return solutions
    distance = torch.cdist(solutions, solutions, compute_mode="donot_use_mm_for_euclid_dist")
    near = (distance <= tolerance).cpu()  # [k, k]
    kept: list[int] = []
    for i in range(solutions.shape[0]):  # greedy in rank order: a row near a kept one goes
        if not kept or not bool(near[i, kept].any()):
            kept.append(i)
    return solutions[kept]
