"""``MemorydStore``: LangGraph's ``BaseStore`` over memoryd's gateway.

``batch`` runs the operations with the blocking ``Memory`` client, ``abatch`` with
``AsyncMemory``; both follow the same steps (``steps``), so the sync and async conveniences
``BaseStore`` derives from them (``get``/``aget``, ``put``, ``search``, ``list_namespaces``, ...)
behave alike. The clients are made on first use from the URL, key and options given here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from langgraph.store.base import BaseStore, Op, Result

from memoryd.errors import ConfigError
from memoryd.http.aio import AsyncMemory
from memoryd.http.sync import Memory
from memoryd.integrations.langgraph import steps

#: ``index`` keys this store reads; ``dims`` is accepted and unused (memoryd's model decides).
_INDEX_KEYS = ("fields", "dims")


def config_of(
    index: Mapping[str, Any] | None,
    *,
    owner: str | None,
    owner_label: int | None,
    memory_type: str,
    threshold: float | None,
    strategy: str | None = None,
    agent_label: int | None = None,
    session_label: int | None = None,
) -> steps.Config:
    """The store's configuration; an ``index`` asking for its own embedding is a ``ConfigError``."""
    fields: tuple[str, ...] | None = None
    if index is not None:
        unknown = sorted(set(index) - set(_INDEX_KEYS))
        if unknown:
            raise ConfigError(
                f"index.{unknown[0]}", "memoryd embeds with its own model: give only `fields` (the paths to embed)"
            )
        raw = index.get("fields")
        if raw is not None:
            if isinstance(raw, str) or not all(isinstance(f, str) and f for f in raw):
                raise ConfigError("index.fields", f"a list of paths such as ['text'] or ['$'], not {raw!r}")
            fields = tuple(raw)
    labels = {"owner_label": owner_label, "agent_label": agent_label, "session_label": session_label}
    for name, position in labels.items():
        if position is not None and position < 0:
            raise ConfigError(name, f"a namespace position (0, 1, ...) or None, not {position}")
    named = [p for p in labels.values() if p is not None]
    if len(named) != len(set(named)):
        raise ConfigError("agent_label", f"owner, agent and session need positions of their own, not {labels}")
    return steps.Config(
        owner=owner,
        owner_label=owner_label,
        agent_label=agent_label,
        session_label=session_label,
        fields=fields,
        memory_type=memory_type,
        threshold=threshold,
        strategy=strategy,
    )


class MemorydStore(BaseStore):
    """A LangGraph store whose items are memoryd memories (the mapping: ``memoryd.integrations.langgraph``).

    ``owner_label``: the namespace position naming the owner (1: ``("memories", user_id)``);
    None keeps every item with ``owner`` (None: the API key's own owner). ``agent_label`` and
    ``session_label``: the positions naming the memory's agent and session (``("memories", user_id,
    agent_id)`` with ``agent_label=2``), stored in memoryd's own columns; a prefix naming them
    reaches only that agent's (session's) items. ``index={"fields": [...]}``
    picks the value fields memoryd embeds. ``threshold`` drops query results below that vector
    similarity; ``strategy`` (``semantic``, ``hybrid``, ``exact``) ranks them. Other keyword
    arguments go to ``Memory``/``AsyncMemory`` (``timeout``, ...).
    """

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        owner: str | None = None,
        owner_label: int | None = 1,
        agent_label: int | None = None,
        session_label: int | None = None,
        index: Mapping[str, Any] | None = None,
        memory_type: str = "factual",
        threshold: float | None = None,
        strategy: str | None = None,
        **client_options: Any,
    ) -> None:
        self.config = config_of(
            index,
            owner=owner,
            owner_label=owner_label,
            agent_label=agent_label,
            session_label=session_label,
            memory_type=memory_type,
            threshold=threshold,
            strategy=strategy,
        )
        self._client_args = (base_url, api_key, client_options)
        self._memory: Memory | None = None
        self._amemory: AsyncMemory | None = None

    @property
    def memory(self) -> Memory:
        if self._memory is None:
            base_url, api_key, options = self._client_args
            self._memory = Memory(base_url, api_key, **options)
        return self._memory

    @property
    def amemory(self) -> AsyncMemory:
        if self._amemory is None:
            base_url, api_key, options = self._client_args
            self._amemory = AsyncMemory(base_url, api_key, **options)
        return self._amemory

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return steps.run(steps.batch(list(ops), self.config), self.memory)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await steps.arun(steps.batch(list(ops), self.config), self.amemory)

    def close(self) -> None:
        if self._memory is not None:
            self._memory.close()
            self._memory = None

    async def aclose(self) -> None:
        self.close()
        if self._amemory is not None:
            await self._amemory.close()
            self._amemory = None

    def __enter__(self) -> MemorydStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> MemorydStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
