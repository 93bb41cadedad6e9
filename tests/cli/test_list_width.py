"""``--list`` fits the terminal's width, cutting cells with an ellipsis, and
``--verbose`` prints them whole (issue 22: rows of over 400 characters)."""
from __future__ import annotations

import pytest

from nsbench.cli import main
from nsbench.listing import LIST_CHOICES, list_text
from nsbench.plugins.manager import get_plugin_manager
from nsbench.plugins.registry import build_registry
from nsbench.text import ELLIPSIS, fit_rows

KINDS = [kind for kind in LIST_CHOICES if kind != "cache"]  # cache lists folders, not a table


@pytest.fixture(scope="module")
def registered():
    manager = get_plugin_manager(load_entry_points=False)
    return build_registry(manager), manager


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("width", [100, 160])
def test_every_kind_fits_the_width(registered, kind, width):
    registry, manager = registered
    lines = list_text(kind, registry, manager, width=width).splitlines()
    assert max(len(line) for line in lines) <= width, kind
    whole = list_text(kind, registry, manager).splitlines()
    if max(len(line) for line in whole) > width:
        assert ELLIPSIS in "\n".join(lines) and "--verbose prints every cell whole" in lines[-1]
    else:
        assert lines == whole


def test_the_names_are_never_cut(registered):
    registry, manager = registered
    lines = list_text("metrics", registry, manager, width=90).splitlines()
    names = [line.split()[0] for line in lines[1:-1]]
    # The named sets (--metric vbd-row) follow the metrics.
    assert names == [record.spec.name for record in registry.metrics] + [record.spec.name for record in registry.metric_sets]


def test_list_cuts_to_the_terminal_and_verbose_prints_whole(registered, capsys, monkeypatch):
    registry, _ = registered
    description = registry.metrics.get("music_attenuation_db").spec.description
    assert len(description) > 100
    monkeypatch.setenv("COLUMNS", "120")  # what shutil.get_terminal_size reads first
    assert main(["--list", "metrics"]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 120 and description not in out
    assert main(["--list", "metrics", "--verbose"]) == 0
    assert description in capsys.readouterr().out


def test_fit_rows_caps_the_widest_columns_first():
    rows = [("name", "a", "b"), ("x", "short", "a long description of forty characters!!")]
    text, cut = fit_rows(rows, 30)
    assert cut and text.splitlines()[1] == "x     short  a long descripti" + ELLIPSIS
    assert fit_rows(rows, None) == fit_rows(rows, 200) and not fit_rows(rows, 200)[1]


def test_piped_output_is_whole(registered, capsys, monkeypatch):
    """Not a terminal and no $COLUMNS: nothing to fit, so a script reading
    the list (grep, a pipe) gets every cell."""
    registry, _ = registered
    monkeypatch.delenv("COLUMNS", raising=False)
    assert main(["--list", "metrics"]) == 0  # pytest's captured stdout is not a terminal
    assert registry.metrics.get("music_attenuation_db").spec.description in capsys.readouterr().out
