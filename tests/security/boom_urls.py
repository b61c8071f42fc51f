"""The site's URLs plus two views that fail, to see what a 500 shows (tests only)."""

from django.http import HttpRequest, HttpResponse
from django.urls import path

from evalsite.urls import handler400, handler403, handler404, handler500  # noqa: F401
from evalsite.urls import urlpatterns as site


def boom(request: HttpRequest) -> HttpResponse:
    free_text_answer = "RATER-FREE-TEXT-SECRET"  # noqa: F841  # a debug page would show it
    raise ValueError("boom")


urlpatterns = [path("boom/", boom), path("api/v1/boom/", boom), *site]
