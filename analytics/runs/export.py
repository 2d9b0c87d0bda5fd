"""Export: a run's matrices as .npy and .png files and its per-image table as .csv."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from analytics._choices import SIGNALS
from analytics._validation import check_positive_int
from analytics.exceptions import InvalidInputError
from analytics.variance import DEFAULT_SETTINGS, MatrixSettings
from analytics.workspace import Workspace, to_csv

from .matrices import run_matrices
from .read import image_table, load_run, run_of_classes

#: Colour stops of exported matrices and of :data:`analytics.figures.VARIANCE_COLORSCALE`: low variance green, high yellow, RGB.
VARIANCE_COLOURS = ((0.0, (0x1A, 0x98, 0x50)), (0.5, (0xA6, 0xD9, 0x6A)), (1.0, (0xFF, 0xFF, 0x33)))


def render_matrix(matrix: np.ndarray, *, zmin: float | None = None, zmax: float | None = None, scale: int = 8) -> np.ndarray:
    """A matrix as an RGB image, green = low, yellow = high, origin at the bottom left.

    Parameters
    ----------
    matrix : ndarray of shape (grid, grid), float
        Row 0 = smallest d_ik (``VarianceMatrix.matrix``).
    zmin, zmax : float, optional
        Colour range; default the matrix's own.
    scale : int, default=8
        Pixels per cell.

    Returns
    -------
    ndarray of shape (grid * scale, grid * scale, 3), uint8
    """
    scale = check_positive_int(scale, "scale")
    m = np.asarray(matrix, dtype=np.float64)
    low = float(m.min()) if zmin is None else float(zmin)
    high = float(m.max()) if zmax is None else float(zmax)
    t = np.clip((m - low) / (high - low), 0, 1) if high > low else np.zeros_like(m)
    stops = np.array([s for s, _ in VARIANCE_COLOURS])
    colours = np.array([c for _, c in VARIANCE_COLOURS], dtype=np.float64)
    rgb = np.stack([np.interp(t, stops, colours[:, c]) for c in range(3)], axis=-1)
    image = np.round(rgb[::-1]).astype(np.uint8)  # image row 0 is the top: the largest d_ik
    return cv2.resize(image, (m.shape[1] * scale, m.shape[0] * scale), interpolation=cv2.INTER_NEAREST)


def export_run(
    workspace: Workspace,
    run_id: str,
    out_dir: str | Path,
    *,
    settings: MatrixSettings = DEFAULT_SETTINGS,
    tops: Mapping[str, float] | None = None,
    signals: Sequence[str] = tuple(SIGNALS),
    classes: Sequence[str] | None = None,
    bottoms: Mapping[str, float] | None = None,
) -> dict[str, Any]:
    """Write a run's matrices (one per signal) (``<signal>.npy``, ``<signal>.png``) and per-image table
    (``images.csv``) into ``out_dir`` (created when missing), of every target or of those of ``classes``.

    Parameters
    ----------
    workspace : Workspace
    run_id : str
    out_dir : path-like
    settings : MatrixSettings, default=DEFAULT_SETTINGS
        Interpolation settings, as in :func:`analytics.runs.run_matrices`.
    tops : mapping of str to float, optional
        Top of each signal's colour range in the PNGs, e.g. the suite's
        :class:`analytics.runs.ColourScale`; default each matrix's own range (also for a signal ``tops`` lacks).
    signals : sequence of str, default=tuple(SIGNALS)
        Keys of :data:`analytics.runs.MATRIX_SIGNALS` (the authors' conv-map signals among them).
    classes : sequence of str, optional
        Only the targets of these classes, in the matrices and the table
        (:func:`analytics.runs.run_of_classes`); None = every target.
    bottoms : mapping of str to float, optional
        Bottom of each signal's colour range in the PNGs where ``tops`` sets the top (a signal it
        lacks: 0), e.g. :attr:`analytics.runs.ColourScale.bottoms`.

    Returns
    -------
    dict
        ``{"run", "settings", "classes", "matrices": {signal: {"path", "png", "shape", "mean"}},
        "points", "table"}``; ``points`` per signal; ``classes`` the classes exported (None = all).

    Raises
    ------
    InvalidInputError
        ``out_dir`` is a file, or ``classes`` is empty or names a class the run has no target of
        (the message lists the run's classes); checked before anything is written.
    """
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise InvalidInputError(f"out_dir {out} is a file; pass a folder")
    data = load_run(workspace, run_id)
    if classes is not None:
        data = run_of_classes(data, classes)
        classes = sorted(set(data.class_names or []))
    out.mkdir(parents=True, exist_ok=True)
    matrices = run_matrices(workspace, run_id, settings=settings, signals=signals, classes=classes)
    written = {}
    for signal, vm in matrices.items():
        npy, png = out / f"{signal}.npy", out / f"{signal}.png"
        np.save(npy, vm.matrix)
        bottom = float((bottoms or {}).get(signal, 0.0))
        colours = {"zmin": bottom, "zmax": float(tops[signal])} if tops is not None and signal in tops else {}
        if not cv2.imwrite(str(png), render_matrix(vm.matrix, **colours)[..., ::-1]):  # OpenCV writes BGR
            raise InvalidInputError(f"cannot write {png}; check that the folder is writable")
        written[signal] = {"path": str(npy), "png": str(png), "shape": list(vm.matrix.shape), "mean": float(vm.matrix.mean())}
    table = out / "images.csv"
    images = image_table(workspace, run_id)
    to_csv(images if classes is None else images[images["class_name"].isin(classes)], table)
    first = next(iter(matrices.values()))
    return {
        "run": run_id,
        "settings": {**settings.as_dict(), "d_max": first.d_max},
        "classes": classes,
        "matrices": written,
        "points": data.n_points,
        "table": str(table),
    }
