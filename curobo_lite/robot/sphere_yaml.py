"""Robot-file text for fitted spheres: the ``collision_spheres``, ``collision_link_names`` and
``self_collision_ignore`` blocks, with provenance comments, and the replacement of such a block
in an existing robot file that keeps the rest of its text as it is.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from curobo_lite.robot.sphere_cover import LinkFit

#: coordinates are written with this many decimals (0.1 mm); radii are rounded up to match
DECIMALS = 4

#: the command named in the comment header of the blocks it writes (found again on rewrites)
GENERATOR = "curobo-lite robot spheres"


def _fmt(value: float) -> str:
    text = f"{value:.{DECIMALS}f}".rstrip("0").rstrip(".")
    return "0.0" if text in ("-0", "0", "") else text


def _comment(text: str, indent: str = "", width: int = 100) -> list[str]:
    """``text`` as ``# `` comment lines of at most ``width`` characters (long words kept)."""
    import textwrap

    prefix = f"{indent}# "
    return textwrap.wrap(
        text,
        width=width,
        initial_indent=prefix,
        subsequent_indent=prefix,
        break_long_words=False,
        break_on_hyphens=False,
    ) or [prefix.rstrip()]


def spheres_yaml(fits: Sequence[LinkFit], header: Sequence[str] = (), indent: str = "") -> str:
    """``collision_spheres:`` block text with one provenance comment above each link."""
    lines = [line for text in header for line in _comment(text, indent)]
    lines.append(f"{indent}collision_spheres:")
    for fit in fits:
        gap = 1000.0 * fit.coverage_gap
        lines += _comment(
            f"{fit.link}: {len(fit.spheres)} spheres from "
            + "; ".join(fit.sources)
            + f"; surface coverage gap {gap:.2f} mm, union/solid volume {fit.volume_ratio:.2f}",
            indent + "  ",
        )
        lines.append(f"{indent}  {fit.link}:")
        for x, y, z, r in fit.spheres:
            lines.append(
                f"{indent}    - {{center: [{_fmt(x)}, {_fmt(y)}, {_fmt(z)}], radius: {_fmt(r)}}}"
            )
    return "\n".join(lines) + "\n"


def names_yaml(key: str, names: Sequence[str]) -> str:
    """``key: [a, b, ...]`` wrapped at 100 characters."""
    import textwrap

    return (
        "\n".join(
            textwrap.wrap(
                f"{key}: [{', '.join(names)}]",
                width=100,
                subsequent_indent="  ",
                break_long_words=False,
                break_on_hyphens=False,
            )
        )
        + "\n"
    )


def ignore_yaml(ignore: dict[str, list[str]], header: Sequence[str] = ()) -> str:
    """``self_collision_ignore:`` block text."""
    lines = [line for text in header for line in _comment(text)]
    lines.append("self_collision_ignore:")
    for link, others in ignore.items():
        lines.append(f"  {link}: [{', '.join(others)}]")
    return "\n".join(lines) + "\n"


def replace_top_level_block(text: str, key: str, block: str) -> str:
    """Replace the top-level ``key:`` entry of a YAML text (and a comment header above it that
    this tool wrote) by ``block``, or append ``block``; the rest of the text is kept as is."""
    lines = text.splitlines(keepends=True)
    start = next(
        (i for i, line in enumerate(lines) if re.match(rf"{re.escape(key)}\s*:", line)), None
    )
    if start is None:
        joined = text if text.endswith("\n") or not text else text + "\n"
        return joined + ("\n" if joined else "") + block
    end = start + 1
    while end < len(lines) and (not lines[end].strip() or lines[end][0] in " \t#"):
        end += 1
    # comments and blank lines just above the next key belong to that key
    while end > start + 1 and (not lines[end - 1].strip() or lines[end - 1].startswith("#")):
        end -= 1
    top = start
    while top > 0 and lines[top - 1].startswith("#"):
        top -= 1
    if not any(GENERATOR in line for line in lines[top:start]):
        top = start
    tail = lines[end:]
    if tail and tail[0].strip():
        block = block + "\n"
    return "".join(lines[:top]) + block + "".join(tail)
