"""The users of the deploy NATS configs, generated from the role definitions of ``memoryd up``.

``python -m services.deploy_nats`` (``make nats-conf``) rewrites the region between
``# <generated authorization>`` and ``# </generated authorization>`` of deploy/nats/nats.conf
and of the cluster profile's deploy/nats/cluster/nats.conf with
``shared.nats_auth.render_env_authorization()``: the operator, the sample application user
``app`` and one user per service, with the permissions ``memoryd up`` gives them and
passwords read from the server's environment (``$NATS_<USER>_PASSWORD``). The rest of the
file is written by hand. A test fails when a committed file differs from what this writes.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from shared.nats_auth import render_env_authorization

ROOT = Path(__file__).resolve().parents[1]
CONFS = (ROOT / "deploy" / "nats" / "nats.conf", ROOT / "deploy" / "nats" / "cluster" / "nats.conf")
BEGIN, END = "# <generated authorization>", "# </generated authorization>"


def render(text: str) -> str:
    """``text`` (a nats.conf) with its authorization region regenerated."""
    pattern = re.compile(rf"({re.escape(BEGIN)}\n).*?({re.escape(END)})", re.S)
    if not pattern.search(text):
        raise ValueError(f"the NATS config has no {BEGIN} region")
    return pattern.sub(lambda m: m.group(1) + render_env_authorization() + m.group(2), text)


def main() -> None:
    for conf in CONFS:
        conf.write_text(render(conf.read_text(encoding="utf-8")), encoding="utf-8")
        print(f"wrote {conf.relative_to(ROOT)}", file=sys.stderr)


if __name__ == "__main__":
    main()
