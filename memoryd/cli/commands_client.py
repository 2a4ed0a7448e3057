"""Client commands: ``memoryd chat`` and ``memoryd memories list|add|get|delete|export|import``.

They talk to a running memoryd through ``MemoryClient``. NATS is found as for
``memoryd search``: ``--nats-url``, else ``$MEMORYD_NATS_URL``, else
``<data-dir>/runtime.json`` written by ``memoryd up``. Output is for people by default;
``--json`` prints the result as JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import msgspec

from memoryd.cli.commands_search import resolve_nats_url
from memoryd.client import MemoryClient
from shared.errors import ValidationFailed
from shared.observability.logging import configure
from shared.schemas.base import MEMORY_STATES, MEMORY_TYPES, Role
from shared.schemas.memory import MemoryImportResult, MemoryRecord
from shared.settings.env import LogConfig

ROLES: tuple[str, ...] = Role.__args__  # type: ignore[attr-defined]


def _out(value: Any) -> None:
    print(json.dumps(msgspec.to_builtins(value), ensure_ascii=False, indent=2))


def _one_line(text: str, width: int = 80) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _show(rec: MemoryRecord) -> None:
    fields = msgspec.to_builtins(rec)
    fields.pop("type", None)
    for name in ("id", "owner", "memory_type", "key", "session_id", "source", "state", "created_at", "updated_at"):
        if fields.get(name) is not None:
            print(f"{name:>14}: {fields[name]}")
    for name in ("expires_at", "last_accessed_at", "metadata"):
        if fields.get(name):
            print(f"{name:>14}: {json.dumps(fields[name], ensure_ascii=False) if name == 'metadata' else fields[name]}")
    print(f"{'content':>14}: {rec.content}")


def _with_client(run: Callable[[MemoryClient, argparse.Namespace], Awaitable[int]]) -> Callable[..., Any]:
    async def command(args: argparse.Namespace) -> int:
        configure("cli", LogConfig(level="error", format="console"))  # stdout stays the command's output
        client = await MemoryClient.connect(resolve_nats_url(args.nats_url, args.data_dir), timeout=args.timeout)
        try:
            return await run(client, args)
        finally:
            await client.close()

    return command


# --- commands --------------------------------------------------------------------------------
async def _chat(client: MemoryClient, args: argparse.Namespace) -> int:
    message: dict[str, Any] = {"role": args.role, "content": args.text}
    if args.name:
        message["name"] = args.name
    event_id = await client.publish_chat(
        args.owner,
        [message],
        session_id=args.session,
        event_id=args.event_id,
        provider=args.provider,
        model=args.model,
        no_memory=args.no_memory,
    )
    if args.json:
        _out({"event_id": event_id, "owner": args.owner})
    else:
        print(f"published chat event {event_id} for {args.owner}")
    return 0


async def _list(client: MemoryClient, args: argparse.Namespace) -> int:
    result = await client.list(
        args.owner,
        memory_type=args.type,
        session_id=args.session,
        q=args.q,
        state=args.state,
        limit=args.limit,
        offset=args.offset,
        page=args.page,
    )
    if args.json:
        _out(result)
        return 0
    for m in result.memories:
        print(f"{m.id}  {m.memory_type:<10} {m.created_at:%Y-%m-%d %H:%M}  {_one_line(m.content)}")
    print(f"{len(result.memories)} of {result.total} memories · {result.tokens_used} tokens", end="")
    print(f" · hit rate {result.hit_rate:.2f}")
    return 0


async def _add(client: MemoryClient, args: argparse.Namespace) -> int:
    try:
        metadata = json.loads(args.metadata) if args.metadata else {}
        expires_at = datetime.fromisoformat(args.expires_at) if args.expires_at else None
    except ValueError as exc:
        raise ValidationFailed(f"--metadata / --expires-at: {exc}") from exc
    if not isinstance(metadata, dict):
        raise ValidationFailed("--metadata must be a JSON object")
    result = await client.create(
        args.owner,
        args.text,
        memory_type=args.type,
        key=args.key,
        session_id=args.session,
        metadata=metadata,
        expires_at=expires_at,
    )
    if args.json:
        _out(result)
    else:
        print(f"{'created' if result.created else 'updated'} {result.memory.id}")
    return 0


async def _get(client: MemoryClient, args: argparse.Namespace) -> int:
    rec = await client.get(args.owner, args.id)
    _out(rec) if args.json else _show(rec)
    return 0


async def _delete(client: MemoryClient, args: argparse.Namespace) -> int:
    result = await client.delete(args.owner, args.id)
    if args.json:
        _out(result)
    else:
        r = result.removed
        print(
            f"deleted {result.id}: rows={r.rows} pgvector_vectors={r.pgvector_vectors}"
            f" qdrant_points={r.qdrant_points} history_rows={r.history_rows}"
        )
    return 0


async def _export(client: MemoryClient, args: argparse.Namespace) -> int:
    count = 0
    sink = await asyncio.to_thread(open, args.out, "w", encoding="utf-8") if args.out else sys.stdout
    try:
        async for page in client.export_pages(args.owner, include_archived=not args.no_archived):
            await asyncio.to_thread(sink.write, page.lines)
            count += page.count
    finally:
        if args.out:
            await asyncio.to_thread(sink.close)
    if args.out:
        if args.json:
            _out({"count": count, "out": args.out})
        else:
            print(f"exported {count} memories of {args.owner} to {args.out}", file=sys.stderr)
    return 0


def _report_import(result: MemoryImportResult, as_json: bool) -> int:
    if as_json:
        _out(result)
    else:
        for err in result.errors:
            print(f"line {err.line}: {err.error}", file=sys.stderr)
        verdict = "nothing imported" if result.errors else "done"
        print(f"imported {result.imported}, updated {result.updated}, unchanged {result.unchanged} ({verdict})")
    return 1 if result.errors else 0


async def _import(client: MemoryClient, args: argparse.Namespace) -> int:
    if args.file in (None, "-"):
        text = sys.stdin.read()
    else:
        try:
            text = await asyncio.to_thread(Path(args.file).read_text, encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ValidationFailed(f"cannot read {args.file}: {exc}") from exc
    return _report_import(await client.import_lines(args.owner, text), args.json)


# --- parser ----------------------------------------------------------------------------------
def _common() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--nats-url", help="NATS URL (default $MEMORYD_NATS_URL, else <data-dir>/runtime.json)")
    common.add_argument("--data-dir", help="where `memoryd up` keeps runtime.json (default .memoryd)")
    common.add_argument("--json", action="store_true", help="print machine-readable JSON")
    common.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for an answer")
    common.add_argument("--owner", required=True, help="the API key id whose memory this is")
    return common


def register(sub: argparse._SubParsersAction) -> None:
    common = _common()
    chat = sub.add_parser("chat", parents=[common], help="publish one chat message as a chat event")
    chat.add_argument("text")
    chat.add_argument("--session", help="session id")
    chat.add_argument("--role", default="user", choices=ROLES)
    chat.add_argument("--name", help="speaker name")
    chat.add_argument("--provider")
    chat.add_argument("--model")
    chat.add_argument("--event-id", help="default: a new random id")
    chat.add_argument("--no-memory", action="store_true", help="opt this event out of memory")
    chat.set_defaults(func=_with_client(_chat))

    mem = sub.add_parser("memories", help="list, add, get, delete, export and import memories")
    msub = mem.add_subparsers(dest="action", required=True, metavar="ACTION")

    ls = msub.add_parser("list", parents=[common], help="list memories (newest first)")
    ls.add_argument("--type", choices=MEMORY_TYPES)
    ls.add_argument("--session")
    ls.add_argument("-q", "--query", dest="q", help="text search")
    ls.add_argument("--state", choices=MEMORY_STATES)
    ls.add_argument("--limit", type=int, default=50)
    ls.add_argument("--offset", type=int, default=0)
    ls.add_argument("--page", type=int)
    ls.set_defaults(func=_with_client(_list))

    add = msub.add_parser("add", parents=[common], help="add a memory (upserts when --key is given)")
    add.add_argument("text")
    add.add_argument("--type", default="factual", choices=MEMORY_TYPES)
    add.add_argument("--key")
    add.add_argument("--session")
    add.add_argument("--metadata", help="a JSON object")
    add.add_argument("--expires-at", help="ISO 8601 time in the future")
    add.set_defaults(func=_with_client(_add))

    for name, helptext, run in (("get", "show one memory", _get), ("delete", "delete one memory", _delete)):
        p = msub.add_parser(name, parents=[common], help=helptext)
        p.add_argument("id")
        p.set_defaults(func=_with_client(run))

    ex = msub.add_parser("export", parents=[common], help="export as JSON lines")
    ex.add_argument("--out", help="file to write (default stdout)")
    ex.add_argument("--no-archived", action="store_true", help="leave archived memories out")
    ex.set_defaults(func=_with_client(_export))

    im = msub.add_parser("import", parents=[common], help="import JSON lines (idempotent)")
    im.add_argument("file", nargs="?", help="file to read (default or '-': stdin)")
    im.set_defaults(func=_with_client(_import))
