"""The public API's write calls: add targets and backgrounds, register a model, build a suite, run
models, record a judgment. Each calls the flow the matching command and page use (the Data page's import and
``add-targets`` are :func:`analytics.data.import_targets`), returns what the page shows, and raises
:class:`~analytics.exceptions.BackdropError` whose message names these functions' parameters."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pandas as pd

from analytics._choices import DEFAULT_MIN_CONFIDENCE, DEFAULT_MIN_SUPPORT
from analytics._progress import Progress, with_message
from analytics._validation import ParameterNames, check_fraction
from analytics.data import ImportReport, LabelSpace, import_backgrounds, import_targets, parse_label_space
from analytics.exceptions import InvalidInputError
from analytics.judging import Judgment, add_judgment
from analytics.models import SOURCES, get_source

# add_model below registers through this one flow of the same name (every source: analytics.models.SOURCES)
from analytics.models import add_model as register_by_source
from analytics.runs import list_runs, start_runs, start_runs_that_can
from analytics.suites import (
    DEFAULT_REALISM,
    DEFAULT_REALISM_THRESHOLD,
    SAMPLERS,
    check_suite_name,
    ensure_keyword_tables,
    ensure_ontology,
    resolve_suite,
    screening_warning,
    suite_labels_of,
    suite_stats,
)
from analytics.suites import build_suite as sample_suite
from analytics.workspace import Workspace

PathLike = str | os.PathLike[str]


def add_targets(
    workspace: Workspace | PathLike | None,
    path: PathLike | None = None,
    *,
    layout: str,
    annotations: PathLike | None = None,
    images: PathLike | None = None,
    home: PathLike | None = None,
    home_id: str | None = None,
    classes: Sequence[str] | None = None,
    min_area: float | None = None,
    all_instances: bool = False,
    max_instances: int | None = None,
    split: str | None = None,
    propose_masks: bool = False,
    existing_classes_only: bool = False,
    imagenet_map: Mapping[str, int | Sequence[int]] | PathLike | None = None,
    package: str = "",
    licence: str = "",
) -> ImportReport:
    """Import a target set (every layout: folder, bgchallenge, cutouts, COCO, VOC), as ``python -m
    analytics add-targets`` and the Data page do (:func:`analytics.data.import_targets`, one file
    decoded at a time, every row committed at the end or none).

    Parameters
    ----------
    workspace : Workspace or path-like or None
        A workspace or its folder (None: the default one); a folder without one gets a workspace once
        a target is read.
    path : path-like, optional
        The folder or .zip (every layout but ``'coco'``).
    layout : {'folder', 'bgchallenge', 'cutouts', 'coco', 'voc'}
    annotations, images : path-like, optional
        ``'coco'``: the COCO JSON and the folder (or .zip) of its images.
    home, home_id : optional
        ``'cutouts'``: a photo (path) or a background of the workspace (id) to paste the cut-outs on.
    classes, min_area, all_instances, max_instances : optional
        ``'coco'``, ``'voc'``: which instances become targets (default: the largest of each image
        covering at least 1 % of it, every category, at most 10,000 targets).
    split : str, optional
        ``'voc'``: the ids of ``ImageSets/Segmentation/<split>.txt``.
    propose_masks : bool, default=False
        Folder layouts: photos without a mask get a GrabCut mask to review (``report.proposed``).
    existing_classes_only : bool, default=False
        Reject targets of classes the workspace lacks.
    imagenet_map : mapping or path-like, optional
        ``{"class": index or [indices]}`` (or a JSON file of it) for new classes.
    package, licence : str, default=""
        Recorded with each target.

    Returns
    -------
    ImportReport
        ``added``, ``accepted`` ids, ``rejected`` (file, reason), ``skip_report()``, ``new_classes``
        with their mappings and ``unmapped_classes``, as the Data page shows them.

    Raises
    ------
    InvalidInputError
        A parameter does not fit ``layout``, or a file is malformed; nothing is stored.
    NothingToImportError
        Nothing valid to add (``err.report`` says why); the workspace is unchanged.

    See Also
    --------
    analytics.data.store_targets : store :class:`~analytics.data.Target` records made in memory.

    Examples
    --------
    >>> from analytics import api as bd
    >>> report = bd.add_targets("my-workspace", "photos/", layout="folder", licence="CC-BY-4.0")  # doctest: +SKIP
    >>> report.added, report.rejected, report.unmapped_classes  # doctest: +SKIP
    """
    return import_targets(
        workspace, path, layout=layout, annotations=annotations, images=images, home=home, home_id=home_id, classes=classes, min_area=min_area,
        all_instances=all_instances, max_instances=max_instances, split=split, propose_masks=propose_masks,
        existing_classes_only=existing_classes_only, imagenet_map=imagenet_map, package=package, licence=licence,
    )  # fmt: skip


def add_backgrounds(workspace: Workspace | PathLike | None, path: PathLike, *, crops_per_photo: int = 1, seed: int = 0, package: str = "", licence: str = "") -> ImportReport:
    """Import a background pool (a flat folder or .zip of photos), as ``python -m analytics
    add-backgrounds`` and the Data page do (:func:`analytics.data.import_backgrounds`: one photo
    decoded at a time, rows committed in batches).

    Parameters
    ----------
    workspace : Workspace or path-like or None
        A workspace or its folder (None: the default one), created once a photo is read.
    path : path-like
    crops_per_photo : int, default=1
        Distinct square crops per photo.
    seed : int, default=0
        Seed of the crop positions.
    package, licence : str, default=""
        Recorded with each background.

    Returns
    -------
    ImportReport
        ``added``, ``accepted`` ids and ``rejected`` (file, reason).

    Raises
    ------
    InvalidInputError
        ``crops_per_photo`` below 1, or no photo in ``path``.
    NothingToImportError
        Nothing valid to add (``err.report`` says why); the workspace is unchanged.

    See Also
    --------
    analytics.data.store_backgrounds : store :class:`~analytics.data.Background` records made in memory.

    Examples
    --------
    >>> from analytics import api as bd
    >>> bd.add_backgrounds("my-workspace", "scenes/", crops_per_photo=2).added  # doctest: +SKIP
    """
    return import_backgrounds(workspace, path, crops_per_photo=crops_per_photo, seed=seed, package=package, licence=licence)


def add_model(workspace: Workspace | PathLike | None, name: str | None = None, *, source: str | None = None, replace: bool = False, **options: Any) -> dict[str, Any]:
    """Register a model, as ``python -m analytics add-model`` and the Models page do: every source
    dispatches through the one registry of sources (:func:`analytics.models.add_model`), which loads the
    model and checks a forward pass before anything is stored. An ``nn.Module`` held in memory is given
    as ``module=`` (source ``'module'``): compiled to TorchScript, checked against the module and stored
    in the workspace with its preprocessing, so that it reloads identically in another process.

    Parameters
    ----------
    workspace : Workspace or path-like or None
        A workspace or its folder (None: the default one), created when there is none.
    name : str, optional
        The registry name (not for EfficientNet-Lite, named after its ``arch``).
    source : str, optional
        A source of :data:`analytics.models.SOURCES`: ``'efficientnet-lite'``, ``'torchvision'``,
        ``'torchscript'``, ``'timm'``, ``'transformers'``, ``'onnx'`` or ``'module'`` (the default when
        ``module`` is given).
    replace : bool, default=False
        Overwrite a model of the same name.
    **options
        The source's registration options (:attr:`analytics.models.ModelSource.options`): ``arch``,
        ``checkpoint`` (path-like), ``label_space`` (a :class:`~analytics.data.LabelSpace`, ``'imagenet'``,
        ``'in9'``, a class-list file, or a sequence of class names), ``input_size``, ``mean`` and ``std``
        (three numbers), ``crop_pct``, ``interpolation``, ``preprocessing``; for ``'module'``:
        ``module`` (its ``forward`` returns logits or ``(logits, embedding)``), ``input_size``,
        ``mean`` and ``std`` (required), ``label_space``, ``crop_pct``, ``interpolation``.

    Returns
    -------
    dict
        The model's row of the Models page and of :func:`models` (:meth:`analytics.models.ModelSpec.summary`:
        name, source, arch, label_space, n_outputs, input_size, preprocessing, embedding_layer, n_params, …).

    Raises
    ------
    InvalidInputError
        An unknown source or option, a missing one, a model its source refuses (a checkpoint that does
        not fit, a module that can be neither scripted nor traced), a name taken. Nothing is stored.

    Examples
    --------
    >>> from analytics import api as bd
    >>> bd.add_model(ws, source="efficientnet-lite", arch="efficientnet-lite0")["n_params"]  # doctest: +SKIP
    >>> bd.add_model(ws, "mine", source="timm", arch="resnet18", checkpoint="resnet18.pth", label_space=["cat", "dog"])  # doctest: +SKIP
    >>> bd.add_model(ws, "net", module=net, input_size=224, mean=(0.5, 0.5, 0.5), std=(0.5, 0.5, 0.5), label_space="imagenet")  # doctest: +SKIP
    """
    if source is None:
        if "module" not in options:
            sources = ", ".join(repr(s.name) for s in SOURCES.values() if s.registrable and not s.python_only)
            raise InvalidInputError(f"give source (one of {sources}), or module (an nn.Module in memory)")
        source = "module"
    chosen = get_source(source)
    given = {key: _label_space(value) if _is_labels(chosen, key) else value for key, value in options.items() if value is not None}
    for option in chosen.options:
        if option.kind == "labels" and option.name not in given and option.default is not None:
            given[option.name] = _label_space(option.default)
    opened = workspace if isinstance(workspace, Workspace) else Workspace(workspace, create=True)
    return register_by_source(opened, source, name, replace=replace, **given).summary()


def _is_labels(source: Any, key: str) -> bool:
    return any(option.name == key and option.kind == "labels" for option in source.options)


def _label_space(value: Any) -> LabelSpace:
    """A label space from ``'imagenet'``, ``'in9'``, a class-list file or a sequence of class names."""
    if isinstance(value, LabelSpace):
        return value
    if isinstance(value, str | os.PathLike):
        return parse_label_space(os.fspath(value))
    names = tuple(value) if isinstance(value, Sequence) else ()
    if not names or not all(isinstance(n, str) and n.strip() for n in names) or len(set(names)) != len(names):
        raise InvalidInputError(
            f"label_space must be a LabelSpace, 'imagenet', 'in9', a class-list file or a sequence of distinct class names; got {value!r}"[:300]
        )
    return LabelSpace("custom", names, origin="given in Python")


def build_suite(
    workspace: Workspace,
    *,
    method: str,
    n: int = 32,
    seed: int = 0,
    name: str = "",
    classes: Sequence[str] | None = None,
    targets: Sequence[str] | None = None,
    distance_models: Sequence[str] | None = None,
    target_table: str | None = None,
    background_table: str | None = None,
    ontology: str | None = None,
    min_support: float | None = None,
    min_confidence: float | None = None,
    keyword_model: str | None = None,
    realism: str = DEFAULT_REALISM,
    realism_threshold: float = DEFAULT_REALISM_THRESHOLD,
    top_up: bool = True,
    batch_size: int | None = None,
    device: str | None = None,
    progress: Progress | None = None,
    say: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Sample and save a suite of ``n`` backgrounds per target, as the Suites page's job and ``python -m
    analytics suite`` do (:func:`analytics.suites.build_suite`): keyword methods compute the keyword tables they lack
    (classifier-patch keywords) and ``'ontology'`` mines the default ontology of those tables when
    the workspace has none.

    Parameters
    ----------
    workspace : Workspace
    method : {'random', 'nearest', 'interval', 'keyword', 'ontology'}
        A sampler of :data:`analytics.suites.SAMPLERS`.
    n : int, default=32
    seed : int, default=0
    name : str, default=""
        A name to call the suite by (default: method, N, seed and targets).
    classes, targets : sequence of str, optional
        Cover only the targets of these classes, or these target ids.
    distance_models : sequence of str, optional
        Models of the distance ensemble (default: every EfficientNet-Lite).
    target_table, background_table : str, optional
        Keyword tables (default: the newest, computed when there is none).
    ontology : str, optional
        Ontology id for ``'ontology'`` (default: the newest mined from the keyword tables, mined now if none).
    min_support, min_confidence : float in (0, 1], optional
        ``'ontology'`` without ``ontology``: the mining settings of the ontology to use (the newest one of
        the keyword tables mined with them, else one mined now; an unset one at its default, 0.005 and
        0.1, as :func:`analytics.ontology.build_ontology` and ``python -m analytics ontology``). On small
        data, where the defaults' rules reach none of the pool's keywords ("expands only 0 of N targets"),
        a lower ``min_confidence`` or ``min_support`` gives a denser ontology.
    keyword_model : str, optional
        ImageNet classifier for keywords computed here.
    realism, realism_threshold, top_up, batch_size, device :
        As :func:`analytics.suites.build_suite`.
    progress : callable, optional
        ``progress(done, total, step)``, ``step`` ``'keywords'`` or ``'exact distances'``.
    say : callable, optional
        Called with one line for each thing computed on the way (keyword tables, an ontology).

    Returns
    -------
    dict
        The suite's ``suite`` id, ``label``, statistics (``items``: backgrounds in all, ``targets``, ``per_target``, ``keyword_diversity``,
        ``distance_mean``, ...), provenance (``keyword_tables``, ``ontology``, ``selection``) and
        ``warnings``: the Suites page's summary.

    Examples
    --------
    >>> from analytics import api as bd
    >>> bd.build_suite(ws, method="random", n=8, name="random eight")["suite"]  # doctest: +SKIP
    """
    name = check_suite_name(name)  # before any slow step
    sampler = SAMPLERS[method] if method in SAMPLERS else None
    mining = _mining(sampler, method, ontology, min_support, min_confidence)
    tables = None
    if sampler is not None and sampler.needs_keywords:
        tables = _keyword_tables(workspace, target_table, background_table, keyword_model, batch_size, device, progress, say)
    if sampler is not None and sampler.needs_ontology and ontology is None:
        assert tables is not None  # a sampler that needs the ontology needs keywords (analytics.suites.SAMPLERS)
        ontology, built = ensure_ontology(workspace, tables, **mining)
        if built and say is not None:
            support, confidence = mining.get("min_support", DEFAULT_MIN_SUPPORT), mining.get("min_confidence", DEFAULT_MIN_CONFIDENCE)
            which = "with these settings" if mining else "of these keyword tables"
            say(
                f"no ontology {which} in the workspace: mined {ontology} (fpgrowth, support {support}, "
                f"confidence {confidence}) from {', '.join(tables.values())}"
            )
    suite = sample_suite(
        workspace, method=method, n=n, seed=seed, classes=classes, target_ids=targets, keyword_tables=tables, ontology_id=ontology,
        distance_models=distance_models, realism=realism, realism_threshold=realism_threshold, top_up=top_up, batch_size=batch_size,
        device=device, name=name, progress=with_message(progress, "exact distances"),
    )  # fmt: skip
    stats = suite_stats(suite)
    return {
        "suite": suite.id,
        "label": suite_labels_of(workspace)[suite.id],
        "name": suite.name,
        "method": suite.method,
        "items": len(suite.items),
        "targets": stats.targets,
        "per_target": stats.per_target_min,
        "per_target_max": stats.per_target_max,
        "keyword_diversity": stats.keyword_diversity,
        "distance_mean": stats.distance_mean,
        "distance_std": stats.distance_std,
        "below_realism": stats.below_realism,
        "topped_up": stats.topped_up,
        "topped_up_targets": stats.topped_up_targets,
        "topup_share": stats.topup_share,
        "keyword_tables": suite.params.get("keyword_tables", {}),
        "ontology": suite.params.get("ontology"),
        "selection": suite.params.get("selection"),
        "screening": screening_warning(suite.params.get("pool_screening") or {}),
        "warnings": list(suite.warnings),
    }


def _mining(sampler: Any, method: str, ontology: str | None, min_support: float | None, min_confidence: float | None) -> dict[str, float]:
    """The mining settings given (checked), as keyword arguments of :func:`analytics.suites.ensure_ontology`.
    Messages name the parameters in backticks (the command line writes them as its flags)."""
    given = {key: value for key, value in (("min_support", min_support), ("min_confidence", min_confidence)) if value is not None}
    if not given:
        return {}
    if sampler is not None and not sampler.needs_ontology:
        raise InvalidInputError(f"`{'` and `'.join(given)}` set how method 'ontology' mines its ontology; got `method` {method!r}")
    if ontology is not None:
        raise InvalidInputError(f"give `ontology` (a stored one) or `{'` and `'.join(given)}` (to mine one from the keyword tables), not both")
    return {key: check_fraction(value, f"`{key}`") for key, value in given.items()}


def _keyword_tables(
    workspace: Workspace, target: str | None, background: str | None, model: str | None, batch_size: int | None, device: str | None,
    progress: Progress | None, say: Callable[[str], None] | None,
) -> dict[str, str]:  # fmt: skip
    given = {kind: name for kind, name in (("target", target), ("background", background)) if name}
    if len(given) == 2:
        return given
    names, computed = ensure_keyword_tables(workspace, model=model, batch_size=batch_size, device=device, progress=with_message(progress, "keywords"))
    for kind in computed:
        if say is not None:
            say(f"no {kind} keyword table in the workspace: computed {names[kind]} with the classifier-patch backend")
    return {**names, **given}


def run(
    workspace: Workspace,
    *,
    models: str | Sequence[str],
    suite: str,
    device: str | None = None,
    batch_size: int | None = None,
    top_k: int = 3,
    fill_conv: bool = False,
    skip_unscorable: bool = False,
    progress: Progress | None = None,
) -> pd.DataFrame:
    """Run models over a suite and store their per-image signals, as ``python -m analytics run`` and the
    Run page do (:func:`analytics.runs.start_runs`; resumable: an interrupted run continues).

    Parameters
    ----------
    workspace : Workspace
    models : str or sequence of str
        Registered model names.
    suite : str
        The suite's id, label or name.
    device : str, optional
        ``cpu``, ``cuda`` or ``cuda:N``; default CUDA when available.
    batch_size : int, optional
        Images per batch (default: 256 on a GPU, 32 on a CPU).
    top_k : int, default=3
        Embedding neurons picked on the foreground-only image.
    fill_conv : bool, default=False
        Also compute the last-conv-map signals of stored images that lack them.
    skip_unscorable : bool, default=False
        Run the models that can score the suite's classes and leave out the others, as the Run page
        does (:func:`analytics.runs.start_runs_that_can`); by default such a model stops the call before
        any model runs.
    progress : callable, optional
        ``progress(done, total, message)``.

    Returns
    -------
    DataFrame
        One row per run, in the order of ``models``: the Run page's table (:func:`analytics.runs.list_runs`:
        id, label, model, suite, status, images, accuracy, worst-case accuracy, ...). ``.attrs["skipped"]``
        maps each model left out (``skip_unscorable``) to the reason it could not run.

    Raises
    ------
    InvalidInputError
        A model cannot score the suite's classes (with ``skip_unscorable``: no model can).

    Examples
    --------
    >>> from analytics import api as bd
    >>> bd.run(ws, models=["efficientnet-lite0"], suite="random eight")[["id", "accuracy"]]  # doctest: +SKIP
    """
    names = list(dict.fromkeys([models] if isinstance(models, str) else models))
    suite_id = resolve_suite(workspace, suite)
    options: dict[str, Any] = {"device": device, "batch_size": batch_size, "top_k": top_k, "progress": progress, "fill_conv": fill_conv}
    if skip_unscorable:
        started = start_runs_that_can(workspace, names, suite_id, **options)
        run_ids, skipped = list(started.run_ids.values()), dict(started.failed)
    else:
        run_ids, skipped = start_runs(workspace, names, suite_id, **options), {}
    table = list_runs(workspace, suite_id=suite_id).set_index("id").loc[run_ids].reset_index()
    table.attrs["skipped"] = skipped
    return table


def judge(
    workspace: Workspace,
    *,
    annotator: str,
    model: str,
    label: str,
    run_id: str | None = None,
    suite: str | None = None,
    confidence: float | None = None,
    note: str = "",
) -> Judgment:
    """Record one judgment of a model's invariance, as ``python -m analytics judge`` and the Judge page
    do (:func:`analytics.judging.add_judgment`; a changed judgment is a new row, the latest counts).

    Parameters
    ----------
    workspace : Workspace
    annotator : str
        Who judges.
    model : str
        A registered model.
    label : {'invariant', 'borderline', 'variant'}
    run_id : str, optional
        The run whose matrices were judged (its suite is then the suite judged).
    suite : str, optional
        The suite judged: its id, label or name.
    confidence : float in [0, 1], optional
    note : str, default=""

    Returns
    -------
    Judgment
        The stored row, with its id and time (``.to_dict()``).

    Examples
    --------
    >>> from analytics import api as bd
    >>> bd.judge(ws, annotator="ana", model="efficientnet-lite0", label="borderline", suite="random eight")  # doctest: +SKIP
    """
    suite_id = None if suite is None else resolve_suite(workspace, suite)
    return add_judgment(
        workspace, annotator=annotator, model=model, label=label, run_id=run_id, suite_id=suite_id, confidence=confidence, note=note,
        names=ParameterNames({"suite_id": "suite"}),
    )  # fmt: skip
