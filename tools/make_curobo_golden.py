"""Write ``tests/data/curobo_golden.npz``: cuRobo 0.7.8's own outputs on the golden cases.

Usage::

    python tools/make_curobo_golden.py /path/to/curobo-checkout [--out tests/data/curobo_golden.npz]

``/path/to/curobo-checkout`` is a checkout (or an extracted archive) of NVlabs/curobo at tag
v0.7.8; only ``src/curobo/rollout/dynamics_model/integration_utils.py`` is read from it, at run
time. Its CUDA-extension imports and the few ``curobo`` modules it imports (``TensorDeviceType``,
``JointState``, the jit decorator) are replaced by minimal stand-ins defined here, which is enough
to run its pure-PyTorch functions on CPU. Nothing of cuRobo is copied into this repository: the
fixture holds numbers only (inputs, outputs, and a flag for cases where cuRobo raises).

Fixture keys, per case key ``<dtype>/<function>/<index>`` (see ``tests/curobo_golden_cases.py``):
``<key>/in/<i>`` the array arguments, ``<key>/out/<k>`` the flattened outputs, ``<key>/raises``
(``[1]``) when cuRobo raised.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import types
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))

import curobo_golden_cases as cases  # noqa: E402

SOURCE = os.path.join("src", "curobo", "rollout", "dynamics_model", "integration_utils.py")


@dataclass
class StubTensorDeviceType:
    device: torch.device = torch.device("cpu")
    dtype: torch.dtype = torch.float32

    def as_torch_dict(self) -> dict[str, Any]:
        return {"device": self.device, "dtype": self.dtype}


@dataclass
class StubJointState:
    position: torch.Tensor
    velocity: torch.Tensor
    acceleration: torch.Tensor
    jerk: torch.Tensor

    def unsqueeze(self, dim: int) -> StubJointState:
        fields = (self.position, self.velocity, self.acceleration, self.jerk)
        return StubJointState(*(t.unsqueeze(dim) for t in fields))


def _module(name: str, **attrs: Any) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__path__ = []  # a package, so submodules resolve
    for key, value in attrs.items():
        setattr(module, key, value)
    sys.modules[name] = module
    return module


def _unavailable(*_args: Any, **_kwargs: Any) -> None:
    raise NotImplementedError("CUDA extension stub")


def load_curobo_integration_utils(checkout: str) -> types.ModuleType:
    path = os.path.join(checkout, SOURCE)
    if not os.path.isfile(path):
        raise SystemExit(f"checkout: expected {SOURCE} under {checkout!r}")

    def jit_decorator(*_args: Any, **_kwargs: Any):
        def script(fn):
            try:
                return torch.jit.script(fn)
            except Exception:  # noqa: BLE001 - fall back to eager, same torch ops
                return fn

        return script

    _module("curobo")
    _module("curobo.curobolib")
    _module(
        "curobo.curobolib.tensor_step",
        **{
            n: _unavailable
            for n in (
                "tensor_step_acc_fwd",
                "tensor_step_acc_idx_fwd",
                "tensor_step_pos_clique_bwd",
                "tensor_step_pos_clique_fwd",
                "tensor_step_pos_clique_idx_fwd",
            )
        },
    )
    _module("curobo.types")
    _module("curobo.types.base", TensorDeviceType=StubTensorDeviceType)
    _module("curobo.types.robot", JointState=StubJointState)
    _module("curobo.util")
    _module("curobo.util.torch_utils", get_torch_jit_decorator=jit_decorator)
    spec = importlib.util.spec_from_file_location("curobo_integration_utils_v078", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkout", help="path of a cuRobo v0.7.8 checkout")
    parser.add_argument("--out", default=os.path.join(ROOT, "tests", "data", "curobo_golden.npz"))
    opts = parser.parse_args()
    curobo = load_curobo_integration_utils(opts.checkout)
    data: dict[str, np.ndarray] = {}
    n_raise = 0
    for case in cases.all_cases():
        arrays = cases.arrays_of(case)
        for i, array in enumerate(arrays):
            data[f"{case.key}/in/{i}"] = np.asarray(array, dtype=np.float64)
        args, kwargs = cases.materialize(case, arrays, StubJointState, StubTensorDeviceType)
        try:
            outputs = cases.run(curobo, case, args, kwargs)
        except Exception:  # noqa: BLE001 - any failure of cuRobo is recorded
            data[f"{case.key}/raises"] = np.ones(1)
            n_raise += 1
            continue
        for k, out in enumerate(outputs):
            data[f"{case.key}/out/{k}"] = out.numpy()
    os.makedirs(os.path.dirname(opts.out), exist_ok=True)
    np.savez_compressed(opts.out, **data)
    print(
        f"wrote {opts.out}: {len(cases.all_cases())} cases ({n_raise} raise in cuRobo), "
        f"{os.path.getsize(opts.out) / 1e6:.2f} MB"
    )


if __name__ == "__main__":
    main()
