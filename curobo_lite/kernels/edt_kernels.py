"""Warp kernels of the Euclidean distance transform of a voxel grid's occupancy (the ESDF of
:mod:`curobo_lite.geom.voxel_world`).

Felzenszwalb and Huttenlocher's separable transform ("Distance transforms of sampled
functions", 2012), one thread per grid line: ``f(q) <- min_p (q - p)^2 + f(p)``, the lower
envelope of parabolas in ``O(n)``. Run along the three axes on ``f = 0`` at the sites and
``INF`` elsewhere it gives the squared distance (voxel units) from every voxel centre to the
nearest site centre, exactly. Two fields go through each pass: the distance to occupied voxels
(``outside``) and the distance to free ones (``inside``, for the sign).

The grid is a contiguous ``[nx, ny, nz]`` array; the passes run along x, y, then z:

- :func:`edt_pass_x`: x, straight from the occupancy (two sweeps per line); it flags the y and z
  lines that hold an occupied voxel with no free neighbour along x (the only ones whose inside
  distance the later passes can lower: elsewhere it is 0 or 1 already);
- :func:`edt_pass_y`: y;
- :func:`edt_pass_z`: z (the contiguous axis), writing the signed distance in metres.

Axis order: the work of the two envelope passes grows with the voxels the first pass leaves
finite, and tables and floors (horizontal surfaces) make nearly every z line hit an occupied
voxel, so x goes first (the benchmark scene: 67 ms of one thread's time this way, 81 ms with z
first).

Truncation (``trunc``, voxels): outside distances above it are dropped after every pass (they
are ``INF`` to the next one) and the ESDF holds ``min(distance, trunc)`` outside; the envelope
passes then skip what lies farther than ``trunc`` from every surface. ``trunc = inf``: exact.
"""

from __future__ import annotations

import warp as wp

from curobo_lite.kernels.voxel_kernels import OCCUPIED

wp.config.log_level = 30  # WARNING
wp.set_module_options({"enable_backward": False})

#: squared distance of a voxel with no site on its line (float32-safe, sqrt(INF) * v finite)
INF = 1.0e20
#: inside lines whose bounds (see :func:`_lower_inside`) stay at or below this take the windowed
#: exact minimum, run by run; others the envelope
SMALL = 16.0
#: the integer squared truncation of an exact transform (above every squared distance of a
#: grid of at most 700 voxels along an axis)
NO_TRUNCATION = 1 << 30


@wp.kernel
def edt_pass_x(
    occupancy: wp.array(dtype=wp.float32),
    nx: int,
    ny: int,
    nz: int,
    trunc: float,
    line_offset: int,
    shared_slot: int,
    outside: wp.array(dtype=wp.float32),
    inside: wp.array(dtype=wp.float32),
    deep_y: wp.array(dtype=wp.int32),
    deep_z: wp.array(dtype=wp.int32),
    seen: wp.array(dtype=wp.int32),
    occupied: wp.array(dtype=wp.int32),
):
    """The x axis straight from the occupancy, one thread per line ``(y, z)`` (thread ``i``
    takes line ``i + line_offset``): each voxel's distance along x to the nearest occupied
    voxel (``outside``) and the nearest free one (``inside``), squared; ``INF`` where the
    line has none (or, outside, none within ``trunc``). One read of the line lists its
    occupied voxels (``occupied``, ``nx`` from slot ``(nx + 1) * slot``, the slot as in
    :func:`edt_pass_y`); one write sweep follows the list (a strided line costs a cache line
    per voxel: read once, written once). An occupied voxel with no free neighbour along x
    sets ``deep_y[x * nz + z]`` and ``deep_z[x * ny + y]``; any occupied voxel sets
    ``seen[0]``, and ``seen[1 + z]`` for its level ``z``."""
    line = wp.tid() + line_offset
    y = line / nz
    z = line - y * nz
    stride = ny * nz
    base = (nx + 1) * wp.where(shared_slot >= 0, shared_slot, line)
    m = wp.int32(0)
    q = wp.int32(0)
    index = line
    while q < nx:
        if occupancy[index] >= OCCUPIED:
            occupied[base + m] = q
            m += 1
        q += 1
        index += stride
    q = wp.int32(0)
    index = line
    if m == 0:  # most lines: nothing to measure from
        while q < nx:
            outside[index] = INF
            inside[index] = 0.0
            q += 1
            index += stride
        return
    # flags other threads set too: written once (a store to a line another core holds
    # moves it back and forth between the cores' caches)
    if seen[1 + z] == 0:
        seen[0] = 1
        seen[1 + z] = 1
    far = nx + nx + 2
    previous = -far  # the last occupied voxel before q
    run_start = wp.int32(0)
    run_end = wp.int32(0)
    j = wp.int32(0)  # list entry of the first occupied voxel at or after q
    while q < nx:
        following = far + nx
        if j < m:
            following = occupied[base + j]
        if following == q:
            if j == 0 or occupied[base + j - 1] != q - 1:  # a run of occupied voxels starts
                run_start = q
                r = j
                while r + 1 < m and occupied[base + r + 1] == occupied[base + r] + 1:
                    r += 1
                run_end = occupied[base + r]
            left = wp.where(run_start > 0, q - run_start + 1, far)
            right = wp.where(run_end < nx - 1, run_end + 1 - q, far)
            depth = wp.min(left, right)
            inside[index] = wp.where(depth < nx, float(depth * depth), INF)
            outside[index] = 0.0
            if depth > 1:
                if deep_y[q * nz + z] == 0:
                    deep_y[q * nz + z] = 1
                if deep_z[q * ny + y] == 0:
                    deep_z[q * ny + y] = 1
            previous = q
            j += 1
        else:
            gap = float(wp.min(q - previous, following - q))
            inside[index] = 0.0
            outside[index] = wp.where(gap < float(nx) and gap <= trunc, gap * gap, INF)
        q += 1
        index += stride


@wp.func
def _envelope(
    f: wp.array(dtype=wp.float32),
    first: int,
    stride: int,
    n: int,
    env: wp.array(dtype=wp.int32),
    zbase: int,
):
    """The lower envelope of the parabolas ``(q - p)^2 + f(p)`` of the finite values of the
    line ``f[first + p * stride]``, ``p < n``; returns the index of its last parabola (-1: no
    finite value). Parabola ``k`` has its apex at ``env[e]`` (``e = zbase + 4 k``), lifted
    height ``env[e + 1] = f + apex^2``, and starts at the rational ``env[e + 2] / env[e + 3]``
    (integers: squared voxel distances are integers, so the comparisons are exact and need no
    division). (Flat indices and while loops: Warp's CPU code for dynamic ``range`` loops over
    3-D indices is ~10x slower.)"""
    k = wp.int32(-1)
    q = wp.int32(0)
    index = first
    while q < n:
        fq = f[index]
        if fq < INF:
            lift = int(fq) + q * q
            num = wp.int32(0)
            den = wp.int32(1)
            while k >= 0:
                e = zbase + 4 * k
                num = lift - env[e + 1]
                den = 2 * (q - env[e])
                # pop parabola k while the new one undercuts it from its start on (k > 0; the
                # first one starts at -infinity)
                if k > 0 and num * env[e + 3] <= env[e + 2] * den:
                    k -= 1
                else:
                    break
            k += 1
            e = zbase + 4 * k
            env[e] = q
            env[e + 1] = lift
            env[e + 2] = num
            env[e + 3] = den
        q += 1
        index += stride
    return k


@wp.func
def _parabola(env: wp.array(dtype=wp.int32), e: int, last: int, n: int):
    """The envelope's parabola at ``e`` (see :func:`_envelope`; ``last``: its last one): its
    apex, height, and the first ``q`` (at most ``n``) over which the next one lies lower,
    the smallest integer above the next one's start ``env[e + 6] / env[e + 7]`` (``n`` after
    the last). Reading the envelope out parabola by parabola leaves the loop over a line's
    voxels without a data-dependent test."""
    apex = env[e]
    height = env[e + 1] - apex * apex
    end = n
    if e < last:
        num = env[e + 6]
        den = env[e + 7]  # > 0: a parabola's apex lies before where it takes over
        t = num / den  # rounds toward zero: floor below
        if t * den > num:
            t -= 1
        end = wp.min(t + 1, n)
    return apex, height, end


@wp.func
def _lower_line(
    f: wp.array(dtype=wp.float32),
    first: int,
    stride: int,
    n: int,
    env: wp.array(dtype=wp.int32),
    zbase: int,
    trunc2: int,
):
    """Felzenszwalb's 1-D transform, in place, of the line ``f[first + q * stride]``
    (``q < n``); results above ``trunc2`` become ``INF``."""
    k = _envelope(f, first, stride, n, env, zbase)
    if k < 0:
        return  # no finite value: the line stays INF
    last = zbase + 4 * k
    e = zbase
    q = wp.int32(0)
    index = first
    while e <= last:
        apex, height, end = _parabola(env, e, last, n)
        while q < end:
            gap = q - apex
            lowered = gap * gap + height
            f[index] = wp.where(lowered <= trunc2, float(lowered), INF)
            q += 1
            index += stride
        e += 4


@wp.func
def _run_end(f: wp.array(dtype=wp.float32), first: int, stride: int, n: int, a: int):
    """The last voxel of the run of occupied voxels (inside value ``> 0``) from voxel ``a``
    of the line ``f[first + q * stride]``, ``q < n``."""
    b = a
    index = first + (a + 1) * stride
    while b + 1 < n and f[index] > 0.0:
        b += 1
        index += stride
    return b


@wp.func
def _free_end_bound(q: int, a: int, b: int, n: int):
    """Squared distance from ``q`` to the nearer free voxel bounding the occupied run ``[a,
    b]`` of a line of ``n`` voxels (beyond the grid there is none: ``4 n^2`` without
    either)."""
    d = n + n
    if a > 0:
        d = q - a + 1
    if b < n - 1:
        d = wp.min(d, b + 1 - q)
    return float(d * d)


@wp.func
def _lower_inside(
    f: wp.array(dtype=wp.float32),
    first: int,
    stride: int,
    n: int,
    env: wp.array(dtype=wp.int32),
    zbase: int,
    window: wp.array(dtype=wp.float32),
    wbase: int,
):
    """:func:`_lower_line` for the inside field (0 at free voxels, mostly 1 in the thin
    occupied shells a camera sees), run by run: a free voxel (value 0) bounds a run of
    occupied ones, and nothing beyond it can lower the run's values below the squared
    distance to it, so only ``p`` in the run with ``(q - p)^2`` below that bound and below
    ``f(q)`` can lower ``f(q)`` (the exact windowed minimum). A line holding a bound above
    :data:`SMALL` (thick solids) takes the envelope instead. ``window`` holds ``n`` values
    from ``wbase``."""
    largest = wp.float32(0.0)
    q = wp.int32(0)
    while q < n:
        if f[first + q * stride] > 0.0:
            a = q
            b = _run_end(f, first, stride, n, a)
            while q <= b:
                bound = wp.min(f[first + q * stride], _free_end_bound(q, a, b, n))
                largest = wp.max(largest, bound)
                q += 1
        else:
            q += 1
    if largest == 0.0:
        return  # no occupied voxel
    if largest > SMALL:
        _lower_line(f, first, stride, n, env, zbase, NO_TRUNCATION)
        return
    q = wp.int32(0)
    while q < n:
        if f[first + q * stride] > 0.0:
            a = q
            b = _run_end(f, first, stride, n, a)
            while q <= b:  # the run's lowered values, from its values before
                best = wp.min(f[first + q * stride], _free_end_bound(q, a, b, n))
                reach = int(wp.sqrt(best))
                w = wp.max(q - reach, a)
                while w <= wp.min(q + reach, b):
                    d = float(w - q)
                    best = wp.min(best, d * d + f[first + w * stride])
                    w += 1
                window[wbase + q] = best
                q += 1
            q = a
            while q <= b:
                f[first + q * stride] = window[wbase + q]
                q += 1
        else:
            q += 1


@wp.kernel
def edt_pass_y(
    outside: wp.array(dtype=wp.float32),
    inside: wp.array(dtype=wp.float32),
    nx: int,
    ny: int,
    nz: int,
    trunc2: int,
    line_offset: int,
    shared_slot: int,
    seen: wp.array(dtype=wp.int32),
    deep_y: wp.array(dtype=wp.int32),
    env: wp.array(dtype=wp.int32),
    window: wp.array(dtype=wp.float32),
):
    """The y axis, one thread per line ``(x, z)`` (thread ``i`` takes line ``i +
    line_offset``); the inside field only on the lines :func:`edt_pass_x` flagged, nothing
    on the levels ``z`` it saw empty (``seen[1 + z] == 0``: every outside value there is
    ``INF``, every inside one 0, and so they stay). Scratch:
    line ``slot``'s ``4 (n + 1)`` of ``env`` and ``n`` of ``window``, where ``slot`` is the
    line, or ``shared_slot`` when it is >= 0 (a CPU launch runs its lines one after another:
    they share one slot, which stays in the L1 cache)."""
    line = wp.tid() + line_offset
    x = line / nz
    z = line - x * nz
    if seen[1 + z] == 0:
        return
    first = x * ny * nz + z
    slot = wp.where(shared_slot >= 0, shared_slot, line)
    _lower_line(outside, first, nz, ny, env, 4 * slot * (ny + 1), trunc2)
    if deep_y[line] != 0:
        _lower_inside(inside, first, nz, ny, env, 4 * slot * (ny + 1), window, slot * ny)


@wp.kernel
def edt_pass_z(
    outside: wp.array(dtype=wp.float32),
    inside: wp.array(dtype=wp.float32),
    nz: int,
    trunc2: int,
    far: float,
    voxel: float,
    seen: wp.array(dtype=wp.int32),
    line_offset: int,
    shared_slot: int,
    deep_z: wp.array(dtype=wp.int32),
    env: wp.array(dtype=wp.int32),
    window: wp.array(dtype=wp.float32),
    esdf: wp.array(dtype=wp.float32),
):
    """The z axis, one thread per line ``(x, y)`` (scratch as in :func:`edt_pass_y`), and the
    signed distance in metres: ``v sqrt(outside)`` at a free voxel (``far`` where it is
    ``INF``), ``-v (sqrt(inside) - 1)`` at an occupied one (0 on an occupied voxel next to a
    free one: the zero level runs through the centres of the boundary voxels, where a
    measured surface lies on average). The occupied voxels are those at outside distance 0.
    ``far`` holds for a truncated distance; an empty grid (``seen[0] == 0``) reads ``v
    sqrt(INF)``."""
    line = wp.tid() + line_offset
    first = line * nz
    slot = wp.where(shared_slot >= 0, shared_slot, line)
    zbase = 4 * slot * (nz + 1)
    if deep_z[line] != 0:
        _lower_inside(inside, first, 1, nz, env, zbase, window, slot * nz)
    k = _envelope(outside, first, 1, nz, env, zbase)
    far_value = wp.where(seen[0] != 0, far, voxel * wp.sqrt(INF))
    q = wp.int32(0)
    if k < 0:  # no occupied voxel within reach
        while q < nz:
            esdf[first + q] = far_value
            q += 1
        return
    last = zbase + 4 * k
    e = zbase
    while e <= last:
        apex, height, end = _parabola(env, e, last, nz)
        while q < end:
            index = first + q
            gap = q - apex
            lowered = gap * gap + height
            value = wp.where(lowered <= trunc2, voxel * wp.sqrt(float(lowered)), far_value)
            if lowered == 0:  # occupied
                value = -voxel * (wp.sqrt(inside[index]) - 1.0)
            esdf[index] = value
            q += 1
        e += 4
