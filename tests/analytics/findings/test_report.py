"""The self-contained HTML report (analytics/findings/report.py, CLI ``report``).

The workspace: the judged tiny workspace (runs of nine tiny models over ``tiny-suite``, judgments by
``ana`` and ``ben``) plus the suite fixtures' background keyword table and a consensus.

"No network resource" is checked on what a browser would fetch or follow: the ``src`` of every
element (``<script src>``, ``<img src>``, ``<iframe src>`` ...), the ``href`` of every element and
``url(...)`` in CSS (``<style>`` and ``style=`` attributes). Plotly's embedded bundle contains URL strings in its code (documentation links,
optional topojson and MathJax locations that are never loaded here), so the text of the inline
script is not searched; the browser test (tests/e2e/test_browser_report.py) opens the report with
the network blocked.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import numpy as np
import pandas as pd
import pytest
from plotly.offline import get_plotlyjs

from analytics.assessor import features_table, fit_assessor, human_labels, predict, shapley_values
from analytics.cli import main
from analytics.exceptions import InvalidInputError
from analytics.findings import SECTIONS, build_report, failure_table, flips, fooling_backgrounds
from analytics.findings.report import thumbnail_uri
from analytics.judging import add_consensus
from analytics.keywords import save_keyword_table
from analytics.robustness.bgchallenge import evaluate_variants, gaps, workspace_data
from analytics.runs import SIGNALS, list_runs
from analytics.suites.store import name_suite
from analytics.variance import MatrixSettings
from tests.fixtures.judging import JUDGMENTS, run_ids_by_model
from tests.fixtures.models import TINY_SUITE_N
from tests.fixtures.suites import BACKGROUND_KEYWORDS, BACKGROUND_TABLE, onehot_table

SUITE = "tiny-suite"
MAX_BYTES = 15 * 1024 * 1024


class Resources(HTMLParser):
    """What a browser would fetch or follow: the src of any element, the href of any element (links
    and anchors), the ids of sections, and the text of inline styles (for CSS ``url(...)``)."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []
        self.hrefs: list[str] = []
        self.sections: list[str] = []
        self.styles: list[str] = []
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if values.get("src"):
            self.urls.append(values["src"])
        if values.get("href"):
            self.hrefs.append(values["href"])
        if values.get("style"):
            self.styles.append(values["style"])
        if tag == "section":
            self.sections.append(values.get("id") or "")
        self._in_style = tag == "style"

    def handle_endtag(self, tag: str) -> None:
        self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self.styles.append(data)


def parse(text: str) -> Resources:
    parsed = Resources()
    parsed.feed(text)
    return parsed


def section(text: str, name: str) -> str:
    """The HTML of one section."""
    begin = text.index(f"<section id='{name}'>")
    return text[begin : text.index("</section>", begin)]


@pytest.fixture
def report_workspace(judged_workspace):
    """The judged workspace with a background keyword table and a consensus on ``tiny``."""
    backgrounds = [row["id"] for row in judged_workspace.query("SELECT id FROM backgrounds ORDER BY id")]
    save_keyword_table(judged_workspace, onehot_table(backgrounds, BACKGROUND_KEYWORDS), name=BACKGROUND_TABLE, item_kind="background")
    add_consensus(judged_workspace, model="tiny", suite_id=SUITE, label="variant", reason="looks at the background", adjudicator="lead")
    return judged_workspace


@pytest.fixture
def report(report_workspace) -> tuple[str, list[tuple[int, int]]]:
    """The report of ``tiny`` beside ``bg-only`` and the unjudged ``net6``, and its progress calls."""
    calls: list[tuple[int, int]] = []
    text = build_report(report_workspace, "tiny", compare=["bg-only", "net6"], per_class=2, flip_count=3, progress=lambda *call: calls.append(call))
    return text, calls


def test_report_holds_every_section_fetches_nothing_and_stays_small(report):
    text, calls = report
    parsed = parse(text)
    assert parsed.sections == list(SECTIONS)
    assert calls == [(k, len(SECTIONS)) for k in range(1, len(SECTIONS) + 1)]
    assert parsed.urls, "the gallery's images have a src"
    assert all(url.startswith("data:image/jpeg;base64,") for url in parsed.urls)
    assert sorted(set(parsed.hrefs)) == sorted(f"#{name}" for name in SECTIONS)  # links only jump within the page
    assert parsed.styles and not any(re.search(r"url\(", style) for style in parsed.styles)
    assert text.count(get_plotlyjs()[:200]) == 1  # the bundle, once
    # one matrix per signal and model, plus the keyword x model heat map
    assert text.count("Plotly.newPlot(") == len(SIGNALS) * 3 + 1
    assert "@media print" in text
    assert len(text.encode()) < MAX_BYTES / 2  # far under the limit
    assert max(len(url) for url in parsed.urls) < 16_000  # thumbnails stay small


def test_report_content_sections_galleries_flips_and_assessor(report_workspace, report):
    text, _ = report
    failures = section(text, "failures")
    assert f"table {BACKGROUND_TABLE}" in failures
    for keyword in ("sky", "sea", "sand"):
        assert f"<td>{keyword}</td>" in failures
    judgments = section(text, "judgments")
    assert "ana" in judgments and "ben" in judgments and JUDGMENTS["tiny"][0] in judgments
    assert "looks at the background" in judgments
    assert "net1" not in judgments  # only the reported models
    provenance = section(text, "provenance")
    assert "licence" in provenance and "bg00" in provenance
    assert "The suite used no ontology." in provenance and "<h3>Seeds</h3>" in provenance
    # galleries and flips (one report for every content check: builds are slow on CI's shared cores)
    run_id = run_ids_by_model(report_workspace)["tiny"]
    fooling = fooling_backgrounds(report_workspace, run_id, per_class=2)
    gallery = section(text, "gallery")
    for class_name, part in fooling.items():
        assert f"<h3>{class_name}</h3>" in gallery
        for item in (*part.hurt, *part.already_wrong):
            assert f"{item.target_id} ({class_name}) on {item.background_id}" in gallery
    assert gallery.count("<div class='card'>") == sum(len(part) for part in fooling.values())
    assert gallery.count("<h4>Already wrong on the original</h4>") == sum(bool(part.already_wrong) for part in fooling.values())
    assert gallery.count("<img ") == 2 * gallery.count("<div class='card'>")  # original and composite
    flipped = flips(report_workspace, run_id, limit=3)
    assert flipped, "the tiny model flips some composites"
    cards = section(text, "flips")
    assert cards.count("<div class='card'>") == len(flipped)
    # TorchScript models offer no layer for Grad-CAM: vanilla gradients, on original and composite
    assert cards.count("alt='saliency on the original") == cards.count("alt='saliency on the composite") == len(flipped)
    assert "(saliency; red = high)" in cards
    # the assessor's verdict and explanation per reported model
    runs = run_ids_by_model(report_workspace)
    features = features_table(report_workspace, list(runs.values()), settings=MatrixSettings.of("smooth"))
    labels = human_labels(report_workspace, SUITE)
    fitted = fit_assessor(features, labels, kind="random_forest", seed=0)
    models = ["tiny", "bg-only", "net6"]
    expected = predict(fitted, features.loc[models])["label"]
    assessor = section(text, "assessor")
    assert f"trained on the {len(labels)} labelled models" in assessor
    for model in models:
        assert f"<h3>Why {model} is {expected[model]}</h3>" in assessor
    top = shapley_values(fitted, features.loc[["net6"]]).values.loc["net6"].abs().idxmax()
    assert f"<td>{top}</td>" in assessor[assessor.index("<h3>Why net6") :]  # the strongest feature is listed
    # issue 27.7: the summary leads (verdicts, accuracy drop, worst scenes, one picture); provenance is a collapsed appendix
    assert next(iter(SECTIONS)) == "summary" and text.index("<section id='summary'>") < text.index("<section id='accuracy'>")
    summary = section(text, "summary")
    rows = [re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row, re.DOTALL) for row in re.findall(r"<tr[^>]*>(.*?)</tr>", summary, re.DOTALL)]
    table = pd.DataFrame(rows[1:], columns=rows[0]).set_index("model")
    assert list(table.index) == models
    assert table.loc["tiny", "human label"] == "variant" and table.loc["net6", "human label"] == "not judged"  # consensus; nobody judged net6
    assert table["assessor verdict"].to_dict() == expected.to_dict()
    run = list_runs(report_workspace, model="tiny").iloc[0]
    assert table.loc["tiny", "drop (points)"] == f"{100 * (run['original_accuracy'] - run['worst_case_accuracy']):.0f}"
    worst = failure_table(report_workspace, run_id, min_count=1).keywords.sort_values("error_rate", ascending=False, kind="stable")
    assert f"{worst['keyword'].iloc[0]} ({worst['error_rate'].iloc[0]:.0%} of {worst['count'].iloc[0]} composites wrong)" in summary
    assert summary.count("<img ") == 2  # one flip: original and composite
    assert re.search(r"<details><summary>[^<]*licence[^<]*</summary>", provenance) and "<details open" not in provenance
    # the keyword x model heat map's margins grow to its labels (no clipped keywords)
    heat = section(text, "failures")
    assert '"automargin":true' in heat.replace(" ", "")


def test_the_report_names_the_suite_by_its_label_and_keeps_the_ids_in_the_appendix(judging_workspace):
    """Issue 27.10: the header calls the suite by the user's name (HTML-escaped), not its hex id."""
    name_suite(judging_workspace, SUITE, "Cups & co")
    text = build_report(judging_workspace, "tiny", per_class=1, flip_count=1)
    label = f"Cups &amp; co (random, N = {TINY_SUITE_N}, seed 0, 6 targets)"
    meta = re.search(r"<p class='meta'>(.*?)</p>", text).group(1)
    assert f"Suite {label}" in meta and SUITE not in meta
    provenance = section(text, "provenance")
    assert f"<td>{label}</td>" in provenance and f"<td>{SUITE}</td>" in provenance and "run id" in provenance


def test_without_enough_labels_the_assessor_section_says_so(judging_workspace):
    text = build_report(judging_workspace, "tiny")
    assert "No assessor trained on this suite: the assessor needs judged models" in section(text, "assessor")


def test_backgrounds_challenge_only_when_already_computed(report_workspace):
    before = build_report(report_workspace, "bg-only")
    assert "Not computed for bg-only" in section(before, "accuracy")
    assert not report_workspace.query("SELECT key FROM cache WHERE key LIKE 'bgchallenge/%'")  # the report computed nothing
    table = evaluate_variants(report_workspace, "bg-only", workspace_data(report_workspace), seed=0, device="cpu")
    after = section(build_report(report_workspace, "bg-only", compare=["tiny"]), "accuracy")
    assert "BG-Gap" in after and f"<td>{gaps(table)['bg_gap']:.3f}</td>" in after
    assert "Not computed for tiny" in after


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
