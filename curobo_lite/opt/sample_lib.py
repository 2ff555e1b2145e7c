"""Noise samplers for MPPI: scrambled Halton points, Gaussian transform, knot interpolation."""

from __future__ import annotations

import math

import torch

from curobo_lite.types.base import TensorDeviceType
from curobo_lite.types.checks import excerpt
from curobo_lite.types.errors import InputValueError


def first_primes(n: int) -> list[int]:
    """The first ``n`` primes (sieve of Eratosthenes)."""
    if n < 1:
        raise InputValueError(f"n: expected a positive int, received {n}")
    # p_n < n (ln n + ln ln n) for n >= 6 (Rosser's bound)
    bound = 15 if n < 6 else int(n * (math.log(n) + math.log(math.log(n)))) + 1
    sieve = bytearray([1]) * (bound + 1)
    sieve[0:2] = b"\x00\x00"
    for p in range(2, int(bound**0.5) + 1):
        if sieve[p]:
            sieve[p * p :: p] = bytearray(len(range(p * p, bound + 1, p)))
    return [i for i, is_p in enumerate(sieve) if is_p][:n]


class HaltonGenerator:
    """Halton sequence in ``[0, 1)^ndims`` with optional random linear digit scrambling.

    Dimension ``i`` uses the radical inverse in the ``i``-th prime base. With ``scramble``
    every digit ``d`` at position ``k`` of dimension ``i`` is replaced by
    ``(a_ik * d + c_ik) mod b_i`` with ``a_ik`` in ``[1, b_i)`` and ``c_ik`` in ``[0, b_i)``
    drawn once from ``seed``: a bijection on digits (``b_i`` prime), which keeps the
    stratification of each dimension while breaking the correlation between high dimensions
    with nearby large bases. Successive :meth:`draw` calls continue the sequence; point 0
    (the origin) is skipped.

    Args:
        ndims: dimension of each point.
        tensor_args: device/dtype of the returned points.
        seed: seed of the scrambling digits.
        scramble: apply the digit scrambling.
    """

    def __init__(
        self,
        ndims: int,
        tensor_args: TensorDeviceType | None = None,
        seed: int = 0,
        scramble: bool = True,
    ) -> None:
        if isinstance(ndims, bool) or not isinstance(ndims, int) or ndims < 1:
            raise InputValueError(f"ndims: expected a positive int, received {excerpt(ndims)}")
        self.ndims = ndims
        self.tensor_args = tensor_args or TensorDeviceType()
        self.scramble = scramble
        dev = self.tensor_args.device
        primes = first_primes(ndims)
        self._bases = torch.tensor(primes, dtype=torch.long, device=dev)
        self._bases_f = self._bases.to(torch.float64)
        self._inv_bases = 1.0 / self._bases_f
        # Digits beyond 2^-bits do not change the value in the output precision.
        bits = 53 if self.tensor_args.dtype == torch.float64 else 32
        self._n_digits = [max(1, math.ceil(bits / math.log2(b))) for b in primes]
        self._max_digits = max(self._n_digits)
        self._cols_per_digit = [
            sum(1 for nd in self._n_digits if nd > k) for k in range(self._max_digits)
        ]
        # Scrambling digits [max_digits, ndims], drawn on the CPU so that a seed gives the same
        # points on every device.
        gen = torch.Generator(device="cpu").manual_seed(int(seed))
        b = torch.tensor(primes, dtype=torch.float64)[:, None]
        u = torch.rand(ndims, self._max_digits, generator=gen, dtype=torch.float64)
        v = torch.rand(ndims, self._max_digits, generator=gen, dtype=torch.float64)
        self._mult = (1 + torch.floor(u * (b - 1))).t().contiguous().to(dev)
        self._shift = torch.floor(v * b).t().contiguous().to(dev)
        self._index = 0

    def reset(self) -> None:
        """Restart the sequence at its first point."""
        self._index = 0

    def draw(self, n: int) -> torch.Tensor:
        """Next ``n`` points, ``[n, ndims]`` in ``[0, 1)``."""
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise InputValueError(f"n: expected a positive int, received {excerpt(n)}")
        dev = self.tensor_args.device
        end = self._index + n
        idx = torch.arange(self._index + 1, end + 1, device=dev, dtype=torch.float64)
        self._index = end
        # Exact integer arithmetic in float64 (indices stay far below 2^53), faster than int64.
        q = idx[:, None].expand(n, self.ndims).clone()
        value = torch.zeros(n, self.ndims, device=dev, dtype=torch.float64)
        factor = self._inv_bases.clone()
        for k in range(self._max_digits):
            # Bases increase with the dimension, so the dimensions that still need digit k
            # are a prefix; later digits run on ever fewer columns.
            cols = self._cols_per_digit[k]
            q = q[:, :cols]
            bases = self._bases_f[:cols]
            q_next = torch.floor(q / bases)
            digit = q - q_next * bases
            q = q_next
            if self.scramble:
                digit = torch.remainder(self._mult[k, :cols] * digit + self._shift[k, :cols], bases)
            value[:, :cols] += digit * factor[:cols]
            factor = factor * self._inv_bases
        return value.to(self.tensor_args.dtype)


def gaussian_transform(u: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """Map uniforms in ``(0, 1)`` to standard normals by the inverse CDF (same shape)."""
    u = u.clamp(eps, 1.0 - eps)
    return math.sqrt(2.0) * torch.erfinv(2.0 * u - 1.0)


def knot_interpolation_matrix(
    n_knots: int, horizon: int, tensor_args: TensorDeviceType | None = None
) -> torch.Tensor:
    """Linear map ``M [horizon, n_knots]`` from knot values to a smooth curve over the horizon.

    Knots sit uniformly on ``[0, horizon - 1]``; the curve is the natural cubic spline through
    them (``n_knots == 2`` gives a straight line). Each row is scaled to unit L2 norm, so for
    i.i.d. unit-variance knot values every step of ``M @ knots`` also has unit variance (the
    MPPI covariance keeps its meaning for knot samples).
    """
    if isinstance(n_knots, bool) or not isinstance(n_knots, int) or n_knots < 2:
        raise InputValueError(f"n_knots: expected an int >= 2, received {excerpt(n_knots)}")
    if n_knots > horizon:
        raise InputValueError(
            f"n_knots: expected at most the horizon {horizon}, received {n_knots}"
        )
    tensor_args = tensor_args or TensorDeviceType()
    K = n_knots
    step = (horizon - 1) / (K - 1)
    # Natural spline: second derivatives m (m_0 = m_{K-1} = 0) solve
    # m_{i-1} + 4 m_i + m_{i+1} = 6 (y_{i-1} - 2 y_i + y_{i+1}) / step^2 for interior i.
    second = torch.zeros(K, K, dtype=torch.float64)
    if K > 2:
        tri = torch.zeros(K - 2, K - 2, dtype=torch.float64)
        idx = torch.arange(K - 2)
        tri[idx, idx] = 4.0
        tri[idx[1:], idx[:-1]] = 1.0
        tri[idx[:-1], idx[1:]] = 1.0
        d2 = torch.zeros(K - 2, K, dtype=torch.float64)
        d2[idx, idx] = 1.0
        d2[idx, idx + 1] = -2.0
        d2[idx, idx + 2] = 1.0
        second[1:-1] = torch.linalg.solve(tri, 6.0 * d2 / step**2)
    t = torch.arange(horizon, dtype=torch.float64) / step
    seg = t.floor().long().clamp(max=K - 2)
    s = (t - seg)[:, None]
    eye = torch.eye(K, dtype=torch.float64)
    y0, y1 = eye[seg], eye[seg + 1]
    m0, m1 = second[seg], second[seg + 1]
    mat = (1 - s) * y0 + s * y1 + step**2 / 6.0 * (((1 - s) ** 3 - (1 - s)) * m0 + (s**3 - s) * m1)
    mat = mat / mat.norm(dim=1, keepdim=True)
    return mat.to(**tensor_args.as_kwargs())
