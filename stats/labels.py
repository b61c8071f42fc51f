"""One label normaliser for every entry point: whitespace, case, N/A spellings, canonical labels.

Raters and judges spell the same answer differently ("Yes", " yes ", "YES"; "N/A", "n/a",
"not applicable"). Every function in this package that reads labels goes through
:func:`normalise_label` so that agreement, consensus, votes and scores see the same categories.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence

from .scale import Label, StatsInputError

__all__ = [
    "DEFAULT_NA_LABELS",
    "NA_CATEGORY",
    "LabelNormaliser",
    "UnknownLabelError",
    "canonical_for",
    "choose_spellings",
    "fold_label",
    "is_missing",
    "label_key",
    "na_labels_for",
    "normalise_label",
]

#: The N/A spellings recognised when the caller declares none (compared after :func:`fold_label`).
DEFAULT_NA_LABELS: tuple[str, ...] = ("N/A", "NA", "na", "n/a", "N.A.", "not applicable")
#: The single token every N/A spelling becomes.
NA_CATEGORY = "N/A"

_SPACES = re.compile(r"\s+")
_NOT_FOUND = object()

NaLabels = Iterable[str] | Mapping[Hashable, Iterable[str]]
Canonical = Sequence[Label] | Mapping[Hashable, Sequence[Label]]


class UnknownLabelError(StatsInputError):
    """A label that is not one of the canonical labels declared for its item."""

    def __init__(
        self, label: object, canonical: Sequence[Label], item: Hashable = None, where: str = ""
    ) -> None:
        self.label = label
        self.canonical = tuple(canonical)
        self.item = item
        of = "" if item is None else f" of item {item!r}"
        allowed = ", ".join(repr(c) for c in self.canonical) or "(none declared)"
        at = f" ({where})" if where else ""
        super().__init__(f"label {label!r}{at} is not one of the labels{of}: {allowed}")


def is_missing(label: object) -> bool:
    """Tell whether a label means "no rating": None, NaN, pandas NA, or a blank string."""
    if label is None:
        return True
    if isinstance(label, float) and math.isnan(label):
        return True
    if isinstance(label, str) and not label.strip():
        return True
    return type(label).__name__ in ("NAType", "NaTType")


def fold_label(text: str) -> str:
    """Return the comparison form of a text label: trimmed, inner whitespace collapsed, casefolded.

    ``"  Best   practice "`` and ``"BEST PRACTICE"`` both fold to ``"best practice"``.
    """
    return _SPACES.sub(" ", text.strip()).casefold()


def label_key(label: Label) -> Hashable:
    """Return the key under which two spellings of a label count as the same label.

    Strings compare by :func:`fold_label`; other labels (numbers) by equality.
    """
    return fold_label(label) if isinstance(label, str) else label


def _as_na_tuple(na_labels: Iterable[str]) -> tuple[str, ...]:
    # A bare string would otherwise be read as a list of one-letter N/A labels.
    return (na_labels,) if isinstance(na_labels, str) else tuple(na_labels)


def na_labels_for(na_labels: NaLabels, item: Hashable) -> tuple[str, ...]:
    """Return the N/A labels of one item: a plain list applies to every item.

    With a mapping item -> labels, an item absent from the mapping gets
    :data:`DEFAULT_NA_LABELS`.
    """
    if isinstance(na_labels, Mapping):
        return _as_na_tuple(na_labels.get(item, DEFAULT_NA_LABELS))
    return _as_na_tuple(na_labels)


class LabelNormaliser:
    """:func:`normalise_label` with fixed N/A labels and canonical labels, cached per label.

    Build one per (N/A labels, canonical labels) and call it on many labels; the fold and
    lookups are done once per distinct label.
    """

    def __init__(
        self,
        *,
        na_labels: Iterable[str] = DEFAULT_NA_LABELS,
        canonical: Sequence[Label] | None = None,
        na_token: str = NA_CATEGORY,
        item: Hashable = None,
    ) -> None:
        self.na_labels = _as_na_tuple(na_labels)
        self.na_folded = frozenset(fold_label(s) for s in self.na_labels)
        self.na_token = na_token
        self.item = item
        self.canonical = None if canonical is None else tuple(canonical)
        self._canon: dict[Hashable, Label] = {}
        self._canon_text: dict[str, Label] = {}
        for c in self.canonical or ():
            self._canon.setdefault(label_key(c), c)
            self._canon_text.setdefault(fold_label(str(c)), c)
        self._cache: dict[object, tuple[Label | None, bool]] = {}

    def __call__(self, label: object) -> Label | None:
        """Normalise one label (see :func:`normalise_label`)."""
        return self.split(label)[0]

    def split(self, label: object) -> tuple[Label | None, bool]:
        """Return the normalised label and whether it was an N/A spelling."""
        try:
            return self._cache[label]
        except KeyError:
            pass
        except TypeError:  # unhashable: not a label this package can count
            raise StatsInputError(f"label {label!r} is not hashable") from None
        out = self._normalise(label)
        self._cache[label] = out
        return out

    def _normalise(self, label: object) -> tuple[Label | None, bool]:
        if is_missing(label):
            return None, False
        if isinstance(label, str):
            folded = fold_label(label)
            if folded in self.na_folded:
                return self.na_token, True
            if self.canonical is None:
                return _SPACES.sub(" ", label.strip()), False
            found = self._canon.get(folded, _NOT_FOUND)
            if found is _NOT_FOUND:
                found = self._canon_text.get(folded, _NOT_FOUND)
        elif self.canonical is None:
            return label, False  # type: ignore[return-value]
        else:
            found = self._canon.get(label, _NOT_FOUND)  # type: ignore[arg-type]
            if found is _NOT_FOUND:
                found = self._canon_text.get(fold_label(str(label)), _NOT_FOUND)
        if found is _NOT_FOUND:
            raise UnknownLabelError(label, self.canonical, self.item)
        return found, False


def normalise_label(
    label: object,
    *,
    na_labels: Iterable[str] = DEFAULT_NA_LABELS,
    canonical: Sequence[Label] | None = None,
    na_token: str = NA_CATEGORY,
) -> Label | None:
    """Normalise one rating label: missing -> None, N/A spellings -> one token, canonical spelling.

    Rules, in order:

    * missing (None, NaN, pandas NA, blank string) -> None;
    * strings are trimmed and inner runs of whitespace collapsed to one space; comparisons
      ignore case (:func:`fold_label`);
    * a label among ``na_labels`` -> ``na_token`` (default ``"N/A"``), whatever the canonical
      list spells it. ``na_labels`` replaces the default list (:data:`DEFAULT_NA_LABELS`:
      N/A, NA, n/a, na, N.A., not applicable); to add an instrument's own N/A label pass e.g.
      ``(*DEFAULT_NA_LABELS, "Not Relevant")``;
    * with ``canonical`` (the labels of the item, e.g. ``["yes", "no", "N/A"]``), the label is
      returned in its canonical spelling ("YES" -> "yes", "best practice" -> "Best Practice";
      when two canonical labels fold alike, the first wins). A label matching none raises
      :class:`UnknownLabelError` (a :class:`StatsInputError`) naming the label and the set.
      Non-string labels match a canonical label by equality, then by their folded text
      (``1`` matches ``"1"``);
    * without ``canonical``, strings keep their case (only whitespace is cleaned) and other
      labels (numbers) are returned unchanged; callers that group labels compare them with
      :func:`label_key` and pick one spelling per group with :func:`choose_spellings`.

    Edge cases: an empty ``na_labels`` disables N/A mapping; an empty ``canonical`` rejects
    every non-missing, non-N/A label. Reference: this project's DOMAIN.md (AMHART yes/no/N/A,
    VERA-MH's four labels).
    """
    return LabelNormaliser(na_labels=na_labels, canonical=canonical, na_token=na_token)(label)


def choose_spellings(
    labels: Iterable[Label] | Mapping[Label, int], *, canonical: Sequence[Label] | None = None
) -> dict[Hashable, Label]:
    """Return one output spelling per :func:`label_key` among normalised labels.

    With ``canonical``, a key's spelling is its first canonical spelling. Otherwise it is the
    most common spelling among ``labels`` (counting repeats; a mapping gives label -> count), ties going to the smallest
    spelling in code-point order, so the choice does not depend on the order of the votes
    ("yes" x2 + "Yes" -> "yes"; "Yes" + "YES" -> "YES"). Non-string labels are their own
    spelling.
    """
    first_canonical: dict[Hashable, Label] = {}
    for c in canonical or ():
        first_canonical.setdefault(label_key(c), c)
    tally = labels if isinstance(labels, Mapping) else Counter(labels)
    counts: dict[Hashable, Counter[Label]] = {}
    for label, n in tally.items():
        counts.setdefault(label_key(label), Counter())[label] += n
    out: dict[Hashable, Label] = {}
    for key, spellings in counts.items():
        if key in first_canonical:
            out[key] = first_canonical[key]
        elif len(spellings) == 1:
            out[key] = next(iter(spellings))
        else:
            out[key] = min(spellings.items(), key=lambda kv: (-kv[1], str(kv[0])))[0]
    return out


def canonical_for(canonical: Canonical | None, item: Hashable) -> Sequence[Label] | None:
    """Return the canonical labels of one item: a plain list applies to every item.

    With a mapping item -> labels, an item absent from the mapping has no canonical list.
    """
    if canonical is None:
        return None
    if isinstance(canonical, Mapping):
        return canonical.get(item)
    return canonical
