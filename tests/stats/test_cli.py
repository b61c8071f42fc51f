"""The command line, run as a separate process: tables, JSON, and clear input errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

GOOD = """unit,rater,item,label
c1,h1,q1,yes
c1,h2,q1,yes
c1,h3,q1,no
c2,h1,q1,no
c2,h2,q1,no
c2,h3,q1,
c3,h1,q1,N/A
c3,h2,q1,n/a
c3,h3,q1,yes
c1,h1,q2,1
c1,h2,q2,2
c2,h1,q2,4
c2,h2,q2,4
"""


def run(*args: str, module: str = "stats") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
    )


@pytest.fixture
def good_csv(tmp_path: Path) -> Path:
    path = tmp_path / "ratings.csv"
    path.write_text(GOOD, encoding="utf-8")
    return path


def test_prints_a_table_with_pooled_and_each_item(good_csv: Path) -> None:
    result = run("agreement", str(good_csv))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert any(line.startswith("pooled") for line in lines)
    assert any(line.startswith("q1") for line in lines)
    assert "N/A: category" in result.stdout


def test_the_reports_stats_command_of_older_notes_gives_the_same_output(good_csv: Path) -> None:
    assert run("agreement", str(good_csv), module="reports.stats").stdout == run("agreement", str(good_csv)).stdout


def test_json_has_pooled_and_items_with_the_documented_keys(good_csv: Path) -> None:
    result = run("agreement", str(good_csv), "--json", "--bootstrap", "200", "--seed", "7")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    for block in [data["pooled"], *data["items"].values()]:
        for key in (
            "n_units",
            "n_raters",
            "percent_agreement",
            "fleiss_kappa",
            "fleiss_p0",
            "fleiss_pe",
            "krippendorff_alpha",
            "gwet_ac1",
            "krippendorff_alpha_ci",
        ):
            assert key in block
    assert set(data["items"]) == {"q1", "q2"}
    assert data["bootstrap"]["seed"] == 7


def test_same_seed_gives_the_same_json(good_csv: Path) -> None:
    args = ("agreement", str(good_csv), "--json", "--bootstrap", "50", "--seed", "1")
    assert run(*args).stdout == run(*args).stdout


def test_na_exclude_and_ordinal_level(tmp_path: Path) -> None:
    path = tmp_path / "scale.csv"
    path.write_text(
        "unit,rater,item,label\nu1,a,r,1\nu1,b,r,2\nu2,a,r,5\nu2,b,r,4\nu3,a,r,N/A\nu3,b,r,3\n",
        encoding="utf-8",
    )
    result = run("agreement", str(path), "--level", "ordinal", "--na", "exclude", "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["na_policy"] == "exclude" and data["level"] == "ordinal"
    assert data["items"]["r"]["n_na_excluded"] == 1


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("unit,rater,label\nu1,a,yes\n", "line 1: header column 'item' missing"),
        ("unit,rater,item,label\nu1,a,q1,yes\nu1,b,q1\n", "line 3: expected 4 fields, found 3"),
        ("unit,rater,item,label\nu1,,q1,yes\n", "line 2, column 'rater': rater is empty"),
        ("unit,rater,item,label\nu1,a,q1,yes\n\nu1,a,q1,no\n", "line 4: duplicate rating"),
        ("unit,rater,item,label\n", "no rating rows"),
        ("", "empty file"),
    ],
)
def test_bad_files_give_a_located_error_and_exit_2(
    tmp_path: Path, content: str, expected: str
) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(content, encoding="utf-8")
    result = run("agreement", str(path))
    assert result.returncode == 2
    assert expected in result.stderr
    assert str(path) in result.stderr
    assert "Traceback" not in result.stderr


def test_non_numeric_labels_at_ordinal_level_name_the_line_and_column(good_csv: Path) -> None:
    result = run("agreement", str(good_csv), "--level", "ordinal")
    assert result.returncode == 2
    assert "line 2, column 'label'" in result.stderr and "'yes'" in result.stderr
    assert "Traceback" not in result.stderr


def test_labels_outside_the_order_are_located(good_csv: Path) -> None:
    result = run("agreement", str(good_csv), "--order", "no,yes,N/A")
    assert result.returncode == 2
    assert "line 11, column 'label': label '1' is not in --order" in result.stderr


def test_a_missing_file_and_bad_options_exit_2(tmp_path: Path) -> None:
    missing = run("agreement", str(tmp_path / "nope.csv"))
    assert missing.returncode == 2 and "file not found" in missing.stderr
    bad_option = run("agreement", str(tmp_path / "nope.csv"), "--level", "ratio")
    assert bad_option.returncode == 2 and "Traceback" not in bad_option.stderr


def test_non_utf8_files_are_reported(tmp_path: Path) -> None:
    path = tmp_path / "latin1.csv"
    path.write_bytes("unit,rater,item,label\nu1,a,q1,caf\xe9\n".encode("latin-1"))
    result = run("agreement", str(path))
    assert result.returncode == 2 and "not UTF-8" in result.stderr
