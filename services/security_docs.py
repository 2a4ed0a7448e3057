"""The generated parts of ``docs/security.md``: the authorization matrix and the test results.

``python -m services.security_docs`` (``make security-docs``) rewrites each region between
``<!-- security:<name> -->`` and ``<!-- /security:<name> -->``:

- ``matrix``: the table of ``shared.authz`` (every role x every case, derived from the role
  definitions in ``shared.nats_auth``), with its size;
- ``hostile``: the hostile-input table, case x door (``hostile.json`` from ``make hostile``);
- ``results``: one paragraph per results file of ``SOURCES`` that exists under
  ``bench-results/`` (``authz.json`` from ``make authz``, ``fuzz.json`` from ``make fuzz``,
  ``deletion-audit.json``, ...). A source without its own renderer here is rendered from its
  ``summary`` (one line) or ``markdown`` field, so a new test only has to write its file and
  be listed in ``SOURCES``.

A test fails when the committed document differs from what this writes.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from shared import authz

ROOT = Path(__file__).resolve().parents[1]
DOCUMENT = ROOT / "docs" / "security.md"
RESULTS = ROOT / "bench-results"

Report = dict[str, Any]


def render_matrix() -> str:
    c = authz.counts()
    size = (
        f"{c['cases']} cases x {c['roles']} roles = **{c['cells']} cells**: {c['allow']} allowed, "
        f"{c['deny']} denied by nats-server, {c['403']} refused by a service (403)."
    )
    legend = (
        "✓ allowed, ✗ denied by nats-server (permissions violation), 403 let through by NATS and "
        f"refused by the service. `<own>` is the owner the role acts for (`{authz.OWN}`; the "
        f"owner-bound client is bound to it), `<other>` another owner, `<self>` the role's own "
        "user, `<victim>` another user (`client`, or `ingest` for the client)."
    )
    return f"{size}\n\n{legend}\n\n{authz.render_table()}"


def render_authz(r: Report) -> str:
    return (
        f"- **Authorization matrix** (`make authz`): {r['tried']} of {r['cells']} cells tried against "
        f"nats-server with authentication on and the services running; {r['mismatches']} differ from "
        f"the derived outcome; denied cases changed {r['side_effects']} tables ({r['seconds']} s)."
    )


def render_fuzz(r: Report) -> str:
    return (
        f"- **Fuzz** (`make fuzz`): {r['cases']} hostile payloads on {r['subjects']} subjects; services "
        f"stopped: {r['crashes']}; {r['rejected']} rejected (typed error or dead-lettered), "
        f"{r['accepted']} accepted as valid; {len(r.get('violations', []))} invariant violations."
    )


def render_hostile(r: Report) -> str:
    return (
        f"- **Hostile input** (`make hostile`): {len(r['cases'])} cases through {len(r['doors'])} doors, "
        f"{r['tried']} tried (the rest have no way to be said on that door); {r['mismatches']} differ from "
        "the expected typed refusal or kept write."
    )


def render_hostile_table(results: Path) -> str:
    """Case x door -> what the door answered (``hostile.json``), or a note that none is saved."""
    path = results / "hostile.json"
    if not path.exists():
        return "No results saved yet (`make hostile`).\n"
    r = json.loads(path.read_text(encoding="utf-8"))
    doors = r["doors"]
    lines = ["| case | group | " + " | ".join(doors) + " |", "|---|---|" + "---|" * len(doors)]
    for case in r["cases"]:
        cells = [r["results"].get(door, {}).get(case["name"], "") for door in doors]
        shown = ["—" if c == "n/a" else f"`{c}`" for c in cells]
        lines.append(f"| {case['name']} | {case['group']} | " + " | ".join(shown) + " |")
    return "\n".join(lines) + "\n"


def render_other(r: Report) -> str:
    return f"- {r['summary']}" if "summary" in r else str(r["markdown"]).rstrip()


#: Results files (``bench-results/<name>.json``) rendered into the ``results`` region, in order.
SOURCES: dict[str, Callable[[Report], str]] = {
    "authz": render_authz,
    "fuzz": render_fuzz,
    "hostile": render_hostile,
    "deletion-audit": render_other,
}


def render_results(results: Path) -> str:
    lines = [
        render(json.loads((results / f"{name}.json").read_text(encoding="utf-8")))
        for name, render in SOURCES.items()
        if (results / f"{name}.json").exists()
    ]
    return "\n".join(lines) + "\n" if lines else "No results saved yet.\n"


def replace_region(text: str, name: str, body: str) -> str:
    pattern = re.compile(rf"(<!-- security:{name} -->\n).*?(<!-- /security:{name} -->)", re.S)
    if not pattern.search(text):
        raise ValueError(f"docs/security.md has no <!-- security:{name} --> region")
    return pattern.sub(lambda m: m.group(1) + "\n" + body.rstrip() + "\n\n" + m.group(2), text)


def render(text: str, results: Path = RESULTS) -> str:
    """``text`` (the document) with every generated region rewritten."""
    text = replace_region(text, "matrix", render_matrix())
    text = replace_region(text, "hostile", render_hostile_table(results))
    return replace_region(text, "results", render_results(results))


def main() -> None:
    DOCUMENT.write_text(render(DOCUMENT.read_text(encoding="utf-8")), encoding="utf-8")
    print(f"wrote {DOCUMENT.relative_to(ROOT)}", file=sys.stderr)


if __name__ == "__main__":
    main()
