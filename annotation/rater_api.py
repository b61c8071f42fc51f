"""REST endpoints for raters: their assignments, draft saves and submission."""

urlpatterns: list = []
