"""``python -m bench NAME``: run one benchmark (``make bench-*`` calls this; not installed).

Exit codes: 0 success, 1 a failed operation, 2 bad configuration or usage.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import click

from bench import cli, cli_ingest
from memoryd.cli.common import CONTEXT_SETTINGS
from memoryd.cli.main import run_cli


@click.group("bench", context_settings=CONTEXT_SETTINGS)
def bench() -> None:
    """memoryd benchmarks (each starts its own stack)."""


for _command in (*cli.COMMANDS, *cli_ingest.COMMANDS):
    bench.add_command(_command)


def main(argv: Sequence[str] | None = None) -> int:
    return run_cli(bench, argv, "python -m bench")


if __name__ == "__main__":
    sys.exit(main())
