"""Client commands: ``memoryd chat`` and ``memoryd memories list|add|get|update|delete|clear|export|import``.

They talk to a running memoryd through ``MemoryClient`` (NATS found as in ``common``).
Output is for people by default (``memories list`` is a table; export and import show a
progress bar on a terminal); ``--json`` prints the result as JSON.
"""

from __future__ import annotations

import asyncio
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click
import msgspec

from memoryd.cli import mem0_export
from memoryd.cli.common import (
    CONTEXT_SETTINGS,
    cells,
    client_options,
    one_line,
    owner_option,
    print_json,
    print_table,
    progress,
    table,
    with_client,
)
from memoryd.client import MemoryClient
from memoryd.errors import ValidationFailed
from memoryd.schemas.base import MEMORY_STATES, MEMORY_TYPES, Role
from memoryd.schemas.memory import MemoryImportResult, MemoryRecord

ROLES: tuple[str, ...] = Role.__args__  # type: ignore[attr-defined]


def show(rec: MemoryRecord) -> None:
    """One memory as a two-column grid: the fields that are set, then the content."""
    fields = msgspec.to_builtins(rec)
    grid = table("field", "value")
    grid.show_header = False
    for name in ("id", "owner", "memory_type", "key", "session_id", "agent_id", "source", "state", "created_at"):
        if fields.get(name) is not None:
            grid.add_row(*cells(name, fields[name]))
    for name in ("updated_at", "expires_at", "last_accessed_at", "metadata"):
        if fields.get(name):
            value = json.dumps(fields[name], ensure_ascii=False) if name == "metadata" else fields[name]
            grid.add_row(*cells(name, value))
    grid.add_row(*cells("content", rec.content))
    print_table(grid)


def _metadata_and_expiry(metadata: str | None, expires_at: str | None) -> tuple[dict[str, Any] | None, datetime | None]:
    try:
        meta = json.loads(metadata) if metadata else None
        expiry = datetime.fromisoformat(expires_at) if expires_at else None
    except ValueError as exc:
        raise ValidationFailed(f"--metadata / --expires-at: {exc}") from exc
    if meta is not None and not isinstance(meta, dict):
        raise ValidationFailed("--metadata must be a JSON object")
    return meta, expiry


# --- chat ------------------------------------------------------------------------------------
@click.command("chat", context_settings=CONTEXT_SETTINGS)
@click.argument("text")
@owner_option()
@click.option("--session", metavar="ID", help="session id")
@click.option("--agent", metavar="ID", help="the agent the conversation is with")
@click.option("--role", type=click.Choice(ROLES), default="user", show_default=True)
@click.option("--name", help="speaker name")
@click.option("--provider", help="LLM provider the message was sent to")
@click.option("--model", help="LLM model the message was sent to")
@click.option("--event-id", metavar="ID", help="default: a new random id")
@click.option("--no-memory", is_flag=True, help="opt this event out of memory")
@client_options
@with_client
async def chat(client: MemoryClient, *, owner: str, text: str, role: str, name: str | None, **o: Any) -> int:
    """Publish one chat message as a chat event.

    This is what an application sends after each turn; extraction turns it into memories.
    """
    message: dict[str, Any] = {"role": role, "content": text}
    if name:
        message["name"] = name
    event_id = await client.publish_chat(
        owner,
        [message],
        session_id=o["session"],
        agent_id=o["agent"],
        event_id=o["event_id"],
        provider=o["provider"],
        model=o["model"],
        no_memory=o["no_memory"],
    )
    if o["as_json"]:
        print_json({"event_id": event_id, "owner": owner})
    else:
        print(f"published chat event {event_id} for {owner}")
    return 0


# --- memories --------------------------------------------------------------------------------
@click.group("memories", context_settings=CONTEXT_SETTINGS)
def memories() -> None:
    """List, add, change, delete, export and import memories."""


@memories.command("list", context_settings=CONTEXT_SETTINGS)
@owner_option()
@click.option("--type", "memory_type", type=click.Choice(MEMORY_TYPES), help="only memories of this type")
@click.option("--session", metavar="ID", help="only this session's memories")
@click.option("--agent", metavar="ID", help="only this agent's memories")
@click.option("-q", "--query", "q", metavar="TEXT", help="text search")
@click.option("--state", type=click.Choice(MEMORY_STATES), help="only memories in this state")
@click.option("--limit", type=int, default=50, show_default=True)
@click.option("--offset", type=int, default=0, show_default=True)
@click.option("--page", type=int, help="page number (1 = the first LIMIT memories)")
@client_options
@with_client
async def list_memories(client: MemoryClient, *, owner: str, as_json: bool, **o: Any) -> int:
    """List memories, newest first."""
    result = await client.list(
        owner,
        memory_type=o["memory_type"],
        session_id=o["session"],
        agent_id=o["agent"],
        q=o["q"],
        state=o["state"],
        limit=o["limit"],
        offset=o["offset"],
        page=o["page"],
    )
    if as_json:
        print_json(result)
        return 0
    rows = table("id", "type", "created", "content")
    for m in result.memories:
        rows.add_row(*cells(m.id, m.memory_type, f"{m.created_at:%Y-%m-%d %H:%M}", one_line(m.content)))
    if result.memories:
        print_table(rows)
    print(
        f"{len(result.memories)} of {result.total} memories · {result.tokens_used} tokens"
        f" · hit rate {result.hit_rate:.2f}"
    )
    return 0


@memories.command("add", context_settings=CONTEXT_SETTINGS)
@click.argument("text")
@owner_option()
@click.option("--type", "memory_type", type=click.Choice(MEMORY_TYPES), default="factual", show_default=True)
@click.option("--key", help="a stable key: adding with the same key updates that memory")
@click.option("--session", metavar="ID", help="session id")
@click.option("--agent", metavar="ID", help="the agent the memory belongs to")
@click.option("--metadata", metavar="JSON", help="a JSON object")
@click.option("--expires-at", metavar="TIME", help="ISO 8601 time in the future")
@client_options
@with_client
async def add(client: MemoryClient, *, owner: str, text: str, as_json: bool, **o: Any) -> int:
    """Add a memory (upserts when --key is given)."""
    metadata, expires_at = _metadata_and_expiry(o["metadata"], o["expires_at"])
    result = await client.create(
        owner,
        text,
        memory_type=o["memory_type"],
        key=o["key"],
        session_id=o["session"],
        agent_id=o["agent"],
        metadata=metadata or {},
        expires_at=expires_at,
    )
    if as_json:
        print_json(result)
    else:
        print(f"{'created' if result.created else 'updated'} {result.memory.id}")
    return 0


@memories.command("get", context_settings=CONTEXT_SETTINGS)
@click.argument("memory_id", metavar="ID")
@owner_option()
@client_options
@with_client
async def get(client: MemoryClient, *, owner: str, memory_id: str, as_json: bool, **_: Any) -> int:
    """Show one memory."""
    rec = await client.get(owner, memory_id)
    print_json(rec) if as_json else show(rec)
    return 0


def _something_to_change(**o: Any) -> None:
    if all(o[name] is None for name in ("content", "memory_type", "session", "metadata", "expires_at")):
        raise click.UsageError("nothing to change: give --text, --type, --session, --metadata or --expires-at")


def _confirmed(*, yes: bool, **_: Any) -> None:
    if not yes:
        raise click.UsageError("clear deletes for good: add --yes")


@memories.command("update", context_settings=CONTEXT_SETTINGS)
@click.argument("memory_id", metavar="ID")
@owner_option()
@click.option("--text", "content", help="new content (re-embedded)")
@click.option("--type", "memory_type", type=click.Choice(MEMORY_TYPES), help="new type")
@click.option("--session", metavar="ID", help="move it to this session")
@click.option("--metadata", metavar="JSON", help="new metadata (a JSON object)")
@click.option("--expires-at", metavar="TIME", help="ISO 8601 time in the future")
@client_options
@with_client(check=_something_to_change)
async def update(client: MemoryClient, *, owner: str, memory_id: str, as_json: bool, **o: Any) -> int:
    """Change a memory's content, type, session, metadata or expiry."""
    metadata, expires_at = _metadata_and_expiry(o["metadata"], o["expires_at"])
    result = await client.update(
        owner,
        memory_id,
        content=o["content"],
        memory_type=o["memory_type"],
        metadata=metadata,
        expires_at=expires_at,
        session_id=o["session"],
    )
    if as_json:
        print_json(result)
    else:
        print(f"updated {result.memory.id}" + (" (re-embedding)" if result.reembed else ""))
    return 0


@memories.command("delete", context_settings=CONTEXT_SETTINGS)
@click.argument("memory_id", metavar="ID")
@owner_option()
@client_options
@with_client
async def delete(client: MemoryClient, *, owner: str, memory_id: str, as_json: bool, **_: Any) -> int:
    """Delete one memory from Postgres and every vector store."""
    result = await client.delete(owner, memory_id)
    if as_json:
        print_json(result)
    else:
        r = result.removed
        print(
            f"deleted {result.id}: rows={r.rows} pgvector_vectors={r.pgvector_vectors}"
            f" qdrant_points={r.qdrant_points} history_rows={r.history_rows}"
        )
    return 0


@memories.command("clear", context_settings=CONTEXT_SETTINGS)
@owner_option()
@click.option("--type", "memory_type", type=click.Choice(MEMORY_TYPES), help="only memories of this type")
@click.option("--older-than-days", type=click.IntRange(min=0), metavar="N", help="only memories older than N days")
@click.option("--agent", metavar="ID", help="only this agent's memories")
@click.option("--yes", is_flag=True, help="really delete (required: there is no undo)")
@client_options
@with_client(check=_confirmed)
async def clear(client: MemoryClient, *, owner: str, as_json: bool, **o: Any) -> int:
    """Delete an owner's memories: all, or by type, agent and age."""
    result = await client.clear(
        owner, memory_type=o["memory_type"], older_than_days=o["older_than_days"], agent_id=o["agent"]
    )
    if as_json:
        print_json(result)
    else:
        r = result.removed
        print(
            f"cleared {result.count} memories of {owner}: rows={r.rows} pgvector_vectors={r.pgvector_vectors}"
            f" qdrant_points={r.qdrant_points} history_rows={r.history_rows}"
        )
    return 0


@memories.command("export", context_settings=CONTEXT_SETTINGS)
@owner_option()
@click.option("--out", metavar="FILE", help="file to write (default stdout)")
@click.option("--no-archived", is_flag=True, help="leave archived memories out")
@client_options
@with_client
async def export(client: MemoryClient, *, owner: str, out: str | None, as_json: bool, **o: Any) -> int:
    """Export an owner's memories as JSON lines (one per memory)."""
    count = 0
    sink = await asyncio.to_thread(open, out, "w", encoding="utf-8") if out else sys.stdout
    try:
        with progress(f"exporting {owner}", None, enabled=bool(out)) as (bar, task):  # not over the lines
            async for page in client.export_pages(owner, include_archived=not o["no_archived"]):
                await asyncio.to_thread(sink.write, page.lines)
                count += page.count
                bar.update(task, completed=count)
    finally:
        if out:
            await asyncio.to_thread(sink.close)
    if out:
        if as_json:
            print_json({"count": count, "out": out})
        else:
            print(f"exported {count} memories of {owner} to {out}", file=sys.stderr)
    return 0


def report_import(result: MemoryImportResult, as_json: bool) -> int:
    if as_json:
        print_json(result)
    else:
        for err in result.errors:
            print(f"line {err.line}: {err.error}", file=sys.stderr)
        verdict = "nothing imported" if result.errors else "done"
        print(f"imported {result.imported}, updated {result.updated}, unchanged {result.unchanged} ({verdict})")
    return 1 if result.errors else 0


def _import_owner_given(*, owner: str | None, source: str, **_: Any) -> None:
    if owner is None and source == "memoryd":
        raise click.UsageError("--owner is needed (it is optional only with --from mem0)")


@memories.command("import", context_settings=CONTEXT_SETTINGS)
@click.argument("file", required=False, metavar="[FILE]")
@owner_option(required=False, help_text="the owner to import into (with --from mem0: default each user_id)")
@click.option(
    "--from",
    "source",
    type=click.Choice(["memoryd", "mem0"]),
    default="memoryd",
    show_default=True,
    help="memoryd: JSON lines as exported; mem0: mem0's get_all output or export JSON",
)
@client_options
@with_client(check=_import_owner_given)
async def import_(
    client: MemoryClient, *, owner: str | None, file: str | None, source: str, as_json: bool, **_: Any
) -> int:
    """Import JSON lines as exported, or a mem0 export (idempotent).

    FILE defaults to stdin (as does '-'). Exits 1 and imports nothing when a line (or mem0
    entry) is bad. A mem0 entry's user_id is its owner, agent_id its agent, run_id its
    session; importing the same export again changes nothing.
    """
    if file in (None, "-"):
        text = sys.stdin.read()
    else:
        try:
            text = await asyncio.to_thread(Path(file).read_text, encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ValidationFailed(f"cannot read {file}: {exc}") from exc
    if source == "memoryd":
        assert owner is not None  # _import_owner_given
        by_owner = {owner: text.splitlines()}
    else:
        by_owner = await _mem0_lines(text, owner)
    total = MemoryImportResult(imported=0, updated=0, unchanged=0)
    for whose, lines in by_owner.items():
        with progress(f"importing into {whose}", len(lines)) as (bar, task):
            part = await client.import_lines(whose, lines, progress=lambda done: bar.update(task, completed=done))
        total = MemoryImportResult(
            imported=total.imported + part.imported,
            updated=total.updated + part.updated,
            unchanged=total.unchanged + part.unchanged,
            errors=[*total.errors, *part.errors],
        )
        if part.errors:
            break
    return report_import(total, as_json)


async def _mem0_lines(text: str, owner: str | None) -> dict[str, list[str]]:
    """A mem0 export's import lines per owner; ``ValidationFailed`` listing the bad entries."""
    try:
        by_owner, errors = mem0_export.import_lines(text, datetime.now(UTC), owner)
    except ValueError as exc:
        raise ValidationFailed(f"not a mem0 export: {exc}") from exc
    if errors:
        listed = "; ".join(f"entry {e.line}: {e.error}" for e in errors[:10])
        raise ValidationFailed(f"{len(errors)} mem0 entries cannot be imported (nothing was): {listed}")
    return by_owner


COMMANDS = (chat, memories)
