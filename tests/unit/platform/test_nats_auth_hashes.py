"""auth.conf holds bcrypt hashes, never the passwords; a hash is made once per password."""

from __future__ import annotations

from pathlib import Path

import bcrypt

from shared.nats_auth import Credentials, render_authorization


def test_auth_conf_has_no_plain_password_and_each_hash_verifies(tmp_path: Path) -> None:
    path = tmp_path / "creds.json"
    creds = Credentials.load_or_create(path)
    creds.add_bound_client("worker", ["acme"])
    conf = render_authorization(creds)
    assert all(password not in conf for password in creds.passwords.values())
    for user, password in creds.passwords.items():
        hashed = creds.password_hash(user)
        assert hashed.startswith("$2b$") and hashed in conf
        assert bcrypt.checkpw(password.encode(), hashed.encode())


def test_hashes_are_kept_and_follow_a_changed_password(tmp_path: Path) -> None:
    path = tmp_path / "creds.json"
    first = Credentials.load_or_create(path)
    again = Credentials.load_or_create(path)
    assert again.password_hash("ingest") == first.password_hash("ingest")  # not hashed anew
    again.passwords["ingest"] = "a-new-password"
    assert bcrypt.checkpw(b"a-new-password", again.password_hash("ingest").encode())
