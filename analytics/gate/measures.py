"""What the gate measures of one model on one suite, each read from the stage that already computes it.

A :class:`Measures` is lazy: a value is computed (or read from the workspace's caches) the first
time a rule asks for it, so a policy without a Backgrounds Challenge rule never renders a variant.
Every source keys its results by content (the run by the model's weights and the suite, the
challenge and the scenarios by the model key, the images and the seed), so a second check of the
same model costs nothing and a new checkpoint costs its own forward passes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import pandas as pd

from analytics.assessor import VERDICT_PRESET, features_table, held_out_verdicts, human_labels
from analytics.exceptions import InvalidInputError
from analytics.findings import FailureTable, background_keywords, composite_table, failure_table
from analytics.robustness import DEFAULT_SCENARIO_SET, ORIGINAL, SCENARIO_SETS, evaluate_scenarios, robustness_scores
from analytics.robustness.bgchallenge import ChallengeData, evaluate_variants, gaps, variant_accuracy, workspace_data
from analytics.runs import image_table, load_run, run_row, target_table
from analytics.variance import MatrixSettings
from analytics.workspace import Workspace
from analytics.zoo import assessment_input, construction_labels


@dataclass(frozen=True)
class Verdict:
    """The assessor's verdict on one model: its label, P(variant), and how many labelled models it learned from."""

    label: str
    p_variant: float
    trained_on: int


class Measures:
    """One model's run over a suite and the neighbouring benchmarks, computed on first use.

    Parameters
    ----------
    workspace : Workspace
    model, run_id : str
        The model and its finished run over the suite.
    settings : dict
        :attr:`analytics.gate.policy.Policy.settings`.
    device : str, optional
    batch_size : int
    challenge_data : callable returning ChallengeData
        Shared by the models of one check (the targets are read once).
    """

    def __init__(
        self, workspace: Workspace, model: str, run_id: str, settings: dict[str, Any], *, device: str | None, batch_size: int,
        challenge_data: Callable[[], ChallengeData],
    ) -> None:  # fmt: skip
        self.workspace, self.model, self.run_id, self.settings = workspace, model, run_id, settings
        self.device, self.batch_size, self._challenge_data = device, batch_size, challenge_data
        self.suite_id = str(run_row(workspace, run_id)["suite_id"])

    # -- the run ---------------------------------------------------------------------------------
    @cached_property
    def targets(self) -> pd.DataFrame:
        """:func:`analytics.runs.target_table` of the run, indexed by target id."""
        return target_table(load_run(self.workspace, self.run_id)).set_index("target_id")

    @cached_property
    def composites(self) -> pd.DataFrame:
        """Per composite (position >= 1): ``correct``, indexed by (target_id, position)."""
        images = image_table(self.workspace, self.run_id)
        return images[images["position"] > 0].set_index(["target_id", "position"])

    @property
    def worst_case_accuracy(self) -> float:
        return float(self.targets["worst_case_correct"].mean())

    @property
    def original_accuracy(self) -> float:
        return float(self.targets["original_correct"].mean())

    @property
    def composite_accuracy(self) -> float:
        """Accuracy over the composites alone (the originals left out)."""
        return float(self.composites["correct"].mean())

    @property
    def accuracy_drop(self) -> float:
        """Original accuracy minus composite accuracy: what the suite's backgrounds cost."""
        return self.original_accuracy - self.composite_accuracy

    def failures(self, min_count: int) -> FailureTable:
        """:func:`analytics.findings.failure_table` of the run (Wilson intervals per keyword)."""
        return failure_table(self.workspace, self.run_id, min_count=min_count)

    @cached_property
    def keyword_source(self) -> str:
        """Where the suite's background keywords come from: ``'table NAME'``, or ``'suite items'`` when the
        workspace has no background keyword table (:func:`analytics.findings.background_keywords`)."""
        return background_keywords(self.workspace, self.suite_id)[0]

    @cached_property
    def keyword_composites(self) -> pd.DataFrame:
        """:func:`analytics.findings.composite_table` with one row per (composite, keyword)."""
        return composite_table(self.workspace, self.run_id).explode("keywords").dropna(subset=["keywords"])

    # -- the Backgrounds Challenge -----------------------------------------------------------------
    @cached_property
    def challenge(self) -> pd.DataFrame:
        """Predictions on the eight variants (:func:`analytics.robustness.bgchallenge.evaluate_variants`, cached per chunk)."""
        return evaluate_variants(
            self.workspace, self.model, self._challenge_data(), seed=self.settings["challenge_seed"], blend=self.settings["challenge_blend"],
            batch_size=self.batch_size, device=self.device,
        )  # fmt: skip

    @property
    def bg_gap(self) -> float:
        return gaps(self.challenge)["bg_gap"]

    @property
    def mixed_rand_accuracy(self) -> float:
        return float(variant_accuracy(self.challenge).set_index("variant").at["mixed_rand", "accuracy"])

    @property
    def mixed_rand(self) -> pd.Series:
        """Correct or not per Mixed-Rand image, indexed by (source_id, background_id) (the same pairs for every model of a seed)."""
        table = self.challenge[self.challenge["variant"] == "mixed_rand"]
        return table.set_index(["source_id", "background_id"])["correct"]

    # -- XIMAGENET-12 scenarios --------------------------------------------------------------------
    @cached_property
    def scenario_predictions(self) -> pd.DataFrame:
        """Per-image predictions on the originals and every scenario (:func:`analytics.robustness.evaluate_scenarios`, cached per scenario)."""
        return evaluate_scenarios(self.workspace, [self.model], seed=self.settings["scenario_seed"], batch_size=self.batch_size, device=self.device)

    @cached_property
    def robustness_score(self) -> float:
        """The XIMAGENET-12 robustness score S in the policy's form (``paper``: §4, ``table3``: Table 3)."""
        return float(robustness_scores(self.scenario_predictions).at[self.model, f"score_{self.settings['robustness_form']}"])

    @cached_property
    def scenario_correct(self) -> pd.Series:
        """Correct or not per image the robustness score reads (the originals and the scored scenarios'
        images), indexed by (scenario, target): the same images for every model of a scenario seed."""
        predictions = self.scenario_predictions
        scored = predictions[predictions["scenario"].isin([ORIGINAL, *SCENARIO_SETS[DEFAULT_SCENARIO_SET]])]
        return scored.set_index(["scenario", "target"])["correct"].astype(bool)

    @property
    def scenario_accuracy(self) -> float:
        """Accuracy over the images the robustness score reads (:attr:`scenario_correct`)."""
        return float(self.scenario_correct.mean())

    # -- the assessor ------------------------------------------------------------------------------
    @cached_property
    def verdict(self) -> Verdict:
        return assessor_verdict(
            self.workspace, self.suite_id, self.model, self.run_id, labels=self.settings["assessor_labels"], device=self.device, batch_size=self.batch_size
        )


def assessor_verdict(
    workspace: Workspace, suite_id: str, model: str, run_id: str, *, labels: str = "human", device: str | None = None, batch_size: int = 32
) -> Verdict:
    """The assessor's verdict on ``model``, trained on the other labelled models' runs over the suite.

    The model itself is left out of training (its own label would make the verdict in-sample): the
    assessor of :func:`analytics.assessor.held_out_verdicts`, as the Repository page's.
    Labelled models without a finished run on the suite are run first (:func:`analytics.zoo.assessment_input`).

    Parameters
    ----------
    labels : {'human', 'construction'}
        The annotators' labels on the suite (:func:`analytics.assessor.human_labels`), or the zoo's
        construction labels (:func:`analytics.zoo.construction_labels`).

    Raises
    ------
    InvalidInputError
        Too few labelled models (:func:`analytics.assessor.fit_assessor` says how many).
    """
    known = verdict_training_labels(workspace, suite_id, model, labels=labels)
    training = assessment_input(workspace, list(known.index), suite_id=suite_id, preset=VERDICT_PRESET, device=device, batch_size=batch_size).features
    candidate = features_table(workspace, [run_id], settings=MatrixSettings.of(VERDICT_PRESET))
    row = held_out_verdicts(training, known.loc[training.index], candidate).iloc[0]
    return Verdict(label=str(row["label"]), p_variant=float(row["p_variant"]), trained_on=int(row["trained_on"]))


def verdict_training_labels(workspace: Workspace, suite_id: str, model: str, *, labels: str = "human") -> pd.Series:
    """The labels the assessor learns from for a verdict on ``model``: every labelled model but ``model`` itself.

    Raises
    ------
    InvalidInputError
        No such label (before anything is run, so a check stops with nothing written).
    """
    known = human_labels(workspace, suite_id) if labels == "human" else construction_labels(workspace)
    known = known[known.index != model]
    if known.empty:
        raise InvalidInputError(
            f"the assessor rules need {labels} labels of models other than {model!r}; found none: "
            + ("judge models on suite " + repr(suite_id) if labels == "human" else "build a zoo with `python -m analytics zoo`")
            + ", set assessor_labels in [settings], or remove assessor_* from [rules]"
        )
    return known


def challenge_loader(workspace: Workspace) -> Callable[[], ChallengeData]:
    """The workspace's targets as challenge data, read on first call and then kept."""
    return functools.cache(functools.partial(workspace_data, workspace))
