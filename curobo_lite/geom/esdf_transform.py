"""The ESDF refresh of :class:`~curobo_lite.geom.voxel_world.VoxelWorld`: the distance
transform's buffers and its three launches (kernels in :mod:`curobo_lite.kernels.edt_kernels`).
"""

from __future__ import annotations

import ctypes
import math

import torch

from curobo_lite.kernels import edt_kernels as edt
from curobo_lite.kernels import voxel_kernels as vk
from curobo_lite.kernels.launch import as_warp, launch_rows

#: row pieces per CPU thread of a split launch (``launch_rows``): fine enough that the threads
#: end together on a grid whose surfaces lie in one part, coarse enough that the launches'
#: overhead (~30 us each) stays small
PIECES_PER_CPU_THREAD = 4


class EsdfTransform:
    """The signed distance field of an occupancy grid ``[nx, ny, nz]`` (contiguous, float32),
    with the transform's scratch buffers allocated once (about 24 bytes per voxel).

    Args:
        shape: ``(nx, ny, nz)`` voxels.
        device: the grids' device.
    """

    def __init__(self, shape: tuple[int, int, int], device: torch.device) -> None:
        nx, ny, nz = shape
        count = nx * ny * nz
        floats = {"device": device, "dtype": torch.float32}
        ints = {"device": device, "dtype": torch.int32}
        self.shape = shape
        self.device = device
        self._outside = torch.empty(count, **floats)
        self._inside = torch.empty(count, **floats)
        # a parabola envelope (4 ints per voxel) and a window (1 float) per line
        self._envelopes = torch.empty(4 * (count + nx * max(ny, nz)), **ints)
        self._windows = torch.empty(count, **floats)
        # the y and z lines holding deep occupied voxels; whether any voxel, and any on each
        # level z, is occupied
        self._flags = torch.empty(nx * nz + nx * ny + 1 + nz, **ints)

    def run(
        self,
        occupancy: torch.Tensor,
        esdf: torch.Tensor,
        voxel_size: float,
        max_distance: float = math.inf,
    ) -> None:
        """Write into ``esdf [nx, ny, nz]`` the signed distance (metres) of ``occupancy
        [nx, ny, nz]`` (occupied from :data:`~curobo_lite.kernels.voxel_kernels.OCCUPIED`):
        at a free voxel the distance from its centre to the nearest occupied voxel's centre
        (capped at ``max_distance``; values from ``FAR`` where nothing is occupied), at an
        occupied one minus (the distance to the nearest free voxel's centre less one voxel)."""
        nx, ny, nz = self.shape
        count = nx * ny * nz
        device = self.device
        flags = self._flags
        if device.type == "cuda":
            flags.zero_()  # on torch's stream, which the launches use
        else:
            # one thread's memset: torch's fill of these ~40 k ints runs on its thread pool,
            # whose threads then spin for a while, taking a core from the launches below
            ctypes.memset(flags.data_ptr(), 0, flags.numel() * flags.element_size())
        deep_y, deep_z, seen = (
            as_warp(flags[: nx * nz]), as_warp(flags[nx * nz : nx * (nz + ny)]),
            as_warp(flags[nx * (nz + ny) :]),
        )  # fmt: skip
        cells = as_warp(occupancy.view(-1))
        fields = [as_warp(self._outside), as_warp(self._inside)]
        scratch = [as_warp(self._envelopes), as_warp(self._windows)]
        trunc = max_distance / voxel_size
        trunc2 = edt.NO_TRUNCATION
        if trunc < math.inf:
            trunc2 = min(math.floor(trunc * trunc), edt.NO_TRUNCATION)
        far = min(max_distance, 2.0 * vk.FAR)
        out = as_warp(esdf.view(-1))
        # a CPU launch runs its lines one after another: they share its first line's scratch
        # (kept in the L1 cache); CUDA threads each take their own line's
        cpu = device.type != "cuda"

        def pass_x(b0: int, b1: int) -> tuple[int, list]:
            slot = b0 if cpu else -1
            return b1 - b0, [
                cells, nx, ny, nz, trunc, b0, slot, *fields, deep_y, deep_z, seen, scratch[0],
            ]  # fmt: skip

        def pass_y(b0: int, b1: int) -> tuple[int, list]:
            slot = b0 if cpu else -1
            return b1 - b0, [*fields, nx, ny, nz, trunc2, b0, slot, seen, deep_y, *scratch]

        def pass_z(b0: int, b1: int) -> tuple[int, list]:
            slot = b0 if cpu else -1
            return b1 - b0, [
                *fields, nz, trunc2, far, voxel_size, seen, b0, slot, deep_z, *scratch, out,
            ]  # fmt: skip

        # lines cost unevenly (those through surfaces most): CPU threads take pieces in turn
        pieces = PIECES_PER_CPU_THREAD
        launch_rows(edt.edt_pass_x, ny * nz, device, pass_x, count * 4, pieces)
        launch_rows(edt.edt_pass_y, nx * nz, device, pass_y, count * 8, pieces)
        launch_rows(edt.edt_pass_z, nx * ny, device, pass_z, count * 8, pieces)
