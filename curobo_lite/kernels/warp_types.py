"""Warp array annotations shared by the kernels and their ``wp.func`` helpers.

``Array1``, ``Array2`` and ``Array3`` are generic over the scalar type: a parameter so annotated
takes a 1-, 2- or 3-D array of float32 or float64, and each kernel's overloads (one per scalar
type) fix which. ``IndexArray`` and ``IndexArray2`` hold int32 indices (joint sources, sphere
pairs, culling blocks).
"""

from __future__ import annotations

from typing import Any

import warp as wp

Array1 = wp.array(dtype=Any)
Array2 = wp.array2d(dtype=Any)
Array3 = wp.array3d(dtype=Any)
IndexArray = wp.array(dtype=wp.int32)
IndexArray2 = wp.array2d(dtype=wp.int32)
