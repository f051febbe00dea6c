"""Simulated worlds for the per-population, per-protocol shifts (issue 57's proof).

Populations of debaters whose dishonest side is less persuasive than the reference's
in one protocol and more in the other; the judge fitted on one population's log, a
new population calibrated on N of its rooms, its other rooms predicted.  Run as a
script for the full replicate counts (``python tests/populations_coverage.py --reps
40``); ``tests/test_populations.py`` runs a few replicates in its default tier and the
full counts under ``-m slow``.  ``--start`` extends a study with fresh replicates,
``--csv`` keeps its per-replicate rows and ``--pool`` summarizes several such files;
``--draws 400 1000 2000`` puts several draw counts on the same fits.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os

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
                         reading="probabilities", n_draws=None):
    """One replicate: the table of :func:`antiamp.estimation.predictive.calibrate`.
    ``n_draws``: the predictive draws (default what users get,
    :data:`~antiamp.estimation.predictive.N_DRAWS`, the default of
    ``antiamp-estimate --check-draws``), or a sequence of counts: one table per count,
    all from the one fit (the fit does not depend on the draws; each count's table is
    the one ``calibrate`` gives with that count)."""
    dc, dd = world
    A = validate_log(population_log(n_fit, "A", 1000 + rep, rho=0.4))
    B = validate_log(population_log(n_new, "B", 2000 + rep, rho=0.7, dc=dc, dd=dd))
    counts = [pr.N_DRAWS] if n_draws is None else np.atleast_1d(n_draws).tolist()
    with _one_fit():
        tabs = [pr.calibrate(A, B, n_rooms, seed=rep, n_draws=int(nd), choice=reading,
                             protocol_shifts=not tied)[1] for nd in counts]
    return tabs if n_draws is not None and np.ndim(n_draws) else tabs[0]


@contextlib.contextmanager
def _one_fit():
    """Within the block, ``calibrate``'s fit made once per joint log and options and
    reused (a copy with its own notes, the one thing the draws add to): the draws are
    what a second count changes, the fit is the slow part."""
    orig, memo = pr.fit_for, {}

    def fit_for(joint, *a, **kw):
        key = (int(pd.util.hash_pandas_object(joint, index=False).sum()),
               repr(a), repr(sorted(kw.items())))
        if key not in memo:
            memo[key] = orig(joint, *a, **kw)
        f, extra = memo[key]
        return dataclasses.replace(f, notes=list(f.notes)), extra

    pr.fit_for = fit_for
    try:
        yield
    finally:
        pr.fit_for = orig


def coverage_rows(tab, world, rep, **extra) -> list:
    """Rows of :func:`calibrated_coverage` from one replicate's table."""
    rows = []
    for _, r in tab.iterrows():
        if r["metric"] == "fwc":
            continue
        row = {"world": world, "rep": rep, "what": f"{r['protocol']} {r['metric']}",
               "inside": bool(r["inside"]), "observed": r["observed"],
               "lo": r["predicted_lo"], "hi": r["predicted_hi"], **extra}
        if r["metric"] == "gap":
            row["sign_right"] = bool((r["pr_gap_below_0"] > 0.5) == (r["observed"] < 0))
        rows.append(row)
    return rows


def calibrated_coverage(n_rooms, reps, tied=False, worlds=WORLDS, start=0,
                        **kw) -> pd.DataFrame:
    """Per replicate (``start`` to ``start + reps - 1``) and metric (consult amp,
    debate amp, gap): inside the 95% interval, and for the gap whether its predicted
    sign (Pr(gap < 0) against 1/2) is the observed one."""
    rows = []
    for w in worlds:
        for rep in range(start, start + reps):
            rows += coverage_rows(calibrated_replicate(n_rooms, rep, w, tied=tied, **kw),
                                  w, rep)
    return pd.DataFrame(rows)


def wilson(k: int, n: int, confidence=0.95):
    """Wilson score interval of a binomial proportion (statsmodels')."""
    from statsmodels.stats.proportion import proportion_confint

    return proportion_confint(k, n, alpha=1 - confidence, method="wilson")


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


def summary(cov: pd.DataFrame, label: str) -> str:
    """Coverage per metric with its Wilson 95% interval, and the gap's sign where
    |gap| >= 0.1."""
    out = [label]
    for what, r in cov.groupby("what")["inside"].agg(["sum", "count"]).iterrows():
        lo, hi = wilson(int(r["sum"]), int(r["count"]))
        out.append(f"  {what:<22} inside its 95% interval in {r['sum']}/{r['count']} "
                   f"= {r['sum'] / r['count']:.3f} (Wilson 95% [{lo:.3f}, {hi:.3f}])")
    g = cov[(cov["what"] == "consult-debate gap") & (cov["observed"].abs() >= 0.1)]
    k = int(g["sign_right"].sum())
    out.append(f"  gap sign recovered where |gap| >= 0.1: {k}/{len(g)} = "
               f"{k / max(len(g), 1):.3f}")
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=40, help="replicates per world and N")
    ap.add_argument("--start", type=int, default=0,
                    help="first replicate (its seeds: the logs' and the calibration's)")
    ap.add_argument("--rooms", type=int, nargs="+", default=[10, 30, 80])
    ap.add_argument("--draws", type=int, nargs="+", default=[pr.N_DRAWS],
                    help="predictive draws of a calibrated prediction; several: each on "
                         f"the same fits (default {pr.N_DRAWS}, what users get)")
    ap.add_argument("--csv", help="write the per-replicate rows here as they come")
    ap.add_argument("--pool", nargs="+", metavar="CSV",
                    help="only summarize rows written by --csv (pooled)")
    ap.add_argument("--pops", type=int, default=200,
                    help="new populations drawn from the prior")
    ap.add_argument("--tied", action="store_true",
                    help="the tied model (one shift for both protocols) instead")
    a = ap.parse_args(argv)
    if a.reps < 1 or a.start < 0:
        ap.error(f"--reps must be >= 1 and --start >= 0, got {a.reps} and {a.start}")
    if min(a.draws) < 2:
        ap.error(f"--draws must be >= 2, got {min(a.draws)}")
    if a.pool:
        cov = pd.concat([pd.read_csv(p) for p in a.pool], ignore_index=True)
        for (n, nd), c in cov.groupby(["rooms", "n_draws"]):
            print(summary(c, f"N = {n} calibration rooms, {nd} draws, "
                             f"{c['rep'].nunique()} replicates x {c['world'].nunique()} "
                             f"worlds (pooled):"))
        return
    for n in a.rooms:
        rows = []
        for rep in range(a.start, a.start + a.reps):
            for w in WORLDS:
                tabs = calibrated_replicate(n, rep, w, tied=a.tied, n_draws=a.draws)
                for nd, tab in zip(a.draws, tabs):
                    new = coverage_rows(tab, str(w), rep, rooms=n, n_draws=nd)
                    rows += new
                    if a.csv:
                        pd.DataFrame(new).to_csv(a.csv, mode="a", index=False,
                                                 header=not os.path.exists(a.csv))
        cov = pd.DataFrame(rows)
        for nd, c in cov.groupby("n_draws"):
            print(summary(c, f"N = {n} calibration rooms, {nd} draws, replicates "
                             f"{a.start}-{a.start + a.reps - 1} x {len(WORLDS)} worlds"
                             + (" (tied model)" if a.tied else "") + ":"))
    if a.pops and not a.tied:
        c = new_population_coverage(a.pops)
        print(f"new-population 95% intervals over {a.pops} populations drawn from the "
              f"prior: " + ", ".join(f"{k} {c[k].mean():.3f}" for k in c.columns))


if __name__ == "__main__":
    main()
