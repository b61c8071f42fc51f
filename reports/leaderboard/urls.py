from django.urls import path

from reports.leaderboard import views

urlpatterns = [
    path("studies/<int:pk>/leaderboard/", views.study_leaderboard, name="leaderboard"),
    path("studies/<int:pk>/leaderboard/<slug:table>.csv", views.study_leaderboard_csv, name="leaderboard-csv"),
    path("runs/<int:pk>/leaderboard/", views.run_leaderboard, name="run-leaderboard"),
    path("runs/<int:pk>/leaderboard/<slug:table>.csv", views.run_leaderboard_csv, name="run-leaderboard-csv"),
]
