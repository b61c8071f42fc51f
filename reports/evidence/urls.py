from django.urls import path

from reports.evidence import views

urlpatterns = [
    path("studies/<int:pk>/evidence-agreement/", views.evidence_agreement, name="evidence-agreement"),
    path("studies/<int:pk>/evidence-agreement.csv", views.evidence_agreement_csv, name="evidence-agreement-csv"),
]
