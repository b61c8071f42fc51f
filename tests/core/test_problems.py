from core.problems import ImportRejected, Problem, group_problems


def test_identical_problems_are_counted_once_with_their_first_lines():
    problems = [Problem("unknown item key 'x'", "r.csv", line, "item") for line in range(2, 272)]
    summary = group_problems(problems)
    assert summary.total == 270
    assert len(summary.groups) == 1
    assert str(summary.groups[0]) == "r.csv, column item: unknown item key 'x': 270 rows, first at lines 2, 3, 4, 5, 6, ..."


def test_different_messages_stay_separate_in_order_of_first_appearance():
    problems = [
        Problem("b is wrong", "f", 3, "b"),
        Problem("a is wrong", "f", 2, "a"),
        Problem("b is wrong", "f", 4, "b"),
        Problem("b is wrong", "g", 4, "b"),
    ]
    groups = group_problems(problems).groups
    assert [(g.file, g.message, g.count) for g in groups] == [("f", "b is wrong", 2), ("f", "a is wrong", 1), ("g", "b is wrong", 1)]
    assert str(groups[1]) == "f, line 2, column a: a is wrong"


def test_the_listing_is_capped_and_says_how_many_kinds_are_hidden():
    problems = [Problem("problem of kind " + chr(65 + n // 26) + chr(65 + n % 26), "f", n) for n in range(1, 121)]
    summary = group_problems(problems, limit=50)
    lines = summary.lines()
    assert len(summary.groups) == 50 and summary.hidden_groups == 70
    assert lines[-1] == "... and 70 more kind(s) of problem not listed"


def test_import_rejected_report_is_grouped():
    exc = ImportRejected([Problem("empty", "f", n, "label") for n in (5, 9)])
    assert exc.report() == "f, column label: empty: 2 rows, first at lines 5, 9"


def test_a_kind_with_many_different_values_is_counted_as_one_row():
    problems = [Problem(f"unknown unit 'C-{n}'", "r.csv", n + 1, "unit") for n in range(1, 401)]
    groups = group_problems(problems).groups
    assert [(g.message, g.count) for g in groups] == [("unknown unit '…'", 400)]


def test_a_kind_with_few_different_values_lists_each_exactly():
    problems = [Problem("GOTO target 'x' of question 3 is unknown", "r.tsv", 10, "GOTO"),
                Problem("GOTO target 'y' of question 7 is unknown", "r.tsv", 14, "GOTO")]
    assert group_problems(problems).lines() == [
        "r.tsv, line 10, column GOTO: GOTO target 'x' of question 3 is unknown",
        "r.tsv, line 14, column GOTO: GOTO target 'y' of question 7 is unknown",
    ]


def test_only_the_first_problems_are_kept_in_full_but_all_are_counted():
    rejected = ImportRejected([Problem(f"bad row {n}", "f", n) for n in range(1, 100_001)])
    assert len(rejected.problems) == 100 and rejected.problems.total == 100_000
    assert sum(g.count for g in rejected.problems.groups()) == 100_000
