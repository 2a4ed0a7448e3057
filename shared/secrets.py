"""Secrets at rest: AES-256-GCM sealing of values stored in the database (engine API keys).

A ``Keyring`` holds one or more 256-bit keys, from ``MEMORYD_SECRETS_KEY`` (one key) or
``MEMORYD_SECRETS_KEY_FILE`` (one key per line: the first seals, every one opens, so a key
is rotated by putting the new one first). A key is 32 bytes in base64, URL-safe or standard
(``generate_key()``, ``openssl rand -base64 32``); ``memoryd up`` makes one. A sealed value is one string::

    enc:v1:<key id>:<base64url of 12-byte nonce + ciphertext + tag>

``v1`` is the format (AES-256-GCM, ``cryptography``'s ``AESGCM``); the key id is the first
8 hex digits of the key's SHA-256, so a value names the key it needs without revealing it.
The associated data binds a value to its purpose (the setting's name): a ciphertext copied
into another field does not open. Opening with no key, an unknown key id, or a key that does
not authenticate the value raises ``SecretUnavailable`` (never garbage).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from memoryd.errors import ConfigError, SecretUnavailable
from shared.settings.env import SecretsConfig

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

PREFIX = "enc:v1:"
KEY_BYTES = 32
NONCE_BYTES = 12
KEY_ENV = "MEMORYD_SECRETS_KEY"
KEY_FILE_ENV = "MEMORYD_SECRETS_KEY_FILE"


def _cipher(key: bytes) -> AESGCM:
    """``cryptography``'s AES-GCM with ``key``, imported at first use: its native library adds
    ~8 MB to a process's resident memory, and most service processes never seal or open a value."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    return AESGCM(key)


def generate_key() -> str:
    """A new key as written in ``MEMORYD_SECRETS_KEY`` or a key file (URL-safe base64, 32 bytes)."""
    return base64.urlsafe_b64encode(os.urandom(KEY_BYTES)).decode()


def key_id(key: bytes) -> str:
    return hashlib.sha256(key).hexdigest()[:8]


def is_sealed(value: object) -> bool:
    return isinstance(value, str) and value.startswith(PREFIX)


def sealed_key_id(value: str) -> str:
    """The key id a sealed value names (``SecretUnavailable`` when it is not one)."""
    parts = value.split(":", 3)
    if len(parts) != 4 or not is_sealed(value):
        raise SecretUnavailable("not a sealed value (expected enc:v1:<key id>:<data>)")
    return parts[2]


def _decode_key(text: str, where: str) -> bytes:
    try:
        raw = base64.urlsafe_b64decode(text.strip().encode())
    except (binascii.Error, ValueError) as exc:
        raise ConfigError(where, "not base64 (make a key with `memoryd secrets generate-key`)") from exc
    if len(raw) != KEY_BYTES:
        raise ConfigError(
            where,
            f"a key is {KEY_BYTES} bytes in base64 (`memoryd secrets generate-key`); this one is {len(raw)} bytes",
        )
    return raw


@dataclass(frozen=True)
class Keyring:
    """The keys of this process: ``keys[0]`` seals, any opens. Empty: nothing can be sealed or opened."""

    keys: tuple[bytes, ...] = ()

    @classmethod
    def from_config(cls, cfg: SecretsConfig) -> Keyring:
        """From ``MEMORYD_SECRETS_KEY`` and/or ``MEMORYD_SECRETS_KEY_FILE`` (``ConfigError`` naming a bad one)."""
        keys: list[bytes] = []
        if cfg.key:
            keys.append(_decode_key(cfg.key, KEY_ENV))
        if cfg.key_file:
            try:
                text = Path(cfg.key_file).read_text()
            except OSError as exc:
                raise ConfigError(KEY_FILE_ENV, f"cannot read {cfg.key_file}: {exc.strerror}") from exc
            lines = [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
            if not lines:
                raise ConfigError(KEY_FILE_ENV, f"{cfg.key_file} holds no key")
            keys += [_decode_key(line, KEY_FILE_ENV) for line in lines]
        return cls(tuple(dict.fromkeys(keys)))

    @property
    def configured(self) -> bool:
        return bool(self.keys)

    @property
    def current_id(self) -> str | None:
        return key_id(self.keys[0]) if self.keys else None

    def seal(self, purpose: str, plaintext: str) -> str:
        """``plaintext`` sealed with the first key, bound to ``purpose`` (e.g. the setting's name)."""
        if not self.keys:
            raise SecretUnavailable(
                f"{purpose}: no secrets key configured to encrypt it with (set {KEY_ENV} or {KEY_FILE_ENV})"
            )
        key = self.keys[0]
        nonce = os.urandom(NONCE_BYTES)
        data = _cipher(key).encrypt(nonce, plaintext.encode(), purpose.encode())
        return f"{PREFIX}{key_id(key)}:{base64.urlsafe_b64encode(nonce + data).decode()}"

    def open(self, purpose: str, sealed: str) -> str:
        """The plaintext of ``sealed`` (``SecretUnavailable`` naming the key id when it cannot be opened)."""
        kid = sealed_key_id(sealed)
        key = next((k for k in self.keys if key_id(k) == kid), None)
        if key is None:
            have = ", ".join(key_id(k) for k in self.keys) or "none"
            raise SecretUnavailable(
                f"{purpose}: sealed with key {kid}, which this process does not have "
                f"(its keys: {have}; set {KEY_ENV} or {KEY_FILE_ENV})"
            )
        from cryptography.exceptions import InvalidTag

        try:
            raw = base64.urlsafe_b64decode(sealed.split(":", 3)[3].encode())
            return _cipher(key).decrypt(raw[:NONCE_BYTES], raw[NONCE_BYTES:], purpose.encode()).decode()
        except (InvalidTag, binascii.Error, ValueError, UnicodeDecodeError) as exc:
            raise SecretUnavailable(f"{purpose}: the value sealed with key {kid} does not authenticate") from exc
