"""How much judges of one transcript share their reading errors (``read_corr``).

The design command's structural jury (:func:`antiamp.design._structural_endorse`)
gives each juror log-odds N(m, S^2) toward the protagonist, of which a share
``read_corr`` of the variance is common to the jurors who read the same transcript.
A log with one judge a transcript cannot say how large that share is; a log with
several judgments of one room can.

Model.  Within a group of rooms that the structural judge treats alike (protocol, and
in consultancy whether the consultant argues the right answer) and per judge role
(online, offline), a judgment's latent reading toward the right answer is
u = tau_{group,role,k} thresholds on a standard normal, u = sqrt(c) T_room +
sqrt(1 - c) e_judge; the judge's stated probability on the right answer falls into
ordered categories (cut at ``cuts``) as u crosses the thresholds.  Two judgments of
one room are then bivariate normal with correlation c = read_corr: the polychoric
correlation (Olsson 1979), estimated in two steps: thresholds from each group and
role's marginal category shares, then c by maximising the pairwise likelihood of
every pair of judgments of one room (each room's pairs, one pair per two judges).
Uncertainty: percentile interval and standard error over a bootstrap of rooms (the
pairs of one room are dependent; the thresholds are re-estimated in each resample).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..lazy import lazy

special = lazy("scipy.special")
stats = lazy("scipy.stats")

#: Category cuts on the judge's probability on the right answer (0.5 counts as
#: wrong, as a 50/50 final judgement does in the published accuracies).
CUTS = (0.2, 0.5, 0.8, 0.95)
#: The read_corr grid the pairwise likelihood is maximised on (then refined to
#: steps of 0.002 around the best point).
GRID = np.round(np.arange(-0.6, 0.98 + 1e-9, 0.02), 3)
N_BOOT = 500

_GL_X, _GL_W = np.polynomial.legendre.leggauss(40)


class ReadCorrError(ValueError):
    """A log that cannot identify read_corr (the message names the column)."""


def bvn_cdf(h, k, rho):
    """Phi_2(h, k; rho), broadcast over h, k and rho.

    Hand-written (Plackett's identity, Phi(h) Phi(k) + the integral over r in [0, rho]
    of the bivariate density, by 40-point Gauss-Legendre) because the pairwise
    likelihood needs it for every pair on a grid of rho in every bootstrap resample,
    vectorised; scipy's multivariate_normal.cdf is one point a call.  Infinite
    limits are read as +-10 (the density there is below 1e-21)."""
    h = np.clip(np.asarray(h, float), -10, 10)
    k = np.clip(np.asarray(k, float), -10, 10)
    rho = np.asarray(rho, float)
    h, k, rho = np.broadcast_arrays(h, k, rho)
    r = 0.5 * rho[..., None] * (_GL_X + 1.0)  # nodes on [0, rho]
    one = 1.0 - r * r
    dens = np.exp(-(h[..., None] ** 2 - 2 * r * h[..., None] * k[..., None]
                    + k[..., None] ** 2) / (2 * one)) / (2 * np.pi * np.sqrt(one))
    return special.ndtr(h) * special.ndtr(k) + 0.5 * rho * (dens @ _GL_W)


def judgments(df: pd.DataFrame) -> pd.DataFrame:
    """The judgments of a log as (room, group, role, p_right): from ``p_correct`` (the
    judgments file's probability on the gold answer) or from ``p_y`` with ``a`` and
    ``omega`` (the estimator's schema).  Group: protocol, and in consultancy whether
    the consultant is right (``consultant`` honest/dishonest, or a = omega)."""
    for col in ("room", "judge_role", "protocol"):
        if col not in df.columns:
            raise ReadCorrError(f"read_corr needs a column {col!r} (several judgments of one "
                                f"room, each with its judge_role)")
    if "p_correct" in df.columns:
        p = pd.to_numeric(df["p_correct"], errors="coerce")
        col = "p_correct"
    elif {"p_y", "a", "omega"} <= set(df.columns):
        p = np.where(df["a"] == df["omega"], df["p_y"], 1 - df["p_y"])
        p = pd.Series(np.where(df["omega"].isna(), np.nan, p), index=df.index)
        col = "p_y"
    elif {"y", "omega"} <= set(df.columns):  # labels only: right (1) or wrong (0)
        p = pd.Series(np.where(df["omega"].isna(), np.nan,
                               (df["y"] == df["omega"]).astype(float)), index=df.index)
        col = "y"
    else:
        raise ReadCorrError("read_corr needs the judge's probability or label: a column "
                            "'p_correct' (on the right answer), 'p_y' with 'a' and 'omega', "
                            "or 'y' with 'omega'")
    bad = p.notna() & ~p.between(0, 1)
    if bad.any():
        r = int(np.flatnonzero(bad)[0])
        raise ReadCorrError(f"column {col!r}, row {r}: not a probability in [0, 1]")
    prot = df["protocol"].astype(str).str.strip().str.lower().replace(
        {"consultancy": "consult"})
    unknown = ~prot.isin(["consult", "debate"])
    if unknown.any():
        r = int(np.flatnonzero(unknown)[0])
        raise ReadCorrError(f"column 'protocol', row {r}: {df['protocol'].iloc[r]!r} (allowed: "
                            f"consult, debate)")
    if "consultant" in df.columns:
        c = df["consultant"].astype("string").str.strip().str.lower()
        bad = (prot == "consult") & ~c.isin(["honest", "dishonest"]).fillna(False)
        if bad.any():
            r = int(np.flatnonzero(bad)[0])
            raise ReadCorrError(f"column 'consultant', row {r}: {df['consultant'].iloc[r]!r} "
                                f"(allowed on consultancy rows: honest, dishonest)")
        right = c == "honest"
    else:
        right = pd.Series(df["a"] == df["omega"], index=df.index)
    group = np.where(prot == "debate", "debate",
                     np.where(right.fillna(False), "consult/right", "consult/wrong"))
    out = pd.DataFrame({"room": df["room"].astype(str).to_numpy(), "group": group,
                        "role": df["judge_role"].astype(str).str.strip().to_numpy(),
                        "p": np.asarray(p, float)})
    return out[out["p"].notna()].reset_index(drop=True)


def _categories(p: np.ndarray, cuts) -> np.ndarray:
    # a probability at or below a cut falls below it (0.5 is a wrong judgement)
    return np.searchsorted(np.asarray(cuts), p, side="left")


def _pairs(j: pd.DataFrame) -> tuple:
    """Index pairs (i, k), i < k, of judgments of one room."""
    codes = pd.factorize(j["room"])[0]
    order = np.argsort(codes, kind="stable")
    a, b = [], []
    start = 0
    sc = codes[order]
    bounds = np.flatnonzero(np.diff(sc)) + 1
    for stop in list(bounds) + [len(sc)]:
        idx = order[start:stop]
        for x in range(len(idx)):
            for y in range(x + 1, len(idx)):
                a.append(idx[x])
                b.append(idx[y])
        start = stop
    return np.array(a, dtype=np.int64), np.array(b, dtype=np.int64), codes


def _thresholds(cat: np.ndarray, cell: np.ndarray, n_cat: int, w: np.ndarray) -> np.ndarray:
    """Per (group, role) cell: thresholds [n_cells, n_cat + 1] (-inf .. +inf) from the
    weighted category shares, half a judgment added to each category (no infinite
    threshold from an empty category)."""
    n_cells = int(cell.max()) + 1
    counts = np.zeros((n_cells, n_cat))
    np.add.at(counts, (cell, cat), w)
    counts += 0.5
    cum = np.cumsum(counts, axis=1) / counts.sum(axis=1, keepdims=True)
    th = np.full((n_cells, n_cat + 1), np.inf)
    th[:, 0] = -np.inf
    th[:, 1:n_cat] = special.ndtri(np.clip(cum[:, :-1], 1e-12, 1 - 1e-12))
    return th


def _pair_loglik(th, cell, cat, ia, ib, wpair, grid) -> np.ndarray:
    """Pairwise log-likelihood on the grid of correlations [len(grid)]."""
    la, ua = th[cell[ia], cat[ia]], th[cell[ia], cat[ia] + 1]
    lb, ub = th[cell[ib], cat[ib]], th[cell[ib], cat[ib] + 1]
    # merge identical pairs (same limits): the likelihood is a sum over them
    key = pd.DataFrame({"la": la, "ua": ua, "lb": lb, "ub": ub, "w": wpair})
    agg = key.groupby(["la", "ua", "lb", "ub"], sort=False)["w"].sum().reset_index()
    la, ua, lb, ub, w = (agg[c].to_numpy() for c in ("la", "ua", "lb", "ub", "w"))
    g = grid[:, None]
    pr = (bvn_cdf(ua, ub, g) - bvn_cdf(la, ub, g) - bvn_cdf(ua, lb, g) + bvn_cdf(la, lb, g))
    return np.log(np.maximum(pr, 1e-300)) @ w


def estimate(df: pd.DataFrame, cuts=CUTS, confidence=0.95, n_boot=N_BOOT, seed=0,
             grid=GRID) -> dict:
    """read_corr of a log with several judgments per room: estimate, bootstrap SE and
    percentile interval over rooms, and what it rests on."""
    j = judgments(df)
    if not {"p_correct", "p_y"} & set(df.columns):
        cuts = (0.5,)  # labels only: right or wrong, a tetrachoric correlation
    cat = _categories(j["p"].to_numpy(), cuts)
    n_cat = len(cuts) + 1
    cell, cells = pd.factorize(j["group"] + " / " + j["role"])
    ia, ib, room = _pairs(j)
    if len(ia) < 2:
        raise ReadCorrError(f"read_corr: {len(ia)} pair(s) of judgments of one room; it needs "
                            f"rooms judged more than once (columns 'room', 'judge_role')")
    n_rooms = int(room.max()) + 1
    paired = np.unique(room[ia])

    def fit(room_w):
        w = room_w[room]
        th = _thresholds(cat, cell, n_cat, w)
        ll = _pair_loglik(th, cell, cat, ia, ib, w[ia], grid)
        best = float(grid[int(np.argmax(ll))])
        fine = np.round(np.arange(max(best - 0.02, grid[0]), min(best + 0.02, grid[-1])
                                  + 1e-9, 0.002), 3)
        llf = _pair_loglik(th, cell, cat, ia, ib, w[ia], fine)
        return float(fine[int(np.argmax(llf))]), ll

    c, ll = fit(np.ones(n_rooms))
    rng = np.random.default_rng(seed)
    boot = np.empty(n_boot)
    for b in range(n_boot):  # resample rooms: each drawn room's judgments, weighted
        room_w = np.bincount(rng.integers(0, n_rooms, n_rooms), minlength=n_rooms)
        boot[b] = fit(room_w.astype(float))[0]
    a = (1 - confidence) / 2
    lo, hi = np.quantile(boot, [a, 1 - a])
    at_edge = c in (grid[0], grid[-1])
    return {"read_corr": c, "se": float(np.std(boot, ddof=1)), "lo": float(lo),
            "hi": float(hi), "n_pairs": int(len(ia)), "n_rooms_paired": int(len(paired)),
            "n_judgments": int(len(j)), "cells": list(cells), "cuts": list(cuts),
            "n_boot": int(n_boot), "at_grid_edge": bool(at_edge)}


def applies(df: pd.DataFrame) -> bool:
    """Whether a log has several judgments of one room (``room`` and ``judge_role``
    columns, some room twice); its columns checked (ReadCorrError) when it does."""
    if not {"room", "judge_role"} <= set(df.columns):
        return False
    if not df["room"].duplicated().any():
        return False
    judgments(df)
    return True


def store(ds, r: dict) -> None:
    """read_corr and its uncertainty as scalars of an estimates Dataset (what
    ``antiamp-design --estimates`` reads)."""
    for k, ln in (("read_corr", "judges' shared share of reading variance (polychoric, "
                   "pairs of judgments of one room)"),
                  ("se", "bootstrap standard error over rooms"),
                  ("lo", "percentile interval over rooms, lower"),
                  ("hi", "percentile interval over rooms, upper")):
        name = "read_corr" if k == "read_corr" else f"read_corr_{k}"
        ds[name] = ((), float(r[k]), {"long_name": ln, "units": "1"})
    ds.attrs.update({"read_corr_pairs": r["n_pairs"], "read_corr_rooms": r["n_rooms_paired"],
                     "read_corr_cuts": ", ".join(f"{c:g}" for c in r["cuts"]),
                     "read_corr_resamples": r["n_boot"]})


def format_result(r: dict, confidence: float) -> str:
    return (f"\njudges' shared reading (read_corr, polychoric over {len(r['cuts']) + 1} "
            f"categories of the probability on the right answer, {r['n_pairs']} pairs of "
            f"judgments in {r['n_rooms_paired']} rooms): {r['read_corr']:.3f} (SE "
            f"{r['se']:.3f}) [{r['lo']:.3f}, {r['hi']:.3f}] ({confidence:.0%} bootstrap over "
            f"rooms, {r['n_boot']} resamples)"
            + ("; at the edge of the grid searched" if r["at_grid_edge"] else ""))


def simulate_judgments(n_rooms: int, read_corr: float, *, judges=(1, 3), p_debate=0.6,
                       shift=1.2, scale=2.0, seed=0) -> pd.DataFrame:
    """Rooms judged by several judges (between ``judges`` online+offline), each
    judge's log-odds on the right answer scale x (shift + sqrt(c) T + sqrt(1 - c) e)
    (c = read_corr), stated on a 0.01 grid within [0.01, 0.99]: for tests."""
    rng = np.random.default_rng(seed)
    rows = []
    for r in range(n_rooms):
        prot = "debate" if rng.random() < p_debate else "consult"
        honest = rng.random() < 0.5
        mu = shift if prot == "debate" or honest else -0.3 * shift
        t = rng.standard_normal()
        for k in range(int(rng.integers(judges[0], judges[1] + 1))):
            u = mu + np.sqrt(read_corr) * t + np.sqrt(1 - read_corr) * rng.standard_normal()
            p = float(np.clip(np.round(special.expit(scale * u), 2), 0.01, 0.99))
            rows.append({"room": f"r{r}", "protocol": prot,
                         "consultant": None if prot == "debate" else
                         ("honest" if honest else "dishonest"),
                         "judge_role": "online" if k == 0 else "offline",
                         "judge_id": f"j{rng.integers(0, 20)}", "p_correct": p})
    return pd.DataFrame(rows)
