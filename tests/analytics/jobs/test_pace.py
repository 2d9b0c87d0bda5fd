"""The time a job has left (:mod:`analytics.jobs.pace`), on a fake clock: the estimate made before the
start is revised from the measured pace once steps finish."""

from __future__ import annotations

import pytest

from analytics.jobs import duration_text
from analytics.jobs.pace import Pace, paced


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_prior_counts_down_until_a_step_finishes():
    clock = FakeClock()
    pace = Pace(prior_s=78.0, clock=clock)
    assert pace.remaining_s(0, 16) == pytest.approx(78.0)
    clock.now += 30
    assert pace.remaining_s(0, 16) == pytest.approx(48.0)
    clock.now += 100
    assert pace.remaining_s(0, 16) == 0.0  # late, but never negative


def test_a_slow_job_revises_its_estimate_upwards_from_the_first_steps():
    """Issue 27.12: estimated 78 s, took 326 s. 16 steps of ~20 s each; the prior says ~5 s a step."""
    clock = FakeClock()
    pace = Pace(prior_s=78.0, clock=clock)
    clock.now += 20
    after_one = pace.remaining_s(1, 16)
    assert after_one == pytest.approx((78.0 / 16 + 20) / 2 * 15)  # halfway to the measured pace after one step
    assert after_one > 78.0
    clock.now += 60
    after_four = pace.remaining_s(4, 16)
    assert after_four == pytest.approx((78.0 / 16 + 80) / 5 * 12)
    assert after_four == pytest.approx(204.0, abs=1)  # the truth is 12 × 20 = 240 s: far nearer than 78 s
    clock.now += 19 * 12
    assert pace.remaining_s(16, 16) == 0.0


def test_without_a_prior_nothing_is_said_until_the_first_step():
    clock = FakeClock()
    pace = Pace(clock=clock)
    clock.now += 5
    assert pace.remaining_s(0, 10) is None
    clock.now += 5
    assert pace.remaining_s(2, 10) == pytest.approx(40.0)  # 5 s a step, 8 steps left
    assert pace.remaining_s(2, 0) is None  # an unknown total


def test_the_step_under_way_counts_at_most_one_step():
    clock = FakeClock()
    pace = Pace(clock=clock)
    clock.now += 10
    assert pace.remaining_s(1, 4) == pytest.approx(30.0)
    clock.now += 4
    assert pace.remaining_s(1, 4) == pytest.approx(26.0)  # 4 s into the second step
    clock.now += 60
    assert pace.remaining_s(1, 4) == pytest.approx(20.0)  # a slow step: the other two still count in full


def test_paced_progress_appends_the_time_left_to_each_message():
    clock = FakeClock()
    seen = []
    report = paced(lambda done, total, message: seen.append((done, total, message)), Pace(prior_s=300.0, clock=clock))
    report(0, 4, "random seed 0: suite")
    clock.now += 30
    report(1, 4, "random seed 0: run")
    assert seen == [(0, 4, "random seed 0: suite · about 5 min left"), (1, 4, "random seed 0: run · about 3 min left")]
    assert Pace(clock=clock).remaining_s(0, 4) is None
    paced(lambda *args: seen.append(args), Pace(clock=clock))(0, 4, "")
    assert seen[-1] == (0, 4, "")


@pytest.mark.parametrize(("seconds", "text"), [(0.2, "1 s"), (45, "45 s"), (240, "4 min"), (3 * 3600, "3.0 h")])
def test_duration_text(seconds, text):
    assert duration_text(seconds) == text
