"""Reminder pages: the coordinator's send button and schedule, the rater's opt-out page."""

from django.urls import path

from annotation.reminders import views

urlpatterns = [
    path("studies/<int:pk>/reminders/send/", views.reminders_send_now, name="study-reminders-send"),
    path("studies/<int:pk>/reminders/schedule/", views.reminders_schedule, name="study-reminders-schedule"),
    path("ratings/reminders/", views.my_reminders, name="my-reminders"),
]
