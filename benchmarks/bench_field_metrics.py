"""What the field's metrics (the Agent Score Difference and the judge's AUC) add to a
block of a baseline grid's metrics, and what counting the AUC's pairs over the judge's
reading groups saves.

    python benchmarks/bench_field_metrics.py [--cells 20000] [--repeats 5] [--json out.json]

Every figure is a median over repeats taken in this run; the comparisons are ratios of
two figures from this run: ``antiamp.metrics.evaluate`` on class counts of ``--cells``
cells with every metric against the same call without ``asd`` and ``auc`` (the
metrics a block had before), and ``judge_auc`` over (group, truth) cells against the
same over the 32 classes.  Before timing, the two AUC paths are checked to agree.
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from antiamp.metrics import (CONTRAST_METRICS, PROTOCOL_METRICS, READING_GROUPS, evaluate,
                             judge_auc, judge_scores)

from bench_baseline import median_time


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cells", type=int, default=20_000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    C = a.cells
    w = rng.integers(0, 1000, (C, 32)).astype(float)
    Jc, Jd = rng.random((C, 2)), rng.random((C, 2, 2))
    wel = (np.ones(C), np.ones(C), np.zeros(C), np.zeros(C))
    every = list(PROTOCOL_METRICS) + list(CONTRAST_METRICS)
    before = [n for n in every if n not in ("asd", "auc")]
    s, g = judge_scores(Jc, Jd)[1], READING_GROUPS[1]
    np.testing.assert_allclose(judge_auc(w, s, groups=g)[0], judge_auc(w, s)[0], atol=1e-13)
    t_before = median_time(lambda: evaluate(w, Jc, Jd, *wel, names=before), a.repeats)
    t_all = median_time(lambda: evaluate(w, Jc, Jd, *wel), a.repeats)
    t_classes = median_time(lambda: judge_auc(w, s), a.repeats)
    t_groups = median_time(lambda: judge_auc(w, s, groups=g), a.repeats)
    out = {"cells": C, "evaluate_without_s": t_before, "evaluate_with_s": t_all,
           "with_over_without": t_all / t_before, "auc_classes_s": t_classes,
           "auc_groups_s": t_groups, "classes_over_groups": t_classes / t_groups}
    print(f"evaluate, {C:,} cells: without asd/auc {t_before:.3f} s, with {t_all:.3f} s "
          f"(x{t_all / t_before:.2f})")
    print(f"debate AUC over 32 classes {t_classes:.3f} s, over (group, truth) cells "
          f"{t_groups:.3f} s (x{t_classes / t_groups:.1f} faster)")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    return out


if __name__ == "__main__":
    main()
