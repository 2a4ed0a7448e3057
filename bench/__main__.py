"""``python -m bench NAME``: run one benchmark (``make bench-*`` calls this; not installed).

Exit codes: 0 success, 1 a failed operation, 2 bad configuration or usage.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from bench import cli, cli_ingest
from memoryd.cli.main import run_command


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bench", description="python -m benchmarks (each starts its own stack)."
    )
    sub = parser.add_subparsers(dest="bench", required=True, metavar="BENCHMARK")
    cli.register(sub)
    cli_ingest.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    return run_command(build_parser().parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
