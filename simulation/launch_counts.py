"""What a simulation batch will cost before anyone presses Start: conversations and LLM calls.

The new-batch form asks for this as its fields change (``simulation:batch-count``). It reads the
form's raw values leniently (a half-filled form still gets a count, or says what is missing)
and counts the way ``simulation_batch_create`` builds the batch: one conversation per persona x
chatbot x repetition, and one call per message except the AMHART persona's opening card (a
fixed text). Calls are an upper bound: a user-agent that ends early makes fewer, a retried call
more. The launch check adds one small call per model first.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from corpus.models import Persona, Target
from simulation.models import SimulationBatch
from simulation.preflight import enabled as preflight_enabled

Protocol = SimulationBatch.Protocol


@dataclass(frozen=True)
class BatchCounts:
    conversations: int = 0
    messages_per_conversation: int = 0
    calls_per_conversation: int = 0
    launch_checks: int = 0
    missing: str = ""  # what to choose before there is a count

    @property
    def calls(self) -> int:
        return self.conversations * self.calls_per_conversation


def _int(value: Any) -> int | None:
    try:
        return int(str(value).strip())
    except (TypeError, ValueError):
        return None


def _ints(values: list[Any]) -> list[int]:
    return [n for n in (_int(v) for v in values) if n is not None]


def _messages(protocol: str, exchanges: int | None, turns: int | None) -> int:
    """Return messages per conversation as ``simulation.batches`` derives them (defaults included)."""
    if protocol == Protocol.AMHART:
        return 2 * (exchanges or (turns // 2 if turns else 10))
    return turns or (2 * exchanges if exchanges else 20)


def batch_counts(data: Mapping[str, Any], getlist: Any = None) -> BatchCounts:
    """Return the counts of the batch the form describes so far (``getlist`` reads multi-valued fields)."""
    getlist = getlist or (lambda name: list(data.get(name) or []))
    protocol = str(data.get("protocol") or Protocol.AMHART)
    persona_set = _int(data.get("persona_set"))
    if persona_set is None:
        return BatchCounts(missing="Choose a persona set")
    chosen = _ints(getlist("personas"))
    personas = Persona.objects.filter(persona_set_id=persona_set)
    n_personas = personas.filter(pk__in=chosen).count() if chosen else personas.count()
    n_targets = Target.objects.filter(pk__in=_ints(getlist("targets"))).exclude(kind=Target.Kind.DEMO).count()
    if not n_targets:
        return BatchCounts(missing="Choose one or more chatbots")
    if not n_personas:
        return BatchCounts(missing="The persona set has no personas")
    repetitions = _int(data.get("repetitions")) or 1
    messages = _messages(protocol, _int(data.get("exchanges")), _int(data.get("turns")))
    opening_card = 1 if protocol == Protocol.AMHART and data.get("first_speaker", "user") == "user" else 0
    return BatchCounts(
        conversations=n_personas * n_targets * max(repetitions, 0),
        messages_per_conversation=messages,
        calls_per_conversation=max(messages - opening_card, 0),
        launch_checks=(1 + n_targets) if preflight_enabled() else 0,
    )
