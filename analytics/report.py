"""A self-contained HTML report of a model's runs over one suite: one file, opened without a server.

:func:`build_report` writes, for a model (and the models it is compared with) over one suite:

1. accuracy, original accuracy and worst-case accuracy of every run (:func:`analytics.runs.list_runs`);
2. the four variance matrices of every run as interactive Plotly heatmaps, on the suite's fixed
   colour scale (:func:`analytics.colour_scale.suite_colour_scale`);
3. the keyword failure table and ontology levels of the model (:func:`analytics.failures.failure_table`)
   and the keyword x model heat map (:func:`analytics.failures.keyword_model_matrix`);
4. a gallery of the composites that fool the model most (misclassified first, then by drop of the
   true-class probability), original and composite side by side;
5. the judgments and consensus labels of the suite's models (:func:`analytics.judgments.latest_judgments`,
   :func:`analytics.adjudication.current_consensus`);
6. the suite's provenance: method, n, seed, every recorded parameter (keyword tables, ontology
   settings, ...), warnings, and the id, origin, package and licence of each background.

Nothing is fetched when the file is opened: Plotly's JavaScript is embedded once in one inline
``<script>`` (figures are written with ``include_plotlyjs=False``), and images are JPEG thumbnails
in ``data:`` URIs. The layout prints (``@media print``: no page break inside a figure, a table or a
gallery card). Size: Plotly's bundle is ~4.8 MB; a report of a few models stays well under 15 MB.
"""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Sequence
from typing import Any

import cv2
import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.offline import get_plotlyjs

from ._validation import check_positive_int
from .adjudication import current_consensus
from .colour_scale import suite_colour_scale
from .exceptions import InvalidInputError
from .failures import composite_table, failure_table, keyword_model_matrix
from .judgments import latest_judgments
from .runs import SIGNALS, VARIANCE_COLOURS, compose_images, current_runs, run_matrices
from .team.roles import require_permission
from .workspace import Workspace, now

__all__ = ["SECTIONS", "build_report", "thumbnail_uri"]

#: Section ids of the report, in order (each is an ``<section id=...>``).
SECTIONS = ("accuracy", "matrices", "failures", "gallery", "judgments", "provenance")
_SQUARE_PX = 360
_COLOURSCALE = [[stop, "rgb({},{},{})".format(*rgb)] for stop, rgb in VARIANCE_COLOURS]
_PLOTLY_CONFIG = {"displaylogo": False, "responsive": True}
_CSS = """
body { font-family: system-ui, sans-serif; margin: 1.5rem auto; max-width: 1400px; color: #222; }
h1 { margin-bottom: 0.2rem; } .meta { color: #666; margin-top: 0; }
table { border-collapse: collapse; margin: 0.5rem 0 1rem; font-size: 0.9rem; }
th, td { border: 1px solid #ccc; padding: 0.2rem 0.5rem; text-align: left; }
th { background: #f3f3f3; }
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(320px, 1fr)); gap: 0.5rem; }
.gallery { display: grid; grid-template-columns: repeat(auto-fill, minmax(340px, 1fr)); gap: 0.8rem; }
.card { border: 1px solid #ddd; padding: 0.4rem; font-size: 0.85rem; }
.card img { width: 160px; height: 160px; image-rendering: auto; }
.note { color: #666; font-style: italic; }
pre { white-space: pre-wrap; font-size: 0.8rem; background: #f8f8f8; padding: 0.5rem; }
@media print {
  body { max-width: none; margin: 0; font-size: 10pt; }
  section { break-before: page; } section:first-of-type { break-before: auto; }
  .figure, table, .card { break-inside: avoid; }
  .grid, .gallery { display: block; } .figure, .card { display: inline-block; vertical-align: top; }
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
    gallery_size: int = 12,
    thumb_px: int = 160,
    jpeg_quality: int = 80,
) -> str:
    """The report of ``model`` (and ``compare``) over one suite as one self-contained HTML page.

    Parameters
    ----------
    workspace : Workspace
    model : str
        The model the failure table and gallery are about.
    compare : sequence of str, default=()
        Further models shown beside it (accuracy, matrices, keyword x model heat map).
    suite_id : str, optional
        Default: the suite of ``model``'s newest current finished run.
    preset : str, default='smooth'
        Interpolation preset of the matrices (:func:`analytics.runs.run_matrices`).
    min_count : int, default=1
        Keywords with fewer composites are left out of the failure table and heat map.
    gallery_size : int, default=12
        Composites in the gallery.
    thumb_px : int, default=160
        Side of the gallery thumbnails in pixels.
    jpeg_quality : int, default=80
        JPEG quality of the thumbnails, 1..100.

    Returns
    -------
    str
        The HTML document (sections :data:`SECTIONS`); no ``http(s)://`` resource.

    Raises
    ------
    InvalidInputError
        A model without a current finished run over the suite.
    """
    require_permission(workspace, "browse")  # names models, results and others' judgments
    gallery_size = check_positive_int(gallery_size, "gallery_size")
    runs = _report_runs(workspace, [model, *dict.fromkeys(m for m in compare if m != model)], suite_id)
    suite_id = str(runs["suite_id"].iloc[0])
    main_run = str(runs["id"].iloc[0])
    table = failure_table(workspace, main_run, min_count=min_count)
    body = [
        f"<h1>Backdrop report: {_e(model)}</h1>",
        f"<p class='meta'>Suite {_e(suite_id)} &middot; runs {_e(', '.join(runs['id']))} &middot; generated {_e(now())}</p>",
        _section("accuracy", "Accuracy", _accuracy_html(runs)),
        _section("matrices", "Variance matrices", _matrices_html(workspace, runs, preset)),
        _section("failures", "Failures by scene keyword", _failures_html(workspace, runs, table, min_count)),
        _section("gallery", "Composites that fool the model most", _gallery_html(workspace, main_run, gallery_size, thumb_px, jpeg_quality)),
        _section("judgments", "Judgments and consensus", _judgments_html(workspace, suite_id, list(runs["model"]))),
        _section("provenance", "Suite provenance", _provenance_html(workspace, suite_id)),
    ]
    return (
        "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<title>Backdrop report: {_e(model)}</title><style>{_CSS}</style>"
        f"<script type='text/javascript'>{get_plotlyjs()}</script></head>\n<body>\n" + "\n".join(body) + "\n</body></html>\n"
    )


def thumbnail_uri(image: np.ndarray, *, size: int = 160, quality: int = 80) -> str:
    """An RGB image as a JPEG ``data:`` URI, resized to ``size`` pixels a side.

    Parameters
    ----------
    image : ndarray of shape (h, w, 3), uint8, RGB
    size : int, default=160
    quality : int, default=80
        JPEG quality, 1..100.

    Returns
    -------
    str
        ``data:image/jpeg;base64,...``
    """
    size = check_positive_int(size, "size")
    if not 1 <= int(quality) <= 100:
        raise InvalidInputError(f"JPEG quality must be in 1..100; got {quality!r}")
    small = cv2.resize(np.ascontiguousarray(image)[..., ::-1], (size, size), interpolation=cv2.INTER_AREA)
    ok, encoded = cv2.imencode(".jpg", small, [cv2.IMWRITE_JPEG_QUALITY, int(quality)])
    if not ok:
        raise InvalidInputError(f"cannot encode an image of shape {image.shape} as JPEG; pass an RGB uint8 array")
    return "data:image/jpeg;base64," + base64.b64encode(encoded.tobytes()).decode("ascii")


def _report_runs(workspace: Workspace, models: list[str], suite_id: str | None) -> pd.DataFrame:
    """The newest current finished run of each model over the suite (rows in ``models`` order)."""
    runs = current_runs(workspace)
    runs = runs[runs["status"] == "done"]
    if suite_id is None:
        own = runs[runs["model"] == models[0]]
        if own.empty:
            raise InvalidInputError(f"model {models[0]!r} has no current finished run in {workspace.root}; run it over a suite first")
        suite_id = str(own["suite_id"].iloc[0])  # newest first
    runs = runs[runs["suite_id"] == suite_id].drop_duplicates("model", keep="first").set_index("model", drop=False)
    missing = [m for m in models if m not in runs.index]
    if missing:
        raise InvalidInputError(
            f"no current finished run of {', '.join(missing)} over suite {suite_id!r}; run them with "
            f"`python -m analytics run --model NAME --suite {suite_id}` or leave them out"
        )
    return runs.loc[models].reset_index(drop=True)


def _section(section_id: str, title: str, content: str) -> str:
    return f"<section id='{section_id}'><h2>{_e(title)}</h2>\n{content}\n</section>"


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _table(frame: pd.DataFrame) -> str:
    if frame.empty:
        return "<p class='note'>None.</p>"
    return frame.to_html(index=False, escape=True, float_format=lambda v: f"{v:.3f}", na_rep="", border=0)


def _figure(figure: go.Figure, height: int = _SQUARE_PX) -> str:
    figure.update_layout(template="none", height=height, margin={"l": 60, "r": 10, "t": 40, "b": 50})
    div = figure.to_html(full_html=False, include_plotlyjs=False, config=_PLOTLY_CONFIG, default_height=f"{height}px")
    return f"<div class='figure'>{div}</div>"


def _accuracy_html(runs: pd.DataFrame) -> str:
    columns = ["model", "id", "images", "accuracy", "original_accuracy", "worst_case_accuracy"]
    note = "<p>Worst-case accuracy: share of targets classified correctly under every one of their backgrounds.</p>"
    return note + _table(runs[columns].rename(columns={"id": "run"}))


def _matrices_html(workspace: Workspace, runs: pd.DataFrame, preset: str) -> str:
    suite_id = str(runs["suite_id"].iloc[0])
    try:
        scale = suite_colour_scale(workspace, suite_id, preset=preset)
        parts = [f"<p>Colour scale fixed per signal for the suite (0 = green to the top = yellow; preset {_e(preset)}).</p>"]
        for model, run_id in zip(runs["model"], runs["id"]):
            matrices = run_matrices(workspace, run_id, preset=preset)
            figures = [_heatmap(matrices[s], label, scale.tops[s]) for s, label in SIGNALS.items()]
            parts.append(f"<h3>{_e(model)}</h3><div class='grid'>{''.join(figures)}</div>")
    except InvalidInputError as error:  # e.g. a suite built without semantic distances
        return f"<p class='note'>No matrices: {_e(error)}</p>"
    return "\n".join(parts)


def _heatmap(matrix, title: str, top: float) -> str:
    centres = matrix.centres
    trace = go.Heatmap(
        z=matrix.matrix.astype(np.float32), x=centres, y=centres, zmin=0.0, zmax=top, colorscale=_COLOURSCALE,
        hovertemplate="d_ij %{x:.3f}<br>d_ik %{y:.3f}<br>value %{z:.4f}<extra></extra>",
    )  # fmt: skip
    figure = go.Figure(trace)
    figure.update_layout(title={"text": title, "font": {"size": 13}}, xaxis_title="d(y_ij, x_i)", yaxis_title="d(y_ik, x_i)")
    figure.update_yaxes(scaleanchor="x", constrain="domain")
    return _figure(figure)


def _failures_html(workspace: Workspace, runs: pd.DataFrame, table, min_count: int) -> str:
    intro = (
        f"<p>{table.composites} composites of {_e(table.model)}; overall error rate {table.error_rate:.3f}, mean drop of the "
        f"true-class probability {table.mean_drop:.3f}. A composite counts for every keyword of its background "
        f"(keywords: {_e(table.keyword_source)}). 95 % intervals: Wilson for rates, percentile bootstrap for mean drops. "
        f"Keywords with fewer than {min_count} composites are left out.</p>"
    )
    matrix = keyword_model_matrix(workspace, list(runs["id"]), min_count=min_count)
    heat = ""
    if not matrix.empty:
        figure = go.Figure(go.Heatmap(
            z=matrix.to_numpy(float), x=list(matrix.columns), y=list(matrix.index), zmin=0.0, zmax=1.0, colorscale="Reds",
            colorbar={"title": {"text": "error rate", "side": "right"}}, hovertemplate="%{y} / %{x}: %{z:.3f}<extra></extra>",
        ))  # fmt: skip
        figure.update_yaxes(autorange="reversed")
        heat = "<h3>Keyword x model error rate</h3>" + _figure(figure, height=max(300, 22 * len(matrix) + 120))
    return intro + _table(table.keywords) + "<h3>By ontology level</h3>" + _table(table.levels) + heat


def _gallery_html(workspace: Workspace, run_id: str, size: int, thumb_px: int, quality: int) -> str:
    composites = composite_table(workspace, run_id)
    worst = composites.sort_values(["correct", "drop"], ascending=[True, False], kind="stable").head(size)
    cards = []
    for target_id, group in worst.groupby("target_id", sort=False):
        images = compose_images(workspace, target_id, ["", *group["background_id"]])
        original = thumbnail_uri(images[0], size=thumb_px, quality=quality)
        for image, row in zip(images[1:], group.itertuples(index=False)):
            keywords = ", ".join(row.keywords) or "none"
            cards.append(
                f"<div class='card'><img src='{original}' alt='original {_e(target_id)}'> "
                f"<img src='{thumbnail_uri(image, size=thumb_px, quality=quality)}' alt='composite on {_e(row.background_id)}'><br>"
                f"{_e(target_id)} ({_e(row.class_name)}) on {_e(row.background_id)}<br>"
                f"predicted <b>{_e(row.predicted)}</b>, true-class probability {row.true_prob:.3f} (original {row.original_prob:.3f})<br>"
                f"background keywords: {_e(keywords)}</div>"
            )
    return f"<div class='gallery'>{''.join(cards)}</div>" if cards else "<p class='note'>No composites.</p>"


def _judgments_html(workspace: Workspace, suite_id: str, models: list[str]) -> str:
    judgments = latest_judgments(workspace, suite_id)
    consensus = current_consensus(workspace, suite_id)
    judged = judgments[judgments["model"].isin(models)][["model", "annotator", "label", "confidence", "note", "created"]]
    agreed = consensus[consensus["model"].isin(models)][["model", "label", "reason", "adjudicator", "created"]]
    return "<h3>Judgments (latest per annotator)</h3>" + _table(judged) + "<h3>Consensus</h3>" + _table(agreed)


def _provenance_html(workspace: Workspace, suite_id: str) -> str:
    suite = workspace.query_one("SELECT method, n, seed, params, created FROM suites WHERE id = ?", (suite_id,))
    params = json.loads(suite["params"])
    warnings = params.pop("warnings", [])
    rows = workspace.query(
        "SELECT b.id, b.origin, b.package, b.licence, COUNT(*) AS composites FROM suite_items s JOIN backgrounds b ON b.id = s.background_id "
        "WHERE s.suite_id = ? GROUP BY b.id ORDER BY b.id",
        (suite_id,),
    )
    backgrounds = pd.DataFrame([tuple(r) for r in rows], columns=["background", "origin", "package", "licence", "composites"])
    facts = pd.DataFrame({"field": ["suite", "method", "n", "seed", "created"], "value": [suite_id, suite["method"], suite["n"], suite["seed"], suite["created"]]})
    listed = "".join(f"<li>{_e(w)}</li>" for w in warnings)
    return (
        _table(facts)
        + f"<h3>Parameters (keyword tables, ontology settings, sampling)</h3><pre>{_e(json.dumps(params, indent=2, sort_keys=True))}</pre>"
        + (f"<h3>Warnings</h3><ul>{listed}</ul>" if listed else "")
        + "<h3>Backgrounds and licences</h3>"
        + _table(backgrounds)
    )
