"""The MCP tools through the official SDK's client, over streamable HTTP (API keys) and stdio."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import httpx2
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from .conftest import Stack

pytestmark = [pytest.mark.integration, pytest.mark.slow]
TOOLS = {"memory_search", "memory_add", "memory_list", "memory_delete", "memory_clear"}


def _result(call: Any) -> dict[str, Any]:
    assert not call.is_error, call.content
    if call.structured_content is not None:
        return dict(call.structured_content)
    return json.loads(call.content[0].text)


async def _exercise(session: ClientSession, owner: str) -> None:
    await session.initialize()
    tools = await session.list_tools()
    assert {t.name for t in tools.tools} == TOOLS
    added = _result(await session.call_tool("memory_add", {"content": "I prefer vim over emacs."}))
    memory = added["memory"]
    assert memory["owner"] == owner
    listed = _result(await session.call_tool("memory_list", {}))
    assert memory["id"] in [m["id"] for m in listed["memories"]]
    found = _result(await session.call_tool("memory_search", {"query": "vim emacs"}))
    assert any("vim" in m["content"] for m in found["memories"])
    deleted = _result(await session.call_tool("memory_delete", {"id": memory["id"]}))
    assert deleted["id"] == memory["id"] and deleted["removed"]["rows"] == 1
    _result(await session.call_tool("memory_add", {"content": "I use tabs.", "memory_type": "procedural"}))
    cleared = _result(await session.call_tool("memory_clear", {"memory_type": "procedural"}))
    assert cleared["count"] >= 1
    missing = await session.call_tool("memory_delete", {"id": memory["id"]})
    assert missing.is_error and "not_found" in missing.content[0].text
    # a key upserts: the second add with the same key replaces the first, with its metadata
    first = _result(await session.call_tool("memory_add", {"content": "My editor is vim.", "key": "preference:editor"}))
    again = _result(
        await session.call_tool(
            "memory_add",
            {"content": "My editor is helix.", "key": "preference:editor", "metadata": {"source_app": "mcp-test"}},
        )
    )
    assert first["created"] and not again["created"] and again["memory"]["id"] == first["memory"]["id"]
    assert (
        again["memory"]["content"] == "My editor is helix." and again["memory"]["metadata"]["source_app"] == "mcp-test"
    )
    listed = _result(await session.call_tool("memory_list", {"q": "editor"}))
    assert [m["content"] for m in listed["memories"]] == ["My editor is helix."]
    _result(
        await session.call_tool("memory_add", {"content": "Deploy with make release.", "memory_type": "procedural"})
    )
    only = _result(
        await session.call_tool("memory_search", {"query": "editor release", "memory_types": ["procedural"]})
    )
    assert only["memories"] and {m["memory_type"] for m in only["memories"]} == {"procedural"}


async def _list_tools(url: str, key: str) -> set[str]:
    async with (
        httpx2.AsyncClient(headers={"authorization": f"Bearer {key}"}, timeout=30) as http,
        streamable_http_client(f"{url}/mcp", http_client=http) as streams,
        ClientSession(streams[0], streams[1]) as session,
    ):
        await session.initialize()
        return {t.name for t in (await session.list_tools()).tools}


async def test_mcp_sessions_opened_at_once_are_all_served(stack: Stack) -> None:
    """The MCP server is built on the first authenticated request: requests racing for it
    (first in this module) all get the same working server; a request without a key is refused."""
    async with httpx2.AsyncClient(timeout=10) as http:
        denied = await http.post(f"{stack.url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert denied.status_code == 401
    listed = await asyncio.gather(*(_list_tools(stack.url, stack.bob_key) for _ in range(4)))
    assert listed == [TOOLS] * 4


async def test_mcp_over_streamable_http_with_api_keys(stack: Stack) -> None:
    headers = {"authorization": f"Bearer {stack.bob_key}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        streamable_http_client(f"{stack.url}/mcp", http_client=http) as streams,
        ClientSession(streams[0], streams[1]) as session,
    ):
        await _exercise(session, stack.bob)
    async with httpx2.AsyncClient(timeout=10) as http:
        denied = await http.post(f"{stack.url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert denied.status_code == 401


async def test_mcp_over_stdio(stack: Stack) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "services.gateway.stdio", "--owner", stack.alice, "--nats-url", stack.nats_url],
    )
    async with stdio_client(params) as streams, ClientSession(streams[0], streams[1]) as session:
        await _exercise(session, stack.alice)
