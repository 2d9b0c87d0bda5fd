"""A self-contained HTML report of a model's runs over one suite: one file, opened without a server.

:func:`build_report` writes, for a model (and the models it is compared with) over one suite, the
sections :data:`SECTIONS`:

0. ``summary``: the finding on one screen: per model the accuracy on the targets' own photos and under
   every background, the drop, the human label and the assessor's verdict; the model's worst scenes
   (keywords by error rate); one composite whose background changes the prediction;
1. ``accuracy``: accuracy, original and worst-case accuracy of every run (:func:`analytics.runs.list_runs`),
   and the Backgrounds Challenge (accuracy per variant, BG-Gap) of the models whose challenge results
   are already cached in the workspace (:func:`analytics.robustness.bgchallenge.evaluate_variants` with
   ``cached_only``: the report never computes them);
2. ``matrices``: the variance matrices (one per signal) of every run as interactive Plotly heatmaps, on the
   suite's fixed colour scale (:func:`analytics.runs.colour_scale.suite_colour_scale`);
3. ``failures``: the keyword failure table and ontology levels of the model
   (:func:`analytics.findings.failures.failure_table`) and the keyword x model heat map;
4. ``gallery``: per class, one composite per target, the background that lowers its true-class probability most
   (:func:`analytics.findings.galleries.fooling_backgrounds`), original and composite side by side, the
   targets already misclassified on their original apart;
5. ``flips``: composites whose prediction differs from the original's (:func:`analytics.findings.galleries.flips`),
   with saliency overlays of original and composite side by side (:func:`analytics.findings.galleries.item_saliency`:
   Grad-CAM, or vanilla gradients for models without a hookable layer);
6. ``judgments``: the judgments and consensus labels of the reported models;
7. ``assessor``: a random forest trained on the suite's labelled models
   (:func:`analytics.assessor.fit_assessor` on :func:`analytics.assessor.human_labels`), its verdict
   on each reported model and the Shapley values that explain it (:func:`analytics.assessor.shapley_values`);
   too few labelled models: the section says how many are needed;
8. ``provenance`` (an appendix, collapsed until opened): the suite's method, n, the seeds (sampling, bootstrap, assessor, challenge pairings),
   the ontology settings and keyword tables, every recorded parameter, warnings, the runs, and the id,
   origin, package and licence of each background.

Nothing is fetched when the file is opened: Plotly's JavaScript is embedded once in one inline
``<script>`` (figures are written with ``include_plotlyjs=False``), images are small JPEG
thumbnails in ``data:`` URIs and links only jump within the page. The layout prints (``@media print``:
each section on a new page, no break inside a figure, a table or a card, the navigation hidden).
Size: Plotly's bundle is ~4.8 MB; the images of a report add well under 1 MB at the default
thumbnail size, so a report of a few models stays under 15 MB.
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import html
import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import cv2
import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.offline import get_plotlyjs

from analytics._progress import Progress
from analytics._validation import check_positive_int
from analytics.assessor import ASSESSORS, VERDICT_ASSESSOR, VERDICT_SEED, features_table, fit_assessor, human_labels, predict, shapley_values
from analytics.data import background_label
from analytics.exceptions import BackdropError, InvalidInputError
from analytics.figures import X_SYMBOL, Y_SYMBOL, keyword_heatmap, variance_heatmap
from analytics.judging import current_consensus, latest_judgments
from analytics.robustness.bgchallenge import ChallengeData, evaluate_variants, gaps, variant_accuracy, workspace_data
from analytics.runs import EMBEDDING_RANGE, SIGNALS, current_runs, run_matrices, suite_colour_scale
from analytics.saliency import heat_overlay
from analytics.team import require_permission
from analytics.variance import MatrixSettings, VarianceMatrix
from analytics.workspace import Workspace, now

from .failures import BOOTSTRAP_SEED, FailureTable, failure_table, keyword_model_matrix
from .galleries import GalleryItem, flips, fooling_backgrounds, item_images, item_saliency

if TYPE_CHECKING:
    from analytics.models import LoadedModel

#: Section id -> title, in order (each is an ``<section id=...>``).
SECTIONS: dict[str, str] = {
    "summary": "Summary",
    "accuracy": "Accuracy and Backgrounds Challenge",
    "matrices": "Variance matrices",
    "failures": "Failures by scene keyword",
    "gallery": "Backgrounds that fool the model most, per class",
    "flips": "Flips: the background changes the prediction",
    "judgments": "Judgments and consensus",
    "assessor": "Assessor verdict",
    "provenance": "Appendix: suite provenance",
}
#: Scene keywords the summary names (the worst by error rate).
SUMMARY_KEYWORDS = 3
#: How many features explain each verdict (the assessor and its seed: analytics.assessor.VERDICT_ASSESSOR, VERDICT_SEED).
TOP_FEATURES = 8
#: Backgrounds Challenge settings looked up in the cache: the page's and the CLI's default seed,
#: hard paste first, then Backdrop's blend.
CHALLENGE_SEED, CHALLENGE_BLENDS = 0, (False, True)
#: Saliency methods tried in turn for the flips: Grad-CAM needs a hookable layer (not TorchScript).
SALIENCY_METHODS = ("gradcam", "saliency")
_SQUARE_PX = 360
_PLOTLY_CONFIG = {"displaylogo": False, "responsive": True}
_CSS = """
body { font-family: system-ui, sans-serif; margin: 1.5rem auto; max-width: 1400px; color: #222; }
h1 { margin-bottom: 0.2rem; } .meta { color: #666; margin-top: 0; }
nav a { margin-right: 0.8rem; }
table { border-collapse: collapse; margin: 0.5rem 0 1rem; font-size: 0.9rem; }
th, td { border: 1px solid #ccc; padding: 0.2rem 0.5rem; text-align: left; }
th { background: #f3f3f3; }
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(320px, 1fr)); gap: 0.5rem; }
.gallery { display: grid; grid-template-columns: repeat(auto-fill, minmax(290px, 1fr)); gap: 0.8rem; }
.flips { display: grid; grid-template-columns: repeat(auto-fill, minmax(560px, 1fr)); gap: 0.8rem; }
.card { border: 1px solid #ddd; padding: 0.4rem; font-size: 0.85rem; }
.card img { width: 128px; height: 128px; image-rendering: auto; }
.changed { color: #b00; }
.note { color: #666; font-style: italic; }
pre { white-space: pre-wrap; font-size: 0.8rem; background: #f8f8f8; padding: 0.5rem; }
@media print {
  body { max-width: none; margin: 0; font-size: 10pt; } nav { display: none; }
  section { break-before: page; } section:first-of-type { break-before: auto; }
  .figure, table, .card { break-inside: avoid; }
  .grid, .gallery, .flips { display: block; } .figure, .card { display: inline-block; vertical-align: top; }
}
"""


def build_report(
    workspace: Workspace,
    model: str,
    *,
    compare: Sequence[str] = (),
    suite_id: str | None = None,
    preset: str = "smooth",
    min_count: int = 1,
    per_class: int = 4,
    flip_count: int = 8,
    thumb_px: int = 128,
    jpeg_quality: int = 75,
    progress: Progress | None = None,
) -> str:
    """The report of ``model`` (and ``compare``) over one suite as one self-contained HTML page.

    Parameters
    ----------
    workspace : Workspace
    model : str
        The model the failure table, galleries and flips are about.
    compare : sequence of str, default=()
        Further models shown beside it (accuracy, matrices, keyword x model heat map, assessor).
    suite_id : str, optional
        Default: the suite of ``model``'s newest current finished run.
    preset : str, default='smooth'
        Interpolation preset of the matrices and of the assessor's features (:func:`analytics.runs.run_matrices`).
    min_count : int, default=1
        Keywords with fewer composites are left out of the failure table and heat map.
    per_class : int, default=4
        Fooling backgrounds shown per class.
    flip_count : int, default=8
        Flips shown, each with its saliency overlays.
    thumb_px : int, default=128
        Side of the thumbnails in pixels.
    jpeg_quality : int, default=75
        JPEG quality of the thumbnails, 1..100.
    progress : callable, optional
        ``progress(done, total)`` after each section (``total`` = ``len(SECTIONS)``).

    Returns
    -------
    str
        The HTML document (sections :data:`SECTIONS`, in order); no ``http(s)://`` resource.

    Raises
    ------
    InvalidInputError
        A model without a current finished run over the suite, or a bad setting.
    """
    require_permission(workspace, "browse")  # names models, results and others' judgments
    per_class = check_positive_int(per_class, "per_class")
    flip_count = check_positive_int(flip_count, "flip_count")
    thumb = {"size": check_positive_int(thumb_px, "thumb_px"), "quality": _check_quality(jpeg_quality)}
    suite_runs = _suite_runs(workspace, model, suite_id)
    runs = _report_runs(suite_runs, [model, *dict.fromkeys(m for m in compare if m != model)])
    suite_id, main_run = str(runs["suite_id"].iloc[0]), str(runs["id"].iloc[0])
    # the summary reads the failure table and the assessor again: each is computed once
    failures = functools.cache(lambda: failure_table(workspace, main_run, min_count=min_count))
    assessed = functools.cache(lambda: _fit_assessor(workspace, suite_runs, preset))
    writers: dict[str, Callable[[], str]] = {
        "summary": lambda: _summary_html(workspace, runs, failures(), assessed(), thumb),
        "accuracy": lambda: _accuracy_html(workspace, runs),
        "matrices": lambda: _matrices_html(workspace, runs, preset),
        "failures": lambda: _failures_html(workspace, runs, failures(), min_count),
        "gallery": lambda: _gallery_html(workspace, main_run, per_class, thumb),
        "flips": lambda: _flips_html(workspace, model, main_run, flip_count, thumb),
        "judgments": lambda: _judgments_html(workspace, suite_id, list(runs["model"])),
        "assessor": lambda: _assessor_html(assessed(), list(runs["model"])),
        "provenance": lambda: _provenance_html(workspace, suite_id, runs),
    }
    body = [
        f"<h1>Backdrop report: {_e(model)}</h1>",
        f"<p class='meta'>Suite {_e(runs['suite'].iloc[0])} &middot; generated {_e(now())} (suite and run ids in the appendix)</p>",
        "<nav>" + "".join(f"<a href='#{key}'>{_e(title)}</a>" for key, title in SECTIONS.items()) + "</nav>",
    ]
    for done, (key, title) in enumerate(SECTIONS.items(), start=1):
        body.append(_section(key, title, writers[key]()))
        if progress is not None:
            progress(done, len(SECTIONS))
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<title>Backdrop report: {_e(model)}</title><style>{_CSS}</style>"
        f"<script type='text/javascript'>{get_plotlyjs()}</script></head>\n<body>\n" + "\n".join(body) + "\n</body></html>\n"
    )


def thumbnail_uri(image: np.ndarray, *, size: int = 128, quality: int = 75) -> str:
    """An RGB image as a JPEG ``data:`` URI, resized to ``size`` pixels a side.

    Parameters
    ----------
    image : ndarray of shape (h, w, 3), uint8, RGB
    size : int, default=128
    quality : int, default=75
        JPEG quality, 1..100.

    Returns
    -------
    str
        ``data:image/jpeg;base64,...``
    """
    size, quality = check_positive_int(size, "size"), _check_quality(quality)
    small = cv2.resize(np.ascontiguousarray(image)[..., ::-1], (size, size), interpolation=cv2.INTER_AREA)
    ok, encoded = cv2.imencode(".jpg", small, [cv2.IMWRITE_JPEG_QUALITY, quality])
    if not ok:
        raise InvalidInputError(f"cannot encode an image of shape {image.shape} as JPEG; pass an RGB uint8 array")
    return "data:image/jpeg;base64," + base64.b64encode(encoded.tobytes()).decode("ascii")


def _check_quality(quality: int) -> int:
    if not 1 <= int(quality) <= 100:
        raise InvalidInputError(f"JPEG quality must be in 1..100; got {quality!r}")
    return int(quality)


def _suite_runs(workspace: Workspace, model: str, suite_id: str | None) -> pd.DataFrame:
    """The newest current finished run of every model over the suite (default: ``model``'s newest), indexed by model."""
    runs = current_runs(workspace)
    runs = runs[runs["status"] == "done"]
    if suite_id is None:
        own = runs[runs["model"] == model]
        if own.empty:
            raise InvalidInputError(f"model {model!r} has no current finished run in {workspace.root}; run it over a suite first")
        suite_id = str(own["suite_id"].iloc[0])  # newest first
    return runs[runs["suite_id"] == suite_id].drop_duplicates("model", keep="first").set_index("model", drop=False)


def _report_runs(suite_runs: pd.DataFrame, models: list[str]) -> pd.DataFrame:
    """The rows of ``models`` (in that order) among the suite's runs."""
    missing = [m for m in models if m not in suite_runs.index]
    if missing:
        suite = str(suite_runs["suite_id"].iloc[0]) if len(suite_runs) else "?"
        raise InvalidInputError(
            f"no current finished run of {', '.join(missing)} over suite {suite!r}; run them on the Run page, with "
            f"`analytics.api.run(workspace, models=[...], suite={suite!r})` or with `python -m analytics run`, or leave them out"
        )
    return suite_runs.loc[models].reset_index(drop=True)


def _section(section_id: str, title: str, content: str) -> str:
    return f"<section id='{section_id}'><h2>{_e(title)}</h2>\n{content}\n</section>"


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _note(text: str) -> str:
    return f"<p class='note'>{_e(text)}</p>"


def _table(frame: pd.DataFrame) -> str:
    if frame.empty:
        return _note("None.")
    return frame.to_html(index=False, escape=True, float_format=lambda v: f"{v:.3f}", na_rep="", border=0)


def _figure(figure: go.Figure, height: int = _SQUARE_PX) -> str:
    figure.update_layout(template="none", height=height, margin={"l": 60, "r": 10, "t": 40, "b": 50})
    div = figure.to_html(full_html=False, include_plotlyjs=False, config=_PLOTLY_CONFIG, default_height=f"{height}px")
    return f"<div class='figure'>{div}</div>"


# -- summary -------------------------------------------------------------------------------------
def _summary_html(workspace: Workspace, runs: pd.DataFrame, failures: FailureTable, assessed: tuple | str, thumb: dict[str, int]) -> str:
    """The finding in one screen: accuracy drop and verdicts per model, the worst scenes, one flip."""
    models = list(runs["model"])
    labels = human_labels(workspace, str(runs["suite_id"].iloc[0]))
    verdicts = predict(assessed[0], assessed[1].loc[models])["label"] if not isinstance(assessed, str) else pd.Series(dtype=object)
    table = pd.DataFrame({
        "model": models,
        "right on their own photos": [f"{v:.0%}" for v in runs["original_accuracy"]],
        "right under every background": [f"{v:.0%}" for v in runs["worst_case_accuracy"]],
        "drop (points)": [f"{100 * (o - w):.0f}" for o, w in zip(runs["original_accuracy"], runs["worst_case_accuracy"])],
        "human label": [labels.get(m, "not judged") for m in models],
        "assessor verdict": [verdicts.get(m, "no assessor") for m in models],
    })  # fmt: skip
    first = runs.iloc[0]
    worst = failures.keywords.sort_values("error_rate", ascending=False, kind="stable").head(SUMMARY_KEYWORDS)
    scenes = ", ".join(f"{_e(k)} ({r:.0%} of {n} composites wrong)" for k, r, n in zip(worst["keyword"], worst["error_rate"], worst["count"]))
    flipped = flips(workspace, str(first["id"]), limit=1)
    picture = f"<div class='flips'>{_card(flipped[0], [*item_images(workspace, flipped[0])], thumb)}</div>" if flipped else ""
    return (
        f"<p><b>{_e(first['model'])}</b> recognises {first['original_accuracy']:.0%} of the targets on their own photos and "
        f"{first['worst_case_accuracy']:.0%} under every one of their backgrounds; its scenes with the most errors: "
        f"{scenes or 'none (the backgrounds carry no keywords)'}. Overall {failures.error_rate:.0%} of {failures.composites} "
        "composites are misclassified.</p>" + _table(table)
        + (f"<p>One composite whose background changes the answer (original left):</p>{picture}" if picture else "")
        + "<p class='note'>Human label: the consensus where a lead recorded one, else the annotators' majority. "
        "The sections below hold the evidence; the appendix the suite's provenance.</p>"
    )  # fmt: skip


# -- accuracy and the Backgrounds Challenge ------------------------------------------------------
def _accuracy_html(workspace: Workspace, runs: pd.DataFrame) -> str:
    columns = ["model", "id", "images", "accuracy", "original_accuracy", "worst_case_accuracy"]
    note = "<p>Worst-case accuracy: share of targets classified correctly under every one of their backgrounds.</p>"
    return note + _table(runs[columns].rename(columns={"id": "run"})) + "<h3>Backgrounds Challenge</h3>" + _challenge_html(workspace, list(runs["model"]))


def _challenge_html(workspace: Workspace, models: list[str]) -> str:
    """Accuracy per variant and BG-Gap of the models whose challenge predictions are cached."""
    try:
        data = workspace_data(workspace)
    except BackdropError as error:
        return _note(f"Not computed: {error}.")
    rows, missing = [], []
    for model in models:
        found = _cached_challenge(workspace, model, data)
        if found is None:
            missing.append(model)
            continue
        blend, table = found
        accuracy = variant_accuracy(table).set_index("name")["accuracy"]
        split = gaps(table)
        rows.append({"model": model, "Mixed-*": "blended" if blend else "hard paste", **accuracy.to_dict(),
                     "BG-Gap": split["bg_gap"], "Mixed-Same - Mixed-Next": split["same_minus_next"]})  # fmt: skip
    text = (
        f"<p>Xiao et al.'s eight variants generated from the workspace's {len(data.ids)} targets (pairing seed "
        f"{CHALLENGE_SEED}); BG-Gap = accuracy on Mixed-Same minus Mixed-Rand. Shown where already computed in the "
        "workspace; the report computes nothing.</p>"
    )
    if missing:
        text += _note(
            f"Not computed for {', '.join(missing)}: run it on the Backgrounds Challenge page, with "
            f"`analytics.robustness.bgchallenge.evaluate_variants` or with `python -m analytics bgchallenge`."
        )
    return text + (_table(pd.DataFrame(rows)) if rows else "")


def _cached_challenge(workspace: Workspace, model: str, data: ChallengeData) -> tuple[bool, pd.DataFrame] | None:
    """(blend, predictions) of the first cached challenge evaluation of ``model``, or None."""
    for blend in CHALLENGE_BLENDS:
        try:
            table = evaluate_variants(workspace, model, data, seed=CHALLENGE_SEED, blend=blend, device="cpu", cached_only=True)
        except BackdropError:  # e.g. a class the model has no output for: never evaluated
            return None
        if table is not None:
            return blend, table
    return None


# -- matrices and failures -----------------------------------------------------------------------
#: The colour bar's title of the report's matrices.
VALUE_SYMBOL = "|S(y_ij) − S(y_ik)|"
#: The report matrices' axes in words (their titles are the symbols alone, :func:`_heatmap`).
MATRIX_AXES = (
    f"Across: {X_SYMBOL}, the distance of background j from the original; up: {Y_SYMBOL}, that of background k; "
    f"colour: {VALUE_SYMBOL}, the change of the signal between the two composites."
)


def _matrices_html(workspace: Workspace, runs: pd.DataFrame, preset: str) -> str:
    suite_id = str(runs["suite_id"].iloc[0])
    try:
        scale = suite_colour_scale(workspace, suite_id, settings=MatrixSettings.of(preset))
        parts = [
            f"<p>Colour scale fixed per signal for the suite (green to yellow: probabilities from 0 to 1, embedding signals "
            f"{_e(EMBEDDING_RANGE)}; preset {_e(preset)}). {_e(MATRIX_AXES)}</p>"
        ]
        for model, run_id in zip(runs["model"], runs["id"]):
            matrices = run_matrices(workspace, run_id, settings=MatrixSettings.of(preset))
            figures = [_heatmap(matrices[s], label, *scale.colour_range(s)) for s, label in SIGNALS.items()]
            parts.append(f"<h3>{_e(model)}</h3><div class='grid'>{''.join(figures)}</div>")
    except InvalidInputError as error:  # e.g. a suite built without semantic distances
        return _note(f"No matrices: {error}")
    return "\n".join(parts)


def _heatmap(matrix: VarianceMatrix, title: str, bottom: float, top: float) -> str:
    """The pages' heatmap (:func:`analytics.figures.variance_heatmap`) on the suite's scale, its cells as float32 (half the bytes).

    The report's grid draws each matrix ~170 px wide: the pages' worded axis and colour-bar titles ran past
    the plot into the next figure's colour bar (#47 item 9), so here they are the paper's symbols, worded
    once above the grid (:data:`MATRIX_AXES`)."""
    figure = variance_heatmap(dataclasses.replace(matrix, matrix=matrix.matrix.astype(np.float32)), title=title, zmin=bottom, zmax=top)
    figure.update_layout(title={"font": {"size": 13}}, xaxis_title_text=X_SYMBOL, yaxis_title_text=Y_SYMBOL)
    figure.update_traces(colorbar_title_text=VALUE_SYMBOL)
    return _figure(figure)


def _failures_html(workspace: Workspace, runs: pd.DataFrame, table: FailureTable, min_count: int) -> str:
    intro = (
        f"<p>{table.composites} composites of {_e(table.model)}; overall error rate {table.error_rate:.3f}, mean drop of the "
        f"true-class probability {table.mean_drop:.3f}. A composite counts for every keyword of its background "
        f"(keywords: {_e(table.keyword_source)}). 95 % intervals: Wilson for rates, percentile bootstrap for mean drops. "
        f"Keywords with fewer than {min_count} composites are left out.</p>"
    )
    matrix = keyword_model_matrix(workspace, list(runs["id"]), min_count=min_count)
    heat = ""
    if not matrix.empty:
        figure = keyword_heatmap(matrix)  # the Failures page's heat map: its worst keywords, margins grown to the labels
        figure.update_xaxes(tickangle=-40)
        heat = "<h3>Keyword x model error rate</h3>" + _figure(figure, height=figure.layout.height + 60)
    return intro + _table(table.keywords) + "<h3>By ontology level</h3>" + _table(table.levels) + heat


# -- galleries and flips -------------------------------------------------------------------------
def _gallery_html(workspace: Workspace, run_id: str, per_class: int, thumb: dict[str, int]) -> str:
    intro = (
        f"<p>Per class, up to {per_class} targets, each with the composite that lowers its true-class probability most (biggest "
        "drop first): original left, composite right. Targets the model already misclassifies on their original follow apart.</p>"
    )
    parts = []
    for class_name, gallery in fooling_backgrounds(workspace, run_id, per_class=per_class).items():
        cards = "".join(_card(item, [*item_images(workspace, item)], thumb) for item in gallery.hurt)
        wrong = "".join(_card(item, [*item_images(workspace, item)], thumb) for item in gallery.already_wrong)
        parts.append(
            f"<h3>{_e(class_name)}</h3>" + (f"<div class='gallery'>{cards}</div>" if cards else _note("No background lowered its probability on a target it gets right."))
            + (f"<h4>Already wrong on the original</h4><div class='gallery'>{wrong}</div>" if wrong else "")
        )  # fmt: skip
    return intro + ("".join(parts) or _note("No composites."))


def _flips_html(workspace: Workspace, model: str, run_id: str, limit: int, thumb: dict[str, int]) -> str:
    items = flips(workspace, run_id, limit=limit)
    if not items:
        return _note("No composite changes the model's prediction.")
    from analytics.models import load_model  # torch: only when there is something to explain

    loaded = load_model(workspace, model, device="cpu")
    cards, used = [], set()
    for item in items:
        original, composite = item_images(workspace, item)
        method, maps = _saliency(workspace, loaded, item)
        images = [original, composite]
        if maps is not None:
            used.add(method)
            images += [heat_overlay(original, maps[0]), heat_overlay(composite, maps[1])]
        cards.append(_card(item, images, thumb))
    explained = f"saliency of the true class ({', '.join(sorted(used))}; red = high)" if used else "no saliency (the model offers no gradients)"
    intro = (
        f"<p>Up to {limit} composites on which {_e(model)} predicts another class than on the original (originals classified "
        f"correctly first, then biggest drop): original, composite, then {_e(explained)} on the original and on the composite.</p>"
    )
    return intro + f"<div class='flips'>{''.join(cards)}</div>"


def _saliency(workspace: Workspace, loaded: LoadedModel, item: GalleryItem) -> tuple[str, tuple[np.ndarray, np.ndarray] | None]:
    """The first of :data:`SALIENCY_METHODS` the model can run, with its maps (None when none can)."""
    for method in SALIENCY_METHODS:
        maps = item_saliency(workspace, loaded, item, method=method)
        if maps is not None:
            return method, maps
    return "", None


def _card(item: GalleryItem, images: list[np.ndarray], thumb: dict[str, int]) -> str:
    """One composite: its images as thumbnails, the predictions and the background's keywords."""
    tags = " ".join(f"<img src='{thumbnail_uri(image, **thumb)}' alt='{_e(alt)} {_e(item.target_id)}'>"
                    for image, alt in zip(images, ("original", "composite", "saliency on the original", "saliency on the composite")))  # fmt: skip
    changed = " class='changed'" if item.predicted != item.original_predicted else ""  # output names need not be class names
    return (
        f"<div class='card'>{tags}<br>{_e(item.target_id)} ({_e(item.class_name)}) on {_e(background_label(item.background_id))}<br>"
        f"predicted <b{changed}>{_e(item.predicted)}</b> (original: {_e(item.original_predicted)}); true-class probability "
        f"{item.true_prob:.3f} (original {item.original_true_prob:.3f}, drop {item.drop:.3f})<br>"
        f"background keywords: {_e(', '.join(item.keywords) or 'none')}</div>"
    )


# -- judgments and the assessor ------------------------------------------------------------------
def _judgments_html(workspace: Workspace, suite_id: str, models: list[str]) -> str:
    judgments = latest_judgments(workspace, suite_id)
    consensus = current_consensus(workspace, suite_id)
    judged = judgments[judgments["model"].isin(models)][["model", "annotator", "label", "confidence", "note", "created"]]
    agreed = consensus[consensus["model"].isin(models)][["model", "label", "reason", "adjudicator", "created"]]
    return "<h3>Judgments (latest per annotator)</h3>" + _table(judged) + "<h3>Consensus</h3>" + _table(agreed)


def _fit_assessor(workspace: Workspace, suite_runs: pd.DataFrame, preset: str) -> tuple[Any, pd.DataFrame, pd.Series] | str:
    """(fitted assessor, features, human labels) of the suite, or why none could be trained."""
    labels = human_labels(workspace, str(suite_runs["suite_id"].iloc[0]))
    try:
        features = features_table(workspace, list(suite_runs["id"]), settings=MatrixSettings.of(preset))
        labels = labels[labels.index.isin(features.index)]
        return fit_assessor(features, labels, kind=VERDICT_ASSESSOR, seed=VERDICT_SEED), features, labels
    except InvalidInputError as error:
        return f"No assessor trained on this suite: {error}."


def _assessor_html(assessed: tuple[Any, pd.DataFrame, pd.Series] | str, models: list[str]) -> str:
    if isinstance(assessed, str):
        return _note(assessed)
    fitted, features, labels = assessed
    verdicts = predict(fitted, features.loc[models])
    explanation = shapley_values(fitted, features.loc[models])
    verdicts.insert(0, "human label", [labels.get(m, "") for m in models])
    parts = [
        (
            f"<p>{_e(ASSESSORS[VERDICT_ASSESSOR].title)} (seed {VERDICT_SEED}) trained on the {len(labels)} labelled models of "
            f"this suite (consensus where recorded, else the annotators' majority), reading {len(fitted.feature_names)} "
            "variance-matrix features. A labelled model's verdict is in-sample (it was trained on its label); the Assessor page "
            "scores the assessor on held-out splits.</p>"
        ),
        _table(verdicts.reset_index(names="model")),
    ]
    for model in models:
        values = explanation.values.loc[model]
        top = values.reindex(values.abs().sort_values(ascending=False).index[:TOP_FEATURES])
        why = pd.DataFrame({"feature": top.index, "value": features.loc[model, top.index].to_numpy(float), "shapley": top.to_numpy(float)})
        parts.append(
            f"<h3>Why {_e(model)} is {_e(explanation.target[model])}</h3><p>The {TOP_FEATURES} features that move "
            f"P({_e(explanation.target[model])}) most from the average {explanation.base_value[model]:.3f} over the training "
            f"models (positive = towards it; {_e(explanation.method)}).</p>" + _table(why)
        )
    return "".join(parts)


# -- provenance ----------------------------------------------------------------------------------
def _provenance_html(workspace: Workspace, suite_id: str, runs: pd.DataFrame) -> str:
    suite = workspace.query_one("SELECT method, n, seed, params, created FROM suites WHERE id = ?", (suite_id,))
    params = json.loads(suite["params"])
    warnings = params.pop("warnings", [])
    rows = workspace.query(
        "SELECT b.id, b.origin, b.package, b.licence, COUNT(*) AS composites FROM suite_items s JOIN backgrounds b ON b.id = s.background_id "
        "WHERE s.suite_id = ? GROUP BY b.id ORDER BY b.id",
        (suite_id,),
    )
    backgrounds = pd.DataFrame([tuple(r) for r in rows], columns=["id", "origin", "package", "licence", "composites"])
    backgrounds.insert(0, "background", [background_label(b) for b in backgrounds["id"]])
    facts = pd.DataFrame({
        "field": ["suite", "suite id", "method", "n", "created"],
        "value": [runs["suite"].iloc[0], suite_id, suite["method"], suite["n"], suite["created"]],
    })  # fmt: skip
    seeds = pd.DataFrame({
        "seed of": ["the suite's background sampling", "the bootstrap of the failure intervals", "the assessor", "the Backgrounds Challenge pairings"],
        "value": [suite["seed"], BOOTSTRAP_SEED, VERDICT_SEED, CHALLENGE_SEED],
    })  # fmt: skip
    listed = "".join(f"<li>{_e(w)}</li>" for w in warnings)
    return (
        f"<details><summary>Suite, seeds, every recorded parameter, warnings, runs and the licence of each of the "
        f"{len(backgrounds)} backgrounds (open)</summary>"
        + _table(facts)
        + "<h3>Seeds</h3>" + _table(seeds)
        + "<h3>Ontology settings</h3>" + _ontology_html(params)
        + "<h3>Keyword tables</h3>" + _table(_keyword_tables(params))
        + f"<h3>Every recorded parameter</h3><pre>{_e(json.dumps(params, indent=2, sort_keys=True))}</pre>"
        + (f"<h3>Warnings</h3><ul>{listed}</ul>" if listed else "")
        + "<h3>Runs</h3>" + _table(runs[["model", "id", "model_key", "created", "finished"]].rename(columns={"id": "run id"}))
        + f"<h3>Backgrounds and licences ({len(backgrounds)})</h3>" + _table(backgrounds)
        + "</details>"
    )  # fmt: skip


def _ontology_html(params: dict[str, Any]) -> str:
    record = params.get("ontology")
    if not record:
        return _note("The suite used no ontology.")
    settings = {**record, "maxits (expansion depth)": params.get("maxits", ""), "tables": ", ".join(record.get("tables", []))}
    return _table(pd.DataFrame({"setting": list(settings), "value": [str(v) for v in settings.values()]}))


def _keyword_tables(params: dict[str, Any]) -> pd.DataFrame:
    tables = params.get("keyword_tables") or {}
    return pd.DataFrame([{"kind": kind, **{k: str(v) for k, v in record.items()}} for kind, record in tables.items()])
