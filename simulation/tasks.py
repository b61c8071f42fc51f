"""Celery adapters: take ids, load, call one service. Safe to run twice."""

from __future__ import annotations

from celery import shared_task

from . import services


@shared_task(acks_late=True, time_limit=120, soft_time_limit=100)
def conversation_check_integrity_task(conversation_id: int) -> bool:
    """Run the structural integrity checks on one conversation; return whether it passed."""
    conversation = services.conversation_check_integrity(conversation_id=conversation_id)
    return bool(conversation.integrity_ok)
