"""An OpenAI-compatible chat-completions client with a per-owner budget and an audit trail.

``complete_json`` asks for a JSON object and decodes the content into the caller's type (a fenced
block is tolerated, ``reply.py``); ``complete_text`` returns it as is. Outcomes: not configured ->
``LlmNotConfigured`` (nothing sent or written); the call's worst case reserved against the owner's
``daily_token_budget`` (``budget.py``: concurrent calls cannot overshoot) -> ``BudgetExceeded``;
a timeout, network error or 5xx is retried once, then (like any other HTTP error) ->
``LlmUnavailable``; no content or undecodable -> ``LlmBadReply`` (its tokens still count).
Every outcome but the first writes one ``llm_audit_logs`` row when a pool is given (a timeout
or cancellation keeps the reserved tokens) and counts the ``memoryd_llm_*`` metrics; tokens come
from the reply's ``usage`` (estimated as ``len/4`` without it).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import asyncpg
import httpx
import msgspec
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt, wait_fixed

from memoryd.errors import BudgetExceeded
from shared.settings.env import LlmConfig

from ..observability.logging import get_logger
from ..observability.metrics import LLM_CALLS, LLM_TOKENS
from ..tokens import estimate_tokens
from . import budget
from .errors import LlmBadReply, LlmNotConfigured, LlmUnavailable
from .reply import decode_json_content, estimate_prompt_tokens, snippet

log = get_logger(__name__)
T = TypeVar("T")
U = TypeVar("U")

Messages = list[dict[str, str]]


@dataclass(frozen=True, slots=True)
class LlmResult(Generic[T]):
    """A decoded reply and what it cost."""

    value: T
    prompt_tokens: int
    completion_tokens: int
    model: str
    raw: str  # the assistant content as received

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class _Message(msgspec.Struct):
    content: str | None = None


class _Choice(msgspec.Struct):
    message: _Message = msgspec.field(default_factory=_Message)


class _Usage(msgspec.Struct):
    prompt_tokens: int = 0
    completion_tokens: int = 0


class _Completion(msgspec.Struct):
    choices: list[_Choice] = []
    usage: _Usage | None = None
    model: str | None = None


_completion_decoder = msgspec.json.Decoder(_Completion)


class LlmClient:
    """One per process; safe for concurrent use. ``close()`` it on shutdown."""

    def __init__(
        self,
        cfg: LlmConfig,
        pool: asyncpg.Pool | None,
        *,
        http: httpx.AsyncClient | None = None,
        retry_backoff_s: float = 0.25,
    ) -> None:
        self._cfg = cfg
        self._pool = pool
        self._own_http = http is None
        self._http = http if http is not None else httpx.AsyncClient(timeout=cfg.timeout_s)
        self._retry_backoff_s = retry_backoff_s

    @property
    def configured(self) -> bool:
        return bool(self._cfg.base_url and self._cfg.model)

    @property
    def config(self) -> LlmConfig:
        return self._cfg

    @property
    def model(self) -> str | None:
        return self._cfg.model

    async def close(self) -> None:
        if self._own_http:
            await self._http.aclose()

    async def tokens_used_today(self, owner: str) -> int:
        """The owner's LLM tokens since UTC midnight (0 without a pool)."""
        return 0 if self._pool is None else await budget.tokens_used_today(self._pool, owner)

    async def complete_json(
        self,
        *,
        owner: str,
        operation: str,
        messages: Messages,
        response_type: type[T],
        max_tokens: int = 1024,
        model: str | None = None,
        temperature: float = 0.0,
        reasoning_effort: str | None = None,
    ) -> LlmResult[T]:
        """Ask for a JSON object and decode it into ``response_type``.

        ``reasoning_effort`` (``low|medium|high``...) is sent as the OpenAI field of that name.
        """
        return await self._complete(
            owner=owner,
            operation=operation,
            messages=messages,
            max_tokens=max_tokens,
            model=model,
            temperature=temperature,
            reasoning_effort=reasoning_effort,
            json_mode=True,
            parse=lambda content: decode_json_content(content, response_type),
        )

    async def complete_text(
        self,
        *,
        owner: str,
        operation: str,
        messages: Messages,
        max_tokens: int = 1024,
        model: str | None = None,
        temperature: float = 0.0,
    ) -> LlmResult[str]:
        """Plain text completion (empty content is a bad reply)."""
        return await self._complete(
            owner=owner,
            operation=operation,
            messages=messages,
            max_tokens=max_tokens,
            model=model,
            temperature=temperature,
            json_mode=False,
            parse=_non_empty,
        )

    async def _complete(
        self,
        *,
        owner: str,
        operation: str,
        messages: Messages,
        max_tokens: int,
        model: str | None,
        temperature: float,
        json_mode: bool,
        parse: Callable[[str], U],
        reasoning_effort: str | None = None,
    ) -> LlmResult[U]:
        model_name = model or self._cfg.model
        if not self.configured or not model_name:
            LLM_CALLS.labels(operation, "not_configured").inc()
            raise LlmNotConfigured("no LLM endpoint configured (MEMORYD_LLM_BASE_URL, MEMORYD_LLM_MODEL)")

        def entry(status: str, prompt: int = 0, completion: int = 0, error: str | None = None) -> budget.AuditEntry:
            return budget.AuditEntry(owner, operation, model_name, status, prompt, completion, error)

        reservation: int | None = None
        if self._pool is not None:
            worst = entry(budget.STATUS_RESERVED, estimate_prompt_tokens(messages), max_tokens)
            try:
                reservation = await budget.reserve(self._pool, worst, self._cfg.daily_token_budget)
            except BudgetExceeded:
                LLM_CALLS.labels(operation, "budget_exceeded").inc()
                raise
        try:
            return await self._call(
                entry, reservation, messages, max_tokens, model_name, temperature, json_mode, parse, reasoning_effort
            )
        except asyncio.CancelledError:  # e.g. a caller's timeout around a rerank: the reservation stays counted
            if reservation is not None:
                await asyncio.shield(self._finish(entry(budget.STATUS_CANCELLED), "cancelled", reservation))
            raise

    async def _call(
        self,
        entry: Callable[..., budget.AuditEntry],
        reservation: int | None,
        messages: Messages,
        max_tokens: int,
        model_name: str,
        temperature: float,
        json_mode: bool,
        parse: Callable[[str], U],
        reasoning_effort: str | None,
    ) -> LlmResult[U]:
        body: dict[str, Any] = {
            "model": model_name,
            "messages": messages,
            "max_tokens": max_tokens,
            "temperature": temperature,
        }
        if json_mode:
            body["response_format"] = {"type": "json_object"}
        if reasoning_effort is not None:
            body["reasoning_effort"] = reasoning_effort
        try:
            data = await self._post(body)
        except LlmUnavailable as exc:
            outcome = budget.STATUS_TIMEOUT if exc.timed_out else budget.STATUS_ERROR
            await self._finish(entry(outcome, error=exc.description), "unavailable", reservation)
            raise
        try:
            completion = _completion_decoder.decode(data)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            error = f"response is not a chat completion: {exc}; body {snippet(data.decode('utf-8', 'replace'))!r}"
            await self._finish(entry(budget.STATUS_BAD_REPLY, error=error), "bad_reply", reservation)
            raise LlmBadReply(error) from exc
        content = completion.choices[0].message.content if completion.choices else None
        usage = completion.usage
        prompt_tokens = usage.prompt_tokens if usage else estimate_prompt_tokens(messages)
        completion_tokens = usage.completion_tokens if usage else estimate_tokens(content or "")
        try:
            if content is None:
                raise LlmBadReply("the reply has no message content")
            value = parse(content)
        except LlmBadReply as exc:
            status = entry(budget.STATUS_BAD_REPLY, prompt_tokens, completion_tokens, exc.description)
            await self._finish(status, "bad_reply", reservation)
            raise
        await self._finish(entry(budget.STATUS_OK, prompt_tokens, completion_tokens), "ok", reservation)
        return LlmResult(
            value=value,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            model=completion.model or model_name,
            raw=content,
        )

    async def _post(self, body: dict[str, Any]) -> bytes:
        """POST ``/chat/completions``; one retry (tenacity) on timeout, network error or 5xx."""
        url = f"{(self._cfg.base_url or '').rstrip('/')}/chat/completions"
        headers = {"content-type": "application/json"}
        if self._cfg.api_key:
            headers["authorization"] = f"Bearer {self._cfg.api_key}"
        payload = msgspec.json.encode(body)
        retrying = AsyncRetrying(
            stop=stop_after_attempt(2),
            wait=wait_fixed(self._retry_backoff_s),
            retry=retry_if_exception(_retryable),
            before_sleep=_log_retry,
            reraise=True,
        )
        async for attempt in retrying:
            with attempt:
                return await self._post_once(url, payload, headers)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _post_once(self, url: str, payload: bytes, headers: dict[str, str]) -> bytes:
        try:
            response = await self._http.post(url, content=payload, headers=headers, timeout=self._cfg.timeout_s)
        except httpx.TimeoutException as exc:
            raise LlmUnavailable(f"LLM request timed out after {self._cfg.timeout_s} s", timed_out=True) from exc
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            raise LlmUnavailable(f"cannot reach the LLM at {url}: {type(exc).__name__}: {exc}") from exc
        if 200 <= response.status_code < 300:
            return response.content
        text = snippet(response.text)
        raise LlmUnavailable(f"LLM answered HTTP {response.status_code}: {text}", status=response.status_code)

    async def _finish(self, entry: budget.AuditEntry, outcome: str, reservation: int | None = None) -> None:
        """Count the call and settle its reservation, or write its audit row (a failed write is
        logged, never raised)."""
        LLM_CALLS.labels(entry.operation, outcome).inc()
        tokens = entry.prompt_tokens + entry.completion_tokens
        if tokens:
            LLM_TOKENS.labels(entry.operation).inc(tokens)
        if outcome != "ok":
            log.warning(
                "llm.call_failed", owner=entry.owner, operation=entry.operation, outcome=outcome, error=entry.error
            )
        if self._pool is None:
            return
        try:
            if reservation is not None:
                await budget.settle(self._pool, reservation, entry)
            else:
                await budget.write_audit(self._pool, entry)
        except Exception as exc:
            log.warning("llm.audit_write_failed", owner=entry.owner, operation=entry.operation, error=str(exc))


def _non_empty(content: str) -> str:
    if not content.strip():
        raise LlmBadReply("the model returned empty content")
    return content


def _retryable(exc: BaseException) -> bool:
    """A timeout, a network error or a 5xx is worth a second try; 429 and other answers are not."""
    return isinstance(exc, LlmUnavailable) and (exc.status is None or exc.status >= 500)


def _log_retry(state: RetryCallState) -> None:
    error = state.outcome.exception() if state.outcome is not None else None
    log.info("llm.retry", error=error.description if isinstance(error, LlmUnavailable) else repr(error))
