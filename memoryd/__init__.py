"""memoryd: long-term memory for LLM applications.

``from memoryd import MemoryClient`` is what an application needs (see ``memoryd.client``);
the typed errors it raises are here too. Importing this package loads no server dependency.
"""

from memoryd.client import MemoryClient
from shared.errors import (
    BudgetExceeded,
    ConfigError,
    Conflict,
    DependencyDown,
    Forbidden,
    MemorydError,
    NotFound,
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
    "TooLarge",
    "ValidationFailed",
]
