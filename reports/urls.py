from django.urls import include, path

from reports import verdict_views, views
from reports.bundle import views as bundle_views

app_name = "reports"

urlpatterns = [
    path("", views.report_index, name="index"),
    path("studies/<int:pk>/reliability/", views.reliability, name="reliability"),
    path("studies/<int:pk>/reliability.csv", views.reliability_csv, name="reliability-csv"),
    path("studies/<int:pk>/realism/", views.realism, name="realism"),
    path("studies/<int:pk>/realism.csv", views.realism_csv, name="realism-csv"),
    path("studies/<int:pk>/scorecard/", views.scorecard, name="scorecard"),
    path("studies/<int:pk>/scorecard/<slug:table>.csv", views.scorecard_csv, name="scorecard-csv"),
    path("studies/<int:pk>/judges/", views.judges, name="judges"),
    path("studies/<int:pk>/judges.csv", views.judges_csv, name="judges-csv"),
    path("studies/<int:pk>/judges/epsilon/", verdict_views.judges_epsilon, name="judges-epsilon"),
    path("studies/<int:pk>/judges/<slug:table>.csv", verdict_views.judges_table_csv, name="judges-table-csv"),
    path("studies/<int:pk>/export.zip", views.study_export, name="study-export"),
    path("studies/<int:pk>/bundle/", bundle_views.study_bundle, name="study-bundle"),
    path("studies/<int:pk>/bundle.zip", bundle_views.study_bundle_download, name="study-bundle-download"),
    path("jobs/<int:job>/", views.report_job, name="job"),
    path("runs/<int:pk>/scorecard/", views.run_scorecard, name="run-scorecard"),
    path("runs/<int:pk>/scorecard/<slug:table>.csv", views.run_scorecard_csv, name="run-scorecard-csv"),
    # Beyond the published methods (issue 15): judge-assisted scores, judge drift, rater drift and load.
    path("", include("reports.judge_assisted.urls")),
    path("", include("reports.drift.urls")),
    path("", include("reports.raters.urls")),
    # Issue 23: judge development with a locked test set.
    path("", include("reports.devset.urls")),
    path("", include("reports.revise.urls")),  # issue 27: from a failure mode to a new judge version
    path("", include("reports.leaderboard.urls")),
    # Issue 27: from a figure to the evidence behind it.
    path("", include("reports.review.urls")),
    # Issue 27: the turns a judge cites against the turns clinicians cite.
    path("", include("reports.evidence.urls")),
]
