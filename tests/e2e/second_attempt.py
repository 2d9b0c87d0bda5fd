"""A check that the e2e tests survive their rerun: ``pytest -p tests.e2e.second_attempt tests/e2e/...``
fails every test's first attempt once its body has passed, so that pytest-rerunfailures (the ``flaky``
marker that tests/e2e/conftest.py gives every e2e test) runs it once more on the same module-scoped
fixtures, after the first attempt wrote all it writes. A rerun is refused or miscounted where a test
writes to a shared workspace under fixed names or checks absolute counts.

pytest-rerunfailures' own ``--force-reruns N`` does not do this: it sets the number of reruns of a
*failing* test, whatever its marker says, and a passing test still runs once. Each test then shows as
``R`` (its forced failure) and passes or fails on its second attempt.
"""

from __future__ import annotations

import pytest

FORCED = "first attempt passed; failed on purpose by tests.e2e.second_attempt so that the test runs once more"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    result = yield
    if getattr(item, "execution_count", 0) == 1:  # pytest-rerunfailures counts attempts from 1
        raise AssertionError(FORCED)
    return result
