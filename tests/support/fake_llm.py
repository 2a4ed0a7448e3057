"""A scripted OpenAI-compatible HTTP server for tests: chat completions, responses, embeddings.

    async with FakeLlm() as llm:
        llm.reply_json({"facts": []})           # queue one reply (FIFO)
        llm.fail(503)                           # queue one HTTP error
        llm.handler = lambda req: (200, FakeLlm.completion(req, "{}"))  # when the queue is empty
        llm.requests                            # JSON bodies of /v1/chat/completions and /v1/responses

Real HTTP on 127.0.0.1, so tests use production's client code. Replies come from the queue, then
``handler`` (may be async, may return the content string), else a 500, with ``usage`` (about
``len/4``); ``"stream": true`` gets server-sent events. ``/v1/responses`` answers the same script
as a ``response`` (streamed: ``response.created``, a ``response.output_text.delta`` per word, ...,
``response.completed``). ``/v1/embeddings`` returns deterministic unit vectors per text
(``fail_embeddings`` queues errors); ``GET /v1/models`` lists ``model``.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import http
import inspect
import json
import math
import struct
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

Reply = tuple[int, dict[str, Any]]
Handler = Callable[[dict[str, Any]], Reply | str | Awaitable[Reply | str]]


@dataclass(frozen=True)
class _Scripted:
    status: int
    content: str | None = None  # a completion with this content (status 200)
    body: dict[str, Any] | None = None  # or this exact body
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    delay_s: float = 0.0


def _tokens(text: str) -> int:
    return max(1, (len(text) + 3) // 4)


def error_body(status: int, message: str) -> dict[str, Any]:
    """An OpenAI-style error body."""
    kind = "server_error" if status >= 500 else "rate_limit_error" if status == 429 else "invalid_request_error"
    return {"error": {"message": message, "type": kind, "code": status}}


class FakeLlm:
    """An OpenAI-compatible server on ``127.0.0.1:<free port>``; see the module docstring."""

    def __init__(self, *, model: str = "fake-llm", embedding_dim: int = 384, host: str = "127.0.0.1") -> None:
        self.model = model
        self.embedding_dim = embedding_dim
        self.host = host
        self.port = 0
        self.handler: Handler | None = None
        #: Decoded JSON bodies of chat-completion requests, in arrival order.
        self.requests: list[dict[str, Any]] = []
        #: Lower-cased request headers of each chat-completion request (same order).
        self.request_headers: list[dict[str, str]] = []
        #: The route of each of those requests: ``chat/completions`` or ``responses`` (same order).
        self.request_routes: list[str] = []
        #: Lower-cased request headers of each ``GET /v1/models``.
        self.models_headers: list[dict[str, str]] = []
        #: Decoded JSON bodies of embedding requests.
        self.embedding_requests: list[dict[str, Any]] = []
        self._queue: deque[_Scripted] = deque()
        self._embed_failures: deque[int] = deque()
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()

    # --- lifecycle -----------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1`` (what ``MEMORYD_LLM_BASE_URL`` would be)."""
        return f"http://{self.host}:{self.port}/v1"

    async def start(self) -> FakeLlm:
        self._server = await asyncio.start_server(self._serve, self.host, 0)
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._connections):
            task.cancel()
        if self._connections:
            await asyncio.gather(*self._connections, return_exceptions=True)
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), timeout=5)
            self._server = None

    async def __aenter__(self) -> FakeLlm:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # --- scripting -----------------------------------------------------------------------
    def reply_json(
        self,
        obj: Any,
        *,
        prompt_tokens: int | None = None,
        completion_tokens: int | None = None,
        delay_s: float = 0.0,
    ) -> None:
        """Queue one completion whose content is ``json.dumps(obj)``."""
        self.reply_text(
            json.dumps(obj), prompt_tokens=prompt_tokens, completion_tokens=completion_tokens, delay_s=delay_s
        )

    def reply_text(
        self,
        content: str,
        *,
        prompt_tokens: int | None = None,
        completion_tokens: int | None = None,
        delay_s: float = 0.0,
    ) -> None:
        """Queue one completion with this content."""
        self._queue.append(_Scripted(200, content, None, prompt_tokens, completion_tokens, delay_s))

    def reply_raw(self, status: int, body: dict[str, Any], *, delay_s: float = 0.0) -> None:
        """Queue one reply with exactly this status and JSON body."""
        self._queue.append(_Scripted(status, None, body, delay_s=delay_s))

    def fail(self, status: int = 500, message: str = "scripted failure", *, delay_s: float = 0.0) -> None:
        """Queue one HTTP error reply."""
        self._queue.append(_Scripted(status, None, error_body(status, message), delay_s=delay_s))

    def fail_embeddings(self, status: int = 500) -> None:
        """Queue one HTTP error for ``/v1/embeddings``."""
        self._embed_failures.append(status)

    @property
    def pending(self) -> int:
        """Queued chat replies not yet served."""
        return len(self._queue)

    @staticmethod
    def completion(
        request: dict[str, Any],
        content: str,
        *,
        model: str | None = None,
        prompt_tokens: int | None = None,
        completion_tokens: int | None = None,
    ) -> dict[str, Any]:
        """A ``chat.completion`` body answering ``request`` with ``content`` (for handlers)."""
        prompt = _prompt_text(request)
        p_tokens = _tokens(prompt) if prompt_tokens is None else prompt_tokens
        c_tokens = _tokens(content) if completion_tokens is None else completion_tokens
        return {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": 0,
            "model": model or str(request.get("model") or "fake-llm"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": p_tokens, "completion_tokens": c_tokens, "total_tokens": p_tokens + c_tokens},
        }

    @staticmethod
    def embedding(text: str, dim: int = 384) -> list[float]:
        """The deterministic unit vector the server returns for ``text``."""
        seed = hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()
        values: list[float] = []
        counter = 0
        while len(values) < dim:
            block = hashlib.sha256(seed + counter.to_bytes(4, "big")).digest()
            values.extend(v / 2**31 for v in struct.unpack(">8i", block))
            counter += 1
        values = values[:dim]
        norm = math.sqrt(sum(v * v for v in values)) or 1.0
        return [v / norm for v in values]

    # --- HTTP ----------------------------------------------------------------------------
    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            while True:
                request = await _read_request(reader)
                if request is None:
                    break
                method, path, version, headers, body = request
                status, payload = await self._dispatch(method, path, headers, body)
                close = headers.get("connection", "").lower() == "close" or version == "HTTP/1.0"
                if status == 200 and _wants_stream(body) and ("choices" in payload or "output" in payload):
                    events = self.sse_chunks(payload) if "choices" in payload else self.response_events(payload)
                    await self._stream(writer, events, close)
                    if close:
                        break
                    continue
                data = json.dumps(payload).encode()
                try:
                    reason = http.HTTPStatus(status).phrase
                except ValueError:
                    reason = "Unknown"
                head = (
                    f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
                    f"content-length: {len(data)}\r\nconnection: {'close' if close else 'keep-alive'}\r\n\r\n"
                )
                writer.write(head.encode("latin-1") + data)
                await writer.drain()
                if close:
                    break
        except (ConnectionError, asyncio.IncompleteReadError, ValueError):
            pass
        except asyncio.CancelledError:
            pass  # closed by ``close()``; ending normally keeps asyncio's stream callback quiet
        finally:
            self._connections.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    @staticmethod
    def sse_chunks(completion: dict[str, Any]) -> list[dict[str, Any]]:
        """The ``chat.completion.chunk`` events streaming ``completion``'s content word by word."""
        content = str(completion["choices"][0]["message"].get("content") or "")
        words = [w + " " for w in content.split(" ")]
        words[-1] = words[-1][:-1]
        base = {"id": completion["id"], "object": "chat.completion.chunk", "created": 0, "model": completion["model"]}
        chunks = [
            {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": w} if i == 0 else
                                  {"content": w}, "finish_reason": None}]}
            for i, w in enumerate(words)
        ]  # fmt: skip
        return [*chunks, {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}]

    @staticmethod
    def response(
        request: dict[str, Any],
        content: str,
        *,
        model: str | None = None,
        prompt_tokens: int | None = None,
        completion_tokens: int | None = None,
    ) -> dict[str, Any]:
        """A completed ``response`` object answering a Responses API ``request`` with ``content``."""
        p_tokens = _tokens(_prompt_text(request)) if prompt_tokens is None else prompt_tokens
        c_tokens = _tokens(content) if completion_tokens is None else completion_tokens
        message = {
            "type": "message",
            "id": "msg_fake",
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": content, "annotations": []}],
        }
        return {
            "id": "resp_fake",
            "object": "response",
            "created_at": 0,
            "status": "completed",
            "model": model or str(request.get("model") or "fake-llm"),
            "instructions": request.get("instructions"),
            "previous_response_id": request.get("previous_response_id"),
            "output": [message],
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "text": {"format": {"type": "text"}},
            "error": None,
            "incomplete_details": None,
            "metadata": {},
            "usage": {
                "input_tokens": p_tokens,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": c_tokens,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": p_tokens + c_tokens,
            },
        }

    @staticmethod
    def response_events(response: dict[str, Any]) -> list[dict[str, Any]]:
        """The Responses API stream of ``response``: created, the message's text word by word, completed."""
        message = response["output"][0]
        text = message["content"][0]["text"]
        words = [w + " " for w in text.split(" ")]
        words[-1] = words[-1][:-1]
        started = {**response, "status": "in_progress", "output": [], "usage": None}
        empty = {**message, "status": "in_progress", "content": []}
        part = {"type": "output_text", "text": "", "annotations": []}
        at = {"item_id": message["id"], "output_index": 0, "content_index": 0}
        events: list[dict[str, Any]] = [
            {"type": "response.created", "response": started},
            {"type": "response.in_progress", "response": started},
            {"type": "response.output_item.added", "output_index": 0, "item": empty},
            {"type": "response.content_part.added", **at, "part": part},
            *({"type": "response.output_text.delta", **at, "delta": w, "logprobs": []} for w in words),
            {"type": "response.output_text.done", **at, "text": text, "logprobs": []},
            {"type": "response.content_part.done", **at, "part": message["content"][0]},
            {"type": "response.output_item.done", "output_index": 0, "item": message},
            {"type": "response.completed", "response": response},
        ]
        return [{**event, "sequence_number": i} for i, event in enumerate(events)]

    async def _stream(self, writer: asyncio.StreamWriter, events: list[dict[str, Any]], close: bool) -> None:
        """Answer as server-sent events (``stream: true``), one HTTP chunk per event.

        Chat chunks end with ``[DONE]``; Responses API events carry their type as the SSE ``event``.
        """
        head = (
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n"
            f"cache-control: no-cache\r\nconnection: {'close' if close else 'keep-alive'}\r\n\r\n"
        )
        writer.write(head.encode("latin-1"))
        chat = not events or "type" not in events[0]
        frames = [
            (f"data: {json.dumps(e)}\n\n" if chat else f"event: {e['type']}\ndata: {json.dumps(e)}\n\n").encode()
            for e in events
        ]
        for data in [*frames, *([b"data: [DONE]\n\n"] if chat else [])]:
            writer.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            await writer.drain()
        writer.write(b"0\r\n\r\n")
        await writer.drain()

    async def _dispatch(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> Reply:
        route = path.split("?", 1)[0].rstrip("/")
        if method == "GET" and route in ("/v1/models", "/models"):
            self.models_headers.append(headers)
            return 200, {"object": "list", "data": [{"id": self.model, "object": "model", "owned_by": "fake"}]}
        if method != "POST" or route not in (
            "/v1/chat/completions",
            "/chat/completions",
            "/v1/responses",
            "/responses",
            "/v1/embeddings",
            "/embeddings",
        ):
            return 404, error_body(404, f"no route {method} {path}")
        try:
            body = json.loads(raw or b"null")
        except ValueError:
            return 400, error_body(400, "request body is not JSON")
        if not isinstance(body, dict):
            return 400, error_body(400, "request body must be a JSON object")
        if route.endswith("/embeddings"):
            self.embedding_requests.append(body)
            return self._embeddings(body)
        self.requests.append(body)
        self.request_headers.append(headers)
        responses = route.endswith("/responses")
        self.request_routes.append("responses" if responses else "chat/completions")
        status, payload = await self._chat(body)
        if responses and status == 200 and "choices" in payload:  # the same scripted answer, the Responses way
            usage = payload.get("usage") or {}
            return status, self.response(
                body,
                str(payload["choices"][0]["message"].get("content") or ""),
                model=payload.get("model"),
                prompt_tokens=usage.get("prompt_tokens"),
                completion_tokens=usage.get("completion_tokens"),
            )
        return status, payload

    async def _chat(self, body: dict[str, Any]) -> Reply:
        if self._queue:
            scripted = self._queue.popleft()
            if scripted.delay_s:
                await asyncio.sleep(scripted.delay_s)
            if scripted.body is not None:
                return scripted.status, scripted.body
            content = scripted.content or ""
            return scripted.status, self.completion(
                body,
                content,
                model=self.model,
                prompt_tokens=scripted.prompt_tokens,
                completion_tokens=scripted.completion_tokens,
            )
        if self.handler is None:
            return 500, error_body(500, "FakeLlm: no scripted reply and no handler")
        try:
            result = self.handler(body)
            if inspect.isawaitable(result):
                result = await result
        except Exception as exc:
            return 500, error_body(500, f"FakeLlm handler failed: {type(exc).__name__}: {exc}")
        if isinstance(result, str):
            return 200, self.completion(body, result, model=self.model)
        return result

    def _embeddings(self, body: dict[str, Any]) -> Reply:
        if self._embed_failures:
            status = self._embed_failures.popleft()
            return status, error_body(status, "scripted embeddings failure")
        texts = body.get("input")
        if isinstance(texts, str):
            texts = [texts]
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            return 400, error_body(400, "`input` must be a string or a list of strings")
        dim = body.get("dimensions") or self.embedding_dim
        if not isinstance(dim, int) or dim < 1:
            return 400, error_body(400, "`dimensions` must be a positive integer")
        tokens = sum(_tokens(t) for t in texts)
        return 200, {
            "object": "list",
            "model": str(body.get("model") or self.model),
            "data": [
                {"object": "embedding", "index": i, "embedding": self.embedding(t, dim)} for i, t in enumerate(texts)
            ],
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }


def _prompt_text(request: dict[str, Any]) -> str:
    """The text a request sends: its chat messages, or its Responses instructions and input."""
    parts: list[Any] = [m.get("content") for m in request.get("messages") or [] if isinstance(m, dict)]
    parts.append(request.get("instructions"))
    given = request.get("input")
    items = [{"content": given}] if isinstance(given, str) else given if isinstance(given, list) else []
    parts += [m.get("content") for m in items if isinstance(m, dict)]
    return "".join(str(p or "") for p in parts)


def _wants_stream(raw: bytes) -> bool:
    try:
        body = json.loads(raw or b"null")
    except ValueError:
        return False
    return isinstance(body, dict) and body.get("stream") is True


async def _read_request(
    reader: asyncio.StreamReader,
) -> tuple[str, str, str, dict[str, str], bytes] | None:
    """One HTTP/1.1 request, or None when the client closed the connection."""
    line = await reader.readline()
    if not line.strip():
        return None
    method, path, version = line.decode("latin-1").split(None, 2)
    headers: dict[str, str] = {}
    while True:
        header = await reader.readline()
        if header in (b"\r\n", b"\n", b""):
            break
        name, _, value = header.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    if "content-length" in headers:
        body = await reader.readexactly(int(headers["content-length"]))
    elif headers.get("transfer-encoding", "").lower() == "chunked":
        chunks = []
        while True:
            size = int((await reader.readline()).split(b";")[0].strip() or b"0", 16)
            if size == 0:
                await reader.readline()  # the blank line after the last chunk (no trailers)
                break
            chunks.append(await reader.readexactly(size))
            await reader.readline()
        body = b"".join(chunks)
    else:
        body = b""
    return method.upper(), path, version.strip(), headers, body
