"""Production settings: everything from the environment, secure by default.

Use with ``DJANGO_SETTINGS_MODULE=evalsite.settings.production``. ``DJANGO_SECRET_KEY`` and
``DJANGO_ALLOWED_HOSTS`` are required; TLS is assumed to terminate at or before Django.
"""

from __future__ import annotations

import os

from django.core.exceptions import ImproperlyConfigured

from evalsite.settings.base import *  # noqa: F403
from evalsite.settings.base import env_bool

DEBUG = False
if not os.environ.get("DJANGO_SECRET_KEY"):
    raise ImproperlyConfigured("DJANGO_SECRET_KEY must be set in production")
SECRET_KEY = os.environ["DJANGO_SECRET_KEY"]
if not os.environ.get("DJANGO_ALLOWED_HOSTS"):
    raise ImproperlyConfigured("DJANGO_ALLOWED_HOSTS must be set in production")

WHITENOISE_USE_FINDERS = False  # collectstatic first (README)
WHITENOISE_AUTOREFRESH = False
EVALSITE_DEMO_ALLOWED = False
SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT", True)
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SESSION_COOKIE_SECURE = True
CSRF_COOKIE_SECURE = True
SECURE_HSTS_SECONDS = int(os.environ.get("DJANGO_SECURE_HSTS_SECONDS", str(60 * 60 * 24 * 365)))
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
SECURE_HSTS_PRELOAD = env_bool("DJANGO_SECURE_HSTS_PRELOAD", True)
