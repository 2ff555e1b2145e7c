"""Warp array annotations shared by the kernels and their ``wp.func`` helpers.

``Array1``, ``Array2`` and ``Array3`` are generic over the scalar type: a parameter so annotated
takes a 1-, 2- or 3-D array of float32 or float64, and each kernel's overloads (one per scalar
type) fix which. ``IndexArray`` and ``IndexArray2`` hold int32 indices (joint sources, sphere
pairs, culling blocks). :func:`scalar_overloads` registers a generic kernel's two overloads.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch
import warp as wp

Array1 = wp.array(dtype=Any)
Array2 = wp.array2d(dtype=Any)
Array3 = wp.array3d(dtype=Any)
IndexArray = wp.array(dtype=wp.int32)
IndexArray2 = wp.array2d(dtype=wp.int32)

#: the Warp scalar of each torch float dtype the kernels take
SCALAR_TYPES = {torch.float32: wp.float32, torch.float64: wp.float64}


def scalar_overloads(
    kernel: wp.Kernel, signature: Callable[[type], list]
) -> Callable[[torch.dtype], wp.Kernel]:
    """Register ``kernel``'s float32 and float64 overloads (``signature(scalar)``: the argument
    types of each) and return the cached lookup of the overload for a torch dtype."""
    for scalar in SCALAR_TYPES.values():
        wp.overload(kernel, signature(scalar))

    @functools.cache
    def for_dtype(dtype: torch.dtype) -> wp.Kernel:
        return kernel.get_overload(signature(SCALAR_TYPES[dtype]))

    return for_dtype
