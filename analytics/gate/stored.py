"""Checks kept in the workspace: the release gate on a policy given as text, as the Gate page runs it
(the background job of kind ``gate``), its files in ``<workspace>/gate/<name>/`` and read back.

:func:`check_text` is :func:`analytics.gate.check` with the policy's text and its file name instead of
a :class:`~analytics.gate.Policy` (a job's parameters are plain JSON) and an output folder of its own
inside the workspace, so the files a page offers are those ``python -m analytics check --policy
NAME --out <that folder>`` writes for the same inputs, byte for byte but for the check's wall time
and timestamp (JUnit's ``time`` and ``timestamp``, the report's "generated" line).
"""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Mapping
from pathlib import Path

from analytics._progress import Progress
from analytics.exceptions import InvalidInputError, NotFoundError
from analytics.team import require_permission
from analytics.workspace import Workspace

from .check import FILES, CheckResult, check
from .policy import parse_policy

#: The folder of the workspace that holds the checks run by :func:`check_text`, one folder each.
CHECKS_FOLDER = "gate"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


def new_check_name() -> str:
    """A new check's folder name: when it started (UTC) and six random hex digits, e.g. ``20250301-142500-3fa2c1``."""
    return f"{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}-{secrets.token_hex(3)}"


def check_folder(workspace: Workspace, name: str) -> Path:
    """The folder of the check ``name`` (:func:`new_check_name`): ``<workspace>/gate/<name>``.

    Raises
    ------
    InvalidInputError
        ``name`` is not a plain folder name (letters, digits, ``_ . -``; at most 64 characters, no leading dot).
    """
    if not _NAME.fullmatch(name):
        raise InvalidInputError(f"check name {name!r}: use letters, digits, '_', '.' and '-' (at most 64, not starting with a dot), e.g. {new_check_name()}")
    return workspace.root / CHECKS_FOLDER / name


def check_text(
    workspace: Workspace,
    policy_text: str,
    candidate: str,
    *,
    policy_name: str = "policy.toml",
    name: str | None = None,
    baseline: str | None = None,
    suite_id: str | None = None,
    report: bool = True,
    device: str | None = None,
    batch_size: int = 32,
    progress: Progress | None = None,
) -> CheckResult:
    """:func:`analytics.gate.check` of the policy ``policy_text``, its files written to :func:`check_folder`.

    Parameters
    ----------
    workspace : Workspace
        Its actor (team mode) needs ``run_models``.
    policy_text : str
        The policy file's text (:attr:`analytics.gate.Policy.text`).
    candidate : str
        A registered model.
    policy_name : str, default='policy.toml'
        The policy's file name, as the messages, the summary and the JUnit properties name it (the
        ``--policy`` argument of the same check on the command line).
    name : str, optional
        The check's folder name (:func:`new_check_name`, the default): the same name writes the same folder again.
    baseline, suite_id, report, device, batch_size, progress
        As :func:`analytics.gate.check`.

    Returns
    -------
    CheckResult

    Raises
    ------
    PermissionDeniedError
        The workspace's actor may not run models.
    InvalidInputError, NotFoundError
        A bad policy or input, before anything is written.
    """
    require_permission(workspace, "run_models")
    policy = parse_policy(policy_text, policy_name)
    out = check_folder(workspace, name or new_check_name())
    return check(
        workspace, policy, candidate, out=out, baseline=baseline, suite_id=suite_id, report=report, device=device, batch_size=batch_size, progress=progress
    )


def check_files(workspace: Workspace, files: Mapping[str, str]) -> dict[str, bytes]:
    """The files of a check :func:`check_text` kept (``CheckResult.files``, as a ``gate`` job's result
    records them), read back by key (``junit``, ``summary``, ``report``), for downloads.

    Raises
    ------
    InvalidInputError
        A key is not one of :data:`analytics.gate.FILES`, or a path lies outside the workspace's
        checks folder (``<workspace>/gate/``).
    NotFoundError
        A file is gone (its check's folder was removed).
    """
    root = (workspace.root / CHECKS_FOLDER).resolve()
    read = {}
    for key, path in files.items():
        if key not in FILES:
            raise InvalidInputError(f"check file {key!r} is unknown; a check writes {', '.join(FILES)}")
        resolved = Path(path).resolve()
        if not resolved.is_relative_to(root) or resolved.name != FILES[key]:
            raise InvalidInputError(f"{path}: not a file of a check kept in {root}; run the check from the Gate page")
        try:
            read[key] = resolved.read_bytes()
        except FileNotFoundError:
            raise NotFoundError(f"{path} is gone (its check's folder was removed); run the check again") from None
    return read
