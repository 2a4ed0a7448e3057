"""Runtime memory settings: defaults, global values and per-owner overrides.

Stored in the ``settings`` table (owner ``*`` = global). The effective settings of an
owner are ``defaults <- global <- owner``; unknown keys and bad values are rejected
with ``ValidationFailed`` naming the field (camelCase, as on the wire). The same rows also
hold the sleep settings (``sleep_settings``) and, in the global row only, the engine
settings (``engine_settings``: embedding source and model, vector store, Qdrant).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal, TypeVar

import msgspec

from memoryd.errors import ValidationFailed
from memoryd.schemas.retrieval import MaxTokens
from shared.settings.engine import ENGINE_KEYS, EngineValues, global_only, parse_engine_values
from shared.settings.sleep import SleepSettings

T = TypeVar("T")

GLOBAL_OWNER = "*"

Share = Annotated[float, msgspec.Meta(ge=0, le=10)]


#: the longest ``retentionDays``: a century, so an owner can keep memories for good
RETENTION_DAYS_MAX = 36_500


class MemorySettings(msgspec.Struct, frozen=True, kw_only=True, rename="camel", forbid_unknown_fields=True):
    """The memory behaviour a user can change at run time (camelCase on the wire)."""

    #: memory on for this owner: false stores nothing new and retrieves nothing
    enabled: bool = True
    #: retrieval strategy when a request names none
    strategy: Literal["exact", "recent", "semantic", "hybrid"] = "hybrid"
    #: token budget of one retrieval's results: a request may ask for less, never more (0: nothing is retrieved)
    max_tokens: MaxTokens = 2000
    #: memories older than this are not retrieved and are removed by the retention cleanup
    retention_days: Annotated[int, msgspec.Meta(ge=1, le=RETENTION_DAYS_MAX)] = 365
    #: keep each chat turn as an episodic memory (extraction runs either way)
    store_turns: bool = True
    #: extract facts and preferences from assistant messages too, not only the user's
    extract_assistant: bool = False
    #: the k of reciprocal rank fusion (`fusion=rrf`)
    rrf_k: Annotated[int, msgspec.Meta(ge=1, le=1000)] = 60
    #: candidates per list for either fusion
    rrf_depth: Annotated[int, msgspec.Meta(ge=1, le=1000)] = 100
    #: `score`: weighted min-max scores (`ftsWeight`, `vecWeight`); `rrf`: reciprocal rank fusion (`rrfK`)
    fusion: Literal["rrf", "score"] = "score"
    #: LLM listwise rerank of the fused top `rerankDepth` (needs an LLM; else the fused order stands, said in
    #: `fallbacks`)
    rerank: bool = False
    #: fused candidates the LLM rerank orders (`rerank=true`)
    rerank_depth: Annotated[int, msgspec.Meta(ge=2, le=50)] = 20
    #: hybrid only: a result gains this share of the best score in its session (0 = off)
    session_boost: Share = 0.3
    #: hybrid only: a result gains this share of its neighbouring turns' scores (0 = off)
    neighbour_boost: Share = 0.3
    #: hybrid only: the session score `sessionBoost` shares is the mean of the session's best this many results
    #: (1 = its best result alone; more favours sessions holding several matches)
    session_evidence: Annotated[int, msgspec.Meta(ge=1, le=10)] = 1
    #: hybrid only: each further result of a session already ranked counts this much less, compounding (the k-th
    #: times (1 - this)^k), so other sessions' best results move up (0 = off)
    session_spread: Annotated[float, msgspec.Meta(ge=0, le=0.9)] = 0.0
    #: how the keyword tier scores its matches: `bm25` (each question word weighed by its rarity among the
    #: owner's memories) or `cover_density` (PostgreSQL's `ts_rank_cd`: every occurrence counts the same)
    keyword_ranking: Literal["bm25", "cover_density"] = "bm25"
    #: keyword tier: newest full-text matches ranked per query (0 = all)
    keyword_max_candidates: Annotated[int, msgspec.Meta(ge=0, le=1_000_000)] = 2000
    #: keyword tier: expected full-text matches before rare-term pruning starts; an owner with at most this many
    #: memories is searched by testing its own rows, not the shared full-text index (0 = never prune)
    keyword_match_budget: Annotated[int, msgspec.Meta(ge=0, le=1_000_000)] = 1000
    #: keyword tier: a pruned match that finds fewer than this is widened step by step (0 = never): more recall
    #: for large owners, more work for their searches
    keyword_widen_below: Annotated[int, msgspec.Meta(ge=0, le=10_000)] = 20
    #: keyword tier: where BM25 ranks: `memory` (an index of the owner's lexemes held by the retrieve process,
    #: kept in step with every write; exact: it ignores `keywordMaxCandidates` and `keywordMatchBudget`, as the
    #: statement does with both 0; phrases, negations, metadata filters, other owners' global memories and
    #: owners still being indexed are answered by the statement) or `statement` (one PostgreSQL statement)
    keyword_index: Literal["statement", "memory"] = "memory"
    #: score fusion: weight of the full-text list
    fts_weight: Share = 0.6
    #: score fusion: weight of the vector list
    vec_weight: Share = 0.4
    #: score fusion: `ftsWeight` counts in full only when the best keyword match holds at least this share of the
    #: question's content words; below it, times (share / this) ^ `ftsCoveragePower` (0 = off: always in full)
    fts_full_coverage: Annotated[float, msgspec.Meta(ge=0, le=1)] = 0.5
    #: score fusion: how fast `ftsWeight` falls below `ftsFullCoverage`
    fts_coverage_power: Annotated[float, msgspec.Meta(ge=0, le=16)] = 4.0
    #: hybrid only: a result said by a speaker the question names (its chat message's `name`) gains this share
    #: of its own score (0 = off)
    speaker_boost: Share = 0.6
    #: hybrid only: when the question asks when (its first word is "when"), a result whose content holds a
    #: relative time expression or a weekday ("last Friday", "two weeks ago") gains this share of its own score
    #: (0 = off, the default: `temporalReasoning` reads the same cues and more; English cues)
    temporal_boost: Share = 0.0
    #: hybrid only: a result gains this share of its own score as far as its time answers the time the question
    #: asks about: "when" (a result that names a time), a date, month, season or year ("in May 2023"), "the week
    #: before X" (a window next to X's date); a result's time is what its text names ("yesterday", "on 8 May"),
    #: resolved against the day it was said (a "[<date>]" prefix, else when it was stored) (0 = off; English)
    temporal_reasoning: Share = 0.4
    #: hybrid only: for a question naming a time or a window ("in May 2023", "the week before X"), the share of a
    #: `temporalReasoning` gain measured on the best result's score instead of the result's own (0 = its own only):
    #: a result whose time falls in the window rises even when it shares few words with the question
    temporal_lift: Annotated[float, msgspec.Meta(ge=0, le=1)] = 0.75
    #: hybrid only: for a question naming a time or a window ("in May 2023", "the week before X"), up to this many
    #: more keyword candidates: the best matches of its words stored within that time (`created_at`) that neither
    #: list's top `rrfDepth` holds, ranked by their own BM25 below the keyword list's top, for `temporalReasoning` to
    #: lift (0 = off; only where the in-memory index ranks the keyword tier, `keywordIndex=memory`: the statement
    #: adds none)
    temporal_window: Annotated[int, msgspec.Meta(ge=0, le=200)] = 20
    #: chat events per second and replica an owner may publish (0 = no limit; over it the event waits in the stream)
    events_per_second: Annotated[float, msgspec.Meta(ge=0, le=100_000)] = 0.0
    #: searches (retrieve, inject) per second and replica of one owner (0 = no limit; over it: 429 `rate_limited`)
    searches_per_second: Annotated[float, msgspec.Meta(ge=0, le=100_000)] = 0.0
    #: memories an owner may hold (0 = no quota; full: 429 `quota_exceeded` on API writes, turns not stored, new
    #: extracted facts not written: metric `memoryd_facts_total{outcome="over_quota"}`)
    max_memories: Annotated[int, msgspec.Meta(ge=0)] = 0
    #: bytes of memory content an owner may hold (0 = no quota; as `maxMemories`)
    max_memory_bytes: Annotated[int, msgspec.Meta(ge=0)] = 0
    #: days bookkeeping rows (events, turn hashes, extract runs, LLM audit, sleep runs, pair ledgers) are kept
    bookkeeping_retention_days: Annotated[int, msgspec.Meta(ge=1, le=3650)] = 90


def setting_names() -> set[str]:
    """The camelCase names of every setting."""
    return set(MemorySettings.__struct_encode_fields__)


def all_setting_names() -> set[str]:
    """Every runtime setting a row may hold: memory, sleep and (global row only) engine settings."""
    return setting_names() | set(SleepSettings.__struct_encode_fields__) | ENGINE_KEYS


def text_setting_names() -> set[str]:
    """Settings whose value is free text (a model name, a URL, an API key): a CLI value for
    them is taken as written, never read as JSON (``embeddingApiKey 12345`` stays a string)."""
    out: set[str] = set()
    for struct in (MemorySettings, SleepSettings, EngineValues):
        info = msgspec.inspect.type_info(struct)
        assert isinstance(info, msgspec.inspect.StructType)
        for field in info.fields:
            kinds = field.type.types if isinstance(field.type, msgspec.inspect.UnionType) else (field.type,)
            if any(isinstance(kind, msgspec.inspect.StrType) for kind in kinds):
                out.add(field.encode_name)
    return out


def _only(values: Mapping[str, Any], names: set[str]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if k in names}


def effective(global_values: Mapping[str, Any], owner_values: Mapping[str, Any]) -> MemorySettings:
    """Merge ``defaults <- global <- owner`` memory settings (rows also hold sleep settings)."""
    return validate(_only({**global_values, **owner_values}, setting_names()))


def effective_sleep(global_values: Mapping[str, Any], owner_values: Mapping[str, Any]) -> SleepSettings:
    """The sleep half of the same rows."""
    return _convert(
        _only({**global_values, **owner_values}, set(SleepSettings.__struct_encode_fields__)), SleepSettings
    )


def validate(values: Mapping[str, Any]) -> MemorySettings:
    """Validate a (partial) mapping of camelCase memory settings into ``MemorySettings``."""
    return _convert(dict(values), MemorySettings)


def _convert(values: dict[str, Any], tp: type[T]) -> T:
    try:
        return msgspec.convert(values, tp)
    except (msgspec.ValidationError, ValueError) as exc:
        raise ValidationFailed(f"invalid setting: {exc}") from exc


def validate_update(
    current: Mapping[str, Any], inherited: Mapping[str, Any], update: Mapping[str, Any], *, is_global: bool = False
) -> None:
    """Check an update of one row (``current``) over what it inherits (the global row for an
    owner, nothing for the global row): unknown names, engine keys in an owner's row and bad
    values raise ``ValidationFailed`` naming the field; the merged memory and sleep settings
    must both be valid. (Engine combinations need the environment: the settings API checks
    them with ``engine_settings.check_engine``.)"""
    unknown = sorted(set(update) - all_setting_names())
    if unknown:
        raise ValidationFailed.at(f"$.values.{unknown[0]}", f"unknown setting(s): {', '.join(unknown)}")
    if not is_global:
        global_only(update)
    parse_engine_values(update)
    merged = {**inherited, **current, **update}
    effective(merged, {})
    effective_sleep(merged, {})


def as_dict(global_values: Mapping[str, Any], owner_values: Mapping[str, Any]) -> dict[str, Any]:
    """Every effective memory and sleep setting as camelCase JSON values (engine settings
    depend on the environment too: ``engine_settings.engine_view``)."""
    memory = msgspec.to_builtins(effective(global_values, owner_values))
    sleep = msgspec.to_builtins(effective_sleep(global_values, owner_values))
    return {**memory, **sleep}


def sources(global_values: Mapping[str, Any], owner_values: Mapping[str, Any]) -> dict[str, str]:
    """Where each effective value comes from: ``owner``, ``global`` or ``default``."""
    return {
        name: "owner" if name in owner_values else "global" if name in global_values else "default"
        for name in sorted(all_setting_names())
    }
