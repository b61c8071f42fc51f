"""Unit-test settings: SQLite in memory, eager Celery, fast hashing."""

from __future__ import annotations

import atexit
import shutil
import tempfile
from pathlib import Path

from evalsite.settings.base import *  # noqa: F403

DEBUG = False
SECRET_KEY = "test-only-secret-key-not-used-anywhere-else-0123456789"
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}}
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
CELERY_TASK_ALWAYS_EAGER = True
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_BROKER_URL = "memory://"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
# Plain names, found where they are (no collectstatic before a test run); the hashed, compressed
# storage is collected and served for real in tests/core/test_static_files.py.
WHITENOISE_USE_FINDERS = True
WHITENOISE_KEEP_ONLY_HASHED_FILES = False
LOGGING = {"version": 1, "disable_existing_loggers": False}
# Tests script the fake LLM's replies call by call: the launch check's extra call would take one.
# The launch-check tests turn it on for themselves.
EVALSITE_PREFLIGHT = False
# The tests' local model servers (tests/support/fake_llm.py) listen on random loopback ports:
# allowed here only. tests/security proves this machine's ports are refused without it.
EVALSITE_API_HOSTS_EXTRA = ["127.0.0.1:*", "localhost:*", "[::1]:*"]
# A bundle's chart images start a Chromium (seconds): the bundle tests that are about them turn
# them on (tests/reports/test_bundle_images.py); the others export bundles without, which say so.
EVALSITE_BUNDLE_IMAGES = False
# Built bundles go to a folder of this test process, never into the checkout's var/.
EVALSITE_BUNDLE_DIR = Path(tempfile.mkdtemp(prefix="evalsite-test-bundles-"))
atexit.register(shutil.rmtree, EVALSITE_BUNDLE_DIR, True)
