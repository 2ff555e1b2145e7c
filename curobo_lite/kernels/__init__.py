"""Warp step kernels behind differentiable PyTorch wrappers (SPEC §2)."""

from curobo_lite.kernels.tensor_step import (
    StepBuffers,
    StepMode,
    TensorStepAdjointFunction,
    TensorStepFunction,
    resolve_step_mode,
    tensor_step,
    validate_step_inputs,
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
