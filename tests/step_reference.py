"""Independent reference for SPEC §2: plain Python/NumPy loops in float64, written from the spec
text and sharing no code with the package."""

from __future__ import annotations

import numpy as np


def reference_step(act, p, v, a, traj_dt, mode, start_idx=None):
    """act [B,H,D]; p, v, a [S,D]; traj_dt [H]; returns x, v, a, j as [B,H,D] float64 arrays."""
    act = np.asarray(act, dtype=np.float64)
    p, v, a = (np.asarray(t, dtype=np.float64) for t in (p, v, a))
    dt = np.broadcast_to(np.asarray(traj_dt, dtype=np.float64), (act.shape[1],))
    batch, horizon, dof = act.shape
    rows = np.arange(batch) if start_idx is None else np.asarray(start_idx)
    X, V, A, J = (np.zeros((batch, horizon, dof)) for _ in range(4))
    for b in range(batch):
        s = rows[b]
        if mode == "POSITION_TELEPORT":
            X[b] = act[b]
            continue
        X[b, 0], V[b, 0], A[b, 0] = p[s], v[s], a[s]
        if mode == "POSITION_CENTRAL":
            h_dt = dt[1]
            ys = [
                p[s] - 2 * h_dt * v[s] + 2 * h_dt**2 * a[s],
                p[s] - h_dt * v[s] + 0.5 * h_dt**2 * a[s],
                p[s],
            ]
            ys += [act[b, k] for k in range(horizon - 1)]
            ys += [act[b, horizon - 2], act[b, horizon - 2]]
            y = np.stack(ys)  # index k + 2 holds y_k
            for h in range(1, horizon):
                m2, m1, c, p1, p2 = (y[h + 2 + o] for o in (-2, -1, 0, 1, 2))
                X[b, h] = c
                V[b, h] = (m2 - 8 * m1 + 8 * p1 - p2) / (12 * h_dt)
                A[b, h] = (-m2 + 16 * m1 - 30 * c + 16 * p1 - p2) / (12 * h_dt**2)
                J[b, h] = (-m2 + 2 * m1 - 2 * p1 + p2) / (2 * h_dt**3)
            continue
        for h in range(1, horizon):
            u = act[b, h - 1]
            step = dt[h]
            if mode == "POSITION_BACKWARD":
                X[b, h] = u
                V[b, h] = (X[b, h] - X[b, h - 1]) / step
                A[b, h] = (V[b, h] - V[b, h - 1]) / step
                J[b, h] = (A[b, h] - A[b, h - 1]) / step
            elif mode == "VELOCITY":
                V[b, h] = u
                X[b, h] = X[b, h - 1] + V[b, h] * step
                A[b, h] = (V[b, h] - V[b, h - 1]) / step
                J[b, h] = (A[b, h] - A[b, h - 1]) / step
            elif mode == "ACCELERATION":
                A[b, h] = u
                V[b, h] = V[b, h - 1] + A[b, h] * step
                X[b, h] = X[b, h - 1] + V[b, h] * step
                J[b, h] = (A[b, h] - A[b, h - 1]) / step
            elif mode == "JERK":
                J[b, h] = u
                A[b, h] = A[b, h - 1] + J[b, h] * step
                V[b, h] = V[b, h - 1] + A[b, h] * step
                X[b, h] = X[b, h - 1] + V[b, h] * step
            else:
                raise ValueError(mode)
    return X, V, A, J


def reference_jacobian(batch, horizon, dof, n_start, traj_dt, mode, start_idx=None):
    """Dense Jacobian of the (linear) reference map, built column by column from unit inputs.

    Returns ``[4*B*H*D, B*H*D + 3*S*D]`` in the order (x, v, a, j) x (act, p, v, a).
    """
    n_act = batch * horizon * dof
    n_state = n_start * dof
    columns = []
    for k in range(n_act + 3 * n_state):
        e = np.zeros(n_act + 3 * n_state)
        e[k] = 1.0
        act = e[:n_act].reshape(batch, horizon, dof)
        p, v, a = (
            e[n_act + i * n_state : n_act + (i + 1) * n_state].reshape(n_start, dof)
            for i in range(3)
        )
        out = reference_step(act, p, v, a, traj_dt, mode, start_idx)
        columns.append(np.concatenate([o.ravel() for o in out]))
    return np.stack(columns, axis=1)
