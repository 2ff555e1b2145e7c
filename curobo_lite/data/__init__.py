"""Planning datasets at scale: problems from the seeded MotionBenchMaker generator, solved by
MotionGen in Ray tasks, stored as Parquet shards with a manifest; resumable, verifiable.

- :func:`generate_dataset` (``curobo-lite dataset generate``): the Ray driver
  (:mod:`curobo_lite.data.runner`).
- :func:`verify_dataset` (``curobo-lite dataset verify``): counts, checksums, each problem once.
- :func:`load_dataset`: a ``torch.utils.data.Dataset`` of the solved problems.

The names load on first use: ``import curobo_lite.data.cli`` (the command line's parser) stays
light, and without the ``data`` extra (``pip install 'curobo_lite[data]'``: ray, pyarrow)
only using them fails. Ray is imported by :mod:`curobo_lite.data.runner` alone, so reading and
verifying a dataset need pyarrow, not Ray; nothing outside this package imports it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from curobo_lite.data.config import DatasetConfig
    from curobo_lite.data.dataset import ProblemDataset, load_dataset
    from curobo_lite.data.runner import GenerateSummary, generate_dataset
    from curobo_lite.data.verify import VerifyReport, verify_dataset

_WHERE = {
    "DatasetConfig": "config",
    "ProblemDataset": "dataset",
    "load_dataset": "dataset",
    "GenerateSummary": "runner",
    "generate_dataset": "runner",
    "VerifyReport": "verify",
    "verify_dataset": "verify",
}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'curobo_lite.data' has no attribute {name!r}")
    return getattr(importlib.import_module(f"curobo_lite.data.{_WHERE[name]}"), name)


__all__ = [
    "DatasetConfig",
    "GenerateSummary",
    "ProblemDataset",
    "VerifyReport",
    "generate_dataset",
    "load_dataset",
    "verify_dataset",
]
