"""What users would otherwise write: the baseline model vectorised in NumPy.

Two variants, both checked against the closed forms before they are timed:

* ``numpy_class_counts``: the same sufficient statistic as our kernel (transcript
  class counts by ``np.bincount``), i.e. the Rao-Blackwellised estimator in NumPy;
* ``numpy_naive``: naive Monte Carlo that draws each judge label and counts
  endorsements of wrong protagonists.
"""

from __future__ import annotations

import numpy as np


def numpy_class_counts(n, pi, p, rho, seed=0, chunk=1 << 20):
    """Class counts (same layout as kernels.baseline) with e = t (x = 1)."""
    rng = np.random.default_rng(seed)
    counts = np.zeros(32, np.int64)
    done = 0
    while done < n:
        m = min(chunk, n - done)
        omega = rng.random(m) < pi
        corr = rng.random(m) < p
        tp = corr | (rng.random(m) < rho)
        ta = ~corr | (rng.random(m) < rho)
        idx = (omega.astype(np.int64) << 4) | (corr << 3) | (tp << 2) | (tp << 1) | ta
        counts += np.bincount(idx, minlength=32)
        done += m
    return counts


def numpy_naive(n, pi, p, rho, J_consult, J_debate, seed=0, chunk=1 << 20):
    """Naive Monte Carlo with drawn labels: (n_wrong, endorsed wrong consult, endorsed wrong debate)."""
    rng = np.random.default_rng(seed)
    n_wrong = end_c = end_d = 0
    done = 0
    Jc = np.asarray(J_consult)
    Jd = np.asarray(J_debate)
    while done < n:
        m = min(chunk, n - done)
        omega = rng.random(m) < pi
        corr = rng.random(m) < p
        a = np.where(corr, omega, ~omega)
        tp = corr | (rng.random(m) < rho)
        ta = ~corr | (rng.random(m) < rho)
        yc = np.where(rng.random(m) < Jc[tp.astype(np.int64)], a, ~a)
        yd = np.where(rng.random(m) < Jd[tp.astype(np.int64), ta.astype(np.int64)], a, ~a)
        wrong = a != omega
        n_wrong += int(wrong.sum())
        end_c += int((wrong & (yc == a)).sum())
        end_d += int((wrong & (yd == a)).sum())
        done += m
    return n_wrong, end_c, end_d
