"""``memoryd dlq list|show|replay|drop``: the dead-letter queue, over the ``admin.dlq.*`` RPCs.

``list`` shows what failed where and why; ``show SEQ`` prints one letter with its payload;
``replay`` republishes letters to their original subjects (after the cause is fixed, e.g. a
database that was read-only) and removes them once JetStream has them again; ``drop``
deletes letters. ``replay`` and ``drop`` take sequence numbers, ``--stage S`` or ``--all``.
Exit code 1 when a replay left letters behind.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from memoryd.cli.common import (
    CONTEXT_SETTINGS,
    cells,
    json_option,
    nats_connection,
    nats_options,
    one_line,
    print_table,
    print_wire,
    run,
    table,
    timeout_option,
)

_WIRE_HELP = "print the result as it came over the wire"


async def _call(nats_url: str | None, data_dir: str | None, op: str, request: Any, timeout: float) -> Any:
    from memoryd.rpc import call

    nc = await nats_connection(nats_url, data_dir)
    try:
        return await call(nc, f"admin.dlq.{op}", request, timeout=timeout)
    finally:
        await nc.drain()


def _select(seqs: tuple[int, ...], stage: str | None, all_: bool) -> dict[str, Any]:
    if not seqs and not stage and not all_:
        raise click.UsageError("name entries by sequence number, or pass --stage S or --all")
    return {"seqs": list(seqs), "stage": stage, "all": all_}


_stage = click.option("--stage", metavar="S", help="only letters of this stage (ingest, extract, embed, sleep)")
_all = click.option("--all", "all_", is_flag=True, help="every letter (of --stage, if given)")
_seqs = click.argument("seqs", nargs=-1, type=click.IntRange(min=1))


def _selection_command(fn: Callable[..., int]) -> Callable[..., int]:
    """The arguments of a command that acts on a selection of letters (``replay``, ``drop``)."""
    for option in reversed((_seqs, _stage, _all, json_option(_WIRE_HELP), timeout_option(60.0), nats_options)):
        fn = option(fn)
    return fn


@click.group("dlq", context_settings=CONTEXT_SETTINGS)
def dlq() -> None:
    """Dead letters: list, show, replay or drop them."""


@dlq.command("list", context_settings=CONTEXT_SETTINGS)
@_stage
@click.option("--limit", type=click.IntRange(1, 10_000), default=100, show_default=True, metavar="N")
@json_option(_WIRE_HELP)
@timeout_option()
@nats_options
def list_(
    stage: str | None, limit: int, as_json: bool, timeout: float, nats_url: str | None, data_dir: str | None
) -> int:
    """Dead letters, oldest first."""
    from memoryd.schemas.dlq import DlqListRequest, DlqListResult

    async def go() -> int:
        result: DlqListResult = await _call(
            nats_url, data_dir, "list", DlqListRequest(stage=stage, limit=limit), timeout
        )
        if as_json:
            print_wire(result)
            return 0
        if not result.entries:
            print("the DLQ is empty" if not result.total else f"no letters of stage {stage} ({result.total} in all)")
            return 0
        rows = table("seq", "stage", "failed", "tries", "owner", "event", "error", justify_right=("seq", "tries"))
        for e in result.entries:
            rows.add_row(
                *cells(
                    e.seq,
                    e.stage,
                    f"{e.failed_at:%Y-%m-%d %H:%M:%S}",
                    e.deliveries,
                    e.owner or "",
                    e.event_id or "",
                    one_line(e.error, 60),
                )
            )
        print_table(rows)
        print(f"{len(result.entries)} shown, {result.total} in the DLQ ({result.bytes} bytes)")
        return 0

    return run(go())


@dlq.command("show", context_settings=CONTEXT_SETTINGS)
@click.argument("seq", type=click.IntRange(min=1))
@json_option(_WIRE_HELP)
@timeout_option()
@nats_options
def show(seq: int, as_json: bool, timeout: float, nats_url: str | None, data_dir: str | None) -> int:
    """One dead letter: where it failed, why, and the original message."""
    from memoryd.schemas.dlq import DlqShowRequest, DlqShowResult

    async def go() -> int:
        result: DlqShowResult = await _call(nats_url, data_dir, "show", DlqShowRequest(seq=seq), timeout)
        if as_json:
            print_wire(result)
            return 0
        e = result.entry
        print(f"letter {e.seq}: stage {e.stage}, subject {e.subject}, {e.deliveries} tries, failed {e.failed_at}")
        print(f"error: {e.error}")
        for k, v in sorted(result.headers.items()):
            print(f"header {k}: {v}")
        print(result.payload)
        return 0

    return run(go())


@dlq.command("replay", context_settings=CONTEXT_SETTINGS)
@_selection_command
def replay(
    seqs: tuple[int, ...],
    stage: str | None,
    all_: bool,
    as_json: bool,
    timeout: float,
    nats_url: str | None,
    data_dir: str | None,
) -> int:
    """Republish dead letters to their original subjects.

    Each letter leaves the DLQ once JetStream has acknowledged it again.
    """
    from memoryd.schemas.dlq import DlqReplayRequest, DlqReplayResult

    request = DlqReplayRequest(**_select(seqs, stage, all_))

    async def go() -> int:
        result: DlqReplayResult = await _call(nats_url, data_dir, "replay", request, timeout)
        if as_json:
            print_wire(result)
        else:
            print(
                f"replayed {len(result.replayed)}"
                + (f": {', '.join(map(str, result.replayed))}" if result.replayed else "")
            )
            for seq, why in sorted(result.failed.items()):
                print(f"not replayed {seq}: {why}")
        return 1 if result.failed else 0

    return run(go())


@dlq.command("drop", context_settings=CONTEXT_SETTINGS)
@_selection_command
def drop(
    seqs: tuple[int, ...],
    stage: str | None,
    all_: bool,
    as_json: bool,
    timeout: float,
    nats_url: str | None,
    data_dir: str | None,
) -> int:
    """Delete dead letters for good."""
    from memoryd.schemas.dlq import DlqDropRequest, DlqDropResult

    request = DlqDropRequest(**_select(seqs, stage, all_))

    async def go() -> int:
        result: DlqDropResult = await _call(nats_url, data_dir, "drop", request, timeout)
        if as_json:
            print_wire(result)
        else:
            print(f"dropped {len(result.dropped)}")
            if result.missing:
                print(f"not in the DLQ: {', '.join(map(str, result.missing))}")
        return 0

    return run(go())


COMMANDS = (dlq,)
