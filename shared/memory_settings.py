"""Runtime memory settings: defaults, global values and per-owner overrides.

Stored in the ``settings`` table (owner ``*`` = global). The effective settings of an
owner are ``defaults <- global <- owner``; unknown keys and bad values are rejected
with ``ValidationFailed`` naming the field (camelCase, as on the wire).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

import msgspec

from .errors import ValidationFailed

GLOBAL_OWNER = "*"


class MemorySettings(msgspec.Struct, frozen=True, kw_only=True, rename="camel", forbid_unknown_fields=True):
    """The memory behaviour a user can change at run time (camelCase on the wire)."""

    enabled: bool = True
    strategy: Literal["exact", "recent", "semantic", "hybrid"] = "hybrid"
    max_tokens: Annotated[int, msgspec.Meta(ge=0, le=16_000)] = 2000
    retention_days: Annotated[int, msgspec.Meta(ge=1, le=365)] = 365
    store_turns: bool = True
    extract_assistant: bool = False
    rrf_k: Annotated[int, msgspec.Meta(ge=1, le=1000)] = 60
    rrf_depth: Annotated[int, msgspec.Meta(ge=1, le=1000)] = 20
    fusion: Literal["rrf", "score"] = "rrf"


def setting_names() -> set[str]:
    """The camelCase names of every setting."""
    return set(MemorySettings.__struct_encode_fields__)


def effective(global_values: Mapping[str, Any], owner_values: Mapping[str, Any]) -> MemorySettings:
    """Merge ``defaults <- global <- owner`` and validate the result."""
    return validate({**global_values, **owner_values})


def validate(values: Mapping[str, Any]) -> MemorySettings:
    """Validate a (partial) mapping of camelCase settings into ``MemorySettings``."""
    try:
        return msgspec.convert(dict(values), MemorySettings)
    except msgspec.ValidationError as exc:
        raise ValidationFailed(f"invalid setting: {exc}") from exc


def sources(global_values: Mapping[str, Any], owner_values: Mapping[str, Any]) -> dict[str, str]:
    """Where each effective value comes from: ``owner``, ``global`` or ``default``."""
    return {
        name: "owner" if name in owner_values else "global" if name in global_values else "default"
        for name in sorted(setting_names())
    }
