"""Build the rollout's cost terms from the ``cost`` section of a task file."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from curobo_lite.rollout.cost.base import CostBase
from curobo_lite.rollout.cost.bound_cost import BoundCost
from curobo_lite.rollout.cost.collision_cost import PrimitiveCollisionCost, SelfCollisionCost
from curobo_lite.rollout.cost.cspace_cost import CSpaceGoalCost, NullSpaceCost
from curobo_lite.rollout.cost.pose_cost import PoseCost
from curobo_lite.rollout.cost.smooth_cost import SmoothnessCost
from curobo_lite.rollout.cost.stop_cost import StopCost
from curobo_lite.rollout.cost.tracking_cost import TrackingCost
from curobo_lite.types import TensorDeviceType
from curobo_lite.types.checks import excerpt
from curobo_lite.types.errors import CuroboLiteError, InputTypeError, InputValueError

#: YAML section name -> cost class.
COST_REGISTRY: dict[str, type[CostBase]] = {
    "pose_cost": PoseCost,
    "cspace_cost": CSpaceGoalCost,
    "bound_cost": BoundCost,
    "smooth_cost": SmoothnessCost,
    "stop_cost": StopCost,
    "null_space_cost": NullSpaceCost,
    "primitive_collision_cost": PrimitiveCollisionCost,
    "self_collision_cost": SelfCollisionCost,
    "tracking_cost": TrackingCost,
}


def build_costs(
    cost_dict: Mapping[str, Any] | None,
    joint_limits: Any = None,
    tensor_args: TensorDeviceType | None = None,
    *,
    retract_config: Any = None,
    cspace_weights: Any = None,
) -> dict[str, CostBase]:
    """Instantiate one cost per section of ``cost_dict`` (a task file's ``cost`` mapping).

    Args:
        cost_dict: ``{section: options}`` with sections from :data:`COST_REGISTRY`; an empty
            section (``None``) uses the defaults.
        joint_limits: the robot's ``{position, velocity, acceleration, jerk}`` limits
            (``[2, D]`` each, mapping or attributes); default for ``bound_cost`` and
            ``stop_cost``.
        tensor_args: device and dtype of the costs.
        retract_config: the robot's ``[D]`` retract configuration (``null_space_cost``).
        cspace_weights: the robot's ``[D]`` c-space weights (``cspace_cost``,
            ``null_space_cost``), used where the section does not set its own.

    Returns:
        ``{section: cost}`` in the order of ``cost_dict``. Disabled costs are included (with
        ``enabled = False``) so that they can be switched on at runtime.
    """
    if cost_dict is None:
        return {}
    if not isinstance(cost_dict, Mapping):
        raise InputTypeError(
            f"build_costs: cost_dict expected a mapping of cost sections, "
            f"received {type(cost_dict).__name__}"
        )
    unknown = [str(k) for k in cost_dict if k not in COST_REGISTRY]
    if unknown:
        raise InputValueError(
            f"build_costs: unknown cost section(s) {excerpt(unknown)}; known sections: "
            f"{list(COST_REGISTRY)}"
        )
    tensor_args = tensor_args or TensorDeviceType()
    robot = {
        "joint_limits": joint_limits,
        "retract_config": retract_config,
        "cspace_weights": cspace_weights,
    }
    costs = {}
    for name, section in cost_dict.items():
        try:
            costs[name] = COST_REGISTRY[name].from_dict(section, tensor_args, **robot)
        except CuroboLiteError as err:
            if not str(err).startswith(f"{name}"):
                raise
            # the task file's key path: cost.<section>.<key>
            raise type(err)(f"cost.{err}") from None
    return costs
