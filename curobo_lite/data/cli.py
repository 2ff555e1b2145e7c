"""``curobo-lite dataset``: planning datasets on Ray (``generate``), and their check (``verify``).

Examples::

    curobo-lite dataset generate --families bookshelf_small cage --problems 1000 --out data/mbm
    curobo-lite dataset generate ... --address auto          # join a running Ray cluster
    curobo-lite dataset verify data/mbm

``generate`` makes the problems with the seeded MotionBenchMaker generator, plans them with
MotionGen in Ray tasks (one CPU with one torch thread, or one GPU, per worker) and writes Parquet
shards with a manifest; the same command again resumes where a crashed or interrupted run
stopped. Exit status: 0 complete, 1 shards kept failing (listed), 2 bad input, 130 interrupted.
``verify`` exits 0 when every problem is present exactly once and every shard is intact, else 1.
"""

from __future__ import annotations

import argparse
import json
import sys


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``dataset`` command (``generate``, ``verify``) to ``subparsers``."""
    parser = subparsers.add_parser(
        "dataset",
        help="generate planning datasets on Ray (resumable) and verify them",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="dataset_command", required=True)
    gen = commands.add_parser("generate", help="generate (or resume) a dataset")
    gen.add_argument("--families", nargs="+", required=True, help="MotionBenchMaker families")
    gen.add_argument("--problems", type=int, required=True, help="problems in all")
    gen.add_argument("--out", required=True, help="the dataset folder")
    gen.add_argument("--workers", type=int, default=None, help="shards in flight at once")
    gen.add_argument(
        "--address", default=None, help="Ray cluster to join: auto, ray://host:10001, host:port"
    )
    gen.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    gen.add_argument(
        "--gpus-per-worker",
        type=float,
        default=1.0,
        help="with --device cuda: GPU share per worker (0.25: four workers per GPU)",
    )
    gen.add_argument("--seed", type=int, default=0)
    gen.add_argument("--shard-size", type=int, default=16, help="problems per shard")
    gen.add_argument("--max-retries", type=int, default=3, help="Ray retries per shard")
    gen.add_argument(
        "--generator", default="{}", help='ProblemGenerator options as JSON ({"max_scenes": 20})'
    )
    gen.add_argument(
        "--motion-gen",
        default="{}",
        help='MotionGen options as JSON ({"roadmap": {"time_limit": 2.0}})',
    )
    gen.add_argument("--no-progress", action="store_true", help="no live bar")
    gen.set_defaults(func=run_generate)
    check = commands.add_parser("verify", help="check counts, checksums, each problem once")
    check.add_argument("folder")
    check.set_defaults(func=run_verify)


def _json_option(text: str, flag: str) -> dict:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"{flag}: expected a JSON object, received {text!r} ({err})") from None
    if not isinstance(value, dict):
        raise ValueError(f"{flag}: expected a JSON object, received {text!r}")
    return value


def run_generate(args: argparse.Namespace) -> int:
    from curobo_lite.data.config import DatasetConfig

    try:
        config = DatasetConfig.from_dict(
            {
                "families": args.families,
                "problems": args.problems,
                "seed": args.seed,
                "shard_size": args.shard_size,
                "generator": _json_option(args.generator, "--generator"),
                "motion_gen": _json_option(args.motion_gen, "--motion-gen"),
            }
        )
        from curobo_lite.data.runner import generate_dataset
    except ModuleNotFoundError as err:
        print(f"curobo-lite dataset: {err} (pip install 'curobo_lite[data]')", file=sys.stderr)
        return 2
    except (TypeError, ValueError) as err:
        print(f"curobo-lite dataset: {err}", file=sys.stderr)
        return 2
    try:
        summary = generate_dataset(
            config,
            args.out,
            workers=args.workers,
            address=args.address,
            device=args.device,
            max_retries=args.max_retries,
            progress=not args.no_progress,
            gpus_per_worker=args.gpus_per_worker,
        )
    except (TypeError, ValueError, ConnectionError) as err:  # ConnectionError: no cluster there
        print(f"curobo-lite dataset: {err}", file=sys.stderr)
        return 2
    print(summary.report())
    if summary.interrupted:
        return 130
    return 0 if summary.complete else 1


def run_verify(args: argparse.Namespace) -> int:
    from curobo_lite.data.verify import verify_dataset

    report = verify_dataset(args.folder)
    print(report.report())
    return 0 if report.ok else 1
