"""Long work run as a background job: its own process, progress in the workspace, cancel and resume.

A job is a row of the ``jobs`` table (kind, parameters as JSON, status, done / total, a message,
the result as JSON, the worker's pid, the owner) and a detached worker process,
``python -m analytics jobs work ID --workspace W`` in a session of its own, whose output goes to
``<workspace>/jobs/<id>.log``. The worker calls the work of the job's kind (:data:`JOB_KINDS`) with
``progress`` = :meth:`JobProgress.update`, which writes the row and raises
:class:`analytics.exceptions.JobCancelled` once the row says ``cancelling``, so a cancel stops the
work at its next step. A worker that does not stop within :data:`CANCEL_GRACE_S` seconds gets
SIGTERM (its whole process group), then SIGKILL.

Statuses: ``queued`` → ``running`` → ``done`` | ``failed`` | ``cancelled`` (via ``cancelling``). A
``queued``/``running``/``cancelling`` row whose worker process is gone (killed, machine restarted)
is marked ``failed`` with the message :data:`INTERRUPTED` whenever jobs are read. Cancelled and
failed jobs can be resumed: a new worker runs the same kind with the same parameters, and the work
skips what is already done — suites are content-addressed (building one again loads it), runs
resume from their stored batches, coverage and matrices are cached, zoo heads already registered
are kept (:mod:`analytics.suites`, :mod:`analytics.inference`, :mod:`analytics.comparison`,
:mod:`analytics.zoo`).

Team mode: a job records who started it (``owner``). Starting or resuming a job needs its kind's
permission (:attr:`JobKind.permission`) for the workspace's actor; cancelling or resuming needs the
actor to be the job's owner or a lead (the ``manage_jobs`` permission: admin, analyst), which
:func:`may_control` answers for the pages; with no actor (solo mode, the CLI) everything is allowed.
The worker acts as the owner, so the library's own checks apply there too.

Modules: :mod:`.kinds` (the registry), :mod:`.records` (the table read back), :mod:`.progress`,
:mod:`.process` (start, cancel, resume, the worker), :mod:`.pace` (the time a job has left, revised from
its measured pace), :mod:`.naming` (what a person reads for a job).
"""

from .naming import job_label
from .pace import duration_text
from .process import POLL_S, cancel, may_control, resume, start, work
from .records import INTERRUPTED, Job, get_job, latest_job, list_jobs

__all__ = [
    "INTERRUPTED",
    "POLL_S",
    "Job",
    "cancel",
    "duration_text",
    "get_job",
    "job_label",
    "latest_job",
    "list_jobs",
    "may_control",
    "resume",
    "start",
    "work",
]
