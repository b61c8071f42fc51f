"""Real workers, a private Redis and row locks, for the crash and outage tests.

``Workers`` starts worker processes on the test database and a Redis; ``RowLock`` holds
PostgreSQL row locks from a connection of its own, so a worker can be stopped at an exact
step (its claim or its store waits on the lock) and then SIGKILLed there; ``PrivateRedis`` is
a redis-server of the test's own on a free port, restarted without persistence (the machine's
shared Redis is never touched); ``PrivatePostgres`` a PostgreSQL server of its own, stopped and
started again (the machine's PostgreSQL is never touched either).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
# Thresholds short enough for a test, long enough for a loaded two-core machine.
FAST_RECOVERY = {
    "EVALSITE_RECOVERY_SECONDS": "3",
    "EVALSITE_JUDGE_STALE_SECONDS": "3",
    "EVALSITE_SIMULATION_LEASE_SECONDS": "3",
    "EVALSITE_RATE_LEASE_SECONDS": "3",
}


def wait_for(predicate: Callable[[], Any], timeout: float, every: float = 0.05) -> bool:
    """Poll ``predicate`` until it is true or ``timeout`` seconds have passed."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(every)
    return bool(predicate())


def database_url() -> str:
    """Return the test database's URL for a worker process (credentials included)."""
    from tests.support.services import worker_database_url

    return worker_database_url()


class Workers:
    """Worker processes (threads pool) against the test database and ``redis_url``."""

    def __init__(self, tmp_path: Path, redis_url: str, name: str, **env: str) -> None:
        self.env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "evalsite.settings.integration",
            "DATABASE_URL": database_url(),
            "REDIS_URL": redis_url,
            "EVALSITE_VAR_DIR": str(tmp_path),
            **FAST_RECOVERY,
            **env,
        }
        self.redis_url = redis_url
        self.tmp_path = tmp_path
        self.name = name
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self, *, concurrency: int = 3, wait: bool = True) -> subprocess.Popen[bytes]:
        """Start one more worker; with ``wait``, return once it answers a ping."""
        n = len(self.procs)
        log = open(self.tmp_path / f"{self.name}{n}.log", "w")  # noqa: SIM115 (kept open for the child)
        hostname = f"{self.name}{n}-{os.getpid()}"
        proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "evalsite", "worker", "--pool=threads",
             f"--concurrency={concurrency}", "--loglevel=INFO", "--without-mingle", "--without-gossip",
             f"--hostname={hostname}@%h"],
            cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT,
        )
        self.procs.append(proc)
        if wait and not wait_for(lambda: self._answers(hostname) or proc.poll() is not None, 90, every=0.3):
            pytest.fail(f"worker {n} did not start:\n{self.logs()}")
        if proc.poll() is not None:
            pytest.fail(f"worker {n} exited:\n{self.logs()}")
        return proc

    def _answers(self, hostname: str) -> bool:
        from evalsite.celery import app

        with app.connection_for_write(self.redis_url) as conn:
            replies = app.control.ping(timeout=0.5, connection=conn) or []
        return any(hostname in key for reply in replies for key in reply)

    def kill(self, proc: subprocess.Popen[bytes]) -> None:
        """SIGKILL a worker: no handler, no acknowledgement, no clean-up runs."""
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)

    def logs(self, tail: int = 4000) -> str:
        return "\n".join(
            f"--- {p.name}\n" + p.read_text(errors="replace")[-tail:] for p in sorted(self.tmp_path.glob(f"{self.name}*.log"))
        )

    def stop_all(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)


class RowLock:
    """Row locks held by a PostgreSQL connection of the test's own (not Django's)."""

    def __init__(self) -> None:
        import psycopg
        from django.db import connection

        db = connection.settings_dict
        self.dbname = db["NAME"]
        from tests.support.services import worker_database_url

        self.conn = psycopg.connect(worker_database_url(), autocommit=False)

    def hold(self, table: str, where: str, params: tuple[Any, ...] = ()) -> int:
        """Lock the rows of ``table`` matching ``where`` until ``release``; return how many."""
        with self.conn.cursor() as cur:
            cur.execute(f"SELECT id FROM {table} WHERE {where} FOR UPDATE", params)  # noqa: S608 (test-only SQL)
            return len(cur.fetchall())

    def waiters(self) -> int:
        """Return how many other sessions wait on a lock in the test database."""
        with self.conn.cursor() as cur:
            # Statistics views are a snapshot per transaction: this one holds the locks open.
            cur.execute("SELECT pg_stat_clear_snapshot()")
            cur.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()",
                (self.dbname,),
            )
            return int(cur.fetchone()[0])

    def release(self) -> None:
        self.conn.rollback()

    def close(self) -> None:
        self.conn.rollback()
        self.conn.close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PrivateRedis:
    """A redis-server of this test's own, on a free port, with no persistence at all."""

    def __init__(self, tmp_path: Path) -> None:
        self.binary = shutil.which("redis-server")
        if self.binary is None:
            pytest.skip("redis-server is not installed")
        self.port = free_port()
        self.dir = tmp_path / "redis"
        self.dir.mkdir(exist_ok=True)
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [self.binary or "redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", str(self.dir)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        import redis

        client = redis.Redis(port=self.port, socket_connect_timeout=0.5)
        if not wait_for(lambda: _pings(client), 20, every=0.1):
            pytest.fail("the private redis-server did not start")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()  # like a crash: nothing is saved (there is nothing to save to)
            self.proc.wait(timeout=10)
        self.proc = None

    def restart(self, down_seconds: float = 0.0) -> None:
        self.stop()
        time.sleep(down_seconds)
        self.start()


def _postgres_bin() -> Path | None:
    """Find initdb and pg_ctl: on the PATH, or Debian's /usr/lib/postgresql/<version>/bin (newest first)."""
    found = shutil.which("pg_ctl")
    if found and shutil.which("initdb"):
        return Path(found).parent
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0)
    for folder in reversed(versions):
        if (folder / "initdb").exists() and (folder / "pg_ctl").exists():
            return folder
    return None


class PrivatePostgres:
    """A PostgreSQL server of this test's own (initdb, trust auth, no fsync), on 127.0.0.1 at a free port.

    PostgreSQL refuses to run as root: as root, its files belong to the ``postgres`` account and
    its commands run as that account (``runuser``); the folder is then outside pytest's tmp_path,
    which only root may enter, and removed by ``remove``.
    """

    def __init__(self) -> None:
        folder = _postgres_bin()
        if folder is None:
            pytest.skip("PostgreSQL's server programs (initdb, pg_ctl) are not installed")
        self.bin = folder
        self.port = free_port()
        self.dir = Path(tempfile.mkdtemp(prefix="evalsite-pg-"))
        self.as_postgres: list[str] = []
        if os.geteuid() == 0:
            import pwd

            try:
                account = pwd.getpwnam("postgres")
            except KeyError:
                pytest.skip("running as root, and there is no postgres account to run PostgreSQL as")
            os.chown(self.dir, account.pw_uid, account.pw_gid)
            self.as_postgres = ["runuser", "-u", "postgres", "--"]
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync")

    @property
    def data(self) -> Path:
        return self.dir / "data"

    def url(self, name: str = "postgres") -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{name}"

    def _run(self, program: str, *args: str) -> None:
        result = subprocess.run([*self.as_postgres, str(self.bin / program), *args], capture_output=True, text=True, timeout=120)
        if result.returncode != 0:
            pytest.fail(f"{program} failed: {result.stdout}{result.stderr}{self.log()}")

    def log(self) -> str:
        path = self.dir / "server.log"
        return path.read_text(errors="replace")[-4000:] if path.exists() else ""

    def start(self) -> None:
        """Start the server and wait until it accepts connections (on TCP only, not the machine's socket folder)."""
        options = f"-p {self.port} -h 127.0.0.1 -k {self.dir} -c fsync=off -c full_page_writes=off"
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.dir / "server.log"), "-o", options, "-w", "-t", "60", "start")

    def stop(self) -> None:
        """Stop it as an administrator would ("fast": open connections are ended); connections are then refused."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "-t", "60", "stop")

    def create_database(self, name: str) -> None:
        import psycopg

        with psycopg.connect(self.url().replace("postgres://", "postgresql://"), autocommit=True, connect_timeout=10) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')

    def remove(self) -> None:
        """Stop the server if it runs and delete its files."""
        if (self.data / "postmaster.pid").exists():
            subprocess.run([*self.as_postgres, str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop"],
                           capture_output=True, timeout=120)
        shutil.rmtree(self.dir, ignore_errors=True)


def _pings(client: Any) -> bool:
    try:
        return bool(client.ping())
    except Exception:
        return False


class Gate:
    """A scripted reply that waits until the test opens the gate: calls held in flight at will.

    The first ``free`` calls pass at once: a worker's first call to an endpoint goes alone
    (it builds the HTTP client the others share), so holding it would hold them all.
    """

    def __init__(self, reply: Any, *, free: int = 1) -> None:
        self.opened = threading.Event()
        self.reply = reply
        self.free = free
        self.held = 0  # calls waiting at the gate now (a call passing freely is not held)
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Any:
        with self._lock:
            passing = self.free > 0
            self.free -= 1
            if not passing:
                self.held += 1
        if not passing:
            self.opened.wait(180)
            with self._lock:
                self.held -= 1
        return self.reply(body) if callable(self.reply) else self.reply

    def open(self) -> None:
        self.opened.set()
