"""How long a running job has left: the estimate made before it started, revised from the pace it
measures as its steps finish (issue 27.12: a comparison estimated at 78 s took 326 s, and the page
kept the first guess).

The seconds per step are a running mean in which the prior estimate counts as
:data:`PRIOR_STEPS` finished steps: ``(prior_per_step * PRIOR_STEPS + elapsed) / (PRIOR_STEPS + done)``,
where ``elapsed`` is the time from the start to the last finished step. So the first finished step
already moves the estimate halfway to the measured pace, and after a few steps the prior hardly
counts. Without a prior, nothing is said until the first step has finished. The step under way is
counted as done for the time since it began, but never for more than one step.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from analytics._progress import Progress

PRIOR_STEPS = 1.0  # how many finished steps the estimate made before the start is worth


class Pace:
    """The remaining time of a job of ``total`` steps, revised from its measured pace.

    Parameters
    ----------
    prior_s : float or None, default=None
        The whole job's estimate before it started (seconds); None = no estimate.
    clock : callable () -> float, default=time.monotonic
        Seconds; a test passes a fake clock.

    Examples
    --------
    >>> now = [0.0]
    >>> pace = Pace(prior_s=10.0, clock=lambda: now[0])
    >>> now[0] = 20.0
    >>> pace.remaining_s(1, 10)  # 1 of 10 steps in 20 s: (1 + 20) / 2 = 10.5 s a step
    94.5
    """

    def __init__(self, *, prior_s: float | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.prior_s, self.clock = prior_s, clock
        self.started = self.step_started = clock()
        self.done = 0

    def remaining_s(self, done: int, total: int) -> float | None:
        """Seconds left after ``done`` of ``total`` steps (also records when ``done`` went up);
        None when nothing can be said yet (no prior and no step finished, or an unknown total)."""
        now = self.clock()
        if done > self.done:
            self.done, self.step_started = done, now
        if total <= 0:
            return None
        left = max(0, total - done)
        if done == 0:
            return None if self.prior_s is None else max(0.0, self.prior_s - (now - self.started))
        elapsed = self.step_started - self.started
        per_step = elapsed / done if self.prior_s is None else (self.prior_s / total * PRIOR_STEPS + elapsed) / (PRIOR_STEPS + done)
        under_way = min(now - self.step_started, per_step) if left else 0.0
        return max(0.0, per_step * left - under_way)


def duration_text(seconds: float) -> str:
    """``'45 s'`` under 90 seconds, ``'4 min'`` under 90 minutes, else ``'2.5 h'``."""
    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    return f"{seconds / 60:.0f} min" if seconds < 90 * 60 else f"{seconds / 3600:.1f} h"


def paced(progress: Progress, pace: Pace) -> Progress:
    """``progress(done, total, message)`` whose message ends with the time left at the measured pace,
    e.g. ``'random seed 0: run · about 4 min left'``."""

    def report(done: int, total: int, message: str = "") -> None:
        left = pace.remaining_s(done, total)
        suffix = "" if left is None else f"about {duration_text(left)} left"
        progress(done, total, " · ".join(part for part in (message, suffix) if part))

    return report
