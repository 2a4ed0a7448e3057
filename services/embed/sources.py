"""Where vectors come from: the local ONNX model or a remote OpenAI-compatible `/v1/embeddings`.

`build_source(settings)` resolves `local | remote | auto` (auto = remote when
`MEMORYD_EMBED_REMOTE_URL` is set) into one `EmbedSource`, whose signature names how pgvector
stores its vectors (`vectorQuantization`); `source_for_signature` rebuilds another signature's
source when it can (so query vectors match what retrieval searches during a change).
Local inference runs on dedicated threads (`Inference`, `inference_slots`), so the event loop
stays free; job calls run one at a time, query calls on any free slot and before waiting job
calls (`InferenceGate`). Texts are embedded shortest first by token count (`logic.length_order`),
cut into calls by `logic.plan_batches`, and returned in input order. The dynamic-int8 variant
embeds each text alone (`per_text`): its activations are quantized per call, so it must never
share padding with batch mates.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import msgspec
import numpy as np
import numpy.typing as npt

from memoryd.errors import ConfigError, DependencyDown, MemorydError
from shared.observability.logging import get_logger
from shared.observability.metrics import EMBED_BATCH, EMBED_SECONDS
from shared.vectors.signature import VectorQuantization, stored_signature, with_turn_context, without_turn_context

from .adapters import DIM, DYNAMIC_INT8, MODEL_NAME, LocalEmbedder
from .logic import (
    Resolution,
    chunks,
    length_order,
    parse_signature,
    plan_batches,
    resolve_source,
    signature,
)
from .settings import EmbedSettings

if TYPE_CHECKING:
    import httpx

log = get_logger(__name__)
Vectors = npt.NDArray[np.float32]


class RemoteRejected(MemorydError):
    """The remote endpoint refused the request (4xx other than 429) or answered nonsense."""


class EmbedSource(Protocol):
    kind: str  # local | remote
    model: str
    dim: int
    quantization: str | None
    signature: str
    resolution: str

    async def embed(self, texts: Sequence[str], *, urgent: bool = False) -> Vectors:
        """L2-normalised float32 vectors `(len(texts), dim)`, in input order (`urgent`: a query)."""

    def health(self) -> str:
        """`ok ...` or what is wrong, for the `embedder` health check."""

    async def close(self) -> None: ...


# --- local -----------------------------------------------------------------------------------
class InferenceGate:
    """At most `slots` inference calls at once, at most `job_slots` of them embed jobs;
    waiting queries go before waiting job batches.

    Jobs embed in calls of at most `batch_max` texts, so a query waits for at most the call
    already running, never for a backlog of job batches. Jobs keep to one slot: ingest scales
    with worker processes; queries may use every slot, so concurrent queries use both cores
    of a machine whose one worker process would otherwise compute them one after another.
    """

    def __init__(self, slots: int = 1, job_slots: int = 1) -> None:
        if slots < 1 or not 1 <= job_slots <= slots:
            raise ValueError("need slots >= 1 and 1 <= job_slots <= slots")
        self.slots = slots
        self.job_slots = job_slots
        self._running = 0
        self._jobs_running = 0
        self._waiters: tuple[deque[asyncio.Future[None]], deque[asyncio.Future[None]]] = (deque(), deque())

    def _free(self, urgent: bool) -> bool:
        return self._running < self.slots and (urgent or self._jobs_running < self.job_slots)

    def _take(self, urgent: bool) -> None:
        self._running += 1
        self._jobs_running += 0 if urgent else 1

    async def acquire(self, urgent: bool) -> None:
        queue = self._waiters[0 if urgent else 1]
        ahead = self._waiters[0] if urgent else self._waiters[0] or self._waiters[1]
        if self._free(urgent) and not ahead:
            self._take(urgent)
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        queue.append(fut)
        try:
            await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():
                self.release(urgent)  # granted just as we were cancelled: pass it on
            else:
                queue.remove(fut)
            raise

    def release(self, urgent: bool) -> None:
        self._running -= 1
        self._jobs_running -= 0 if urgent else 1
        for is_urgent, queue in ((True, self._waiters[0]), (False, self._waiters[1])):
            while queue and self._free(is_urgent):
                fut = queue.popleft()
                if not fut.done():
                    self._take(is_urgent)  # ownership passes to the waiter
                    fut.set_result(None)


class LocalSource:
    """`LocalEmbedder` behind a single inference thread."""

    kind = "local"

    def __init__(
        self,
        embedder: LocalEmbedder,
        inference: Inference,
        batch_max: int,
        resolution: str,
        max_padded_tokens: int = 512,
    ) -> None:
        self._embedder = embedder
        self._inference = inference
        self._batch_max = batch_max
        self._max_padded_tokens = max_padded_tokens
        self.model = embedder.model_name
        self.dim = embedder.dim
        self.quantization = embedder.quantization
        self.signature = embedder.signature
        self.resolution = resolution

    async def embed(self, texts: Sequence[str], *, urgent: bool = False) -> Vectors:
        if not texts:
            return np.empty((0, self.dim), dtype=np.float32)
        counts = self._embedder.token_counts(texts)
        order = length_order(counts)
        lengths = [counts[i] for i in order]
        calls = [
            self._inference.run(self._timed, [texts[order[i]] for i in part], urgent=urgent)
            for part in plan_batches(lengths, self._batch_max, self._max_padded_tokens)
        ]
        # All calls queue at once: the gate runs job calls one at a time, query calls on every slot.
        parts = await asyncio.gather(*calls) if len(calls) > 1 else [await calls[0]]
        vectors = parts[0] if len(parts) == 1 else np.vstack(parts)
        if order == sorted(order):
            return vectors
        out = np.empty_like(vectors)
        out[order] = vectors
        return out

    def _timed(self, batch: list[str]) -> Vectors:
        started = time.perf_counter()
        vectors = self._embedder.embed(batch)
        EMBED_SECONDS.observe(time.perf_counter() - started)
        EMBED_BATCH.observe(len(batch))
        return vectors

    def health(self) -> str:
        return f"ok {self.signature} ({self.resolution})"

    async def close(self) -> None:
        return None


def load_local(settings: EmbedSettings, quantization: str | None, cache_dir: Path) -> LocalEmbedder:
    """The local model: the int8-weight default (its word-embedding table kept int8, built once), or
    the dynamic-int8 variant (built once)."""
    if quantization == DYNAMIC_INT8:
        return LocalEmbedder.dynamic_int8(cache_dir=cache_dir, threads=settings.threads)
    if quantization is not None:
        raise ConfigError("MEMORYD_EMBED_QUANTIZATION", f"unknown quantization {quantization!r}")
    return LocalEmbedder.default(threads=settings.threads, cache_dir=cache_dir)


# --- remote ----------------------------------------------------------------------------------
class _Item(msgspec.Struct):
    embedding: list[float]
    index: int = 0


class _Reply(msgspec.Struct):
    data: list[_Item]


_reply_decoder = msgspec.json.Decoder(_Reply)


class RemoteSource:
    """An OpenAI-compatible `/v1/embeddings` endpoint (Ollama, vLLM, llama.cpp, OpenAI, ...)."""

    kind = "remote"
    quantization: str | None = None

    def __init__(self, settings: EmbedSettings, model: str, dim: int, resolution: str) -> None:
        assert settings.remote_url
        url = settings.remote_url.rstrip("/")
        self.url = url if url.endswith("/embeddings") else f"{url}/embeddings"
        self.model = model
        self.dim = dim
        self.signature = signature("remote", model, dim)
        self.resolution = resolution
        self._send_dimensions = settings.remote_send_dimensions
        self._batch_max = settings.batch_max
        import httpx  # only a remote source needs it (~18 MB resident with what it pulls in)

        headers = {"Authorization": f"Bearer {settings.remote_api_key}"} if settings.remote_api_key else {}
        self._client: httpx.AsyncClient = httpx.AsyncClient(timeout=settings.remote_timeout_s, headers=headers)
        self._slots = asyncio.Semaphore(settings.remote_concurrency)
        self._last_error: tuple[float, str] | None = None

    async def embed(self, texts: Sequence[str], *, urgent: bool = False) -> Vectors:
        if not texts:
            return np.empty((0, self.dim), dtype=np.float32)
        parts = await asyncio.gather(
            *(self._call([texts[i] for i in part]) for part in chunks(len(texts), self._batch_max))
        )
        return parts[0] if len(parts) == 1 else np.vstack(parts)

    async def _call(self, texts: list[str]) -> Vectors:
        body: dict[str, object] = {"model": self.model, "input": texts, "encoding_format": "float"}
        if self._send_dimensions:
            body["dimensions"] = self.dim
        import httpx

        async with self._slots:
            started = time.perf_counter()
            try:
                resp = await self._client.post(self.url, json=body)
            except httpx.HTTPError as exc:
                raise self._down(f"{self.url} unreachable: {type(exc).__name__}: {exc}") from exc
            EMBED_SECONDS.observe(time.perf_counter() - started)
            EMBED_BATCH.observe(len(texts))
        if resp.status_code == 429 or resp.status_code >= 500:
            raise self._down(f"{self.url} answered HTTP {resp.status_code}")
        if resp.status_code != 200:
            self._last_error = (time.monotonic(), f"HTTP {resp.status_code}")
            raise RemoteRejected(f"{self.url} refused the request: HTTP {resp.status_code}: {resp.text[:300]}")
        try:
            reply = _reply_decoder.decode(resp.content)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise RemoteRejected(f"{self.url} sent an unreadable embeddings reply: {exc}") from exc
        items = sorted(reply.data, key=lambda d: d.index)
        if len(items) != len(texts):
            raise RemoteRejected(f"{self.url} returned {len(items)} vectors for {len(texts)} texts")
        vectors = np.asarray([d.embedding for d in items], dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[1] != self.dim:
            got = vectors.shape[1] if vectors.ndim == 2 else "ragged"
            raise RemoteRejected(f"{self.url} model {self.model} returned {got} dimensions, configured {self.dim}")
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        if not np.all(np.isfinite(vectors)) or not np.all(norms > 0):
            raise RemoteRejected(f"{self.url} returned a zero or non-finite vector")
        self._last_error = None
        return (vectors / norms).astype(np.float32, copy=False)

    def _down(self, description: str) -> DependencyDown:
        self._last_error = (time.monotonic(), description)
        return DependencyDown(description)

    def health(self) -> str:
        if self._last_error is not None and time.monotonic() - self._last_error[0] < 60:
            return f"degraded: {self._last_error[1]}"
        return f"ok {self.signature} ({self.resolution})"

    async def close(self) -> None:
        await self._client.aclose()


def _remote_settings(settings: EmbedSettings) -> tuple[str, int]:
    missing = [
        f"MEMORYD_EMBED_REMOTE_{name.upper()}"
        for name, value in (
            ("url", settings.remote_url),
            ("model", settings.remote_model),
            ("dim", settings.remote_dim),
        )
        if not value
    ]
    if missing:
        raise ConfigError(missing[0], f"the remote embedder needs {', '.join(missing)}")
    assert settings.remote_model and settings.remote_dim
    return settings.remote_model, settings.remote_dim


# --- building --------------------------------------------------------------------------------
class Inference:
    """The inference threads of a process (`slots`), behind an `InferenceGate`: embed jobs
    use `job_slots` of them at a time (one by default), queries any (and go first)."""

    def __init__(self, slots: int = 1, job_slots: int = 1) -> None:
        self.slots = slots
        self._executor = ThreadPoolExecutor(max_workers=slots, thread_name_prefix="embed-inference")
        self._gate = InferenceGate(slots, job_slots=min(job_slots, slots))

    async def run(self, fn: Callable[[list[str]], Vectors], texts: list[str], *, urgent: bool) -> Vectors:
        await self._gate.acquire(urgent)
        try:
            return await asyncio.get_running_loop().run_in_executor(self._executor, fn, texts)
        finally:
            self._gate.release(urgent)

    def shutdown(self) -> None:
        self._executor.shutdown(wait=True)


def build_source(
    settings: EmbedSettings, inference: Inference, cache_dir: Path, storage: VectorQuantization = "none"
) -> EmbedSource:
    """The configured source (blocking: loads or builds a model; call it in a thread), its
    signature naming the vectors' ``storage`` in pgvector."""
    resolution: Resolution = resolve_source(settings.source, settings.remote_url)
    source: EmbedSource
    if resolution.kind == "remote":
        if settings.quantization != "none":
            raise ConfigError("MEMORYD_EMBED_QUANTIZATION", "applies to the local model only")
        model, dim = _remote_settings(settings)
        source = RemoteSource(settings, model, dim, resolution.reason)
    else:
        quant = None if settings.quantization == "none" else settings.quantization
        embedder = load_local(settings, quant, cache_dir)
        source = LocalSource(embedder, inference, settings.batch_max, resolution.reason, settings.batch_max_tokens)
    return stored_as(source, storage)


def stored_as(source: EmbedSource, storage: VectorQuantization, turn_context: bool = True) -> EmbedSource:
    """``source`` with a signature naming ``storage`` (the same vectors, stored as full precision
    or halfvec) and whether chat turns embed their context (``shared.turn_context``; on for every
    source built now, off only to keep serving an older signature)."""
    tagged = with_turn_context if turn_context else without_turn_context
    source.signature = stored_signature(tagged(source.signature), storage)
    return source


def source_for_signature(
    sig: str, settings: EmbedSettings, inference: Inference, cache_dir: Path
) -> EmbedSource | None:
    """A source producing vectors of `sig`, when this process can build one; else None."""
    parts = parse_signature(sig)
    if parts is None:
        return None
    reason = f"serving the active signature {sig} until the reindex completes"
    if parts.source == "local":
        if parts.model != MODEL_NAME or parts.dim != DIM or parts.quantization not in (None, DYNAMIC_INT8):
            return None
        try:
            embedder = load_local(settings, parts.quantization, cache_dir)
        except ConfigError as exc:
            log.warning("embed.legacy_source_unavailable", signature=sig, error=exc.description)
            return None
        local = LocalSource(embedder, inference, settings.batch_max, reason, settings.batch_max_tokens)
        return stored_as(local, parts.storage, parts.turn_context)
    if parts.source == "remote" and settings.remote_url and parts.quantization is None:
        return stored_as(RemoteSource(settings, parts.model, parts.dim, reason), parts.storage, parts.turn_context)
    return None
