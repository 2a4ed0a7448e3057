"""The optional LLM extractor: turns in, validated facts out, and never an exception.

Runs only when ``MEMORYD_LLM_*`` is configured. Whatever goes wrong (endpoint down, a
reply that is not the asked-for JSON, the owner's daily token budget spent, anything
unexpected) is logged, counted in ``memoryd_extract_llm_skipped_total{reason}`` and
returned as a status: the caller stores the rule facts and acks the job anyway.
The call itself is audited and counted by ``shared.llm.LlmClient``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from memoryd.errors import BudgetExceeded
from services.extract.logic.llm_facts import (
    MAX_FACTS,
    MAX_INPUT_BYTES,
    OPERATION,
    LlmFactsReply,
    ValidFact,
    build_messages,
    validate_reply,
)
from shared.llm import LlmBadReply, LlmClient, LlmNotConfigured, LlmUnavailable
from shared.observability.logging import get_logger
from shared.observability.metrics import EXTRACT_LLM_SKIPPED, FACTS

log = get_logger(__name__)

LlmStatus = Literal["ok", "unavailable", "bad_reply", "budget", "error"]


@dataclass(frozen=True)
class LlmExtraction:
    status: LlmStatus
    facts: list[ValidFact] = field(default_factory=list)
    rejected: int = 0
    tokens: int = 0


class LlmExtractor:
    def __init__(
        self,
        client: LlmClient,
        *,
        max_input_bytes: int = MAX_INPUT_BYTES,
        max_tokens: int = 1024,
        max_facts: int = MAX_FACTS,
    ) -> None:
        self._client = client
        self._max_input_bytes = max_input_bytes
        self._max_tokens = max_tokens
        self._max_facts = max_facts

    @property
    def client(self) -> LlmClient:
        return self._client

    async def extract(self, owner: str, turns: list[tuple[str, str]]) -> LlmExtraction:
        """Facts the model finds in ``turns`` (``(role, content)``); never raises ``Exception``."""
        try:
            result = await self._client.complete_json(
                owner=owner,
                operation=OPERATION,
                messages=build_messages(turns, self._max_input_bytes),
                response_type=LlmFactsReply,
                max_tokens=self._max_tokens,
            )
        except BudgetExceeded as exc:
            return _skipped("budget", exc.description)
        except LlmBadReply as exc:
            return _skipped("bad_reply", exc.description)
        except (LlmUnavailable, LlmNotConfigured) as exc:
            return _skipped("unavailable", exc.description)
        except Exception as exc:  # the LLM never blocks an event, whatever broke
            log.error("extract.llm_error", exc_info=exc)
            return _skipped("error", f"{type(exc).__name__}: {exc}")
        facts, problems = validate_reply(result.value, self._max_facts)
        if problems:
            FACTS.labels("llm", "rejected").inc(len(problems))
            log.info("extract.llm_items_rejected", count=len(problems), first=problems[0][:300])
        return LlmExtraction("ok", facts, len(problems), result.total_tokens)


def _skipped(reason: LlmStatus, description: str) -> LlmExtraction:
    EXTRACT_LLM_SKIPPED.labels(reason).inc()
    log.warning("extract.llm_skipped", reason=reason, error=description[:500])
    return LlmExtraction(reason)
