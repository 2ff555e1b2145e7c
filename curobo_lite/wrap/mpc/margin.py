"""The world collision cost's margin and weight while :class:`~curobo_lite.wrap.MpcSolver`
follows a checked plan.

:func:`plan_margins` gives a plan's margin per sample (its own sphere clearance over the horizon
ahead, capped at ``follow_activation_distance``); :class:`CollisionMargin` writes a margin into
the cost and scales its weight so that contact costs what the task's margin made it cost.

The task's margin and weight are what the cost held before the solver first wrote it, and
whatever the user writes since (``cost.update_weight(...)``, which replaces the cost's
configuration, or a field assignment): an edit is noticed at the next write (a field that
differs from the solver's last value) and becomes the task's, so it lasts (before, the next
step wrote the old task's weight back over it); a weight set while a narrow margin is in use
is the task's, scaled like it.
"""

from __future__ import annotations

import math

import torch

from curobo_lite.rollout import ArmReacher
from curobo_lite.rollout.cost.base import CostBase
from curobo_lite.wrap.mpc.tracking import MARGIN_STEP, TrackedPlan

# the world collision weight's largest gain while a margin narrower than the task's is used
MAX_WEIGHT_GAIN = 8.0


def plan_margins(rollout: ArmReacher, tracked: TrackedPlan, margin: float) -> list[float]:
    """Per sample of ``tracked``: the smallest sphere clearance (m) of the samples the horizon
    reaches from there, within ``[0, margin]``, rounded down to ``MARGIN_STEP``."""
    spheres = rollout.dynamics_model.kinematics.forward(tracked.position).link_spheres
    world, _ = rollout.collision_distances(
        None if spheres is None else spheres[:, None], check_range=margin
    )
    if world is None:
        return [margin] * tracked.position.shape[0]
    reach = math.ceil(float(tracked.offsets[-1]) / tracked.dt) + 1  # samples in a horizon
    held = torch.cat((world, world[-1:].expand(reach - 1)))  # the plan holds its end
    ahead = held.unfold(0, reach, 1).amin(1).clamp(0.0, margin)
    return (torch.floor(ahead / MARGIN_STEP) * MARGIN_STEP).tolist()


class CollisionMargin:
    """The margin and weight of the world collision ``cost`` (a ``primitive_collision_cost``).

    Attributes:
        task_activation, task_weight: the task's margin (m) and weight (see the module
            docstring: the user's edits become them).
    """

    def __init__(self, cost: CostBase) -> None:
        self.cost = cost
        self.task_activation: float = cost.config.activation_distance
        self.task_weight: float = cost.config.weight
        self._written: tuple[float, float] | None = None  # (margin, weight) written last

    def set(self, wanted: float | None) -> None:
        """Margin ``wanted`` (m; ``None``: the task's); the weight grows as the margin shrinks
        below the task's, so the cost at contact (``weight * margin / 2``, the smooth hinge)
        stays the task's: a narrow margin is no cheaper to cross (at most
        ``MAX_WEIGHT_GAIN`` times steeper)."""
        config = self.cost.config
        if self._written is not None:  # a field that differs from the last write: the user's
            if config.activation_distance != self._written[0]:
                self.task_activation = config.activation_distance
            if config.weight != self._written[1]:
                self.task_weight = config.weight
        task = self.task_activation
        if wanted is None:
            wanted = task
        gain = task / max(wanted, task / MAX_WEIGHT_GAIN) if wanted < task else 1.0
        weight = self.task_weight * gain
        # field assignments (the config object stays: replayed launches hold its tensors)
        if config.activation_distance != wanted:
            config.activation_distance = wanted
        if config.weight != weight:
            config.weight = weight
        self._written = (config.activation_distance, config.weight)
