"""``clients/openapi.json``: the gateway's OpenAPI document as served at ``/openapi.json``.

``python -m services.gateway.openapi_export > clients/openapi.json`` (``make openapi``) writes it
from the route table; clients in other languages are typed from the committed file, and a unit
test fails when it differs from what the routes generate.
"""

from __future__ import annotations

import json
import sys
from importlib.metadata import version

from .logic.openapi import document
from .routes import ROUTES


def render() -> str:
    """The document as indented JSON with a trailing newline (stable for diffs)."""
    return json.dumps(document(ROUTES, version=version("memoryd")), indent=2, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    sys.stdout.write(render())
