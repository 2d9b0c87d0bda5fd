"""ImageNet-X factor analysis (Idrissi et al., "ImageNet-X"): which factors of variation a model's
ImageNet validation errors go with.

Everything is computed by the ``imagenet-x`` package (its annotations ship inside it, so no
network): :func:`imagenet_x.load_annotations` (validation set, top factor per image, the
prototypical images left out: 46,110 images, the package's defaults), :func:`imagenet_x.augment_model_predictions`
(joins predictions to annotations), :func:`imagenet_x.compute_factor_accuracies` and
:func:`imagenet_x.error_ratio` (``(1 - acc_factor) / (1 - acc_overall)``), and the prevalence shift
of :class:`imagenet_x.prevalence.Prevalence`. This module reads and checks the predictions files,
and writes them for a workspace model from a folder of ImageNet validation images.

Predictions use the package's CSV format: ``file_name,predicted_class,predicted_probability``, one
row per validation image (``ILSVRC2012_val_00000001.JPEG``), ``predicted_class`` an ImageNet-1k
index in 0..999 and ``predicted_probability`` the softmax probability of that class (optional
here: the factor analysis never reads it).
"""

from __future__ import annotations

import functools
import io
import os
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from analytics._progress import Progress
from analytics._validation import check_positive_int
from analytics.data import fit_square, is_image_file, read_image
from analytics.exceptions import InvalidInputError
from analytics.team import MAX_CSV_UPLOAD_MB
from analytics.workspace import Workspace, content_id

if TYPE_CHECKING:
    from analytics.models import LoadedModel

#: Columns of the package's predictions CSV; the probability is optional.
PREDICTIONS_FILE_COLUMNS = ("file_name", "predicted_class")
PROBABILITY = "predicted_probability"
#: Largest predictions file read (the full validation set is about 2.4 MB).
MAX_PREDICTIONS_BYTES = MAX_CSV_UPLOAD_MB * 2**20
N_IMAGENET_CLASSES = 1000
#: Images per cached chunk when predicting: an interrupted run resumes from the last whole chunk.
CHUNK = 256
EXAMPLE_NAME = "ILSVRC2012_val_00000001.JPEG"
FORMAT_HELP = f"columns file_name,predicted_class[,predicted_probability], e.g. {EXAMPLE_NAME},65,0.91"


def factor_names() -> tuple[str, ...]:
    """The 16 ImageNet-X factors in the package's order (``imagenet_x.FACTORS``)."""
    from imagenet_x import FACTORS

    return tuple(FACTORS)


@functools.cache
def _annotations() -> pd.DataFrame:
    """The package's default annotations (val, top factor, prototypes removed); never mutated."""
    from imagenet_x import load_annotations

    return load_annotations()


@functools.cache
def _annotated_file_names() -> frozenset[str]:
    """File names of the annotated validation images the analysis counts (46,110 of the 50,000)."""
    return frozenset(_annotations()["file_name"])


# -- reading and checking predictions --------------------------------------------------------------
def load_predictions(source: str | os.PathLike | bytes, *, name: str | None = None) -> pd.DataFrame:
    """Read a predictions CSV in the ``imagenet-x`` package's format and check it.

    Parameters
    ----------
    source : path or bytes
        The CSV file, or its contents (an upload).
    name : str, optional
        What to call the file in messages (default: the path, or ``'the upload'``).

    Returns
    -------
    predictions : DataFrame
        Columns ``file_name`` (str), ``predicted_class`` (int64, 0..999) and, when the file has it,
        ``predicted_probability`` (float64, in [0, 1]); one row per image.

    Raises
    ------
    InvalidInputError
        The file is missing, over :data:`MAX_PREDICTIONS_BYTES`, not a CSV, lacks a column, has a
        class outside 0..999, a probability outside [0, 1] or a file name twice.
    """
    if isinstance(source, bytes):
        name, data = name or "the upload", source
        check_file_size(len(data), name)
    else:
        path = Path(source)
        name = name or str(path)
        if not path.is_file():
            raise InvalidInputError(f"predictions file {name}: not found; give the path of a CSV with {FORMAT_HELP}")
        check_file_size(path.stat().st_size, name)
        data = path.read_bytes()
    try:
        frame = pd.read_csv(io.BytesIO(data), dtype={"file_name": str})
    except (ValueError, UnicodeDecodeError, pd.errors.ParserError) as err:
        raise InvalidInputError(f"predictions file {name}: not a readable CSV ({(str(err).splitlines() or [type(err).__name__])[0]}); save it as CSV with {FORMAT_HELP}") from None
    return check_predictions(frame, name=name)


def check_file_size(n_bytes: int, name: str) -> None:
    """Refuse a predictions file of ``n_bytes`` bytes above :data:`MAX_PREDICTIONS_BYTES` (before reading it)."""
    if n_bytes > MAX_PREDICTIONS_BYTES:
        raise InvalidInputError(
            f"predictions file {name}: {n_bytes / 2**20:.1f} MiB is more than the {MAX_PREDICTIONS_BYTES // 2**20} MiB allowed "
            f"(the whole validation set takes about 2.4 MB); keep only the columns {FORMAT_HELP}"
        )


def check_predictions(frame: pd.DataFrame, *, name: str = "predictions") -> pd.DataFrame:
    """Check a predictions table (see :func:`load_predictions`) and return a clean copy.

    Parameters
    ----------
    frame : DataFrame
        Columns ``file_name``, ``predicted_class`` and optionally ``predicted_probability``.
    name : str, default='predictions'
        What to call the table in messages.

    Returns
    -------
    predictions : DataFrame
        The three (or two) columns with the dtypes of :func:`load_predictions`.

    Raises
    ------
    InvalidInputError
        As :func:`load_predictions`.
    """
    frame = frame.rename(columns=lambda column: str(column).strip())
    missing = [column for column in PREDICTIONS_FILE_COLUMNS if column not in frame.columns]
    if missing:
        raise InvalidInputError(
            f"predictions file {name}: no column {', '.join(map(repr, missing))} (it has {', '.join(map(str, frame.columns[:6])) or 'none'}); "
            f"the imagenet-x format has {FORMAT_HELP}"
        )
    if frame.empty:
        raise InvalidInputError(f"predictions file {name}: no rows; it needs one row per validation image with {FORMAT_HELP}")
    names = frame["file_name"].astype(str).str.strip()
    blank = np.flatnonzero(frame["file_name"].isna().to_numpy() | (names == "").to_numpy())
    if blank.size:
        raise InvalidInputError(f"predictions file {name}: empty file_name on line {blank[0] + 2}; fill or drop that row")
    twice = names[names.duplicated()]
    if not twice.empty:
        raise InvalidInputError(f"predictions file {name}: {twice.iloc[0]} has more than one row (line {twice.index[0] + 2}); keep one prediction per image")
    classes = pd.to_numeric(frame["predicted_class"], errors="coerce")
    bad = np.flatnonzero(~(classes.notna() & (classes % 1 == 0) & classes.between(0, N_IMAGENET_CLASSES - 1)).to_numpy())
    if bad.size:
        raise InvalidInputError(
            f"predictions file {name}: predicted_class {str(frame['predicted_class'].iloc[bad[0]])!r} on line {bad[0] + 2} is not an "
            f"ImageNet-1k class index (an integer in 0..{N_IMAGENET_CLASSES - 1}); write the model's arg-max output index"
        )
    clean = pd.DataFrame({"file_name": names.to_numpy(), "predicted_class": classes.astype(np.int64).to_numpy()})
    if PROBABILITY in frame.columns:
        probability = pd.to_numeric(frame[PROBABILITY], errors="coerce")
        bad = np.flatnonzero(~probability.between(0, 1).to_numpy())
        if bad.size:
            raise InvalidInputError(
                f"predictions file {name}: predicted_probability {str(frame[PROBABILITY].iloc[bad[0]])!r} on line {bad[0] + 2} is not a "
                "probability in [0, 1]; write the softmax probability of the predicted class, or drop the column"
            )
        clean[PROBABILITY] = probability.astype(np.float64).to_numpy()
    return clean


# -- the analysis ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FactorAnalysis:
    """The factor analysis of several models (see :func:`analyse_models`).

    Attributes
    ----------
    summary : DataFrame
        The table of :func:`compare_models`.
    details : DataFrame
        One row per model and factor (models in the given order, factors in :func:`factor_names`
        order); columns ``model``, ``factor``, then those of :func:`factor_table` (``images``,
        ``accuracy``, ``error_ratio``) and of :func:`error_prevalence` (``errors``,
        ``share_of_errors``, ``share_of_images``, ``shift``).
    """

    summary: pd.DataFrame
    details: pd.DataFrame


def analyse_models(models: Mapping[str, pd.DataFrame]) -> FactorAnalysis:
    """:func:`compare_models`, :func:`factor_table` and :func:`error_prevalence` of every model,
    joining each model's predictions to the annotations once.

    Parameters
    ----------
    models : mapping of str to DataFrame
        Model name -> its predictions (see :func:`load_predictions`).

    Returns
    -------
    FactorAnalysis

    Raises
    ------
    InvalidInputError
        No models, or a model none of whose file names is an annotated validation image.
    """
    merged = _merged_models(models)
    details = pd.concat(
        [pd.concat([_factor_table(frame), _prevalence(frame)], axis=1).reset_index().assign(model=name) for name, frame in merged.items()],
        ignore_index=True,
    )
    columns = ["model", "factor", "images", "accuracy", "error_ratio", "errors", "share_of_errors", "share_of_images", "shift"]
    return FactorAnalysis(_summary(merged), details[columns])


def compare_models(models: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Overall accuracy and the error ratio of every factor, one row per model.

    Parameters
    ----------
    models : mapping of str to DataFrame
        Model name -> its predictions (see :func:`load_predictions`).

    Returns
    -------
    table : DataFrame
        Index ``model`` in the given order; columns ``images`` (int: annotated images predicted),
        ``accuracy`` (float: top-1 over them, the package's ``average``), ``worst_factor_accuracy``,
        then one float column per factor (:func:`factor_names`) with its error ratio
        ``(1 - acc_factor) / (1 - accuracy)`` (NaN where undefined: no errors, or no image of the factor).

    Raises
    ------
    InvalidInputError
        No models, or a model none of whose file names is an annotated validation image.
    """
    return _summary(_merged_models(models))


def factor_table(predictions: pd.DataFrame) -> pd.DataFrame:
    """Per-factor accuracy and error ratio of one model.

    Parameters
    ----------
    predictions : DataFrame
        See :func:`load_predictions`.

    Returns
    -------
    table : DataFrame
        Index ``factor`` (the 16 of :func:`factor_names`); columns ``images`` (int: annotated images
        with the factor that were predicted), ``accuracy`` (float, NaN without images) and
        ``error_ratio`` (float, NaN where undefined).

    Raises
    ------
    InvalidInputError
        As :func:`compare_models`.
    """
    return _factor_table(_merged(predictions, "predictions"))


def error_prevalence(predictions: pd.DataFrame) -> pd.DataFrame:
    """How often each factor occurs among the model's errors, against among all its images.

    Parameters
    ----------
    predictions : DataFrame
        See :func:`load_predictions`.

    Returns
    -------
    table : DataFrame
        Index ``factor``; columns ``errors`` (int: misclassified images with the factor),
        ``share_of_errors`` and ``share_of_images`` (float: the factor's share of all factor labels
        among the errors / among all predicted images; each column sums to 1; NaN without errors)
        and ``shift`` (float: the package's prevalence shift ``share_of_errors / share_of_images - 1``,
        0 where undefined; the paper's "+1.48x more likely among misclassified samples").

    Raises
    ------
    InvalidInputError
        As :func:`compare_models`.
    """
    return _prevalence(_merged(predictions, "predictions"))


def _merged_models(models: Mapping[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    if not models:
        raise InvalidInputError("no predictions given; pass at least one predictions CSV")
    return {str(name): _merged(predictions, str(name)) for name, predictions in models.items()}


def _accuracies(merged: list[pd.DataFrame]) -> pd.DataFrame:
    """The package's factor accuracies of joined predictions (one frame per model): index model
    (in the given order), columns the factors, ``worst_factor`` and ``average``."""
    from imagenet_x import compute_factor_accuracies

    accuracies = compute_factor_accuracies(pd.concat(merged, ignore_index=True), list(factor_names()), error_type="is_correct")
    return accuracies.reindex([frame["model"].iloc[0] for frame in merged])


def _summary(merged: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """The :func:`compare_models` table of joined predictions (``{name: joined}``)."""
    from imagenet_x import error_ratio

    accuracies = _accuracies(list(merged.values()))
    images = pd.Series({name: len(frame) for name, frame in merged.items()}, dtype=np.int64)
    table = pd.DataFrame({"images": images, "accuracy": accuracies["average"], "worst_factor_accuracy": accuracies["worst_factor"]})
    table = pd.concat([table, _finite(error_ratio(accuracies))], axis=1)
    table.index.name = "model"
    return table


def _factor_table(merged: pd.DataFrame) -> pd.DataFrame:
    """The :func:`factor_table` of one model's joined predictions."""
    from imagenet_x import error_ratio

    factors = list(factor_names())
    accuracies = _accuracies([merged])
    table = pd.DataFrame(
        {
            "images": merged[factors].sum().astype(np.int64),
            "accuracy": accuracies.iloc[0][factors].astype(np.float64),
            "error_ratio": _finite(error_ratio(accuracies)).iloc[0].astype(np.float64),
        }
    )
    table.index.name = "factor"
    return table


def _prevalence(merged: pd.DataFrame) -> pd.DataFrame:
    """The :func:`error_prevalence` of one model's joined predictions."""
    from imagenet_x.prevalence import Prevalence

    factors = list(factor_names())
    errors = merged.loc[~merged["is_correct"], factors].sum().astype(np.int64)
    labels = merged[factors].sum()
    # Prevalence's constructor reads a folder of files; its shift method needs only these two attributes.
    shift = Prevalence.compute_misclassification_shift(SimpleNamespace(all_df=merged, factors=factors), merged["model"].iloc[0])
    table = pd.DataFrame(
        {
            "errors": errors,
            "share_of_errors": errors / errors.sum() if errors.sum() else np.nan,
            "share_of_images": labels / labels.sum(),
            "shift": shift.set_index("factor")["shift"],
        }
    )
    table.index.name = "factor"
    return table


def _merged(predictions: pd.DataFrame, name: str) -> pd.DataFrame:
    """One model's predictions joined to the annotations by the package (inner join on file_name)."""
    from imagenet_x import augment_model_predictions

    predictions = check_predictions(predictions, name=name)
    known = _known(predictions)
    if not known.any():
        raise InvalidInputError(
            f"predictions {name}: 0 of its {len(predictions)} rows name an annotated ImageNet-X validation image (first file name: "
            f"{predictions['file_name'].iloc[0]}); the file must hold one row per ImageNet validation image, {FORMAT_HELP}"
        )
    with warnings.catch_warnings():
        # imagenet-x 0.0.7 builds its ReaL-label table from ragged lists, which pandas 3 deprecates
        warnings.filterwarnings("ignore", "Constructing a DataFrame from a list of sequences", DeprecationWarning)
        return augment_model_predictions(_annotations(), {name: predictions[known]})


def matched_rows(predictions: pd.DataFrame) -> int:
    """How many rows of checked predictions (:func:`load_predictions`) name an annotated ImageNet-X
    validation image: the rows the analysis counts (an analysis of a file with none is refused)."""
    return int(_known(predictions).sum())


def _known(predictions: pd.DataFrame) -> np.ndarray:
    annotated = _annotated_file_names()
    return np.fromiter((file_name in annotated for file_name in predictions["file_name"]), bool, len(predictions))  # Series.isin(set) is ~100x slower


def _finite(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with ±inf (a factor with errors for a model without any) as NaN: undefined."""
    return frame.replace([np.inf, -np.inf], np.nan)


# -- predictions of a workspace model ---------------------------------------------------------------
def predict_imagenet_val(
    workspace: Workspace,
    model: str,
    folder: str | os.PathLike,
    *,
    batch_size: int = 32,
    device: str | None = None,
    progress: Progress | None = None,
) -> pd.DataFrame:
    """Predictions of a registered ImageNet-1k model on the user's ImageNet validation images.

    Only images whose file names the ImageNet-X annotations count are read (searched recursively,
    so a flat folder and the per-class layout both work). Each is centre-cropped to a square of its
    shorter side and resized to the model's input (the model's own preprocessing then normalises
    it). Chunks of :data:`CHUNK` images are cached in the workspace, keyed by the model's content
    key and the files' names, sizes and modification times, so an interrupted run resumes and a
    repeated one loads no model.

    Parameters
    ----------
    workspace : Workspace
    model : str
        A registered model with the ImageNet-1k label space (1000 outputs).
    folder : path
        Folder holding validation images named like ``ILSVRC2012_val_00000001.JPEG``.
    batch_size : int, default=32
        Images per forward pass.
    device : str, optional
        ``'cpu'``, ``'cuda'`` or ``'cuda:N'``; None: CUDA when available.
    progress : callable, optional
        Called as ``progress(done, total)`` with counts of images.

    Returns
    -------
    predictions : DataFrame
        The package's format, sorted by file name: ``file_name`` (str), ``predicted_class`` (int64)
        and ``predicted_probability`` (float64).

    Raises
    ------
    InvalidInputError
        The folder is missing or holds no annotated validation image, a file name occurs twice, an
        image is unreadable, or the model's outputs are not the ImageNet-1k classes.
    PermissionDeniedError
        The workspace's actor may not run models.
    """
    from analytics.models import get_model_spec, load_model
    from analytics.team import require_permission
    from analytics.workspace import model_keys

    require_permission(workspace, "run_models")
    check_positive_int(batch_size, "batch_size")
    spec = get_model_spec(workspace, model)
    if spec.label_space.kind != "imagenet" or spec.n_outputs != N_IMAGENET_CLASSES:
        raise InvalidInputError(
            f"model {model!r} has the {spec.label_space.kind} label space ({spec.n_outputs} outputs); ImageNet-X needs "
            "ImageNet-1k class indices, so choose a model registered with the imagenet label space"
        )
    paths = _validation_images(Path(folder))
    key = model_keys(workspace).keys[model]  # covers the spec (input size, preprocessing) and the weights
    loaded = functools.cache(lambda: load_model(workspace, model, device=device))  # loaded on the first cache miss only
    rows: list[np.ndarray] = []
    for start in range(0, len(paths), CHUNK):
        rows.append(_predict_chunk(workspace, loaded, key, paths[start : start + CHUNK], batch_size))
        if progress is not None:
            progress(min(start + CHUNK, len(paths)), len(paths))
    values = np.concatenate(rows)
    return pd.DataFrame(
        {"file_name": [path.name for path in paths], "predicted_class": values[:, 0].astype(np.int64), PROBABILITY: values[:, 1].astype(np.float64)}
    )


def _validation_images(folder: Path) -> list[Path]:
    """The annotated validation images under ``folder``, sorted by file name."""
    if not folder.is_dir():
        raise InvalidInputError(f"ImageNet validation folder {folder}: not a folder; give the folder holding files like {EXAMPLE_NAME}")
    known = _annotated_file_names()
    found: dict[str, Path] = {}
    for path in sorted(folder.rglob("*")):
        if path.name in known and is_image_file(path) and path.is_file():
            if path.name in found:
                raise InvalidInputError(f"ImageNet validation folder {folder}: {path.name} is there twice ({found[path.name]} and {path}); keep one")
            found[path.name] = path
    if not found:
        raise InvalidInputError(
            f"ImageNet validation folder {folder}: no image named like an annotated ImageNet validation image (e.g. {EXAMPLE_NAME}); "
            "give the folder of the ILSVRC2012 validation set with its original file names"
        )
    return [found[name] for name in sorted(found)]


def _probabilities(model: LoadedModel, images: list[np.ndarray], batch_size: int) -> np.ndarray:
    """Softmax of square images that may differ in size, each preprocessed once: (n, n_outputs), float32."""
    import torch

    parts = [np.zeros((0, model.spec.n_outputs), np.float32)]
    with torch.inference_mode():
        for start in range(0, len(images), batch_size):
            logits, _ = model.run_batch(model.preprocess_each(images[start : start + batch_size]))
            parts.append(torch.softmax(logits.float(), dim=1).cpu().numpy())
    return np.concatenate(parts)


def _predict_chunk(workspace: Workspace, loaded: Callable[[], LoadedModel], model_key: str, paths: list[Path], batch_size: int) -> np.ndarray:
    """Cached ``(class, probability)`` rows of one chunk: ndarray of shape (len(paths), 2), float64."""
    stats = [(path.name, stat.st_size, stat.st_mtime_ns) for path, stat in ((path, path.stat()) for path in paths)]
    key = "imagenetx-predictions/" + content_id(model_key, stats)

    def predict() -> np.ndarray:
        model = loaded()
        size = model.spec.composite_size  # None: the centre square at its own size, resized once by the model's transform
        squares = [fit_square(image, None, size or min(image.shape[:2]))[0] for image in map(read_image, paths)]
        probabilities = _probabilities(model, squares, batch_size)
        return np.stack([probabilities.argmax(axis=1), probabilities.max(axis=1)], axis=1).astype(np.float64)

    return workspace.cached(key, predict)

