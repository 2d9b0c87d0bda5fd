"""Backdrop from Python: the numbers and figures the dashboard shows, in a notebook or a script.

Each call reads a workspace through the library function the matching page (or ``python -m analytics``
subcommand) uses, so a notebook gets the page's numbers; figures are Plotly, the pages' own
(:mod:`analytics.figures`).
The write calls (:func:`add_targets`, :func:`add_backgrounds`, :func:`add_model`, :func:`build_suite`,
:func:`run`, :func:`judge`) are the flows the pages and subcommands run, returning what the page shows; their
errors name these functions' parameters.

Example
-------
>>> from analytics import api as bd
>>> ws = bd.open_workspace("workspace")                  # doctest: +SKIP
>>> bd.models(ws); bd.suites(ws); bd.runs(ws)            # DataFrames  # doctest: +SKIP
>>> run_id = bd.latest_run(ws, model="resnet50", suite="random-16")  # doctest: +SKIP
>>> m = bd.matrices(ws, run_id)                          # signal -> VarianceMatrix  # doctest: +SKIP
>>> bd.figures.variance_heatmap(m["true_prob"], title=bd.SIGNALS["true_prob"]).show()  # doctest: +SKIP
>>> bd.accuracies(ws, run_id)                            # accuracy, original, worst case  # doctest: +SKIP
>>> bd.failures(ws, run_id).keywords                     # the Failures page's table  # doctest: +SKIP
>>> bd.figures.kappa_heatmap(bd.agreement(ws, "random-16")).show()  # doctest: +SKIP
>>> result = bd.check(ws, model="candidate", baseline="release", policy=bd.EXAMPLE_POLICY, out="check")  # doctest: +SKIP
>>> bd.verdict_table(result.results)                     # one row per rule  # doctest: +SKIP
>>> bd.add_targets("my-workspace", "photos/", layout="folder").added  # doctest: +SKIP
>>> bd.add_backgrounds("my-workspace", "scenes/").added  # doctest: +SKIP
>>> bd.add_model(ws, "mine", module=net, input_size=224, mean=(0.5,) * 3, std=(0.5,) * 3)  # an nn.Module in memory  # doctest: +SKIP
"""

from analytics import figures
from analytics.exceptions import BackdropError
from analytics.gate import EXAMPLE_POLICY, load_policy, verdict_table
from analytics.runs import SIGNALS
from analytics.variance import DEFAULT_SETTINGS, MatrixSettings
from analytics.workspace import Workspace

from ._calls import (
    MIN_COUNT,
    accuracies,
    agreement,
    check,
    colour_scale,
    failures,
    judgments,
    keyword_error_rates,
    latest_run,
    matrices,
    models,
    open_workspace,
    point_clouds,
    report,
    runs,
    suites,
)
from ._writes import add_backgrounds, add_model, add_targets, build_suite, judge, run

__all__ = [
    "DEFAULT_SETTINGS",
    "EXAMPLE_POLICY",
    "MIN_COUNT",
    "SIGNALS",
    "BackdropError",
    "MatrixSettings",
    "Workspace",
    "accuracies",
    "add_backgrounds",
    "add_model",
    "add_targets",
    "agreement",
    "build_suite",
    "check",
    "judge",
    "run",
    "colour_scale",
    "failures",
    "figures",
    "judgments",
    "keyword_error_rates",
    "latest_run",
    "load_policy",
    "matrices",
    "models",
    "open_workspace",
    "point_clouds",
    "report",
    "runs",
    "suites",
    "verdict_table",
]
