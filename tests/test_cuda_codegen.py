"""Every Warp kernel module compiles for CUDA (PTX for sm_90 through Warp's NVRTC, no GPU
needed), so a kernel whose CUDA build breaks (a construct the CPU compiler accepts and NVRTC
does not) fails here on a CPU-only machine instead of on a user's GPU.

The CUDA tests (``device`` fixture) run the kernels where a GPU is present; this checks only that
each one builds. The PTX is kept in Warp's kernel cache, so reruns compile only what changed."""

from __future__ import annotations

import importlib
import os
from pathlib import Path

import pytest
import warp as wp

PACKAGE = Path(__file__).resolve().parents[1] / "curobo_lite"


def _kernel_modules() -> list[str]:
    """The package's modules that define Warp kernels (``@wp.kernel`` or ``wp.Kernel(...)``)."""
    names = []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if "@wp.kernel" in text or "wp.Kernel(" in text:
            relative = path.relative_to(PACKAGE.parent).with_suffix("")
            names.append(".".join(relative.parts))
    return names


MODULES = _kernel_modules()


@pytest.fixture(scope="module")
def module_dir() -> str:
    wp.init()
    directory = os.path.join(wp.config.kernel_cache_dir, "cuda_codegen_sm90")
    os.makedirs(directory, exist_ok=True)
    return directory


def test_the_kernel_modules_are_found():
    assert "curobo_lite.kernels.world_grid_kernels" in MODULES
    assert "curobo_lite.kernels.step_kernels" in MODULES
    assert "curobo_lite.robot.fk_kernels" in MODULES
    assert len(MODULES) >= 15


@pytest.mark.parametrize("name", MODULES)
def test_module_compiles_for_cuda(name, module_dir):
    module = importlib.import_module(name)
    try:
        paths = wp.compile_aot_module(module, arch=90, module_dir=module_dir, use_ptx=True)
    except RuntimeError as error:
        if "nvrtc" in str(error).lower() and "not" in str(error).lower():
            pytest.skip(f"this Warp build has no NVRTC: {error}")
        raise
    assert paths, f"{name}: nothing compiled"
    for path in paths:
        assert Path(path).stat().st_size > 0, f"{name}: empty PTX {path}"
