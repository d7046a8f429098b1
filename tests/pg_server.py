"""A throwaway PostgreSQL server for tests: initdb + pg_ctl in a temp directory.

Any test module can use it: the ``pg_server`` (session-scoped) and
``pg_dsn`` (a fresh empty database per test) fixtures are registered for the
whole suite by ``tests/conftest.py``; scripts and subprocesses can import
``PgServer`` directly (``from tests.pg_server import PgServer``).

The server listens on a free loopback port (password auth, so wrong
credentials can be tested) and on a unix socket in its own directory. It runs
with ``fsync=off``: test data is thrown away, and fsync would only make the
suite slower on a shared disk. PostgreSQL refuses to run as root, so when the
tests run as root the server runs as the ``postgres`` user via ``runuser``.

A missing PostgreSQL installation is a test failure, not a skip (set
``PRISM_PG_BINDIR`` to the directory holding ``initdb`` and ``pg_ctl`` if
they are somewhere unusual).
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

# Not a real secret: every throwaway server gets a fresh random password, and
# tests look for it in errors and logs to prove it never leaks.
SUPERUSER = "prism"
_SEARCH = ("/usr/local/bin", "/usr/lib/postgresql/*/bin", "/usr/pgsql-*/bin")


class PgServerError(RuntimeError):
    pass


def find_bindir() -> Path:
    """The directory holding initdb and pg_ctl, or PgServerError naming what is missing."""
    candidates: list[str] = []
    if os.environ.get("PRISM_PG_BINDIR"):
        candidates.append(os.environ["PRISM_PG_BINDIR"])
    for pattern in _SEARCH:
        candidates.extend(sorted(glob.glob(pattern), reverse=True))
    found = shutil.which("initdb")
    if found:
        candidates.append(str(Path(found).parent))
    for directory in candidates:
        if all(os.access(Path(directory, tool), os.X_OK) for tool in ("initdb", "pg_ctl")):
            return Path(directory)
    raise PgServerError(
        "PostgreSQL server binaries (initdb, pg_ctl) not found in PRISM_PG_BINDIR, "
        f"{', '.join(_SEARCH)} or PATH; install PostgreSQL 15 (Debian: postgresql-15)"
    )


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PgServer:
    """One PostgreSQL cluster in a temporary directory; ``start``/``stop``/``restart``."""

    def __init__(
        self, bindir: Path | None = None, *, settings: dict[str, str] | None = None
    ) -> None:
        """``settings`` override the server settings (``fsync``, ...) at start."""
        self.bindir = bindir or find_bindir()
        self.settings = {
            "listen_addresses": "127.0.0.1",
            "fsync": "off",
            "full_page_writes": "off",
            "max_connections": "200",
            "shared_buffers": "32MB",
            **(settings or {}),
        }
        self.password = "pw-" + secrets.token_hex(12)
        self.port = free_port()
        self._run_as: str | None = "postgres" if os.geteuid() == 0 else None
        # As root, under /tmp: the postgres user must be able to reach the
        # directory (a root-only $TMPDIR would not do), and a short path keeps
        # the unix socket under its 107-byte limit.
        parent = "/tmp" if self._run_as and os.path.isdir("/tmp") else None
        self.root = Path(tempfile.mkdtemp(prefix="prism-pg-", dir=parent))
        self.data = self.root / "data"
        self.socket_dir = self.root / "sock"
        self.log = self.root / "server.log"
        self._databases = 0
        self.running = False

    # --- connection strings -------------------------------------------------

    def dsn(
        self, dbname: str = "postgres", *, password: str | None = None, schema: str | None = None
    ) -> str:
        """A libpq key=value DSN; ``schema`` puts it first on the search path."""
        pw = self.password if password is None else password
        options = f" options='-c search_path={schema}'" if schema else ""
        return (
            f"host=127.0.0.1 port={self.port} dbname={dbname} user={SUPERUSER} password={pw} "
            f"connect_timeout=5{options}"
        )

    def url(self, dbname: str = "postgres") -> str:
        return f"postgresql://{SUPERUSER}:{self.password}@127.0.0.1:{self.port}/{dbname}"

    # --- lifecycle ----------------------------------------------------------

    def init(self) -> None:
        self.socket_dir.mkdir()
        pwfile = self.root / "pwfile"
        pwfile.write_text(self.password + "\n")
        if self._run_as is not None:
            entry = pwd.getpwnam(self._run_as)
            for path in (self.root, self.socket_dir, pwfile):
                os.chown(path, entry.pw_uid, entry.pw_gid)
        try:
            self._tool(
                "initdb",
                "-D",
                str(self.data),
                "-U",
                SUPERUSER,
                "--pwfile",
                str(pwfile),
                "--auth-host=scram-sha-256",
                "--auth-local=scram-sha-256",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            )
        finally:
            pwfile.unlink()

    def start(self) -> None:
        options = " ".join(
            [f"-p {self.port}", f"-k {self.socket_dir}"]
            + [f"-c {key}={value}" for key, value in self.settings.items()]
        )
        self._tool(
            "pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o", options, "-w", "start"
        )
        self.running = True

    def stop(self, mode: str = "fast") -> None:
        self._tool("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop")
        self.running = False

    def restart(self) -> None:
        self.stop()
        self.start()

    def cleanup(self) -> None:
        if self.running:
            with contextlib.suppress(PgServerError):
                self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)

    # --- helpers ------------------------------------------------------------

    def create_database(self) -> str:
        """A fresh empty database; returns its name. Copies a template (about
        50 ms idle, over a second on a loaded machine): prefer ``create_schema``."""
        self._databases += 1
        name = f"prism_test_{self._databases}"
        self.sql(f"CREATE DATABASE {name}")
        return name

    def create_schema(self) -> str:
        """A fresh empty schema in the ``postgres`` database; returns its name.
        Use it with ``dsn(schema=...)``: tables created through that DSN land
        there, so each test sees an empty database for the price of a catalog row."""
        self._databases += 1
        name = f"prism_test_{self._databases}"
        self.sql(f"CREATE SCHEMA {name}")
        return name

    def sql(self, statement: str, dbname: str = "postgres") -> list[tuple[object, ...]]:
        """Run one statement as the superuser (psycopg, autocommit)."""
        import psycopg

        with psycopg.connect(self.dsn(dbname), autocommit=True) as conn:
            cur = conn.execute(statement.encode())
            return list(cur.fetchall()) if cur.description else []

    def _tool(self, name: str, *args: str) -> None:
        command = [str(self.bindir / name), *args]
        if self._run_as is not None:
            command = ["runuser", "-u", self._run_as, "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
        if done.returncode != 0:
            log = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
            raise PgServerError(
                f"{name} failed ({done.returncode}): {done.stderr.strip()[-2000:]}\n{log}"
            )


@contextlib.contextmanager
def running_server(settings: dict[str, str] | None = None) -> Iterator[PgServer]:
    server = PgServer(settings=settings)
    try:
        server.init()
        server.start()
        yield server
    finally:
        server.cleanup()
