"""The VERA-MH figures of docs/reproduce-vera-mh.md are a fresh run of the app, not typed by hand (issue 31, defect 8c).

The page said [0.710, 0.820] where the app prints [0.706, 0.816]. ``bench/reproduce_vera_mh.py``
writes the page's figures block from ``python -m stats agreement --format vera-mh``; here it is
regenerated from the published ratings and compared with the page (skipped, with the reason, when
the published file is not on the machine), and its rendering is checked on a small file of the format.
"""

from __future__ import annotations

import pytest

from stats.report import DEFAULT_RESAMPLES, DEFAULT_SEED, agreement_report
from stats.vera import DIMENSION_LABELS, read_vera_ratings
from tests.support.bench import load_bench

from .test_vera_ratings import BP, HPH, NR, SUB, crlf, row


@pytest.fixture(scope="module")
def script():  # type: ignore[no-untyped-def]
    return load_bench("reproduce_vera_mh", "reproduce_vera_mh")


def test_the_page_holds_one_generated_block(script):  # type: ignore[no-untyped-def]
    text = script.DOC.read_text(encoding="utf-8")
    assert text.count(script.BEGIN) == 1 and text.count(script.END) == 1
    block = script.documented_block(text)
    assert "| **pooled, five dimensions** |" in block and "[0.710, 0.820]" not in block


def test_the_page_holds_a_fresh_run_on_the_published_ratings(script):  # type: ignore[no-untyped-def]
    path = script.find_ratings()
    if path is None:
        pytest.skip("the published VERA-MH clinician ratings CSV ('VERA-MH Clinician Ratings_December 2025.csv') is not on "
                    f"this machine: looked under {', '.join(map(str, script.SEARCHED))} and VERA_MH_RATINGS")
    documented = script.documented_block(script.DOC.read_text(encoding="utf-8"))
    assert documented == script.figures_block(path), "run: .venv/bin/python bench/reproduce_vera_mh.py --write"


def test_the_block_is_the_app_computation_of_the_file(script, tmp_path):  # type: ignore[no-untyped-def]
    patterns = [(BP, HPH, HPH, SUB, BP), (BP, SUB, SUB, SUB, BP), (NR, NR, NR, NR, NR), (BP, BP, HPH, BP, SUB)]
    rows = [row(f"clinician_{r}", f"{c:06x}", dims=patterns[(c + (r == "c" and c % 3 == 0)) % 4]) for c in range(16) for r in "abc"]
    path = tmp_path / "VERA-MH Clinician Ratings_test.csv"
    path.write_bytes(crlf(*rows).encode())
    block = script.figures_block(path)
    lines = block.splitlines()
    assert lines[0] == script.BEGIN and lines[-1] == script.END
    parsed = read_vera_ratings(path.read_text(encoding="utf-8-sig"), str(path))
    # The CLI's defaults, which are the reliability page's: 1,000 resamples, seed 20260101, conversations resampled.
    report = agreement_report(parsed.long_rows(), order=list(DIMENSION_LABELS), bootstrap=DEFAULT_RESAMPLES, seed=DEFAULT_SEED)
    pooled = report.pooled
    ci = pooled.cis["krippendorff_alpha"]
    assert lines[3] == (f"| **pooled, five dimensions** | 80 | 3 | 240 | {pooled.percent_agreement:.3f} | "
                        f"**{pooled.krippendorff_alpha:.3f}** [{ci.low:.3f}, {ci.high:.3f}] | {pooled.fleiss_kappa:.3f} | "
                        f"{pooled.gwet_ac1:.3f} |")
    assert [line.split(" | ")[0] for line in lines[4:9]] == [f"| {name}" for name in report.items]
    assert f"Pooled α = {pooled.krippendorff_alpha:.4f}" in block and "resamples the 16 conversations" in block
