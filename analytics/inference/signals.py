"""The per-image signals of one batch (docs/method.md, 'Signals'), from a model's outputs to ``run_images`` rows.

:class:`BatchSignals` computes them on the model's device and, on CUDA, copies them to the host
asynchronously, so :mod:`~analytics.inference.engine` builds and stores one batch's rows while the
device runs the next.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from analytics.models import HeadLayers, ModelSpec

from .device import HostCopy, to_host
from .suite_images import SuiteImage


@dataclass
class Member:
    """One requested model inside a group that shares a backbone pass."""

    spec: ModelSpec
    run_id: str
    outputs: dict[str, list[int]]
    done: set[tuple[str, int]]
    head: HeadLayers | None  # None: the backbone's own logits and embedding
    topk: dict[str, torch.Tensor] = field(default_factory=dict)  # target id -> its top-k neurons in this member's embedding (on the device)


@dataclass
class BatchSignals:
    """One batch's signals per member, computed on the model's device and copied to the host.

    On CUDA the copies are asynchronous (:func:`~analytics.inference.device.to_host`), so the
    engine builds and stores one batch's rows while the device runs the next; reading each batch's
    results at once left the GPU idle meanwhile. Nothing here waits for the device before
    :meth:`rows`: no Python-list indexing of device tensors (:func:`_device_index`). The batch's
    images stay referenced until then: their (asynchronous) upload reads them.
    """

    jobs: list[SuiteImage]  # the batch's images that get rows (its foreground-only images do not)
    copy: HostCopy  # per member: probabilities (n, n_outputs), embedding signals (n, 3); then conv statistics (n, 2)
    conv: bool

    @classmethod
    def compute(
        cls, members: list[Member], jobs: list[SuiteImage], images: np.ndarray, outputs: tuple, top_k: int
    ) -> BatchSignals:
        logits, embedding, conv_stats = outputs
        alone = [i for i, job in enumerate(jobs) if job.foreground]
        keep = [i for i, job in enumerate(jobs) if not job.foreground]
        targets = {target: k for k, target in enumerate(dict.fromkeys(jobs[i].target_id for i in keep))}
        which = _device_index([targets[jobs[i].target_id] for i in keep], embedding.device)  # each kept image's target
        alone_index, keep_index = _device_index(alone, embedding.device), _device_index(keep, embedding.device)
        tensors = []
        for member in members:  # each head reads the one backbone pass and has its own embedding
            member_logits, member_embedding = _member_outputs(member, logits, embedding)
            if alone:  # each target's foreground-only image comes before its other images
                indices = torch.topk(member_embedding[alone_index], min(top_k, member_embedding.shape[1]), dim=1).indices
                member.topk.update({jobs[i].target_id: row for i, row in zip(alone, indices)})
            if keep:
                chosen = torch.stack([member.topk[target] for target in targets])[which]
                kept = member_embedding[keep_index]
                tensors += [torch.softmax(member_logits[keep_index], dim=1), _embedding_signals(kept, chosen)]
        conv = conv_stats is not None
        if keep and conv:
            tensors.append(conv_stats[keep_index].float())
        return cls([jobs[i] for i in keep], to_host(tensors, keep=images), conv)

    def rows(self, members: list[Member], distances: dict, class_of: dict[str, str]) -> list[tuple]:
        """The ``run_images`` rows (:data:`ROW_COLUMNS` order) of every member; waits for the copies."""
        arrays = self.copy.arrays()
        conv = arrays[-1].astype(np.float64) if self.conv else None
        rows = []
        for k, member in enumerate(members):
            probabilities, emb = arrays[2 * k], arrays[2 * k + 1].astype(np.float64)
            rows += _rows(member, self.jobs, probabilities, emb, conv, distances, class_of)
        return rows


def _device_index(values: list[int], device: torch.device) -> torch.Tensor:
    """``values`` as an index tensor on ``device``, sent without waiting.

    Indexing a CUDA tensor with a Python list waits for the work queued on the device (437 ms
    behind a 549 ms queue on an H100): here, for the batch just started. A small index tensor sent
    ahead (``non_blocking``) returned in 0.2 ms behind the same queue.
    """
    return torch.tensor(values, dtype=torch.int64).to(device, non_blocking=True)


def _member_outputs(member: Member, logits: torch.Tensor, embedding: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """A member's logits (n, n_outputs) and embedding (n, d), float32, from the backbone's outputs."""
    if member.head is None:
        return logits.float(), embedding.float()
    with torch.inference_mode():
        return member.head(embedding.float())



def _embedding_signals(embedding: torch.Tensor, topk: torch.Tensor) -> torch.Tensor:
    """Per image: mean of the chosen neurons (``topk``: (n, k) indices), max and mean over all neurons -> (n, 3)."""
    picked = torch.gather(embedding, 1, topk)
    return torch.stack([picked.mean(1), embedding.max(1).values, embedding.mean(1)], dim=1)


def _rows(
    member: Member, jobs: Sequence[SuiteImage], probabilities: np.ndarray, emb: np.ndarray, conv: np.ndarray | None, distances: dict, class_of: dict[str, str]
) -> list[tuple]:
    """The member's rows for ``jobs`` that its run lacks. Array work is done per class, so the
    Python per row is one tuple: on a GPU the rows of one batch are built while the next runs,
    and must take less time than it."""
    todo = [i for i, job in enumerate(jobs) if (job.target_id, job.position) not in member.done]
    if not todo:
        return []
    jobs = [jobs[i] for i in todo]
    probabilities, emb = probabilities[todo], emb[todo]
    predicted = probabilities.argmax(1)
    true_prob, correct = np.empty(len(jobs), probabilities.dtype), np.empty(len(jobs), np.int64)
    image_classes = np.array([class_of[job.target_id] for job in jobs])
    for name in np.unique(image_classes):  # the outputs that count as the image's class
        rows, outputs = np.flatnonzero(image_classes == name), member.outputs[name]
        true_prob[rows] = probabilities[np.ix_(rows, outputs)].sum(axis=1)
        correct[rows] = np.isin(predicted[rows], outputs)
    names = member.spec.label_space.names
    conv_max, conv_mean = ([None] * len(jobs),) * 2 if conv is None else (conv[todo, 0].tolist(), conv[todo, 1].tolist())
    return list(zip(
        [member.run_id] * len(jobs), [job.target_id for job in jobs], [job.position for job in jobs], [names[k] for k in predicted.tolist()],
        true_prob.tolist(), probabilities.max(axis=1).tolist(), correct.tolist(), *emb.T.tolist(),
        [distances.get((job.target_id, job.position)) for job in jobs], conv_max, conv_mean,
    ))  # fmt: skip
