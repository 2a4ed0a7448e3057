"""The retrieve service's RPC handlers: decoded request in, result out (no bytes, no subjects).

``retrieve`` is the engine; ``inject`` retrieves for a chat request and returns it with the
memory context placed as docs/design.md says (``injection.py``); ``engine.status`` reports the
tiers (``status.py``). A retrieval that is not a dry run announces a read of its owner
(``adapters/reads.py``; the sleep worker counts it as activity where the owner's settings say so).
"""

from __future__ import annotations

from dataclasses import dataclass

import msgspec
from nats.js import JetStreamContext

from memoryd.schemas.base import MAX_QUERY_CHARS
from memoryd.schemas.events import ChatMessage
from memoryd.schemas.ops import EngineStatusRequest, EngineStatusResult
from memoryd.schemas.retrieval import InjectRequest, InjectResult, RetrieveRequest, RetrieveResult
from services.retrieve.logic import injection

from .adapters.reads import ReadAnnouncer
from .engine import Engine
from .status import engine_status


@dataclass
class Handlers:
    engine: Engine
    js: JetStreamContext
    no_system_providers: frozenset[str] = injection.DEFAULT_NO_SYSTEM_PROVIDERS
    reads: ReadAnnouncer | None = None

    async def retrieve(self, req: RetrieveRequest) -> RetrieveResult:
        result = await self.engine.retrieve(req)
        if self.reads is not None and not req.dry_run and not req.no_memory:
            self.reads.note(req.owner, req.session_id)
        return result

    async def inject(self, req: InjectRequest) -> InjectResult:
        messages = [msgspec.to_builtins(m) for m in req.messages]
        query = req.query if req.query is not None else injection.default_query(messages)
        result = await self.retrieve(
            RetrieveRequest(
                owner=req.owner,
                query=query[:MAX_QUERY_CHARS],
                session_id=req.session_id,
                agent_id=req.agent_id,
                strategy=req.strategy,
                max_tokens=req.max_tokens,
                no_memory=req.no_memory,
            )
        )
        context = injection.format_memory_context([m.content for m in result.memories])
        where = injection.placement(context, req.provider, self.no_system_providers, model=req.model)
        injected = injection.inject(messages, context, req.provider, self.no_system_providers, model=req.model)
        return InjectResult(
            messages=msgspec.convert(injected, list[ChatMessage]),
            placement=where,
            injected=result.memories if where != "none" else [],
            context=context,
            retrieval=result,
        )

    async def engine_status(self, req: EngineStatusRequest) -> EngineStatusResult:
        return await engine_status(self.engine, self.js, req)
