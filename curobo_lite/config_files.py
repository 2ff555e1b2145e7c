"""Where bundled configuration files live (``configs/<kind>/<name>.yml``), and the YAML
helpers every file reader shares: :func:`load_yaml` (bounded alias expansion, UTF-8 only),
:class:`YamlReader` (type checks with errors naming the file and key) and
:class:`FlowListDumper` (writes lists of scalars on one line). Every file the package writes
(robot and world files, ``plan --save``, figures, benchmark JSON) goes through
:func:`atomic_path` / :func:`atomic_write_text`: a temporary file renamed over the target, so an
interrupted write leaves the old file or none, never a truncated one.

Search order: ``$CUROBO_LITE_CONFIG_DIR/<kind>`` if set, then ``configs/<kind>`` of the source
tree this package was imported from (editable installs and the repo root), then
``./configs/<kind>``. A name is a bundled file's stem (``"franka"``); a path works too.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

import yaml

from curobo_lite.types.checks import excerpt, parse_number, received
from curobo_lite.types.errors import ConfigError, InputTypeError

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
    if not isinstance(name_or_path, str | os.PathLike):
        raise InputTypeError(
            f"{kind}: expected a bundled {kind} name or a path to a {kind} file, "
            f"{received(name_or_path)}"
        )
    text = os.fspath(name_or_path)
    if isinstance(text, bytes):
        text = os.fsdecode(text)
    path = Path(text)
    looks_like_path = path.suffix in (".yml", ".yaml") or os.sep in text or "/" in text
    if path.is_file():
        return path
    if path.is_dir() and looks_like_path:
        raise ConfigError(f"{kind} file '{text}' is a directory, not a {kind} file")
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


#: The most YAML nodes a configuration file may expand to, aliases counted at each use. The
#: largest bundled file has a few thousand; a "billion laughs" alias bomb has billions.
MAX_YAML_NODES = 200_000


class _BoundedLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses documents expanding (aliases counted at each use) to
    more than :data:`MAX_YAML_NODES` nodes, and recursive aliases, before constructing them."""

    source = "<text>"

    def get_single_node(self) -> yaml.Node | None:
        node = super().get_single_node()
        if node is not None:
            _check_expanded_size(node, self.source)
        return node


def _check_expanded_size(root: yaml.Node, source: str) -> None:
    """Count the nodes ``root`` expands to (an aliased node once per use; each distinct node
    visited once, so the count costs the file's size, not the expansion's)."""
    sizes: dict[int, int] = {}
    in_progress: set[int] = set()

    def size(node: yaml.Node) -> int:
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in in_progress:
            raise ConfigError(f"{source}: recursive YAML alias (a node that contains itself)")
        in_progress.add(key)
        total = 1
        if isinstance(node, yaml.SequenceNode):
            total += sum(size(child) for child in node.value)
        elif isinstance(node, yaml.MappingNode):
            total += sum(size(k) + size(v) for k, v in node.value)
        in_progress.discard(key)
        if total > MAX_YAML_NODES:
            raise ConfigError(
                f"{source}: the YAML expands to more than {MAX_YAML_NODES} nodes (aliases "
                "counted at each use: an alias bomb?); refused"
            )
        sizes[key] = total
        return total

    size(root)


def load_yaml(text: str | bytes, source: str) -> Any:
    """Parse YAML ``text`` read from ``source`` (named in errors): ``safe_load`` semantics, but
    invalid YAML, undecodable bytes, nesting too deep for the parser and alias expansion beyond
    :data:`MAX_YAML_NODES` nodes are each a :class:`ConfigError` naming ``source``."""
    if isinstance(text, bytes):
        text = decode_text(text, source)
    loader = None
    try:
        loader = _BoundedLoader(text)  # its reader rejects control characters here already
        loader.source = source
        return loader.get_single_data()
    except yaml.YAMLError as err:
        raise ConfigError(f"{source}: invalid YAML: {str(err)[:400]}") from None
    except RecursionError:
        raise ConfigError(f"{source}: YAML nested too deeply to parse") from None
    finally:
        if loader is not None:
            loader.dispose()


def decode_text(data: bytes, source: str) -> str:
    """``data`` as UTF-8 text (a UTF-8 byte-order mark is dropped); anything else (binary,
    UTF-16, Latin-1) is a :class:`ConfigError` naming ``source`` and what was found."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise ConfigError(f"{source}: the file is UTF-16 encoded; save it as UTF-8")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise ConfigError(
            f"{source}: not UTF-8 text (byte {data[err.start]:#04x} at offset {err.start}; a "
            "binary file, or Latin-1/UTF-16 text?): save it as UTF-8"
        ) from None
    if "\x00" in text:
        raise ConfigError(f"{source}: contains NUL characters (a binary or UTF-16 file?)")
    return text


def read_text_file(path: str | os.PathLike, kind: str) -> str:
    """The UTF-8 text of the ``kind`` file (``"robot"``, ``"task"``, ``"world"``) at ``path``.

    A missing file, a directory, an unreadable file and undecodable bytes (binary, UTF-16,
    Latin-1) are each a :class:`ConfigError` naming the path and the reason."""
    path = Path(path)
    if path.is_dir():
        raise ConfigError(f"{path}: is a directory, not a {kind} file")
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"{path}: {kind} file does not exist") from None
    except OSError as err:
        raise ConfigError(f"{path}: cannot read the {kind} file: {err.strerror or err}") from None
    return decode_text(data, str(path))


def read_config_file(path: Path, kind: str) -> Any:
    """The parsed YAML of the ``kind`` file (``"robot"``, ``"world"``) at ``path``; a missing
    file, a directory, undecodable text, invalid YAML or an alias bomb is a
    :class:`ConfigError` naming the path (see :func:`read_text_file`, :func:`load_yaml`)."""
    return load_yaml(read_text_file(path, kind), str(path))


def bundled_file_lookups(
    kind: str, example: str, module: str
) -> tuple[Callable[[], list[Path]], Callable[[], list[str]], Callable[[str | os.PathLike], Path]]:
    """The public lookups of one kind of bundled file, for the package that reads it (``module``
    is where they are exported from; ``example`` names a bundled file in their docstrings):
    ``<kind>_config_dirs()``, ``available_<kind>s()`` and ``resolve_<kind>_file(name_or_path)``,
    i.e. :func:`config_dirs`, :func:`available_configs` and :func:`resolve_config_file` for
    ``kind``."""

    def dirs() -> list[Path]:
        return config_dirs(kind)

    def available() -> list[str]:
        return available_configs(kind)

    def resolve(name_or_path: str | os.PathLike) -> Path:
        return resolve_config_file(kind, name_or_path)

    docs = {
        f"{kind}_config_dirs": (
            dirs,
            f"Folders searched for ``<name>.yml`` {kind} files (see "
            ":mod:`curobo_lite.config_files`).",
        ),
        f"available_{kind}s": (
            available,
            f"Names of the {kind} files found in :func:`{kind}_config_dirs`.",
        ),
        f"resolve_{kind}_file": (
            resolve,
            f'A {kind} file path from a bundled name (``"{example}"``) or a path to a ``.yml`` '
            "file.",
        ),
    }
    for name, (function, doc) in docs.items():
        function.__name__ = function.__qualname__ = name
        function.__module__ = module
        function.__doc__ = doc
    return dirs, available, resolve


def preview_names(names: Sequence[str], limit: int = 12) -> str:
    """``names`` for an error message: the first ``limit`` quoted, then ``...``."""
    shown = ", ".join(repr(n) for n in list(names)[:limit])
    return f"[{shown}{', ...' if len(names) > limit else ''}]"


class YamlReader:
    """Type-checks raw YAML values and builds errors that name the file (``source``) and the
    key: ``ValueError("<source>: '<key>': <problem>")``."""

    def __init__(self, source: str) -> None:
        self.source = source

    def error(self, key: str, problem: str) -> ConfigError:
        return ConfigError(f"{self.source}: '{key}': {problem}")

    def mapping(
        self,
        value: Any,
        key: str,
        required: Sequence[str] = (),
        optional: Sequence[str] = (),
    ) -> Mapping[str, Any]:
        if not isinstance(value, Mapping):
            raise self.error(key, f"expected a mapping, received {type(value).__name__}")
        missing = [k for k in required if k not in value]
        if missing:
            raise self.error(key, f"missing key(s) {excerpt(missing)}")
        allowed = set(required) | set(optional)
        unknown = [k for k in value if k not in allowed]
        if unknown:
            raise self.error(
                key, f"unknown key(s) {excerpt(unknown)}; allowed keys: {sorted(allowed)}"
            )
        return value

    def string(self, value: Any, key: str) -> str:
        if not isinstance(value, str) or not value:
            raise self.error(key, f"expected a non-empty string, {received(value)}")
        return value

    def number(self, value: Any, key: str, **bounds: Any) -> float:
        """A finite number checked by :func:`~curobo_lite.types.checks.parse_number`
        (``bounds``: its ``low``, ``high``, ``integer``, ...)."""
        return parse_number(value, key, error=self._number_error, **bounds)

    def _number_error(self, key: str, problem: str, is_type: bool) -> ConfigError:
        return self.error(key, problem)

    def boolean(self, value: Any, key: str) -> bool:
        if not isinstance(value, bool):
            raise self.error(key, f"expected true or false, {received(value)}")
        return value

    def vector(self, value: Any, key: str, length: int | None = None, **bounds: Any) -> list[float]:
        if isinstance(value, str) or not isinstance(value, Sequence):
            raise self.error(key, f"expected a list of numbers, {received(value)}")
        if length is not None and len(value) != length:
            raise self.error(key, f"expected {length} numbers, received {len(value)}")
        return [self.number(v, f"{key}[{i}]", **bounds) for i, v in enumerate(value)]

    def numbers_by_name(self, value: Any, key: str) -> dict[str, float]:
        """A mapping of names (links, joints) to numbers; ``None`` reads as empty."""
        if value is None:
            return {}
        allowed = list(value) if isinstance(value, Mapping) else ()
        value = self.mapping(value, key, (), allowed)
        return {
            self.string(name, f"{key}.{name}"): self.number(number, f"{key}.{name}")
            for name, number in value.items()
        }

    def strings(self, value: Any, key: str) -> list[str]:
        if isinstance(value, str) or not isinstance(value, Sequence):
            raise self.error(key, f"expected a list of strings, {received(value)}")
        names = [self.string(v, f"{key}[{i}]") for i, v in enumerate(value)]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise self.error(key, f"duplicate name(s) {excerpt(duplicates)}")
        return names


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """A temporary path beside ``path`` (same folder and suffix, so writers that infer the
    format from it still do) to write the whole file to; on a clean exit it is flushed to disk
    and renamed over ``path`` in one step (``os.replace``). An error or interrupt inside the
    block removes it, so ``path`` keeps its old contents (or stays absent): never a truncated
    file."""
    path = Path(path)
    handle, name = tempfile.mkstemp(
        prefix=f".{path.stem}.", suffix=f".tmp{path.suffix}", dir=path.parent or "."
    )
    os.close(handle)
    temporary = Path(name)
    try:
        yield temporary
        with open(temporary, "rb+") as f:
            os.fsync(f.fileno())
        if path.exists():  # keep the old file's permissions
            os.chmod(temporary, path.stat().st_mode & 0o7777)
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(temporary, 0o666 & ~umask)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike, mode: str = "w", **kwargs: Any) -> Iterator[IO[Any]]:
    """``open(path, mode)`` for writing, through :func:`atomic_path`: the file appears
    complete when the block ends, or not at all."""
    with atomic_path(path) as temporary, open(temporary, mode, **kwargs) as f:
        yield f


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """``Path(path).write_text(text)`` (UTF-8), atomically (:func:`atomic_path`)."""
    with atomic_open(path, "w", encoding="utf-8") as f:
        f.write(text)


class FlowListDumper(yaml.SafeDumper):
    """Writes lists of scalars on one line (``[0.0, 1.0]``) and everything else in block style."""


def _represent_list(dumper: yaml.SafeDumper, data: list) -> yaml.Node:
    flow = all(isinstance(v, int | float | str) for v in data)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)


FlowListDumper.add_representer(list, _represent_list)
