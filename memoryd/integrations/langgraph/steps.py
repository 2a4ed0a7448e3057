"""Each LangGraph operation as a sequence of REST calls, written once for both clients.

An operation is a generator that yields ``memoryd.http.calls.Call`` values and is sent each
answer (the decoded result Struct); ``run`` and ``arun`` drive it with ``Memory`` or
``AsyncMemory``. The generators decide what to ask and how to read it; the clients only send.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from langgraph.store.base import GetOp, Item, ListNamespacesOp, Op, PutOp, Result, SearchItem, SearchOp

from memoryd.errors import ValidationFailed
from memoryd.http import calls
from memoryd.http.aio import AsyncMemory
from memoryd.http.calls import Call
from memoryd.http.sync import Memory
from memoryd.integrations.langgraph import mapping
from memoryd.schemas.memory import MemoryListResult, MemoryRecord
from memoryd.schemas.retrieval import MAX_TOKENS_LIMIT, RetrieveResult

T = TypeVar("T")
Steps = Generator[Call, Any, T]
#: The most one listing or search returns (the gateway's limit).
PAGE = 1000
#: The most values of one "in" filter (the gateway's limit).
KEYS_PER_LISTING = 100


@dataclass(frozen=True)
class Config:
    """What maps namespaces to owners and values to text (see the package docstring)."""

    owner: str | None = None
    owner_label: int | None = 1
    #: the namespace positions naming the memory's agent and session (its columns); None: none
    agent_label: int | None = None
    session_label: int | None = None
    fields: tuple[str, ...] | None = None
    memory_type: str = "factual"
    threshold: float | None = None
    #: memoryd's ranking for a query (``semantic``, ``hybrid``, ``exact``); None: the owner's setting
    strategy: str | None = None
    #: the most memories a filtered listing or ``list_namespaces`` reads
    scan_limit: int = 100_000


def run(steps: Steps[T], memory: Memory) -> T:
    """Drive ``steps`` with the blocking client."""
    try:
        call = next(steps)
        while True:
            call = steps.send(memory._send(call))
    except StopIteration as done:
        return done.value


async def arun(steps: Steps[T], memory: AsyncMemory) -> T:
    """Drive ``steps`` with the asyncio client."""
    try:
        call = next(steps)
        while True:
            call = steps.send(await memory._send(call))
    except StopIteration as done:
        return done.value


def batch(ops: Sequence[Op], config: Config) -> Steps[list[Result]]:
    """The operations in order (a read sees the writes before it in the batch)."""
    results: list[Result] = []
    for op in ops:
        results.append((yield from one(op, config)))
    return results


def one(op: Op, config: Config) -> Steps[Result]:
    if isinstance(op, GetOp):
        return (yield from get(op, config))
    if isinstance(op, PutOp):
        yield from put(op, config)
        return None
    if isinstance(op, SearchOp):
        return (yield from search(op, config))
    if isinstance(op, ListNamespacesOp):
        return (yield from list_namespaces(op, config))
    raise ValidationFailed.at("$.op", f"not a LangGraph store operation: {type(op).__name__}")


def _columns(config: Config) -> tuple[int, ...]:
    """The namespace positions that are memory columns (agent, session), not metadata."""
    return tuple(p for p in (config.agent_label, config.session_label) if p is not None)


def _scope(namespace: Sequence[str], config: Config) -> dict[str, str | None]:
    """The owner, agent and session a namespace (or prefix) names, as the clients' arguments."""
    return {
        "user_id": mapping.owner_of(namespace, config.owner_label, config.owner),
        "agent_id": mapping.label_at(namespace, config.agent_label),
        "run_id": mapping.label_at(namespace, config.session_label),
    }


def _listing(namespace: Sequence[str], config: Config, filters: dict[str, Any], limit: int, offset: int) -> Call:
    return calls.get_all(
        **_scope(namespace, config), memory_type=None, state=None, limit=limit, offset=offset, filters=filters
    )


def _item(record: MemoryRecord) -> Item | None:
    stored = mapping.stored_of(record.metadata, record.created_at, record.updated_at)
    if stored is None:
        return None
    return Item(
        value=stored.value,
        key=stored.key,
        namespace=stored.namespace,
        created_at=stored.created_at,
        updated_at=stored.updated_at,
    )


def _search_item(item: Item, score: float | None = None) -> SearchItem:
    return SearchItem(item.namespace, item.key, item.value, item.created_at, item.updated_at, score)


def _records(namespace: tuple[str, ...], key: str, config: Config) -> Steps[list[MemoryRecord]]:
    wanted = mapping.memory_key(namespace, key)
    listing: MemoryListResult = yield _listing(namespace, config, mapping.item_filter(namespace, [key]), 10, 0)
    return [m for m in listing.memories if m.key == wanted]


def get(op: GetOp, config: Config) -> Steps[Item | None]:
    namespace = mapping.check_namespace(op.namespace)
    for record in (yield from _records(namespace, op.key, config)):
        return _item(record)
    return None


def put(op: PutOp, config: Config) -> Steps[None]:
    """Upsert the item's memory by its key; a None value deletes it."""
    namespace = mapping.check_namespace(op.namespace)
    if not namespace:
        raise ValidationFailed.at("$.namespace", "a namespace has at least one label")
    if op.ttl is not None:
        raise ValidationFailed.at("$.ttl", "this store keeps items until they are deleted (no ttl)")
    owner = mapping.owner_of(namespace, config.owner_label, config.owner)
    if op.value is None:
        for record in (yield from _records(namespace, op.key, config)):
            yield calls.delete(record.id, user_id=owner)
        return None
    whole = mapping.value_json(op.value)  # a value that is not JSON fails here, typed
    if op.index is False:
        content, indexed = whole, False
    else:
        content, indexed = mapping.content_of(op.value, config.fields if op.index is None else op.index)
    yield calls.create(
        content,
        **_scope(namespace, config),
        metadata=mapping.metadata_of(namespace, op.key, op.value, indexed),
        memory_type=config.memory_type,
        key=mapping.memory_key(namespace, op.key),
        expires_at=None,
    )
    return None


def search(op: SearchOp, config: Config) -> Steps[list[SearchItem]]:
    prefix = mapping.check_namespace(op.namespace_prefix, "$.namespace_prefix")
    if op.limit < 0 or op.offset < 0:
        raise ValidationFailed.at("$.limit", "limit and offset are not negative")
    if op.query:
        return (yield from _ranked(op, prefix, config))
    filters = mapping.prefix_filter(prefix, _columns(config))
    if not op.filter and op.offset + op.limit <= PAGE:
        listing: MemoryListResult = yield _listing(prefix, config, filters, max(op.limit, 1), op.offset)
        items = [i for i in map(_item, listing.memories) if i is not None]
        return [_search_item(i) for i in items[: op.limit]]
    kept: list[Item] = []
    for offset in range(0, config.scan_limit, PAGE):
        listing = yield _listing(prefix, config, filters, PAGE, offset)
        kept.extend(i for i in map(_item, listing.memories) if i is not None and mapping.matches(i.value, op.filter))
        if len(kept) >= op.offset + op.limit or len(listing.memories) < PAGE:
            break
    return [_search_item(i) for i in kept[op.offset : op.offset + op.limit]]


def _ranked(op: SearchOp, prefix: tuple[str, ...], config: Config) -> Steps[list[SearchItem]]:
    """memoryd's search within the prefix, best first; then each hit's record for ``updated_at``."""
    filters = mapping.prefix_filter(prefix, _columns(config)) | {mapping.INDEXED: True}
    wanted = op.offset + op.limit
    depth = min(PAGE, wanted if not op.filter else max(wanted * 10, 100))
    if wanted == 0:
        return []
    result: RetrieveResult = yield calls.search(
        op.query or "",
        **_scope(prefix, config),
        limit=depth,
        threshold=config.threshold,
        filters=filters,
        max_tokens=MAX_TOKENS_LIMIT,
        **({} if config.strategy is None else {"strategy": config.strategy}),
    )
    hits: list[tuple[str, float, str]] = []
    for hit in result.memories:
        stored = mapping.stored_of(hit.metadata, hit.created_at, hit.created_at)
        if stored is not None and mapping.matches(stored.value, op.filter):
            hits.append((hit.id, hit.score, stored.key))
    hits = hits[op.offset : wanted]
    keys = sorted({key for _, _, key in hits})
    by_id: dict[str, Item] = {}
    for start in range(0, len(keys), KEYS_PER_LISTING):
        chunk = keys[start : start + KEYS_PER_LISTING]
        listing: MemoryListResult = yield _listing(prefix, config, filters | {mapping.KEY: {"in": chunk}}, PAGE, 0)
        by_id |= {m.id: item for m in listing.memories if (item := _item(m)) is not None}
    return [_search_item(by_id[i], score) for i, score, _ in hits if i in by_id]


def list_namespaces(op: ListNamespacesOp, config: Config) -> Steps[list[tuple[str, ...]]]:
    """Every namespace the owner's items are in, read page by page, then LangGraph's selection."""
    conditions = [(c.match_type, tuple(c.path)) for c in op.match_conditions or ()]
    prefix: tuple[str, ...] = ()
    for match_type, path in conditions:
        mapping.check_namespace([p for p in path if p != "*"], "$.match_conditions")
        if match_type == "prefix" and len(path) > len(prefix):
            prefix = path
    found: set[tuple[str, ...]] = set()
    filters = mapping.prefix_filter(prefix, _columns(config))
    for offset in range(0, config.scan_limit, PAGE):
        listing: MemoryListResult = yield _listing(prefix, config, filters, PAGE, offset)
        found.update(i.namespace for i in map(_item, listing.memories) if i is not None)
        if len(listing.memories) < PAGE:
            break
    return mapping.select_namespaces(found, conditions, op.max_depth, op.limit, op.offset)
