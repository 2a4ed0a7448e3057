"""Prompts of the LLM phases that read a pool of memories: pattern discovery and affective attribution.

Pure text builders matching the reply schemas the parsers accept
(`pattern_logic.parse_pattern_reply`, `affective_logic.parse_affective_reply`); the
conflict prompt lives beside its parser in `decision_logic`. Memory text is clipped and
put on one line as a JSON string (``shared.quoting.quote``: control tokens neutralised), so a
memory cannot fake the structure of the prompt.
"""

from collections.abc import Sequence

import msgspec

from shared.quoting import quote


class PoolMemory(msgspec.Struct, frozen=True, kw_only=True):
    """One memory shown to the LLM."""

    id: str
    content: str
    session_id: str | None = None


class PromptEntity(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    name: str
    kind: str = ""


def one_line(text: str, limit: int) -> str:
    """Whitespace collapsed, cut to `limit` characters (with an ellipsis when cut)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: max(0, limit - 1)] + "…"


def _memory_lines(pool: Sequence[PoolMemory], limit: int, with_session: bool) -> list[str]:
    lines = []
    for memory in pool:
        session = f" (session {memory.session_id or '-'})" if with_session else ""
        lines.append(f"- [{memory.id}]{session} {quote(one_line(memory.content, limit))}")
    return lines


def pattern_prompt(
    pool: Sequence[PoolMemory], existing_titles: Sequence[str], max_patterns: int, chars: int = 300
) -> str:
    """Ask for recurring patterns, each with the ids of the memories that show it."""
    lines = [
        "Below are recent memories of one user, each with its id in brackets.",
        f"Find at most {max_patterns} recurring patterns (habits, preferences, routines) that several memories show.",
        "Reuse the exact title of a known pattern when you describe the same pattern again.",
        'Reply with JSON only: {"patterns": [{"title": "<short title>", "content": "<one sentence>",'
        ' "evidence": ["<memory id>", ...]}]}. Evidence must be ids from the list.',
    ]
    if existing_titles:
        lines.append("Known patterns: " + "; ".join(one_line(t, 120) for t in existing_titles))
    lines.append("")
    lines.extend(_memory_lines(pool, chars, with_session=False))
    return "\n".join(lines)


def affective_prompt(pool: Sequence[PoolMemory], entities: Sequence[PromptEntity], chars: int = 300) -> str:
    """Ask who feels what about what, as occasions (one situation) or traits (lasting)."""
    lines = [
        "Below are known entities and recent memories of one user (ids in brackets, with their session).",
        "Find emotions a person shows about a target (another entity): who, about what, which emotion.",
        'Use "occasion" for a feeling in one situation and "trait" for a lasting attitude seen repeatedly.',
        'Reply with JSON only: {"candidates": [{"person": "<entity name>", "target": "<entity name>",'
        ' "emotion": "<one word>", "kind": "occasion|trait", "evidence": ["<memory id>", ...], "why": "<short>"}]}.',
        "Person and target must be entity names from the list; evidence must be memory ids from the list.",
        "",
        "Entities:",
        *(f"- {one_line(e.name, 80)} ({e.kind or 'thing'})" for e in entities),
        "",
        "Memories:",
        *_memory_lines(pool, chars, with_session=True),
    ]
    return "\n".join(lines)
