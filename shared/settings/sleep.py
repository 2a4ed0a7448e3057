"""Sleep settings: every knob of the sleep worker with its default, one definition.

Shared because the settings RPC (served by ingest) validates them and the sleep worker
reads them. Attributes are snake_case in Python and camelCase on the wire and in the
``settings`` table (``sleepIdleMinutes``, ...); ranges are msgspec ``Meta`` constraints, so
a bad value raises ``msgspec.ValidationError`` naming the field.
"""

from collections.abc import Mapping
from types import MappingProxyType
from typing import Annotated, Final, Literal

import msgspec

StrictnessName = Literal["gentle", "normal", "aggressive"]
ActionSetName = Literal["default", "full"]
ReasoningEffort = Literal["minimal", "low", "medium", "high"]

STRICTNESS_THRESHOLDS: Final[Mapping[str, float]] = MappingProxyType(
    {"gentle": 0.92, "normal": 0.85, "aggressive": 0.75}
)

NonNegative = Annotated[int, msgspec.Meta(ge=0)]
Positive = Annotated[int, msgspec.Meta(ge=1)]


class SleepSettings(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    """Settings of the sleep worker; 0 means "unlimited" for the two conflict pair caps.

    ``sleepMaxConcurrentRuns`` is read from the global row only (runs of different owners at
    once, across every replica; one owner never has two). ``sleepCountReads``: retrievals
    count as owner activity (idle check, abort). ``conflictFreezeEnabled``: conflict
    resolution changes no memory; every pair the LLM would change goes to the review
    queue (``conflict_pending``). ``reflectionUpdateMaxPerRun``: ``update`` decisions applied
    per run, over all batches (0: none). ``sleepModel`` (``sleepLlmModel`` is its older
    name) and ``sleepProvider`` (sent as ``<provider>/<model>``) pick the LLM route;
    ``sleepReasoningEffort`` is sent as ``reasoning_effort``. ``sleepAffectiveMinPool``: the
    affective phase needs at least this many memories in its pool.
    """

    #: run sleep (consolidation) for this owner when due
    sleep_mode_enabled: bool = False
    #: a run becomes due only after the owner has been idle this long
    sleep_idle_minutes: NonNegative = 5
    #: at least this long between two runs of one owner
    sleep_min_interval_hours: Positive = 8
    #: double the interval per consecutive failed run, capped at max(sleepMinIntervalHours, 24 h)
    sleep_failure_backoff: bool = False
    #: similarity threshold of conflict candidates: gentle 0.92, normal 0.85, aggressive 0.75
    sleep_conflict_strictness: StrictnessName = "normal"
    #: conflict pairs judged in one LLM call (0 = all in one)
    sleep_conflict_max_pairs: NonNegative = 12
    #: conflict pairs judged per run (0 = unlimited)
    sleep_conflict_max_pairs_per_run: NonNegative = 60
    #: conflict decisions allowed: `default`, or `full` (adds supersede and differentiate)
    sleep_action_set: ActionSetName = "default"
    #: a memory not accessed this long is demoted to a summary (its original kept, restorable)
    sleep_archive_days: Positive = 30
    #: a memory not accessed this long is archived (>= sleepArchiveDays)
    sleep_compress_days: Positive = 90
    #: pattern discovery runs only for an owner with at least this many recent memories
    sleep_pattern_min_memories: NonNegative = 100
    #: pattern discovery looks at memories of this many days
    sleep_pattern_lookback_days: Positive = 30
    #: patterns written per run
    sleep_max_pattern_per_run: NonNegative = 3
    #: run affective attribution (emotion edges between entities); opt-in
    sleep_affective_enabled: bool = False
    #: distinct sessions of evidence a trait needs (else it is an occasion)
    sleep_affective_trait_min_sessions: Annotated[int, msgspec.Meta(ge=2, le=10)] = 3
    #: emotion edges written per run
    sleep_affective_max_relations_per_run: Annotated[int, msgspec.Meta(ge=0, le=50)] = 10
    #: reply token limit of one sleep LLM call
    sleep_max_tokens: Annotated[int, msgspec.Meta(ge=256)] = 8192
    #: model of the sleep LLM calls; unset = `MEMORYD_LLM_MODEL`
    sleep_llm_model: Annotated[str, msgspec.Meta(min_length=1)] | None = None
    sleep_model: Annotated[str, msgspec.Meta(min_length=1)] | None = None
    sleep_provider: Annotated[str, msgspec.Meta(min_length=1, pattern="^[^/]+$")] | None = None
    sleep_reasoning_effort: ReasoningEffort | None = None
    sleep_max_concurrent_runs: Annotated[int, msgspec.Meta(ge=1, le=256)] = 1
    sleep_count_reads: bool = False
    sleep_affective_min_pool: NonNegative = 5
    conflict_freeze_enabled: bool = False
    reflection_update_max_per_run: NonNegative = 10

    def llm_model(self, default: str | None) -> str | None:
        """The model of sleep's LLM calls (`default`: the service's model), with its provider."""
        model = self.sleep_model or self.sleep_llm_model or default
        if model is None or self.sleep_provider is None:
            return model
        return f"{self.sleep_provider}/{model}"

    def __post_init__(self) -> None:
        if self.sleep_compress_days < self.sleep_archive_days:
            raise ValueError(
                f"sleepCompressDays ({self.sleep_compress_days}) must be >= "
                f"sleepArchiveDays ({self.sleep_archive_days})"
            )
