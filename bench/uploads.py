"""Benchmark the memory a server needs to refuse oversized and malicious uploads.

Each workload starts a fresh server process (``manage.py runserver --noreload``, as ``make
run`` does; ``--server gunicorn`` for the production server), logs in, sends one upload over
a real socket, streaming the body from disk, and reads the server's peak resident memory
(VmHWM in /proc) afterwards. Printed per workload:

    RESULT workload=<name> status=<http> peak_rss_mb=<server peak> idle_rss_mb=<after warm-up>
           seconds=<request time> response_kb=<size of the answer>

Workloads (the files are generated in a temporary folder, nothing is kept):
- ``oversized_jsonl_120mb``: a 120 MB JSONL conversation import (limit 50 MB).
- ``zip_bomb_5x200mb``: a ~1 MB zip whose five members unpack to 200 MB each.
- ``ratings_1m_rows_dry_run``: a 1,000,000-row ratings CSV (about 30 MB), dry run, default
  row limit (500,000).
- ``ratings_1m_rows_all_parsed``: the same file with the row limit raised to 2,000,000, so
  every row is parsed and every row is a problem (the worst case the problem cap is for).

Run: .venv/bin/python bench/uploads.py [--server runserver|gunicorn] [--only NAME]
(about two minutes on 2 cores; no network beyond 127.0.0.1, no services). Figures depend on
the machine and on what else runs: compare them with each other and over time.
"""

from __future__ import annotations

import argparse
import http.client
import http.cookies
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PASSWORD = "bench-Passw0rd-uploads"
MB = 1024 * 1024


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_mb(pid: int, field: str) -> float:
    text = Path(f"/proc/{pid}/status").read_text()
    match = re.search(rf"^{field}:\s+(\d+) kB", text, re.MULTILINE)
    return int(match.group(1)) / 1024 if match else float("nan")


def manage(env: dict[str, str], *args: str) -> str:
    result = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        raise SystemExit(result.stdout + result.stderr)
    return result.stdout


SETUP = f"""
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from annotation.studies.services import study_create
from corpus.instruments.services import builtin_instruments_load
from tests.factories import ConversationFactory
User = get_user_model()
def user(name, role):
    u = User.objects.create_user(name, password={PASSWORD!r})
    u.groups.add(Group.objects.get_or_create(name=role)[0])
    return u
coordinator = user("bench-coord", "coordinator")
user("bench-researcher", "researcher")
raters = [user(f"bench-rater{{i}}", "clinician") for i in range(3)]
amhart, section = builtin_instruments_load()
conversations = [ConversationFactory() for _ in range(10)]
study = study_create(name="Bench", instrument=amhart, section=section, conversation_ids=[c.pk for c in conversations],
                     created_by=coordinator, coordinators=[coordinator], raters=[(r, "clinician") for r in raters])
print("STUDY", study.pk)
"""


def make_jsonl(path: Path, size: int) -> None:
    line = ('{"id": "c%d", "messages": [{"role": "user", "content": "' + "x" * 2000 + '"}]}\n')
    with path.open("w") as fh:
        written, i = 0, 0
        while written < size:
            chunk = line % i
            fh.write(chunk)
            written += len(chunk)
            i += 1


def make_bomb(path: Path) -> None:
    zeros = b"\0" * MB
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        for n in range(5):
            with archive.open(f"transcripts/part{n}.txt", "w", force_zip64=True) as member:
                for _ in range(200):
                    member.write(zeros)


def make_ratings(path: Path, rows: int) -> None:
    with path.open("w") as fh:
        fh.write("unit,rater,item,label\n")
        for i in range(rows):
            fh.write(f"C-X{i:07d},bench-rater{i % 3},amhart_{i % 14 + 1:02d},yes\n")


class Server:
    def __init__(self, kind: str, env: dict[str, str]):
        self.port = free_port()
        if kind == "gunicorn":
            cmd = [sys.executable, "-m", "gunicorn", "evalsite.wsgi", "-b", f"127.0.0.1:{self.port}", "-w", "1", "--timeout", "300"]
        else:
            cmd = [sys.executable, "manage.py", "runserver", f"127.0.0.1:{self.port}", "--noreload"]
        self.log = tempfile.TemporaryFile()
        self.process = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=self.log, stderr=subprocess.STDOUT)
        self.kind = kind
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.2)
        raise SystemExit(f"{kind} did not start")

    @property
    def pid(self) -> int:
        """The process that handles requests (gunicorn: its one worker)."""
        if self.kind != "gunicorn":
            return self.process.pid
        children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children").read_text().split()
        return int(children[0])

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


class Session:
    def __init__(self, port: int):
        self.port = port
        self.cookies: dict[str, str] = {}

    def _headers(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        headers = {"Host": f"127.0.0.1:{self.port}"}
        if self.cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        return {**headers, **(extra or {})}

    def _keep(self, response: http.client.HTTPResponse) -> None:
        for header in response.headers.get_all("Set-Cookie") or []:
            cookie = http.cookies.SimpleCookie(header)
            for key, morsel in cookie.items():
                self.cookies[key] = morsel.value

    def get(self, path: str) -> tuple[int, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=300)
        conn.request("GET", path, headers=self._headers())
        response = conn.getresponse()
        body = response.read()
        self._keep(response)
        return response.status, body

    def login(self, username: str) -> None:
        _, page = self.get("/accounts/login/")
        token = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1).decode()
        body = f"csrfmiddlewaretoken={token}&username={username}&password={PASSWORD}".encode()
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        conn.request("POST", "/accounts/login/", body=body, headers=self._headers({
            "Content-Type": "application/x-www-form-urlencoded", "Referer": f"http://127.0.0.1:{self.port}/accounts/login/",
        }))
        response = conn.getresponse()
        response.read()
        self._keep(response)
        if response.status != 302:
            raise SystemExit(f"login as {username} failed: {response.status}")

    def upload(self, path: str, file: Path, fields: dict[str, str]) -> tuple[int, int]:
        """POST ``file`` as multipart, streamed from disk; return (status, response bytes)."""
        _, page = self.get(path)
        token = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1).decode()
        boundary = "----evalsite-bench-boundary"
        parts = [f'--{boundary}\r\nContent-Disposition: form-data; name="csrfmiddlewaretoken"\r\n\r\n{token}\r\n']
        parts += [f'--{boundary}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n' for k, v in fields.items()]
        head = "".join(parts) + (f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{file.name}"\r\n'
                                 "Content-Type: application/octet-stream\r\n\r\n")
        tail = f"\r\n--{boundary}--\r\n".encode()
        length = len(head.encode()) + file.stat().st_size + len(tail)

        def body() -> Iterator[bytes]:
            yield head.encode()
            with file.open("rb") as fh:
                while chunk := fh.read(256 * 1024):
                    yield chunk
            yield tail

        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
        conn.putrequest("POST", path, skip_host=True)
        for key, value in self._headers({
            "Content-Type": f"multipart/form-data; boundary={boundary}", "Content-Length": str(length),
            "Referer": f"http://127.0.0.1:{self.port}{path}",
        }).items():
            conn.putheader(key, value)
        conn.endheaders()
        try:
            for chunk in body():
                conn.send(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server answered and closed before the whole body was sent
        response = conn.getresponse()
        return response.status, len(response.read())


def run(name: str, server_kind: str, env: dict[str, str], user: str, path: str, file: Path, fields: dict[str, str]) -> None:
    server = Server(server_kind, env)
    try:
        session = Session(server.port)
        session.login(user)
        session.get(path)  # warm-up: imports, templates, the database connection
        idle = rss_mb(server.pid, "VmRSS")
        started = time.perf_counter()
        status, size = session.upload(path, file, fields)
        seconds = time.perf_counter() - started
        peak = rss_mb(server.pid, "VmHWM")
        print(f"RESULT workload={name} server={server_kind} status={status} peak_rss_mb={peak:.0f} "
              f"idle_rss_mb={idle:.0f} seconds={seconds:.1f} response_kb={size / 1024:.0f} upload_mb={file.stat().st_size / MB:.0f}",
              flush=True)
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--server", choices=["runserver", "gunicorn"], default="runserver")
    parser.add_argument("--only", default="", help="run only the workloads whose name contains this")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="evalsite-bench-uploads-"))
    try:
        env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE", "EVALSITE_DEBUG")}
        env.update(EVALSITE_VAR_DIR=str(tmp / "var"), DJANGO_LOG_LEVEL="ERROR", LITELLM_LOCAL_MODEL_COST_MAP="True", HF_HUB_OFFLINE="1",
                   EVALSITE_LOGIN_FAILURE_LIMIT="1000")
        manage(env, "migrate", "--noinput", "-v0")
        study = re.search(r"STUDY (\d+)", manage(env, "shell", "-c", SETUP)).group(1)
        files = tmp / "files"
        files.mkdir()
        workloads = [
            ("oversized_jsonl_120mb", "bench-researcher", "/corpus/import/conversations/", files / "big.jsonl",
             lambda p: make_jsonl(p, 120 * MB), {"format": "jsonl"}, {}),
            ("zip_bomb_5x200mb", "bench-researcher", "/corpus/import/conversations/", files / "bomb.zip",
             make_bomb, {"format": "auto"}, {}),
            ("ratings_1m_rows_dry_run", "bench-coord", f"/studies/{study}/import-ratings/", files / "ratings.csv",
             lambda p: make_ratings(p, 1_000_000), {"dry_run": "on"}, {}),
            ("ratings_1m_rows_all_parsed", "bench-coord", f"/studies/{study}/import-ratings/", files / "ratings.csv",
             lambda p: make_ratings(p, 1_000_000), {"dry_run": "on"}, {"EVALSITE_MAX_IMPORT_ROWS": "2000000"}),
        ]
        for name, user, path, file, make, fields, extra_env in workloads:
            if args.only and args.only not in name:
                continue
            if not file.exists():
                make(file)
            run(name, args.server, {**env, **extra_env}, user, path, file, fields)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
