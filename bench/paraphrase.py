"""``python -m bench paraphrase``: does hybrid search find a memory when the question rewords it?

One owner gets ``memories`` synthetic chat turns (``bench.paraphrase_data``, fixed seed), each
one ``ChatEvent`` through the real ingest, extract and embed services (``quality.ingest``;
twenty turns per session). For ``questions`` of them, spread evenly over the memories whose
questions have one answer in the corpus (``answerable``), two questions are asked through
``mem.v1.rpc.retrieve``: a keyword-style one that repeats the memory's words, and a
paraphrase that shares at most one content word (an entity) with it. Each is asked as
hybrid, semantic-only and keyword-only (hybrid with the embed service stopped and retrieve
without its query-vector cache, so it degrades to full-text, as in ``bench quality``); the
score is how often the source memory is in the top 10 (and top 1), with the engine's default
settings.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from bench import locomo, paraphrase_data, quality
from bench.harness import ServiceStack
from bench.report import environment, markdown_table
from memoryd.rpc import call
from memoryd.schemas.retrieval import RetrieveRequest, RetrieveResult

SPEAKER = "Sam"
PER_SESSION = 20
KINDS = ("keyword", "paraphrase")
STRATEGY_ORDER = ("hybrid", "semantic", "keyword")  # keyword last: it stops the embed service
DATE = datetime(2026, 1, 5, 10, 0, tzinfo=UTC)


def conversation(items: Sequence[paraphrase_data.Item]) -> locomo.Conversation:
    """The corpus as one conversation (one turn per memory), so ``quality.ingest`` stores it."""
    turns = []
    for i, item in enumerate(items):
        session, index = divmod(i, PER_SESSION)
        when = DATE + timedelta(days=session, seconds=index)
        turns.append(
            locomo.Turn(
                dia_id=f"D{session + 1}:{index + 1}",
                session=session + 1,
                index=index,
                speaker=SPEAKER,
                text=item.memory,
                date_text=when.strftime(locomo.DATE_FORMAT).lower().lstrip("0"),
                occurred_at=when,
            )
        )
    return locomo.Conversation(sample_id="paraphrase", speakers=(SPEAKER, "Robin"), turns=tuple(turns), qas=())


def answerable(items: Sequence[paraphrase_data.Item]) -> list[int]:
    """Indices of the memories whose two questions no other memory shares: a question several
    memories yield word for word ("When do I fly out to Tallinn?" for every flight there) has
    several right answers, and which of them a search ranks first is a tie, not recall."""
    keyword = Counter(it.keyword for it in items)
    paraphrased = Counter(it.paraphrase for it in items)
    return [i for i, it in enumerate(items) if keyword[it.keyword] == 1 and paraphrased[it.paraphrase] == 1]


def asked(candidates: Sequence[int], n_questions: int) -> list[int]:
    """The memories asked about: ``n_questions`` of ``candidates`` spread evenly over them."""
    n = min(len(candidates), n_questions)
    return sorted({candidates[i * len(candidates) // n] for i in range(n)})


def rank_of(ranked: Sequence[str | None], target: str) -> int | None:
    return ranked.index(target) + 1 if target in ranked else None


async def ask(
    stack: ServiceStack,
    conv: locomo.Conversation,
    items: Sequence[paraphrase_data.Item],
    indices: Sequence[int],
    plan: quality.StrategyPlan,
) -> dict[str, Any]:
    by_event = quality.dia_map([conv])
    out: dict[str, Any] = {}
    for kind in KINDS:
        ranks: list[int | None] = []
        ms: list[float] = []
        for i in indices:
            req = RetrieveRequest(
                owner=quality.owner_of(conv),
                query=getattr(items[i], kind),
                strategy=plan.request,  # type: ignore[arg-type]
                limit=10,
                max_tokens=quality.MAX_TOKENS,
            )
            t0 = time.perf_counter()
            res: RetrieveResult = await call(stack.nc, "retrieve", req, timeout=30)
            ms.append((time.perf_counter() - t0) * 1000)
            ranked = [quality.dia_of(m.metadata, by_event) for m in res.memories]
            ranks.append(rank_of(ranked, conv.turns[i].dia_id))
        out[kind] = score(ranks, ms)
    return out


def score(ranks: Sequence[int | None], ms: Sequence[float]) -> dict[str, Any]:
    n = max(1, len(ranks))
    return {
        "n": len(ranks),
        "top1": round(sum(1 for r in ranks if r == 1) / n, 3),
        "top10": round(sum(1 for r in ranks if r is not None and r <= 10) / n, 3),
        "mrr10": round(sum(1 / r for r in ranks if r is not None and r <= 10) / n, 3),
        "latency_p50_ms": round(locomo.percentile(ms, 50), 1) if ms else None,
    }


async def run_paraphrase(
    stack: ServiceStack, memories: int = 2000, questions: int = 200, *, seed: int = 19, log: Any = print
) -> dict[str, Any]:
    """Ingest the corpus once, then ask both question kinds for every strategy."""
    items = paraphrase_data.generate(memories, seed)
    conv = conversation(items)
    candidates = answerable(items)
    indices = asked(candidates, questions)
    log(f"ingesting {len(items)} synthetic memories ...")
    ingest_info = await quality.ingest(stack, [conv])
    log(f"searchable after {ingest_info['searchable_after_s']} s: {ingest_info['memories']}")
    await quality.apply_variant(stack, quality.BUILTIN_VARIANTS["default"], None)
    results: dict[str, Any] = {}
    for name in STRATEGY_ORDER:
        plan = quality.STRATEGIES[name]
        if plan.embed_down:
            await stack.stop_embedding()
        # untimed first (as the quality benchmark): every strategy's latency then compares with
        # its question vectors cached and its statements prepared, not the first one's alone
        await ask(stack, conv, items, indices, plan)
        results[name] = await ask(stack, conv, items, indices, plan)
        log(
            f"{name:>8}: keyword top10 {results[name]['keyword']['top10']:.3f}, "
            f"paraphrase top10 {results[name]['paraphrase']['top10']:.3f}"
        )
    sample = [
        {"memory": items[i].memory, "keyword": items[i].keyword, "paraphrase": items[i].paraphrase} for i in indices[:3]
    ]
    return {
        "benchmark": "paraphrase",
        "memories": len(items),
        "questions": len(indices),
        "answerable": len(candidates),
        "seed": seed,
        "max_shared_words": max(
            len(paraphrase_data.shared_words(items[i].memory, items[i].paraphrase)) for i in indices
        ),
        "ingest": ingest_info,
        "results": results,
        "checks": checks(results),
        "examples": sample,
        "environment": environment(),
    }


def checks(results: Mapping[str, Any]) -> dict[str, bool]:
    """The two claims: hybrid >= semantic on paraphrases, hybrid >= keyword on keyword questions."""
    return {
        "hybrid_ge_semantic_on_paraphrase": results["hybrid"]["paraphrase"]["top10"]
        >= results["semantic"]["paraphrase"]["top10"],
        "hybrid_ge_keyword_on_keyword": results["hybrid"]["keyword"]["top10"] >= results["keyword"]["keyword"]["top10"],
    }


def render(report: Mapping[str, Any]) -> str:
    head = ["strategy", "question", "n", "source in top 10", "source first", "MRR@10", "p50 ms"]
    rows = [
        [name, kind, s["n"], s["top10"], s["top1"], s["mrr10"], s["latency_p50_ms"]]
        for name, by_kind in report["results"].items()
        for kind, s in by_kind.items()
    ]
    ok = {k: "yes" if v else "no" for k, v in report["checks"].items()}
    lines = [
        f"Paraphrase check: {report['memories']:,} synthetic memories of one owner, {report['questions']} of them "
        f"(of the {report['answerable']:,} whose questions no other memory shares) asked "
        f"twice (keyword-style, and paraphrased with at most {report['max_shared_words']} content word in "
        f"common), seed {report['seed']}, default settings",
        "",
        markdown_table(head, rows),
        "",
        f"- hybrid >= semantic-only on paraphrased questions: {ok['hybrid_ge_semantic_on_paraphrase']}",
        f"- hybrid >= keyword-only on keyword questions: {ok['hybrid_ge_keyword_on_keyword']}",
        "",
        "Example (memory / keyword question / paraphrase):",
        "",
    ]
    for ex in report["examples"][:3]:
        lines.append(f"- {ex['memory']} / {ex['keyword']} / {ex['paraphrase']}")
    return "\n".join(lines)
