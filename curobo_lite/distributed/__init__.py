"""Multi-process helpers on ``torch.distributed``: a differentiable all-gather and rank/shard
bookkeeping for solvers launched with ``torchrun`` (gloo on CPU, NCCL on GPU).

Everything degrades to a single rank when no process group is initialized.
"""

from curobo_lite.distributed.all_gather import AllGatherGrad, all_gather_with_grad
from curobo_lite.distributed.group import (
    DistributedConfig,
    DistributedContext,
    collective_errors,
    get_rank,
    get_world_size,
    group_device,
    init_from_env,
    is_distributed,
    shard_range,
)

__all__ = [
    "AllGatherGrad",
    "DistributedConfig",
    "DistributedContext",
    "all_gather_with_grad",
    "collective_errors",
    "get_rank",
    "get_world_size",
    "group_device",
    "init_from_env",
    "is_distributed",
    "shard_range",
]
