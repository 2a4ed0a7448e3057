"""``python -m bench quality``: LoCoMo retrieval quality through the real services.

Each conversation is one owner and each turn one ``ChatEvent`` published in session order (one
LoCoMo session = one ``session_id``). ``publish`` says how: ``prefixed`` writes
``"[<date>] <speaker>: <text>"`` into the content and shifts ``occurred_at`` so the last session
is yesterday (the text keeps its dates; the shift keeps every turn inside ``retentionDays``);
``plain`` sends what an application sends: the text, the speaker as the message's ``name`` and
the session's true date-time as ``occurred_at``, with ``retentionDays`` raised to cover them.
Once ingest, extraction and embedding are done, every category 1-4 question is asked through
``mem.v1.rpc.retrieve`` (limit 20) per strategy and variant, results mapped back to turns by their
``event_id`` metadata and scored R@k / All@k. Variants turn the engine's runtime settings or the
retrieve service's ``MEMORYD_RETRIEVE_*`` environment (the service restarted with it).
"""

from __future__ import annotations

import asyncio
import collections
import json
import re
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal, Protocol, get_args

from bench import locomo
from bench.harness import ServiceStack, wait_until
from bench.report import environment, markdown_table
from memoryd.client import MemoryClient
from memoryd.rpc import call
from memoryd.schemas.events import ChatEvent, ChatMessage
from memoryd.schemas.retrieval import RetrieveRequest, RetrieveResult
from memoryd.subjects import EXTRACT_CONSUMER, JOBS_STREAM
from shared.settings.cache import announce_change
from shared.settings.memory import GLOBAL_OWNER, RETENTION_DAYS_MAX, MemorySettings
from shared.settings.store import put_values
from shared.tokens import estimate_tokens

LIMIT = 20
MAX_TOKENS = 8000  # the service clamps to 8000; 20 LoCoMo turns use ~1-2k
#: Same protocol, in-process, all-MiniLM-L6-v2 fp32 (shared/data/locomo/README.md).
REFERENCE = {
    "BM25": {"R@5": 0.539, "R@10": 0.611, "R@20": 0.668, "All@10": 0.563},
    "dense MiniLM": {"R@5": 0.441, "R@10": 0.546, "R@20": 0.636, "All@10": 0.489},
    "hybrid RRF k=60 depth 20": {"R@5": 0.555, "R@10": 0.673, "R@20": 0.752, "All@10": 0.618},
}


@dataclass(frozen=True)
class StrategyPlan:
    """How one benchmark strategy is asked of the service."""

    name: str
    request: str  # RetrieveRequest.strategy
    embed_down: bool = False  # ``ServiceStack.stop_embedding`` first: hybrid degrades to full text


STRATEGIES: dict[str, StrategyPlan] = {
    "keyword": StrategyPlan("keyword", "hybrid", embed_down=True),
    "semantic": StrategyPlan("semantic", "semantic"),
    "hybrid": StrategyPlan("hybrid", "hybrid"),
    "exact": StrategyPlan("exact", "exact"),
}
DEFAULT_STRATEGIES = ("hybrid", "semantic", "keyword")  # keyword last: it stops the embed service


@dataclass(frozen=True)
class Variant:
    """An engine configuration: runtime settings and/or retrieve-service environment."""

    name: str
    settings: Mapping[str, Any] = field(default_factory=dict)
    retrieve_env: Mapping[str, str] = field(default_factory=dict)
    types: tuple[str, ...] | None = None


BUILTIN_VARIANTS: dict[str, Variant] = {
    v.name: v
    for v in (
        Variant("default"),
        Variant("rrf-depth-10", {"rrfDepth": 10}),
        Variant("rrf-depth-50", {"rrfDepth": 50}),
        Variant("rrf-depth-100", {"rrfDepth": 100}),
        Variant("rrf-k-20", {"rrfK": 20}),
        Variant("rrf-k-120", {"rrfK": 120}),
        Variant("fusion-score", {"fusion": "score"}),
        Variant("fusion-score-depth-50", {"fusion": "score", "rrfDepth": 50}),
        Variant("fusion-score-depth-100", {"fusion": "score", "rrfDepth": 100}),
        Variant("fusion-score-depth-200", {"fusion": "score", "rrfDepth": 200}),
        Variant(
            "fusion-score-depth-100-fts-0.3",
            {"fusion": "score", "rrfDepth": 100, "ftsWeight": 0.3, "vecWeight": 0.7},
        ),
        Variant(
            "fusion-score-depth-100-fts-0.7",
            {"fusion": "score", "rrfDepth": 100, "ftsWeight": 0.7, "vecWeight": 0.3},
        ),
        Variant("session-boost-0.2", {"sessionBoost": 0.2}),
        Variant(
            "fusion-score-depth-100-session-0.2",
            {"fusion": "score", "rrfDepth": 100, "sessionBoost": 0.2},
        ),
        Variant("neighbour-boost-0.1", {"neighbourBoost": 0.1}),
        Variant("no-neighbour-boost", {"neighbourBoost": 0}),
        Variant(
            "no-boosts-rrf-depth-20",
            {"fusion": "rrf", "rrfDepth": 20, "neighbourBoost": 0, "sessionBoost": 0},
        ),
        Variant("turns-only", types=("episodic",)),
        Variant("no-speaker-boost", {"speakerBoost": 0}),
        Variant("temporal-boost-0.4", {"temporalBoost": 0.4}),
        Variant("no-temporal-reasoning", {"temporalReasoning": 0}),
        Variant("cover-density", {"keywordRanking": "cover_density"}),
        Variant("cover-density-fts-0.5", {"keywordRanking": "cover_density", "ftsWeight": 0.5, "vecWeight": 0.5}),
        Variant(
            "previous-defaults",
            {"rrfDepth": 50, "speakerBoost": 0, "neighbourBoost": 0.3},
        ),
    )
}


#: the name of the variant that turns the LLM rerank on against a scripted model (``rerank_variant``)
RERANK_VARIANT = "rerank-scripted"
_CANDIDATE_LINE = re.compile(r"^\[\d+\] ", re.MULTILINE)


class ScriptedLlm(Protocol):
    """What the benchmark needs of a scripted OpenAI-compatible server (``tests.support.fake_llm.FakeLlm``)."""

    @property
    def base_url(self) -> str: ...

    @property
    def requests(self) -> list[dict[str, Any]]: ...


def keep_order(request: dict[str, Any]) -> str:
    """The scripted model's rerank reply: the candidates in the order they were given (the fused
    order), so the answers stay those of the defaults and only the rerank's cost shows."""
    n = len(_CANDIDATE_LINE.findall(request["messages"][-1]["content"]))
    return json.dumps({"order": list(range(1, n + 1))})


def rerank_variant(base_url: str) -> Variant:
    """The defaults with ``rerank`` on, the retrieve service pointed at the LLM at ``base_url``
    (only retrieve: extraction keeps its rules, so the stored memories do not change)."""
    env = {"MEMORYD_LLM_BASE_URL": base_url, "MEMORYD_LLM_MODEL": "scripted", "MEMORYD_LLM_DAILY_TOKEN_BUDGET": "0"}
    return Variant(RERANK_VARIANT, {"rerank": True}, retrieve_env=env)


def llm_cost(requests: Sequence[dict[str, Any]], questions: int) -> dict[str, Any]:
    """Calls and estimated tokens (``shared.tokens.estimate_tokens``) of the rerank requests."""
    prompt = [sum(estimate_tokens(m["content"]) for m in r["messages"]) for r in requests]
    reply = [estimate_tokens(keep_order(r)) for r in requests]
    candidates = [len(_CANDIDATE_LINE.findall(r["messages"][-1]["content"])) for r in requests]

    def mean(values: list[int]) -> float:
        return round(sum(values) / len(values), 1) if values else 0.0

    return {
        "calls": len(requests),
        "questions": questions,
        "prompt_tokens_mean": mean(prompt),
        "reply_tokens_mean": mean(reply),
        "candidates_mean": mean(candidates),
    }


def parse_variant(text: str) -> Variant:
    """A built-in name, or ``name:key=value,...`` (``MEMORYD_*`` keys go to the retrieve
    service's environment, ``types`` is ``a+b``, other keys are runtime settings, JSON values)."""
    if text in BUILTIN_VARIANTS:
        return BUILTIN_VARIANTS[text]
    name, sep, spec = text.partition(":")
    if not sep or not name:
        raise ValueError(f"variant {text!r}: not one of {', '.join(BUILTIN_VARIANTS)} nor name:key=value,...")
    settings: dict[str, Any] = {}
    env: dict[str, str] = {}
    types: tuple[str, ...] | None = None
    for item in filter(None, spec.split(",")):
        key, eq, value = item.partition("=")
        if not eq:
            raise ValueError(f"variant {name!r}: {item!r} is not key=value")
        if key.startswith("MEMORYD_"):
            env[key] = value
        elif key == "types":
            types = tuple(value.split("+"))
        else:
            try:
                settings[key] = json.loads(value)
            except json.JSONDecodeError:
                settings[key] = value
    return Variant(name, settings, env, types)


def owner_of(conv: locomo.Conversation) -> str:
    return f"locomo-{conv.sample_id}"


def event_id_of(conv: locomo.Conversation, turn: locomo.Turn) -> str:
    return f"locomo-{conv.sample_id}-{turn.dia_id}"


#: how turns are published (module docstring): ``prefixed`` is the LoCoMo protocol's text,
#: ``plain`` what an application sends
Publish = Literal["prefixed", "plain"]
PUBLISH_MODES: tuple[str, ...] = get_args(Publish)


def build_events(conv: locomo.Conversation, now: datetime, publish: Publish = "prefixed") -> list[ChatEvent]:
    """One event per turn, in order: ``prefixed`` with dates shifted so the last session is
    yesterday, ``plain`` with the bare text at the session's own date-time."""
    plain = publish == "plain"
    last = max(t.occurred_at for t in conv.turns)
    shift = timedelta(0) if plain else timedelta(days=(now - timedelta(days=1) - last).days)
    return [
        ChatEvent(
            event_id=event_id_of(conv, t),
            owner=owner_of(conv),
            session_id=f"{conv.sample_id}:s{t.session}",
            messages=[ChatMessage(role="user", content=t.plain if plain else t.content, name=t.speaker)],
            occurred_at=t.occurred_at + shift,
            metadata={"dia_id": t.dia_id, "locomo_session": t.session, "turn": t.index},
        )
        for t in conv.turns
    ]


def retention_days(events: Sequence[ChatEvent], now: datetime) -> int:
    """A ``retentionDays`` that keeps every event's turns searchable (a day to spare)."""
    oldest = min(e.occurred_at for e in events)
    days = (now - oldest).days + 2
    if days > RETENTION_DAYS_MAX:
        raise ValueError(f"turns from {oldest:%Y-%m-%d} are older than retentionDays can keep ({RETENTION_DAYS_MAX})")
    return max(days, MemorySettings().retention_days)


async def ingest(
    stack: ServiceStack,
    convs: Sequence[locomo.Conversation],
    timeout: float = 900.0,
    publish: Publish = "prefixed",
) -> dict[str, Any]:
    """Publish every turn and wait until all is stored, extracted and embedded (``plain``: the
    global ``retentionDays`` raised first, so turns at their true dates stay searchable)."""
    js = stack.nc.jetstream()
    client = MemoryClient(stack.nc, timeout=30)
    now = datetime.now(UTC)
    events = [e for c in convs for e in build_events(c, now, publish)]
    if publish == "plain" and events:
        await put_values(stack.pool, None, {"retentionDays": retention_days(events, now)})
        await announce_change(stack.nc, GLOBAL_OWNER)
    owners = sorted({e.owner for e in events})
    started = time.perf_counter()
    for e in events:
        await client.publish_chat(
            e.owner,
            e.messages,
            session_id=e.session_id,
            event_id=e.event_id,
            metadata=dict(e.metadata),
            occurred_at=e.occurred_at,
        )
    published_s = time.perf_counter() - started

    async def done() -> bool:
        processed = await stack.pool.fetchval("SELECT count(*) FROM events WHERE owner = ANY($1)", owners)
        if processed < len(events):
            return False
        try:
            info = await js.consumer_info(JOBS_STREAM, EXTRACT_CONSUMER)
        except Exception:
            return False
        if info.num_pending or info.num_ack_pending:
            return False
        pending = await stack.pool.fetchval(
            "SELECT count(*) FROM memories WHERE owner = ANY($1) AND needs_reindex AND state = 'active'", owners
        )
        return pending == 0

    await wait_until(done, timeout, interval=0.5, what="ingest + extract + embed of the LoCoMo turns")
    await asyncio.sleep(1.0)
    await wait_until(done, timeout, interval=0.5, what="a quiet pipeline")
    rows = await stack.pool.fetch(
        "SELECT source, type, count(*) AS n FROM memories WHERE owner = ANY($1) GROUP BY 1, 2 ORDER BY 1, 2", owners
    )
    return {
        "publish": publish,
        "events": len(events),
        "published_s": round(published_s, 2),
        "searchable_after_s": round(time.perf_counter() - started, 1),
        "memories": {f"{r['source']}/{r['type']}": r["n"] for r in rows},
    }


async def apply_variant(stack: ServiceStack, variant: Variant, previous: Variant | None) -> bool:
    """Global settings = defaults + the variant's; restart retrieve when its env changes (True)."""
    values = {**engine_defaults(), **variant.settings}
    await put_values(stack.pool, None, values)
    await announce_change(stack.nc, GLOBAL_OWNER)
    running_env = dict(previous.retrieve_env) if previous is not None else {}
    if running_env != dict(variant.retrieve_env):
        await stack.restart("retrieve", variant.retrieve_env)
        return True
    return False


def engine_defaults() -> dict[str, Any]:
    """The engine-relevant defaults (camelCase), so a variant never inherits the previous one's."""
    d = MemorySettings()
    return {
        "rrfK": d.rrf_k,
        "rrfDepth": d.rrf_depth,
        "fusion": d.fusion,
        "sessionBoost": d.session_boost,
        "neighbourBoost": d.neighbour_boost,
        "sessionEvidence": d.session_evidence,
        "sessionSpread": d.session_spread,
        "ftsWeight": d.fts_weight,
        "vecWeight": d.vec_weight,
        "speakerBoost": d.speaker_boost,
        "temporalBoost": d.temporal_boost,
        "temporalReasoning": d.temporal_reasoning,
        "temporalLift": d.temporal_lift,
        "temporalWindow": d.temporal_window,
        "ftsFullCoverage": d.fts_full_coverage,
        "ftsCoveragePower": d.fts_coverage_power,
        "keywordRanking": d.keyword_ranking,
        "rerank": d.rerank,
        "rerankDepth": d.rerank_depth,
    }


def dia_map(convs: Sequence[locomo.Conversation]) -> dict[str, str]:
    return {event_id_of(c, t): t.dia_id for c in convs for t in c.turns}


def dia_of(metadata: Mapping[str, Any], by_event: Mapping[str, str]) -> str | None:
    if isinstance(metadata.get("dia_id"), str):
        return str(metadata["dia_id"])
    event = metadata.get("event_id")
    return by_event.get(event) if isinstance(event, str) else None


async def ask_all(
    stack: ServiceStack, convs: Sequence[locomo.Conversation], plan: StrategyPlan, variant: Variant
) -> tuple[list[locomo.QAOutcome], dict[str, Any]]:
    by_event = dia_map(convs)
    outcomes: list[locomo.QAOutcome] = []
    tiers: collections.Counter[str] = collections.Counter()
    fallbacks: collections.Counter[str] = collections.Counter()
    non_turns = 0
    server_ms: list[float] = []
    embed_ms: list[float] = []
    for conv in convs:
        for qa in conv.qas:
            req = RetrieveRequest(
                owner=owner_of(conv),
                query=qa.question,
                strategy=plan.request,  # type: ignore[arg-type]
                limit=LIMIT,
                max_tokens=MAX_TOKENS,
                types=list(variant.types) if variant.types else None,  # type: ignore[arg-type]
            )
            t0 = time.perf_counter()
            res: RetrieveResult = await call(stack.nc, "retrieve", req, timeout=30)
            ms = (time.perf_counter() - t0) * 1000
            ranked = tuple(dia_of(m.metadata, by_event) for m in res.memories)
            non_turns += sum(1 for d in ranked[:10] if d is None)
            tiers.update(t.tier for t in res.tiers if t.served)
            fallbacks.update(res.fallbacks)
            if res.ms is not None:
                server_ms.append(res.ms)
            if res.embed_ms is not None:
                embed_ms.append(res.embed_ms)
            outcomes.append(
                locomo.QAOutcome(
                    category=qa.category,
                    evidence=qa.evidence,
                    ranked=ranked,
                    latency_ms=ms,
                    tokens_top10=sum(m.tokens for m in res.memories[:10]),
                )
            )
    info = {
        "tiers_served": dict(tiers),
        "fallbacks": dict(fallbacks),
        "non_turn_results_in_top10": round(non_turns / max(1, len(outcomes)), 3),
        "server_ms_p50": round(locomo.percentile(server_ms, 50), 2) if server_ms else None,
        "embed_ms_p50": round(locomo.percentile(embed_ms, 50), 2) if embed_ms else None,
    }
    return outcomes, info


async def run_quality(
    stack: ServiceStack,
    convs: Sequence[locomo.Conversation],
    strategies: Sequence[str] = DEFAULT_STRATEGIES,
    variants: Sequence[Variant] = (BUILTIN_VARIANTS["default"],),
    *,
    data_name: str = "",
    log: Any = print,
    after_ingest: Callable[[], Awaitable[None]] | None = None,
    with_protocol: bool = True,
    rerank_llm: ScriptedLlm | None = None,
    publish: Publish = "prefixed",
) -> dict[str, Any]:
    """Ingest once, then score every (variant, strategy); returns the JSON report.

    ``after_ingest`` runs once everything is searchable (e.g. an in-process study on the same data).
    ``with_protocol``: also the leave-one-conversation-out protocol (``bench.protocol``), run
    before any variant changes a setting, so it sees the defaults. ``rerank_llm``: also the
    ``rerank_variant`` against this scripted model (answering ``keep_order``), with its cost.
    ``publish``: how turns are published (``build_events``).
    """
    if rerank_llm is not None:
        variants = [*variants, rerank_variant(rerank_llm.base_url)]
    plans = [STRATEGIES[s] for s in strategies]
    plans.sort(key=lambda p: p.embed_down)  # runs with the embed service down go last
    log(f"ingesting {sum(len(c.turns) for c in convs)} turns of {len(convs)} conversation(s), {publish} ...")
    ingest_info = await ingest(stack, convs, publish=publish)
    log(f"searchable after {ingest_info['searchable_after_s']} s: {ingest_info['memories']}")
    if after_ingest is not None:
        await after_ingest()
    study = None
    if with_protocol and len(convs) < 2:
        log("protocol skipped: leave-one-conversation-out needs at least two conversations")
    elif with_protocol:
        from bench import protocol

        study = await protocol.run_protocol(stack.pg_dsn, stack.nc, convs, owner_of, dia_map(convs), log=log)
    runs: list[dict[str, Any]] = []
    embed_stopped = False
    if plans and variants:
        # one untimed pass first: query embeddings cached, statements prepared, pages in memory for
        # every variant alike, so the first one timed does not also pay the warm-up
        await ask_all(stack, convs, plans[0], variants[0])
        log("warm-up pass done (every question once, untimed)")
    restarted = False  # the retrieve service was restarted since the last pass (cold)
    for plan in plans:
        if plan.embed_down and not embed_stopped:
            await stack.stop_embedding()
            embed_stopped = restarted = True
        previous: Variant | None = None
        # engine variants only change fused rankings: other strategies run with the first one
        chosen = variants if plan.request == "hybrid" and not plan.embed_down else variants[:1]
        for variant in chosen:
            if await apply_variant(stack, variant, previous) or restarted:
                await ask_all(stack, convs, plan, variant)  # a restarted service warms up untimed too
            previous, restarted = variant, False
            calls_before = len(rerank_llm.requests) if rerank_llm is not None else 0
            outcomes, info = await ask_all(stack, convs, plan, variant)
            if rerank_llm is not None and variant.name == RERANK_VARIANT:
                info["llm"] = llm_cost(rerank_llm.requests[calls_before:], len(outcomes))
            table = locomo.score_by_category(outcomes)
            overall = table["overall"]
            log(
                f"{variant.name:>24} {plan.name:>8}: R@5 {overall.recall[5]:.3f} R@10 {overall.recall[10]:.3f} "
                f"R@20 {overall.recall[20]:.3f} All@10 {overall.all_at:.3f} p50 {overall.latency_p50_ms:.1f} ms"
            )
            runs.append(
                {
                    "variant": variant.name,
                    "settings": dict(variant.settings),
                    "retrieve_env": dict(variant.retrieve_env),
                    "strategy": plan.name,
                    "request_strategy": plan.request,
                    "embed_down": plan.embed_down,
                    "scores": {k: v.as_dict() for k, v in table.items()},
                    **info,
                }
            )
        if previous is not None and previous != variants[0]:
            restarted = await apply_variant(stack, variants[0], previous)
    return {
        "benchmark": "quality",
        "data": data_name,  # the file name only: a report carries no path of the machine it ran on
        "conversations": [c.sample_id for c in convs],
        "publish": publish,
        "questions": sum(len(c.qas) for c in convs),
        "dropped_questions": sum(c.dropped_qas for c in convs),
        "limit": LIMIT,
        "ingest": ingest_info,
        "runs": runs,
        "protocol": study,
        "reference": REFERENCE,
        "environment": environment(),
    }


def render(report: Mapping[str, Any]) -> str:
    """The protocol table per (variant, strategy), then one summary line per run."""
    out = [
        f"LoCoMo retrieval through the services: {report['questions']} questions "
        f"({', '.join(report['conversations'])}), limit {report['limit']}, turns published"
        f" {report.get('publish', 'prefixed')}",
        "",
    ]
    summary = []
    for run in report["runs"]:
        rows = [
            [
                cat,
                s["n"],
                s["R@5"],
                s["R@10"],
                s["R@20"],
                s["All@10"],
                s["latency_p50_ms"],
                s["latency_p95_ms"],
                s["tokens_top10"],
            ]
            for cat, s in run["scores"].items()
        ]
        o = run["scores"]["overall"]
        summary.append(
            [
                run["variant"],
                run["strategy"],
                o["R@5"],
                o["R@10"],
                o["R@20"],
                o["All@10"],
                o["latency_p50_ms"],
                o["latency_p95_ms"],
                run.get("server_ms_p50"),
                o["tokens_top10"],
            ]
        )
        out.append(f"### {run['strategy']} — variant {run['variant']}")
        out.append(
            markdown_table(["category", "n", "R@5", "R@10", "R@20", "All@10", "p50 ms", "p95 ms", "tokens top10"], rows)
        )
        out.append("")
    ref = [
        [f"reference: {k}", "in-process", v["R@5"], v["R@10"], v["R@20"], v["All@10"], None, None, None, None]
        for k, v in REFERENCE.items()
    ]
    out.append("### Summary (overall; latency = client round trip, server = the service's own ms)")
    head = ["variant", "strategy", "R@5", "R@10", "R@20", "All@10", "p50 ms", "p95 ms", "server p50 ms", "tokens top10"]
    out.append(markdown_table(head, summary + ref))
    out += rerank_lines(report["runs"])
    if report.get("protocol"):
        from bench import protocol

        out += ["", protocol.render(report["protocol"])]
    return "\n".join(out)


def rerank_lines(runs: Sequence[Mapping[str, Any]]) -> list[str]:
    """What the LLM rerank costs over the defaults (hybrid), when the scripted variant ran."""
    by_name = {r["variant"]: r for r in runs if r["strategy"] == "hybrid"}
    rerank, default = by_name.get(RERANK_VARIANT), by_name.get("default")
    if rerank is None or default is None or "llm" not in rerank:
        return []
    cost, r, d = rerank["llm"], rerank["scores"]["overall"], default["scores"]["overall"]
    depth = rerank["settings"].get("rerankDepth", MemorySettings().rerank_depth)
    return [
        "",
        f"LLM rerank of the fused top `rerankDepth` {depth}, scripted model keeping the fused order:"
        f" {cost['calls']} calls for {cost['questions']} questions, {cost['candidates_mean']} candidates,"
        f" ~{cost['prompt_tokens_mean']} prompt and ~{cost['reply_tokens_mean']} reply tokens per call;"
        f" client p50 {r['latency_p50_ms']} ms against {d['latency_p50_ms']} ms without it,"
        f" p95 {r['latency_p95_ms']} against {d['latency_p95_ms']} ms; R@10 {r['R@10']} against {d['R@10']}.",
    ]


def default_data_path(repo_root: Path) -> Path:
    return (repo_root / ".." / "shared" / "data" / "locomo" / "locomo_dev.json").resolve()
