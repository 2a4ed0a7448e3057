"""The users of the deploy NATS configs, generated from the role definitions of ``memoryd up``.

``python -m services.deploy_nats`` (``make nats-conf``) rewrites the region between
``# <generated authorization>`` and ``# </generated authorization>`` of deploy/nats/nats.conf
and of the cluster profile's deploy/nats/cluster/nats.conf with
``shared.nats_auth.render_env_authorization()``: the operator, the sample application user
``app`` and one user per service, with the permissions ``memoryd up`` gives them and
passwords read from the server's environment (``$NATS_<USER>_PASSWORD``). It writes the same
users into the Helm values of the Kubernetes cluster (deploy/k8s/cluster/nats-values.yaml:
``config.merge.authorization``, and ``container.env`` reading each password from the
``memoryd-nats`` Secret). The rest of each file is written by hand. A test fails when a
committed file differs from what this writes.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from pathlib import Path

from shared.nats_auth import DEPLOY_USERS, helm_authorization_users, password_variable, render_env_authorization

ROOT = Path(__file__).resolve().parents[1]
CONFS = (ROOT / "deploy" / "nats" / "nats.conf", ROOT / "deploy" / "nats" / "cluster" / "nats.conf")
HELM_VALUES = ROOT / "deploy" / "k8s" / "cluster" / "nats-values.yaml"
NATS_SECRET = "memoryd-nats"  # deploy/k8s/secret.yaml
BEGIN, END = "# <generated authorization>", "# </generated authorization>"
ENV_BEGIN, ENV_END = "# <generated env>", "# </generated env>"


def _replace_region(text: str, begin: str, end: str, body: Callable[[str], str]) -> str:
    """``text`` with the lines between ``begin`` and ``end`` replaced by ``body(indent)``, where
    ``indent`` is the begin marker's own indentation."""
    pattern = re.compile(rf"^([ ]*){re.escape(begin)}\n.*?^[ ]*{re.escape(end)}$", re.S | re.M)
    if not pattern.search(text):
        raise ValueError(f"the file has no {begin} region")
    return pattern.sub(lambda m: f"{m.group(1)}{begin}\n{body(m.group(1))}{m.group(1)}{end}", text)


def render(text: str) -> str:
    """``text`` (a nats.conf) with its authorization region regenerated."""
    return _replace_region(text, BEGIN, END, lambda _indent: render_env_authorization())


def _helm_authorization(indent: str) -> str:
    users = "".join(f"{indent}    - {json.dumps(user)}\n" for user in helm_authorization_users())
    return f"{indent}authorization:\n{indent}  users:\n{users}"


def _helm_env(indent: str) -> str:
    lines = [f"{indent}env:"]
    for user in DEPLOY_USERS:
        ref = {"secretKeyRef": {"name": NATS_SECRET, "key": password_variable(user)}}
        lines.append(f"{indent}  {password_variable(user)}:")
        lines.append(f"{indent}    valueFrom: {json.dumps(ref)}")
    return "\n".join(lines) + "\n"


def render_helm_values(text: str) -> str:
    """``text`` (the Helm values) with its authorization and env regions regenerated."""
    text = _replace_region(text, BEGIN, END, _helm_authorization)
    return _replace_region(text, ENV_BEGIN, ENV_END, _helm_env)


def main() -> None:
    outputs = [(conf, render) for conf in CONFS] + [(HELM_VALUES, render_helm_values)]
    for path, rewrite in outputs:
        path.write_text(rewrite(path.read_text(encoding="utf-8")), encoding="utf-8")
        print(f"wrote {path.relative_to(ROOT)}", file=sys.stderr)


if __name__ == "__main__":
    main()
