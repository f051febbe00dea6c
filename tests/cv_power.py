"""Simulated worlds for the pooled cross-validation statistic (issue 57's proof).

A judge whose consultancy and debate readings spread differently (sigma 2.66 in
consultancy, 1.7 in debate: judges read debates more consistently), read by the
``probabilities`` reading with one spread for both protocols: that reading predicts
debate Amp about 0.06 above the truth (0.21 against 0.151 at 200,000 rows; consultancy
Amp 0.03 below, follow-when-correct 0.04 above), a mild bias of the size the shipped
human-judge log shows (0.193 predicted, 0.131 observed).  The correct world has one
spread (1.7) in both protocols, where the reading holds.  Each replicate: a log of N
rooms (one judgment each, 40 judges, half consultancy), 5-fold cross-validation by
judge, the pooled statistic against B logs simulated from the fit to the whole log;
rejected where its all-at-once p-value is below 0.05.

Run as a script for the full replicate counts (``python tests/cv_power.py --reps 100``);
``tests/test_cv_pooled.py`` runs a few replicates in its default tier and the full
study under ``-m slow``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from antiamp.estimate import validate_log
from antiamp.estimation import cvpool as cp
from antiamp.estimation import predictive as pr
from antiamp.estimation import structural as st

#: The judge of both worlds (log-odds), and each world's (consultancy, debate) spread.
JUDGE = {"mu_consult": 0.5, "d": 2.5}
WORLDS = {"correct": (1.7, 1.7), "biased": (2.66, 1.7)}
READING = "probabilities"


def world_log(n_rooms: int, seed: int, world: str) -> pd.DataFrame:
    """A validated log of ``n_rooms`` rooms of ``world`` (:data:`WORLDS`)."""
    sc, sd = WORLDS[world]
    rng = np.random.default_rng([seed, 57])
    nd = int(rng.binomial(n_rooms, 0.5))
    c = st.simulate_log(n_rooms - nd, share_debate=0.0, seed=2 * seed + 1, n_judges=40,
                        sigma=sc, **JUDGE)
    d = st.simulate_log(nd, share_debate=1.0, seed=2 * seed + 2, n_judges=40, sigma=sd,
                        **JUDGE)
    return validate_log(pd.concat([c, d], ignore_index=True))


def replicate(n_rooms: int, rep: int, world: str, n_boot: int = cp.N_BOOT, k: int = 5,
              seeds=(0,)) -> pd.DataFrame:
    """One replicate's pooled table (:func:`antiamp.estimation.cvpool.pooled_check`)
    and its per-fold table's share of rates inside their intervals (attrs
    ``inside``)."""
    df = world_log(n_rooms, rep, world)
    f = pr.fit_named(df, READING)
    tab = cp.pooled_check(df, f, k, "judge", seeds, n_boot, seed=rep)
    return tab


def rejection_rate(n_rooms: int, reps: int, world: str, start: int = 0, verbose=False,
                   save=None, **kw):
    """(share of replicates whose all-at-once p < 0.05, its binomial SE, the
    p-values)."""
    ps = []
    for rep in range(start, start + reps):
        tab = replicate(n_rooms, rep, world, **kw)
        ps.append(float(tab["p_value"].iloc[-1]))
        if save:
            tab.assign(world=world, rooms=n_rooms, rep=rep,
                       failed=tab.attrs["failed"]).to_csv(
                save, mode="a", index=False, header=not Path(save).exists())
        if verbose:
            d = tab.set_index(["protocol", "metric"])
            print(f"  {world} {n_rooms} rep {rep}: p {ps[-1]:.4f}, debate Amp residual "
                  f"{d.loc[('debate', 'amp'), 'residual']:+.4f} (simulated sd "
                  f"{d.loc[('debate', 'amp'), 'ref_sd']:.4f}); simulated logs not fitted "
                  f"{tab.attrs['failed']}", flush=True)
    ps = np.array(ps)
    r = float(np.mean(ps < 0.05))
    return r, float(np.sqrt(r * (1 - r) / len(ps))), ps


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=40)
    ap.add_argument("--rooms", type=int, nargs="+", default=[1200, 330])
    ap.add_argument("--boot", type=int, default=cp.N_BOOT)
    ap.add_argument("--worlds", nargs="+", default=list(WORLDS), choices=list(WORLDS))
    ap.add_argument("--start", type=int, default=0, help="first replicate's seed")
    ap.add_argument("--verbose", action="store_true", help="a line per replicate")
    ap.add_argument("--save", default=None, help="a CSV each replicate's table is added to")
    a = ap.parse_args(argv)
    for n in a.rooms:
        for w in a.worlds:
            r, se, ps = rejection_rate(n, a.reps, w, a.start, a.verbose, a.save,
                                       n_boot=a.boot)
            print(f"{w:<8} {n:>5} rooms: rejected at 5% in {np.sum(ps < 0.05)}/{len(ps)} "
                  f"= {r:.3f} (SE {se:.3f}); median p {np.median(ps):.3f}", flush=True)


if __name__ == "__main__":
    main()
