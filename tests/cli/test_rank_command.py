"""``python benchmark.py rank TABLE.csv``: a table of per-system means ranked
by URGENT's rule, its JSON, and one line per problem of a malformed table."""
from __future__ import annotations

import json

import pytest

from nsbench.cli import main
from tests.helpers.paths import REPO_ROOT

EXAMPLE = REPO_ROOT / "examples" / "urgent_leaderboard.csv"


def test_the_example_leaderboard_ranks_as_worked_by_hand(tmp_path, capsys):
    out = tmp_path / "ranking.json"
    assert main(["rank", str(EXAMPLE), "--decimals", "2", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    ranking = json.loads(out.read_text())
    rows = {row["system"]: row for row in ranking["systems"]}
    # team-a: dnsmos 1 (tied with b, dense), nisqa 1 -> 1.0; pesq 2, estoi 2, lsd 2 -> 2.0; wer 1 -> 1.0: 4/3
    assert rows["team-a"]["category_ranks"] == {"non-intrusive": 1.0, "intrusive": 2.0, "downstream": 1.0}
    assert rows["team-a"]["overall_score"] == pytest.approx(4 / 3, abs=1e-12)
    assert [row["system"] for row in ranking["systems"]] == ["team-a", "team-b", "baseline", "noisy"]
    assert rows["noisy"]["metric_ranks"]["lsd"] == 4  # lower is better: the noisy input's 3.21 is worst
    assert ranking["settings"]["ties"] == "dense" and ranking["settings"]["decimals"] == 2
    assert printed.splitlines()[1].split()[:3] == ["1", "team-a", "1.33"]


def test_min_ties_change_the_rank_after_a_tie(tmp_path, capsys):
    out = tmp_path / "ranking.json"
    assert main(["rank", str(EXAMPLE), "--ties", "min", "--json", str(out)]) == 0
    rows = {row["system"]: row for row in json.loads(out.read_text())["systems"]}
    assert rows["baseline"]["metric_ranks"]["dnsmos_ovrl"] == 3  # 1, 1, then 3 ("1224")


def test_a_malformed_table_gives_one_line_per_problem_and_exit_2(tmp_path, capsys):
    table = tmp_path / "bad.csv"
    table.write_text("system,a,b\ndirection,up,higher\ncategory,x,y\nfoo,1,zz\nfoo,2,\n")
    assert main(["rank", str(table)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines == [
        f"nsbench: error: {table}: row 2: direction of 'a' is 'up': say higher or lower",
        f"nsbench: error: {table}: row 4: b of 'foo' is 'zz', not a number",
        f"nsbench: error: {table}: row 5: system 'foo' appears twice",
    ]


@pytest.mark.parametrize("text, message", [
    ("", "empty"),
    ("name,a\ndirection,higher\ncategory,x\ns,1\n", "row 1 must start with 'system'"),
    ("system,a,b\ndirection,higher\ncategory,x,y\ns,1,2\n", "row 2 has 2 cells, the header 3"),
    ("system,a\ndirection,higher\ncategory,-\ns,1\n", "no metric has a category"),
    ("system,a\ndirection,higher\ncategory,x\n", "no system rows"),
])
def test_each_problem_is_named(tmp_path, capsys, text, message):
    table = tmp_path / "t.csv"
    table.write_text(text)
    assert main(["rank", str(table)]) == 2
    assert message in capsys.readouterr().err


def test_a_missing_file_and_a_binary_file_are_one_line(tmp_path, capsys):
    assert main(["rank", str(tmp_path / "none.csv")]) == 2
    binary = tmp_path / "b.csv"
    binary.write_bytes(b"\xff\xfe\x00system")
    assert main(["rank", str(binary)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "cannot read it" in err[0] and "not UTF-8" in err[1]


def test_json_never_replaces_a_file_nsbench_did_not_write(tmp_path, capsys):
    theirs = tmp_path / "notes.json"
    theirs.write_text('{"mine": true}')
    assert main(["rank", str(EXAMPLE), "--json", str(theirs)]) == 2
    assert theirs.read_text() == '{"mine": true}'
    ours = tmp_path / "ranking.json"
    assert main(["rank", str(EXAMPLE), "--json", str(ours)]) == 0
    assert main(["rank", str(EXAMPLE), "--ties", "min", "--json", str(ours)]) == 0  # its own: replaced
    assert json.loads(ours.read_text())["settings"]["ties"] == "min"
