"""Pattern discovery: validate the LLM's proposed patterns into create/refresh plans.

Reply schema: `{"patterns": [{"title": ..., "content": ..., "evidence": [memory ids]}]}`.
Per proposal, in the LLM's order: title and content must be non-empty (else
`droppedInvalid`); evidence is intersected with the real ids of the scanned pool (ids
removed: `evidenceFiltered`), a pattern left without evidence is dropped
(`droppedNoEvidence`); a repeated title in the same reply is dropped (`duplicateTitle`);
then at most `max_per_run` patterns are kept (`capSkipped`).

A kept pattern whose title matches an existing pattern (case- and space-insensitive) is
refreshed in place, never appended to. Its text changes only when the proposal brings
evidence the pattern did not have (then the old text goes to content_history); otherwise
it is an unchanged refresh (`unchanged`). So replaying the same evidence any number of
times leaves the text as it is, whatever wording the LLM picks.
"""

from collections.abc import Collection, Iterable, Sequence
from typing import Final

import msgspec

from services.sleep.receipt import PatternResult
from shared.llm.reply import convert_items, reply_items

PATTERN_KEY_PREFIX: Final = "pattern:"


class PatternProposal(msgspec.Struct, frozen=True, kw_only=True):
    """One pattern as the LLM proposed it."""

    title: str
    content: str
    evidence: list[str] = msgspec.field(default_factory=list)


class PatternReply(msgspec.Struct, frozen=True, kw_only=True):
    proposals: tuple[PatternProposal, ...]
    malformed: int = 0
    problems: tuple[str, ...] = ()


class ExistingPattern(msgspec.Struct, frozen=True, kw_only=True):
    """A stored pattern memory of the owner (evidence from its metadata)."""

    memory_id: str
    title: str
    content: str
    evidence: tuple[str, ...] = ()


class PatternCreate(msgspec.Struct, frozen=True, kw_only=True):
    """A new `pattern` memory with upsert key `key`."""

    key: str
    title: str
    content: str
    evidence: tuple[str, ...]


class PatternRefresh(msgspec.Struct, frozen=True, kw_only=True):
    """Refresh in place; `previous_content` goes to content_history when the text changed."""

    memory_id: str
    key: str
    title: str
    content: str
    evidence: tuple[str, ...]
    previous_content: str | None = None

    @property
    def text_changed(self) -> bool:
        return self.previous_content is not None


class PatternPlan(msgspec.Struct, frozen=True, kw_only=True, rename="camel"):
    creates: tuple[PatternCreate, ...]
    refreshes: tuple[PatternRefresh, ...]
    #: proposed, dropped_*, evidence_filtered, duplicate_title, cap_skipped, unchanged
    counts: PatternResult


def title_key(title: str) -> str:
    """Case- and whitespace-insensitive identity of a title."""
    return " ".join(title.casefold().split())


def pattern_key(title: str) -> str:
    """The memory upsert key of a pattern: `pattern:<title key>`."""
    return PATTERN_KEY_PREFIX + title_key(title)


def parse_pattern_reply(reply: object) -> PatternReply:
    """Read the decoded LLM reply; malformed items are counted, a reply without a pattern list
    raises ``LlmBadReply``."""
    proposals, problems = convert_items(reply_items(reply, "patterns"), PatternProposal)
    return PatternReply(proposals=tuple(proposals), malformed=len(problems), problems=tuple(problems))


def _refresh(existing: ExistingPattern, content: str, evidence: set[str]) -> PatternRefresh:
    known = set(existing.evidence)
    merged = tuple(sorted(known | evidence))
    changed = bool(evidence - known) and content != existing.content
    return PatternRefresh(
        memory_id=existing.memory_id,
        key=pattern_key(existing.title),
        title=existing.title,
        content=content if changed else existing.content,
        evidence=merged,
        previous_content=existing.content if changed else None,
    )


def validate_patterns(
    proposals: Iterable[PatternProposal],
    pool_ids: Collection[str],
    max_per_run: int,
    existing: Sequence[ExistingPattern],
) -> PatternPlan:
    """Apply the rules of the module docstring."""
    pool = pool_ids if isinstance(pool_ids, set | frozenset) else set(pool_ids)
    by_title: dict[str, ExistingPattern] = {}
    for pattern in sorted(existing, key=lambda p: p.memory_id):
        by_title.setdefault(title_key(pattern.title), pattern)
    kept: list[tuple[str, str, set[str]]] = []
    seen_titles: set[str] = set()
    proposed = dropped_invalid = dropped_no_evidence = filtered = duplicates = capped = 0
    for proposal in proposals:
        proposed += 1
        title = " ".join(proposal.title.split())
        content = proposal.content.strip()
        if not title or not content:
            dropped_invalid += 1
            continue
        evidence = {e for e in proposal.evidence if e in pool}
        filtered += len(set(proposal.evidence) - evidence)
        if not evidence:
            dropped_no_evidence += 1
            continue
        if title_key(title) in seen_titles:
            duplicates += 1
            continue
        seen_titles.add(title_key(title))
        if len(kept) >= max_per_run:
            capped += 1
            continue
        kept.append((title, content, evidence))
    creates: list[PatternCreate] = []
    refreshes: list[PatternRefresh] = []
    for title, content, evidence in kept:
        match = by_title.get(title_key(title))
        if match is None:
            creates.append(
                PatternCreate(
                    key=pattern_key(title),
                    title=title,
                    content=content,
                    evidence=tuple(sorted(evidence)),
                )
            )
        else:
            refreshes.append(_refresh(match, content, evidence))
    return PatternPlan(
        creates=tuple(creates),
        refreshes=tuple(refreshes),
        counts=PatternResult(
            proposed=proposed,
            dropped_invalid=dropped_invalid,
            dropped_no_evidence=dropped_no_evidence,
            evidence_filtered=filtered,
            duplicate_title=duplicates,
            cap_skipped=capped,
            unchanged=sum(1 for r in refreshes if not r.text_changed),
        ),
    )
