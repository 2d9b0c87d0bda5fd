"""Exceptions raised by Backdrop.

Pages and the CLI catch :class:`BackdropError` only; everything else is a bug and propagates.
"""

from __future__ import annotations


class BackdropError(Exception):
    """Base class of every error a user can cause and fix."""


class InvalidInputError(BackdropError, ValueError):
    """A file, array or parameter that breaks a documented rule.

    The message names the offending file or parameter, the rule, the value found and the fix.
    """


class NotFoundError(BackdropError, KeyError):
    """A named record (model, suite, run, target ...) does not exist in the workspace."""

    def __str__(self) -> str:  # KeyError quotes its message; show it plain
        return str(self.args[0]) if self.args else ""


class WorkspaceError(BackdropError):
    """The workspace folder or its database cannot be used as it is."""


class SignInError(BackdropError):
    """A sign-in was refused. One message for every cause, so it never tells which part was wrong."""


class PermissionDeniedError(BackdropError, PermissionError):
    """The signed-in account's role does not allow the action; the message names the roles that do."""


class JobCancelled(BackdropError):
    """Raised inside a background job's work once the job was asked to stop (:mod:`analytics.jobs`)."""


class MissingDependencyError(BackdropError, ImportError):
    """An optional library a feature needs is not installed; the message names it and the command
    that installs it (:func:`analytics._optional.import_optional`)."""
