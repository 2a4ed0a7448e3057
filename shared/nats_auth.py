"""NATS users and permissions: one user per service, one for client applications, one operator.

Least privilege per role (what each service publishes and subscribes, and the JetStream API
subjects of its own streams, consumers and buckets only), rendered as a nats-server
``authorization`` block. Clients may publish chat events and call the
retrieve/inject/memory RPCs but cannot touch JetStream's API (so they cannot read
``mem.v1.jobs.>``) nor subscribe outside their own inbox prefix ``_INBOX.<user>``.
Owner-bound client users may only use their owners' subjects
(``mem.v1.events.chat.<owner>``, ``mem.v1.rpc.<op>.<owner>``); the services check that
the owner in the payload matches the subject.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
from dataclasses import dataclass, field
from pathlib import Path

from memoryd.subjects import (
    ACTIVITY_BUCKET,
    CLIENT_ROLE,
    DLQ_STREAM,
    EMBED_CONSUMER,
    EVENTS_STREAM,
    EXTRACT_CONSUMER,
    INGEST_CONSUMER,
    JOBS_STREAM,
    OPERATOR_ROLE,
    SLEEP_CONSUMER,
    SLEEP_STREAM,
    inbox_prefix,
)

from .api_keys import API_KEYS_BUCKET
from .service_names import SERVICES

SERVICE_ROLES = SERVICES  # one NATS user per service

_JS = ["$JS.ACK.>", "$JS.FC.>", "$SRV.>", "mem.v1.dlq.>"]
_SERVICE_SUB = ["$SRV.>", "mem.v1.rpc.health", "mem.v1.settings.changed"]
_API = "$JS.API"
_STREAMS = (EVENTS_STREAM, JOBS_STREAM, SLEEP_STREAM, DLQ_STREAM)
#: The gateway's bucket of per-key limits (services/gateway/adapters/limits_kv.py).
KEY_LIMITS_BUCKET = "MEM_KEY_LIMITS"


def _consumer(stream: str, durable: str) -> list[str]:
    """Create, inspect and pull from one durable consumer."""
    return [
        f"{_API}.CONSUMER.INFO.{stream}.{durable}",
        f"{_API}.CONSUMER.CREATE.{stream}.{durable}",
        f"{_API}.CONSUMER.CREATE.{stream}.{durable}.>",
        f"{_API}.CONSUMER.DURABLE.CREATE.{stream}.{durable}",
        f"{_API}.CONSUMER.MSG.NEXT.{stream}.{durable}",
    ]


def _provisioning() -> list[str]:
    """What every service sends at start (shared/bus/provision.py): each stream's info, create
    and update, and ingest's durable consumer (created before any client can publish)."""
    streams = [f"{_API}.STREAM.{op}.{name}" for name in _STREAMS for op in ("INFO", "CREATE", "UPDATE")]
    return [*streams, *_consumer(EVENTS_STREAM, INGEST_CONSUMER)[:4]]


def _pulls(stream: str, durable: str) -> list[str]:
    """A consumer loop (shared/bus/consumer.py): its durable, and the oldest unacknowledged
    message of its stream (shared/bus/age.py)."""
    return [*_consumer(stream, durable), f"{_API}.STREAM.MSG.GET.{stream}"]


def _bucket(bucket: str, *, write: bool = True) -> list[str]:
    """A KV bucket: open or create it, read and watch keys, and (``write``) put them."""
    stream = f"KV_{bucket}"
    api = [
        f"{_API}.STREAM.INFO.{stream}",
        f"{_API}.STREAM.CREATE.{stream}",
        f"{_API}.STREAM.MSG.GET.{stream}",
        f"{_API}.DIRECT.GET.{stream}",
        f"{_API}.DIRECT.GET.{stream}.>",
        f"{_API}.CONSUMER.CREATE.{stream}",
        f"{_API}.CONSUMER.CREATE.{stream}.>",
        f"{_API}.CONSUMER.DELETE.{stream}.>",
    ]
    return [*api, f"$KV.{bucket}.>"] if write else api


def jetstream_api(service: str) -> list[str]:
    """The ``$JS.API`` subjects (and KV puts) of one service: provisioning, its own consumers,
    streams and buckets, never the whole API (no deleting or purging a stream, no reading
    another service's stream or bucket)."""
    own: dict[str, list[str]] = {
        "ingest": [
            *_pulls(EVENTS_STREAM, INGEST_CONSUMER),
            *_bucket(ACTIVITY_BUCKET),
            f"{_API}.STREAM.MSG.GET.{DLQ_STREAM}",  # admin.dlq.* list, show, replay, drop
            f"{_API}.STREAM.MSG.DELETE.{DLQ_STREAM}",
        ],
        "extract": _pulls(JOBS_STREAM, EXTRACT_CONSUMER),
        "embed": _pulls(JOBS_STREAM, EMBED_CONSUMER),
        "retrieve": [
            *_bucket(ACTIVITY_BUCKET),
            *(f"{_API}.CONSUMER.INFO.{JOBS_STREAM}.{c}" for c in (EXTRACT_CONSUMER, EMBED_CONSUMER)),  # engine.status
        ],
        "sleep": [*_pulls(SLEEP_STREAM, SLEEP_CONSUMER), *_bucket(ACTIVITY_BUCKET, write=False)],
        "gateway": [
            *_bucket(API_KEYS_BUCKET, write=False),  # keys are written by the operator (memoryd keys)
            *_bucket(KEY_LIMITS_BUCKET),
            *(f"{_API}.CONSUMER.INFO.{name}.*" for name in _STREAMS),  # the Studio's lag per consumer
        ],
    }
    return [*_provisioning(), *own[service]]


CLIENT_RPC_OPS = ("retrieve", "inject", "memory.*", "conflicts.*", "entities.*", "health")
#: bcrypt work factor of the hashes in auth.conf: nats-server checks one per connection
#: (measured ~0.4 s at 11 on this 2-vCPU machine under load, half that at 10).
BCRYPT_COST = 10


def _service(name: str, publish: list[str], subscribe: list[str]) -> dict[str, object]:
    return {
        # own inbox: see service readiness sync
        "publish": {"allow": [*jetstream_api(name), *_JS, f"{inbox_prefix(name)}.>", *publish]},
        "subscribe": {"allow": [f"{inbox_prefix(name)}.>", *_SERVICE_SUB, f"mem.v1.rpc.health.{name}", *subscribe]},
        "allow_responses": True,
    }


def application_permissions(user: str) -> dict[str, object]:
    """An application-role user (``client`` of ``memoryd up``, ``app`` of deploy/nats/nats.conf):
    chat events and the client RPCs for any owner, replies only on its own inbox."""
    return {
        "publish": {"allow": ["mem.v1.events.>", *[f"mem.v1.rpc.{op}" for op in CLIENT_RPC_OPS]]},
        "subscribe": {"allow": [f"{inbox_prefix(user)}.>"]},
    }


def role_permissions() -> dict[str, dict[str, object]]:
    """The permissions of every fixed role."""
    return {
        "ingest": _service(
            "ingest",
            [
                "mem.v1.jobs.extract",
                "mem.v1.jobs.embed",
                "mem.v1.activity.>",
                "mem.v1.settings.changed",
                # admin.dlq.replay republishes dead letters to their original subjects
                "mem.v1.events.>",
                "mem.v1.jobs.sleep",
            ],
            [
                "mem.v1.rpc.memory.>",
                "mem.v1.rpc.settings.>",
                "mem.v1.rpc.summarize",
                "mem.v1.rpc.summarize.>",
                "mem.v1.rpc.cleanup",
                "mem.v1.rpc.admin.>",
                "mem.v1.rpc.cleanup.>",
            ],
        ),
        "extract": _service("extract", ["mem.v1.jobs.embed"], []),
        "embed": _service("embed", ["mem.v1.jobs.embed"], ["mem.v1.rpc.embed", "mem.v1.rpc.reindex"]),
        "retrieve": _service(
            "retrieve",
            ["mem.v1.rpc.embed", "mem.v1.activity.>"],
            [
                "mem.v1.rpc.retrieve",
                "mem.v1.rpc.retrieve.*",
                "mem.v1.rpc.inject",
                "mem.v1.rpc.inject.*",
                "mem.v1.rpc.engine.status",
            ],
        ),
        "sleep": _service(
            "sleep",
            ["mem.v1.jobs.sleep", "mem.v1.jobs.embed"],
            ["mem.v1.rpc.sleep.>", "mem.v1.rpc.conflicts.>", "mem.v1.rpc.entities.>", "mem.v1.activity.>"],
        ),
        # HTTP in front of every RPC: it checks each API key's owner and role itself
        "gateway": _service("gateway", ["mem.v1.rpc.>", "mem.v1.events.chat"], []),
        CLIENT_ROLE: application_permissions(CLIENT_ROLE),
        OPERATOR_ROLE: {"publish": {"allow": [">"]}, "subscribe": {"allow": [">"]}},
    }


#: Names of owner-bound client users, and owners they can be bound to: each owner becomes a
#: subject token (``mem.v1.rpc.retrieve.<owner>``), so no dots, wildcards or spaces.
_CLIENT_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_BINDABLE_OWNER = re.compile(r"^[^.*>\s]{1,256}$")


def check_bound_client(user: str, owners: list[str]) -> None:
    """Raise ``ValueError`` naming what is wrong with an owner-bound client user."""
    if not _CLIENT_NAME.match(user):
        raise ValueError(f"client name {user!r}: use 1-64 letters, digits, '_' or '-'")
    if user in (*SERVICE_ROLES, CLIENT_ROLE, OPERATOR_ROLE):
        raise ValueError(f"client name {user!r} is a built-in role")
    if not owners:
        raise ValueError("at least one --owner is required")
    for owner in owners:
        if not _BINDABLE_OWNER.match(owner):
            raise ValueError(f"owner {owner!r} cannot be bound: it must not contain '.', '*', '>' or spaces")


def bound_client_permissions(user: str, owners: list[str]) -> dict[str, object]:
    """A client user that may act only for ``owners``."""
    publish = []
    for owner in owners:
        publish.append(f"mem.v1.events.chat.{owner}")
        publish += [f"mem.v1.rpc.{op}.{owner}" for op in CLIENT_RPC_OPS if op != "health"]
    return {"publish": {"allow": [*publish, "mem.v1.rpc.health"]}, "subscribe": {"allow": [f"{inbox_prefix(user)}.>"]}}


@dataclass
class Credentials:
    """Passwords per user (roles and owner-bound clients), stored 0600 under the data dir."""

    passwords: dict[str, str] = field(default_factory=dict)
    bound_owners: dict[str, list[str]] = field(default_factory=dict)
    #: user -> ``<sha256 of the password>$<bcrypt hash>``: the hash stays valid while the password does
    hashes: dict[str, str] = field(default_factory=dict)

    def password_hash(self, user: str) -> str:
        """The bcrypt hash of ``user``'s password (made once per password, kept in ``hashes``)."""
        password = self.passwords[user]
        digest = hashlib.sha256(password.encode()).hexdigest()
        known = self.hashes.get(user, "")
        if known.startswith(digest + "$"):
            return known.removeprefix(digest + "$")
        import bcrypt  # server side only: the client install has no bcrypt

        hashed = bcrypt.hashpw(password.encode(), bcrypt.gensalt(BCRYPT_COST)).decode()
        self.hashes[user] = f"{digest}${hashed}"
        return hashed

    @classmethod
    def load_or_create(cls, path: Path) -> Credentials:
        if path.exists():
            raw = json.loads(path.read_text())
            creds = cls(
                passwords=raw["passwords"], bound_owners=raw.get("bound_owners", {}), hashes=raw.get("hashes", {})
            )
        else:
            creds = cls()
        for role in (*SERVICE_ROLES, CLIENT_ROLE, OPERATOR_ROLE):
            creds.passwords.setdefault(role, secrets.token_urlsafe(24))
        for user in creds.passwords:
            creds.password_hash(user)
        creds.save(path)
        return creds

    def add_bound_client(self, user: str, owners: list[str]) -> str:
        """Create (or re-bind, keeping its password) a client user for ``owners``; its password."""
        check_bound_client(user, owners)
        self.passwords.setdefault(user, secrets.token_urlsafe(24))
        self.bound_owners[user] = sorted(set(owners))
        self.password_hash(user)
        return self.passwords[user]

    def remove_bound_client(self, user: str) -> bool:
        """Remove an owner-bound client user; False if there was none of that name."""
        if user not in self.bound_owners:
            return False
        del self.bound_owners[user]
        self.passwords.pop(user, None)
        self.hashes.pop(user, None)
        return True

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            data = {"passwords": self.passwords, "bound_owners": self.bound_owners, "hashes": self.hashes}
            json.dump(data, fh, indent=2)
        os.replace(tmp, path)
        os.chmod(path, 0o600)


def _conf_value(value: object) -> str:
    """JSON is valid nats-server configuration syntax for maps, lists and strings."""
    return json.dumps(value)


def render_authorization(creds: Credentials) -> str:
    """The ``authorization { users = [...] }`` block for nats-server."""
    perms = role_permissions()
    users = []
    for user in sorted(creds.passwords):
        if user in creds.bound_owners:
            permissions = bound_client_permissions(user, creds.bound_owners[user])
        elif user in perms:
            permissions = perms[user]
        else:
            continue
        users.append({"user": user, "password": creds.password_hash(user), "permissions": permissions})
    return f"authorization {{\n  users = {_conf_value(users)}\n}}\n"


#: The sample application user of deploy/nats/nats.conf (the application role).
APP_USER = "app"
#: The users of deploy/nats/nats.conf: the operator, the sample application, every service.
DEPLOY_USERS = (OPERATOR_ROLE, APP_USER, *SERVICE_ROLES)


def password_variable(user: str) -> str:
    """The environment variable nats-server reads ``user``'s password from (``NATS_INGEST_PASSWORD``)."""
    return f"NATS_{user.upper()}_PASSWORD"


def deploy_permissions() -> list[tuple[str, dict[str, object]]]:
    """``(user, permissions)`` of every user of the deploy configs, in ``DEPLOY_USERS`` order."""
    perms = role_permissions()
    return [(user, application_permissions(user) if user == APP_USER else perms[user]) for user in DEPLOY_USERS]


def render_env_authorization() -> str:
    """The ``authorization`` block of deploy/nats/nats.conf: the same roles as ``memoryd up``,
    passwords from the server's environment (``$NATS_<USER>_PASSWORD``), nothing for anyone else."""
    lines = ["authorization {", "  users = ["]
    for user, permissions in deploy_permissions():
        lines.append(f"    {{user: {_conf_value(user)}, password: ${password_variable(user)},")
        lines.append(f"     permissions: {_conf_value(permissions)}}}")
    lines += ["  ]", "}"]
    return "\n".join(lines) + "\n"


def helm_authorization_users() -> list[dict[str, object]]:
    """The same users for the NATS Helm chart's ``config.merge.authorization``: the chart writes a
    value wrapped in ``<< >>`` unquoted, so ``$NATS_<USER>_PASSWORD`` stays a variable reference."""
    return [
        {"user": user, "password": f"<< ${password_variable(user)} >>", "permissions": permissions}
        for user, permissions in deploy_permissions()
    ]
