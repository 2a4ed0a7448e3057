"""``memoryd summarize``, ``memoryd cleanup`` and ``memoryd restore``: an owner's memory over time.

- ``summarize --older-than-days N``: compacts memories older than N days into one summary per
  owner and session (the originals are archived and stay restorable). It is a **dry run unless
  ``--apply``** is given: the dry run lists the candidates and their tokens.
- ``cleanup``: removes expired memories and those past the owner's ``retentionDays`` from
  Postgres and every vector store (``--dry-run`` shows what would go). The ingest service also
  does this on a timer.
- ``restore ID``: brings a summarized or demoted memory back to its exact original.

Without ``--owner``, summarize and cleanup act for every owner (operator credentials).
"""

from __future__ import annotations

from typing import Any

import click

from memoryd.cli.common import (
    CONTEXT_SETTINGS,
    cells,
    json_option,
    nats_options,
    owner_option,
    print_json,
    print_table,
    table,
    timeout_option,
    with_client,
)
from memoryd.client import MemoryClient
from memoryd.schemas.memory import DeletionReceipt

#: Candidate ids listed by a dry run before "... and N more".
SHOWN_IDS = 50


def _receipt(r: DeletionReceipt) -> str:
    return (
        f"rows={r.rows} pgvector_vectors={r.pgvector_vectors} qdrant_points={r.qdrant_points}"
        f" history_rows={r.history_rows}"
    )


def _ids(title: str, ids: list[str]) -> None:
    if not ids:
        return
    listing = table(title)
    for memory_id in ids[:SHOWN_IDS]:
        listing.add_row(*cells(memory_id))
    print_table(listing)
    if len(ids) > SHOWN_IDS:
        print(f"... and {len(ids) - SHOWN_IDS} more (--json lists them all)")


def _scope(owner: str | None) -> str:
    return f"owner {owner}" if owner else "every owner"


@click.command("summarize", context_settings=CONTEXT_SETTINGS)
@click.option(
    "--older-than-days",
    type=click.IntRange(0, 36_500),
    required=True,
    metavar="N",
    help="compact memories created more than N days ago",
)
@click.option("--session", metavar="ID", help="only this session's memories")
@click.option("--apply", is_flag=True, help="really summarize (default: a dry run that lists the candidates)")
@owner_option(required=False, help_text="only this owner's memories (default: every owner)")
@timeout_option(60.0)
@json_option()
@nats_options
@with_client
async def summarize(client: MemoryClient, *, owner: str | None, as_json: bool, apply: bool, **o: Any) -> int:
    """Compact old memories into summaries (dry run unless --apply).

    One summary per owner and session; the originals are archived and `memoryd restore`
    brings one back. Without --apply, lists the candidates and changes nothing.
    """
    result = await client.summarize(o["older_than_days"], owner=owner, session_id=o["session"], dry_run=not apply)
    if as_json:
        print_json(result)
        return 0
    if not apply:
        print(
            f"dry run for {_scope(owner)}: {result.candidates} memories older than {o['older_than_days']} days"
            f" ({result.tokens_before} tokens) would be summarized; run again with --apply to do it"
        )
        _ids("candidate", result.candidate_ids)
        return 0
    removed = f"; vectors removed: {_receipt(result.removed)}" if result.removed is not None else ""
    print(
        f"summarized {result.candidates} memories of {_scope(owner)} into {len(result.summary_ids)} summaries:"
        f" {result.tokens_before} -> {result.tokens_after} tokens{removed}"
    )
    _ids("summary", result.summary_ids)
    return 0


@click.command("cleanup", context_settings=CONTEXT_SETTINGS)
@click.option("--dry-run", is_flag=True, help="only report what would be removed")
@owner_option(required=False, help_text="only this owner's memories (default: every owner)")
@timeout_option(60.0)
@json_option()
@nats_options
@with_client
async def cleanup(client: MemoryClient, *, owner: str | None, as_json: bool, dry_run: bool, **_: Any) -> int:
    """Remove expired and past-retention memories.

    Expired memories and those older than the owner's retentionDays go from Postgres and
    every vector store; global memories are never removed.
    """
    result = await client.cleanup(owner=owner, dry_run=dry_run)
    if as_json:
        print_json(result)
        return 0
    verb = "would remove" if dry_run else "removed"
    print(
        f"{'dry run: ' if dry_run else ''}{_scope(owner)}: {result.expired} expired,"
        f" {result.past_retention} past retention; {verb} {_receipt(result.removed)}"
    )
    if dry_run:
        _ids("candidate", result.candidate_ids)
    return 0


@click.command("restore", context_settings=CONTEXT_SETTINGS)
@click.argument("memory_id", metavar="ID")
@owner_option()
@timeout_option()
@json_option()
@nats_options
@with_client
async def restore(client: MemoryClient, *, owner: str, memory_id: str, as_json: bool, **_: Any) -> int:
    """Restore a summarized or demoted memory to its original."""
    result = await client.restore(owner, memory_id)
    if as_json:
        print_json(result)
    else:
        print(f"restored {result.memory.id} ({result.memory.state}): {result.memory.content}")
    return 0


COMMANDS = (summarize, cleanup, restore)
