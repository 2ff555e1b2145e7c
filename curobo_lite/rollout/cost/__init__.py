"""Cost terms of the rollout: each maps trajectories to a per-step cost ``[B, H]``."""

from curobo_lite.rollout.cost.base import QUANTITIES, CostBase, CostConfig
from curobo_lite.rollout.cost.bound_cost import BoundCost, BoundCostConfig
from curobo_lite.rollout.cost.collision_cost import (
    PrimitiveCollisionCost,
    PrimitiveCollisionCostConfig,
    SelfCollisionCost,
    SelfCollisionCostConfig,
)
from curobo_lite.rollout.cost.cspace_cost import (
    CSpaceGoalCost,
    CSpaceGoalCostConfig,
    NullSpaceCost,
    NullSpaceCostConfig,
)
from curobo_lite.rollout.cost.pose_cost import PoseCost, PoseCostConfig
from curobo_lite.rollout.cost.pose_metric import PoseCostMetric
from curobo_lite.rollout.cost.registry import COST_REGISTRY, build_costs
from curobo_lite.rollout.cost.smooth_cost import SmoothnessCost, SmoothnessCostConfig
from curobo_lite.rollout.cost.stop_cost import StopCost, StopCostConfig
from curobo_lite.rollout.cost.tracking_cost import TrackingCost, TrackingCostConfig

__all__ = [
    "COST_REGISTRY",
    "QUANTITIES",
    "BoundCost",
    "BoundCostConfig",
    "CSpaceGoalCost",
    "CSpaceGoalCostConfig",
    "CostBase",
    "CostConfig",
    "NullSpaceCost",
    "NullSpaceCostConfig",
    "PoseCost",
    "PoseCostConfig",
    "PoseCostMetric",
    "PrimitiveCollisionCost",
    "PrimitiveCollisionCostConfig",
    "SelfCollisionCost",
    "SelfCollisionCostConfig",
    "SmoothnessCost",
    "SmoothnessCostConfig",
    "StopCost",
    "StopCostConfig",
    "TrackingCost",
    "TrackingCostConfig",
    "build_costs",
]
