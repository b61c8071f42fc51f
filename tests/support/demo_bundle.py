"""The demo's publication bundles, made once per test session for the bundle tests (``tests/reports/conftest.py``).

``seed_demo`` builds the demo; a few of the demo study's ratings get cited turns; each demo study
is exported (its bundle and its figures); then the demo study is split into a development and a
test set, two versions are declared final and evaluated on the test set (two looks), and it is
exported again (``SPLIT``). The active sampling study's state is kept beside its bundle. The
caller empties the database afterwards: each bundle test imports into a fresh database.
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from annotation.demo.seed import ACTIVE_STUDY, DEMO_STUDY, PLAN_STUDY
from annotation.models import Rating, Study
from annotation.rating.selectors import rating_evidence_by_item
from annotation.sampling.active.selectors import active_plan_get, active_state
from core.problems import ImportRejected
from corpus.models import Conversation, Instrument, Persona, PersonaSet, Target
from judging.models import JudgeRun
from reports.bundle.export import study_bundle_zip
from reports.bundle.figures import study_figures
from reports.bundle.importer import BundleImportResult, bundle_import
from reports.devset.services import final_declare, split_make, test_set_evaluate
from reports.selectors import judge_runs_for_study
from tests.factories import ConversationFactory

SPLIT = "demo study, split, two looks at its test set"
EVIDENCE = "evidence"
ACTIVE_STATE = "active state"


def evidence_of(study: Study) -> dict[tuple[str, str], dict[str, list[int]]]:
    """Return the turns cited in each of the study's ratings, by (conversation code, rater)."""
    found = {}
    for rating in Rating.objects.filter(assignment__study=study, status="submitted"):
        cited = rating_evidence_by_item(rating)
        if cited:
            found[(rating.assignment.conversation.code, rating.assignment.rater_name)] = cited
    return found


def cite_turns(study: Study) -> dict[tuple[str, str], dict[str, list[int]]]:
    """Give a few of the demo's ratings cited turns (an answer, a section answer, the whole form); return them all."""
    study.evidence_mode = "per_item"
    study.save(update_fields=["evidence_mode"])
    ratings = list(Rating.objects.filter(assignment__study=study, status="submitted").order_by("pk"))
    for n, rating in enumerate(ratings[:4]):
        first = next(iter(rating.answers["main"]))
        rating.answers["main"][first]["evidence"] = [1, 2 + n]
        if n == 1:
            rating.answers["section"][next(iter(rating.answers["section"]))]["evidence"] = [2]
        if n == 2:
            rating.answers["form_evidence"] = [1, 3]
        rating.save(update_fields=["answers"])
    return evidence_of(study)


def active_figures(study: Study) -> dict[str, Any]:
    """Return the active study's state as its page shows it (batches, estimates, the next batch), without units."""
    return active_state(active_plan_get(study)).as_dict(with_units=False)


def split_and_look(study: Study) -> None:
    """Split the study, declare the newest run's ensemble and one of its judges final, and evaluate both on the test set."""
    users = get_user_model().objects
    coordinator, researcher = users.get(username="coordinator"), users.get(username="researcher")
    split_make(study=study, actor=coordinator, n_test=12, seed=4242)
    run = judge_runs_for_study(study).first()
    judge = run.judges.order_by("name").first()
    for source in ("ensemble", f"judge:{judge.pk}"):
        declaration, _ = final_declare(study=study, run=run, source=source, actor=researcher, note="prompt frozen")
        test_set_evaluate(study=study, declaration=declaration, actor=researcher)


def build_demo_bundles() -> dict[str, Any]:
    """Seed the demo and return {study name: (bundle bytes, figures)}, the cited turns and the active state."""
    call_command("seed_demo", stdout=io.StringIO())
    demo = Study.objects.get(name=DEMO_STUDY)
    out: dict[str, Any] = {EVIDENCE: cite_turns(demo)}
    for name in (DEMO_STUDY, PLAN_STUDY, ACTIVE_STUDY):
        study = Study.objects.get(name=name)
        out[name] = (study_bundle_zip(study=study), study_figures(study))
    out[ACTIVE_STATE] = active_figures(Study.objects.get(name=ACTIVE_STUDY))
    split_and_look(demo)
    out[SPLIT] = (study_bundle_zip(study=demo), study_figures(demo))
    return out


# Reading, changing and importing a bundle in the tests.


def shift_ids() -> None:
    """Use up some ids of the corpus tables, so no imported row gets the id it had when exported.

    A bundle that carried database ids instead of codes would then fail the round trip whatever
    order the tests run in (the flush after seeding resets the id sequences).
    """
    ConversationFactory.create_batch(7)
    conversations = Conversation.objects.all()
    personas = Persona.objects.filter(conversations__in=conversations).distinct()
    sets = PersonaSet.objects.filter(personas__in=personas).distinct()
    targets = Target.objects.filter(conversations__in=conversations).distinct()
    persona_ids, set_ids, target_ids = list(personas.values_list("pk", flat=True)), list(sets.values_list("pk", flat=True)), list(targets.values_list("pk", flat=True))
    conversations.delete()
    Persona.objects.filter(pk__in=persona_ids).delete()
    PersonaSet.objects.filter(pk__in=set_ids).delete()
    Target.objects.filter(pk__in=target_ids).delete()
    # The study's and the judge runs' ids too: a file naming one (README.txt and METHODS.md did) differs then.
    instrument = Instrument.objects.create(key="id-shift", name="id shift", kind="checklist", content_hash="0" * 64)
    for n in range(3):
        Study.objects.create(name=f"id shift {n}", instrument=instrument).delete()
        JudgeRun.objects.create(name=f"id shift {n}", instrument=instrument, mode="checklist").delete()
    instrument.delete()


def fresh_import(data: bytes) -> BundleImportResult:
    """Import a bundle into the (empty) database, its corpus ids shifted first."""
    shift_ids()
    assert not Conversation.objects.exists() and not Study.objects.exists() and not Instrument.objects.exists()
    return bundle_import(data=data, file="bundle.zip")


def rewrite(data: bytes, changes: dict[str, bytes | None], *, fix_manifest: bool = True) -> bytes:
    """Return the bundle with files replaced (None: removed), the manifest's checksums updated unless told not to."""
    source = zipfile.ZipFile(io.BytesIO(data))
    files = {name: source.read(name) for name in source.namelist()}
    for name, content in changes.items():
        if content is None:
            files.pop(name, None)
        else:
            files[name] = content
    if fix_manifest:
        manifest = json.loads(files["manifest.json"])
        for entry in manifest["files"]:
            if entry["path"] in files:
                entry["sha256"] = hashlib.sha256(files[entry["path"]]).hexdigest()
        files["manifest.json"] = json.dumps(manifest).encode()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, content in files.items():
            archive.writestr(name, content)
    return out.getvalue()


def bundle_text(data: bytes, name: str) -> str:
    """Return one file of a bundle as text."""
    return zipfile.ZipFile(io.BytesIO(data)).read(name).decode()


def rejected(data: bytes) -> list[str]:
    """Import a bundle that must be refused; check nothing was imported; return the problems as text."""
    with pytest.raises(ImportRejected) as caught:
        bundle_import(data=data, file="bundle.zip")
    assert not Study.objects.exists() and not Conversation.objects.exists() and not Instrument.objects.exists()
    assert not JudgeRun.objects.exists()
    return [str(p) for p in caught.value.problems]
