"""``MemorydError`` (500, opaque to callers) roots every error; only these reach a caller as they are.

├── ConfigError              bad configuration at start-up (names the setting)
├── ValidationFailed    400  a request or message failed validation (names the path)
├── Unauthorized        401  no API key, or an unknown or revoked one (HTTP only)
├── Forbidden           403  an owner-bound credential acted for another owner
├── NotFound            404  the addressed memory/run does not exist for this owner
├── Conflict            409  the request contradicts current state
├── TooLarge            413  a payload or field is over its limit
├── BudgetExceeded      429  a per-owner budget (e.g. LLM tokens) is spent
│   ├── RateLimited     429  a per-owner rate (events/s, searches/s) is exceeded; retry_after_s
│   └── QuotaExceeded   429  a per-owner quota (memories, bytes) is full
├── DependencyDown      503  NATS, Postgres, the embedder or the LLM is unreachable
│   └── SecretUnavailable 503  a secret at rest cannot be sealed or opened (no key, the wrong key)
└── RemoteError         500  any other failure: an opaque ``error_id`` finds it in the log
"""

from __future__ import annotations


class MemorydError(Exception):
    """Base of every error memoryd raises on purpose."""

    code: int = 500
    err_code: str = "internal"

    def __init__(self, description: str) -> None:
        super().__init__(description)
        self.description = description


class ConfigError(MemorydError):
    """A setting is missing, malformed or points at something unusable."""

    err_code = "config"

    def __init__(self, setting: str, problem: str) -> None:
        super().__init__(f"{setting}: {problem}")
        self.setting = setting


class ValidationFailed(MemorydError):
    """A request or message failed validation; ``field`` is the path of the offending field
    (``$.messages[0].content``) when one is known."""

    code = 400
    err_code = "validation"

    def __init__(self, description: str, field: str | None = None) -> None:
        super().__init__(description)
        self.field = field

    @classmethod
    def at(cls, field: str, problem: str) -> ValidationFailed:
        """``problem`` with the field at JSON path ``field`` (``$.owner``), worded as msgspec words it."""
        return cls(f"{problem} - at `{field}`", field=field)


class Unauthorized(MemorydError):
    """The gateway did not accept the request's API key (none, unknown or revoked)."""

    code = 401
    err_code = "unauthorized"


class Forbidden(MemorydError):
    code = 403
    err_code = "forbidden"


class NotFound(MemorydError):
    code = 404
    err_code = "not_found"


class Conflict(MemorydError):
    code = 409
    err_code = "conflict"


class TooLarge(MemorydError):
    code = 413
    err_code = "too_large"


class BudgetExceeded(MemorydError):
    code = 429
    err_code = "budget_exceeded"


class RateLimited(BudgetExceeded):
    """Too many requests of one owner per second; ``retry_after_s`` says when one fits again."""

    err_code = "rate_limited"

    def __init__(self, description: str, retry_after_s: float) -> None:
        super().__init__(description)
        self.retry_after_s = retry_after_s


class QuotaExceeded(BudgetExceeded):
    err_code = "quota_exceeded"


class DependencyDown(MemorydError):
    code = 503
    err_code = "dependency_down"


class SecretUnavailable(DependencyDown):
    """A secret stored encrypted cannot be opened (no key, another key, tampered) or sealed (no key)."""

    err_code = "secret_unavailable"


class RemoteError(MemorydError):
    """A 500 from a service; ``error_id`` finds the full error in its log."""

    def __init__(self, description: str, error_id: str | None) -> None:
        super().__init__(f"{description} (error_id={error_id})")
        self.error_id = error_id


_BY_CODE: dict[int, type[MemorydError]] = {
    400: ValidationFailed,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    413: TooLarge,
    429: BudgetExceeded,
    503: DependencyDown,
}
_BY_ERR_CODE: dict[tuple[int, str], type[MemorydError]] = {
    (429, RateLimited.err_code): RateLimited,
    (429, QuotaExceeded.err_code): QuotaExceeded,
    (503, SecretUnavailable.err_code): SecretUnavailable,
}


def error_for(
    code: int,
    err_code: str,
    description: str,
    *,
    error_id: str | None = None,
    retry_after_s: float | None = None,
    field: str | None = None,
) -> MemorydError:
    """The typed error of an RPC error or a problem response (an unknown code: ``RemoteError``);
    the NATS RPC client and the HTTP clients both map through it."""
    cls = _BY_ERR_CODE.get((code, err_code)) or _BY_CODE.get(code)
    if cls is RateLimited:
        return RateLimited(description, retry_after_s or 1.0)
    if cls is ValidationFailed:
        return ValidationFailed(description, field)
    if cls is None:
        return RemoteError(description, error_id)
    return cls(description)
