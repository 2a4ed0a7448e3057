"""The errors of the LLM client, placed in the one error tree of ``memoryd.errors``.

    MemorydError
    ├── LlmBadReply          502  the endpoint answered, but not with what was asked for
    ├── BudgetExceeded       429  (memoryd.errors) the owner's daily token budget is spent
    └── DependencyDown       503
        ├── LlmUnavailable        network error, timeout, 5xx, 429 or another HTTP error
        └── LlmNotConfigured      no ``MEMORYD_LLM_BASE_URL`` / ``MEMORYD_LLM_MODEL``

Callers that treat the LLM as optional (extraction, sleep phases) catch ``MemorydError``
subclasses from here and carry on without the LLM.
"""

from __future__ import annotations

from memoryd.errors import DependencyDown, MemorydError


class LlmBadReply(MemorydError):
    """The reply could not be decoded into the requested type (or had no content)."""

    code = 502
    err_code = "llm_bad_reply"


class LlmUnavailable(DependencyDown):
    """The endpoint could not be reached or refused the call (after the retry)."""

    err_code = "llm_unavailable"

    def __init__(self, description: str, *, status: int | None = None, timed_out: bool = False) -> None:
        super().__init__(description)
        self.status = status
        self.timed_out = timed_out


class LlmNotConfigured(DependencyDown):
    """No LLM endpoint is configured: a normal state, callers skip their LLM work."""

    err_code = "llm_not_configured"
