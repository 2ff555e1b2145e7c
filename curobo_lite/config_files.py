"""Where bundled configuration files live: ``configs/<kind>/<name>.yml``.

Search order: ``$CUROBO_LITE_CONFIG_DIR/<kind>`` if set, then ``configs/<kind>`` of the source
tree this package was imported from (editable installs and the repo root), then
``./configs/<kind>``. A name is a bundled file's stem (``"franka"``); a path works too.
"""

from __future__ import annotations

import os
from pathlib import Path

from curobo_lite.types.errors import ConfigError

ENV_CONFIG_DIR = "CUROBO_LITE_CONFIG_DIR"


def config_dirs(kind: str) -> list[Path]:
    """Folders searched for ``<name>.yml`` of ``kind`` (``"robot"``, ``"task"``, ``"world"``),
    first match wins."""
    dirs = []
    env = os.environ.get(ENV_CONFIG_DIR)
    if env:
        dirs.append(Path(env) / kind)
    dirs.append(Path(__file__).resolve().parents[1] / "configs" / kind)
    dirs.append(Path.cwd() / "configs" / kind)
    unique: list[Path] = []
    for d in dirs:
        if d not in unique:
            unique.append(d)
    return unique


def available_configs(kind: str) -> list[str]:
    """Names of the ``kind`` files found in :func:`config_dirs`."""
    names = set()
    for d in config_dirs(kind):
        if d.is_dir():
            names.update(p.stem for p in d.glob("*.yml"))
    return sorted(names)


def resolve_config_file(kind: str, name_or_path: str | os.PathLike) -> Path:
    """A ``kind`` file path from a bundled name or a path to a ``.yml`` file."""
    text = os.fspath(name_or_path)
    path = Path(text)
    looks_like_path = path.suffix in (".yml", ".yaml") or os.sep in text or "/" in text
    if path.is_file():
        return path
    if looks_like_path:
        raise ConfigError(f"{kind} file '{text}' does not exist")
    for d in config_dirs(kind):
        candidate = d / f"{text}.yml"
        if candidate.is_file():
            return candidate
    raise ConfigError(
        f"{kind} '{text}': no such bundled {kind} file; available: {available_configs(kind)}; "
        f"searched {[str(d) for d in config_dirs(kind)]}"
    )
