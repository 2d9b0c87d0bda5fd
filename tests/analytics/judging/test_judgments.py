import json
import multiprocessing

import pytest

from analytics.cli import main
from analytics.exceptions import InvalidInputError, NotFoundError
from analytics.judging import Judgment, add_judgment, judgment_history, latest_judgments, latest_judgments_by_suite, unjudged_models
from analytics.judging.judgments import COLUMNS
from analytics.workspace import Workspace
from tests.fixtures.judgments import MODEL_NAMES, insert_suites, reregister


def test_add_judgment_returns_the_stored_row(models_workspace):
    judgment = add_judgment(
        models_workspace, annotator="  ana ", model="model0", label="borderline", confidence=0.7, note="edges"
    )
    assert isinstance(judgment, Judgment)
    assert judgment.annotator == "ana"
    stored = judgment_history(models_workspace)
    assert list(stored.columns) == COLUMNS
    assert stored.to_dict("records") == [judgment.to_dict()]


def test_a_changed_judgment_is_a_new_row_and_the_latest_counts(models_workspace):
    add_judgment(models_workspace, annotator="ana", model="model0", label="invariant")
    add_judgment(models_workspace, annotator="bo", model="model0", label="variant")
    changed = add_judgment(models_workspace, annotator="ana", model="model0", label="variant")
    add_judgment(models_workspace, annotator="ana", model="model1", label="borderline")

    assert len(judgment_history(models_workspace)) == 4
    assert judgment_history(models_workspace, model="model0")["label"].tolist() == ["invariant", "variant", "variant"]
    latest = latest_judgments(models_workspace)
    assert latest[["model", "annotator", "label"]].values.tolist() == [
        ["model0", "ana", "variant"],
        ["model0", "bo", "variant"],
        ["model1", "ana", "borderline"],
    ]
    assert changed.id in set(latest["id"])


def test_empty_tables_keep_their_columns(models_workspace):
    assert list(latest_judgments(models_workspace).columns) == COLUMNS
    assert latest_judgments(models_workspace).empty


def test_unjudged_models_is_the_queue_of_one_annotator_on_one_suite(models_workspace):
    insert_suites(models_workspace, ["suite-a", "suite-b"])
    add_judgment(models_workspace, annotator="ana", model="model2", label="invariant", suite_id="suite-a")
    add_judgment(models_workspace, annotator="bo", model="model3", label="invariant", suite_id="suite-a")
    assert unjudged_models(models_workspace, "ana", "suite-a") == [m for m in MODEL_NAMES if m != "model2"]
    assert unjudged_models(models_workspace, "bo", "suite-a", ["model3", "model1", "model2"]) == ["model1", "model2"]
    # judged on suite A, still to judge on suite B (the old queue ignored the suite)
    assert unjudged_models(models_workspace, "ana", "suite-b") == MODEL_NAMES


def test_the_latest_judgment_counts_per_suite(models_workspace):
    insert_suites(models_workspace, ["suite-a", "suite-b"])
    add_judgment(models_workspace, annotator="ana", model="model0", label="invariant", suite_id="suite-a")
    add_judgment(models_workspace, annotator="ana", model="model0", label="variant", suite_id="suite-b")
    assert latest_judgments(models_workspace, "suite-a")["label"].tolist() == ["invariant"]
    assert latest_judgments(models_workspace, "suite-b")["label"].tolist() == ["variant"]
    assert latest_judgments(models_workspace)["label"].tolist() == ["variant"]  # over all suites: the most recent
    by_suite = latest_judgments_by_suite(models_workspace)
    assert by_suite[["suite_id", "label"]].values.tolist() == [["suite-a", "invariant"], ["suite-b", "variant"]]


def test_judgments_of_replaced_weights_are_stale(models_workspace):
    insert_suites(models_workspace, ["suite-a"])
    old = add_judgment(models_workspace, annotator="ana", model="model0", label="variant", suite_id="suite-a")
    add_judgment(models_workspace, annotator="ana", model="model1", label="variant", suite_id="suite-a")
    reregister(models_workspace, "model0", "other weights")
    assert old.model_key and judgment_history(models_workspace)["model_key"].tolist()[0] == old.model_key
    assert latest_judgments(models_workspace, "suite-a")["model"].tolist() == ["model1"]
    assert "model0" in unjudged_models(models_workspace, "ana", "suite-a")  # back in the queue
    new = add_judgment(models_workspace, annotator="ana", model="model0", label="invariant", suite_id="suite-a")
    assert new.model_key != old.model_key
    assert latest_judgments(models_workspace, "suite-a").set_index("model").loc["model0", "label"] == "invariant"


def test_judgments_stored_before_model_keys_follow_the_registration_time(models_workspace):
    insert_suites(models_workspace, ["suite-a"])
    add_judgment(models_workspace, annotator="ana", model="model0", label="variant", suite_id="suite-a")
    add_judgment(models_workspace, annotator="ana", model="model1", label="variant", suite_id="suite-a")
    with models_workspace.transaction() as conn:  # as migrated from a workspace without the column
        conn.execute("UPDATE judgments SET model_key = '', created = '2000-01-01T00:00:00+00:00'")
        conn.execute("UPDATE models SET added = '1999-01-01T00:00:00+00:00' WHERE name = 'model1'")
    # model0 was registered after the judgment (replaced since): stale; model1 before it: current
    assert latest_judgments(models_workspace, "suite-a")["model"].tolist() == ["model1"]


def test_a_judgment_of_a_run_takes_the_runs_suite(models_workspace):
    insert_suites(models_workspace, ["suite-a", "suite-b"])
    with models_workspace.transaction() as conn:
        conn.execute("INSERT INTO runs(id, model, suite_id, status, created) VALUES ('run-a', 'model0', 'suite-a', 'done', '2000')")
    judgment = add_judgment(models_workspace, annotator="ana", model="model0", label="variant", run_id="run-a")
    assert judgment.suite_id == "suite-a"
    with pytest.raises(InvalidInputError, match="is over suite 'suite-a', not 'suite-b'"):
        add_judgment(models_workspace, annotator="ana", model="model0", label="variant", run_id="run-a", suite_id="suite-b")
    with pytest.raises(InvalidInputError, match="is a run of model 'model0', not 'model1'"):
        add_judgment(models_workspace, annotator="ana", model="model1", label="variant", run_id="run-a")


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"annotator": "   "}, "annotator must be a non-empty name"),
        ({"label": "invariantish"}, "label must be one of 'invariant', 'borderline', 'variant'"),
        ({"confidence": 1.5}, r"confidence must be in \[0, 1\]; got 1.5"),
        ({"confidence": -0.1}, r"confidence must be in \[0, 1\]"),
    ],
)
def test_bad_input_raises_and_stores_nothing(models_workspace, kwargs, match):
    arguments = {"annotator": "ana", "model": "model0", "label": "variant", **kwargs}
    with pytest.raises(InvalidInputError, match=match):
        add_judgment(models_workspace, **arguments)
    assert judgment_history(models_workspace).empty


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"model": "nosuchmodel"}, "model 'nosuchmodel' is not in the workspace"),
        ({"run_id": "run-x"}, "run 'run-x' is not in the workspace"),
        ({"suite_id": "suite-x"}, "suite 'suite-x' is not in the workspace"),
    ],
)
def test_unknown_records_are_named(models_workspace, kwargs, match):
    arguments = {"annotator": "ana", "model": "model0", "label": "variant", **kwargs}
    with pytest.raises(NotFoundError, match=match):
        add_judgment(models_workspace, **arguments)
    assert judgment_history(models_workspace).empty


def _judge_many(root: str, annotator: str, count: int, start) -> None:
    """Writer process: ``count`` judgments, one transaction each, cycling through models and labels."""
    workspace = Workspace(root, create=False)
    start.wait()  # both writers begin together, so their transactions really compete
    labels = ("invariant", "borderline", "variant")
    for i in range(count):
        add_judgment(workspace, annotator=annotator, model=MODEL_NAMES[i % len(MODEL_NAMES)], label=labels[i % 3], note=str(i))


def test_two_concurrent_writers_lose_nothing(models_workspace):
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(2)
    writers = [
        context.Process(target=_judge_many, args=(str(models_workspace.root), name, 500, start)) for name in ("ana", "bo")
    ]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(timeout=300)
    assert [writer.exitcode for writer in writers] == [0, 0]

    history = judgment_history(models_workspace)
    assert len(history) == 1000
    assert history.groupby("annotator")["note"].apply(lambda notes: sorted(map(int, notes))).to_dict() == {
        "ana": list(range(500)),
        "bo": list(range(500)),
    }
    assert len(latest_judgments(models_workspace)) == 2 * len(MODEL_NAMES)
    # the writes interleaved (not one writer's block after the other's), so they did compete
    switches = (history["annotator"] != history["annotator"].shift()).sum() - 1
    assert switches > 1


def test_cli_judge_stores_and_prints_one_judgment(models_workspace, capsys):
    argv = ["judge", "--workspace", str(models_workspace.root), "--annotator", "ana", "--model", "model1", "--label", "variant"]
    status = main([*argv, "--note", "sky helps", "--confidence", "0.8", "--json"])
    assert status == 0
    printed = json.loads(capsys.readouterr().out)
    expected = {"annotator": "ana", "model": "model1", "label": "variant", "note": "sky helps", "confidence": 0.8}
    assert {key: printed[key] for key in expected} == expected
    assert judgment_history(models_workspace).loc[0, "id"] == printed["id"]


def test_cli_judge_unknown_model_is_a_one_line_error(models_workspace, capsys):
    status = main(["judge", "--workspace", str(models_workspace.root), "--annotator", "ana", "--model", "ghost", "--label", "variant"])
    assert status == 2
    assert "model 'ghost' is not in the workspace" in capsys.readouterr().err
    assert judgment_history(models_workspace).empty
