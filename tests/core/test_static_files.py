"""Static files as the ecosystem serves them, in every mode (issue 32).

The embedded mode (`manage.py serve`, what `make run` starts) collects the static files at start
and serves them as production does: hashed names, cached for a year and immutable, precompressed
with brotli and gzip. The storage keeps the compressed copies of files whose hashed name did not
change, and redoes a copy that was cut short.
"""

from __future__ import annotations

import gzip
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import brotli
import pytest
from django.core.management import call_command
from django.test import override_settings

ROOT = Path(__file__).resolve().parents[2]
STATIC_URL = re.compile(r'(?:href|src)="(/static/[^"?#]+)"')
HASHED = re.compile(r"\.[0-9a-f]{12}\.[a-z0-9]+$")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str, encoding: str | None = None) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, headers={"Accept-Encoding": encoding} if encoding else {})
    with urllib.request.urlopen(request, timeout=20) as response:  # noqa: S310 - a loopback URL the test built
        return response.status, {k.lower(): v for k, v in response.headers.items()}, response.read()


def test_the_embedded_server_serves_hashed_precompressed_static_files_cached_for_a_year(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in (
        "DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE", "EVALSITE_DEBUG", "DJANGO_DEBUG", "DJANGO_SECRET_KEY",
        "DJANGO_STATIC_ROOT",
    )}
    env["EVALSITE_VAR_DIR"] = str(tmp_path / "var")
    subprocess.run([sys.executable, str(ROOT / "manage.py"), "migrate", "--noinput", "-v0"], cwd=ROOT, env=env,
                   check=True, timeout=180)
    port = _free_port()
    log = tmp_path / "serve.log"
    serve = subprocess.Popen([sys.executable, "-u", str(ROOT / "manage.py"), "serve", f"127.0.0.1:{port}", "--no-worker"],
                             cwd=tmp_path, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline, page = time.monotonic() + 150, None
        while page is None and time.monotonic() < deadline and serve.poll() is None:
            try:
                page = _get(f"http://127.0.0.1:{port}/accounts/login/")[2].decode()
            except OSError:
                time.sleep(0.3)
        assert page is not None, log.read_text()[-3000:]
        assert "Static files collected" in log.read_text()
        urls = sorted(set(STATIC_URL.findall(page)))
        assert any(u.endswith(".css") for u in urls) and any(u.endswith(".js") for u in urls), urls
        for url in urls:
            assert HASHED.search(url), f"{url} has no content hash in its name"
            status, headers, plain = _get(f"http://127.0.0.1:{port}{url}")
            assert status == 200 and "content-encoding" not in headers
            cache = headers["cache-control"]
            assert "max-age=315360000" in cache and "immutable" in cache, (url, cache)
            status, headers, body = _get(f"http://127.0.0.1:{port}{url}", "br")
            if len(plain) > 1024:  # a few hundred bytes are not worth compressing
                assert headers.get("content-encoding") == "br", (url, headers)
                assert brotli.decompress(body) == plain
            status, headers, body = _get(f"http://127.0.0.1:{port}{url}", "gzip")
            if len(plain) > 1024:
                assert headers.get("content-encoding") == "gzip", (url, headers)
                assert gzip.decompress(body) == plain
    finally:
        serve.terminate()
        try:
            serve.wait(timeout=30)
        except subprocess.TimeoutExpired:
            serve.kill()
            serve.wait()
    # The collected files live under var/ like everything else the app writes.
    assert (tmp_path / "var" / "staticfiles" / "staticfiles.json").is_file()


@pytest.fixture
def small_static(tmp_path):
    source = tmp_path / "source"
    (source / "app").mkdir(parents=True)
    (source / "app" / "big.js").write_text("// evalsite\n" + "var answer = 42;\n" * 5000)
    (source / "app" / "page.css").write_text("body { color: #123; }\n" * 400)
    root = tmp_path / "root"
    with override_settings(
        STATICFILES_DIRS=[source], STATIC_ROOT=root,
        STATICFILES_FINDERS=["django.contrib.staticfiles.finders.FileSystemFinder"],
        STORAGES={"default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
                  "staticfiles": {"BACKEND": "core.static.StaticStorage"}},
        WHITENOISE_KEEP_ONLY_HASHED_FILES=True,
    ):
        yield source, root


def _collected(root: Path) -> dict[str, Path]:
    return {p.name: p for p in root.rglob("*") if p.is_file()}


def test_a_second_collect_keeps_the_compressed_copies_and_redoes_one_cut_short(small_static):
    source, root = small_static
    call_command("collectstatic", interactive=False, verbosity=0)
    files = _collected(root)
    js = next(name for name in files if HASHED.search(name) and name.endswith(".js"))
    assert {js + ".br", js + ".gz"} <= set(files)
    assert not (root / "app" / "big.js").exists()  # only hashed names are kept
    stamps = {name: files[name].stat().st_mtime_ns for name in (js + ".br", js + ".gz")}
    time.sleep(0.05)
    call_command("collectstatic", interactive=False, verbosity=0)
    assert {name: files[name].stat().st_mtime_ns for name in stamps} == stamps  # not compressed again

    # A copy cut short (a collect killed while writing it) is written again, whole.
    whole = files[js + ".br"].read_bytes()
    files[js + ".br"].write_bytes(whole[: len(whole) // 2])
    call_command("collectstatic", interactive=False, verbosity=0)
    assert brotli.decompress(files[js + ".br"].read_bytes()) == files[js].read_bytes()

    # A changed file gets a new hashed name and its own compressed copies.
    (source / "app" / "big.js").write_text("// evalsite, changed\n" + "var answer = 43;\n" * 5000)
    call_command("collectstatic", interactive=False, verbosity=0)
    names = [n for n in _collected(root) if HASHED.search(n) and n.startswith("big.") and n.endswith(".js")]
    assert len(names) == 2
    for name in names:
        path = next(root.rglob(name))
        assert gzip.decompress(Path(str(path) + ".gz").read_bytes()) == path.read_bytes()
