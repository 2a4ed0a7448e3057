"""``python -m bench temporal``: recall of questions about *when*, on conversations nobody tuned on.

``temporal_data`` generates dated conversations (fixed seed) and their questions ("When did
X ...?", "What did X do in May 2023?", "the week before ...", "the two weeks after ...",
"before or after ..."), each with its evidence turns. Every conversation is one owner and
every turn one ``ChatEvent`` through the real ingest, extract and embed services
(``quality.ingest``, turns ``prefixed`` or ``plain``); each question is asked through
``mem.v1.rpc.retrieve`` (hybrid, limit 20) with the defaults and with the temporal settings
turned off and on one by one, and scored R@k per question kind.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bench import locomo, quality, temporal_data
from bench.report import environment, markdown_table

#: the share ``temporalReasoning`` is checked at when it is turned on alone or with the "when" cue
REASONING = 0.4
#: ``temporalWindow`` values checked beside the defaults (and 0)
WINDOW = (20, 50)
VARIANTS = (
    quality.Variant("default"),
    quality.Variant("no temporal settings", {"temporalBoost": 0, "temporalReasoning": 0}),
    quality.Variant("temporalBoost 0.4 only", {"temporalBoost": 0.4, "temporalReasoning": 0}),
    quality.Variant(f"temporalReasoning {REASONING} only", {"temporalBoost": 0, "temporalReasoning": REASONING}),
    quality.Variant(f"both (0.4, {REASONING})", {"temporalBoost": 0.4, "temporalReasoning": REASONING}),
    quality.Variant("temporalLift 0 (own score only)", {"temporalLift": 0}),
    quality.Variant("temporalWindow 0 (no window candidates)", {"temporalWindow": 0}),
    *(quality.Variant(f"temporalWindow {n}", {"temporalWindow": n}) for n in WINDOW),
)


def by_kind(outcomes: Sequence[locomo.QAOutcome], kinds: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Scores overall and per question kind (``kinds[i]`` is the kind of ``outcomes[i]``)."""
    if len(outcomes) != len(kinds):
        raise ValueError(f"{len(outcomes)} outcomes for {len(kinds)} question kinds")
    out = {"overall": locomo.score(outcomes).as_dict()}
    for kind in temporal_data.QUESTION_KINDS:
        group = [o for o, k in zip(outcomes, kinds, strict=True) if k == kind]
        if group:
            out[kind] = locomo.score(group).as_dict()
    return out


async def run_temporal(
    stack: Any, conversations: int = 6, *, seed: int = 23, log: Any = print, publish: quality.Publish = "prefixed"
) -> dict[str, Any]:
    """Ingest the generated conversations once, then ask every question per variant."""
    generated = temporal_data.generate(conversations, seed)
    convs = [g.conversation for g in generated]
    kinds = [k for g in generated for k in g.kinds]
    log(f"ingesting {sum(len(c.turns) for c in convs)} turns of {len(convs)} generated conversations ...")
    ingest_info = await quality.ingest(stack, convs, publish=publish)
    plan = quality.STRATEGIES["hybrid"]
    results: dict[str, Any] = {}
    previous: quality.Variant | None = None
    for variant in VARIANTS:
        await quality.apply_variant(stack, variant, previous)
        if previous is None:
            await quality.ask_all(stack, convs, plan, variant)  # untimed warm-up
        previous = variant
        outcomes, _info = await quality.ask_all(stack, convs, plan, variant)
        results[variant.name] = {"settings": dict(variant.settings), "scores": by_kind(outcomes, kinds)}
        log(f"{variant.name:>28}: R@10 {results[variant.name]['scores']['overall']['R@10']:.3f}")
    await quality.apply_variant(stack, VARIANTS[0], previous)
    example = generated[0]
    return {
        "benchmark": "temporal",
        "conversations": len(convs),
        "publish": publish,
        "turns": sum(len(c.turns) for c in convs),
        "questions": len(kinds),
        "seed": seed,
        "ingest": ingest_info,
        "results": results,
        "examples": [
            {"kind": k, "question": qa.question, "evidence": list(qa.evidence)}
            for k, qa in list(zip(example.kinds, example.conversation.qas, strict=True))[::10]
        ],
        "environment": environment(),
    }


def render(report: Mapping[str, Any]) -> str:
    # the kinds the report asked (a report from before a kind was added renders as it did)
    asked = [k for k in temporal_data.QUESTION_KINDS if k in report["results"]["default"]["scores"]]
    kinds = ["overall", *asked]
    head = ["variant", *(f"{k} R@10" for k in kinds), "overall R@5", "overall All@10"]
    rows = []
    for name, r in report["results"].items():
        s = r["scores"]
        rows.append([name, *(s.get(k, {}).get("R@10") for k in kinds), s["overall"]["R@5"], s["overall"]["All@10"]])
    n = {k: report["results"]["default"]["scores"][k]["n"] for k in asked}
    lines = [
        f"Temporal check: {report['conversations']} generated conversations ({report['turns']:,} turns, seed "
        f"{report['seed']}), {report['questions']} questions about when ("
        + ", ".join(f"{k} {v}" for k, v in n.items())
        + f"); hybrid through the services, limit 20, turns published {report.get('publish', 'prefixed')}",
        "",
        markdown_table(head, rows),
        "",
        "Examples:",
        "",
    ]
    lines += [f"- {ex['kind']}: {ex['question']} (evidence {', '.join(ex['evidence'])})" for ex in report["examples"]]
    return "\n".join(lines)
