"""Memory injection into an OpenAI-style chat request: pure functions on plain dicts.

``format_memory_context`` renders ranked memories as one block of quoted data (see
docs/security.md "Injection format"); ``inject`` puts it
in a copy of the request's messages, as a leading system message or, for providers that
reject the system role, inside the first user message; ``default_query`` picks the text a
retrieval should search for when the caller gives no explicit query.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from memoryd.schemas.events import TEXT_PART_TYPES
from shared.quoting import DATA_NOTICE, data_block

Placement = Literal["system", "user", "none"]

DEFAULT_NO_SYSTEM_PROVIDERS: frozenset[str] = frozenset(
    {"o1", "o1-mini", "o1-preview", "glm", "glmt", "glm-cn", "zai", "qianfan"}
)
"""Providers (and o1-family models) that reject the ``system`` role."""

CONTEXT_HEADER = "Memory context:"
MEMORY_BLOCK = "memory-data"
USER_BLOCK_SEPARATOR = "\n\n---\n\n"
"""Between the memory block and the user's own text when both share one user message."""

# Every ASCII brace becomes its fullwidth twin (U+FF5B, U+FF5D): no brace-delimited template
# language (Jinja2/Liquid {{ }} {% %} {# #}, Handlebars/Mustache, Python str.format, JS ${})
# treats those as syntax, and a model reads them as braces. Single braces are replaced too,
# because str.format interprets (and crashes on) a lone "{".
_BRACES = str.maketrans({"{": "\uff5b", "}": "\uff5d"})
_SNAPSHOT_SUFFIX = re.compile(r"-\d{4}-\d{2}-\d{2}$")


def escape_template(text: str) -> str:
    """Make template syntax in ``text`` inert by replacing ``{``/``}`` with fullwidth braces.

    One-way (display only) and idempotent. Not covered: ``$name`` (``string.Template``) and
    ``<% %>`` engines, which the callers we know do not run on message content.
    """
    return text.translate(_BRACES)


def format_memory_context(memories: Sequence[str]) -> str:
    """The memory block: ``Memory context:`` and a notice, then the memories quoted as data
    (``shared.quoting``: one JSON string per line between ``<memory-data NONCE>`` markers the
    text cannot close, chat-template control tokens neutralised), each template-escaped.

    Blank memories are skipped; nothing left gives "" (``inject`` is then a no-op).
    """
    items = [escape_template(m).strip() for m in memories if m.strip()]
    if not items:
        return ""
    return f"{CONTEXT_HEADER} {DATA_NOTICE.format(name=MEMORY_BLOCK)}\n{data_block(MEMORY_BLOCK, items)}"


def rejects_system_role(
    provider: str | None,
    model: str | None = None,
    no_system_providers: frozenset[str] = DEFAULT_NO_SYSTEM_PROVIDERS,
) -> bool:
    """True when the provider, or the model, is in ``no_system_providers`` (case-insensitive).

    The model is compared after dropping a ``vendor/`` prefix and a ``-YYYY-MM-DD`` snapshot
    suffix, so ``openai/o1-mini-2024-09-12`` matches ``o1-mini`` whatever the provider says.
    Unknown or missing provider and model: False (they get the system message).
    """
    names = {name.strip().lower() for name in no_system_providers}
    if provider is not None and provider.strip().lower() in names:
        return True
    if model is None:
        return False
    bare = model.strip().lower().rsplit("/", 1)[-1]
    return _SNAPSHOT_SUFFIX.sub("", bare) in names


def placement(
    context: str,
    provider: str | None,
    no_system_providers: frozenset[str] = DEFAULT_NO_SYSTEM_PROVIDERS,
    *,
    model: str | None = None,
) -> Placement:
    """Where ``inject`` puts ``context``: a system message, the first user message, or nowhere."""
    if not context.strip():
        return "none"
    return "user" if rejects_system_role(provider, model, no_system_providers) else "system"


def _prepend_to_content(content: Any, context: str) -> Any | None:
    """The user content with ``context`` in front, or None for a shape we do not know."""
    if content is None or content == "":
        return context
    if isinstance(content, str):
        return context + USER_BLOCK_SEPARATOR + content
    if isinstance(content, list):
        return [{"type": "text", "text": context}, *content]
    return None


def inject(
    messages: Sequence[dict[str, Any]],
    context: str,
    provider: str | None,
    no_system_providers: frozenset[str] = DEFAULT_NO_SYSTEM_PROVIDERS,
    *,
    model: str | None = None,
) -> list[dict[str, Any]]:
    """A new message list with ``context`` injected; the input is never mutated.

    - Normal and unknown providers: ``{"role": "system", "content": context}`` at index 0,
      before the request's own system messages.
    - Providers/models that reject the system role (see ``rejects_system_role``): the block
      is prepended to the first user message (string content: block, separator, text; list
      content: a new leading text part), which keeps user/assistant alternation intact. With
      no user message (or one whose content shape is unknown) a new user message goes just
      before it, or at index 0.
    - Blank ``context``: a copy of ``messages``. ``context`` is escaped again (idempotent).
    Unchanged messages are the same dict objects as in the input; a changed one is a copy.
    """
    out = list(messages)
    where = placement(context, provider, no_system_providers, model=model)
    context = escape_template(context)  # idempotent: safe on an already formatted block
    if where == "none":
        return out
    if where == "system":
        return [{"role": "system", "content": context}, *out]
    at = 0
    for index, message in enumerate(out):
        if isinstance(message, Mapping) and message.get("role") == "user":
            merged = _prepend_to_content(message.get("content"), context)
            if merged is not None:
                out[index] = {**message, "content": merged}
                return out
            at = index
            break
    out.insert(at, {"role": "user", "content": context})
    return out


def message_text(content: Any) -> str:
    """Text of a message content: a string, or the text parts of an OpenAI parts list."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    texts: list[str] = []
    for part in content:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, Mapping) and part.get("type") in TEXT_PART_TYPES and isinstance(part.get("text"), str):
            texts.append(part["text"])
    return "\n".join(texts)


def default_query(messages: Sequence[Mapping[str, Any]]) -> str:
    """The text of the last user message ("" if there is none or it has no text parts).

    Returned raw; the caller runs ``normalize_query`` on it like on any query.
    """
    for message in reversed(messages):
        if isinstance(message, Mapping) and message.get("role") == "user":
            return message_text(message.get("content"))
    return ""
