"""Calibrated prediction on real rooms: how often the 95% intervals of
``antiamp-estimate --calibrate`` cover the held-out rooms of the shipped human-judge
logs (Michael et al. 2023, CC-BY 4.0).

Two honest splits of real data (the shipped logs have one population of human
debaters, so the "new population" is a new set of judges or a new way of judging):

* ``judges``: the online log's judges split at random into two halves; the judge
  model is fitted on one half's rooms, the other half's rooms are the new log:
  ``--calibrate-rooms`` of them calibrate, the rest are predicted.
* ``offline``: the judge model fitted on the online judgments (all 250 rooms), the
  new log the offline judges who read the finished transcripts (no questions to the
  debaters): a few of their rooms calibrate, the rest are predicted.

Each replicate draws a new split (or new calibration rooms) and reports every
held-out rate (consultancy and debate, Amp and follow-when-correct) inside or outside
its 95% interval.  The replicates share rows, so the coverage is a description of
these logs, not an independent-trial estimate.

    python tests/calibrate_real_rooms.py [--reps 20] [--rooms 10] [--structural-fit auto]
                                         [--calibrate-prior 1]

``--structural-fit`` names the reading of the structural fit (``auto``, the default:
the one that predicts held-out judges' labels; ``probabilities``: the fit to the
stated probabilities alone); ``--calibrate-prior`` the prior sd of the new
population's shift in spreads (``inf``: none, the maximum-likelihood shift).
"""

from __future__ import annotations

import argparse
from importlib.resources import files

import numpy as np
import pandas as pd


def logs():
    from antiamp.estimate import validate_log
    from antiamp.estimation.logs import load_log

    data = files("antiamp") / "data"
    online = load_log(str(data / "michael2023_human_judges.csv"))
    both = load_log(str(data / "michael2023_judgments.csv"))
    offline = validate_log(both[both["judge_role"].astype(str) == "offline"]
                           .reset_index(drop=True).copy())
    return online, offline


def judge_split(online: pd.DataFrame, seed: int) -> tuple:
    """(fit log, new log): the online judges halved at random."""
    judges = np.array(sorted(online["judge_id"].astype(str).unique()))
    half = set(np.random.default_rng(seed).permutation(judges)[: len(judges) // 2])
    mask = online["judge_id"].astype(str).isin(half).to_numpy()
    from antiamp.estimate import validate_log

    return (validate_log(online[mask].reset_index(drop=True).copy()),
            validate_log(online[~mask].reset_index(drop=True).copy()))


def study(kind: str, reps: int, rooms: int, draws: int = 400,
          choice: str = "auto", prior: float | None = None) -> pd.DataFrame:
    from antiamp.estimation import predictive as pr

    online, offline = logs()
    prior = pr.SHIFT_PRIOR if prior is None else prior
    rows = []
    for rep in range(reps):
        if kind == "judges":
            fit_log, new_log = judge_split(online, 1000 + rep)
        else:
            fit_log, new_log = online, offline
        try:
            _, tab, r = pr.calibrate(fit_log, new_log, rooms, n_draws=draws, seed=rep,
                                     choice=choice, shift_prior=prior)
        except pr.CheckError as exc:  # a split the fit cannot use: said, not hidden
            print(f"{kind} replicate {rep}: {exc}")
            continue
        tab = tab.assign(split=kind, rep=rep, rho=r["rho"])
        rows.append(tab)
    return pd.concat(rows, ignore_index=True)


def summary(tab: pd.DataFrame) -> pd.DataFrame:
    tab = tab.assign(above=tab["predicted"] > tab["observed"])
    return (tab.groupby(["split", "protocol", "metric"])
            .agg(reps=("inside", "size"), inside=("inside", "mean"),
                 observed=("observed", "mean"), predicted=("predicted", "mean"),
                 above=("above", "sum"),
                 width=("predicted_hi", "mean"))
            .assign(width=lambda d: d["width"] - tab.groupby(
                ["split", "protocol", "metric"])["predicted_lo"].mean().to_numpy()))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--rooms", type=int, default=10)
    ap.add_argument("--structural-fit", default="auto",
                    help="the structural fit's reading (auto, probabilities, labels, ...)")
    ap.add_argument("--calibrate-prior", type=float, default=None,
                    help="prior sd of the new population's shift in spreads (default "
                         "antiamp's; inf: none)")
    ap.add_argument("--out", default=None, help="write every replicate's rows to this CSV")
    a = ap.parse_args(argv)
    tab = pd.concat([study(k, a.reps, a.rooms, choice=a.structural_fit,
                           prior=a.calibrate_prior)
                     for k in ("judges", "offline")], ignore_index=True)
    with pd.option_context("display.width", 120, "display.precision", 3):
        print(summary(tab))
        print(tab.groupby("split")["inside"].agg(["mean", "size"]))
    if a.out:
        tab.to_csv(a.out, index=False)


if __name__ == "__main__":
    main()
