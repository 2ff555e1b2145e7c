"""Warp step kernels behind differentiable PyTorch wrappers (SPEC §2)."""

from curobo_lite.kernels.step_inputs import StepMode, resolve_step_mode, validate_step_inputs
from curobo_lite.kernels.step_launch import StepBuffers
from curobo_lite.kernels.tensor_step import (
    TensorStepAdjointFunction,
    TensorStepFunction,
    tensor_step,
)

__all__ = [
    "StepBuffers",
    "StepMode",
    "TensorStepAdjointFunction",
    "TensorStepFunction",
    "resolve_step_mode",
    "tensor_step",
    "validate_step_inputs",
]
