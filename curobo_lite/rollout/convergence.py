"""How good a rolled-out trajectory is: :class:`ConvergenceMetrics` (errors at the last step,
limit violations, clearances) and :class:`ReachCriteria` (when it is good enough to stop)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from curobo_lite.geom import SelfCollisionModel, WorldCollision
from curobo_lite.robot import Kinematics

#: Range (m) of the collision checks in :meth:`ArmReacher.convergence`: obstacles farther than
#: this from every sphere are not looked at, and such distances read as the range.
COLLISION_CHECK_RANGE = 1.0


def smallest_clearance(
    world_distance: torch.Tensor | None, self_distance: torch.Tensor | None
) -> torch.Tensor | None:
    """``[B]`` the smaller of two clearances, either of which may be absent (``None``: both)."""
    if world_distance is None or self_distance is None:
        return self_distance if world_distance is None else world_distance
    return torch.minimum(world_distance, self_distance)


@torch.no_grad()
def collision_distances(
    kinematics: Kinematics,
    world: WorldCollision | None,
    self_collision: SelfCollisionModel | None,
    link_spheres: torch.Tensor | None,
    swept: bool = False,
    check_range: float = COLLISION_CHECK_RANGE,
) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """:meth:`ArmReacher.collision_distances <curobo_lite.rollout.ArmReacher.collision_distances>`
    of ``link_spheres [B, H, N, 4]`` (the robot's spheres by ``kinematics``) against ``world``
    and between the pairs of ``self_collision`` (either may be ``None``)."""
    if link_spheres is None:
        return None, None
    world_distance = self_distance = None
    if world is not None:
        world_spheres = kinematics.world_spheres(link_spheres)
        query = world.swept_sphere_distance if swept else world.sphere_distance
        distance = query(world_spheres, max_distance=check_range).distance
        world_distance = distance.flatten(1).amin(1)
    if self_collision is not None:
        distance = self_collision.distance(link_spheres, max_distance=check_range).distance
        self_distance = distance.flatten(1).amin(1)
    return world_distance, self_distance


@dataclass
class ConvergenceMetrics:
    """Per-trajectory quality of a rollout (no gradient).

    Attributes:
        position_error: ``[B]`` metres at the last step (``None`` without a pose goal).
        rotation_error: ``[B]`` radians at the last step (``None`` without a pose goal).
        cspace_error: ``[B]`` joint-space distance at the last step (``None`` without a
            joint goal).
        limit_violation: ``{position|velocity|acceleration|jerk: [B]}`` largest violation of
            the robot's limits along the trajectory (0 when within).
        world_distance: ``[B]`` smallest signed distance (m) of any robot sphere to any
            obstacle along the trajectory, negative in collision (``None`` without a world or
            without spheres); distances beyond ``COLLISION_CHECK_RANGE`` read as that range.
        self_distance: ``[B]`` smallest signed distance between robot spheres that may collide
            (``None`` for a robot without spheres).
    """

    position_error: torch.Tensor | None
    rotation_error: torch.Tensor | None
    cspace_error: torch.Tensor | None
    limit_violation: dict[str, torch.Tensor]
    world_distance: torch.Tensor | None = None
    self_distance: torch.Tensor | None = None

    @property
    def collision_free(self) -> torch.Tensor | None:
        """``[B]`` bool: no world or self collision along the trajectory (``None`` when the
        robot has no collision spheres)."""
        distance = self.min_distance
        return None if distance is None else distance >= 0.0

    @property
    def min_distance(self) -> torch.Tensor | None:
        """``[B]`` the smaller of ``world_distance`` and ``self_distance``."""
        return smallest_clearance(self.world_distance, self.self_distance)

    def __repr__(self) -> str:
        def stat(t: torch.Tensor | None) -> str:
            return "None" if t is None else f"min {float(t.min()):.4g} max {float(t.max()):.4g}"

        violations = {k: round(float(v.max()), 6) for k, v in self.limit_violation.items()}
        return (
            f"ConvergenceMetrics(position_error: {stat(self.position_error)}, rotation_error: "
            f"{stat(self.rotation_error)}, cspace_error: {stat(self.cspace_error)}, "
            f"max limit violation: {violations}, world_distance: {stat(self.world_distance)}, "
            f"self_distance: {stat(self.self_distance)})"
        )


@dataclass(frozen=True)
class ReachCriteria:
    """When a trajectory is good enough to stop optimizing it: its last step within
    ``position_threshold`` m and ``rotation_threshold`` rad of a pose goal (or within
    ``cspace_threshold`` of a joint goal), no step outside the position limits, and every
    sphere at least ``clearance`` m from the obstacles and from the robot's other links
    (checked on the segments between steps).

    Tighter than a solver's success thresholds, so the result keeps a margin for the later
    checks of the retimed, interpolated plan."""

    position_threshold: float
    rotation_threshold: float
    cspace_threshold: float
    clearance: float

    @property
    def check_range(self) -> float:
        """How far the clearances must be exact for :meth:`met` (metres): a little beyond
        ``clearance``. Pass it to :meth:`ArmReacher.convergence` to skip the far spheres."""
        return max(self.clearance, 0.0) + 0.005

    def met(self, metrics: ConvergenceMetrics) -> torch.Tensor:
        """``[B]`` bool: the trajectories of ``metrics`` that meet every criterion."""
        met = metrics.limit_violation["position"] <= 1e-6
        if metrics.position_error is not None:
            met &= metrics.position_error <= self.position_threshold
            met &= metrics.rotation_error <= self.rotation_threshold
        if metrics.cspace_error is not None:
            met &= metrics.cspace_error <= self.cspace_threshold
        distance = metrics.min_distance
        if distance is not None:
            met &= distance >= self.clearance
        return met
