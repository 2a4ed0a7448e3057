"""``memoryd conflicts list --owner O`` and ``memoryd conflicts resolve ID --owner O --action A`` (over NATS).

``list`` shows the owner's review queue (pairs sleep parked for a person) with both memories
and the pending count; ``--resolved`` lists settled entries with their receipts. ``resolve``
settles one entry: ``accept`` (``--keep`` stays, the other is archived), ``merge`` (``--keep``
gets ``--content``, the other is archived) or ``dismiss`` (both stay); it prints the receipt.
"""

from __future__ import annotations

import getpass

import click

from memoryd.cli.common import (
    CONTEXT_SETTINGS,
    cells,
    json_option,
    nats_connection,
    nats_options,
    one_line,
    owner_option,
    print_table,
    print_wire,
    run,
    table,
)
from memoryd.schemas.conflicts import ConflictReceipt, ConflictSide

_WIRE_HELP = "print the result as it came over the wire"


def _side(side: ConflictSide) -> str:
    state = "" if side.state == "active" else f" [{side.state}]"
    scope = " (global)" if side.scope == "global" else ""
    return f"{side.id}{scope}{state}\n{one_line(side.content, 60)}"


def _user() -> str:
    try:
        return getpass.getuser()
    except (OSError, KeyError):  # no login name in this environment
        return "unknown"


def render_receipt(receipt: ConflictReceipt) -> str:
    """One resolution: what was done to which memory, by whom, when."""
    at = f"{receipt.resolved_at:%Y-%m-%d %H:%M:%S}"
    line = f"conflict {receipt.conflict_id} {receipt.action} by {receipt.resolved_by} at {at}"
    if receipt.kept:
        line += f"\n  kept {receipt.kept}, archived {receipt.archived}"
    if receipt.content_after is not None:
        line += f"\n  text {one_line(receipt.content_before or '', 60)!r} -> {one_line(receipt.content_after, 60)!r}"
    return line


@click.group("conflicts", context_settings=CONTEXT_SETTINGS)
def conflicts() -> None:
    """The conflict review queue: pairs sleep parked for a person."""


@conflicts.command("list", context_settings=CONTEXT_SETTINGS)
@owner_option()
@click.option("--resolved", is_flag=True, help="list resolved entries with their receipts instead")
@click.option("--limit", type=click.IntRange(1, 500), default=50, show_default=True, metavar="N", help="at most N")
@json_option(_WIRE_HELP)
@nats_options
def list_(owner: str, resolved: bool, limit: int, as_json: bool, nats_url: str | None, data_dir: str | None) -> int:
    """Parked conflicts, newest first, and the pending count."""
    from memoryd.rpc import call
    from memoryd.schemas.conflicts import ConflictListRequest, ConflictListResult

    async def go() -> int:
        nc = await nats_connection(nats_url, data_dir)
        try:
            request = ConflictListRequest(owner=owner, status="resolved" if resolved else "pending", limit=limit)
            result: ConflictListResult = await call(nc, "conflicts.list", request)
        finally:
            await nc.drain()
        if as_json:
            print_wire(result)
            return 0
        if result.items:
            if resolved:
                print("\n".join(render_receipt(i.receipt) for i in result.items if i.receipt))
            else:
                rows = table("conflict", "parked", "reason", "memory a", "memory b")
                for i in result.items:
                    parked = f"{i.created_at:%Y-%m-%d %H:%M}"
                    rows.add_row(*cells(i.id, parked, one_line(i.reason, 40), _side(i.a), _side(i.b)))
                print_table(rows)
        print(f"{result.pending} pending")
        return 0

    return run(go())


@conflicts.command("resolve", context_settings=CONTEXT_SETTINGS)
@click.argument("conflict_id")
@owner_option()
@click.option("--action", type=click.Choice(["accept", "merge", "dismiss"]), required=True, help="how to settle it")
@click.option("--keep", metavar="MEMORY_ID", help="accept/merge: the memory that stays")
@click.option("--content", help="merge: the kept memory's new text")
@click.option("--by", "resolved_by", metavar="NAME", help="who resolves it, for the receipt [default: cli:<user>]")
@json_option(_WIRE_HELP)
@nats_options
def resolve(
    conflict_id: str,
    owner: str,
    action: str,
    keep: str | None,
    content: str | None,
    resolved_by: str | None,
    as_json: bool,
    nats_url: str | None,
    data_dir: str | None,
) -> int:
    """Settle one parked conflict and print its receipt."""
    from memoryd.rpc import call
    from memoryd.schemas.conflicts import ConflictResolveRequest, ConflictResolveResult

    async def go() -> int:
        request = ConflictResolveRequest(
            owner=owner,
            id=conflict_id,
            action=action,  # type: ignore[arg-type]
            keep=keep,
            content=content,
            resolved_by=resolved_by or f"cli:{_user()}",
        )
        nc = await nats_connection(nats_url, data_dir)
        try:
            result: ConflictResolveResult = await call(nc, "conflicts.resolve", request)
        finally:
            await nc.drain()
        if as_json:
            print_wire(result)
        else:
            print(render_receipt(result.receipt))
            print(f"{result.pending} pending")
        return 0

    return run(go())


COMMANDS = (conflicts,)
