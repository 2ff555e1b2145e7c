"""curobo_lite: batched, differentiable rollouts for robot motion planning.

Step kernels are written in NVIDIA Warp (one source for CPU and CUDA) and wrapped as
``torch.autograd.Function`` objects with exact backward passes.
"""

from curobo_lite.types import (
    ConfigError,
    CuroboLiteError,
    DistributedError,
    InputTypeError,
    InputValueError,
    JointState,
    Pose,
    StateType,
    TensorDeviceType,
)

__version__ = "0.1.0"

__all__ = [
    "ConfigError",
    "CuroboLiteError",
    "DistributedError",
    "InputTypeError",
    "InputValueError",
    "JointState",
    "Pose",
    "StateType",
    "TensorDeviceType",
    "__version__",
]
