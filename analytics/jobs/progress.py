"""What a running job reports its progress to: its row in the ``jobs`` table, and the cancel back."""

from __future__ import annotations

from analytics.exceptions import JobCancelled
from analytics.workspace import Workspace, now


class JobProgress:
    """What a job kind reports its progress to; the cancel request comes back through it.

    The worker hands the kind's work :meth:`update` as its ``progress(done, total, message)``.

    Parameters
    ----------
    workspace : Workspace
    job_id : str
    """

    def __init__(self, workspace: Workspace, job_id: str) -> None:
        self.workspace, self.job_id = workspace, job_id

    def update(self, done: int, total: int, message: str = "") -> None:
        """Record ``done`` of ``total`` steps (and what is being done); stop if a cancel was asked.

        Raises
        ------
        JobCancelled
            The job's row says ``cancelling``.
        """
        with self.workspace.transaction() as conn:
            conn.execute(
                "UPDATE jobs SET done = ?, total = ?, message = ?, updated = ? WHERE id = ?",
                (int(done), int(total), str(message), now(), self.job_id),
            )
        self.check()

    def check(self) -> None:
        """Raise :class:`JobCancelled` when the job was asked to stop."""
        row = self.workspace.query_one("SELECT status FROM jobs WHERE id = ?", (self.job_id,))
        if row is None or row["status"] == "cancelling":
            raise JobCancelled(f"job {self.job_id} was cancelled")
