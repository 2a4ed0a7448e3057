"""memoryd: long-term memory for LLM applications.

``from memoryd import MemoryClient`` is what an application needs (see ``memoryd.client``); the
wire contract it speaks (``memoryd.schemas``, ``memoryd.subjects``) and every typed error it raises
(``memoryd.errors``) are here too. This package imports nothing of the server: an install without
the ``server`` extra is a complete client.
"""

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
    ValidationFailed,
)

__all__ = [
    "BudgetExceeded",
    "ConfigError",
    "Conflict",
    "DependencyDown",
    "Forbidden",
    "MemoryClient",
    "MemorydError",
    "NotFound",
    "QuotaExceeded",
    "RateLimited",
    "RemoteError",
    "SecretUnavailable",
    "TooLarge",
    "ValidationFailed",
]
