"""Roles are enforced in the library: every call that changes the workspace checks the actor first.

Each guarded call is tried as every role and as no actor (solo mode / CLI). A role without the
permission is refused with :class:`PermissionDeniedError` naming the roles that have it, and the
workspace is unchanged; no actor and the allowed roles get past the check (the call then succeeds,
or fails on its own later validation, never on the permission).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from analytics.data import custom_label_space, list_backgrounds, list_class_mappings, set_class_mapping, store_backgrounds, store_targets
from analytics.data.datasets import add_classes
from analytics.exceptions import InvalidInputError, NotFoundError, PermissionDeniedError
from analytics.keywords import build_keyword_tables, list_keyword_tables, save_keyword_table
from analytics.keywords.store import delete_keyword_table
from analytics.models import get_model_spec, list_models, register_efficientnet_lite, register_head, register_torchscript, register_torchvision
from analytics.models.registry import register_model, remove_model
from analytics.ontology import build_ontology, list_ontologies, save_ontology
from analytics.runs import list_runs, start_runs
from analytics.suites import load_suite
from analytics.suites.store import save_suite
from analytics.team import User, allowed, roles_with
from analytics.team.roles import ROLES
from analytics.workspace import Workspace
from analytics.zoo import build_zoo
from tests.fixtures.keywords import TINY_LABELS, TINY_TRANSACTIONS, make_keyword_table
from tests.fixtures.models import SIZE, TINY_SUITE
from tests.fixtures.workspace import make_background

Call = Callable[[Workspace, dict], object]

#: name -> (permission it needs, the call on ``tiny_model_workspace`` given the tiny model files).
GUARDED: dict[str, tuple[str, Call]] = {
    "register_model": ("register_models", lambda ws, files: register_model(ws, get_model_spec(ws, "tiny"))),
    "register_torchscript": (
        "register_models",
        lambda ws, files: register_torchscript(
            ws, "tiny-copy", checkpoint=files["tiny"], label_space=custom_label_space(files["labels"]), input_size=SIZE, replace=True
        ),
    ),
    "register_torchvision": (
        "register_models",
        lambda ws, files: register_torchvision(ws, "tv", arch="no-such-arch", checkpoint=files["tiny"], label_space=custom_label_space(files["labels"])),
    ),
    "register_efficientnet_lite": ("register_models", lambda ws, files: register_efficientnet_lite(ws, 9)),
    "register_head": (
        "register_models",
        lambda ws, files: register_head(ws, "h", backbone="no-such-model", weight=np.zeros((2, 8)), bias=np.zeros(2), class_names=["a", "b"]),
    ),
    "remove_model": ("register_models", lambda ws, files: remove_model(ws, "bg-only")),
    "add_classes": ("import_data", lambda ws, files: add_classes(ws, {"extra": []})),
    "store_targets": ("import_data", lambda ws, files: store_targets(ws, [])),
    "store_backgrounds": ("import_data", lambda ws, files: store_backgrounds(ws, [make_background(99, np.random.default_rng(1))])),
    "set_class_mapping": ("import_data", lambda ws, files: set_class_mapping(ws, "disc", imagenet=[1])),
    "save_keyword_table": (
        "build_suites",
        lambda ws, files: save_keyword_table(ws, make_keyword_table(TINY_TRANSACTIONS, TINY_LABELS), name="kw", replace=True),
    ),
    "build_keyword_tables": ("build_suites", lambda ws, files: build_keyword_tables(ws, None, item_kinds=())),
    "delete_keyword_table": ("build_suites", lambda ws, files: delete_keyword_table(ws, "no-such-table")),
    "save_ontology": ("build_suites", lambda ws, files: save_ontology(ws, build_ontology(make_keyword_table(TINY_TRANSACTIONS, TINY_LABELS)))),
    "save_suite": ("build_suites", lambda ws, files: save_suite(ws, load_suite(ws, TINY_SUITE))),
    "start_runs": ("run_models", lambda ws, files: start_runs(ws, ["no-such-model"], TINY_SUITE)),
    "build_zoo": ("run_models", lambda ws, files: build_zoo(ws, strengths=[2.0])),
}


def snapshot(workspace: Workspace) -> tuple:
    """What the guarded calls could change."""
    return (
        [spec.name for spec in list_models(workspace)],
        list_class_mappings(workspace),
        len(list_backgrounds(workspace)),
        list_keyword_tables(workspace)["name"].tolist(),
        len(list_ontologies(workspace)),
        len(list_runs(workspace)),
    )


def user(role: str) -> User:
    return User(f"someone-{role}", role, False, "", "")


@pytest.mark.parametrize("name", list(GUARDED))
def test_each_write_call_checks_the_role(name, tiny_model_workspace, tiny_model_files):
    permission, call = GUARDED[name]
    for role in ROLES:
        acting = tiny_model_workspace.acting_as(user(role))
        if allowed(role, permission):
            continue
        before = snapshot(tiny_model_workspace)
        with pytest.raises(PermissionDeniedError) as refused:
            call(acting, tiny_model_files)
        message = str(refused.value)
        assert f"({role})" in message and f"needs the role {' or '.join(roles_with(permission))}" in message
        assert snapshot(tiny_model_workspace) == before
    for actor in [None, *(user(role) for role in ROLES if allowed(role, permission))]:
        try:
            call(tiny_model_workspace.acting_as(actor), tiny_model_files)
        except (InvalidInputError, NotFoundError) as err:  # the call's own validation, after the role check
            assert not isinstance(err, PermissionDeniedError)


def test_every_role_lacks_or_has_each_permission_as_documented():
    """Annotators and viewers change nothing but judgments: every guarded call refuses them."""
    for permission, _ in GUARDED.values():
        assert not allowed("annotator", permission) and not allowed("viewer", permission)
        assert allowed("admin", permission)


def test_allowed_roles_really_write(tiny_model_workspace, tiny_model_files):
    admin, analyst = tiny_model_workspace.acting_as(user("admin")), tiny_model_workspace.acting_as(user("analyst"))
    GUARDED["register_torchscript"][1](admin, tiny_model_files)
    GUARDED["store_backgrounds"][1](admin, tiny_model_files)
    GUARDED["save_keyword_table"][1](analyst, tiny_model_files)
    assert "tiny-copy" in [spec.name for spec in list_models(tiny_model_workspace)]
    assert "bg99" in list_backgrounds(tiny_model_workspace)["id"].tolist()
    assert "kw" in list_keyword_tables(tiny_model_workspace)["name"].tolist()
    with pytest.raises(PermissionDeniedError, match="admin"):
        GUARDED["register_torchscript"][1](analyst, tiny_model_files)  # TorchScript is code: admins only
