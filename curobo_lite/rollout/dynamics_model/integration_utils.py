"""The seed API of cuRobo's ``integration_utils`` module: a facade over four modules.

Every name of the seed listing is importable from here with its cuRobo signature. Two families,
with two contracts:

**cuRobo 0.7.8's numbers** (a drop-in for ``curobo.rollout.dynamics_model.integration_utils``):
the pure-PyTorch functions return the values and shapes cuRobo 0.7.8 returns for every input it
accepts, including its layouts, broadcasting and conventions where these differ from SPEC §2
(each docstring says where; a golden-output test checks them against cuRobo itself). Inputs cuRobo
rejects, or for which it returns NaN, raise a ``ValueError`` (``TypeError`` for wrong types)
naming the argument.

- matrix builders (:mod:`.seed_matrices`): ``build_clique_matrix``, ``build_fd_matrix``,
  ``build_int_matrix``, ``build_start_state_mask``, ``sum_matrix``, ``interpolate_kernel``,
  ``action_interpolate_kernel``, ``tensor_linspace``;
- dense reference steps (:mod:`.seed_dense_steps`): ``tensor_step_acc``, ``tensor_step_jerk``,
  ``tensor_step_vel``, ``tensor_step_pos``, ``tensor_step_pos_ik``, ``euler_integrate``,
  ``step_acc_semi_euler``, ``tensor_step_acc_semi_euler`` — cuRobo applies the action at step
  ``h`` without a shift in the integrating ones and takes ``dt`` only from the matrices it is given;
- the POSITION clique (:mod:`.seed_clique`): ``jit_tensor_step_pos_clique[_contiguous]``,
  ``jit_backward_pos_clique[_contiguous]``, ``CliqueTensorStep``, ``tensor_step_pos_clique``
  (``CliqueTensorStep`` adds a start-position gradient and ``jvp``).

**SPEC §2** (the engine's step semantics: index 0 is the start state, ``u_{h-1}`` drives step
``h``, any ``traj_dt``): :func:`curobo_lite.kernels.tensor_step`, the Warp kernel classes
re-exported here from :mod:`curobo_lite.kernels.seed_functions` (``CliqueTensorStep*Kernel``,
``AccelerationTensorStep*Kernel``: cuRobo's CUDA-kernel semantics extended to non-uniform
``traj_dt``, any horizon and exact adjoints; note they take ``traj_dt`` in seconds) and the
:class:`~curobo_lite.rollout.dynamics_model.KinematicModel` built on them.
"""

from __future__ import annotations

from curobo_lite.kernels.seed_functions import (
    AccelerationTensorStepIdxKernel,
    AccelerationTensorStepKernel,
    CliqueTensorStepCentralDifferenceKernel,
    CliqueTensorStepCoalesceKernel,
    CliqueTensorStepIdxCentralDifferenceKernel,
    CliqueTensorStepIdxKernel,
    CliqueTensorStepKernel,
)
from curobo_lite.rollout.dynamics_model.seed_clique import (
    CliqueTensorStep,
    jit_backward_pos_clique,
    jit_backward_pos_clique_contiguous,
    jit_tensor_step_pos_clique,
    jit_tensor_step_pos_clique_contiguous,
    tensor_step_pos_clique,
)
from curobo_lite.rollout.dynamics_model.seed_dense_steps import (
    euler_integrate,
    step_acc_semi_euler,
    tensor_step_acc,
    tensor_step_acc_semi_euler,
    tensor_step_jerk,
    tensor_step_pos,
    tensor_step_pos_ik,
    tensor_step_vel,
)
from curobo_lite.rollout.dynamics_model.seed_matrices import (
    action_interpolate_kernel,
    build_clique_matrix,
    build_fd_matrix,
    build_int_matrix,
    build_start_state_mask,
    interpolate_kernel,
    sum_matrix,
    tensor_linspace,
)
from curobo_lite.types import JointState, TensorDeviceType

__all__ = [
    "AccelerationTensorStepIdxKernel",
    "AccelerationTensorStepKernel",
    "CliqueTensorStep",
    "CliqueTensorStepCentralDifferenceKernel",
    "CliqueTensorStepCoalesceKernel",
    "CliqueTensorStepIdxCentralDifferenceKernel",
    "CliqueTensorStepIdxKernel",
    "CliqueTensorStepKernel",
    "JointState",
    "TensorDeviceType",
    "action_interpolate_kernel",
    "build_clique_matrix",
    "build_fd_matrix",
    "build_int_matrix",
    "build_start_state_mask",
    "euler_integrate",
    "interpolate_kernel",
    "jit_backward_pos_clique",
    "jit_backward_pos_clique_contiguous",
    "jit_tensor_step_pos_clique",
    "jit_tensor_step_pos_clique_contiguous",
    "step_acc_semi_euler",
    "sum_matrix",
    "tensor_linspace",
    "tensor_step_acc",
    "tensor_step_acc_semi_euler",
    "tensor_step_jerk",
    "tensor_step_pos",
    "tensor_step_pos_clique",
    "tensor_step_pos_ik",
    "tensor_step_vel",
]
