"""The app's one label normaliser: every answer, imported label and judge reply goes through it.

It is :class:`stats.labels.LabelNormaliser` (trimmed, inner spacing collapsed, case ignored,
N/A spellings recognised) fed with what the instrument declares: the item's own labels as the
canonical spellings, and the item's "not applicable" answers (``Item.not_applicable_labels``;
a question flow's dimensions: the instrument's ``na_labels``, VERA-MH "Not Relevant"). So
"YES", " yes" and "Yes" are stored, voted and compared as the item's "yes", and "n/a" as the
item's own N/A answer, wherever they come from: the rating form, a ratings file, a judge reply.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from corpus.instruments.flow import LABELS as FLOW_LABELS
from corpus.models import Instrument, InstrumentKind, Item, Scale
from stats.labels import (
    DEFAULT_NA_LABELS,
    LabelNormaliser,
    UnknownLabelError,
    fold_label,
    is_missing,
)

FLOW_DIMENSION = "flow_dimension"  # the "scale" of a question flow's dimension


class UnknownAnswer(ValueError):
    """An answer that is none of the item's labels (the message names the item and its labels)."""


@dataclass(frozen=True)
class ItemLabels:
    """What one item (or flow dimension) accepts: its labels, its N/A answers, its wording.

    ``labels`` are the canonical spellings in scale order, N/A answers included; ``na_labels``
    the ones that mean "not applicable". Free-text items have no labels and keep any text.
    """

    key: str
    text: str
    number: str = ""
    domain: str = ""
    scale: str = Scale.CATEGORIES
    labels: tuple[str, ...] = ()
    na_labels: tuple[str, ...] = ()
    _normaliser: list[LabelNormaliser] = field(default_factory=list, compare=False, repr=False)

    @property
    def is_text(self) -> bool:
        return self.scale == Scale.TEXT

    @property
    def level(self) -> str:
        """Return the measurement level: "ordinal" for the 1-5 scale, else "nominal"."""
        return "ordinal" if self.scale == Scale.ORDINAL_1_5 else "nominal"

    @property
    def substantive(self) -> tuple[str, ...]:
        """Return the labels that are not N/A answers (the label set reports pool on)."""
        na = {fold_label(x) for x in self.na_labels}
        return tuple(x for x in self.labels if fold_label(x) not in na)

    def normaliser(self) -> LabelNormaliser:
        """Return the cached stats normaliser for this item."""
        if not self._normaliser:
            if len(self.na_labels) == 1:
                # Every N/A spelling ("n/a", "not applicable") becomes the item's own N/A answer.
                normaliser = LabelNormaliser(
                    na_labels=(*DEFAULT_NA_LABELS, self.na_labels[0]),
                    canonical=self.labels,
                    na_token=self.na_labels[0],
                    item=self.key,
                )
            else:
                normaliser = LabelNormaliser(na_labels=(), canonical=self.labels, item=self.key)
            self._normaliser.append(normaliser)
        return self._normaliser[0]

    def normalise(self, value: Any) -> str | None:
        """Return the item's own spelling of an answer; None when missing.

        Raises :class:`UnknownAnswer` naming the item and its labels when the answer is none of
        them (an N/A answer to an item without one included).
        """
        if is_missing(value):
            return None
        if self.is_text:
            return str(value).strip()
        try:
            label = self.normaliser()(value if not isinstance(value, int | float) else str(value))
        except UnknownLabelError:
            allowed = ", ".join(self.labels) or "(none)"
            if not self.na_labels and fold_label(str(value)) in {fold_label(x) for x in DEFAULT_NA_LABELS}:
                raise UnknownAnswer(f"N/A is not allowed for item {self.key}: answer {' or '.join(self.labels)}") from None
            raise UnknownAnswer(f"'{str(value).strip()}' is not an answer to item {self.key}; allowed: {allowed}") from None
        return None if label is None else str(label)

    def is_na(self, label: str | None) -> bool:
        return label is not None and fold_label(label) in {fold_label(x) for x in self.na_labels}


def item_labels(item: Item, *, key: str | None = None) -> ItemLabels:
    """Return the labels of one instrument item (``key`` overrides its key, e.g. "section:...")."""
    return ItemLabels(
        key=key or item.key,
        text=item.text,
        number=item.number,
        domain=item.domain,
        scale=item.scale,
        labels=tuple(item.allowed_labels()),
        na_labels=tuple(item.not_applicable_labels()),
    )


def instrument_labels(instrument: Instrument, *, prefix: str = "") -> dict[str, ItemLabels]:
    """Return every rated unit of an instrument, in form order, keyed as ratings store them.

    A checklist or section: one entry per item (free-text items too, with no labels). A
    question flow: one entry per dimension, labelled with the four dimension labels and the
    instrument's declared N/A labels (VERA-MH: Not Relevant). ``prefix`` is put before every key
    (the study section's ratings are keyed "section:KEY" in consensus).
    """
    items = list(instrument.items.all())  # item.instrument is the cached instrument: no query each
    items.sort(key=lambda i: i.position)
    if instrument.kind == InstrumentKind.FLOW:
        na = tuple(x for x in FLOW_LABELS if fold_label(x) in {fold_label(str(n)) for n in instrument.na_labels or []})
        dimensions = list(dict.fromkeys(i.domain for i in items))
        return {
            f"{prefix}{d}": ItemLabels(
                key=f"{prefix}{d}", text=d, number=str(n), domain=d, scale=FLOW_DIMENSION, labels=FLOW_LABELS, na_labels=na
            )
            for n, d in enumerate(dimensions, start=1)
        }
    return {f"{prefix}{i.key}": item_labels(i, key=f"{prefix}{i.key}") for i in items}
