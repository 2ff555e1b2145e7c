"""IK result helpers against brute-force references."""

from __future__ import annotations

import math

import torch

from curobo_lite.wrap.ik.result import distinct_rows


def _greedy_reference(rows: list[list[float]], tolerance: float) -> list[int]:
    """Indices kept by the greedy rule, with plain Python distances."""
    kept: list[int] = []
    for i, row in enumerate(rows):
        if all(math.dist(row, rows[k]) > tolerance for k in kept):
            kept.append(i)
    return kept


def test_distinct_rows_keeps_ranked_rows_farther_than_the_tolerance_from_every_kept_one():
    generator = torch.Generator().manual_seed(0)
    base = 0.4 * torch.randn(60, 7, generator=generator, dtype=torch.float64)
    # near-copies (within and beyond the tolerance) interleaved with the originals
    nudged = base + 0.02 * torch.randn(60, 7, generator=generator, dtype=torch.float64)
    solutions = torch.stack((base, nudged), dim=1).reshape(-1, 7)
    for tolerance in (0.01, 0.05, 0.3, 1.0):
        expected = _greedy_reference(solutions.tolist(), tolerance)
        assert torch.equal(distinct_rows(solutions, tolerance), solutions[expected])
    assert distinct_rows(solutions[:0], 0.1).shape == (0, 7)
    assert torch.equal(distinct_rows(solutions[:1], 0.1), solutions[:1])
