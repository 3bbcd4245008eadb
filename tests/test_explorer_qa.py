"""Fixes from a QA pass over the explorer's pages: long labels, honest charts, query
parameters, the comparison's messages and the failure-mode wording.

Reuses the pages module's trials (played once for the module)."""
import re
from pathlib import Path

import pytest
from test_explorer_pages import _as_player, as_researcher, researcher, trials  # noqa: F401

from explorer.importing import import_trial

LONG = "model-" + "x" * 194  # the importer keeps 200 characters
CSS = Path(__file__).resolve().parent.parent / "static" / "explorer" / "explorer.css"


@pytest.fixture
def long_label(trials, tmp_path):  # noqa: F811
    folder = _as_player(Path(trials["other"].source_path), tmp_path / "long", "model", LONG)
    return import_trial(folder).trial


def test_the_label_class_cuts_long_labels_with_an_ellipsis():
    rule = re.search(r"\.x-label \{([^}]*)\}", CSS.read_text()).group(1)
    assert "text-overflow: ellipsis" in rule and "max-width" in rule and "white-space: nowrap" in rule


@pytest.mark.parametrize("page", ["/explorer/", "/explorer/ladder/", "trial", "compare"])
def test_a_long_player_label_is_cut_on_the_page_with_the_whole_label_in_its_title(as_researcher, trials,  # noqa: F811
                                                                                 long_label, page):
    url = {"trial": f"/explorer/trials/{long_label.pk}/",
           "compare": f"/explorer/compare/?trial={long_label.pk}&trial={trials['other'].pk}"}.get(page, page)
    html = as_researcher.get(url).content.decode()
    assert html.count(f">{LONG}<") == len(re.findall(f'class="x-label[^"]*" title="{LONG}">{LONG}<', html)) > 0
