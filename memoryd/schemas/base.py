"""The base of every wire message, the shared field types and limits.

Each message is a frozen, keyword-only, tagged msgspec Struct: the tag (``type`` field)
is ``mem.v1.<snake_name>``. New fields get defaults; a breaking change is a new
``...V2`` on ``mem.v2.*``.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Literal

import msgspec

_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def snake_name(class_name: str) -> str:
    """``ChatEvent`` -> ``chat_event``; ``RpcError`` -> ``rpc_error``."""
    return _CAMEL_BOUNDARY.sub("_", class_name).lower()


def wire_tag(class_name: str) -> str:
    """The ``type`` tag of a wire message: ``mem.v1.<snake_name>``."""
    return f"mem.v1.{snake_name(class_name)}"


class Wire(
    msgspec.Struct,
    frozen=True,
    kw_only=True,
    omit_defaults=True,
    forbid_unknown_fields=False,
    tag_field="type",
    tag=wire_tag,
):
    """Base class of every message on the wire."""


# --- limits -----------------------------------------------------------------------------
MAX_OWNER_LEN = 128
MAX_CONTENT_CHARS = 65_536  # one memory's content
MAX_MESSAGE_CHARS = 1_048_576  # one chat message's content
MAX_MESSAGES_PER_EVENT = 1_000
MAX_PAYLOAD_BYTES = 4 * 1_048_576  # any single request or event on the wire
MAX_KEY_LEN = 200
MAX_SESSION_LEN = 256
MAX_AGENT_LEN = 256
MAX_QUERY_CHARS = 100_000
MAX_OFFSET = 1_000_000  # the deepest list position (offset, or page x limit) a listing reaches

# --- field types ------------------------------------------------------------------------
# Patterns end in ``$(?!\n)``: msgspec matches with ``re.search``, where a bare ``$`` also
# matches before a trailing newline (``\Z`` would say the same, but is no ECMA-262 regex for
# the JSON Schema and OpenAPI readers).
#: The owner of a memory: the user or tenant whose memory it is (a free name).
#: Subject-safe: used as a token in ``mem.v1.activity.<owner>``.
Owner = Annotated[
    str,
    msgspec.Meta(
        min_length=1,
        max_length=MAX_OWNER_LEN,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9_\-:@]*$(?!\n)",
        description="the user or tenant whose memory this is; letters, digits, _ - : @",
    ),
]
#: Text with no control character (C0, DEL, C1): an id stored as text and matched exactly, where
#: PostgreSQL cannot hold NUL and a newline or an escape would forge lines of logs and exports.
NO_CONTROL_PATTERN = r"^[^\x00-\x1f\x7f-\x9f]+$(?!\n)"
#: The conversation a memory came from (an application's own name for it).
SessionId = Annotated[
    str,
    msgspec.Meta(
        min_length=1,
        max_length=MAX_SESSION_LEN,
        pattern=NO_CONTROL_PATTERN,
        description=f"the conversation; 1..{MAX_SESSION_LEN} characters, no control characters",
    ),
]
#: The agent a memory belongs to, beside its owner and session (mem0's ``agent_id``); checked as a session id.
AgentId = Annotated[
    str,
    msgspec.Meta(
        min_length=1,
        max_length=MAX_AGENT_LEN,
        pattern=NO_CONTROL_PATTERN,
        description=f"the agent; 1..{MAX_AGENT_LEN} characters, no control characters",
    ),
]
#: Text that must contain at least one non-whitespace character.
NonBlank = Annotated[str, msgspec.Meta(pattern=r"\S")]
Content = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_CONTENT_CHARS, pattern=r"\S")]
MemoryKey = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_KEY_LEN, pattern=r"\S")]
MemoryId = Annotated[
    str,
    msgspec.Meta(pattern=r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$(?!\n)"),
]
Limit = Annotated[int, msgspec.Meta(ge=1, le=1000)]
Offset = Annotated[int, msgspec.Meta(ge=0, le=MAX_OFFSET)]
Page = Annotated[int, msgspec.Meta(ge=1, le=MAX_OFFSET)]

MemoryType = Literal["factual", "episodic", "procedural", "semantic", "pattern", "summary"]
MemorySource = Literal["chat_turn", "rule", "llm", "api", "sleep", "import"]
MemoryState = Literal["active", "summary", "archived"]
MemoryScope = Literal["apiKey", "session", "global"]
Role = Literal["system", "user", "assistant", "tool", "developer", "function"]
Strategy = Literal["exact", "recent", "semantic", "hybrid"]

MEMORY_TYPES: tuple[str, ...] = MemoryType.__args__  # type: ignore[attr-defined]
MEMORY_STATES: tuple[str, ...] = MemoryState.__args__  # type: ignore[attr-defined]

__all__ = [
    "MAX_CONTENT_CHARS",
    "MAX_PAYLOAD_BYTES",
    "Content",
    "MemoryId",
    "Owner",
    "Wire",
    "datetime",
]
