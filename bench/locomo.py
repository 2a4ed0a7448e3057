"""LoCoMo data, turn formatting and recall metrics (pure: no I/O beyond reading the file).

The protocol is the one of ``../shared/data/locomo/README.md`` (beside the checkout): every turn is one memory,
written as ``"[<session date>] <speaker>: <text>"`` (plus ``" [shares a photo: <caption>]"``);
every category 1-4 question is a query within its conversation's owner; ``R@k`` is the share
of a question's evidence turns among the top k results (averaged over questions) and
``All@k`` the share of questions whose evidence is entirely in the top k.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

CATEGORIES: dict[int, str] = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
KS: tuple[int, ...] = (5, 10, 20)
ALL_K = 10
DATE_FORMAT = "%I:%M %p on %d %B, %Y"  # "1:56 pm on 8 May, 2023"
_SESSION = re.compile(r"^session_(\d+)$")
_DIA = re.compile(r"^D(\d+):(\d+)$")


class LocomoFormatError(ValueError):
    """The file is not in the LoCoMo format (names the sample and field)."""


@dataclass(frozen=True)
class Turn:
    dia_id: str
    session: int  # LoCoMo session number (1-based)
    index: int  # position within its session (0-based)
    speaker: str
    text: str
    date_text: str
    occurred_at: datetime  # the session date plus ``index`` seconds, so turns keep their order
    caption: str | None = None

    @property
    def content(self) -> str:
        return format_turn(self.date_text, self.speaker, self.text, self.caption)

    @property
    def plain(self) -> str:
        """The turn as an application sends it: its text and the shared photo, no date or speaker."""
        return plain_turn(self.text, self.caption)


@dataclass(frozen=True)
class QA:
    question: str
    category: int
    evidence: tuple[str, ...]  # cleaned dia_ids that exist in the conversation
    raw_evidence: tuple[str, ...] = ()


@dataclass(frozen=True)
class Conversation:
    sample_id: str
    speakers: tuple[str, str]
    turns: tuple[Turn, ...]
    qas: tuple[QA, ...]
    dropped_qas: int = 0  # category 1-4 questions left without any valid evidence id

    @property
    def dia_ids(self) -> set[str]:
        return {t.dia_id for t in self.turns}


def parse_date(text: str) -> datetime:
    """``"1:56 pm on 8 May, 2023"`` -> an aware UTC datetime."""
    try:
        return datetime.strptime(text.strip(), DATE_FORMAT).replace(tzinfo=UTC)
    except ValueError as exc:
        raise LocomoFormatError(f"session date {text!r} is not like '1:56 pm on 8 May, 2023'") from exc


def format_turn(date_text: str, speaker: str, text: str, caption: str | None = None) -> str:
    """The memory text of one turn: ``"[<date>] <speaker>: <text>"`` plus the shared photo."""
    return f"[{date_text}] {speaker}: {plain_turn(text, caption)}"


def plain_turn(text: str, caption: str | None = None) -> str:
    """``text`` plus ``" [shares a photo: <caption>]"`` when the turn shared one."""
    out = text.strip()
    if caption and caption.strip():
        out += f" [shares a photo: {caption.strip()}]"
    return out


def clean_evidence(raw: Iterable[str], known: set[str]) -> tuple[str, ...]:
    """Split on ``;``, strip stray colons and leading zeros, drop ids not in ``known``.

    ``"D8:6; D9:17"`` -> ``("D8:6", "D9:17")``; ``"D:11:26"`` -> ``("D11:26",)``; ``"D"`` -> ().
    Order is kept, duplicates are dropped.
    """
    out: list[str] = []
    for item in raw:
        for part in str(item).split(";"):
            digits = [p for p in re.split(r"[^0-9]+", part.strip().removeprefix("D")) if p]
            if not part.strip().startswith("D") or len(digits) != 2:
                continue
            dia = f"D{int(digits[0])}:{int(digits[1])}"
            if dia in known and dia not in out:
                out.append(dia)
    return tuple(out)


def _session_numbers(conv: dict[str, Any]) -> list[int]:
    return sorted(int(m.group(1)) for k in conv if (m := _SESSION.match(k)))


def parse_sample(sample: dict[str, Any]) -> Conversation:
    """One LoCoMo sample -> a ``Conversation`` (turns in session order, category 1-4 QAs)."""
    sid = str(sample.get("sample_id", "?"))
    try:
        conv = sample["conversation"]
        speakers = (str(conv["speaker_a"]), str(conv["speaker_b"]))
        turns: list[Turn] = []
        for n in _session_numbers(conv):
            date_text = str(conv[f"session_{n}_date_time"])
            start = parse_date(date_text)
            for i, t in enumerate(conv[f"session_{n}"]):
                turns.append(
                    Turn(
                        dia_id=str(t["dia_id"]),
                        session=n,
                        index=i,
                        speaker=str(t["speaker"]),
                        text=str(t["text"]),
                        date_text=date_text,
                        occurred_at=start + timedelta(seconds=i),
                        caption=t.get("blip_caption") or None,
                    )
                )
        known = {t.dia_id for t in turns}
        qas: list[QA] = []
        dropped = 0
        for q in sample["qa"]:
            category = int(q["category"])
            if category not in CATEGORIES:
                continue
            raw = tuple(str(e) for e in q.get("evidence") or ())
            evidence = clean_evidence(raw, known)
            if not evidence:
                dropped += 1
                continue
            qas.append(QA(question=str(q["question"]), category=category, evidence=evidence, raw_evidence=raw))
    except (KeyError, TypeError) as exc:
        raise LocomoFormatError(f"sample {sid}: missing or bad field {exc}") from exc
    return Conversation(sample_id=sid, speakers=speakers, turns=tuple(turns), qas=tuple(qas), dropped_qas=dropped)


def load(path: Path) -> list[Conversation]:
    """Read a LoCoMo JSON file (a list of samples)."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, list):
        raise LocomoFormatError(f"{path}: expected a JSON list of samples")
    return [parse_sample(s) for s in data]


# --- metrics -------------------------------------------------------------------------------


@dataclass(frozen=True)
class QAOutcome:
    """What one question got back: the dia_id of each result in rank order (None: not a turn)."""

    category: int
    evidence: tuple[str, ...]
    ranked: tuple[str | None, ...]
    latency_ms: float = 0.0
    tokens_top10: int = 0


def recall_at(ranked: Sequence[str | None], evidence: Sequence[str], k: int) -> float:
    """Share of ``evidence`` found among the first ``k`` results."""
    if not evidence:
        raise ValueError("a question without evidence cannot be scored")
    top = set(ranked[:k])
    return sum(1 for e in set(evidence) if e in top) / len(set(evidence))


def all_at(ranked: Sequence[str | None], evidence: Sequence[str], k: int) -> bool:
    """True when every evidence turn is among the first ``k`` results."""
    return recall_at(ranked, evidence, k) == 1.0


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (``q`` in 0..100); NaN for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


@dataclass
class Scores:
    """R@k / All@k and costs over a group of questions."""

    n: int = 0
    recall: dict[int, float] = field(default_factory=dict)
    all_at: float = 0.0
    latency_p50_ms: float = math.nan
    latency_p95_ms: float = math.nan
    tokens_top10: float = math.nan

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"n": self.n}
        out.update({f"R@{k}": round(v, 4) for k, v in self.recall.items()})
        out[f"All@{ALL_K}"] = round(self.all_at, 4)
        out["latency_p50_ms"] = round(self.latency_p50_ms, 2)
        out["latency_p95_ms"] = round(self.latency_p95_ms, 2)
        out["tokens_top10"] = round(self.tokens_top10, 1)
        return out


def score(outcomes: Sequence[QAOutcome], ks: Sequence[int] = KS) -> Scores:
    if not outcomes:
        return Scores()
    n = len(outcomes)
    latencies = [o.latency_ms for o in outcomes]
    return Scores(
        n=n,
        recall={k: math.fsum(recall_at(o.ranked, o.evidence, k) for o in outcomes) / n for k in ks},
        all_at=sum(all_at(o.ranked, o.evidence, ALL_K) for o in outcomes) / n,
        latency_p50_ms=percentile(latencies, 50),
        latency_p95_ms=percentile(latencies, 95),
        tokens_top10=math.fsum(o.tokens_top10 for o in outcomes) / n,
    )


def score_by_category(outcomes: Sequence[QAOutcome], ks: Sequence[int] = KS) -> dict[str, Scores]:
    """``{"overall": ..., "1 multi-hop": ..., ...}`` (categories with questions only)."""
    out = {"overall": score(outcomes, ks)}
    for cat, name in CATEGORIES.items():
        group = [o for o in outcomes if o.category == cat]
        if group:
            out[f"{cat} {name}"] = score(group, ks)
    return out
