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
#: inside lines whose squared distances stay at or below this take the windowed exact minimum
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
    ``seen[0]``."""
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
    if m > 0:
        seen[0] = 1
    far = nx + nx + 2
    previous = -far  # the last occupied voxel before q
    run_start = wp.int32(0)
    run_end = wp.int32(0)
    j = wp.int32(0)  # list entry of the first occupied voxel at or after q
    q = wp.int32(0)
    index = line
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
                deep_y[q * nz + z] = 1
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
def _parabola_over(env: wp.array(dtype=wp.int32), e: int, last: int, q: int, site: int, value: int):
    """The envelope's parabola over ``q``, from ``e`` (the one over ``q - 1``, apex ``site``,
    height ``value``) on, up to the last one ``last`` (see :func:`_envelope`): its ``e``,
    apex and height."""
    k = e
    apex = site
    height = value
    while k < last and env[k + 6] < q * env[k + 7]:
        k += 4
        apex = env[k]
        height = env[k + 1] - apex * apex
    return k, apex, height


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
    e = zbase
    site = env[e]
    value = env[e + 1] - site * site
    q = wp.int32(0)
    index = first
    while q < n:
        e, site, value = _parabola_over(env, e, zbase + 4 * k, q, site, value)
        gap = q - site
        lowered = gap * gap + value
        f[index] = wp.where(lowered <= trunc2, float(lowered), INF)
        q += 1
        index += stride


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
    """:func:`_lower_line` for the inside field (mostly 0 and 1, the inside of thin occupied
    shells): a first look skips lines that cannot change, and lines of small values take the
    exact windowed minimum (only ``p`` with ``(q - p)^2 < f(q)`` can lower ``f(q)``), cheaper
    than the envelope; ``window`` holds ``n`` values from ``wbase``."""
    any_finite = wp.bool(False)
    any_infinite = wp.bool(False)
    varies = wp.bool(False)
    largest = wp.float32(0.0)
    first_value = f[first]
    q = wp.int32(0)
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
        return  # nothing to lower: all INF, or all one value
    if any_infinite or largest > SMALL:
        _lower_line(f, first, stride, n, env, zbase, NO_TRUNCATION)
        return
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
        window[wbase + q] = best
        q += 1
        index += stride
    q = wp.int32(0)
    index = first
    while q < n:
        f[index] = window[wbase + q]
        q += 1
        index += stride


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
    deep_y: wp.array(dtype=wp.int32),
    env: wp.array(dtype=wp.int32),
    window: wp.array(dtype=wp.float32),
):
    """The y axis, one thread per line ``(x, z)`` (thread ``i`` takes line ``i +
    line_offset``); the inside field only on the lines :func:`edt_pass_x` flagged. Scratch:
    line ``slot``'s ``4 (n + 1)`` of ``env`` and ``n`` of ``window``, where ``slot`` is the
    line, or ``shared_slot`` when it is >= 0 (a CPU launch runs its lines one after another:
    they share one slot, which stays in the L1 cache)."""
    line = wp.tid() + line_offset
    x = line / nz
    z = line - x * nz
    first = x * ny * nz + z
    slot = wp.where(shared_slot >= 0, shared_slot, line)
    _lower_line(outside, first, nz, ny, env, 4 * slot * (ny + 1), trunc2)
    if deep_y[line] != 0:
        _lower_inside(inside, first, nz, ny, env, 4 * slot * (ny + 1), window, slot * ny)


@wp.kernel
def edt_pass_z(
    occupancy: wp.array(dtype=wp.float32),
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
    measured surface lies on average). ``far`` holds for a truncated distance; an empty grid
    (``seen[0] == 0``) reads ``v sqrt(INF)``."""
    line = wp.tid() + line_offset
    first = line * nz
    slot = wp.where(shared_slot >= 0, shared_slot, line)
    zbase = 4 * slot * (nz + 1)
    if deep_z[line] != 0:
        _lower_inside(inside, first, 1, nz, env, zbase, window, slot * nz)
    k = _envelope(outside, first, 1, nz, env, zbase)
    e = zbase
    last = zbase + 4 * k
    site = env[e]
    value = env[e + 1] - site * site
    far_value = wp.where(seen[0] != 0, far, voxel * wp.sqrt(INF))
    q = wp.int32(0)
    while q < nz:
        index = first + q
        if occupancy[index] >= OCCUPIED:
            esdf[index] = -voxel * (wp.sqrt(inside[index]) - 1.0)
        elif k < 0:
            esdf[index] = far_value  # no occupied voxel within reach
        else:
            e, site, value = _parabola_over(env, e, last, q, site, value)
            gap = q - site
            lowered = gap * gap + value
            esdf[index] = wp.where(lowered <= trunc2, voxel * wp.sqrt(float(lowered)), far_value)
        q += 1
