"""Coordinators' pages: studies, assignment and rotation, progress, consensus and adjudication."""

from django.urls import path

from annotation.studies import care_views, views

urlpatterns = [
    path("studies/", views.study_list, name="study-list"),
    path("studies/new/", views.study_new, name="study-create"),
    path("studies/new/preview/", views.selection_preview, name="study-selection-preview"),
    path("studies/<int:pk>/", views.study_detail, name="study-detail"),
    path("studies/<int:pk>/audit.csv", views.study_audit_csv, name="study-audit-csv"),
    path("studies/<int:pk>/due-date/", views.study_due_date, name="study-due-date"),
    path("studies/<int:pk>/assign/", views.study_assign_view, name="study-assign"),
    path("studies/<int:pk>/raters/add/", views.study_rater_add, name="study-rater-add"),
    path("studies/<int:pk>/members/add/", views.study_member_add, name="study-member-add"),
    path("studies/<int:pk>/raters/<int:user_id>/remove/", views.study_rater_remove, name="study-rater-remove"),
    path("studies/<int:pk>/removed-work/", views.study_removed_work, name="study-removed-work"),
    path(
        "studies/<int:pk>/assignments/<int:assignment_id>/reassign/",
        views.assignment_reassign_view,
        name="study-assignment-reassign",
    ),
    path("studies/<int:pk>/progress/", views.study_progress, name="study-progress"),
    path("studies/<int:pk>/progress/<str:table>.csv", views.study_progress_csv, name="study-progress-csv"),
    path("studies/<int:pk>/gold/", views.study_gold, name="study-gold"),
    path("studies/<int:pk>/gold.csv", views.study_gold_csv, name="study-gold-csv"),
    path("studies/<int:pk>/consensus/", views.study_consensus, name="study-consensus"),
    path("studies/<int:pk>/consensus/compute/", views.study_consensus_compute, name="study-consensus-compute"),
    path("studies/<int:pk>/consensus/job/", views.study_consensus_job, name="study-consensus-job"),
    path("studies/<int:pk>/consensus.csv", views.study_consensus_csv, name="study-consensus-csv"),
    path("studies/<int:pk>/adjudication/", views.study_adjudication, name="study-adjudication"),
    path(
        "studies/<int:pk>/adjudication/<int:consensus_id>/",
        views.study_adjudicate,
        name="study-adjudicate",
    ),
    path(
        "studies/<int:pk>/adjudication/conversations/<int:conversation_id>/",
        views.study_adjudicate_conversation,
        name="study-adjudicate-conversation",
    ),
    path("studies/<int:pk>/import-ratings/", views.study_import_ratings, name="study-import-ratings"),
    path("studies/<int:pk>/rater-support/", care_views.study_rater_support, name="study-rater-support"),
    path("studies/<int:pk>/evidence/", care_views.study_evidence, name="study-evidence"),
    path("studies/<int:pk>/adjudication/blinding/", care_views.study_adjudication_blinding, name="study-adjudication-blinding"),
]
