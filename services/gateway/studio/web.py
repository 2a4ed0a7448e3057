"""The ``/studio`` mount: the static page with security headers and no stale caching.

The Content-Security-Policy allows only the gateway's own origin (scripts, styles, fetches):
no inline script, no third-party asset, no framing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

STATIC_DIR = Path(__file__).parent / "static"

HEADERS = {
    "content-security-policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:;"
        " connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
    ),
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
    "cache-control": "no-cache",  # revalidate: a new release is picked up at the next load
}


class StudioFiles(StaticFiles):
    async def get_response(self, path: str, scope: Any) -> Response:
        response = await super().get_response(path, scope)
        response.headers.update(HEADERS)
        return response


async def _to_index(request: Request) -> Response:
    return RedirectResponse("/studio/", status_code=308)


def studio_routes() -> list[BaseRoute]:
    """``/studio`` (redirect) and ``/studio/...`` (the page and its assets)."""
    return [
        Route("/studio", _to_index, methods=["GET", "HEAD"]),
        Mount("/studio", app=StudioFiles(directory=STATIC_DIR, html=True), name="studio"),
    ]
