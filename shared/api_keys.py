"""Gateway API keys: their format, their hashed records, and the JetStream KV bucket holding them.

A key is ``mk_<id>_<secret>`` (``id``: 12 hex digits, ``secret``: 48 hex digits). Only the
SHA-256 of the secret is stored (the secret has 192 bits of entropy, so a slow hash adds
nothing), in the KV bucket ``MEM_API_KEYS`` under the key's id: the gateway stays stateless
and talks only NATS, and the CLI (``memoryd keys``) writes the same bucket. A key is shown
once, when it is created. An owner key acts only for its owner; an operator key may act for
any owner (named per call) and reach the operator routes (settings, sleep runs, reindex, ...).
A key's own upstream (``upstream_url``) is ``https://``, or plain ``http://`` to loopback only.
A key may carry limits (``KeyLimits``); the gateway enforces them across its replicas.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import re
import secrets
from datetime import UTC, datetime
from typing import Annotated, Literal
from urllib.parse import urlsplit

import msgspec
from nats.js import JetStreamContext
from nats.js.api import KeyValueConfig
from nats.js.errors import KeyNotFoundError, NotFoundError
from nats.js.kv import KeyValue

from memoryd.codec import validation_failed
from memoryd.errors import NotFound, ValidationFailed
from memoryd.schemas.base import Owner

from .bus.kv_keys import all_keys

API_KEYS_BUCKET = "MEM_API_KEYS"
KEY_PREFIX = "mk_"
_KEY = re.compile(r"^mk_([0-9a-f]{12})_([0-9a-f]{48})$")

Role = Literal["owner", "operator"]
Limit = Annotated[int, msgspec.Meta(ge=0)]
ModelName = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]


class KeyLimits(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """What one key may spend; a limit not set (None) takes the gateway's default, 0 is unlimited."""

    max_tokens_per_day: Limit | None = None  # LLM tokens (prompt + completion) through the proxy per UTC day
    requests_per_minute: Limit | None = None  # proxied chat calls per minute
    max_streams: Limit | None = None  # streamed proxy answers open at once
    models: list[ModelName] | None = None  # the models the proxy forwards ([] or None: the gateway's default)
    events_per_second: Limit | None = None  # chat events through POST /v1/events per second

    def public(self) -> dict[str, object]:
        public: dict[str, object] = msgspec.to_builtins(self)
        return public


class ApiKeyRecord(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One API key as stored: never the key itself, only its hash."""

    id: str
    secret_sha256: str
    role: Role
    created_at: datetime
    owner: Owner | None = None  # set for role="owner"
    name: Annotated[str, msgspec.Meta(max_length=200)] = ""
    upstream_url: str | None = None  # the proxy's upstream for this key (else the gateway's)
    limits: KeyLimits = KeyLimits()

    def public(self) -> dict[str, object]:
        """What ``memoryd keys list`` shows (no hash)."""
        return {
            "id": self.id,
            "role": self.role,
            "owner": self.owner,
            "name": self.name,
            "created_at": self.created_at.isoformat(),
            "upstream_url": self.upstream_url,
            "limits": self.limits.public(),
        }


def key_limits(
    *,
    max_tokens_per_day: int | None = None,
    requests_per_minute: int | None = None,
    max_streams: int | None = None,
    models: str | None = None,
    events_per_second: int | None = None,
) -> KeyLimits:
    """Limits as ``memoryd keys create`` takes them (``models`` comma-separated); ``ValidationFailed`` when bad."""
    raw = {
        "max_tokens_per_day": max_tokens_per_day,
        "requests_per_minute": requests_per_minute,
        "max_streams": max_streams,
        "models": None if models is None else [m.strip() for m in models.split(",") if m.strip()],
        "events_per_second": events_per_second,
    }
    try:
        return msgspec.convert({k: v for k, v in raw.items() if v is not None}, KeyLimits)
    except msgspec.ValidationError as exc:
        raise validation_failed(exc) from exc


def check_upstream_url(url: str) -> str:
    """A key's own upstream base URL, checked: ``https://``, or ``http://`` to a loopback host only.

    The caller's upstream credential travels to it, so it must not go in clear over a network.
    """
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValidationFailed.at("$.upstream_url", f"the upstream must be an http(s) URL with a host, not {url!r}")
    if parts.scheme == "http" and not _loopback(parts.hostname):
        raise ValidationFailed.at(
            "$.upstream_url",
            f"the upstream {parts.hostname!r} is not loopback: use https:// (plain http only to localhost)",
        )
    return url.strip()


def _loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _sha256(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def new_key(
    role: Role, owner: str | None, *, name: str = "", upstream_url: str | None = None, limits: KeyLimits | None = None
) -> tuple[str, ApiKeyRecord]:
    """A fresh key and its record; ``ValidationFailed`` when role and owner do not fit."""
    if role == "owner" and not owner:
        raise ValidationFailed("an owner key needs an owner")
    if role == "operator" and owner:
        raise ValidationFailed("an operator key acts for any owner: give no owner")
    if upstream_url is not None:
        upstream_url = check_upstream_url(upstream_url)
    key_id, secret = secrets.token_hex(6), secrets.token_hex(24)
    record = msgspec.convert(
        {
            "id": key_id,
            "secret_sha256": _sha256(secret),
            "role": role,
            "owner": owner,
            "name": name,
            "upstream_url": upstream_url,
            "created_at": datetime.now(UTC),
            "limits": msgspec.to_builtins(limits or KeyLimits()),
        },
        ApiKeyRecord,
        from_attributes=False,
    )
    return f"{KEY_PREFIX}{key_id}_{secret}", record


def parse_key(token: str) -> tuple[str, str] | None:
    """``(id, secret)`` of a well-formed key, else None."""
    match = _KEY.match(token.strip())
    return (match.group(1), match.group(2)) if match else None


def matches(record: ApiKeyRecord, secret: str) -> bool:
    """Constant-time comparison of a presented secret with the stored hash."""
    return hmac.compare_digest(record.secret_sha256, _sha256(secret))


_decoder = msgspec.json.Decoder(ApiKeyRecord)


async def open_bucket(js: JetStreamContext) -> KeyValue:
    """The key bucket, created on first use (one revision per key: a revoke deletes it)."""
    try:
        return await js.key_value(API_KEYS_BUCKET)
    except NotFoundError:
        return await js.create_key_value(KeyValueConfig(bucket=API_KEYS_BUCKET, history=1))


class KeyStore:
    """Reads and writes key records in ``MEM_API_KEYS``."""

    def __init__(self, kv: KeyValue) -> None:
        self.kv = kv

    async def put(self, record: ApiKeyRecord) -> None:
        await self.kv.put(record.id, msgspec.json.encode(record))

    async def get(self, key_id: str) -> ApiKeyRecord | None:
        try:
            entry = await self.kv.get(key_id)
        except KeyNotFoundError:
            return None
        return _decoder.decode(entry.value) if entry.value else None

    async def list(self) -> list[ApiKeyRecord]:
        ids = await all_keys(self.kv)
        records = [await self.get(key_id) for key_id in ids]
        return sorted((r for r in records if r is not None), key=lambda r: r.created_at)

    async def revoke(self, key_id: str) -> ApiKeyRecord:
        record = await self.get(key_id)
        if record is None:
            raise NotFound(f"no API key with id {key_id!r}")
        await self.kv.purge(key_id)
        return record
