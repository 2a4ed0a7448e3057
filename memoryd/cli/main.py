"""``memoryd`` entry point: builds the argument parser from each command module and dispatches.

Exit codes: 0 success, 1 a failed operation, 2 bad configuration or usage.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import warnings
from collections.abc import Callable, Sequence

from memoryd.cli import (
    commands_client,
    commands_credentials,
    commands_embed,
    commands_search,
    commands_server,
    commands_settings,
    commands_sleep,
)
from shared.errors import ConfigError, MemorydError

Register = Callable[[argparse._SubParsersAction], None]

#: Each module adds its sub-commands; a command sets ``func(args) -> int`` as its default.
COMMAND_MODULES: list[Register] = [
    commands_server.register,
    commands_client.register,
    commands_credentials.register,
    commands_search.register,
    commands_embed.register,
    commands_sleep.register,
    commands_settings.register,
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="memoryd", description="Long-term memory for LLM applications.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for register in COMMAND_MODULES:
        register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    return run_command(build_parser().parse_args(argv))


def run_command(args: argparse.Namespace) -> int:
    """Run a parsed command's ``func`` (sync or async) and map errors to exit codes."""
    warnings.filterwarnings("ignore", module="platformdirs")
    try:
        result = args.func(args)
        if asyncio.iscoroutine(result):
            result = asyncio.run(result)
        return int(result or 0)
    except ConfigError as exc:
        print(f"memoryd: configuration error: {exc.description}", file=sys.stderr)
        return 2
    except MemorydError as exc:
        print(f"memoryd: {exc.err_code}: {exc.description}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
