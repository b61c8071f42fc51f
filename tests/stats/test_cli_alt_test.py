"""``python -m stats alt-test``: long files and the VERA-MH format, JSON and text, located input errors."""

from __future__ import annotations

import csv
import json
import subprocess
import sys

import numpy as np
import pytest

from stats.alt_test import alt_test_long
from stats.cli import main

from .test_vera_ratings import BP, HPH, NR, SUB, crlf, row


def _write(path, header, rows):
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def _data(seed: int = 0, n: int = 40):
    rng = np.random.default_rng(seed)
    truth = {(f"u{c}", item): "yes" if rng.random() < 0.5 else "no" for c in range(n) for item in ("q1", "q2")}
    ratings = []
    for (unit, item), t in truth.items():
        for r in ("ana", "ben", "cy"):
            ratings.append((unit, r, item, t if rng.random() < 0.85 else ("no" if t == "yes" else "yes")))
    votes: dict = {}
    for unit, _, item, label in ratings:
        votes.setdefault((unit, item), []).append(label)
    majority = {k: max(("yes", "no"), key=v.count) for k, v in votes.items()}
    # The judges spell labels their own way: "YES" and " yes" are "yes".
    judges = [(u, "majority", i, majority[(u, i)].upper()) for (u, i) in truth]
    judges += [(u, "always-yes", i, " yes") for (u, i) in truth]
    return ratings, judges


def test_json_gives_each_judge_the_same_test_as_the_library(tmp_path, capsys):
    ratings, judges = _data()
    r = _write(tmp_path / "ratings.csv", ["unit", "rater", "item", "label"], ratings)
    j = _write(tmp_path / "judges.csv", ["unit", "judge", "item", "label"], judges)
    assert main(["alt-test", str(r), "--judges", str(j), "--epsilon", "0.15", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert list(out["judges"]) == ["majority", "always-yes"]
    assert out["judges"]["majority"]["passed"] is True and out["judges"]["majority"]["advantage_probability"] == 1.0
    assert out["judges"]["always-yes"]["passed"] is False
    expected = alt_test_long(ratings, [(u, i, lab.strip().lower()) for u, name, i, lab in judges if name == "always-yes"],
                             judge="always-yes", epsilon=0.15).as_dict()
    assert out["judges"]["always-yes"] == json.loads(json.dumps(expected))
    assert {"epsilon", "winning_rate", "advantage_probability", "passed", "per_rater", "items"} <= set(out["judges"]["majority"])


def test_text_output_reads_as_a_verdict(tmp_path, capsys):
    ratings, judges = _data(1)
    r = _write(tmp_path / "ratings.csv", ["unit", "rater", "item", "label"], ratings)
    j = _write(tmp_path / "judges.csv", ["unit", "judge", "item", "label"], judges)
    assert main(["alt-test", str(r), "--judges", str(j), "--epsilon", "0.2"]) == 0
    text = capsys.readouterr().out
    assert "majority: PASSED; winning rate 1.000, advantage probability 1.000" in text
    assert "always-yes: FAILED" in text and "judge wins" in text


def test_below_the_minimums_the_command_says_cannot_decide_yet(tmp_path, capsys):
    ratings, judges = _data(2, n=5)
    r = _write(tmp_path / "ratings.csv", ["unit", "rater", "item", "label"], ratings)
    j = _write(tmp_path / "judges.csv", ["unit", "judge", "item", "label"], judges)
    assert main(["alt-test", str(r), "--judges", str(j), "--epsilon", "0.2"]) == 0
    assert "majority: cannot decide yet: 0 raters with at least 30 instances" in capsys.readouterr().out


def test_the_vera_mh_ratings_format_is_read(tmp_path):
    dims = [(BP, HPH, HPH, SUB, BP), (BP, HPH, SUB, SUB, BP), (NR, NR, NR, NR, NR)]
    rows_ = [row(f"clinician_{r}", f"c{c}", dims=dims[(c + (r == "c")) % 3]) for c in range(12) for r in "abc"]
    path = tmp_path / "vera.csv"
    path.write_bytes(crlf(*rows_).encode())
    names = ["Detects Potential Risk", "Confirms Risk", "Guides to Human Care", "Supportive Conversation", "Follows AI Boundaries"]
    judge_rows = [(f"c{c}", "judge-1", name, label) for c in range(12) for name, label in zip(names, dims[c % 3], strict=True)]
    j = _write(tmp_path / "judges.csv", ["unit", "judge", "item", "label"], judge_rows)
    out = subprocess.run([sys.executable, "-m", "stats", "alt-test", str(path), "--format", "vera-mh", "--judges", str(j),
                          "--epsilon", "0.2", "--json"], capture_output=True, text=True, check=True).stdout
    result = json.loads(out)["judges"]["judge-1"]
    assert result["n_instances"] == 12 * 5 and {r["rater"] for r in result["per_rater"]} == {"clinician_a", "clinician_b", "clinician_c"}
    assert result["advantage_probability"] == 1.0  # the judge gives the majority label everywhere


@pytest.mark.parametrize(("content", "message"), [
    ("unit,judge,item\nu1,j,q1\n", "header column 'label' missing"),
    ("unit,judge,item,label\nu1,,q1,yes\n", "line 2, column 'judge': judge is empty"),
    ("unit,judge,item,label\nu1,j,q1,yes\nu1,j,q1,no\n", "line 3: duplicate label of unit 'u1' by judge 'j'"),
])
def test_a_bad_judges_file_is_an_error_naming_line_and_column(tmp_path, capsys, content, message):
    ratings, _ = _data()
    r = _write(tmp_path / "ratings.csv", ["unit", "rater", "item", "label"], ratings)
    j = tmp_path / "judges.csv"
    j.write_text(content, encoding="utf-8")
    assert main(["alt-test", str(r), "--judges", str(j), "--epsilon", "0.2"]) == 2
    assert message in capsys.readouterr().err


def test_an_epsilon_outside_the_unit_interval_is_refused(tmp_path, capsys):
    ratings, judges = _data()
    r = _write(tmp_path / "ratings.csv", ["unit", "rater", "item", "label"], ratings)
    j = _write(tmp_path / "judges.csv", ["unit", "judge", "item", "label"], judges)
    assert main(["alt-test", str(r), "--judges", str(j), "--epsilon", "2"]) == 2
    assert "epsilon must lie in [0, 1)" in capsys.readouterr().err


def test_judge_ids_with_a_leading_hash_match_the_ratings_as_in_the_published_file(tmp_path):
    """Issue 31, defect 6: '#' was stripped from the ratings' ids but not the judges', dropping 10 instances."""
    dims = [(BP, HPH, HPH, SUB, BP), (BP, HPH, SUB, SUB, BP), (NR, NR, NR, NR, NR)]
    unit = lambda c: f"#c{c}" if c % 4 == 0 else f"c{c}"  # noqa: E731
    rows_ = [row(f"clinician_{r}", unit(c), dims=dims[(c + (r == "c")) % 3]) for c in range(12) for r in "abc"]
    path = tmp_path / "vera.csv"
    path.write_bytes(crlf(*rows_).encode())
    names = ["Detects Potential Risk", "Confirms Risk", "Guides to Human Care", "Supportive Conversation", "Follows AI Boundaries"]
    judge_rows = [(unit(c), "judge-1", name, label) for c in range(12) for name, label in zip(names, dims[c % 3], strict=True)]
    j = _write(tmp_path / "judges.csv", ["unit", "judge", "item", "label"], judge_rows)
    out = subprocess.run([sys.executable, "-m", "stats", "alt-test", str(path), "--format", "vera-mh", "--judges", str(j),
                          "--epsilon", "0.2", "--json"], capture_output=True, text=True, check=True).stdout
    assert json.loads(out)["judges"]["judge-1"]["n_instances"] == 12 * 5
