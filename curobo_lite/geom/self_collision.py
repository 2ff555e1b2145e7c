"""Robot self-collision between collision spheres: signed distance and penalty cost.

:func:`self_collision_distance` works on any batch of sphere sets (e.g.
``KinematicsState.link_spheres``) with the pair list of :class:`~curobo_lite.robot.Kinematics`;
:class:`SelfCollisionChecker` goes from joint positions to the same result.

Conventions: a pair ``(i, j)`` with buffer ``b`` has signed distance
``d = |c_i - c_j| - r_i - r_j - b`` (metres, negative = penetration); ``distance`` is the
minimum over pairs (``+inf`` when no pair is enabled) and ``cost`` the sum over pairs of
``smooth_hinge(eta - d, eta)`` with ``eta = activation_distance`` (cuRobo's activation; see
:mod:`curobo_lite.kernels.collision_common`). Spheres with a negative radius are disabled.
Both outputs are differentiable with respect to all four columns of ``spheres`` (the minimum's
gradient flows to its arg-min pair); first order only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import warp as wp
from torch.autograd.function import once_differentiable

from curobo_lite.kernels import self_collision_kernels as kernels
from curobo_lite.kernels.launch import as_warp, launch_rows
from curobo_lite.types.base import check_dtype_device
from curobo_lite.types.errors import InputTypeError, InputValueError

__all__ = [
    "SelfCollisionChecker",
    "SelfCollisionDistance",
    "SelfCollisionModel",
    "self_collision_distance",
]


@dataclass
class SelfCollisionDistance:
    """Self-collision of a batch of configurations.

    Attributes:
        distance: ``[...]`` minimum signed distance over the checked pairs (metres,
            negative = penetration, ``+inf`` when no pair is enabled).
        cost: ``[...]`` summed smooth-hinge penalty over the pairs (0 when every pair is
            farther apart than the activation distance).
    """

    distance: torch.Tensor
    cost: torch.Tensor

    @property
    def in_collision(self) -> torch.Tensor:
        """``[...]`` bool: some pair penetrates (``distance < 0``)."""
        return self.distance < 0


def _check_inputs(
    spheres: torch.Tensor, pairs: torch.Tensor, pair_buffer: torch.Tensor, eta: float
) -> None:
    if not isinstance(spheres, torch.Tensor):
        raise InputTypeError(
            f"spheres: expected a torch.Tensor [..., N, 4], received {type(spheres)}"
        )
    if spheres.dtype not in (torch.float32, torch.float64):
        raise InputTypeError(
            f"spheres: expected dtype float32 or float64, received {spheres.dtype}"
        )
    if spheres.ndim < 2 or spheres.shape[-1] != 4:
        raise InputValueError(
            f"spheres: expected shape [..., N, 4] (centre xyz, radius), "
            f"received {tuple(spheres.shape)}"
        )
    if not isinstance(pairs, torch.Tensor):
        raise InputTypeError(f"pairs: expected a torch.Tensor [P, 2], received {type(pairs)}")
    if pairs.dtype not in (torch.int32, torch.int64):
        raise InputTypeError(f"pairs: expected dtype int64 or int32, received {pairs.dtype}")
    if pairs.ndim != 2 or pairs.shape[1] != 2:
        raise InputValueError(f"pairs: expected shape [P, 2], received {tuple(pairs.shape)}")
    if not isinstance(pair_buffer, torch.Tensor):
        raise InputTypeError(
            f"pair_buffer: expected a torch.Tensor [P], received {type(pair_buffer)}"
        )
    if tuple(pair_buffer.shape) != (pairs.shape[0],):
        raise InputValueError(
            f"pair_buffer: expected shape [{pairs.shape[0]}] (one per pair), "
            f"received {tuple(pair_buffer.shape)}"
        )
    if pair_buffer.dtype != spheres.dtype:
        raise InputTypeError(
            f"pair_buffer: expected dtype {spheres.dtype} (that of spheres), "
            f"received {pair_buffer.dtype}"
        )
    for name, t in (("pairs", pairs), ("pair_buffer", pair_buffer)):
        if t.device != spheres.device:
            raise InputValueError(
                f"{name}: expected device {spheres.device} (that of spheres), received {t.device}"
            )
    if isinstance(eta, bool) or not isinstance(eta, int | float) or not math.isfinite(eta):
        raise InputTypeError(f"activation_distance: expected a finite float, received {eta!r}")
    if eta < 0:
        raise InputValueError(f"activation_distance: expected a value >= 0, received {eta!r}")
    if pairs.numel():
        n = spheres.shape[-2]
        low, high = pairs.min().item(), pairs.max().item()
        if low < 0 or high >= n:
            raise InputValueError(
                f"pairs: indices must lie in [0, {n}) (N spheres), received range [{low}, {high}]"
            )
        if (pairs[:, 0] == pairs[:, 1]).any():
            raise InputValueError("pairs: a pair joins a sphere with itself")
    if torch.isnan(spheres).any():
        raise InputValueError("spheres: contains NaN")
    if not torch.isfinite(pair_buffer).all():
        raise InputValueError("pair_buffer: contains non-finite values")


class _SelfCollision(torch.autograd.Function):
    """``spheres [B, N, 4] -> (distance [B], cost [B])`` with a hand-written backward."""

    @staticmethod
    def forward(ctx, spheres, pairs, pair_buffer, eta, max_distance, blocks, block_buffer, groups):
        ctx.set_materialize_grads(False)
        b = spheres.shape[0]
        kwargs = {"dtype": spheres.dtype, "device": spheres.device}
        distance = torch.empty(b, **kwargs)
        cost = torch.empty(b, **kwargs)
        argmin = torch.empty(b, dtype=torch.int32, device=spheres.device)
        need_grad = ctx.needs_input_grad[0]
        # the kernel zeroes each configuration's rows before accumulating into them
        grad_cost = torch.empty_like(spheres) if need_grad else spheres.new_zeros(1, 1, 4)
        scalar = kernels.scalar_type(spheres.dtype)
        bounds = torch.empty(b, groups.shape[0], 4, **kwargs)
        shared = [as_warp(t) for t in (pairs, pair_buffer, blocks, block_buffer, groups)] + [
            scalar(eta),
            scalar(max_distance),
            int(need_grad),
        ]

        def make_launch(b0: int, b1: int):
            rows = slice(b0, b1)
            grad_rows = grad_cost[rows] if need_grad else grad_cost
            outputs = [
                as_warp(t)
                for t in (bounds[rows], distance[rows], cost[rows], argmin[rows], grad_rows)
            ]
            return b1 - b0, [as_warp(spheres[rows]), *shared, *outputs]

        launch_rows(
            kernels.self_collision_kernel(spheres.dtype),
            b,
            spheres.device,
            make_launch,
            b * max(pairs.shape[0], 1) * 8,
        )
        no_pair = distance >= kernels.NO_PAIR_DISTANCE
        distance = torch.where(no_pair, torch.full_like(distance, math.inf), distance)
        if need_grad:
            ctx.save_for_backward(spheres, pairs, argmin, grad_cost)
        return distance, cost

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_distance, grad_cost_out):
        if grad_distance is None and grad_cost_out is None:
            return None, None, None, None, None, None, None, None
        spheres, pairs, argmin, grad_cost = ctx.saved_tensors
        # one pass over [B, N, 4] for the cost (the usual case), not zeros + product + sum
        if grad_cost_out is not None:
            grad = grad_cost_out[:, None, None] * grad_cost
        else:
            grad = torch.zeros_like(spheres)
        if grad_distance is not None:
            # the minimum's gradient is that of its arg-min pair
            valid = argmin >= 0
            rows = valid.nonzero().flatten()
            if rows.numel():
                pair = pairs[argmin[rows].long()]
                i, j = pair[:, 0], pair[:, 1]
                delta = spheres[rows, i, :3] - spheres[rows, j, :3]
                length = delta.norm(dim=-1, keepdim=True)
                unit = torch.where(length > 0, delta / length.clamp_min(1e-30), 0.0)
                g = grad_distance[rows, None]
                grad_i = torch.cat((g * unit, -g), dim=-1)
                grad_j = torch.cat((-g * unit, -g), dim=-1)
                grad[rows, i] += grad_i
                grad[rows, j] += grad_j
        return grad, None, None, None, None, None, None, None


def _check_blocks(
    pairs: torch.Tensor, pair_blocks: torch.Tensor, sphere_groups: torch.Tensor, n: int
) -> None:
    for name, t, width in (("pair_blocks", pair_blocks, 4), ("sphere_groups", sphere_groups, 2)):
        if not isinstance(t, torch.Tensor) or t.dtype not in (torch.int32, torch.int64):
            raise InputTypeError(f"{name}: expected an integer tensor [K, {width}], received {t!r}")
        if t.ndim != 2 or t.shape[1] != width:
            raise InputValueError(f"{name}: expected shape [K, {width}], received {tuple(t.shape)}")
        if t.device != pairs.device:
            raise InputValueError(f"{name}: expected device {pairs.device}, received {t.device}")
    blocks, groups = pair_blocks.long(), sphere_groups.long()
    ends = torch.cat((blocks[:1, 0] * 0, blocks[:-1, 1]))
    if (
        blocks.shape[0] == 0
        or (blocks[:, 0] != ends).any()
        or (blocks[:, 1] < blocks[:, 0]).any()
        or blocks[-1, 1].item() != pairs.shape[0]
    ):
        raise InputValueError(
            f"pair_blocks: the blocks must cover pairs 0..{pairs.shape[0]} in order, each "
            "starting where the previous one ends"
        )
    if (
        groups.numel()
        and ((groups[:, 0] < 0) | (groups[:, 1] > n) | (groups[:, 1] < groups[:, 0])).any()
    ):
        raise InputValueError(f"sphere_groups: ranges must lie in [0, {n}]")
    culled = blocks[:, 2] >= 0
    if ((blocks[culled, 2:] >= groups.shape[0]).any(1) | (blocks[culled, 3] < 0)).any():
        raise InputValueError(f"pair_blocks: group indices must lie in [0, {groups.shape[0]})")
    if culled.any():
        owner = torch.repeat_interleave(
            torch.arange(blocks.shape[0], device=blocks.device), blocks[:, 1] - blocks[:, 0]
        )
        keep = culled[owner]
        lo_a, hi_a = groups[blocks[owner, 2], 0], groups[blocks[owner, 2], 1]
        lo_b, hi_b = groups[blocks[owner, 3], 0], groups[blocks[owner, 3], 1]
        i, j = pairs[:, 0].long(), pairs[:, 1].long()
        inside = ((i >= lo_a) & (i < hi_a) & (j >= lo_b) & (j < hi_b)) | (
            (j >= lo_a) & (j < hi_a) & (i >= lo_b) & (i < hi_b)
        )
        if (keep & ~inside).any():
            k = int((keep & ~inside).nonzero()[0])
            raise InputValueError(
                f"pair_blocks: pair {k} {pairs[k].tolist()} lies outside the sphere groups of "
                f"its block {blocks[owner[k]].tolist()}"
            )


def self_collision_distance(
    spheres: torch.Tensor,
    pairs: torch.Tensor,
    pair_buffer: torch.Tensor,
    activation_distance: float = 0.0,
    pair_blocks: torch.Tensor | None = None,
    sphere_groups: torch.Tensor | None = None,
) -> SelfCollisionDistance:
    """Minimum signed distance and penalty between sphere pairs (see the module docs).

    Args:
        spheres: ``[..., N, 4]`` centres ``xyz`` and radii (float32 or float64); a negative
            radius disables the sphere.
        pairs: ``[P, 2]`` integer sphere indices to check (e.g.
            ``Kinematics.self_collision_pairs``), on ``spheres``' device.
        pair_buffer: ``[P]`` metres added to the radii sum of each pair (e.g.
            ``Kinematics.self_collision_pair_buffer``), ``spheres``' dtype and device.
        activation_distance: ``eta >= 0``; pairs closer than ``eta`` are penalised.
        pair_blocks, sphere_groups: optional culling (same results, less work): ``pairs`` in
            blocks ``[K, 4]`` of ``(pair_begin, pair_end, group_a, group_b)`` covering the
            pairs in order, every pair of a block joining a sphere of ``group_a`` to one of
            ``group_b``, with ``sphere_groups [G, 2]`` the ``[begin, end)`` sphere range of
            each group (e.g. ``Kinematics.self_collision_blocks`` and ``.sphere_groups``: one
            group per link). A block whose groups' bounding spheres are farther apart than
            ``eta`` and the best distance so far is skipped. ``group_a = -1``: never skipped.

    Returns:
        :class:`SelfCollisionDistance` with ``distance [...]`` and ``cost [...]``.
    """
    _check_inputs(spheres, pairs, pair_buffer, activation_distance)
    wp.init()
    batch_shape = spheres.shape[:-2]
    flat = spheres.reshape(-1, spheres.shape[-2], 4)
    if not flat.is_contiguous():
        flat = flat.contiguous()
    pair_index = pairs.to(torch.int32).contiguous()
    blocks, block_buffer, groups = _block_tables(
        pairs, pair_buffer, pair_blocks, sphere_groups, spheres.shape[-2]
    )
    distance, cost = _SelfCollision.apply(
        flat,
        pair_index,
        pair_buffer.contiguous(),
        float(activation_distance),
        math.inf,
        blocks,
        block_buffer,
        groups,
    )
    return SelfCollisionDistance(distance.reshape(batch_shape), cost.reshape(batch_shape))


def _block_tables(
    pairs: torch.Tensor,
    pair_buffer: torch.Tensor,
    pair_blocks: torch.Tensor | None,
    sphere_groups: torch.Tensor | None,
    num_spheres: int,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(blocks, block_buffer, groups)`` for the kernel; one uncullable block without
    ``pair_blocks``."""
    if (pair_blocks is None) != (sphere_groups is None):
        raise InputValueError("pair_blocks and sphere_groups: give both or neither")
    if pair_blocks is not None and pair_blocks.shape[0] == 0 and pairs.shape[0] == 0:
        pair_blocks = sphere_groups = None  # nothing to check, nothing to cull
    if pair_blocks is None:
        index = {"dtype": torch.int32, "device": pairs.device}
        blocks = torch.tensor([[0, pairs.shape[0], -1, -1]], **index)
        return blocks, pair_buffer.new_zeros(1), torch.zeros(0, 2, **index)
    _check_blocks(pairs, pair_blocks, sphere_groups, num_spheres)
    blocks = pair_blocks.to(torch.int32).contiguous()
    groups = sphere_groups.to(torch.int32).contiguous()
    owner = torch.repeat_interleave(
        torch.arange(blocks.shape[0], device=pairs.device),
        (pair_blocks[:, 1] - pair_blocks[:, 0]).long(),
    )
    # the largest pair buffer of each block enters its culling test
    block_buffer = pair_buffer.new_full((blocks.shape[0],), -math.inf).scatter_reduce(
        0, owner, pair_buffer, "amax"
    )
    block_buffer = torch.where(torch.isinf(block_buffer), 0.0, block_buffer).contiguous()
    return blocks, block_buffer, groups


class SelfCollisionModel:
    """One robot's self-collision pairs, validated once, for the hot loops.

    :func:`self_collision_distance` checks its inputs on every call (index ranges, NaN), which
    reads values back to the host; this holds the same tables, checked at construction, so that
    :meth:`distance` does no host synchronisation (a NaN sphere gives a NaN result instead of an
    error, as the rollout expects). Pairs are culled by link-pair blocks as in
    :func:`self_collision_distance` (exact results).

    Args:
        pairs: ``[P, 2]`` sphere indices; pair_buffer: ``[P]`` metres;
        pair_blocks, sphere_groups: optional culling blocks (``Kinematics.self_collision_blocks``
            and ``.sphere_groups``).
        num_spheres: ``N``, the spheres per configuration.
    """

    def __init__(
        self,
        pairs: torch.Tensor,
        pair_buffer: torch.Tensor,
        num_spheres: int,
        pair_blocks: torch.Tensor | None = None,
        sphere_groups: torch.Tensor | None = None,
    ) -> None:
        probe = torch.zeros(1, num_spheres, 4, dtype=pair_buffer.dtype, device=pair_buffer.device)
        _check_inputs(probe, pairs, pair_buffer, 0.0)
        self.num_spheres = int(num_spheres)
        self.pairs = pairs.to(torch.int32).contiguous()
        self.pair_buffer = pair_buffer.contiguous()
        self.blocks, self.block_buffer, self.groups = _block_tables(
            pairs, pair_buffer, pair_blocks, sphere_groups, num_spheres
        )

    @classmethod
    def from_kinematics(cls, kinematics) -> SelfCollisionModel:
        """The pairs, buffers and culling blocks of a :class:`~curobo_lite.robot.Kinematics`."""
        return cls(
            kinematics.self_collision_pairs,
            kinematics.self_collision_pair_buffer,
            kinematics.num_spheres,
            kinematics.self_collision_blocks,
            kinematics.sphere_groups,
        )

    @property
    def num_pairs(self) -> int:
        return int(self.pairs.shape[0])

    def distance(
        self,
        spheres: torch.Tensor,
        activation_distance: float = 0.0,
        max_distance: float = math.inf,
    ) -> SelfCollisionDistance:
        """Self-collision of ``spheres [..., N, 4]`` (this robot's ``link_spheres``):
        ``distance [...]`` and ``cost [...]`` as :func:`self_collision_distance`.

        ``max_distance`` (metres, default ``inf``): distances are exact below it and a lower
        bound no smaller than it above; link pairs farther apart than it and the activation
        distance are then skipped without looking at their spheres (what makes the cost cheap:
        pass ``max_distance = activation_distance`` when only the cost is used). The cost is
        always exact."""
        if (
            not isinstance(spheres, torch.Tensor)
            or spheres.ndim < 2
            or (tuple(spheres.shape[-2:]) != (self.num_spheres, 4))
        ):
            raise InputValueError(
                f"spheres: expected shape [..., {self.num_spheres}, 4], received "
                f"{getattr(spheres, 'shape', type(spheres).__name__)}"
            )
        check_dtype_device("spheres", spheres, self.pair_buffer.dtype, self.pair_buffer.device)
        eta = float(activation_distance)
        if not (0.0 <= eta < math.inf):
            raise InputValueError(f"activation_distance: expected a number >= 0, received {eta!r}")
        reach = float(max_distance)
        if not reach > 0.0:
            raise InputValueError(f"max_distance: expected a number > 0, received {reach!r}")
        wp.init()
        batch_shape = spheres.shape[:-2]
        flat = spheres.reshape(-1, self.num_spheres, 4)
        if not flat.is_contiguous():
            flat = flat.contiguous()
        distance, cost = _SelfCollision.apply(
            flat,
            self.pairs,
            self.pair_buffer,
            eta,
            reach,
            self.blocks,
            self.block_buffer,
            self.groups,
        )
        return SelfCollisionDistance(distance.reshape(batch_shape), cost.reshape(batch_shape))


# the attributes of a robot.Kinematics that SelfCollisionChecker reads
_KINEMATICS_ATTRIBUTES = (
    "forward",
    "num_spheres",
    "robot_config",
    "self_collision_pairs",
    "self_collision_pair_buffer",
    "tables",
)


class SelfCollisionChecker:
    """Self-collision of joint positions for one robot.

    Args:
        kinematics: a :class:`~curobo_lite.robot.Kinematics` of a robot with collision spheres;
            its ``self_collision_pairs`` and ``self_collision_pair_buffer`` are used.
        activation_distance: ``eta`` of the penalty (metres, >= 0).
    """

    def __init__(self, kinematics, activation_distance: float = 0.0) -> None:
        # duck-typed (geom sits beside robot, not above it): what a Kinematics provides
        if any(not hasattr(kinematics, name) for name in _KINEMATICS_ATTRIBUTES):
            raise InputTypeError(
                f"kinematics: expected a Kinematics, received {type(kinematics).__name__}"
            )
        if kinematics.num_spheres == 0:
            raise InputValueError(
                f"kinematics: robot '{kinematics.robot_config.name}' has no collision spheres "
                "(add 'collision_spheres' to its robot file)"
            )
        _check_inputs(
            kinematics.tables.sphere_local[None],
            kinematics.self_collision_pairs,
            kinematics.self_collision_pair_buffer,
            activation_distance,
        )
        self.kinematics = kinematics
        self.activation_distance = float(activation_distance)

    @property
    def num_pairs(self) -> int:
        return int(self.kinematics.self_collision_pairs.shape[0])

    def distance_from_spheres(self, spheres: torch.Tensor) -> SelfCollisionDistance:
        """Self-collision of ``link_spheres [..., N, 4]`` from this robot's kinematics."""
        kin = self.kinematics
        return self_collision_distance(
            spheres,
            kin.self_collision_pairs,
            kin.self_collision_pair_buffer,
            self.activation_distance,
            kin.self_collision_blocks,
            kin.sphere_groups,
        )

    def __call__(self, q: torch.Tensor) -> SelfCollisionDistance:
        """Self-collision of joint positions ``q [..., D]`` (differentiable in ``q``)."""
        return self.distance_from_spheres(self.kinematics.forward(q).link_spheres)

    def __repr__(self) -> str:
        return (
            f"SelfCollisionChecker(robot={self.kinematics.robot_config.name!r}, "
            f"spheres={self.kinematics.num_spheres}, pairs={self.num_pairs}, "
            f"activation_distance={self.activation_distance})"
        )
