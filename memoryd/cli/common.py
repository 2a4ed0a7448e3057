"""What the commands share: where NATS is, the common options, running a coroutine, consoles.

NATS is found in this order: ``--nats-url``, ``$MEMORYD_NATS_URL``, the ``runtime.json``
that ``memoryd up`` writes in its data directory (``--data-dir``, ``$MEMORYD_DATA_DIR``,
``.memoryd``). Tables and progress bars are drawn with rich; ``--json`` output never goes
through rich, so it stays exactly what the wire carried. Progress goes to stderr and only
when stderr is a terminal, so stdout stays the command's answer.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import sys
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import click
import msgspec
from rich import box
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table
from rich.text import Text

from memoryd import credentials
from memoryd.codec import encode
from memoryd.errors import ConfigError

F = TypeVar("F", bound=Callable[..., Any])

#: Rows of a table piped to a file or another program are never wrapped.
PIPED_WIDTH = 1000
CONTEXT_SETTINGS: dict[str, Any] = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


def data_dir(value: str | None) -> Path:
    """``--data-dir``, else ``$MEMORYD_DATA_DIR``, else ``.memoryd``."""
    return credentials.data_dir(value)


def resolve_nats_url(flag: str | None, data_dir_flag: str | None) -> str:
    """``--nats-url``, ``$MEMORYD_NATS_URL``, or the ``runtime.json`` of a running ``memoryd up``."""
    if flag:
        return flag
    if os.environ.get(credentials.URL_ENV):
        return os.environ[credentials.URL_ENV]
    runtime = data_dir(data_dir_flag) / "runtime.json"
    try:
        url = json.loads(runtime.read_text()).get("nats_url")
    except (OSError, ValueError) as exc:
        raise ConfigError(
            "MEMORYD_NATS_URL", f"not set, and no readable {runtime} (is `memoryd up` running?): {exc}"
        ) from exc
    if not url:
        raise ConfigError("MEMORYD_NATS_URL", f"{runtime} has no nats_url")
    return str(url)


# --- options ---------------------------------------------------------------------------------
def nats_options(f: F) -> F:
    """``--nats-url`` and ``--data-dir``: how a client command finds NATS."""
    f = click.option(
        "--data-dir",
        metavar="DIR",
        help="where `memoryd up` keeps runtime.json (default $MEMORYD_DATA_DIR or .memoryd)",
    )(f)
    return click.option(
        "--nats-url", metavar="URL", help="NATS URL (default $MEMORYD_NATS_URL, else DIR/runtime.json)"
    )(f)


def json_option(help_text: str = "print the result as JSON") -> Callable[[F], F]:
    return click.option("--json", "as_json", is_flag=True, help=help_text)


def timeout_option(default: float = 10.0, help_text: str = "seconds to wait for an answer") -> Callable[[F], F]:
    return click.option("--timeout", type=float, default=default, show_default=True, help=help_text)


def owner_option(
    required: bool = True, help_text: str = "the owner (user or tenant) whose memory this is"
) -> Callable[[F], F]:
    return click.option("--owner", required=required, metavar="OWNER", help=help_text)


def client_options(f: F) -> F:
    """``--json``, ``--timeout``, ``--nats-url``, ``--data-dir`` (listed in that order)."""
    for decorate in (nats_options, timeout_option(), json_option()):
        f = decorate(f)
    return f


# --- running ---------------------------------------------------------------------------------
def run(coro: Coroutine[Any, Any, int | None]) -> int:
    """Run one command's coroutine to its exit code."""
    return int(asyncio.run(coro) or 0)


def quiet_logs() -> None:
    """Library logs at error level on stderr: stdout stays the command's output."""
    import logging

    import structlog

    logging.getLogger().setLevel(logging.ERROR)  # no handler: logging's last resort writes to the current stderr
    structlog.configure(
        wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR),
        logger_factory=structlog.stdlib.LoggerFactory(),
        cache_logger_on_first_use=False,
    )


def with_client(
    fn: Callable[..., Awaitable[int | None]] | None = None, *, check: Callable[..., None] | None = None
) -> Any:
    """Turn ``async fn(client, **options)`` into a click callback that connects and closes.

    ``check(**options)`` runs first, before connecting (a ``click.UsageError`` there exits 2
    whether or not memoryd is running). Use as ``@with_client`` or ``@with_client(check=...)``.
    """
    if fn is None:
        return functools.partial(with_client, check=check)

    @functools.wraps(fn)
    def callback(*, nats_url: str | None, data_dir: str | None, timeout: float, **options: Any) -> int:
        from memoryd.client import MemoryClient

        if check is not None:
            check(**options)

        async def go() -> int | None:
            quiet_logs()
            client = await MemoryClient.connect(resolve_nats_url(nats_url, data_dir), timeout=timeout)
            try:
                return await fn(client, timeout=timeout, **options)
            finally:
                await client.close()

        return run(go())

    return callback


async def nats_connection(nats_url: str | None, data_dir_flag: str | None) -> Any:
    """A plain NATS connection for the operator commands (``ConfigError`` when nothing answers)."""
    from memoryd.connect import NatsEndpoint, connect

    quiet_logs()
    url = resolve_nats_url(nats_url, data_dir_flag)
    return await connect(NatsEndpoint(url=url), "memoryd-cli", reconnect_forever=False)


# --- output ----------------------------------------------------------------------------------
def print_json(value: Any) -> None:
    """Indented JSON of a result Struct (the ``memories`` commands' ``--json``)."""
    print(json.dumps(msgspec.to_builtins(value), ensure_ascii=False, indent=2))


def print_wire(value: Any) -> None:
    """A result exactly as it came over the wire, one line (``search``, ``sleep``, ...)."""
    sys.stdout.write(encode(value).decode() + "\n")


def stdout() -> Console:
    """A console on stdout that prints text as written (no markup, emoji or highlighting)."""
    console = Console(markup=False, emoji=False, highlight=False)
    if not console.is_terminal:
        console = Console(markup=False, emoji=False, highlight=False, width=PIPED_WIDTH)
    return console


def print_table(rows: Table) -> None:
    """Print a table on stdout; piped, without the cells' trailing padding."""
    console = stdout()
    if console.is_terminal:
        console.print(rows)
        return
    with console.capture() as captured:
        console.print(rows)
    sys.stdout.write("".join(line.rstrip() + "\n" for line in captured.get().splitlines()))


def stderr() -> Console:
    return Console(stderr=True, markup=False, emoji=False, highlight=False)


def table(*columns: str, justify_right: tuple[str, ...] = ()) -> Table:
    """A borderless table with a header rule; right-justify the named (numeric) columns."""
    t = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, header_style="bold")
    for name in columns:
        t.add_column(name, justify="right" if name in justify_right else "left", overflow="fold")
    return t


def cells(*values: object) -> list[Text]:
    """Table cells shown verbatim (a memory saying ``[red]`` stays ``[red]``)."""
    return [Text("" if v is None else str(v)) for v in values]


def one_line(text: str, width: int = 80) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


@contextmanager
def progress(description: str, total: float | None, *, enabled: bool = True) -> Iterator[tuple[Progress, Any]]:
    """A progress bar on stderr (shown only on a terminal); yields the bar and its task id."""
    console = stderr()
    bar = Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TaskProgressColumn(),
        TimeElapsedColumn(),
        console=console,
        disable=not (enabled and console.is_terminal),
    )
    with bar:
        yield bar, bar.add_task(description, total=total)


@contextmanager
def activity(description: str, *, enabled: bool = True) -> Iterator[Callable[[str], None]]:
    """A spinner with the elapsed time on stderr for work of unknown length; yields ``log(message)``,
    which prints the message above the spinner and shows it as the current step. Off a terminal,
    ``log`` prints plain lines to stderr."""
    console = stderr()
    if not (enabled and console.is_terminal):
        yield lambda message: print(message, file=sys.stderr, flush=True)
        return
    spinner = Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=console)
    with spinner:
        task = spinner.add_task(description, total=None)

        def log(message: str) -> None:
            spinner.console.print(message)
            spinner.update(task, description=f"{description}: {one_line(message, 60)}")

        yield log
