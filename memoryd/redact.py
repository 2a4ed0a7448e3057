"""Secrets out of text: URL passwords and bearer tokens become ``***`` before anything is printed or logged."""

from __future__ import annotations

import re

_URL_PASSWORD = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*:)[^@\s/]+@")
_BEARER = re.compile(r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/=-]+")
REDACTED = "***"


def redact_text(text: str) -> str:
    """``text`` with URL passwords and bearer tokens replaced by ``***``."""
    return _BEARER.sub(r"\1 " + REDACTED, _URL_PASSWORD.sub(r"\g<head>" + REDACTED + "@", text))
