"""Secrets at rest: the keyring seals and opens, names the key a value needs, refuses the
wrong key or a moved or tampered value with ``SecretUnavailable``; settings rows are sealed
key by key and opened without ever passing ciphertext on."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest

from memoryd.errors import ConfigError, SecretUnavailable
from shared.secrets import Keyring, generate_key, is_sealed, key_id, sealed_key_id
from shared.settings.env import SecretsConfig, load_service_config
from shared.settings.sealed import mask_sealed, needs_reseal, open_values, seal_values


def ring(*keys: str) -> Keyring:
    return Keyring(tuple(base64.urlsafe_b64decode(k) for k in keys))


def test_a_sealed_value_names_its_key_and_opens_only_with_it() -> None:
    key, other = generate_key(), generate_key()
    sealed = ring(key).seal("embeddingApiKey", "sk-live-123")
    assert sealed.startswith(f"enc:v1:{key_id(base64.urlsafe_b64decode(key))}:") and "sk-live-123" not in sealed
    assert sealed != ring(key).seal("embeddingApiKey", "sk-live-123")  # a fresh nonce each time
    assert ring(key).open("embeddingApiKey", sealed) == "sk-live-123"
    assert ring(other, key).open("embeddingApiKey", sealed) == "sk-live-123"  # an older key still opens
    with pytest.raises(SecretUnavailable, match=f"sealed with key {sealed_key_id(sealed)}, which this process"):
        ring(other).open("embeddingApiKey", sealed)
    with pytest.raises(SecretUnavailable, match="its keys: none"):
        Keyring().open("embeddingApiKey", sealed)
    with pytest.raises(SecretUnavailable, match="does not authenticate"):  # moved to another field
        ring(key).open("qdrantApiKey", sealed)
    tampered = sealed[:-6] + ("AAAAAA" if not sealed.endswith("AAAAAA") else "BBBBBB")
    with pytest.raises(SecretUnavailable, match="does not authenticate"):
        ring(key).open("embeddingApiKey", tampered)
    with pytest.raises(SecretUnavailable, match="no secrets key configured"):
        Keyring().seal("embeddingApiKey", "x")
    assert SecretUnavailable.code == 503 and SecretUnavailable.err_code == "secret_unavailable"


def test_keys_come_from_the_environment_or_a_file(tmp_path: Path) -> None:
    first, second = generate_key(), generate_key()
    keyfile = tmp_path / "keys"
    keyfile.write_text(f"# current first\n{first}\n\n{second}\n")
    cfg = load_service_config({"MEMORYD_SECRETS_KEY_FILE": str(keyfile)}).secrets
    keyring = Keyring.from_config(cfg)
    assert keyring.current_id == key_id(base64.urlsafe_b64decode(first)) and len(keyring.keys) == 2
    standard = base64.b64encode(os.urandom(32)).decode()  # `openssl rand -base64 32`
    assert Keyring.from_config(SecretsConfig(key=standard)).configured
    assert not Keyring.from_config(SecretsConfig()).configured
    with pytest.raises(ConfigError, match="MEMORYD_SECRETS_KEY: a key is 32 bytes"):
        Keyring.from_config(SecretsConfig(key=base64.b64encode(b"short").decode()))
    with pytest.raises(ConfigError, match="MEMORYD_SECRETS_KEY_FILE: cannot read"):
        Keyring.from_config(SecretsConfig(key_file=str(tmp_path / "missing")))
    (tmp_path / "empty").write_text("\n# nothing\n")
    with pytest.raises(ConfigError, match="holds no key"):
        Keyring.from_config(SecretsConfig(key_file=str(tmp_path / "empty")))


def test_rows_are_sealed_key_by_key_and_never_opened_into_ciphertext() -> None:
    key, other = generate_key(), generate_key()
    row = {"embeddingApiKey": "sk-1", "qdrantApiKey": None, "embeddingModel": "m", "rerankDepth": 8}
    sealed = seal_values(row, ring(key))
    assert is_sealed(sealed["embeddingApiKey"]) and sealed["qdrantApiKey"] is None
    assert {k: v for k, v in sealed.items() if k != "embeddingApiKey"} == {
        k: v for k, v in row.items() if k != "embeddingApiKey"
    }
    assert seal_values(sealed, ring(key)) == sealed  # sealing twice changes nothing
    assert open_values(sealed, ring(key)) == (row, [])
    opened, problems = open_values(sealed, ring(other))
    assert "embeddingApiKey" not in opened and opened["embeddingModel"] == "m"
    assert len(problems) == 1 and "embeddingApiKey: sealed with key" in problems[0]
    assert open_values({"embeddingApiKey": "legacy-plain"}, ring(key)) == ({"embeddingApiKey": "legacy-plain"}, [])
    assert mask_sealed(sealed)["embeddingApiKey"] == "***" and mask_sealed(row)["embeddingApiKey"] == "sk-1"
    assert needs_reseal({"embeddingApiKey": "plain", "qdrantApiKey": sealed["embeddingApiKey"]}, ring(key)) == [
        "embeddingApiKey"
    ]
    assert needs_reseal(sealed, ring(other, key)) == ["embeddingApiKey"]  # rotated: the new first key seals
