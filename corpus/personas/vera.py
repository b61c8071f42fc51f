"""Read a VERA-MH persona file (``personas.tsv``, 19 columns) and check every controlled cell.

Controlled vocabulary: each controlled column has a ``Vocabulary`` of category labels, and for
each label the digest of the exact long form the published file uses (e.g. "Low (financially
stable; ...)"). A cell is valid when it is a label or exactly a published long form. Why check
the long form exactly and not only the label in front of the parenthesis:

- the whole cell is what the user-agent reads: VERA-MH pastes it into the persona prompt, so
  a changed description is a different persona design, not a spelling variant;
- exact matching catches damage that label matching would let through (a description cut
  off mid-sentence still starts with a valid label).

The published wording itself is not copied into this project (its provenance note asks for
that): only a digest of each value is kept, so the check is exact while the text stays out.
The short label used in reports, breakdowns and blinding comes from ``Vocabulary.label_of``.
Only outer whitespace of a cell, and whitespace around the ``|`` that joins diagnoses, is
insignificant; case, punctuation and inner spacing must match. Columns whose published values
are long sentences without a "label (description)" form (thoughts and behaviours, history) get
short labels written by the team. Free-text columns: Name, Background,
Recent Triggers and Stressors, Final Seed Phrase. Every cell is required.

Problems name the physical line (header = line 1) and the column header; a row with any
problem is left out of ``rows``.
"""

from __future__ import annotations

import csv
import hashlib
import io
from dataclasses import asdict, dataclass

from core.bounded import BoundedCsv
from core.problems import Problem


def digest(value: str) -> str:
    """Return the short sha256 digest by which a published long-form value is recognised."""
    return hashlib.sha256(value.encode("utf-8")).hexdigest()[:32]


@dataclass(frozen=True)
class Vocabulary:
    """The valid values of one controlled column: a label each, and the published long form.

    ``entries`` holds ``(label, digest)`` pairs in their natural order. A cell is valid when it
    is the label itself (the short form the team's own files use) or when its digest equals the
    entry's digest (the exact long form of the published file, e.g. "Low (financially stable;
    ...)"). Digests let the importer check the published wording exactly without this project
    copying that wording. ``digest`` is None where the label is the whole value.
    """

    column: str
    entries: tuple[tuple[str, str | None], ...]

    def canonical(self, value: str) -> str | None:
        """Return the label of a valid value, or None when the value is not allowed."""
        value = value.strip()
        hashed = digest(value)
        for label, entry_digest in self.entries:
            if value == label or (entry_digest is not None and hashed == entry_digest):
                return label
        return None

    def __contains__(self, value: object) -> bool:
        return isinstance(value, str) and self.canonical(value) is not None

    def label_of(self, value: str) -> str:
        """Return the category label of a value (for an unknown value: the text before " (")."""
        return self.canonical(value) or value.split(" (", 1)[0].strip()

    @property
    def labels(self) -> tuple[str, ...]:
        """Return the category labels in order."""
        return tuple(label for label, _ in self.entries)


AGE_BANDS = Vocabulary('Age', (
    ('Emerging adult: 18-29yo', None),
    ('Early-to-mid adulthood: 30-44yo', None),
    ('Mid-to-late adulthood: 45-59yo', None),
    ('Older adulthood: 60+ yo', None),
))
GENDERS = Vocabulary('Gender', (
    ('Woman (cisgender)', None),
    ('Man (cisgender)', None),
    ('Transgender woman', None),
    ('Transgender man', None),
    ('Nonbinary', None),
))
RISK_LEVELS = Vocabulary('Current Suicide Risk Level', (
    ('None', '9dcbc5198e07224ae2b60cf04ea539b5'),
    ('Low', '6b580ec2d1b3aa0a25818d9269d413c2'),
    ('High', 'e9c84cff33738516ee55b4ce4ed02c2e'),
    ('Immediate', '53f37938518858a7a320d89730f45e35'),
))
RISK_SHORT = Vocabulary('Short Current Suicide Risk Level', (
    ('None', None),
    ('Low', None),
    ('High', None),
    ('Immediate', None),
))
THOUGHTS = Vocabulary('Current Suicidal Thoughts and Behaviors', (
    ('No ideation or risk factors', '77de65a36b5aaf347f38d6dc8c3e408e'),
    ('Risk factors, no ideation', '45306df3c70792a598e72b09ac5f92aa'),
    ('Passive ideation', 'e8766ef7df07c969a479768794d9ac98'),
    ('Active ideation, no plan or intent', '64239ead1119613c6186f431ed3122f5'),
    ('Active ideation with method or non-specific plan, no intent', '29eb95198f2636031133a647018849f1'),
    ('Active ideation with plan and intent', '90634058e7f85fec4d3b6da35fe2bcd1'),
    ('Recent preparatory actions', 'b82adc97e9a1c409d0bb70c659a25261'),
    ('Recent suicide attempt', 'f18db6dbbd8ab073267719598cd019fd'),
))
HISTORY = Vocabulary('Remote History of Suicidal Thoughts and Behaviors', (
    ('No remote history', 'ba86132f32e455de53964397e7c74b00'),
    ('Remote history of ideation', '8eaaaab65631ad0bf1b4de2cc2612b17'),
    ('Remote history of behavior', '5eb93cca20447a1d6a50dcf3836e2a12'),
))
DISCLOSURE = Vocabulary('Disclosure of Suicide Risk', (
    ('Low', '959dd2064ace0e6ffbb92fd90cc2a058'),
    ('Moderate', 'cbf72510d563d218b3e5d23be78b5806'),
    ('High', 'df0197bdfdaa7adfd9e346dece1b9ab9'),
    ('Not applicable', None),
))
STYLES = Vocabulary('Primary Communication Style', (
    ('Structured', '9ccdd647c8e02a6ebcf8d0f0cd80260f'),
    ('Qualifying', '0460b9e7c9c5b19aa2bf6855fb24be3d'),
    ('Minimal', '108a0f4b0d78d7f558e1fadd6026fff5'),
    ('Disorganized', '63baf0e8d70f108a01f7e40c1a6c847b'),
))
REACTIONS = Vocabulary('Reaction to Chatbot Responses', (
    ('Engaged', '2979db79abf9dc37fe9ca97a869501b5'),
    ('Disengaged', '00eb7eb3d4c9d5e0fe66a2a6149e3455'),
    ('Resistant', 'da7d8b7a71d9086806594045ea325845'),
))
DIAGNOSES = Vocabulary('Diagnoses and Symptoms', (
    ('Unipolar depression', '96db77139597e19fc1acd7f7ddd9cd35'),
    ('Anxiety', '95c37119cde358d67cd38adf50353033'),
    ('Trauma-related symptoms', '1e779d47d5d4c1eaf93c89c38954a728'),
    ('Adjustment / stress-related symptoms', '7672bfde435e9a3c31a3bb0073483a52'),
    ('Substance use-related symptoms', '6aaf39b6f0da2c8a8456ee595faafadb'),
    ('Obsessive / intrusive thought patterns', 'b38db93e8f905d13be424c818f00eeb9'),
    ('Neurocognitive / executive symptoms', 'dd91bf98c1f3982aca853f254528074d'),
    ('Bipolar mood symptoms', 'fa78471af698b38c2fd266df6288922e'),
    ('Eating and body-image symptoms', '9b7168fd08020dc555b1b2e154e9bf39'),
    ('Psychosis', '1e86d9839e9ea56b71d8af5876fa5da6'),
))
TREATMENT = Vocabulary('Treatment Engagement / Access', (
    ('None', '42662b5a097a2fca71e1fd529e695b08'),
    ('Limited', 'f6884eb34b5293e3895b72f20a55b053'),
    ('Intermittent', '640a028aaa64912ee6bdeed8edf23d5b'),
    ('Active', '9ddace211f365afd4c50c2633cebd7f4'),
))
STIGMA = Vocabulary('Mental Health Stigma', (
    ('Low', 'ac288cf4abcf66c0fcfe0930734c894d'),
    ('Moderate', '9be3f7cfaa40ff3c7637be39646ee5de'),
    ('High', '502440cfdc2f2043bfdfc964edb1015a'),
))
FINANCIAL = Vocabulary('Financial Stress', (
    ('Low', '3e409f1c17dc87d247cb435002191bb1'),
    ('Moderate', '5e423b0341fc4f28acefcb81353f2d22'),
    ('High', 'f5d624f4fda2e279e56cd906a61abdad'),
))
ISOLATION = Vocabulary('Social Isolation', (
    ('Low', '45dbbc54704bee5a520c6f5967469eff'),
    ('Moderate', 'c515a5deca07cdd5d83b297fd73d0710'),
    ('High', 'b24d3cc7f5e8f8c534ecf406d5b872ab'),
))
DISCRIMINATION = Vocabulary('Discrimination Exposure', (
    ('None', 'd8ed7b6f9e9088c3a36370ea93bdbfc2'),
    ('Occasional', '2e1a076c6a026e719ef34353a1ee1ead'),
    ('Frequent/Ongoing', '4d4875fbfb8ebf920d14efb8feae8544'),
))

# (column header, VeraPersona field, vocabulary or None for free text), in file order.
COLUMNS: tuple[tuple[str, str, Vocabulary | None], ...] = (
    ("Name", "name", None),
    (AGE_BANDS.column, "age", AGE_BANDS),
    (GENDERS.column, "gender", GENDERS),
    (RISK_LEVELS.column, "risk_level", RISK_LEVELS),
    (RISK_SHORT.column, "risk_short", RISK_SHORT),
    (THOUGHTS.column, "thoughts", THOUGHTS),
    (HISTORY.column, "history", HISTORY),
    (DISCLOSURE.column, "disclosure", DISCLOSURE),
    (STYLES.column, "style", STYLES),
    (REACTIONS.column, "reaction", REACTIONS),
    (DIAGNOSES.column, "diagnoses", DIAGNOSES),
    (TREATMENT.column, "treatment", TREATMENT),
    (STIGMA.column, "stigma", STIGMA),
    (FINANCIAL.column, "financial", FINANCIAL),
    (ISOLATION.column, "isolation", ISOLATION),
    (DISCRIMINATION.column, "discrimination", DISCRIMINATION),
    ("Background", "background", None),
    ("Recent Triggers and Stressors", "triggers", None),
    ("Final Seed Phrase", "seed_phrase", None),
)
HEADER: tuple[str, ...] = tuple(column for column, _, _ in COLUMNS)
VOCABULARIES: dict[str, Vocabulary] = {c: v for c, _, v in COLUMNS if v is not None}
DIAGNOSIS_SEPARATOR = "|"


@dataclass(frozen=True)
class VeraPersona:
    """One valid persona row; controlled fields hold the full cell values."""

    row: int
    name: str
    age: str
    gender: str
    risk_level: str
    risk_short: str
    thoughts: str
    history: str
    disclosure: str
    style: str
    reaction: str
    diagnoses: tuple[str, ...]
    treatment: str
    stigma: str
    financial: str
    isolation: str
    discrimination: str
    background: str
    triggers: str
    seed_phrase: str

    def design_labels(self) -> dict[str, str | list[str]]:
        """Return the design factors as category labels (what raters must not see)."""
        labels: dict[str, str | list[str]] = {
            "age": AGE_BANDS.label_of(self.age),
            "gender": GENDERS.label_of(self.gender),
            "risk": RISK_SHORT.label_of(self.risk_short),
            "thoughts": THOUGHTS.label_of(self.thoughts),
            "history": HISTORY.label_of(self.history),
            "disclosure": DISCLOSURE.label_of(self.disclosure),
            "style": STYLES.label_of(self.style),
            "reaction": REACTIONS.label_of(self.reaction),
            "diagnoses": [DIAGNOSES.label_of(d) for d in self.diagnoses],
        }
        for name, vocabulary in (
            ("treatment", TREATMENT),
            ("stigma", STIGMA),
            ("financial", FINANCIAL),
            ("isolation", ISOLATION),
            ("discrimination", DISCRIMINATION),
        ):
            labels[name] = vocabulary.label_of(getattr(self, name))
        return labels

    def as_dict(self) -> dict[str, object]:
        """Return every field with full values (diagnoses as a list), ready for JSON."""
        data = asdict(self)
        data["diagnoses"] = list(self.diagnoses)
        return data

    def prompt_fields(self) -> dict[str, str]:
        """Return the cells by column header, as VERA-MH's persona prompt template uses them."""
        cells = {column: getattr(self, field) for column, field, _ in COLUMNS}
        cells[DIAGNOSES.column] = f" {DIAGNOSIS_SEPARATOR} ".join(self.diagnoses)
        return cells


@dataclass(frozen=True)
class PersonaParse:
    """The valid rows of a persona file, every problem found, and how many data rows it had."""

    rows: tuple[VeraPersona, ...]
    problems: tuple[Problem, ...]
    total_rows: int


def parse_personas_tsv(text: str, file: str = "personas.tsv") -> PersonaParse:
    """Parse a VERA-MH persona TSV; invalid rows are reported and left out, never guessed."""
    reader = BoundedCsv(csv.reader(
        io.StringIO(text.removeprefix("\ufeff"), newline=""), delimiter="\t", quoting=csv.QUOTE_NONE
    ), file)
    header = [cell.strip() for cell in next(reader, [])]
    problems = _header_problems(header, file)
    header_ok = not problems
    rows: list[VeraPersona] = []
    names: dict[str, int] = {}
    total = 0
    for raw in reader:
        line = reader.line_num
        if not any(cell.strip() for cell in raw):
            continue
        total += 1
        if not header_ok:  # rows are counted but cannot be read against a broken header
            continue
        if len(raw) < len(header) or any(cell.strip() for cell in raw[len(header) :]):
            problems.append(
                Problem(f"row has {len(raw)} cells, expected {len(header)}", file, line)
            )
            continue
        cells = {name: raw[header.index(name)].strip() for name in HEADER}
        row_problems = list(_cell_problems(cells, file, line))
        key = cells["Name"].casefold()
        if key and key in names:
            row_problems.append(
                Problem(
                    f"duplicate persona name '{cells['Name']}' (first at line {names[key]})",
                    file,
                    line,
                    "Name",
                )
            )
        names.setdefault(key, line)
        problems.extend(row_problems)
        if not row_problems:
            rows.append(_persona(cells, line))
    if header_ok and total == 0:
        problems.append(Problem("the file has no persona rows", file, 1))
    return PersonaParse(tuple(rows), tuple(problems), total)


def _header_problems(header: list[str], file: str) -> list[Problem]:
    """Return problems with the header row: the 19 columns, each exactly once, nothing else."""
    if not any(header):
        return [Problem("the file is empty; expected the 19-column header", file, 1)]
    problems = [
        Problem(f"missing column '{name}'", file, 1, name) for name in HEADER if name not in header
    ]
    problems += [
        Problem(f"unexpected column '{name}'", file, 1, name)
        for name in dict.fromkeys(header)
        if name and name not in HEADER
    ]
    problems += [
        Problem(f"column '{name}' appears {header.count(name)} times", file, 1, name)
        for name in HEADER
        if header.count(name) > 1
    ]
    return problems


def _cell_problems(cells: dict[str, str], file: str, line: int) -> list[Problem]:
    """Return what is wrong with one row's cells: empty, off-vocabulary, inconsistent."""
    problems: list[Problem] = []
    for column, _, vocabulary in COLUMNS:
        value = cells[column]
        if not value:
            problems.append(Problem("cell is empty", file, line, column))
        elif vocabulary is DIAGNOSES:
            problems += [Problem(m, file, line, column) for m in _diagnosis_problems(value)]
        elif vocabulary is not None and value not in vocabulary:
            problems.append(Problem(_off_vocabulary(vocabulary, value), file, line, column))
    long, short = cells[RISK_LEVELS.column], cells[RISK_SHORT.column]
    if long in RISK_LEVELS and short in RISK_SHORT and RISK_LEVELS.label_of(long) != short:
        problems.append(
            Problem(
                f"'{short}' does not match the long risk level '{RISK_LEVELS.label_of(long)}'",
                file,
                line,
                RISK_SHORT.column,
            )
        )
    return problems


def _diagnosis_problems(value: str) -> list[str]:
    """Return what is wrong with a '|'-joined list of diagnoses."""
    items = [item.strip() for item in value.split(DIAGNOSIS_SEPARATOR)]
    messages: list[str] = []
    if any(not item for item in items):
        messages.append(f"dangling '{DIAGNOSIS_SEPARATOR}': the list has an empty entry")
    for i, item in enumerate(items):
        if item and item not in DIAGNOSES:
            messages.append(_off_vocabulary(DIAGNOSES, item))
        elif item and item in items[:i]:
            messages.append(f"'{DIAGNOSES.label_of(item)}' is listed twice")
    return messages


def _off_vocabulary(vocabulary: Vocabulary, value: str) -> str:
    """Explain why a value is not in the vocabulary, naming the nearest category if any."""
    shown = value if len(value) <= 70 else value[:67] + "..."
    label = value.split(" (", 1)[0].strip()
    if label != value and label in vocabulary.labels:
        return (
            f"'{shown}' starts like the category '{label}' but its wording differs from the "
            "allowed value (truncated or edited?)"
        )
    return f"'{shown}' is not an allowed value; expected one of: {', '.join(vocabulary.labels)}"


def _persona(cells: dict[str, str], line: int) -> VeraPersona:
    """Build a persona from a row whose cells are all valid."""
    values: dict[str, object] = {field: cells[column] for column, field, _ in COLUMNS}
    values["diagnoses"] = tuple(
        item.strip() for item in cells[DIAGNOSES.column].split(DIAGNOSIS_SEPARATOR)
    )
    return VeraPersona(row=line, **values)  # type: ignore[arg-type]
