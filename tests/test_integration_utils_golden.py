"""Our seed ``integration_utils`` functions against cuRobo 0.7.8's own outputs.

``tests/data/curobo_golden.npz`` is written by ``tools/make_curobo_golden.py``, which runs cuRobo
v0.7.8's ``integration_utils`` (pure-PyTorch functions, CPU) on the cases of
``curobo_golden_cases.py``: several B, H, D, float32 and float64, uniform and non-uniform ``dt``,
every mode flag, cuRobo's layouts and broadcasting, and inputs on which cuRobo fails or returns NaN
(there we must raise a ``ValueError``).
"""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch
from curobo_golden_cases import all_cases, arrays_of, dtype_of, materialize, run

from curobo_lite.rollout.dynamics_model import integration_utils as iu
from curobo_lite.types import JointState, TensorDeviceType

FIXTURE = os.path.join(os.path.dirname(__file__), "data", "curobo_golden.npz")
CASES = all_cases()
TOL = {torch.float32: 1e-6, torch.float64: 1e-12}


@pytest.fixture(scope="module")
def golden():
    with np.load(FIXTURE) as data:
        return {k: data[k] for k in data.files}


def _outputs(golden, key):
    out, k = [], 0
    while f"{key}/out/{k}" in golden:
        out.append(golden[f"{key}/out/{k}"])
        k += 1
    return out


def test_fixture_covers_every_case(golden):
    for case in CASES:
        n_in = len(arrays_of(case))
        assert all(f"{case.key}/in/{i}" in golden for i in range(n_in)), case.key
        assert f"{case.key}/raises" in golden or f"{case.key}/out/0" in golden, case.key


@pytest.mark.parametrize("case", CASES, ids=[c.key for c in CASES])
def test_matches_curobo_0_7_8(case, golden):
    stored = [golden[f"{case.key}/in/{i}"] for i in range(len(arrays_of(case)))]
    args, kwargs = materialize(case, stored, JointState, TensorDeviceType)
    expected = _outputs(golden, case.key)
    if f"{case.key}/raises" in golden or any(np.isnan(e).any() for e in expected):
        with pytest.raises(ValueError):
            run(iu, case, args, kwargs)
        return
    outputs = run(iu, case, args, kwargs)
    assert len(outputs) == len(expected)
    tol = TOL[dtype_of(case)]
    for k, (ours, theirs) in enumerate(zip(outputs, expected, strict=True)):
        assert tuple(ours.shape) == theirs.shape, (k, tuple(ours.shape), theirs.shape)
        assert ours.dtype == dtype_of(case)
        theirs = torch.from_numpy(theirs)
        scale = max(1.0, float(theirs.abs().max())) if theirs.numel() else 1.0
        torch.testing.assert_close(ours, theirs, rtol=tol, atol=tol * scale, msg=f"output {k}")
