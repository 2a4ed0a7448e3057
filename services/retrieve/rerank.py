"""Optional LLM listwise rerank of the fused candidates (runtime setting ``rerank``).

With ``rerank=true`` for an owner, the top ``rerankDepth`` fused candidates that have rows
are sent to the configured LLM (``shared.llm.LlmClient``, operation ``rerank``, counted in
the owner's token budget) and come back in its order (``rerank_logic``). Never an error:
without an LLM, on a timeout (``MEMORYD_RETRIEVE_RERANK_TIMEOUT_S``), an unreachable
endpoint, a spent budget or an unusable reply, the fused order stands and the response's
``fallbacks`` say why (``rerank->fused:<code>``), counted like the tier fallbacks.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Annotated

import msgspec

from memoryd.errors import BudgetExceeded, DependencyDown, MemorydError
from services.retrieve.logic import rerank as rerank_logic
from services.retrieve.logic.fusion import Fused
from services.retrieve.logic.plan import MemoryRow
from shared.llm import LlmClient
from shared.observability.logging import get_logger
from shared.observability.metrics import RETRIEVE_FALLBACKS

log = get_logger(__name__)


class RerankConfig(msgspec.Struct, frozen=True, kw_only=True):
    """``MEMORYD_RETRIEVE_RERANK_<FIELD>``."""

    #: seconds the LLM rerank may take before the fused order stands
    timeout_s: Annotated[float, msgspec.Meta(gt=0)] = 5.0
    #: characters of each candidate shown to the LLM
    max_chars: Annotated[int, msgspec.Meta(ge=50)] = 600
    #: reply token limit of one rerank call
    max_tokens: Annotated[int, msgspec.Meta(ge=16)] = 512


class Reranker:
    def __init__(self, llm: LlmClient | None, config: RerankConfig, fallbacks: Counter[str]) -> None:
        self.llm = llm if llm is not None and llm.configured else None
        self.config = config
        self.fallbacks = fallbacks  # the engine's counter, shown by engine.status

    async def rerank(
        self, owner: str, query: str, ranked: Sequence[Fused], rows: Mapping[str, MemoryRow], depth: int
    ) -> tuple[list[Fused], list[str]]:
        """The candidates in the LLM's order (top ``depth`` with rows) and the fallback labels."""
        present = [f for f in ranked if f.memory_id in rows]
        head, tail = present[:depth], present[depth:]
        if len(head) < 2 or not query:
            return list(ranked), []
        if self.llm is None:
            return list(ranked), [self._fell_back("rerank_no_llm", "no LLM configured")]
        messages = rerank_logic.prompt(
            query, [rows[f.memory_id].content for f in head], max_chars=self.config.max_chars
        )
        try:
            reply = await asyncio.wait_for(
                self.llm.complete_json(
                    owner=owner,
                    operation="rerank",
                    messages=messages,
                    response_type=rerank_logic.RerankReply,
                    max_tokens=self.config.max_tokens,
                ),
                self.config.timeout_s,
            )
        except TimeoutError:
            return list(ranked), [self._fell_back("rerank_timeout", f"no answer within {self.config.timeout_s} s")]
        except MemorydError as exc:
            return list(ranked), [self._fell_back(_code(exc), exc.description)]
        order = rerank_logic.permutation(len(head), reply.value.order)
        if order is None:
            return list(ranked), [self._fell_back("rerank_bad_reply", f"no valid candidate number in {reply.raw!r}")]
        return rerank_logic.reorder(head, order) + tail, []

    def _fell_back(self, code: str, why: str) -> str:
        log.info("retrieve.rerank_skipped", code=code, reason=why)
        RETRIEVE_FALLBACKS.labels(code).inc()
        self.fallbacks[code] += 1
        return rerank_logic.label(code)


def _code(exc: MemorydError) -> str:
    if isinstance(exc, BudgetExceeded):
        return "rerank_budget"
    if isinstance(exc, DependencyDown):
        return "rerank_unavailable"
    return "rerank_bad_reply"
