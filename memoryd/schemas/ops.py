"""Operational RPCs: health, engine status, reindex, sleep runs, compaction, settings, errors."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

import msgspec

from memoryd.schemas.base import Owner, SessionId, Wire
from memoryd.schemas.memory import DeletionReceipt


class RpcError(Wire, frozen=True):
    """The error half of every RPC reply (``<Op>Result | RpcError``).

    ``code`` is HTTP-like (400, 404, 409, 413, 429, 503, 500); ``error_id`` is set on
    500s and points at the log entry with the full error.
    """

    code: int
    err_code: str
    description: str
    error_id: str | None = None
    #: 429 ``rate_limited``: seconds until a request of this owner fits the rate again.
    retry_after_s: float | None = None
    #: 400 ``validation``: the JSON path of the offending field (``$.messages[0].content``), when known.
    field: str | None = None


class HealthRequest(Wire, frozen=True):
    deep: bool = False


class HealthResult(Wire, frozen=True):
    service: str
    status: Literal["ok", "degraded"]
    version: str
    checks: dict[str, str] = {}
    latency_ms: float | None = None


class EngineStatusRequest(Wire, frozen=True):
    owner: Owner | None = None


class EngineStatusResult(Wire, frozen=True):
    keyword_tier: str
    embedding: dict[str, Any] = {}
    vector_stores: dict[str, Any] = {}
    pending_reindex: int = 0
    fallbacks: dict[str, int] = {}
    lag: dict[str, int] = {}


class ReindexRequest(Wire, frozen=True):
    owner: Owner | None = None
    batch_size: Annotated[int, msgspec.Meta(ge=1, le=4096)] = 256
    dry_run: bool = False  # report progress only, queue nothing


class ReindexResult(Wire, frozen=True):
    signature: str  # the configured signature being (re)embedded
    queued: int
    pending: int  # memories without a current vector of `signature`
    active_signature: str | None = None  # what retrieval searches now (switches when pending reaches 0)


class SleepRunRequest(Wire, frozen=True):
    owner: Owner
    wait: bool = False
    timeout_s: Annotated[float, msgspec.Meta(gt=0, le=3600)] = 300.0


class SleepRunRecord(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    run_id: str
    owner: str
    status: str
    started_at: datetime | None = None
    finished_at: datetime | None = None
    receipt: str | None = None
    phases: dict[str, Any] = {}
    #: run totals: writes, inputs, ``llmPromptTokens`` / ``llmCompletionTokens``, ``phaseMs``
    counters: dict[str, Any] = {}


class SleepRunResult(Wire, frozen=True):
    run_id: str
    queued: bool
    run: SleepRunRecord | None = None
    #: Set when the run was queued although the owner's ``sleepModeEnabled`` is false.
    notice: str | None = None


class SleepStatusRequest(Wire, frozen=True):
    owner: Owner | None = None
    limit: Annotated[int, msgspec.Meta(ge=1, le=1000)] = 20


class SleepStatusResult(Wire, frozen=True):
    runs: list[SleepRunRecord]


class SummarizeRequest(Wire, frozen=True):
    older_than_days: Annotated[int, msgspec.Meta(ge=0, le=36_500)]
    owner: Owner | None = None
    session_id: SessionId | None = None
    dry_run: bool = False


class SummarizeResult(Wire, frozen=True):
    candidates: int
    tokens_before: int
    tokens_after: int
    candidate_ids: list[str] = []
    summary_ids: list[str] = []
    #: vectors of the compacted originals removed from every store (rows stay, archived)
    removed: DeletionReceipt | None = None


class CleanupRequest(Wire, frozen=True):
    """Remove expired memories and those past the owner's ``retentionDays`` (never global ones)."""

    owner: Owner | None = None
    dry_run: bool = False


class CleanupResult(Wire, frozen=True):
    expired: int
    past_retention: int
    dry_run: bool
    #: what the real run removed from each store; on a dry run, what is there to remove
    removed: DeletionReceipt = DeletionReceipt()
    candidate_ids: list[str] = []
    #: bookkeeping rows past ``bookkeepingRetentionDays`` removed per table (dry run: there to remove)
    bookkeeping: dict[str, int] = {}


class SettingsGetRequest(Wire, frozen=True):
    owner: Owner | None = None


class SettingsGetResult(Wire, frozen=True):
    """Effective settings (owner over global over defaults) and where each came from."""

    settings: dict[str, Any]
    sources: dict[str, str] = {}


class SettingsPutRequest(Wire, frozen=True):
    values: dict[str, Any]
    owner: Owner | None = None


class SettingsPutResult(Wire, frozen=True):
    settings: dict[str, Any]
