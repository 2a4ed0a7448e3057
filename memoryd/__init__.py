"""memoryd: long-term memory for LLM applications.

``from memoryd import MemoryClient`` is what an application on the NATS network needs (see
``memoryd.client``); ``Memory`` and ``AsyncMemory`` talk to the gateway over HTTP instead (see
``memoryd.http``, imported on first use). The wire contract (``memoryd.schemas``,
``memoryd.subjects``) and every typed error (``memoryd.errors``) are here too. This package
imports nothing of the server: an install without the ``server`` extra is a complete client.
"""

from typing import TYPE_CHECKING, Any

from memoryd.client import MemoryClient
from memoryd.errors import (
    BudgetExceeded,
    ConfigError,
    Conflict,
    DependencyDown,
    Forbidden,
    MemorydError,
    NotFound,
    QuotaExceeded,
    RateLimited,
    RemoteError,
    SecretUnavailable,
    TooLarge,
    Unauthorized,
    ValidationFailed,
)

if TYPE_CHECKING:
    from memoryd.http import AsyncMemory, Memory


def __getattr__(name: str) -> Any:
    """``Memory`` and ``AsyncMemory`` load httpx only when an application asks for them."""
    if name in ("Memory", "AsyncMemory"):
        from memoryd import http

        return getattr(http, name)
    raise AttributeError(f"module 'memoryd' has no attribute {name!r}")


__all__ = [
    "AsyncMemory",
    "BudgetExceeded",
    "ConfigError",
    "Conflict",
    "DependencyDown",
    "Forbidden",
    "Memory",
    "MemoryClient",
    "MemorydError",
    "NotFound",
    "QuotaExceeded",
    "RateLimited",
    "RemoteError",
    "SecretUnavailable",
    "TooLarge",
    "Unauthorized",
    "ValidationFailed",
]
