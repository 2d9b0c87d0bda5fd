"""The one progress callback of the library: ``progress(done, total, message)``.

Every call that runs for long takes ``progress: Progress | None = None`` and calls it as its work
advances: ``done`` of ``total`` items (``total`` 0 while the amount is not known yet) and, where it
has one, what it is doing (``message``: a step such as ``"runs"``, or a sentence for a job's row).
Calls with nothing to say pass two arguments, so a callback gives ``message`` a default. A job's
:meth:`analytics.jobs.JobProgress.update` and the CLI's progress bars are such callbacks.
"""

from __future__ import annotations

from typing import Protocol


class Progress(Protocol):
    """``progress(done, total, message="")``: ``done`` of ``total`` items, and what is being done."""

    def __call__(self, done: int, total: int, message: str = "", /) -> None: ...


def with_message(progress: Progress | None, message: str) -> Progress | None:
    """``progress`` with ``message`` in every call (``None`` stays ``None``): how a call made of steps
    names the step whose progress a call it makes reports."""
    if progress is None:
        return None

    def report(done: int, total: int, _message: str = "", /) -> None:
        progress(done, total, message)

    return report
