"""Settings read from environment variables, with safe defaults for the embedded mode.

With no variables set the app runs on SQLite (file under ``var/``) and a Celery worker that
talks through a filesystem broker, so nothing external is needed. ``DATABASE_URL`` and
``REDIS_URL`` switch to PostgreSQL and Redis. See ``.env.example`` for every variable.
"""

from __future__ import annotations

import os
import secrets
import tempfile
from datetime import timedelta
from pathlib import Path

import dj_database_url

BASE_DIR = Path(__file__).resolve().parent.parent.parent
VAR_DIR = Path(os.environ.get("EVALSITE_VAR_DIR", BASE_DIR / "var"))


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_list(name: str, default: list[str]) -> list[str]:
    value = os.environ.get(name)
    if not value:
        return default
    return [part.strip() for part in value.split(",") if part.strip()]


# Everything the app writes (the SQLite database and its WAL and shared-memory files, the secret
# key, the broker's messages, uploads, caches under var/) is private to the account that runs it:
# files 0600, folders 0700. Set here because every process (web, worker, manage.py) reads the
# settings before it opens a file. A var/ folder made by an older version is closed up too.
os.umask(0o077)


def private_folder(path: Path) -> None:
    """Create ``path`` (0700), or take group and world access away from an existing one of ours."""
    path.mkdir(parents=True, exist_ok=True)
    try:
        if path.stat().st_uid == os.getuid() and path.stat().st_mode & 0o077:
            path.chmod(0o700)
            for child in path.iterdir():  # the database and key files of an older version
                if child.is_file() and child.stat().st_uid == os.getuid():
                    child.chmod(0o600)
    except OSError:
        pass  # a folder we cannot change: the umask still covers every new file


# litellm reads its cost map from the network at import unless told otherwise; the app must
# work offline, so these default on before anything imports litellm.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

def secret_key_from_var(var_dir: Path) -> str:
    """Return the key kept in ``var_dir/secret_key``, made once (random, readable by the owner only).

    Web server and worker may start together: the file appears whole or not at all (written
    aside, then hard-linked into place), and whoever loses the race reads the winner's key.
    """
    path = var_dir / "secret_key"
    if path.exists():
        return path.read_text(encoding="utf-8").strip()
    private_folder(var_dir)
    fd, tmp = tempfile.mkstemp(dir=var_dir, prefix=".secret_key.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(secrets.token_urlsafe(50))
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass
    finally:
        os.unlink(tmp)
    return path.read_text(encoding="utf-8").strip()


# Debug pages list the URL configuration and local variables (a rater's free-text answers):
# off unless asked for, also for `make run`.
DEBUG = env_bool("EVALSITE_DEBUG", False)
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY") or secret_key_from_var(VAR_DIR)
# The demo accounts have known passwords: allowed in this embedded mode, never in production.
EVALSITE_DEMO_ALLOWED = env_bool("EVALSITE_DEMO_ALLOWED", True)
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "knox",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "axes",
    # The layers, each importing only those above it in this list (docs/architecture.md).
    "core",
    "corpus",
    "simulation",
    "judging",
    "annotation",
    "reports",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # The database does not answer: 503 with what to do, never a 500 (core.database_down).
    "core.middleware.DatabaseUnavailableMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # Before any view hook reads the body (CSRF's process_view does): see core.middleware.
    "core.middleware.UploadLimitMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    # A task queue that does not answer: 503 with what to do (core.enqueue), never a 500.
    "core.middleware.ServiceUnavailableMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "core.middleware.LoginRequiredEverywhereMiddleware",
    # An account whose password someone else set chooses its own first (core.first_login).
    "core.first_login.FirstLoginMiddleware",
    # Last, as django-axes asks: turns a locked-out login into the lockout page (429).
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "evalsite.urls"
WSGI_APPLICATION = "evalsite.wsgi.application"
ASGI_APPLICATION = "evalsite.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "core.context_processors.navigation",
            ],
        },
    },
]

_default_sqlite = f"sqlite:///{VAR_DIR / 'evalsite.sqlite3'}"
if not os.environ.get("DATABASE_URL") or VAR_DIR.exists():
    private_folder(VAR_DIR)
DATABASES = {"default": dj_database_url.parse(os.environ.get("DATABASE_URL") or _default_sqlite)}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets the web process read while the worker writes; IMMEDIATE avoids the
    # "database is locked" upgrade deadlock between two writers.
    DATABASES["default"]["OPTIONS"] = {
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
    }
else:
    DATABASES["default"]["CONN_MAX_AGE"] = int(os.environ.get("DATABASE_CONN_MAX_AGE", "60"))
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# Login throttling (django-axes, core.login_throttle): failures counted per username and client
# address on every login path; a locked pair waits, or an administrator unlocks it.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = int(os.environ.get("EVALSITE_LOGIN_FAILURE_LIMIT", "5"))
AXES_COOLOFF_TIME = timedelta(minutes=float(os.environ.get("EVALSITE_LOGIN_LOCKOUT_MINUTES", "15")))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "core.login_throttle.lockout_response"
AXES_CLIENT_IP_CALLABLE = "core.login_throttle.client_ip"
EVALSITE_TRUSTED_PROXY_COUNT = int(os.environ.get("EVALSITE_TRUSTED_PROXY_COUNT", "0"))
AXES_VERBOSE = False
# How long a password-reset link works (seconds; Django's default: three days).
PASSWORD_RESET_TIMEOUT = int(os.environ.get("EVALSITE_PASSWORD_RESET_SECONDS", str(3 * 24 * 3600)))
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = os.environ.get("DJANGO_TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(os.environ.get("DJANGO_STATIC_ROOT", VAR_DIR / "staticfiles"))
try:  # WhiteNoise warns at every start when the folder is missing (empty until collectstatic)
    STATIC_ROOT.mkdir(parents=True, exist_ok=True)
except OSError:
    pass
STATICFILES_DIRS = [BASE_DIR / "static"]
STATICFILES_FINDERS = [
    "django.contrib.staticfiles.finders.FileSystemFinder",
    "django.contrib.staticfiles.finders.AppDirectoriesFinder",
]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    # Every mode serves static files as production does: hashed names (so they are cached for a
    # year, immutable), each precompressed (gzip and brotli) by collectstatic. The embedded mode's
    # `manage.py serve` (make run) collects them before it starts; production runs collectstatic
    # at deploy (README). Unit tests keep the plain storage; tests/core/test_static_files.py
    # collects and serves the real thing.
    "staticfiles": {"BACKEND": "core.static.StaticStorage"},
}
# Only the hashed copies are kept and compressed (the plain names are what templates never use).
WHITENOISE_KEEP_ONLY_HASHED_FILES = True
# With debug on, a file edited since the last collect is still found (by its plain name).
WHITENOISE_USE_FINDERS = DEBUG
WHITENOISE_AUTOREFRESH = DEBUG
MEDIA_ROOT = VAR_DIR / "media"

# Uploads (core.uploads): an upload above EVALSITE_MAX_UPLOAD_BYTES is answered 413 while it
# streams in (UploadLimitMiddleware, LimitedUploadHandler), zips are checked member by member,
# and one file holds at most EVALSITE_MAX_IMPORT_ROWS lines. Importers read an accepted file
# into memory to validate it whole before writing anything.
EVALSITE_MAX_UPLOAD_BYTES = int(os.environ.get("EVALSITE_MAX_UPLOAD_BYTES", str(50 * 1024 * 1024)))
EVALSITE_MAX_UNZIPPED_BYTES = int(os.environ.get("EVALSITE_MAX_UNZIPPED_BYTES", str(100 * 1024 * 1024)))
EVALSITE_MAX_ZIP_RATIO = float(os.environ.get("EVALSITE_MAX_ZIP_RATIO", "100"))
EVALSITE_MAX_IMPORT_ROWS = int(os.environ.get("EVALSITE_MAX_IMPORT_ROWS", "500000"))
# A file found valid by a dry run is kept (in the database) this long for "Import now".
EVALSITE_STAGED_UPLOAD_MINUTES = int(os.environ.get("EVALSITE_STAGED_UPLOAD_MINUTES", "60"))
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024  # form fields and JSON bodies (files are apart)
FILE_UPLOAD_MAX_MEMORY_SIZE = 2621440  # larger files go to a temporary file, not memory
FILE_UPLOAD_HANDLERS = [
    "core.uploads.LimitedUploadHandler",
    "django.core.files.uploadhandler.MemoryFileUploadHandler",
    "django.core.files.uploadhandler.TemporaryFileUploadHandler",
]

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        # Hashed, expiring tokens (core.api_tokens); clients send "Authorization: Token <token>".
        # (Accepted only for the roles that use the API: core.api_tokens.RoleTokenAuthentication.)
        "core.api_tokens.RoleTokenAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # JSON bodies within core.bounded's nesting depth (a 400, never a RecursionError's 500).
    "DEFAULT_PARSER_CLASSES": [
        "core.parsers.BoundedJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    # JSON only: DRF's browsable HTML pages failed axe (no lang, an unnamed button, low contrast);
    # people read the API reference page (/api/docs/), built from the same schema.
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.LimitOffsetPagination",
    "PAGE_SIZE": 100,
    "EXCEPTION_HANDLER": "core.api_errors.exception_handler",
}
REST_KNOX = {
    "TOKEN_TTL": timedelta(days=float(os.environ.get("EVALSITE_API_TOKEN_DAYS", "30"))),
    "AUTH_HEADER_PREFIX": "Token",
    "AUTO_REFRESH": False,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "evalsite API",
    "DESCRIPTION": "Simulate, judge and rate chatbot conversations about mental-health distress.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated", "core.permissions.UsesTheApi"],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "ENUM_NAME_OVERRIDES": {
        "InstrumentKindEnum": "corpus.models.InstrumentKind",
        "TargetKindEnum": "corpus.models.Target.Kind",
        "SimulationBatchStatusEnum": "simulation.models.SimulationBatch.Status",
        "SimulationRunStatusEnum": "simulation.models.SimulationRun.Status",
        "SimulationPromptKindEnum": "simulation.models.PromptTemplate.Kind",
    },
}

# Celery: Redis when REDIS_URL is set, otherwise a filesystem broker under var/ so a real
# worker process runs with no external service. Results live on model rows, not in Celery.
REDIS_URL = os.environ.get("REDIS_URL", "")
# The filesystem transport ignores the host; naming one keeps kombu from warning that none was given.
CELERY_BROKER_URL = REDIS_URL or "filesystem://localhost/"
if not REDIS_URL:
    _broker_dir = VAR_DIR / "broker"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker_dir / "queue"),
        "data_folder_out": str(_broker_dir / "queue"),
        "processed_folder": str(_broker_dir / "processed"),
        # Exchange tables: kombu's default is ./control in the working directory (the checkout).
        "control_folder": str(_broker_dir / "control"),
        "store_processed": False,
        # An idle worker looks for new messages this often (kombu's default is 1 s): a short
        # job or a report otherwise waits up to a second before it starts. A look is one
        # directory listing.
        "polling_interval": float(os.environ.get("EVALSITE_BROKER_POLL_SECONDS", "0.1")),
    }
    for _folder in ("queue", "processed", "control"):
        (_broker_dir / _folder).mkdir(parents=True, exist_ok=True)
else:
    # A task whose worker vanished without a word is handed out again by Redis after this
    # many seconds. Work is not lost meanwhile: stalled runs and results are taken back by the
    # next worker to start and by the living workers' checks (leases below), much sooner.
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "visibility_timeout": int(os.environ.get("EVALSITE_BROKER_VISIBILITY_TIMEOUT", "3600")),
        # A broker restart or a dropped link is noticed (TCP keepalive, a PING before reusing an
        # idle connection), not waited on until a read hangs.
        "socket_keepalive": True,
        "health_check_interval": 25,
        "socket_connect_timeout": 10,
        # No retry_on_timeout: a publish that timed out may have reached Redis; sent again, the
        # task would be queued twice.
    }
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
# Celery 5.7's consumer stops for good when the broker restarts while tasks run ("'NoneType'
# object has no attribute 'hostname'"); this one reconnects (evalsite/worker_consumer.py).
CELERY_WORKER_CONSUMER = "evalsite.worker_consumer:Consumer"
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_ALWAYS_EAGER = False
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": os.environ.get("DJANGO_LOG_LEVEL", "INFO")},
    "loggers": {
        # litellm can log request headers at debug level; keep it quiet so keys never reach logs.
        "LiteLLM": {"level": "WARNING"},
        "httpx": {"level": "WARNING"},
        # The chart images' renderer logs each step of every image (about 170 lines a bundle); what
        # failed reaches the bundle's manifest and README in words.
        "kaleido": {"level": "WARNING"},
        "choreographer": {"level": "WARNING"},
        "logistro": {"level": "WARNING"},
    },
}

SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False  # htmx reads the token from the cookie-less meta tag; keep default
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"

# Secrets policy (core.secrets_policy): which environment variables may be sent as API keys and
# to which host:port (core.api_hosts). Empty: the built-in defaults (key names *_API_KEY,
# *_API_TOKEN; the major providers' API hosts on port 443; never this machine's ports, which an
# administrator approves one by one). DJANGO_*, EVALSITE_*, DATABASE_URL, REDIS_URL and
# SECRET_KEY are never sent, whatever these say.
EVALSITE_KEY_ENV_ALLOWED = env_list("EVALSITE_KEY_ENV_ALLOWED", [])
EVALSITE_KEY_ENV_DENIED = env_list("EVALSITE_KEY_ENV_DENIED", [])
EVALSITE_API_HOSTS = env_list("EVALSITE_API_HOSTS", [])
# Entries added to the list above (not an environment variable): the test settings allow the
# loopback ports their local model servers take.
EVALSITE_API_HOSTS_EXTRA: list[str] = []

# The LLM engine (docs/engine.md). A judge result holds a lease while a worker judges it,
# renewed three times per threshold: one not renewed for EVALSITE_JUDGE_STALE_SECONDS lost its
# worker ("stalled") and is taken again, at most EVALSITE_JUDGE_MAX_ATTEMPTS times in all.
# Tasks one worker process holds at once (`--pool threads --concurrency N`): how many
# conversations and judge results its engine keeps in flight. `manage.py serve` uses it.
EVALSITE_WORKER_CONCURRENCY = int(os.environ.get("EVALSITE_WORKER_CONCURRENCY", "32"))
# Units of work (conversations, judge results) one task message carries: the broker's cost per
# task (send, receive, acknowledge) is paid once per group. Crash recovery is per unit.
EVALSITE_TASK_GROUP_SIZE = int(os.environ.get("EVALSITE_TASK_GROUP_SIZE", "16"))
EVALSITE_JUDGE_STALE_SECONDS = float(os.environ.get("EVALSITE_JUDGE_STALE_SECONDS", "90"))
EVALSITE_JUDGE_MAX_ATTEMPTS = int(os.environ.get("EVALSITE_JUDGE_MAX_ATTEMPTS", "3"))
# The sweeper (core.recovery): work queued this long and never claimed (its message was lost:
# a killed worker had received it, Redis restarted without persistence, the broker was down)
# is dispatched again; every worker checks every third of it, and when it starts.
EVALSITE_RECOVERY_SECONDS = float(os.environ.get("EVALSITE_RECOVERY_SECONDS", "60"))
# A provider that stopped answering: its failed work is sent again by itself (core.outages).
EVALSITE_OUTAGE_RETRIES = int(os.environ.get("EVALSITE_OUTAGE_RETRIES", "3"))
EVALSITE_OUTAGE_PROBE_SECONDS = float(os.environ.get("EVALSITE_OUTAGE_PROBE_SECONDS", "30"))
# A rate-limit slot (Redis) is a lease its living process renews: a dead worker's slots are free
# again after this (at once when a worker on its machine sweeps).
EVALSITE_RATE_LEASE_SECONDS = float(os.environ.get("EVALSITE_RATE_LEASE_SECONDS", "30"))
# An outage of PostgreSQL, Redis or the broker is waited out this long (database steps, the rate
# limiter, a sweep's dispatch) before the error stands: it never turns work into failures first.
EVALSITE_OUTAGE_SECONDS = float(os.environ.get("EVALSITE_OUTAGE_SECONDS", "300"))

# A rating page is opened for hours; stale marks after this many hours of no activity.
EVALSITE_STALE_ASSIGNMENT_HOURS = int(os.environ.get("EVALSITE_STALE_ASSIGNMENT_HOURS", "72"))
# Launch checks: before a simulation batch or judge run starts, each model gets one small call.
EVALSITE_PREFLIGHT = os.environ.get("EVALSITE_PREFLIGHT", "1").lower() not in ("0", "false", "no", "off")
EVALSITE_PREFLIGHT_TIMEOUT = float(os.environ.get("EVALSITE_PREFLIGHT_TIMEOUT", "30"))

# Publication bundle: each chart as PNG and SVG, drawn by plotly's image export (kaleido) in a
# headless Chromium with the app's own plotly.js (reports.bundle.images). Off, or with no Chromium,
# the bundle says why it has no images. The browser: this path, or the first Chromium/Chrome on PATH.
EVALSITE_BUNDLE_IMAGES = env_bool("EVALSITE_BUNDLE_IMAGES", True)
EVALSITE_CHART_BROWSER = os.environ.get("EVALSITE_CHART_BROWSER", "").strip()
EVALSITE_CHART_IMAGE_TIMEOUT = float(os.environ.get("EVALSITE_CHART_IMAGE_TIMEOUT", "20"))
# The bundle is built by a worker (never in a request) and kept here, one file per study at its
# current data version, until the data change (reports.bundle.build). The web server streams it
# from here: with web and workers on different machines, this folder must be shared by both.
EVALSITE_BUNDLE_DIR = Path(os.environ.get("EVALSITE_BUNDLE_DIR") or VAR_DIR / "bundles")
# Bundles one worker process builds at once (each starts a Chromium and holds its zip in memory).
EVALSITE_BUNDLE_BUILDS = int(os.environ.get("EVALSITE_BUNDLE_BUILDS", "1"))

# Precision planning on the reliability report: the confidence-interval width it aims at; beside
# each interval the page estimates how many more doubly-rated conversations would reach it.
REPORT_TARGET_WIDTH = float(os.environ.get("EVALSITE_REPORT_TARGET_WIDTH", "0.10"))

# --- Email: password-reset links, reminders to raters, flag notices to coordinators ----------
# Django's email framework; every message is recorded with its outcome (core.emails). With
# nothing set, each message is printed on the console (the terminal of `make run`; nothing
# leaves the machine, and the pages say so); EMAIL_HOST switches to SMTP, and
# EVALSITE_EMAIL_BACKEND (file: one file per message under var/sent-emails/, console, smtp, or
# a backend's dotted path) says it explicitly.
_EMAIL_BACKENDS = {
    "file": "django.core.mail.backends.filebased.EmailBackend",
    "console": "django.core.mail.backends.console.EmailBackend",
    "smtp": "django.core.mail.backends.smtp.EmailBackend",
}
_email_backend = os.environ.get("EVALSITE_EMAIL_BACKEND", "").strip() or ("smtp" if os.environ.get("EMAIL_HOST") else "console")
EMAIL_BACKEND = _EMAIL_BACKENDS.get(_email_backend.lower(), _email_backend)
EMAIL_FILE_PATH = os.environ.get("EVALSITE_EMAIL_FILE_PATH") or str(VAR_DIR / "sent-emails")
EMAIL_HOST = os.environ.get("EMAIL_HOST", "localhost")
EMAIL_PORT = int(os.environ.get("EMAIL_PORT", "587"))
EMAIL_HOST_USER = os.environ.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", True)
EMAIL_USE_SSL = env_bool("EMAIL_USE_SSL", False)
if EMAIL_USE_SSL:
    EMAIL_USE_TLS = False  # Django refuses both at once; SSL (port 465) was asked for explicitly
EMAIL_TIMEOUT = int(os.environ.get("EMAIL_TIMEOUT", "20"))
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "evalsite <evalsite@localhost>")
# Links in emails start with this (the address raters open the app at).
EVALSITE_BASE_URL = os.environ.get("EVALSITE_BASE_URL", "http://127.0.0.1:8000")
# How often each worker looks for studies whose scheduled reminders are due (annotation.tasks).
EVALSITE_REMINDER_CHECK_MINUTES = float(os.environ.get("EVALSITE_REMINDER_CHECK_MINUTES", "60"))
# A coordinator who presses "Send reminders" again this soon after the last ones went is asked
# to confirm first (0: never asked).
EVALSITE_REMINDER_COOLDOWN_MINUTES = float(os.environ.get("EVALSITE_REMINDER_COOLDOWN_MINUTES", "60"))
