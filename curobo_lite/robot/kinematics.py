"""Batched, differentiable forward kinematics and geometric Jacobian of a serial chain.

The chain from ``base_link`` to ``ee_link`` is reduced at construction to ``M`` moving joints,
each with one constant origin transform (fixed joints folded into the next moving joint's
origin) and, when the chain ends with fixed joints, a constant end-effector offset. Frames are
carried as (position, unit ``wxyz`` quaternion); no matrix-to-quaternion conversion is needed.

Two backends compute the same thing (they agree to rounding) from the same constant tables
(:class:`ChainTables`, :mod:`curobo_lite.robot.kinematics_tables`):

- ``"warp"`` (default): one Warp kernel, one thread per configuration (``fk_kernels``).
- ``"torch"``: batched over configurations in a component-major layout
  (:mod:`curobo_lite.robot.kinematics_torch`: GEMMs and element-wise ops, Python loops over
  joints, never the batch).

Both use the same analytic backward (see :func:`~curobo_lite.robot.kinematics_torch.grad_q_torch`):
for a revolute joint with base-frame axis ``z_j``, ``dp_k/dt_j = z_j x (p_k - p_j)`` and
``dq_k/dt_j = 0.5 (0, z_j) (x) q_k``, summed over later links with suffix sums, so FK + backward
costs about two forward passes and no autograd graph is recorded inside FK. It is first-order
only (double backward raises).

Measured on the 2-core development CPU (Franka, float32, ``benchmarks/kinematics.py``): Warp was
faster for FK + backward at N = 1000 and 12000, and the two were close for FK alone at
N = 12000; on CUDA, Warp's single launch replaces ~60 small kernel launches.
"""

from __future__ import annotations

import torch
import warp as wp
from torch.autograd.function import once_differentiable

from curobo_lite.kernels.launch import as_warp, launch_rows
from curobo_lite.robot import fk_kernels
from curobo_lite.robot.config import RobotConfig
from curobo_lite.robot.geometry import rotate_quadratic_form_np
from curobo_lite.robot.kinematics_state import KinematicsBuffers, KinematicsState
from curobo_lite.robot.kinematics_tables import build_chain_tables
from curobo_lite.robot.kinematics_torch import frames_torch, grad_q_torch, spheres_torch
from curobo_lite.types import TensorDeviceType, check_dtype_device, quat_rotate
from curobo_lite.types.checks import finite_checks, require_finite
from curobo_lite.types.errors import InputTypeError, InputValueError


def _like(t: torch.Tensor) -> dict:
    return {"device": t.device, "dtype": t.dtype}


class Kinematics:
    """Forward kinematics and Jacobian of ``robot_config``'s base-to-end-effector chain.

    Args:
        robot_config: a validated :class:`RobotConfig`.
        tensor_args: device and dtype of the constants and of accepted ``q``; defaults to
            ``robot_config.tensor_args``.
        backend: ``"warp"`` (one fused Warp kernel per pass, forward and hand-written exact
            adjoint; the default, measured faster on CPU) or ``"torch"`` (batched GEMMs and
            element-wise ops with the same analytic backward). Both are device-generic.
    """

    BACKENDS = ("warp", "torch")

    def __init__(
        self,
        robot_config: RobotConfig,
        tensor_args: TensorDeviceType | None = None,
        backend: str = "warp",
    ) -> None:
        if not isinstance(robot_config, RobotConfig):
            raise InputTypeError(
                f"robot_config: expected a RobotConfig, received {type(robot_config).__name__}"
            )
        if backend not in self.BACKENDS:
            raise InputValueError(f"backend: expected one of {self.BACKENDS}, received {backend!r}")
        self.backend = backend
        self.robot_config = robot_config
        self.tensor_args = tensor_args or robot_config.tensor_args
        self.joint_names = list(robot_config.joint_names)
        self.base_link = robot_config.base_link
        self.ee_link = robot_config.ee_link
        #: the constant tables of the chain and the spheres (:class:`ChainTables`)
        self.tables = build_chain_tables(robot_config, self.tensor_args)
        self.link_names = self.tables.link_names
        self.num_moving = self.tables.num_moving
        self.sphere_link_names = self.tables.sphere_link_names
        self.sphere_groups = self.tables.sphere_groups
        self.self_collision_pairs = self.tables.self_collision_pairs
        self.self_collision_pair_buffer = self.tables.self_collision_pair_buffer
        self.self_collision_blocks = self.tables.self_collision_blocks
        #: ``[S]`` bool: the sphere is checked against the world (see :meth:`world_spheres`)
        self.sphere_world_mask = self.tables.sphere_world_mask
        # world_spheres as one fused op: radius * 0 - 1 for the spheres left out
        left_out = ~self.sphere_world_mask
        self._world_scale = self.tensor_args.to_device(torch.ones(self.num_spheres, 4))
        self._world_scale[left_out, 3] = 0.0
        self._world_shift = self.tensor_args.to_device(torch.zeros(self.num_spheres, 4))
        self._world_shift[left_out, 3] = -1.0
        self._world_all = not bool(left_out.any())
        self.sphere_group_frames = self._group_frames()
        if backend == "warp":
            wp.init()

    def _group_frames(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """int32 ``(group_start [G + 1], group_frame [G], world_mask [S])`` on the device: the
        sphere ranges of the links (:attr:`sphere_groups`), the frame each link's spheres ride
        on (-1 the base, ``f`` link frame ``f``) and :attr:`sphere_world_mask`, for kernels
        that place the spheres from the link frames themselves."""
        groups = self.tables.sphere_groups.cpu().reshape(-1, 2)
        start = self.tables.sphere_start.cpu()
        # spheres are sorted by frame: frame f's are start[f + 1] .. start[f + 2] (f = -1 base)
        frame = torch.searchsorted(start[1:].contiguous(), groups[:, 0].contiguous(), right=True)
        index = {"dtype": torch.int32, "device": self.tensor_args.device}
        group_start = torch.cat((groups[:, 0], groups[-1:, 1])) if len(groups) else groups[:1, 0]
        return (
            group_start.to(**index),
            (frame - 1).to(**index),
            self.tables.sphere_world_mask.to(**index),
        )

    # properties -----------------------------------------------------------------------------------
    @property
    def dof(self) -> int:
        return len(self.joint_names)

    @property
    def num_spheres(self) -> int:
        """``S``: the number of collision spheres (0 when the robot has none)."""
        return len(self.sphere_link_names)

    def reserved_spheres(self, link: str) -> tuple[int, int]:
        """``[begin, end)``: the rows of ``link``'s reserved spheres (the robot file's
        ``extra_collision_spheres``) among the ``S`` spheres."""
        collision = self.robot_config.collision
        count = 0 if collision is None else collision.extra_spheres.get(link, 0)
        if count == 0:
            reserved = {} if collision is None else collision.extra_spheres
            raise InputValueError(
                f"link_name: expected a link with reserved spheres (extra_collision_spheres: "
                f"{reserved}), received {link!r}"
            )
        end = max(i for i, name in enumerate(self.sphere_link_names) if name == link) + 1
        return end - count, end

    @torch.no_grad()
    def set_reserved_spheres(self, link: str, spheres: torch.Tensor | None) -> None:
        """Write ``spheres [n, 4]`` (centres in ``link``'s frame, radii) into ``link``'s
        reserved spheres, in place (graphs and buffers stay valid); the rest of them, or all
        with ``None``, are disabled (radius -1). The robot file's ``collision_sphere_buffer``
        is added to the radii, as for every sphere."""
        begin, end = self.reserved_spheres(link)
        tables = self.tables
        rows = torch.zeros(end - begin, 4, dtype=torch.float64)
        rows[:, 3] = -1.0
        if spheres is not None:
            spheres = torch.as_tensor(spheres, dtype=torch.float64).cpu()
            if spheres.ndim != 2 or spheres.shape[1] != 4 or spheres.shape[0] > end - begin:
                raise InputValueError(
                    f"spheres: expected [n <= {end - begin}, 4] (the reserved spheres of "
                    f"{link!r}), received {tuple(spheres.shape)}"
                )
            if not bool(torch.isfinite(spheres).all()) or bool((spheres[:, 3] <= 0).any()):
                raise InputValueError("spheres: expected finite centres and radii > 0")
            frame, to_frame = tables.sphere_link_frames[link]
            transform = torch.as_tensor(to_frame)
            n = spheres.shape[0]
            rows[:n, :3] = spheres[:, :3] @ transform[:3, :3].T + transform[:3, 3]
            rows[:n, 3] = spheres[:, 3]
        buffer = self.robot_config.collision.sphere_buffer
        rows[:, 3] += buffer
        tables.sphere_local[begin:end] = rows.to(tables.sphere_local)
        # the torch backend's per-frame quadratic forms of the same centres
        for _, first, last, form in tables.sphere_forms:
            for i in range(max(begin, first), min(end, last)):
                centre = rows[i - begin, :3].numpy()
                block = torch.as_tensor(rotate_quadratic_form_np(centre))
                form[:, 3 * (i - first) : 3 * (i - first + 1)] = block.to(form)

    def world_spheres(self, link_spheres: torch.Tensor | None) -> torch.Tensor | None:
        """``link_spheres [..., S, 4]`` as the world checks see them: spheres of links that no
        active joint moves (``sphere_world_mask`` False) get radius -1, which disables a sphere
        in every world query (cuRobo's convention). The same tensor when every sphere is
        checked; differentiable (the disabled spheres get no gradient)."""
        if self._world_all or link_spheres is None:
            return link_spheres
        return torch.addcmul(self._world_shift, link_spheres, self._world_scale)

    # core -------------------------------------------------------------------------------------
    def _flatten(self, q: torch.Tensor, name: str = "q") -> tuple[torch.Tensor, torch.Size]:
        if not isinstance(q, torch.Tensor):
            raise InputTypeError(
                f"{name}: expected a torch.Tensor [..., {self.dof}], received {type(q)}"
            )
        if q.ndim < 1 or q.shape[-1] != self.dof:
            raise InputValueError(
                f"{name}: expected shape [..., {self.dof}] (joints {self.joint_names}), "
                f"received {tuple(q.shape)}"
            )
        check_dtype_device(name, q, self.tensor_args.dtype, self.tensor_args.device)
        return q.reshape(-1, self.dof), q.shape[:-1]

    def _sphere_arrays(self, spheres: bool) -> tuple[torch.Tensor, torch.Tensor]:
        """``(sphere_local [S, 4], sphere_start [M + 2])``, empty when spheres are off."""
        if spheres:
            return self.tables.sphere_local, self.tables.sphere_start
        return self.tables.sphere_local[:0], torch.zeros_like(self.tables.sphere_start)

    def allocate_outputs(self, n: int, spheres: bool = True) -> KinematicsBuffers:
        """Output buffers for :meth:`forward` of ``n`` configurations (``spheres``: room for
        the collision spheres, when the robot has them)."""
        spheres = bool(spheres) and self.num_spheres > 0
        local, _ = self._sphere_arrays(spheres)
        kwargs = self.tensor_args.as_kwargs()
        return KinematicsBuffers(
            torch.empty(n, len(self.link_names), 3, **kwargs),
            torch.empty(n, len(self.link_names), 4, **kwargs),
            # the base-frame joint axes serve only the backward pass, which buffers never see
            torch.empty(n, 0, 3, **kwargs),
            torch.empty(n, local.shape[0], 4, **kwargs),
        )

    def _frames_warp(
        self, q: torch.Tensor, spheres: bool = False, out: KinematicsBuffers | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Link frames ``[N, L, 3]``, ``[N, L, 4]``, base-frame axes ``[N, M, 3]`` and
        spheres ``[N, S, 4]`` (``S = 0`` unless ``spheres``), written into ``out`` if given.
        The axes (which only the backward pass reads) are written when the axis buffer has
        room for them: :meth:`allocate_outputs` leaves none."""
        n, num_links = q.shape[0], len(self.link_names)
        local, start = self._sphere_arrays(spheres)
        if out is None:
            out = self.allocate_outputs(n, spheres)
            out.joint_axis = torch.empty(n, self.num_moving, 3, **_like(q))
        position, quat = out.link_position, out.link_quaternion
        axis, link_spheres = out.joint_axis, out.link_spheres
        write_axis = int(axis.shape[1] > 0)
        sphere_inputs = [as_warp(local), as_warp(start)]
        c = self.tables.wp_chain
        chain = [
            as_warp(t)
            for t in (
                c["origin"],
                c["axis"],
                c["scale"],
                c["offset"],
                c["source"],
                c["joint_type"],
                c["ee_origin"],
            )
        ]
        has_ee = int(self.tables.ee_offset is not None)
        lanes = fk_kernels.forward_lanes(q.device, q.dtype)
        kernel = fk_kernels.fk_forward_lanes if lanes else fk_kernels.kernel_for("forward", q.dtype)

        def make_launch(b0: int, b1: int):
            rows = slice(b0, b1)
            outputs = (as_warp(t[rows]) for t in (position, quat, axis, link_spheres))
            inputs = [
                as_warp(q[rows]),
                *chain,
                self.num_moving,
                has_ee,
                write_axis,
                *sphere_inputs,
                *outputs,
            ]
            if lanes:
                return -(-(b1 - b0) // fk_kernels.LANES), [*inputs, b1 - b0]
            return b1 - b0, inputs

        work = n * (num_links * 16 + local.shape[0] * 4)
        launch_rows(kernel, n, q.device, make_launch, work)
        return position, quat, axis, link_spheres

    def _grad_q_warp(
        self,
        position: torch.Tensor,
        quat: torch.Tensor,
        axis: torch.Tensor,
        link_spheres: torch.Tensor,
        grad_position: torch.Tensor,
        grad_quat: torch.Tensor,
        grad_spheres: torch.Tensor,
    ) -> torch.Tensor:
        """``[N, D]`` gradient from row-major link frames, spheres and their gradients."""
        n = position.shape[0]
        grad = torch.zeros(n, self.dof, **_like(position))
        c = self.tables.wp_chain
        constants = [as_warp(t) for t in (c["scale"], c["source"], c["joint_type"])]
        num_links = len(self.link_names)
        _, start = self._sphere_arrays(link_spheres.shape[1] > 0)
        start = as_warp(start)

        def make_launch(b0: int, b1: int):
            rows = slice(b0, b1)
            frames = (
                as_warp(t[rows])
                for t in (
                    position,
                    quat,
                    axis,
                    grad_position,
                    grad_quat,
                    link_spheres,
                    grad_spheres,
                )
            )
            return b1 - b0, [
                *frames,
                start,
                *constants,
                self.num_moving,
                num_links,
                as_warp(grad[rows]),
            ]

        launch_rows(
            fk_kernels.kernel_for("adjoint", position.dtype),
            n,
            position.device,
            make_launch,
            n * (num_links * 16 + link_spheres.shape[1] * 4),
        )
        return grad

    def _link_frames(
        self, q: torch.Tensor, spheres: bool = False, out: KinematicsBuffers | None = None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, tuple]:
        """``(position [N, L, 3], quaternion [N, L, 4], spheres [N, S, 4], saved)`` without
        autograd. Only the Warp backend fuses the spheres (``S = 0`` otherwise) and writes
        into ``out``."""
        if self.backend == "warp":
            position, quat, axis, link_spheres = self._frames_warp(q, spheres, out)
            return position, quat, link_spheres, (position, quat, axis, link_spheres)
        position, quat, axis = frames_torch(self.tables, q)
        outputs = position.permute(2, 0, 1).contiguous(), quat.permute(2, 0, 1).contiguous()
        return *outputs, q.new_empty(q.shape[0], 0, 4), (position, quat, axis)

    def _link_frames_grad(
        self,
        saved: tuple,
        grad_position: torch.Tensor,
        grad_quat: torch.Tensor,
        grad_spheres: torch.Tensor,
    ) -> torch.Tensor:
        """``[N, D]`` vector-Jacobian product of :meth:`_link_frames`."""
        if self.backend == "warp":
            position, quat, axis, link_spheres = saved
            return self._grad_q_warp(
                position,
                quat,
                axis,
                link_spheres,
                grad_position.contiguous(),
                grad_quat.contiguous(),
                grad_spheres.contiguous(),
            )
        grad = grad_q_torch(
            self.tables,
            *saved,
            grad_position.permute(1, 2, 0).contiguous(),
            grad_quat.permute(1, 2, 0).contiguous(),
        )
        return grad.t()

    def forward(
        self,
        q: torch.Tensor,
        spheres: bool = True,
        out: KinematicsBuffers | None = None,
        check_finite: bool | None = None,
    ) -> KinematicsState:
        """Link and end-effector poses in the base frame, and the collision spheres.

        Differentiable with respect to ``q`` (exact analytic backward; first order only).
        ``q`` is not checked for NaN/inf by default: they propagate to the outputs, as in
        torch ops, with no device sync; ``check_finite=True`` (a debug option; default: the
        environment variable ``CUROBO_LITE_CHECK_FINITE``) raises an ``InputValueError``
        naming ``q`` and the first bad index instead.

        Args:
            q: ``[..., D]`` joint positions (e.g. ``[N, D]`` or trajectories ``[N, H, D]``), on
                this object's device and dtype.
            spheres: compute ``link_spheres`` (when the robot has spheres); pass ``False`` to
                skip them when only poses are needed.
            out: buffers from :meth:`allocate_outputs` for ``N = q.numel() / D`` (and the same
                ``spheres``) to write into: the returned tensors are views of them, overwritten
                by the next call with the same buffers. Only where no gradient is taken (grad
                mode off, or ``q`` not requiring grad): a backward pass would read frames a
                later call overwrote.

        Returns:
            :class:`KinematicsState` with ``ee_position [..., 3]``, ``ee_quaternion [..., 4]``
            (``wxyz``, ``w >= 0``), ``link_position [..., L, 3]``, ``link_quaternion [..., L, 4]``
            and ``link_spheres [..., S, 4]`` (or ``None``).
        """
        flat, batch_shape = self._flatten(q)
        if finite_checks(check_finite):
            require_finite("q", q)
        spheres = bool(spheres) and self.num_spheres > 0
        if out is None:
            position, quat, link_spheres = _LinkFrames.apply(flat, self, spheres)
        else:
            self._check_outputs(out, flat, spheres)
            position, quat, link_spheres, _ = self._link_frames(flat.detach(), spheres, out)
        if spheres and self.backend == "torch":
            link_spheres = spheres_torch(self.tables, position, quat)
        return self._state(position, quat, link_spheres if spheres else None, batch_shape)

    __call__ = forward

    def _state(
        self, position: torch.Tensor, quat: torch.Tensor, spheres: torch.Tensor | None, shape
    ) -> KinematicsState:
        """The state of flat frames ``[N, L, 3|4]`` and spheres ``[N, S, 4]`` in ``shape``."""
        num_links = len(self.link_names)
        position, quat = position.reshape(*shape, num_links, 3), quat.reshape(*shape, num_links, 4)
        spheres = None if spheres is None else spheres.reshape(*shape, self.num_spheres, 4)
        names = list(self.link_names)
        return KinematicsState(
            position[..., -1, :], quat[..., -1, :], position, quat, names, spheres
        )

    def forward_rows(
        self, q: torch.Tensor, out: KinematicsBuffers, rows: tuple[int, int], spheres: bool = True
    ) -> None:
        """:meth:`forward` of rows ``rows = (begin, end)`` of ``q [N, D]`` into the same rows of
        ``out`` (for ``N``), so that threads can share a pass; read it with
        :meth:`outputs_state`. Warp backend, no gradient."""
        if self.backend != "warp":
            raise InputValueError(f"forward_rows: expected the warp backend, not {self.backend!r}")
        part = KinematicsBuffers(*(t[rows[0] : rows[1]] for t in vars(out).values()))
        self.forward(q[rows[0] : rows[1]], spheres, out=part)

    def outputs_state(self, out: KinematicsBuffers, shape, spheres: bool = True) -> KinematicsState:
        """:meth:`forward`'s result from the buffers :meth:`forward_rows` filled, in ``shape``."""
        spheres = bool(spheres) and self.num_spheres > 0
        return self._state(
            out.link_position, out.link_quaternion, out.link_spheres if spheres else None, shape
        )

    def _check_outputs(self, out: KinematicsBuffers, flat: torch.Tensor, spheres: bool) -> None:
        if not isinstance(out, KinematicsBuffers):
            raise InputTypeError(
                f"out: expected KinematicsBuffers (allocate_outputs), received {type(out).__name__}"
            )
        if torch.is_grad_enabled() and flat.requires_grad:
            raise InputValueError(
                "out: expected no gradient to be taken (grad mode off or q not requiring grad), "
                "received q that requires grad"
            )
        if not out.fits(flat.shape[0], spheres):
            has = "with" if out.link_spheres.shape[1] else "without"
            raise InputValueError(
                f"out: expected buffers for {flat.shape[0]} configurations "
                f"({'with' if spheres else 'without'} spheres), received "
                f"{out.link_position.shape[0]} ({has} spheres)"
            )
        check_dtype_device("out", out.link_position, flat.dtype, flat.device)

    def jacobian(self, q: torch.Tensor) -> torch.Tensor:
        """Geometric Jacobian of the end effector in the base frame (differentiable).

        Args:
            q: ``[..., D]`` joint positions.

        Returns:
            ``[..., 6, D]``: rows 0-2 map joint velocities to the linear velocity of the
            end-effector origin, rows 3-5 to the angular velocity, both in the base frame.
            Mimic joints add ``multiplier`` times their column to the joint they follow.
        """
        return self.jacobian_and_pose(q)[0]

    def jacobian_and_pose(self, q: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """:meth:`jacobian` ``[..., 6, D]`` and the end-effector pose it was taken at,
        ``ee_position [..., 3]`` and ``ee_quaternion [..., 4]`` (as :meth:`forward`'s), from
        one pass of forward kinematics (a Newton step needs both)."""
        flat, batch_shape = self._flatten(q)
        position, quat, _ = _LinkFrames.apply(flat, self, False)
        m = self.num_moving
        axes = quat_rotate(quat[:, :m], self.tables.axes.expand(flat.shape[0], m, 3))
        lever = position[:, -1:] - position[:, :m]
        revolute = self.tables.revolute_mask[:, None]
        linear = torch.where(revolute, torch.linalg.cross(axes, lever, dim=-1), axes)
        angular = axes * revolute
        columns = torch.cat((linear, angular), dim=-1)  # [N, M, 6]
        jac = columns.transpose(1, 2) @ self.tables.jacobian_map
        return (
            jac.reshape(*batch_shape, 6, self.dof),
            position[:, -1].reshape(*batch_shape, 3),
            quat[:, -1].reshape(*batch_shape, 4),
        )

    def __repr__(self) -> str:
        return (
            f"Kinematics(robot={self.robot_config.name!r}, dof={self.dof}, "
            f"base_link={self.base_link!r}, ee_link={self.ee_link!r}, "
            f"links={len(self.link_names)}, {self.tensor_args})"
        )


class _LinkFrames(torch.autograd.Function):
    """``q [N, D] -> (link_position [N, L, 3], link_quaternion [N, L, 4], spheres [N, S, 4])``
    with exact backward; ``S = 0`` unless ``spheres`` and the Warp backend (which fuses them)."""

    @staticmethod
    def forward(ctx, q: torch.Tensor, kinematics: Kinematics, spheres: bool):
        # outputs the loss does not use arrive as None: unused spheres cost no backward work
        ctx.set_materialize_grads(False)
        position, quat, link_spheres, saved = kinematics._link_frames(q.detach(), spheres)
        ctx.kinematics = kinematics
        ctx.frame_shapes = (position.shape, quat.shape)
        ctx.save_for_backward(*saved)
        return position, quat, link_spheres

    @staticmethod
    @once_differentiable
    def backward(
        ctx,
        grad_position: torch.Tensor | None,
        grad_quat: torch.Tensor | None,
        grad_spheres: torch.Tensor | None,
    ):
        saved = ctx.saved_tensors
        like = {"dtype": saved[0].dtype, "device": saved[0].device}
        if grad_position is None:
            grad_position = torch.zeros(ctx.frame_shapes[0], **like)
        if grad_quat is None:
            grad_quat = torch.zeros(ctx.frame_shapes[1], **like)
        if ctx.kinematics.backend == "warp":
            link_spheres = saved[3]
            if grad_spheres is None:
                # no sphere gradient: run the adjoint without its sphere loop
                link_spheres = link_spheres[:, :0]
                grad_spheres = link_spheres
                saved = (*saved[:3], link_spheres)
        grad = ctx.kinematics._link_frames_grad(saved, grad_position, grad_quat, grad_spheres)
        return grad, None, None
