"""The README's Python examples run as written (each block in a fresh namespace)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_example_runs(index: int) -> None:
    exec(compile(BLOCKS[index], f"README.md python block {index}", "exec"), {})


def test_scripts_named_by_the_makefile_and_readme_exist() -> None:
    """Every ``benchmarks/*.py`` and ``tools/*.py`` the Makefile runs, and every benchmark script
    the README's Benchmarks section names, is in the repository (``make bench`` once stopped at
    a script that was never written)."""
    root = README.parent
    makefile = (root / "Makefile").read_text()
    named = set(re.findall(r"\b((?:benchmarks|tools)/[\w/]+\.py)\b", makefile))
    section = README.read_text().split("## Benchmarks", 1)[1].split("\n## ", 1)[0]
    named |= {f"benchmarks/{name}" for name in re.findall(r"`(\w+\.py)`", section)}
    assert len(named) >= 8, named
    missing = sorted(path for path in named if not (root / path).is_file())
    assert not missing, f"named but absent: {missing}"
