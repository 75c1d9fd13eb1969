"""When robots.txt is fetched again after failures, derived from the policy itself.

Tests that check the retry schedule ask here instead of writing the doubling out
(``[0, 30, 90, 210]``), so a change of ``core.policy.retry_delay`` changes the expectation
with it and only tests about the schedule's *shape* need a second look.

    attempt_times([500, 500, 500], LIMITS)       # -> [0, 30, 90, 210]: the 4th comes at 210
    attempt_times([503, (429, 42)], LIMITS)      # -> [0, 5, 47]: Retry-After 42 s honoured
"""

from __future__ import annotations

from collections.abc import Sequence

from scrapy_rep.core.policy import Limits, retry_delay


def attempt_times(
    failures: Sequence[int | tuple[int, float]], limits: Limits, start: float = 0.0
) -> list[float]:
    """The times (from ``start``) of the first attempt and of one retry after each failure:
    ``failures`` are statuses, or (status, Retry-After seconds)."""
    times = [start]
    for count, failure in enumerate(failures, 1):
        status, retry_after = failure if isinstance(failure, tuple) else (failure, None)
        times.append(times[-1] + retry_delay(count, status, retry_after, limits))
    return times
