"""Secret-bearing settings (``embeddingApiKey``, ``qdrantApiKey``) sealed in the ``settings`` table.

``settings.put`` takes plaintext; ``seal_values`` (called by ``store.put_values``, the one
writer of rows) turns every secret key of a row update into ``enc:v1:<key id>:...``
(``shared.secrets``) before it is written, so the table never holds one in the clear.
``open_values`` is the way back; a value it cannot open is left out, never passed on as
ciphertext. Rows from before sealing hold plaintext: read as they are until
``shared.settings.global_row.reseal_global_row`` seals them. No I/O here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memoryd.errors import SecretUnavailable
from shared.secrets import Keyring, is_sealed, sealed_key_id
from shared.settings.engine import REDACTED, SECRET_KEYS


def seal_values(values: Mapping[str, Any], keyring: Keyring) -> dict[str, Any]:
    """``values`` with each secret key's plaintext sealed (``null`` stays ``null``; ``SecretUnavailable``
    without a key)."""
    out = dict(values)
    for key in SECRET_KEYS & set(out):
        value = out[key]
        if isinstance(value, str) and not is_sealed(value):
            out[key] = keyring.seal(key, value)
    return out


def open_values(values: Mapping[str, Any], keyring: Keyring) -> tuple[dict[str, Any], list[str]]:
    """``values`` with sealed secrets opened; a secret that cannot be opened is left out and
    its problem returned (never the ciphertext in its place)."""
    out = dict(values)
    problems: list[str] = []
    for key in SECRET_KEYS & set(out):
        value = out[key]
        if not is_sealed(value):
            continue
        try:
            out[key] = keyring.open(key, value)
        except SecretUnavailable as exc:
            del out[key]
            problems.append(exc.description)
    return out, problems


def needs_reseal(values: Mapping[str, Any], keyring: Keyring) -> list[str]:
    """The secret keys of a row stored in plaintext, or sealed with a key other than the current one."""
    stale: list[str] = []
    for key in sorted(SECRET_KEYS & set(values)):
        value = values[key]
        if isinstance(value, str) and (not is_sealed(value) or sealed_key_id(value) != keyring.current_id):
            stale.append(key)
    return stale


def mask_sealed(values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` with sealed secrets as ``***`` (for checks and views that need only whether one is set)."""
    return {k: (REDACTED if k in SECRET_KEYS and is_sealed(v) else v) for k, v in values.items()}
