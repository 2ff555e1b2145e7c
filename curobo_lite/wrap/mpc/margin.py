"""The world collision cost's margin and weight while :class:`~curobo_lite.wrap.MpcSolver`
follows a checked plan.

:func:`plan_margins` gives a plan's margin per sample (its own sphere clearance over the horizon
ahead, capped at ``follow_activation_distance``); :class:`CollisionMargin` writes a margin into
the cost and scales its weight so that contact costs what the task's margin made it cost (and
the tracking cost's position weight by the same gain).

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
    """The margin and weight of the world collision ``cost`` (a ``primitive_collision_cost``),
    and the position weight of the ``tracking`` cost (optional), scaled by the same gain: where
    the plan passes closer than the task's margin the robot must keep to it more closely
    (MBM bookshelf_tall_0_0001 moved: 0.02 rad off a plan 0.4 mm from the grasped can put a
    finger 6 mm into it; with the gain, 1.7 mm clear).

    Attributes:
        task_activation, task_weight, task_tracking: the task's margin (m), collision weight
            and tracking position weight (see the module docstring: the user's edits become
            them).
    """

    def __init__(self, cost: CostBase, tracking: CostBase | None = None) -> None:
        self.cost, self.tracking = cost, tracking
        self.task_activation: float = cost.config.activation_distance
        self.task_weight: float = cost.config.weight
        self.task_tracking = None if tracking is None else tracking.config.position_weight
        # (margin, weight, tracking position weight) written last
        self._written: tuple[float, float, float | None] | None = None

    def set(self, wanted: float | None) -> None:
        """Margin ``wanted`` (m; ``None``: the task's); the weights grow as the margin shrinks
        below the task's, so the cost at contact (``weight * margin / 2``, the smooth hinge)
        stays the task's: a narrow margin is no cheaper to cross (at most
        ``MAX_WEIGHT_GAIN`` times steeper)."""
        config = self.cost.config
        tracking = None if self.tracking is None else self.tracking.config
        if self._written is not None:  # a field that differs from the last write: the user's
            if config.activation_distance != self._written[0]:
                self.task_activation = config.activation_distance
            if config.weight != self._written[1]:
                self.task_weight = config.weight
            if tracking is not None and tracking.position_weight != self._written[2]:
                self.task_tracking = tracking.position_weight
        task = self.task_activation
        if wanted is None:
            wanted = task
        gain = task / max(wanted, task / MAX_WEIGHT_GAIN) if wanted < task else 1.0
        # field assignments (the config objects stay: replayed launches hold their tensors)
        if config.activation_distance != wanted:
            config.activation_distance = wanted
        if config.weight != self.task_weight * gain:
            config.weight = self.task_weight * gain
        if tracking is not None and tracking.position_weight != self.task_tracking * gain:
            tracking.position_weight = self.task_tracking * gain
        written_tracking = None if tracking is None else tracking.position_weight
        self._written = (config.activation_distance, config.weight, written_tracking)
