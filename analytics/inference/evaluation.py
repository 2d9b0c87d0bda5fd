"""A model's accuracy on the workspace's original (unmodified) targets, cached in the workspace."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch

from analytics._validation import check_positive_int
from analytics.exceptions import InvalidInputError
from analytics.models import ModelSpec, get_model_spec, load_model
from analytics.workspace import Workspace, content_id, model_keys

from .device import cpu_threads
from .stream import iter_composites, prefetch_for
from .suite_images import SuiteImage, used_classes


@dataclass(frozen=True)
class Evaluation:
    """A model's accuracy on the original (unmodified) targets.

    Attributes
    ----------
    model : str
    n : int
        Number of targets.
    accuracy : float
    per_class : dict of str to float
        Accuracy per workspace class.
    per_class_n : dict of str to int
        Targets per class.
    table : DataFrame
        One row per target: target_id, class_name, predicted, true_prob, max_prob, correct.
    """

    model: str
    n: int
    accuracy: float
    per_class: dict[str, float]
    per_class_n: dict[str, int]
    table: pd.DataFrame = field(repr=False)

    def to_dict(self) -> dict:
        return {"model": self.model, "n": self.n, "accuracy": self.accuracy, "per_class": self.per_class}



def evaluate(workspace: Workspace, model_name: str, *, device: str | torch.device | None = None, batch_size: int = 32) -> Evaluation:
    """Accuracy of a model on the workspace's original (unmodified) target images.

    Cached in the workspace, keyed by the model's content key (a head's covers its backbone) and the
    targets (ids, images, classes).

    Returns
    -------
    Evaluation

    Raises
    ------
    InvalidInputError
        The workspace has no targets, or a class has no output in the model's label space.
    """
    check_positive_int(batch_size, "batch_size")
    spec = get_model_spec(workspace, model_name)
    rows = workspace.query("SELECT id, class_name, image_hash FROM targets ORDER BY id")
    if not rows:
        raise InvalidInputError(f"workspace {workspace.root} has no targets to evaluate {model_name!r} on; add targets on the Data page")
    outputs = spec.label_space.class_outputs(used_classes(workspace, (row["class_name"] for row in rows)))
    key = "evaluate/" + content_id(model_keys(workspace).keys[spec.name], [tuple(row) for row in rows], outputs)
    values = workspace.cached(
        key, lambda: _evaluate(workspace, spec, [row["id"] for row in rows], [outputs[row["class_name"]] for row in rows], device, batch_size)
    )
    table = pd.DataFrame({
        "target_id": [row["id"] for row in rows],
        "class_name": [row["class_name"] for row in rows],
        "predicted": [spec.label_space.names[int(i)] for i in values[:, 3]],
        "true_prob": values[:, 1],
        "max_prob": values[:, 2],
        "correct": values[:, 0].astype(bool),
    })
    by_class = table.groupby("class_name")["correct"]
    return Evaluation(
        model=model_name,
        n=len(table),
        accuracy=float(table["correct"].mean()),
        per_class={name: float(value) for name, value in by_class.mean().items()},
        per_class_n={name: int(value) for name, value in by_class.size().items()},
        table=table,
    )


def _evaluate(workspace: Workspace, spec: ModelSpec, target_ids: list[str], outputs: list[list[int]], device, batch_size: int) -> np.ndarray:
    """(n, 4) float64: correct, true_prob, max_prob, predicted output index per target."""
    model = load_model(workspace, spec.name, device=device)
    values = np.empty((len(target_ids), 4))
    jobs = [SuiteImage(target, 0, None) for target in target_ids]
    start = 0
    with cpu_threads(model.device):
        for batch_jobs, images in iter_composites(workspace, jobs, batch_size=batch_size, size=model.spec.composite_size, prefetch=prefetch_for(model.device)):
            logits, _ = model.run_batch(model.preprocess(images))
            probabilities = torch.softmax(logits.float(), dim=1).cpu().numpy()
            for i, probs in enumerate(probabilities):
                wanted = outputs[start + i]
                values[start + i] = (int(probs.argmax()) in wanted, probs[wanted].sum(), probs.max(), probs.argmax())
            start += len(batch_jobs)
    return values
