"""The self-contained HTML report (analytics/report.py, CLI ``report``).

The workspace: the judged tiny workspace (runs of nine tiny models over ``tiny-suite``, judgments by
``ana`` and ``ben``) plus the suite fixtures' background keyword table and a consensus.

"No network resource" is checked on what a browser would fetch: the ``src`` of every element
(``<script src>``, ``<img src>``, ``<iframe src>`` ...), the ``href`` of every ``<link>`` and
``url(...)`` in CSS. Plotly's embedded bundle contains URL strings in its code (documentation links,
optional topojson and MathJax locations that are never loaded here), so the text of the inline
script is not searched; the browser test (tests/e2e/test_browser_report.py) opens the report with
the network blocked.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import numpy as np
import pytest
from plotly.offline import get_plotlyjs

from analytics.adjudication import add_consensus
from analytics.cli import main
from analytics.exceptions import InvalidInputError
from analytics.keywords import save_keyword_table
from analytics.report import SECTIONS, build_report, thumbnail_uri
from tests.fixtures.judging import JUDGMENTS
from tests.fixtures.suites import BACKGROUND_KEYWORDS, BACKGROUND_TABLE, onehot_table

SUITE = "tiny-suite"
MAX_BYTES = 15 * 1024 * 1024


class Resources(HTMLParser):
    """Every fetchable reference: src of any element, href of <link>, and the ids of sections."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []
        self.sections: list[str] = []
        self.scripts = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if values.get("src"):
            self.urls.append(values["src"])
        if tag == "link" and values.get("href"):
            self.urls.append(values["href"])
        if tag == "section":
            self.sections.append(values.get("id") or "")
        self.scripts += tag == "script"


@pytest.fixture
def report_workspace(judged_workspace):
    """The judged workspace with a background keyword table and a consensus on ``tiny``."""
    backgrounds = [row["id"] for row in judged_workspace.query("SELECT id FROM backgrounds ORDER BY id")]
    save_keyword_table(judged_workspace, onehot_table(backgrounds, BACKGROUND_KEYWORDS), name=BACKGROUND_TABLE, item_kind="background")
    add_consensus(judged_workspace, model="tiny", suite_id=SUITE, label="variant", reason="looks at the background", adjudicator="lead")
    return judged_workspace


def test_report_holds_every_section_and_fetches_nothing(report_workspace):
    text = build_report(report_workspace, "tiny", compare=["bg-only", "fg-only"])
    parsed = Resources()
    parsed.feed(text)
    assert parsed.sections == list(SECTIONS)
    assert parsed.urls, "the gallery's images have a src"
    assert all(url.startswith("data:image/jpeg;base64,") for url in parsed.urls)
    assert not re.search(r"url\(\s*['\"]?https?:", text)
    assert text.count(get_plotlyjs()[:200]) == 1  # the bundle, once
    assert len(text.encode()) < MAX_BYTES
    # four matrices per model, plus the keyword x model heat map
    assert text.count("Plotly.newPlot(") == 4 * 3 + 1
    assert "@media print" in text


def test_report_content(report_workspace):
    text = build_report(report_workspace, "tiny", compare=["bg-only"])
    failures = text[text.index("<section id='failures'>") : text.index("<section id='gallery'>")]
    assert f"table {BACKGROUND_TABLE}" in failures
    for keyword in ("sky", "sea", "sand"):
        assert f"<td>{keyword}</td>" in failures
    judgments = text[text.index("<section id='judgments'>") : text.index("<section id='provenance'>")]
    assert "ana" in judgments and "ben" in judgments and JUDGMENTS["tiny"][0] in judgments
    assert "looks at the background" in judgments
    assert "net1" not in judgments  # only the reported models
    provenance = text[text.index("<section id='provenance'>") :]
    assert "licence" in provenance and "bg00" in provenance
    assert text.count("<div class='card'>") == 12


def test_unknown_model_names_the_fix(report_workspace):
    with pytest.raises(InvalidInputError, match="no current finished run of nobody"):
        build_report(report_workspace, "tiny", compare=["nobody"])


def test_thumbnail_is_a_small_jpeg_data_uri():
    image = np.random.default_rng(0).integers(0, 255, (224, 224, 3), dtype=np.uint8)
    uri = thumbnail_uri(image, size=64, quality=50)
    assert uri.startswith("data:image/jpeg;base64,")
    assert len(uri) < image.nbytes / 10
    with pytest.raises(InvalidInputError, match="quality"):
        thumbnail_uri(image, quality=0)


def test_cli_writes_the_report(report_workspace, tmp_path, capsys):
    out = tmp_path / "report.html"
    code = main(["report", "--workspace", str(report_workspace.root), "--model", "tiny", "--compare", "bg-only", "--out", str(out), "--json"])
    assert code == 0
    result = json.loads(capsys.readouterr().out)
    assert result["out"] == str(out) and result["bytes"] == out.stat().st_size
    assert "<section id='provenance'>" in out.read_text()
    assert main(["report", "--workspace", str(report_workspace.root), "--model", "tiny", "--out", str(tmp_path)]) == 2
