"""Simulated worlds for the per-population, per-protocol shifts (issue 57's proof).

Populations of debaters whose dishonest side is less persuasive than the reference's
in one protocol and more in the other; the judge fitted on one population's log, a
new population calibrated on N of its rooms, its other rooms predicted.  Run as a
script for the full replicate counts (``python tests/populations_coverage.py --reps
40``); ``tests/test_populations.py`` runs a few replicates in its default tier and the
full counts under ``-m slow``.
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from antiamp.estimate import validate_log
from antiamp.estimation import predictive as pr
from antiamp.estimation import structural as st

#: The structural judge of the simulated worlds (log-odds; sigma the consultancy spread).
JUDGE = {"mu_consult": 0.5, "d": 2.0, "sigma": 1.5, "kappa_v": 0.8}
#: A new population's shifts in spreads: opposite signs per protocol, as in the AI
#: against the human debaters of the real rooms (issue 57).
WORLDS = ((-1.0, 1.0), (1.0, -1.0))


def population_log(n, label, seed, rho, dc=0.0, dd=0.0, n_judges=30):
    """A log of one population: shifts ``dc``, ``dd`` in spreads of the judge."""
    s = JUDGE["sigma"]
    log = st.simulate_log(n, rho=rho, delta_consult=dc * s, delta_debate=dd * s,
                          n_judges=n_judges, seed=seed, **JUDGE)
    log["debaters"] = label
    log["room"] = [f"{label}-{seed}-{i}" for i in range(n)]
    log["judge_id"] = f"{label}{seed}-" + log["judge_id"].astype(str)
    return log


def calibrated_replicate(n_rooms, rep, world, tied=False, n_fit=800, n_new=600,
                         reading="probabilities", n_draws=400):
    """One replicate: the table of :func:`antiamp.estimation.predictive.calibrate`."""
    dc, dd = world
    A = validate_log(population_log(n_fit, "A", 1000 + rep, rho=0.4))
    B = validate_log(population_log(n_new, "B", 2000 + rep, rho=0.7, dc=dc, dd=dd))
    _, tab, _ = pr.calibrate(A, B, n_rooms, seed=rep, n_draws=n_draws, choice=reading,
                             protocol_shifts=not tied)
    return tab


def calibrated_coverage(n_rooms, reps, tied=False, worlds=WORLDS, **kw) -> pd.DataFrame:
    """Per replicate and metric (consult amp, debate amp, gap): inside the 95%
    interval, and for the gap whether its predicted sign (Pr(gap < 0) against 1/2) is
    the observed one."""
    rows = []
    for w in worlds:
        for rep in range(reps):
            tab = calibrated_replicate(n_rooms, rep, w, tied=tied, **kw)
            for _, r in tab.iterrows():
                if r["metric"] == "fwc":
                    continue
                row = {"world": w, "rep": rep, "what": f"{r['protocol']} {r['metric']}",
                       "inside": bool(r["inside"]), "observed": r["observed"]}
                if r["metric"] == "gap":
                    row["sign_right"] = bool((r["pr_gap_below_0"] > 0.5)
                                             == (r["observed"] < 0))
                rows.append(row)
    return pd.DataFrame(rows)


def new_population_coverage(n_pops, seed=0, prior=None, n_fit=1500, n_truth=4000,
                            n_draws=600):
    """Fit the judge on two populations (A, and B with opposite shifts), predict "a new
    population"; draw ``n_pops`` populations' shifts from the shift prior (and rho
    from a fitted population's), simulate each's rooms (``n_truth`` rows: its Amp
    nearly exact), and say whether each lies inside the new-population intervals.
    ``prior``: the prior the prediction uses (default: the one the worlds are drawn
    from, :class:`~antiamp.estimation.structural.ShiftPrior`'s defaults)."""
    truth_prior = st.ShiftPrior()
    A = population_log(n_fit, "A", 11 + seed, rho=0.4)
    B = population_log(n_fit, "B", 12 + seed, rho=0.7, dc=-1.0, dd=1.0)
    df = validate_log(pd.concat([A, B], ignore_index=True))
    f = pr.fit_named(df, "probabilities", debaters="debaters", protocol_shifts=True,
                     pop_prior=truth_prior)
    tab = pr.population_predictions(f, df, n_draws=n_draws, seed=seed,
                                    prior=prior or truth_prior)
    new = tab[tab["prediction"] == pr.NEW].iloc[0]
    rng = np.random.default_rng(100 + seed)
    L = np.linalg.cholesky(truth_prior.cov())
    rows = []
    for j in range(n_pops):
        dc, dd = L @ rng.standard_normal(2)
        rho = (0.4, 0.7)[rng.integers(0, 2)]
        C = population_log(n_truth, "C", 5000 + 97 * seed + j, rho=rho, dc=dc, dd=dd)
        wrong = C[C["a"] != C["omega"]]
        amp = {p: float((wrong.loc[wrong["protocol"] == p, "y"]
                         == wrong.loc[wrong["protocol"] == p, "a"]).mean())
               for p in ("consult", "debate")}
        gap = amp["consult"] - amp["debate"]
        rows.append({"consult amp": new["consult_amp_lo"] <= amp["consult"]
                     <= new["consult_amp_hi"],
                     "debate amp": new["debate_amp_lo"] <= amp["debate"]
                     <= new["debate_amp_hi"],
                     "gap": new["gap_lo"] <= gap <= new["gap_hi"]})
    return pd.DataFrame(rows)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=40, help="replicates per world and N")
    ap.add_argument("--rooms", type=int, nargs="+", default=[10, 30, 80])
    ap.add_argument("--pops", type=int, default=200,
                    help="new populations drawn from the prior")
    ap.add_argument("--tied", action="store_true",
                    help="the tied model (one shift for both protocols) instead")
    a = ap.parse_args(argv)
    for n in a.rooms:
        cov = calibrated_coverage(n, a.reps, tied=a.tied)
        by = cov.groupby("what")["inside"].agg(["sum", "count"])
        print(f"N = {n} calibration rooms, {a.reps} replicates x {len(WORLDS)} worlds"
              + (" (tied model)" if a.tied else "") + ":")
        for what, r in by.iterrows():
            print(f"  {what:<22} inside its 95% interval in {r['sum']}/{r['count']} "
                  f"= {r['sum'] / r['count']:.3f}")
        g = cov[(cov["what"] == "consult-debate gap") & (cov["observed"].abs() >= 0.1)]
        print(f"  gap sign recovered where |gap| >= 0.1: {int(g['sign_right'].sum())}/"
              f"{len(g)} = {g['sign_right'].mean():.3f}")
    if a.pops and not a.tied:
        c = new_population_coverage(a.pops)
        print(f"new-population 95% intervals over {a.pops} populations drawn from the "
              f"prior: " + ", ".join(f"{k} {c[k].mean():.3f}" for k in c.columns))


if __name__ == "__main__":
    main()
