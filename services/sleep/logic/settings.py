"""Sleep settings: one frozen Struct holding every knob of the sleep worker with its default.

Attributes are snake_case in Python and camelCase on the wire and in the `settings` table
(`sleepIdleMinutes`, ...). Ranges are msgspec `Meta` constraints, so decoding a bad value
raises `msgspec.ValidationError` whose path names the field (``at `$.sleepIdleMinutes```).
Global and per-owner rows are layered by `resolve_settings`; keys that are not sleep
settings (the table holds other services' settings too) are ignored.
"""

from collections.abc import Mapping
from typing import Any, Final

import msgspec

from shared.settings.sleep import STRICTNESS_THRESHOLDS, SleepSettings

_DECODER: Final = msgspec.json.Decoder(SleepSettings)


def decode_settings(raw: bytes | str) -> SleepSettings:
    """Decode one JSON object of settings; raises msgspec.ValidationError naming the field."""
    return _DECODER.decode(raw)


def resolve_settings(*layers: Mapping[str, Any]) -> SleepSettings:
    """Layer settings rows (defaults < global < owner): later layers win key by key.

    A key whose value is None in a later layer still overrides (only `sleepLlmModel`
    accepts None). Raises msgspec.ValidationError naming the offending field.
    """
    merged: dict[str, Any] = {}
    for layer in layers:
        merged.update(layer)
    return msgspec.convert(merged, SleepSettings)


def strictness_threshold(name: str) -> float:
    """Similarity threshold of a strictness name: gentle 0.92, normal 0.85, aggressive 0.75."""
    try:
        return STRICTNESS_THRESHOLDS[name]
    except KeyError:
        allowed = ", ".join(STRICTNESS_THRESHOLDS)
        raise ValueError(f"unknown sleepConflictStrictness {name!r}; expected one of {allowed}") from None
