from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from corpus.personas.linking import conversations_link_personas, waiting_persona_names


class Command(BaseCommand):
    help = (
        "Link conversations without a persona to the persona their source names (e.g. VERA-MH "
        "file names), once a persona of that name exists. Reports how many were linked and "
        "which names are still waiting."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        linked = conversations_link_personas()
        self.stdout.write(self.style.SUCCESS(f"Linked {linked} conversation(s) to their persona."))
        for name, count in waiting_persona_names().items():
            self.stdout.write(f"  still waiting for a persona named '{name}': {count} conversation(s)")
