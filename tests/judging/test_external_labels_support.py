"""Helpers for the external-labels tests."""

from __future__ import annotations

from typing import Any

from judging.models import Judge, JudgeMode, PromptTemplate
from judging.prompts import content_hash


def make_in_app_judge(name: str, instrument: Any) -> Judge:
    digest = content_hash(mode=JudgeMode.FLOW, system="s", user="u", retry="r")
    prompt = PromptTemplate.objects.create(key="p", name="p", mode=JudgeMode.FLOW, system_template="s",
                                           user_template="u", retry_template="r", content_hash=digest)
    return Judge.objects.create(name=name, mode=JudgeMode.FLOW, instrument=instrument, model="openai/x", provider="openai", prompt=prompt)
