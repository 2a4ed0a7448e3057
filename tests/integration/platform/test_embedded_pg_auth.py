"""The embedded PostgreSQL with a password: TCP connections without it, or with a wrong one,
are refused; a cluster made before passwords (trusting loopback) is migrated by starting it;
the server stores a SCRAM verifier, never the password."""

from __future__ import annotations

from pathlib import Path

import asyncpg

from memoryd.local.postgres import HBA_WITH_PASSWORD, EmbeddedPostgres, scram_verifier

PASSWORD = "3f9c0d6e1b2a4c5d8e7f90a1b2c3d4e5"


async def connects(dsn: str) -> bool:
    try:
        conn = await asyncpg.connect(dsn, timeout=10)
    except (asyncpg.InvalidPasswordError, asyncpg.InvalidAuthorizationSpecificationError):
        return False
    await conn.close()
    return True


async def test_a_connection_without_the_password_is_refused(tmp_path: Path) -> None:
    old = EmbeddedPostgres(tmp_path / "pg")  # a data dir from before passwords: trust
    old.start(fsync=False)
    try:
        assert await connects(old.dsn())
    finally:
        old.stop()

    server = EmbeddedPostgres(tmp_path / "pg", password=PASSWORD)
    server.start(fsync=False)
    try:
        assert (tmp_path / "pg" / "pg_hba.conf").read_text() == HBA_WITH_PASSWORD
        assert "trust" not in "".join(line for line in HBA_WITH_PASSWORD.splitlines() if line.startswith("host"))
        assert server.dsn(with_password=False) == f"postgresql://postgres@127.0.0.1:{server.port}/postgres"
        assert not await connects(server.dsn(with_password=False))
        assert not await connects(f"postgresql://postgres:wrong@127.0.0.1:{server.port}/postgres")
        assert await connects(server.dsn())
        conn = await asyncpg.connect(server.dsn())
        try:
            stored = await conn.fetchval("SELECT rolpassword FROM pg_authid WHERE rolname = 'postgres'")
            method = await conn.fetchval("SELECT auth_method FROM pg_hba_file_rules WHERE type = 'host' LIMIT 1")
        finally:
            await conn.close()
        assert stored.startswith("SCRAM-SHA-256$4096:") and PASSWORD not in stored
        assert method == "scram-sha-256"
        assert PASSWORD not in (tmp_path / "pg" / "server.log").read_text()
    finally:
        server.stop()


def test_the_verifier_has_postgresqls_format() -> None:
    """``SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>`` (that PostgreSQL accepts it
    is the login above)."""
    verifier = scram_verifier("pencil", salt=bytes(range(16)))
    assert verifier.startswith("SCRAM-SHA-256$4096:AAECAwQFBgcICQoLDA0ODw==$")
    stored, server_key = verifier.split("$")[2].split(":")
    assert len(stored) == len(server_key) == 44  # base64 of 32 bytes each
    assert verifier == scram_verifier("pencil", salt=bytes(range(16))) != scram_verifier("pencil")
