"""Pure rules of memory compaction and retention cleanup (no I/O).

- A compaction summary without an LLM is one condensed, type-prefixed line per
  candidate, oldest first, within a token budget; what does not fit is counted.
- Retention cut-offs: a memory is past retention when created before
  ``now - retentionDays``; expired when ``expires_at <= now``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from shared.quoting import DATA_NOTICE, data_block
from shared.tokens import estimate_tokens

#: Characters kept of each candidate in a condensed summary line.
LINE_CHARS = 200
#: Token budget of one condensed summary.
SUMMARY_MAX_TOKENS = 1000


@dataclass(frozen=True)
class Candidate:
    id: str
    owner: str
    session_id: str | None
    memory_type: str
    content: str
    agent_id: str | None = None


#: owner, session, agent
GroupKey = tuple[str, str | None, str | None]


def group_key(c: Candidate) -> GroupKey:
    """Compaction makes one summary per owner, session and agent (a summary belongs where its
    members did: an agent's search still finds what its memories said)."""
    return (c.owner, c.session_id, c.agent_id)


def group(candidates: Sequence[Candidate]) -> dict[GroupKey, list[Candidate]]:
    groups: dict[GroupKey, list[Candidate]] = {}
    for c in candidates:
        groups.setdefault(group_key(c), []).append(c)
    return groups


def condensed_line(c: Candidate) -> str:
    text = " ".join(c.content.split())
    if len(text) > LINE_CHARS:
        text = text[: LINE_CHARS - 1].rstrip() + "…"
    return f"- [{c.memory_type}] {text}"


def condensed_summary(candidates: Sequence[Candidate], max_tokens: int = SUMMARY_MAX_TOKENS) -> str:
    """``Summary of N memories:`` then one line per candidate while the budget lasts."""
    header = f"Summary of {len(candidates)} memories:"
    lines = [header]
    used = estimate_tokens(header)
    for i, c in enumerate(candidates):
        line = condensed_line(c)
        cost = estimate_tokens(line)
        if used + cost > max_tokens and i > 0:
            lines.append(f"- (+{len(candidates) - i} more not shown)")
            break
        lines.append(line)
        used += cost
    return "\n".join(lines)


def summary_prompt(candidates: Sequence[Candidate]) -> list[dict[str, str]]:
    """Messages asking an LLM for a faithful summary of the candidates."""
    block = data_block("memories", [condensed_line(c) for c in candidates])
    return [
        {
            "role": "system",
            "content": "Summarize these stored memories of one user into a short factual paragraph. "
            "Keep every preference, decision and habit; do not invent anything. " + DATA_NOTICE.format(name="memories"),
        },
        {"role": "user", "content": block},
    ]


def tokens_of(texts: Sequence[str]) -> int:
    return sum(estimate_tokens(t) for t in texts)


def retention_cutoff(now: datetime, retention_days: int) -> datetime:
    return now - timedelta(days=retention_days)
