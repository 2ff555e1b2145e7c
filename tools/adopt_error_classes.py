"""Switch ``raise ValueError(`` / ``raise TypeError(`` in curobo_lite to the package's classes.

``python tools/adopt_error_classes.py`` rewrites every module under ``curobo_lite/`` (idempotent,
so it can run again after a merge brings new raise sites):

* ``raise TypeError(`` -> ``raise InputTypeError(``
* ``raise ValueError(`` -> ``raise ConfigError(`` when it reports on a file or a config mapping
  (the message starts with the file: ``f"{source}``, ``f"{path}``, ``f"{self.source}``,
  ``f"{_SOURCE...``, or the module is one of the loaders in ``CONFIG_MODULES``), else
  ``raise InputValueError(``

and adds the import from ``curobo_lite.types.errors``; ``ruff`` then sorts the imports and
formats the changed files. Messages are left untouched. ``--check`` only lists the files that
would change (exit 1 if any).
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "curobo_lite"
ERRORS_MODULE = "curobo_lite.types.errors"
# Modules whose every ValueError is about a file or a config mapping.
CONFIG_MODULES = ("config_files.py", "rollout/task.py", "robot/urdf.py")
SKIP = ("types/errors.py",)
RAISE = re.compile(r"\braise (ValueError|TypeError)\(")
FILE_PREFIX = re.compile(r"""\s*f?["'](\{source\}|\{path\}|\{self\.source\}|\{_SOURCE)""")


def _replacement(text: str, match: re.Match[str], config_module: bool) -> str:
    if match.group(1) == "TypeError":
        return "raise InputTypeError("
    if config_module or FILE_PREFIX.match(text, match.end()):
        return "raise ConfigError("
    return "raise InputValueError("


def _imported_names(tree: ast.Module) -> set[str]:
    return {
        alias.asname or alias.name
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and node.module == ERRORS_MODULE
        for alias in node.names
    }


def rewrite(path: Path) -> str | None:
    """The new text of ``path``, or None when nothing changes."""
    text = path.read_text()
    relative = path.relative_to(PACKAGE).as_posix()
    config_module = relative in CONFIG_MODULES
    pieces, last, used = [], 0, set()
    for match in RAISE.finditer(text):
        new = _replacement(text, match, config_module)
        used.add(new.split()[1].rstrip("("))
        pieces += [text[last : match.start()], new]
        last = match.end()
    if not used:
        return None
    pieces.append(text[last:])
    new_text = "".join(pieces)
    tree = ast.parse(new_text)
    missing = sorted(used - _imported_names(tree))
    if missing:
        imports = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
        # after the last module-level import (or the docstring when there is none)
        anchor = imports[-1].end_lineno if imports else (tree.body[0].end_lineno or 0)
        lines = new_text.splitlines(keepends=True)
        lines.insert(anchor, f"from {ERRORS_MODULE} import {', '.join(missing)}\n")
        new_text = "".join(lines)
    return new_text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="list files that would change")
    args = parser.parse_args(argv)
    changed = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.relative_to(PACKAGE).as_posix() in SKIP:
            continue
        new_text = rewrite(path)
        if new_text is None:
            continue
        changed.append(path)
        if not args.check:
            path.write_text(new_text)
    for path in changed:
        print(path.relative_to(ROOT))
    if args.check:
        return 1 if changed else 0
    if changed:
        files = [str(p) for p in changed]
        ruff = [sys.executable, "-m", "ruff"]
        subprocess.run([*ruff, "check", "--select", "I", "--fix", "--quiet", *files], check=True)
        subprocess.run([*ruff, "format", "--quiet", *files], check=True)
    print(f"{len(changed)} file(s) rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main())
