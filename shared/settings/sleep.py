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
    """Settings of the sleep worker; 0 means "unlimited" for the two conflict pair caps (see docs/sleep.md)."""

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
    #: patterns written per run, discovered ones and affective traits together
    sleep_max_pattern_per_run: NonNegative = 3
    #: run affective attribution (emotion edges between entities); opt-in
    sleep_affective_enabled: bool = False
    #: distinct sessions of evidence a trait needs (else it is an occasion)
    sleep_affective_trait_min_sessions: Annotated[int, msgspec.Meta(ge=2, le=10)] = 3
    #: new emotion edges written per run (traits count against sleepMaxPatternPerRun)
    sleep_affective_max_relations_per_run: Annotated[int, msgspec.Meta(ge=0, le=50)] = 10
    #: reply token limit of one sleep LLM call
    sleep_max_tokens: Annotated[int, msgspec.Meta(ge=256)] = 8192
    #: model of the sleep LLM calls; unset = `MEMORYD_LLM_MODEL`
    sleep_llm_model: Annotated[str, msgspec.Meta(min_length=1)] | None = None
    #: model of the sleep LLM calls (wins over `sleepLlmModel`, its older name); unset = `MEMORYD_LLM_MODEL`
    sleep_model: Annotated[str, msgspec.Meta(min_length=1)] | None = None
    #: provider of the sleep LLM route, sent as `<provider>/<model>` (the router convention)
    sleep_provider: Annotated[str, msgspec.Meta(min_length=1, pattern="^[^/]+$")] | None = None
    #: sent as `reasoning_effort` with every sleep LLM call; unset = not sent
    sleep_reasoning_effort: ReasoningEffort | None = None
    #: runs of different owners at once over every replica (global row only; one owner never has two)
    sleep_max_concurrent_runs: Annotated[int, msgspec.Meta(ge=1, le=256)] = 1
    #: retrievals count as owner activity (the idle check, aborting a run)
    sleep_count_reads: bool = False
    #: affective attribution needs at least this many memories in its pool
    sleep_affective_min_pool: NonNegative = 5
    #: conflict resolution asks the LLM nothing: the pairs it selects go to the review queue for a person
    conflict_freeze_enabled: bool = False
    #: `update` decisions applied per run, over all batches (0 = none); the rest wait for a later run
    reflection_update_max_per_run: NonNegative = 10
    #: vector neighbours each memory probes for conflict candidates
    sleep_neighbours_per_memory: Annotated[int, msgspec.Meta(ge=1, le=100)] = 5
    #: conflict scans are incremental, with a full scan at least this often (days)
    sleep_full_scan_days: Annotated[int, msgspec.Meta(ge=1, le=365)] = 7
    #: newest memories of the lookback window shown to the LLM for pattern discovery
    sleep_pattern_pool: Annotated[int, msgspec.Meta(ge=1, le=5000)] = 200
    #: newest memories scanned for affective attribution
    sleep_affective_pool: Annotated[int, msgspec.Meta(ge=1, le=5000)] = 200
    #: characters of one memory in a sleep prompt
    sleep_prompt_chars: Annotated[int, msgspec.Meta(ge=20, le=10_000)] = 300
    #: co-occurrences an inferred entity relation needs
    sleep_relation_min_count: Annotated[int, msgspec.Meta(ge=1, le=100)] = 1
    #: new inferred edges per orphan entity and run
    sleep_relation_max_edges: Annotated[int, msgspec.Meta(ge=1, le=100)] = 3

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
