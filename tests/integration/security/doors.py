"""The doors of the hostile-input suite: each adapter turns one ``DoorCase`` into a call on its
door and says what came back, in one vocabulary: the ``err_code`` of a typed refusal, ``ok``
for an accepted call, ``None`` when the door has no way to say the case (an MCP tool without
that argument, a proxy without memory ids), ``dropped`` for a raw line the MCP stdio transport
ignores while it goes on serving. Anything else (a 5xx, an untyped error, a door that stops
serving) raises ``Broken``, which the suite reports as a failure.

NATS is the ``MemoryClient`` of an owner-bound user that also claims the victim's owner (so a
spoof goes to the victim's subject and meets nats-server); REST and the proxy are HTTP with an
owner key (the proxy through the official ``openai`` SDK); MCP is the SDK's client over
streamable HTTP and over stdio (one process for one owner, as ``memoryd mcp`` runs it).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any
from urllib.parse import quote

import httpx
import httpx2
import msgspec
import openai
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from nats.aio.client import Client
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeout

from memoryd.client import MemoryClient
from memoryd.codec import decode_reply
from memoryd.errors import MemorydError
from memoryd.rpc import raise_for
from memoryd.schemas import RPC_OPS, RpcError, RpcOp
from memoryd.subjects import OWNER_BOUND_OPS
from tests.support.hostile import DoorCase

#: ``err_code`` -> the HTTP status a door that speaks HTTP must pair it with.
STATUS = {"validation": 400, "forbidden": 403, "not_found": 404, "too_large": 413}
PROBLEM = "application/problem+json"
OK = "ok"


class Broken(Exception):
    """The door answered in a way no caller can act on: a 5xx, an untyped error, a wrong shape."""


@dataclass
class Callers:
    """Who calls each door: bob (an owner key, an owner-bound NATS user), or the operator."""

    url: str
    bob: str
    bob_key: str
    operator_key: str
    nats_bob: MemoryClient
    nats_app: MemoryClient
    nats_operator: MemoryClient
    stdio: ClientSession | None = None
    stdio_raw: StdioRaw | None = None


Door = Callable[[DoorCase, dict[str, Any], Callers], Awaitable[str | None]]


# --- NATS ---------------------------------------------------------------------------------------
RPC = {
    "get": "memory.get",
    "update": "memory.update",
    "delete": "memory.delete",
    "restore": "memory.restore",
    "list": "memory.list",
    "search": "retrieve",
    "create": "memory.create",
    "clear": "memory.clear",
    "export": "memory.export",
    "import": "memory.import",
    "settings": "settings.put",
    "sleep_status": "sleep.status",
}


async def _request(nc: Client, spec: RpcOp, data: bytes, subject: str) -> Any:
    try:
        msg = await nc.request(subject, data, timeout=30)
    except (NoRespondersError, NatsTimeout) as exc:
        raise Broken(f"no answer on {subject}: {type(exc).__name__}") from exc
    reply = decode_reply(msg.data, spec.result)
    if isinstance(reply, RpcError):
        raise_for(reply)
    return reply


def _nats_caller(case: DoorCase, c: Callers) -> MemoryClient:
    """The operator; else bob's owner-bound user for what it may call; else the application
    role that serves bob (``sleep.status`` is no owner-bound op)."""
    if case.operator:
        return c.nats_operator
    return c.nats_bob if case.op in ("event", "settings") or RPC[case.op] in OWNER_BOUND_OPS else c.nats_app


async def nats_door(case: DoorCase, args: dict[str, Any], c: Callers) -> str | None:
    client = _nats_caller(case, c)
    owner = args.pop("owner", c.bob)
    try:
        if case.op == "event":
            await client.publish_chat(owner, args.pop("messages"), **args)
            return OK
        spec = RPC_OPS[RPC[case.op]]
        if case.op == "settings":
            owner, fields = None, args
        else:
            fields = {"owner": owner, **args}
        raw = case.raw_for("nats")
        data = raw if raw is not None else msgspec.json.encode(spec.request(**fields))
        await client.access.send(spec.name, owner, partial(_request, client.nc, spec, data))
    except MemorydError as exc:
        return _typed(exc.code, exc.err_code)
    return OK


def _typed(code: int, err_code: str) -> str:
    if code >= 500 or err_code not in STATUS or STATUS[err_code] != code:
        raise Broken(f"{code} {err_code}")
    return err_code


# --- REST ---------------------------------------------------------------------------------------
ROUTES = {
    "get": ("GET", "/v1/memories/{id}"),
    "update": ("PATCH", "/v1/memories/{id}"),
    "delete": ("DELETE", "/v1/memories/{id}"),
    "restore": ("POST", "/v1/memories/{id}/restore"),
    "list": ("GET", "/v1/memories"),
    "export": ("GET", "/v1/export"),
    "sleep_status": ("GET", "/v1/sleep/status"),
    "search": ("POST", "/v1/search"),
    "create": ("POST", "/v1/memories"),
    "event": ("POST", "/v1/events"),
    "clear": ("POST", "/v1/memories/clear"),
    "import": ("POST", "/v1/import"),
    "settings": ("PUT", "/v1/settings"),
}


def _problem(reply: httpx.Response) -> str:
    """The ``err_code`` of an HTTP refusal, checked against its status and content type."""
    if reply.status_code < 400 or reply.status_code >= 500 or reply.headers.get("content-type") != PROBLEM:
        raise Broken(f"{reply.status_code} {reply.headers.get('content-type')}: {reply.text[:200]}")
    body = reply.json()
    if body.get("status") != reply.status_code:
        raise Broken(f"problem status {body.get('status')} on a {reply.status_code}")
    return _typed(reply.status_code, str(body.get("err_code")))


async def rest_door(case: DoorCase, args: dict[str, Any], c: Callers) -> str | None:
    method, path = ROUTES[case.op]
    if "{id}" in path:
        path = path.replace("{id}", quote(str(args.pop("id")), safe=""))
    headers = {"authorization": f"Bearer {c.operator_key if case.operator else c.bob_key}"}
    kw: dict[str, Any] = {}
    if case.op == "search" and "owner" in args:
        headers["x-memory-owner"] = args.pop("owner")
    if (raw := case.raw_for("rest")) is not None:
        kw = {"content": raw, "headers": {**headers, "content-type": "application/json"}}
    elif method == "GET":
        kw = {"params": {k: str(v) for k, v in args.items()}, "headers": headers}
    else:
        kw = {"json": args, "headers": headers}
    async with httpx.AsyncClient(base_url=c.url, timeout=60) as http:
        reply = await http.request(method, path, **kw)
    return OK if reply.status_code < 300 else _problem(reply)


# --- MCP ----------------------------------------------------------------------------------------
#: op -> (tool, the arguments it takes)
TOOLS = {
    "search": ("memory_search", {"query", "limit", "session_id", "agent_id", "max_tokens"}),
    "create": ("memory_add", {"content", "memory_type", "session_id", "agent_id", "key", "metadata"}),
    "list": ("memory_list", {"memory_type", "q", "limit", "offset", "agent_id"}),
    "delete": ("memory_delete", {"id"}),
    "clear": ("memory_clear", {"memory_type", "older_than_days", "agent_id"}),
}
TOOL_ERROR = re.compile(r"(?:Error executing tool \w+: )?(\w+): ")


def _tool_outcome(result: Any) -> str:
    text = result.content[0].text if result.content else ""
    if not result.is_error:
        return OK
    match = TOOL_ERROR.match(text)
    if not match or match.group(1) not in STATUS:
        raise Broken(f"untyped tool error: {text[:200]}")
    return match.group(1)


def _tool_call(case: DoorCase, args: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    if case.op not in TOOLS:
        return None
    tool, params = TOOLS[case.op]
    return (tool, args) if set(args) <= params else None


async def mcp_http_door(case: DoorCase, args: dict[str, Any], c: Callers) -> str | None:
    headers = {"authorization": f"Bearer {c.operator_key if case.operator else c.bob_key}"}
    if "owner" in args:
        if not str(args["owner"]).isprintable():
            return None  # MCP names the owner in a header, and no HTTP client sends a control character there
        headers["x-memory-owner"] = args.pop("owner")
    if (raw := case.raw_for("mcp-http")) is not None:  # a JSON-RPC body that is not one, or a deep one
        raw_headers = {**headers, "content-type": "application/json", "accept": "application/json, text/event-stream"}
        async with httpx.AsyncClient(base_url=c.url, timeout=60) as http:
            reply = await http.post("/mcp", content=raw, headers=raw_headers)
        if not 400 <= reply.status_code < 500:
            raise Broken(f"{reply.status_code}: {reply.text[:200]}")
        return {400: "validation", 413: "too_large"}.get(reply.status_code, str(reply.status_code))
    call = _tool_call(case, args)
    if call is None:
        return None
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        streamable_http_client(f"{c.url}/mcp", http_client=http) as streams,
        ClientSession(streams[0], streams[1]) as session,
    ):
        await session.initialize()
        return _tool_outcome(await session.call_tool(*call))


async def mcp_stdio_door(case: DoorCase, args: dict[str, Any], c: Callers) -> str | None:
    if case.operator or "owner" in args:
        return None  # the process serves the one owner named on its command line
    if (raw := case.raw_for("mcp-stdio")) is not None:
        assert c.stdio_raw is not None
        return await c.stdio_raw.send(raw)
    call = _tool_call(case, args)
    if call is None:
        return None
    assert c.stdio is not None
    return _tool_outcome(await c.stdio.call_tool(*call))


class StdioRaw:
    """Raw lines to an MCP stdio process: a line that is not JSON-RPC must get a JSON-RPC error
    (or nothing) and leave the process serving the next request."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.next_id = 1000

    async def request(self, method: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        self.next_id += 1
        await self._write(json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params or {}}))
        return await self._until(self.next_id)

    async def notify(self, method: str) -> None:
        await self._write(json.dumps({"jsonrpc": "2.0", "method": method}))

    async def send(self, raw: bytes) -> str:
        await self._write(raw.decode("utf-8", errors="surrogateescape").replace("\n", " "), raw=raw)
        answers = await self.request("ping")  # still serving
        if "result" not in answers["reply"]:
            raise Broken(f"the process stopped serving: {answers}")
        errors = [m for m in answers["before"] if "error" in m]
        if any(m["error"].get("code") not in (-32700, -32600, -32602) for m in errors):
            raise Broken(f"not a JSON-RPC parse error: {errors}")
        return "validation" if errors else "dropped"

    async def _write(self, line: str, raw: bytes | None = None) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((raw if raw is not None else line.encode()) + b"\n")
        await self.proc.stdin.drain()

    async def _until(self, wanted: int) -> dict[str, Any]:
        assert self.proc.stdout is not None
        before: list[dict[str, Any]] = []
        while True:
            line = await asyncio.wait_for(self.proc.stdout.readline(), 60)
            if not line:
                raise Broken(f"the process exited ({await self.proc.wait()})")
            message = json.loads(line)
            if message.get("id") == wanted:
                return {"reply": message, "before": before}
            before.append(message)


# --- the proxy ----------------------------------------------------------------------------------
PROXY_HEADERS = {"owner": "x-memory-owner", "session_id": "x-memory-session", "agent_id": "x-memory-agent"}


def _proxy_turn(case: DoorCase, args: dict[str, Any]) -> tuple[str, dict[str, str]] | None:
    """The user turn a case becomes on the proxy (a search's query, a create's content) and its
    headers (the owner, the session and the agent the proxy takes from headers)."""
    headers = {name: str(args.pop(arg)) for arg, name in PROXY_HEADERS.items() if arg in args}
    text = args.pop({"search": "query", "create": "content"}.get(case.op, ""), None)
    if not isinstance(text, str) or args:
        return None  # the proxy forwards content parts as the upstream defines them
    if not all(value.isprintable() and value.isascii() for value in headers.values()):
        return None  # no HTTP client sends a control character in a header; the SDK sends ASCII only
    return text, headers


async def _proxy_raw(path: str, raw: bytes, c: Callers) -> str:
    headers = {"authorization": f"Bearer {c.bob_key}", "content-type": "application/json"}
    async with httpx.AsyncClient(base_url=c.url, timeout=60) as http:
        return _problem(await http.post(path, content=raw, headers=headers))


def _sdk(c: Callers, case: DoorCase) -> openai.AsyncOpenAI:
    key = c.operator_key if case.operator else c.bob_key
    return openai.AsyncOpenAI(base_url=f"{c.url}/v1", api_key=key, max_retries=0, timeout=60)


def _sdk_refusal(exc: openai.APIStatusError) -> str:
    """The SDK's error, read as a problem document (its ``body`` is the OpenAI envelope inside it)."""
    if exc.response.headers.get("content-type") != PROBLEM or not isinstance(exc.body, dict):
        raise Broken(f"{exc.status_code}: {exc.response.text[:200]}")
    problem = exc.response.json()
    if exc.body.get("code") != problem.get("err_code") or not exc.message.endswith(f" - {problem.get('detail')}"):
        raise Broken(f"the OpenAI envelope differs from the problem: {exc.response.text[:200]}")
    return _typed(exc.status_code, str(problem.get("err_code")))


async def chat_door(case: DoorCase, args: dict[str, Any], c: Callers) -> str | None:
    if (raw := case.raw_for("chat")) is not None:
        return await _proxy_raw("/v1/chat/completions", raw, c)
    turn = _proxy_turn(case, args)
    if turn is None:
        return None
    text, headers = turn
    try:
        await _sdk(c, case).chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": text}],  # type: ignore[list-item,misc]
            extra_headers=headers,
        )
    except openai.APIStatusError as exc:
        return _sdk_refusal(exc)
    return OK


async def responses_door(case: DoorCase, args: dict[str, Any], c: Callers) -> str | None:
    if (raw := case.raw_for("responses")) is not None:
        return await _proxy_raw("/v1/responses", raw, c)
    turn = _proxy_turn(case, args)
    if turn is None:
        return None
    text, headers = turn
    try:
        await _sdk(c, case).responses.create(
            model="m",
            input=[{"role": "user", "content": text}],  # type: ignore[list-item,typeddict-item]
            extra_headers=headers,
        )
    except openai.APIStatusError as exc:
        return _sdk_refusal(exc)
    return OK


#: Every door, in the order of the report's columns.
DOORS: dict[str, Door] = {
    "nats": nats_door,
    "rest": rest_door,
    "mcp-http": mcp_http_door,
    "mcp-stdio": mcp_stdio_door,
    "chat": chat_door,
    "responses": responses_door,
}
#: Doors whose accepted calls go through the proxy: the turn is remembered as a chat event.
PROXIED = {"chat", "responses"}
