from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView
from rest_framework.routers import DefaultRouter

from core import api_docs, passwords
from core import views as core_views
from core.permissions import ApiRootView
from corpus.conversations import api as conversations_api
from corpus.instruments import api as instruments_api
from corpus.personas import api as personas_api
from corpus.targets import api as targets_api
from judging import api as judging_api
from reports import api as reports_api
from reports.bundle import api as bundle_api
from simulation import api as simulation_api

# No format suffixes (`conversations.json`): every custom action answered them with a 500 (issue 30,
# finding 3); `?format=json` and the Accept header choose the format.
router = DefaultRouter()
router.include_format_suffixes = False
router.APIRootView = ApiRootView  # the endpoint list: for the roles that use the API, not raters
router.register("conversations", conversations_api.ConversationViewSet, basename="conversation")
router.register("persona-sets", personas_api.PersonaSetViewSet, basename="persona-set")
router.register("targets", targets_api.TargetViewSet, basename="target")
router.register("instruments", instruments_api.InstrumentViewSet, basename="instrument")
router.register("judges", judging_api.JudgeViewSet, basename="judge")
router.register("judge-prompts", judging_api.PromptTemplateViewSet, basename="judge-prompt")
router.register("judge-runs", judging_api.JudgeRunViewSet, basename="judge-run")
# On the root router (not an included one) so the API root lists them.
router.register("simulation-batches", simulation_api.SimulationBatchViewSet, basename="simulation-batch")
router.register("simulation-prompts", simulation_api.SimulationPromptViewSet, basename="simulation-prompt")

api_v1 = [
    path("", include(router.urls)),
    path("imports/conversations/", conversations_api.ConversationImportView.as_view(), name="import-conversations"),
    path("imports/personas/", personas_api.PersonaImportView.as_view(), name="import-personas"),
    path("imports/instruments/", instruments_api.InstrumentImportView.as_view(), name="import-instruments"),
    path("", include("annotation.rating.api")),
    path("", include("annotation.studies.api")),
    path("reports/studies/<int:pk>/reliability/", reports_api.StudyReliabilityView.as_view(), name="report-reliability"),
    path("reports/studies/<int:pk>/judges/", reports_api.StudyJudgesView.as_view(), name="report-judges"),
    path("reports/studies/<int:pk>/scorecard/", reports_api.StudyScorecardView.as_view(), name="report-scorecard"),
    path("reports/studies/<int:pk>/bundle/", bundle_api.StudyBundleView.as_view(), name="report-bundle"),
    path("imports/bundle/", bundle_api.BundleImportView.as_view(), name="import-bundle"),
    path("reports/runs/<int:pk>/scorecard/", reports_api.RunScorecardView.as_view(), name="report-run-scorecard"),
    path("reports/", include("reports.judge_assisted.api")),
    path("reports/", include("reports.drift.api")),
    path("reports/", include("reports.raters.api")),
    path("reports/", include("reports.devset.api")),
    path("reports/", include("reports.leaderboard.api")),
    path("", include("annotation.sampling.api")),
]

urlpatterns = [
    path("", core_views.home, name="home"),
    # Django's, answering 503 while the database does not (core.views.LoginView).
    path("accounts/login/", core_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    # Getting back into an account (core.passwords): reset by email, change when signed in.
    path("accounts/password/reset/", passwords.PasswordResetView.as_view(), name="password_reset"),
    path("accounts/password/reset/sent/", auth_views.PasswordResetDoneView.as_view(), name="password_reset_done"),
    path("accounts/password/reset/<uidb64>/<token>/", passwords.PasswordResetConfirmView.as_view(), name="password_reset_confirm"),
    path("accounts/password/reset/done/", auth_views.PasswordResetCompleteView.as_view(), name="password_reset_complete"),
    path("accounts/password/change/", passwords.PasswordChangeView.as_view(), name="password_change"),
    path("accounts/password/change/done/", auth_views.PasswordChangeDoneView.as_view(), name="password_change_done"),
    path("accounts/api-tokens/", core_views.api_tokens, name="api-tokens"),
    path("status/", core_views.status, name="status"),
    # Least privilege (issue 30): a corpus object's creator shares it with every coordinator and researcher.
    path("sharing/<slug:kind>/<str:key>/", core_views.sharing_set, name="sharing-set"),
    # Browsers ask for it on every page; answering 404 filled the log (a redirect to the icon).
    path("favicon.ico", core_views.favicon),
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # The OpenAPI schema as an accessible page of the site (Swagger UI failed axe: issue 19).
    path("api/docs/", api_docs.api_docs, name="api-docs"),
    path("api/v1/", include((api_v1, "api"), namespace="v1")),
    path("", include("corpus.urls")),
    path("corpus/", include("simulation.urls")),
    path("reports/", include("reports.urls")),
    path("judging/", include("judging.urls")),
    path("", include("annotation.urls")),
]

# Friendly pages for people, JSON on /api/; never a debug page (core.errors_views).
handler400 = "core.errors_views.bad_request"
handler403 = "core.errors_views.permission_denied"
handler404 = "core.errors_views.page_not_found"
handler500 = "core.errors_views.server_error"
