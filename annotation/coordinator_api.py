"""REST endpoints for coordinators: studies, assignments, progress and consensus."""

urlpatterns: list = []
