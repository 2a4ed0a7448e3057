"""Sleep settings as the sleep worker uses them: the Struct and the conflict thresholds.

``SleepSettings`` (one definition, in ``shared.settings.sleep``) is snake_case in Python and
camelCase on the wire and in the `settings` table; global and per-owner rows are layered by
``shared.settings.memory.effective_sleep``, which ignores other services' keys and names the
field of a bad value.
"""

from shared.settings.sleep import STRICTNESS_THRESHOLDS, SleepSettings

__all__ = ["SleepSettings", "strictness_threshold"]


def strictness_threshold(name: str) -> float:
    """Similarity threshold of a strictness name: gentle 0.92, normal 0.85, aggressive 0.75."""
    try:
        return STRICTNESS_THRESHOLDS[name]
    except KeyError:
        allowed = ", ".join(STRICTNESS_THRESHOLDS)
        raise ValueError(f"unknown sleepConflictStrictness {name!r}; expected one of {allowed}") from None
