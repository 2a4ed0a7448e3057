"""``python -m bench embed-quality``: the float and dynamic-int8 embedding variants judged by retrieval.

Both corpora are ingested once through the services (``dense_context.collect``): the LoCoMo
turns and the paraphrase check's synthetic memories (``bench.paraphrase``: one owner, each asked
memory with a keyword-style and a paraphrased question). Every stored memory and question is then
embedded here by each variant of the embed service's own model (``LocalEmbedder``), the dense
list is ranked by exact cosine (as pgvector answers an owner of this size) and fused with the
engine's own keyword list, fusion and boosts at today's default settings (``study.rank``). One run
scores both variants side by side, with the CPU time per text of each and the vectors' cosine to
the float ones. A variant passes when its hybrid scores stay within ``TOLERANCE`` of the float's,
the LoCoMo conversation it serves worst included (a lever is kept only if the worst fold holds).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from bench import dense_context, dense_context_logic, locomo, paraphrase, paraphrase_data, study
from bench.report import environment, markdown_table
from services.retrieve.logic.fusion import normalize_query

FLOAT = "float"
INT8 = "dynamic-int8"
#: the largest drop from the float model a variant may show and still pass: the worst conversation's
#: hybrid R@10 (whichever conversation that is for each variant) may not fall at all
TOLERANCE = {"locomo_hybrid_R@10": 0.005, "locomo_worst_conversation_R@10": 0.0, "paraphrase_hybrid_top10": 0.01}
PARAPHRASE_OWNER = "paraphrase"
CHUNK = 16  # texts per embed() call, the embed service's batch_max


def paraphrase_conversation(memories: int, questions: int, seed: int) -> locomo.Conversation:
    """The paraphrase check's corpus as one conversation whose questions name their memory's turn."""
    items = paraphrase_data.generate(memories, seed)
    conv = paraphrase.conversation(items)
    qas = [
        locomo.QA(getattr(items[i], kind), 0, (conv.turns[i].dia_id,))
        for i in paraphrase.asked(paraphrase.answerable(items), questions)
        for kind in paraphrase.KINDS
    ]
    return replace(conv, qas=tuple(qas))


def embedders(models: Path) -> dict[str, Any]:
    """Each variant as the embed service loads it (the dynamic-int8 file built once into ``models``)."""
    from services.embed.adapters.onnx import LocalEmbedder

    return {FLOAT: LocalEmbedder.default(cache_dir=models), INT8: LocalEmbedder.dynamic_int8(cache_dir=models)}


def embed_all(embedder: Any, texts: Sequence[str]) -> tuple[np.ndarray, dict[str, float]]:
    """``texts``' vectors (rows in order) and the CPU and wall seconds per text it took, in calls of
    ``CHUNK`` texts of similar length (as the service plans its batches)."""
    out = np.zeros((len(texts), embedder.dim), dtype=np.float32)
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    cpu, wall = time.process_time(), time.perf_counter()
    for n in range(0, len(order), CHUNK):
        chunk = order[n : n + CHUNK]
        out[chunk] = embedder.embed([texts[i] for i in chunk])
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return out, {"cpu_ms_per_text": 1000 * cpu / len(texts), "wall_ms_per_text": 1000 * wall / len(texts)}


def swap_vectors(
    cands: Sequence[study.Candidates],
    memories: Mapping[str, Sequence[dense_context_logic.Memory]],
    vector_of: Mapping[str, np.ndarray],
) -> list[study.Candidates]:
    """Each question's vector list ranked by exact cosine over its owner's memories under ``vector_of``."""
    ids = {conv: [m.id for m in mems] for conv, mems in memories.items()}
    mats = {conv: np.vstack([vector_of[m.content] for m in mems]) for conv, mems in memories.items()}
    return [
        replace(
            c,
            vec=dense_context_logic.dense_list(
                [mats[c.conversation]],
                ids[c.conversation],
                vector_of[normalize_query(c.qa.question)],
                dense_context_logic.DEPTH,
            ),
        )
        for c in cands
    ]


def dense_only(c: study.Candidates) -> tuple[str | None, ...]:
    return tuple(c.dia.get(i) for i, _ in c.vec[: study.LIMIT])


def hybrid_outcomes(cands: Sequence[study.Candidates]) -> list[locomo.QAOutcome]:
    p = study.defaults()
    return [locomo.QAOutcome(c.qa.category, c.qa.evidence, study.rank(c, p)) for c in cands]


def score_locomo(cands: Sequence[study.Candidates]) -> dict[str, Any]:
    """Hybrid at the defaults and dense-only, overall and by category, and hybrid R@10 by conversation."""
    dense = [locomo.QAOutcome(c.qa.category, c.qa.evidence, dense_only(c)) for c in cands]
    hybrid = hybrid_outcomes(cands)
    by_conversation = study.by_conversation(cands, hybrid)
    return {
        "hybrid": {k: v.as_dict() for k, v in locomo.score_by_category(hybrid).items()},
        "semantic": locomo.score(dense).as_dict(),
        "hybrid_R@10_by_conversation": {
            conv: locomo.score(outs).as_dict()["R@10"] for conv, outs in sorted(by_conversation.items())
        },
    }


def worst_conversation(v: Mapping[str, Any]) -> tuple[str, float]:
    """The conversation a variant's hybrid ranking serves worst, and its R@10."""
    by_conversation: Mapping[str, float] = v["locomo"]["hybrid_R@10_by_conversation"]
    worst = min(by_conversation, key=by_conversation.__getitem__)
    return worst, by_conversation[worst]


def paired(base: Sequence[locomo.QAOutcome], other: Sequence[locomo.QAOutcome], k: int = 10) -> dict[str, Any]:
    """Per question, ``other``'s R@k against ``base``'s: how many rose and fell, and the mean
    difference with its standard error (the same questions, so the spread of the differences)."""
    diffs = np.array(
        [
            locomo.recall_at(o.ranked, o.evidence, k) - locomo.recall_at(b.ranked, b.evidence, k)
            for b, o in zip(base, other, strict=True)
        ]
    )
    se = float(diffs.std(ddof=1) / np.sqrt(len(diffs))) if len(diffs) > 1 else 0.0
    return {
        "questions": len(diffs),
        "better": int((diffs > 0).sum()),
        "worse": int((diffs < 0).sum()),
        "mean_difference": round(float(diffs.mean()), 4) if len(diffs) else 0.0,
        "standard_error": round(se, 4),
    }


def score_paraphrase(cands: Sequence[study.Candidates], kinds: Sequence[str]) -> dict[str, Any]:
    """Source in the top 10 and first, per strategy (hybrid at the defaults, semantic) and question kind."""
    p = study.defaults()
    out: dict[str, Any] = {}
    for strategy, ranked_of in (("hybrid", lambda c: study.rank(c, p)), ("semantic", dense_only)):
        for kind in paraphrase.KINDS:
            ranks = [
                paraphrase.rank_of(ranked_of(c)[:10], c.qa.evidence[0])
                for c, k in zip(cands, kinds, strict=True)
                if k == kind
            ]
            out.setdefault(strategy, {})[kind] = paraphrase.score(ranks, [])
    return out


def run(
    convs: Sequence[locomo.Conversation],
    cache_dir: Path,
    log: Callable[[str], None],
    *,
    data_name: str = "",
    memories: int = 2000,
    questions: int = 200,
    seed: int = 19,
) -> dict[str, Any]:
    """Collect (or read the collected candidates from ``cache_dir``), embed with both variants, score."""
    para = paraphrase_conversation(memories, questions, seed)
    cands, stored, info = dense_context.collected([*convs, para], cache_dir, log)
    loco = [c for c in cands if c.conversation != para.sample_id]
    para_cands = [c for c in cands if c.conversation == para.sample_id]
    kinds = [paraphrase.KINDS[i % 2] for i in range(len(para.qas))]  # asked in pairs, keyword first
    texts = sorted(
        {m.content for mems in stored.values() for m in mems} | {normalize_query(c.qa.question) for c in cands}
    )
    log(f"{len(texts)} distinct texts (memories and questions) to embed per variant")
    variants: dict[str, Any] = {}
    vectors: dict[str, np.ndarray] = {}
    hybrid: dict[str, list[locomo.QAOutcome]] = {}
    for name, embedder in embedders(cache_dir / "models").items():
        vectors[name], cost = embed_all(embedder, texts)
        vector_of = dict(zip(texts, vectors[name], strict=True))
        swapped = swap_vectors(loco, {k: v for k, v in stored.items() if k != para.sample_id}, vector_of)
        hybrid[name] = hybrid_outcomes(swapped)
        variants[name] = {
            "signature": embedder.signature,
            **{k: round(v, 3) for k, v in cost.items()},
            "locomo": score_locomo(swapped),
            "paraphrase": score_paraphrase(
                swap_vectors(para_cands, {para.sample_id: stored[para.sample_id]}, vector_of), kinds
            ),
        }
        r10 = variants[name]["locomo"]["hybrid"]["overall"]["R@10"]
        log(f"{name:>13}: LoCoMo hybrid R@10 {r10:.4f}, {cost['cpu_ms_per_text']:.2f} CPU ms/text")
    cosine = np.sum(vectors[FLOAT] * vectors[INT8], axis=1)
    return {
        "benchmark": "embed-quality",
        "data": data_name,
        "conversations": [c.sample_id for c in convs],
        "questions": len(loco),
        "paraphrase": {"memories": memories, "questions": len(para_cands), "seed": seed},
        "texts": len(texts),
        "settings": study.defaults().as_dict(),
        "variants": variants,
        "cosine_to_float": {"min": round(float(cosine.min()), 4), "mean": round(float(cosine.mean()), 4)},
        "cpu_ratio": round(variants[FLOAT]["cpu_ms_per_text"] / variants[INT8]["cpu_ms_per_text"], 2),
        "verdict": verdict(variants),
        "per_question": paired(hybrid[FLOAT], hybrid[INT8]),
        "pgvector_check": pgvector_check(loco),
        "ingest": info,
        "environment": environment(),
    }


def pgvector_check(loco: Sequence[study.Candidates]) -> dict[str, float]:
    """The float scores from the vector lists pgvector returned to the engine, to set beside the in-process ones."""
    scores = score_locomo(loco)
    return {"hybrid_R@10": scores["hybrid"]["overall"]["R@10"], "semantic_R@10": scores["semantic"]["R@10"]}


def headline(v: Mapping[str, Any]) -> dict[str, float]:
    return {
        "locomo_hybrid_R@10": v["locomo"]["hybrid"]["overall"]["R@10"],
        "locomo_worst_conversation_R@10": worst_conversation(v)[1],
        "paraphrase_hybrid_top10": min(s["top10"] for s in v["paraphrase"]["hybrid"].values()),
    }


def verdict(variants: Mapping[str, Any]) -> dict[str, Any]:
    """Each headline figure's drop from float to dynamic-int8 against its ``TOLERANCE``."""
    base, cand = headline(variants[FLOAT]), headline(variants[INT8])
    drops = {k: round(base[k] - cand[k], 4) for k in TOLERANCE}
    return {"drops": drops, "tolerance": TOLERANCE, "passes": all(drops[k] <= TOLERANCE[k] for k in TOLERANCE)}


def render(report: Mapping[str, Any]) -> str:
    """One row per variant: LoCoMo hybrid and semantic, paraphrase top 10 by question kind, CPU per text."""
    head = [
        "variant",
        "signature",
        "LoCoMo hybrid R@10",
        "worst conversation",
        "hybrid All@10",
        "semantic R@10",
        "paraphrase hybrid top10 (keyword / paraphrased)",
        "paraphrase semantic top10 (keyword / paraphrased)",
        "CPU ms per text",
    ]
    rows = []
    for name, v in report["variants"].items():
        hyb, para = v["locomo"]["hybrid"]["overall"], v["paraphrase"]
        worst, worst_r10 = worst_conversation(v)
        rows.append(
            [
                name,
                f"`{v['signature']}`",
                hyb["R@10"],
                f"{worst_r10:.3f} ({worst})",
                hyb["All@10"],
                v["locomo"]["semantic"]["R@10"],
                f"{para['hybrid']['keyword']['top10']} / {para['hybrid']['paraphrase']['top10']}",
                f"{para['semantic']['keyword']['top10']} / {para['semantic']['paraphrase']['top10']}",
                v["cpu_ms_per_text"],
            ]
        )
    v = report["verdict"]
    drops = ", ".join(f"{k} {v['drops'][k]:+.4f} (tolerance {v['tolerance'][k]})" for k in v["drops"])
    para, cos, check = report["paraphrase"], report["cosine_to_float"], report["pgvector_check"]
    pq = report["per_question"]
    lines = [
        f"Embedding variants judged by retrieval: LoCoMo ({report['questions']} questions, "
        f"{', '.join(report['conversations'])}) and the paraphrase check ({para['memories']:,} memories, "
        f"{para['questions']} questions, seed {para['seed']}), default settings, in-process "
        f"({report['texts']:,} texts embedded per variant)",
        "",
        markdown_table(head, rows),
        "",
        f"- drop from float to dynamic-int8: {drops}; passes: {'yes' if v['passes'] else 'no'}",
        f"- per LoCoMo question, hybrid R@10 of dynamic-int8 against float: higher on {pq['better']}, lower on"
        f" {pq['worse']} of {pq['questions']}; mean difference {pq['mean_difference']:+.4f}"
        f" (standard error {pq['standard_error']})",
        f"- CPU per text, float / dynamic-int8: {report['cpu_ratio']}x"
        " (same run; on a shared machine the ratio, not the times, is the figure)",
        f"- cosine of the dynamic-int8 vectors to the float ones: min {cos['min']}, mean {cos['mean']}",
        f"- check: the engine's own pgvector lists (float) give LoCoMo hybrid R@10 {check['hybrid_R@10']}"
        f" and semantic R@10 {check['semantic_R@10']}",
    ]
    return "\n".join(lines)
