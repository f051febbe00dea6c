"""Wall-clock limits of the tests' subprocesses and refusals: guards against a hang,
never speed checks (those are in benchmarks/).

A limit written for a quiet machine is scaled by the machine's load when the test
reaches it (the larger of the 1- and 5-minute load averages per core, at least 1:
on a 2-core host at load 8 every limit is four times as long) and by the
environment's ``ANTIAMP_TEST_TIME_SCALE`` (a number, default 1; ``0`` removes every
limit).  A fixed limit made the README's ``pytest`` fail on a busy machine where the
work it guarded was merely slow.
"""

from __future__ import annotations

import os


def scale() -> float:
    """The factor every limit is multiplied by now (0: no limits)."""
    try:
        user = float(os.environ.get("ANTIAMP_TEST_TIME_SCALE", "1"))
    except ValueError:
        user = 1.0
    try:
        load = max(os.getloadavg()[:2]) / (os.cpu_count() or 1)
    except OSError:  # no load average on this platform
        load = 1.0
    return user * max(1.0, load)


def limit(seconds: float) -> float | None:
    """``seconds`` (a limit on a quiet machine) as the limit to use now; None (no
    limit) where ``ANTIAMP_TEST_TIME_SCALE=0``."""
    s = scale()
    return None if s == 0 else seconds * s
