"""The LLM port: an OpenAI-compatible chat client with budget, audit and typed errors.

Extraction and the sleep worker use it; none configured is a normal state
(``LlmNotConfigured``), and every failure is a typed error the caller can skip on.
"""

from __future__ import annotations

from .budget import tokens_used_today
from .client import LlmClient, LlmResult
from .errors import LlmBadReply, LlmNotConfigured, LlmUnavailable
from .reply import decode_json_content

__all__ = [
    "LlmBadReply",
    "LlmClient",
    "LlmNotConfigured",
    "LlmResult",
    "LlmUnavailable",
    "decode_json_content",
    "tokens_used_today",
]
