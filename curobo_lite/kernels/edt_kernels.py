"""Warp kernels of the exact Euclidean distance transform of a voxel grid's occupancy (the
ESDF of :mod:`curobo_lite.geom.voxel_world`).

Felzenszwalb and Huttenlocher's separable transform ("Distance transforms of sampled
functions", 2012), one thread per grid line: ``f(q) <- min_p (q - p)^2 + f(p)``, the lower
envelope of parabolas in ``O(n)``. Run along the three axes on ``f = 0`` at the sites and
``INF`` elsewhere it gives the squared distance (voxel units) from every voxel centre to the
nearest site centre, exactly. Two fields go through each pass: the distance to occupied voxels
and the distance to free ones (for the sign).

- :func:`edt_first_pass`: the first axis, straight from the occupancy (two sweeps per line);
- :func:`edt_pass`: each further axis;
- :func:`edt_finish`: the signed distance in metres.
"""

from __future__ import annotations

import warp as wp

from curobo_lite.kernels.voxel_kernels import OCCUPIED

wp.config.log_level = 30  # WARNING
wp.set_module_options({"enable_backward": False})

#: squared distance of a voxel with no site on its line (float32-safe, sqrt(INF) * v finite)
INF = 1.0e20
#: lines whose squared distances stay at or below this take the windowed exact minimum
SMALL = 16.0


@wp.kernel
def edt_first_pass(
    occupancy: wp.array(dtype=wp.float32),
    n: int,
    stride: int,
    count_b: int,
    stride_a: int,
    stride_b: int,
    line_offset: int,
    outside: wp.array(dtype=wp.float32),
    inside: wp.array(dtype=wp.float32),
):
    """The first axis of the transform straight from the occupancy (lines as in
    :func:`edt_pass`): two sweeps give each voxel's distance along its line to the nearest
    occupied voxel (``outside``) and the nearest free one (``inside``), squared; ``INF``
    where the line has none."""
    line = wp.tid() + line_offset
    a = line / count_b
    b = line - a * count_b
    first = a * stride_a + b * stride_b
    far = n + n + 2
    last_occupied = -far
    last_free = -far
    q = wp.int32(0)
    index = first
    while q < n:
        if occupancy[index] >= OCCUPIED:
            last_occupied = q
        else:
            last_free = q
        outside[index] = float(q - last_occupied)
        inside[index] = float(q - last_free)
        q += 1
        index += stride
    next_occupied = far + n
    next_free = far + n
    q = n - 1
    index = first + (n - 1) * stride
    while q >= 0:
        if occupancy[index] >= OCCUPIED:
            next_occupied = q
        else:
            next_free = q
        d = wp.min(outside[index], float(next_occupied - q))
        outside[index] = wp.where(d < float(n), d * d, INF)
        d = wp.min(inside[index], float(next_free - q))
        inside[index] = wp.where(d < float(n), d * d, INF)
        q -= 1
        index -= stride


@wp.kernel
def edt_finish(
    occupancy: wp.array(dtype=wp.float32),
    outside: wp.array(dtype=wp.float32),
    inside: wp.array(dtype=wp.float32),
    voxel: float,
    offset: int,
    end: int,
    per_thread: int,
    esdf: wp.array(dtype=wp.float32),
):
    """Signed distance from the squared transforms (voxel units): ``v sqrt(outside)`` at a
    free voxel, ``-v (sqrt(inside) - 1)`` at an occupied one (0 on an occupied voxel next to
    a free one: the zero level runs through the centres of the boundary voxels, where a
    measured surface lies on average). Elements as in :func:`carve_projective`."""
    first = wp.tid() * per_thread + offset
    for i in range(first, wp.min(first + per_thread, end)):
        if occupancy[i] >= OCCUPIED:
            esdf[i] = -voxel * (wp.sqrt(inside[i]) - 1.0)
        else:
            esdf[i] = voxel * wp.sqrt(outside[i])


@wp.func
def _edt_line(
    f: wp.array(dtype=wp.float32),
    first: int,
    stride: int,
    n: int,
    line: int,
    sites: wp.array(dtype=wp.int32),
    values: wp.array(dtype=wp.float32),
    bounds: wp.array(dtype=wp.int32),
    scan: bool,
):
    """Felzenszwalb's 1-D transform, in place, of the line ``f[first + q * stride]``,
    ``q < n``; ``sites``/``values`` (``n`` per line) hold the envelope's parabolas, ``bounds``
    (``2 (n + 1)``) where each starts. With ``scan`` a first look at the line skips lines
    that cannot change and takes the window for small values (the inside field: mostly zeros);
    without it (the outside field: nearly every line changes) the envelope starts at once.
    (Flat indices and while loops: Warp's CPU code for dynamic ``range`` loops over 3-D
    indices is ~10x slower.)"""
    any_finite = wp.bool(False)
    any_infinite = wp.bool(not scan)
    varies = wp.bool(not scan)
    largest = wp.float32(0.0)
    first_value = f[first]
    q = wp.int32(0)
    if not scan:
        any_finite = True
        q = n
    index = first
    while q < n:
        fq = f[index]
        if fq < INF:
            any_finite = True
            largest = wp.max(largest, fq)
        else:
            any_infinite = True
        if fq != first_value:
            varies = True
        q += 1
        index += stride
    if not any_finite or not varies:
        return  # nothing to lower: all INF, or all one value (a flat surface's lines)
    base = line * n
    if not any_infinite and largest <= SMALL:
        # small values (the inside of thin occupied shells): only p with (q - p)^2 < f(q)
        # can lower f(q), so a window of +-sqrt(f(q)) is exact and cheaper than the envelope
        q = wp.int32(0)
        index = first
        while q < n:
            fq = f[index]
            best = fq
            reach = int(wp.sqrt(fq))
            w = wp.max(q - reach, 0)
            while w <= wp.min(q + reach, n - 1):
                d = float(w - q)
                best = wp.min(best, d * d + f[first + w * stride])
                w += 1
            values[base + q] = best
            q += 1
            index += stride
        q = wp.int32(0)
        index = first
        while q < n:
            f[index] = values[base + q]
            q += 1
            index += stride
        return
    # the envelope: parabola k has its apex at sites[k] with height values[k] and starts at
    # the rational s_k = bounds[2 k] / bounds[2 k + 1] (integers: squared voxel distances are
    # integers, so the comparisons are exact and need no division)
    zbase = 2 * line * (n + 1)
    k = wp.int32(-1)
    q = wp.int32(0)
    index = first
    while q < n:
        fq = f[index]
        if fq < INF:
            lift = int(fq) + q * q
            num = wp.int32(0)
            den = wp.int32(1)
            searching = k >= 0
            while searching:
                p = sites[base + k]
                num = lift - (int(values[base + k]) + p * p)
                den = 2 * (q - p)
                # pop parabola k while the new one undercuts it from its start on (k > 0; the
                # first one starts at -infinity)
                if k > 0 and num * bounds[zbase + 2 * k + 1] <= bounds[zbase + 2 * k] * den:
                    k -= 1
                else:
                    searching = False
            k += 1
            sites[base + k] = q
            values[base + k] = fq
            bounds[zbase + 2 * k] = num
            bounds[zbase + 2 * k + 1] = den
        q += 1
        index += stride
    if k < 0:
        return  # no finite value: the line stays INF
    j = wp.int32(0)
    site = sites[base]
    value = values[base]
    q = wp.int32(0)
    index = first
    while q < n:
        while j < k and bounds[zbase + 2 * j + 2] < q * bounds[zbase + 2 * j + 3]:
            j += 1
            site = sites[base + j]
            value = values[base + j]
        d = float(q - site)
        f[index] = d * d + value
        q += 1
        index += stride


@wp.kernel
def edt_pass(
    outside: wp.array(dtype=wp.float32),
    inside: wp.array(dtype=wp.float32),
    n: int,
    stride: int,
    count_b: int,
    stride_a: int,
    stride_b: int,
    line_offset: int,
    sites: wp.array(dtype=wp.int32),
    values: wp.array(dtype=wp.float32),
    bounds: wp.array(dtype=wp.int32),
):
    """The 1-D transform of every line of both flattened fields along one axis (``n``
    voxels ``stride`` apart; line ``a * count_b + b`` starts at ``a * stride_a + b *
    stride_b``); thread ``i`` takes line ``i + line_offset`` (CPU row chunks)."""
    line = wp.tid() + line_offset
    a = line / count_b
    b = line - a * count_b
    first = a * stride_a + b * stride_b
    _edt_line(outside, first, stride, n, line, sites, values, bounds, False)
    _edt_line(inside, first, stride, n, line, sites, values, bounds, True)
