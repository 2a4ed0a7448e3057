"""The MCP server (official ``mcp`` SDK): memory tools for Claude Desktop, Cursor or any MCP host.

Tools: ``memory_search``, ``memory_add``, ``memory_list``, ``memory_delete``, ``memory_clear``.
The same tools serve streamable HTTP at ``/mcp`` (the owner comes from the request's API key;
operator keys name it with ``x-memory-owner``) and stdio (``memoryd mcp``: one fixed owner).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import msgspec
import pydantic
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from memoryd.errors import MemorydError
from memoryd.schemas.base import MemoryType
from memoryd.schemas.memory import MemoryClearRequest, MemoryCreateRequest, MemoryDeleteRequest, MemoryListRequest
from memoryd.schemas.retrieval import RetrieveRequest

Call = Callable[[str, Any], Awaitable[Any]]
#: The owner a tool call acts for (raises ``MemorydError`` for a missing or wrong key).
OwnerOf = Callable[[Context], Awaitable[str]]

INSTRUCTIONS = (
    "Long-term memory of the user. Search it before answering questions about the user's preferences,"
    " decisions or past conversations; add durable facts the user states."
)


def _plain(value: Any) -> dict[str, Any]:
    out: dict[str, Any] = msgspec.to_builtins(value)
    out.pop("type", None)
    return out


class _Server(MCPServer):
    """``MCPServer`` whose refusals of a tool's arguments (the SDK checks them against the tool's
    signature before the tool runs) name their code, ``validation``, like every other refusal."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Context | None = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if not isinstance(cause, pydantic.ValidationError) or not cause.errors():
                raise
            first = cause.errors()[0]
            where = "$." + ".".join(str(step) for step in first["loc"])
            raise ToolError(f"Error executing tool {name}: validation: {first['msg']} - at `{where}`") from cause


def build_mcp(call: Call, owner_of: OwnerOf) -> MCPServer:
    """An ``MCPServer`` whose tools call memoryd's RPCs for the owner ``owner_of`` names."""
    mcp = _Server(name="memoryd", instructions=INSTRUCTIONS)

    async def run(ctx: Context, op: str, make: Callable[[str], Any]) -> dict[str, Any]:
        try:
            owner = await owner_of(ctx)
            return _plain(await call(op, make(owner)))
        except MemorydError as exc:
            raise ToolError(f"{exc.err_code}: {exc.description}") from exc
        except msgspec.ValidationError as exc:
            raise ToolError(f"validation: {exc}") from exc

    def convert(tp: type, **fields: Any) -> Any:
        return msgspec.convert({k: v for k, v in fields.items() if v is not None}, tp)

    @mcp.tool(
        description="Search the user's memories for what is relevant to a query (ranked, within a token budget), "
        "optionally only memories of some types or of one agent."
    )
    async def memory_search(
        query: str,
        ctx: Context,
        limit: int = 10,
        session_id: str | None = None,
        agent_id: str | None = None,
        max_tokens: int | None = None,
        memory_types: list[MemoryType] | None = None,
    ) -> dict[str, Any]:
        return await run(
            ctx,
            "retrieve",
            lambda o: convert(
                RetrieveRequest,
                owner=o,
                query=query,
                limit=limit,
                session_id=session_id,
                agent_id=agent_id,
                max_tokens=max_tokens,
                types=memory_types,
            ),
        )

    @mcp.tool(
        description="Remember one fact, preference, decision or procedure about the user. With a `key` "
        "(e.g. 'preference:editor') a later add with the same key replaces that memory instead of adding another."
    )
    async def memory_add(
        content: str,
        ctx: Context,
        memory_type: MemoryType = "factual",
        session_id: str | None = None,
        agent_id: str | None = None,
        key: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        return await run(
            ctx,
            "memory.create",
            lambda o: convert(
                MemoryCreateRequest,
                owner=o,
                content=content,
                memory_type=memory_type,
                session_id=session_id,
                agent_id=agent_id,
                key=key,
                metadata=metadata or {},
            ),
        )

    @mcp.tool(description="List the user's memories, newest first, optionally filtered by type, agent or text.")
    async def memory_list(
        ctx: Context,
        memory_type: MemoryType | None = None,
        q: str | None = None,
        limit: int = 20,
        offset: int = 0,
        agent_id: str | None = None,
    ) -> dict[str, Any]:
        return await run(
            ctx,
            "memory.list",
            lambda o: convert(
                MemoryListRequest, owner=o, memory_type=memory_type, q=q, limit=limit, offset=offset, agent_id=agent_id
            ),
        )

    @mcp.tool(description="Delete one memory by its id (from every store).")
    async def memory_delete(id: str, ctx: Context) -> dict[str, Any]:
        return await run(ctx, "memory.delete", lambda o: convert(MemoryDeleteRequest, owner=o, id=id))

    @mcp.tool(
        description="Delete the user's memories: all of them, or one type, one agent's, or those older than some days."
    )
    async def memory_clear(
        ctx: Context,
        memory_type: MemoryType | None = None,
        older_than_days: int | None = None,
        agent_id: str | None = None,
    ) -> dict[str, Any]:
        return await run(
            ctx,
            "memory.clear",
            lambda o: convert(
                MemoryClearRequest,
                owner=o,
                memory_type=memory_type,
                older_than_days=older_than_days,
                agent_id=agent_id,
            ),
        )

    return mcp
