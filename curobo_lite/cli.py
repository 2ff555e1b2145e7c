"""``curobo-lite`` command line.

Each sub-command lives beside the code it drives and exposes ``register(subparsers)``, which
adds its parser and sets ``func`` to a callable taking the parsed ``argparse.Namespace``.
"""

from __future__ import annotations

import argparse
import importlib
import sys

# module path -> registers one or more sub-commands
_COMMAND_MODULES = (
    "curobo_lite.wrap.cli.robot",
    "curobo_lite.wrap.cli.mpc",
    "curobo_lite.wrap.cli.trajopt",
    "curobo_lite.wrap.cli.plan",
    "curobo_lite.wrap.cli.pick_place",
    "curobo_lite.data.cli",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="curobo-lite",
        description="Batched, differentiable rollouts for robot motion planning.",
    )
    subparsers = parser.add_subparsers(dest="command", required=True)
    for module_name in _COMMAND_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as err:
            if err.name != module_name:
                raise
            continue
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    result = args.func(args)
    return int(result or 0)


if __name__ == "__main__":
    sys.exit(main())
