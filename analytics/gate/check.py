"""The release gate: a candidate model against a policy (and optionally a baseline model) on one suite.

:func:`check` finds or builds the suite, runs the candidate and the baseline over it (a finished
run of the same weights is reused, as are the composites), measures what the policy's rules need
(:mod:`analytics.gate.measures`), evaluates every rule (:mod:`analytics.gate.rules`) and writes
three files into ``out``: ``junit.xml`` (:func:`analytics.gate.junit.junit_xml`), ``summary.md``
(:func:`analytics.gate.summary.markdown_summary`) and, unless left out, ``report.html``
(:func:`analytics.findings.build_report` of the candidate beside the baseline).

Everything that can be wrong with the input (an unknown model or suite, baseline rules without a
baseline, an output folder that is a file) is checked before the first write, so a refused check
changes nothing saved.

A suite the policy's recipe builds never depends on the candidate (:func:`suite_models`): its
semantic distances and its pool screening come from models that stay the same from one candidate
checkpoint to the next, so every checkpoint is gated on the same suite and the baseline's run over
it is computed once.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from analytics._choices import DEFAULT_REALISM_THRESHOLD
from analytics._progress import Progress, with_message
from analytics._validation import ParameterNames
from analytics.exceptions import InvalidInputError
from analytics.findings import build_report
from analytics.models import get_model_spec, list_models
from analytics.runs import start_runs
from analytics.suites import build_suite, suite_exists, suite_labels_of
from analytics.workspace import Workspace, now

from .junit import junit_xml
from .measures import Measures, challenge_loader, verdict_training_labels
from .policy import Policy
from .rules import RuleResult, evaluate_rules
from .summary import markdown_summary

#: The files a check writes into its output folder.
FILES = {"junit": "junit.xml", "summary": "summary.md", "report": "report.html"}
#: What each step of :func:`check` (its progress's ``step``) does, as the CLI's stage lines and a ``gate`` job's progress say it.
STEPS = {
    "suite": "suite: finding or building the policy's suite",
    "runs": "runs: the candidate (and the baseline) over the suite",
    "rules": "rules: measuring what they need (Backgrounds Challenge, scenarios, assessor, keywords)",
    "report": "report: the HTML report",
}


@dataclass(frozen=True)
class CheckResult:
    """The outcome of one check.

    Attributes
    ----------
    candidate, baseline, suite_id : str (baseline None without one)
    results : list of RuleResult
        In the policy's order.
    files : dict of str to str
        ``junit`` / ``summary`` / ``report`` -> the path written (no ``report`` when left out).
    summary : str
        The Markdown summary (also in ``files['summary']``).
    seconds : float
        Wall time of the check.
    """

    candidate: str
    baseline: str | None
    suite_id: str
    results: list[RuleResult]
    files: dict[str, str]
    summary: str
    seconds: float

    @property
    def passed(self) -> bool:
        return all(r.passed for r in self.results)

    def to_dict(self) -> dict:
        """JSON-ready form (what ``check --json`` prints)."""
        return {
            "passed": self.passed, "candidate": self.candidate, "baseline": self.baseline, "suite": self.suite_id, "seconds": self.seconds,
            "files": self.files, "rules": [r.to_record() for r in self.results],
        }  # fmt: skip


def check(
    workspace: Workspace,
    policy: Policy,
    candidate: str,
    *,
    out: str | os.PathLike,
    baseline: str | None = None,
    suite_id: str | None = None,
    report: bool = True,
    device: str | None = None,
    batch_size: int = 32,
    progress: Progress | None = None,
    names: ParameterNames | None = None,
) -> CheckResult:
    """Check ``candidate`` against ``policy`` (module notes).

    Parameters
    ----------
    workspace : Workspace
    policy : Policy
        :func:`analytics.gate.load_policy`.
    candidate : str
        A registered model (the command registers a checkpoint first).
    out : path-like
        Folder for the files :data:`FILES` (created; files in it are replaced).
    baseline : str, optional
        The last release: needed by ``[baseline]`` rules, shown beside the candidate in the report.
    suite_id : str, optional
        A saved suite; overrides the policy's ``[suite]``.
    report : bool, default=True
        Also write the self-contained HTML report.
    device, batch_size
        For the forward passes.
    progress : callable (done, total, step), optional
        ``step`` is ``'suite'``, ``'runs'``, ``'rules'`` (measured as the rules need them) or ``'report'``.
    names : ParameterNames, optional
        How messages name ``baseline``, ``suite_id`` and ``out`` (the command line passes its flags).

    Returns
    -------
    CheckResult

    Raises
    ------
    InvalidInputError, NotFoundError
        Bad input, before anything is written.
    """
    started = time.perf_counter()
    out = preflight(workspace, policy, candidate, baseline=baseline, suite_id=suite_id, out=out, names=names)
    suite_id = suite_to_check(
        workspace, policy, suite_id, candidate=candidate, baseline=baseline, device=device, batch_size=batch_size, progress=with_message(progress, "suite")
    )
    models = list(dict.fromkeys([candidate, *([baseline] if baseline else [])]))
    run_ids = dict(zip(models, start_runs(workspace, models, suite_id, device=device, batch_size=batch_size, progress=with_message(progress, "runs"))))
    shared = challenge_loader(workspace)
    measures = {m: Measures(workspace, m, run_ids[m], policy.settings, device=device, batch_size=batch_size, challenge_data=shared) for m in models}
    if progress is not None:  # the rules measure what they need now (Backgrounds Challenge, scenarios, assessor): the longest step of a cold check
        progress(0, len(policy.rules) + len(policy.baseline), "rules")
    results = evaluate_rules(policy, measures[candidate], measures[baseline] if baseline else None)
    if progress is not None:
        progress(len(results), len(results), "rules")
    files = {key: str(out / name) for key, name in FILES.items() if key != "report" or report}
    if report:
        html = build_report(workspace, candidate, compare=[baseline] if baseline else [], suite_id=suite_id, progress=with_message(progress, "report"))
        _write(Path(files["report"]), html)
    summary = markdown_summary(
        results, candidate=candidate, baseline=baseline, suite_id=suite_id, suite_label=suite_labels_of(workspace).get(suite_id), policy=policy.path,
        report=files.get("report"),
    )  # fmt: skip
    seconds = time.perf_counter() - started
    properties = {"candidate": candidate, "baseline": baseline or "", "suite": suite_id, "policy": policy.path}
    _write(Path(files["junit"]), junit_xml(results, title=f"backdrop check: {candidate} on {suite_id}", properties=properties, seconds=seconds, timestamp=now()))
    _write(Path(files["summary"]), summary)
    return CheckResult(candidate, baseline, suite_id, results, files, summary, seconds)


def preflight(
    workspace: Workspace, policy: Policy, candidate: str, *, baseline: str | None, suite_id: str | None, out: str | os.PathLike,
    registered: bool = True, names: ParameterNames | None = None,
) -> Path:
    """Check the input of :func:`check` before anything is written (:func:`check_inputs`), and that
    ``out`` is a folder (created). Returns ``out`` as a Path."""
    check_inputs(workspace, policy, candidate, baseline=baseline, suite_id=suite_id, registered=registered, names=names)
    return _output_folder(out, names or ParameterNames())


def check_inputs(
    workspace: Workspace, policy: Policy, candidate: str, *, baseline: str | None, suite_id: str | None, registered: bool = True,
    names: ParameterNames | None = None,
) -> None:
    """What :func:`check` can refuse, checked without writing anything (the Gate page asks before it
    offers its start): the candidate (unless it is about to be registered, ``registered=False``) and
    the baseline are registered, baseline rules have a baseline, the suite exists (or the policy has
    a recipe), and the assessor rules have labels to learn from.

    Raises
    ------
    InvalidInputError, NotFoundError
        One line naming the model, rule or suite and the fix; ``baseline`` and ``suite_id`` named as
        ``names`` says (default: these keywords).
    """
    names = names or ParameterNames()
    for name in dict.fromkeys([*([candidate] if registered else []), *([baseline] if baseline else [])]):
        get_model_spec(workspace, name)  # NotFoundError naming the model
    if policy.baseline and not baseline:
        raise InvalidInputError(f"{policy.path}: [baseline] rules ({', '.join(policy.baseline)}) need a baseline model; give {names('baseline')} or remove them")
    chosen = suite_id or policy.suite.id
    if chosen and not suite_exists(workspace, chosen):
        raise InvalidInputError(f"no suite {chosen!r} in {workspace.root}; list them with `python -m analytics suites` or build one with `suite`")
    if not chosen and policy.suite.method is None:
        raise InvalidInputError(
            f"{policy.path}: no suite; give {names('suite_id')} or [suite] id = \"...\" or a recipe (method = \"random\", n = 16) in the policy"
        )
    if any(key.startswith("assessor_") for key in policy.rules):
        _check_assessor_labels(workspace, policy, candidate, chosen)


def _check_assessor_labels(workspace: Workspace, policy: Policy, candidate: str, suite_id: str | None) -> None:
    """The assessor rules' labels exist before any work: on the chosen suite, or, for a recipe, on a
    saved suite of that recipe (a suite built now has no judgments yet, so the rules could only fail
    after the suite and the runs, minutes later)."""
    labels = policy.settings["assessor_labels"]
    if suite_id is not None or labels != "human":
        verdict_training_labels(workspace, suite_id or "", candidate, labels=labels)
        return
    recipe = policy.suite
    saved = [row["id"] for row in workspace.query("SELECT id FROM suites WHERE method = ? AND n = ? AND seed = ?", (recipe.method, recipe.n, recipe.seed))]
    for saved_id in saved:
        try:
            verdict_training_labels(workspace, saved_id, candidate, labels=labels)
            return
        except InvalidInputError:
            continue
    raise InvalidInputError(
        f"{policy.path}: the assessor rules need human judgments on the suite, and no saved suite of the recipe "
        f"(method {recipe.method!r}, n {recipe.n}, seed {recipe.seed}) has any: judge models on it first (Judge page), "
        "set assessor_labels = \"construction\" in [settings] (a zoo's construction labels), or remove assessor_* from [rules]"
    )


def suite_to_check(
    workspace: Workspace, policy: Policy, suite_id: str | None, *, candidate: str, baseline: str | None = None, device: str | None = None,
    batch_size: int = 32, progress: Progress | None = None,
) -> str:  # fmt: skip
    """The suite to check on: ``suite_id``, else the policy's ``[suite] id``, else the suite its recipe
    builds (:func:`analytics.suites.build_suite` returns an identical saved suite instead of a new one)
    with the models :func:`suite_models` picks, so that it is the same suite for every candidate.
    :func:`preflight` has checked that one of them is there."""
    chosen = suite_id or policy.suite.id
    if chosen:
        return chosen
    recipe = policy.suite
    assert recipe.method is not None, "preflight refuses a policy with neither a suite id nor a recipe"
    realism_threshold = DEFAULT_REALISM_THRESHOLD if recipe.realism_threshold is None else recipe.realism_threshold
    models = suite_models(workspace, candidate, baseline)
    suite = build_suite(
        workspace, method=recipe.method, n=recipe.n, seed=recipe.seed, distance_models=list(models.distances), screening_model=models.screening,
        realism_threshold=realism_threshold, device=device, batch_size=batch_size, progress=progress,
    )  # fmt: skip
    return suite.id


@dataclass(frozen=True)
class SuiteModels:
    """The models that shape a suite the gate builds: the distance ensemble and the pool's screening classifier (None: no ImageNet classifier, no screening)."""

    distances: tuple[str, ...]
    screening: str | None


def suite_models(workspace: Workspace, candidate: str, baseline: str | None = None) -> SuiteModels:
    """The models whose outputs go into a suite the gate builds from its policy's recipe: never the
    candidate while any other model is registered.

    A suite's id covers its semantic distances (the embeddings of its distance ensemble) and its pool
    screening. The library's default ensemble is every registered EfficientNet-Lite, else *every*
    registered model, and the default screening classifier the first ImageNet classifier by name; a
    candidate among them would make each new checkpoint a new suite with the same backgrounds, and
    the baseline would be run again on every one of them. A candidate that
    shapes its own suite could also pick its own test (``nearest`` / ``interval`` rank the pool by these
    distances). So the gate picks, in this order:

    * **distances**: the registered EfficientNet-Lite models other than the candidate (fixed ImageNet
      weights that embed scenes well, and the suite the Suites page builds from the same recipe);
      without one, the baseline (the last release, the same for every candidate checkpoint); without a
      baseline, every registered model but the candidate; only when nothing else is registered the
      candidate itself (then each checkpoint builds its own suite: register EfficientNet-Lite0, which
      needs no checkpoint, or pass a baseline);
    * **screening**: the first ImageNet classifier in the same order (EfficientNet-Lite, the baseline,
      the others by name, the candidate last); None when no ImageNet classifier is registered.

    Parameters
    ----------
    workspace : Workspace
    candidate : str
        The model under test.
    baseline : str, optional
        The last release.

    Returns
    -------
    SuiteModels
    """
    specs = list_models(workspace)
    others = [spec for spec in specs if spec.name != candidate]
    lite = [spec.name for spec in others if spec.source == "efficientnet-lite"]
    if lite:
        distances = lite
    elif baseline and baseline != candidate:
        distances = [baseline]
    else:
        distances = [spec.name for spec in others] or [candidate]
    classifiers = sorted(
        (spec for spec in specs if spec.label_space.kind == "imagenet"),
        key=lambda spec: (spec.name == candidate, spec.source != "efficientnet-lite", spec.name != baseline, spec.name),
    )
    return SuiteModels(tuple(distances), classifiers[0].name if classifiers else None)


def _output_folder(out: str | os.PathLike, names: ParameterNames) -> Path:
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise InvalidInputError(f"{names.setting('out', str(out))} is a file; pass a folder for {', '.join(FILES.values())}")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise InvalidInputError(f"{names.setting('out', str(out))}: cannot create the folder ({error.strerror}); pass a writable folder") from error
    return out


def _write(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file beside it, so a reader never sees half a file."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
