"""curobo_lite: batched, differentiable rollouts for robot motion planning.

Step kernels are written in NVIDIA Warp (one source for CPU and CUDA) and wrapped as
``torch.autograd.Function`` objects with exact backward passes.
"""

from curobo_lite.types import JointState, Pose, StateType, TensorDeviceType
from curobo_lite.types import errors as _errors
from curobo_lite.types.errors import *  # noqa: F403 (exactly errors.__all__)

__version__ = "0.1.0"

# the error classes are re-exported under the names types.errors lists
__all__ = [
    "JointState",
    "Pose",
    "StateType",
    "TensorDeviceType",
    "__version__",
]
__all__ += _errors.__all__
