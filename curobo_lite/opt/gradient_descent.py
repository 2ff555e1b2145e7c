"""Projected gradient descent with a fixed step size: the baseline for :mod:`.lbfgs`.

``x <- clamp(x - step_size * grad, lows, highs)`` (no clamp without ``use_bounds``), every seed
independently, with the best-so-far tracking and per-seed convergence of
:mod:`curobo_lite.opt.gradient_base`.

YAML section ``gradient_descent:`` (keys of :meth:`GradientDescentConfig.from_dict`):
``n_problems``, ``num_seeds``, ``n_iters``, ``convergence_tol``, ``fixed_iters``,
``use_bounds``, ``seed`` as in :mod:`curobo_lite.opt.lbfgs`, plus ``step_size`` (float > 0,
default 0.01): the fixed step multiplying the gradient.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch

from curobo_lite.opt.base import Rollout
from curobo_lite.opt.gradient_base import GradientOptimizerBase, GradientOptimizerConfig
from curobo_lite.opt.options import as_float
from curobo_lite.types.errors import InputTypeError


@dataclass
class GradientDescentConfig(GradientOptimizerConfig):
    """Gradient descent parameters (see the module docstring)."""

    section: ClassVar[str] = "gradient_descent"

    step_size: float = 0.01

    def __post_init__(self) -> None:
        super().__post_init__()
        self.step_size = as_float(self.section, "step_size", self.step_size, 0.0, low_open=True)


class GradientDescent(GradientOptimizerBase):
    """Batched projected gradient descent; same interface as :class:`~.lbfgs.Lbfgs`."""

    def __init__(self, config: GradientDescentConfig, rollout: Rollout) -> None:
        if not isinstance(config, GradientDescentConfig):
            raise InputTypeError(
                f"config: expected GradientDescentConfig, received {type(config).__name__}"
            )
        super().__init__(config, rollout)

    def _prepare(self, batch: int) -> None:
        """Gradient descent keeps no state between iterations."""

    def _step(
        self, x: torch.Tensor, f: torch.Tensor, g: torch.Tensor, active: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
        x_new = self._project(x - self.config.step_size * g)
        f_new, g_new = self._evaluate(x_new)
        return x_new, f_new, g_new, {}
