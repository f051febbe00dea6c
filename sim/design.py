"""``antiamp-design``: the cheapest oversight protocol that meets an Amp target.

The user states what they cannot change (their judge and their model: seed 000's
tie-break judge b, or the logit judge's lam, mu, kappa; the model's accuracy p and
the wrong side's evidence pass rate rho; configured, or read from an
``antiamp-estimate`` store with their uncertainty), the levers they can pull with
a cost for each, and a target:

- levers: the protocol (consultancy or debate: 1 or 2 model calls a case), the
  jury size n (odd, majority rule; each juror one judging cost), and stronger
  verification v in [0, v_max], which lowers the wrong side's pass rate to
  rho (1 - v) at a cost per case proportional to v;
- target: Amp <= A*, accuracy >= a*, cost <= budget, met at the fitted values
  (plug-in) or with probability q over the parameters' sampling distribution
  (robust).

Outcomes are seed 000's closed forms (sections 3-4; presentation when feasible):
Amp = rho' J(1, 1) + (1 - rho') J(0, 1) in debate and rho' J_c(1) + (1 - rho')
J_c(0) in consultancy, follow-when-correct rho' J(1, 1) + (1 - rho') J(1, 0) and
J_c(1), accuracy p fwc + (1 - p)(1 - Amp), each judge probability replaced by its
jury majority probability b_n; vectorised over parameter draws here, and checked
against the engine's closed forms (``antiamp.theory``) in the tests.  The search
over the mixed integer and continuous levers is scipy's differential evolution
(``integrality`` for protocol and jury); the Pareto front of cost against Amp and
accuracy is computed through the engine (a grid of the baseline model over jury
size and the verified pass rate); the recommended design is verified by a fresh
simulation with its standard errors.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ._version import __version__
from .lazy import lazy

pd = lazy("pandas")
special = lazy("scipy.special")
xr = lazy("xarray")

PROTOCOLS = ("consult", "debate")
CALLS = {"consult": 1, "debate": 2}


class DesignError(ValueError):
    """Bad design input (the message names the option and its allowed range)."""


@dataclass
class Judge:
    """Fixed parameters: point values and standard errors (0: known exactly)."""

    kind: str = "tiebreak"
    b: float = 0.5
    d: float = 0.0  # tie-break consultancy default Pr(y = a | e_P = 0)
    lam: float = 1.0
    mu: float = 0.0
    kappa: float = 2.0
    p: float = 0.8
    rho: float = 0.3
    se: dict = field(default_factory=dict)

    def draws(self, n: int, seed: int) -> dict:
        """n parameter draws (normal with the given SEs, clipped to their ranges);
        draw 0 is the point estimate."""
        rng = np.random.default_rng(seed)
        out = {}
        for k in ("b", "d", "lam", "mu", "kappa", "p", "rho"):
            v = np.full(n, float(getattr(self, k)))
            s = float(self.se.get(k, 0.0))
            if s > 0:
                v[1:] += s * rng.standard_normal(n - 1)
            lo, hi = _RANGE[k]
            out[k] = np.clip(v, lo, hi)
        return out


_RANGE = {"b": (0, 1), "d": (0, 1), "p": (0, 1), "rho": (0, 1), "lam": (0, np.inf),
          "mu": (-np.inf, np.inf), "kappa": (0, np.inf)}


@dataclass
class Levers:
    protocols: tuple = PROTOCOLS
    jury_sizes: tuple = (1, 3, 5, 7, 9)
    max_verification: float = 0.9
    cost_call: float = 1.0
    cost_judge: float = 0.5
    cost_verification: float = 2.0


@dataclass
class Target:
    max_amp: float = 0.1
    min_acc: float = 0.0
    budget: float = np.inf
    robust: float = 0.0  # 0: plug-in; q in (0, 1): met with probability q


def validate(judge: Judge, levers: Levers, target: Target, n_draws: int = 400) -> None:
    """Range checks before any computation (DesignError names the option)."""
    def rng(name, v, lo, hi, lo_open=False, hi_open=False):
        bad = (v <= lo if lo_open else v < lo) or (v >= hi if hi_open else v > hi) \
            or not np.isfinite(v) and not (hi == np.inf and v == np.inf)
        if bad:
            raise DesignError(f"--{name} must lie in {'(' if lo_open else '['}{lo}, {hi}"
                              f"{')' if hi_open else ']'}, got {v}")

    if judge.kind not in ("tiebreak", "logit"):
        raise DesignError(f"--judge must be tiebreak or logit, got {judge.kind!r}")
    for k in ("b", "d", "p", "rho"):
        rng(k, getattr(judge, k), 0, 1)
    rng("lam", judge.lam, 0, np.inf, lo_open=True)
    rng("kappa", judge.kappa, 0, np.inf)
    rng("mu", judge.mu, -50, 50)
    for k, s in judge.se.items():
        rng(f"se-{k}", s, 0, np.inf)
    if not levers.protocols or any(p not in PROTOCOLS for p in levers.protocols):
        raise DesignError(f"--protocols must be a comma-separated subset of consult,debate, "
                          f"got {','.join(levers.protocols)}")
    if not levers.jury_sizes or any(n < 1 or n % 2 == 0 or n > 10001
                                    for n in levers.jury_sizes):
        raise DesignError(f"--jury-sizes must be odd integers in [1, 10001] (majority rule), "
                          f"got {','.join(map(str, levers.jury_sizes))}")
    rng("max-verification", levers.max_verification, 0, 1, hi_open=True)
    for k in ("cost_call", "cost_judge", "cost_verification"):
        rng(k.replace("_", "-"), getattr(levers, k), 0, np.inf)
    rng("max-amp", target.max_amp, 0, 1)
    rng("min-acc", target.min_acc, 0, 1)
    rng("budget", target.budget, 0, np.inf, lo_open=True)
    rng("robust", target.robust, 0, 1, hi_open=True)
    if not 2 <= n_draws <= 100_000:
        raise DesignError(f"--draws must lie in [2, 100000], got {n_draws}")


# ------------------------------------------------------------------ outcomes
def outcomes(prot: str, n: int, v, P: dict) -> tuple:
    """(Amp, accuracy) of one design for every parameter draw in ``P`` (arrays).

    The judge tables are :func:`antiamp.judge.single_judge_tables`' entries, written
    here over arrays of draws (that function takes one scalar judge config)."""
    from .judge import jury_majority

    rho = P["rho"] * (1.0 - v)
    if prot == "debate":
        if P.get("_kind") == "logit":
            j11 = special.expit(P["lam"] * P["mu"])
            j01 = special.expit(P["lam"] * (P["mu"] - P["kappa"]))
            j10 = special.expit(P["lam"] * (P["mu"] + P["kappa"]))
        else:
            j11, j01, j10 = P["b"], np.zeros_like(P["b"]), np.ones_like(P["b"])
        j11, j01, j10 = (jury_majority(q, n) for q in (j11, j01, j10))
        amp = rho * j11 + (1 - rho) * j01
        fwc = rho * j11 + (1 - rho) * j10
    else:
        if P.get("_kind") == "logit":
            j1 = special.expit(P["lam"] * (P["mu"] + P["kappa"]))
            j0 = special.expit(P["lam"] * P["mu"])
        else:
            j1, j0 = np.ones_like(P["b"]), P["d"]
        j1, j0 = jury_majority(j1, n), jury_majority(j0, n)
        amp = rho * j1 + (1 - rho) * j0
        fwc = j1
    acc = P["p"] * fwc + (1 - P["p"]) * (1 - amp)
    return amp, acc


def cost(prot: str, n: int, v: float, lv: Levers) -> float:
    return lv.cost_call * CALLS[prot] + lv.cost_judge * n + lv.cost_verification * v


def _params(judge: Judge, n_draws: int, seed: int) -> dict:
    P = judge.draws(n_draws, seed)
    P["_kind"] = judge.kind
    return P


def _meets(amp, acc, tg: Target):
    return (amp <= tg.max_amp + 1e-12) & (acc >= tg.min_acc - 1e-12)


def _violation(prot, n, v, P, lv, tg) -> float:
    """How far a design is from the target (0: meets it)."""
    amp, acc = outcomes(prot, n, v, P)
    c = cost(prot, n, v, lv)
    over = max(0.0, c - tg.budget) / max(tg.budget, 1.0) if np.isfinite(tg.budget) else 0.0
    if tg.robust > 0:
        return max(0.0, tg.robust - float(np.mean(_meets(amp, acc, tg)))) + over
    return max(0.0, float(amp[0]) - tg.max_amp) + max(0.0, tg.min_acc - float(acc[0])) + over


def optimise(judge: Judge, lv: Levers, tg: Target, n_draws: int = 400, seed: int = 0) -> dict:
    """The cheapest design that meets the target (scipy's differential evolution over
    protocol, jury size and verification); if none does, the closest one (least
    violation), flagged infeasible."""
    from scipy.optimize import differential_evolution

    P = _params(judge, n_draws if tg.robust > 0 else 1, seed)
    prots, sizes = list(lv.protocols), sorted(lv.jury_sizes)
    big = 1e3 * (lv.cost_call * 2 + lv.cost_judge * max(sizes) + lv.cost_verification + 1)

    def decode(x):
        return prots[int(round(x[0]))], sizes[int(round(x[1]))], float(x[2])

    def objective(x):
        prot, n, v = decode(x)
        return cost(prot, n, v, lv) + big * _violation(prot, n, v, P, lv, tg)

    bounds = [(0, len(prots) - 1), (0, len(sizes) - 1), (0.0, lv.max_verification)]
    res = differential_evolution(objective, bounds, integrality=[True, True, False], seed=seed,
                                 tol=1e-10, atol=1e-12, maxiter=300, popsize=30, polish=False)
    prot, n, v = decode(res.x)
    viol = _violation(prot, n, v, P, lv, tg)
    feasible = viol <= 1e-9
    if not feasible:  # the closest design: least violation, then least cost
        res = differential_evolution(
            lambda x: _violation(*decode(x), P, lv, tg) + 1e-6 * cost(*decode(x), lv),
            bounds, integrality=[True, True, False], seed=seed, tol=1e-10, maxiter=300,
            popsize=30, polish=False)
        prot, n, v = decode(res.x)
        viol = _violation(prot, n, v, P, lv, tg)
    amp, acc = outcomes(prot, n, v, P)
    return {"protocol": prot, "jury_size": n, "verification": v,
            "rho_verified": float(judge.rho * (1 - v)), "cost": cost(prot, n, v, lv),
            "amp": float(amp[0]), "acc": float(acc[0]),
            "p_meet": float(np.mean(_meets(amp, acc, tg))) if tg.robust > 0 else np.nan,
            "feasible": bool(feasible), "violation": float(viol)}


def enumerate_designs(judge: Judge, lv: Levers, tg: Target, n_v: int = 91,
                      n_draws: int = 400, seed: int = 0):
    """Every design of a discretised lever grid (v on ``n_v`` levels) with its cost,
    plug-in Amp and accuracy, and (robust) the probability it meets the target."""
    P = _params(judge, n_draws if tg.robust > 0 else 1, seed)
    rows = []
    for prot in lv.protocols:
        for n in sorted(lv.jury_sizes):
            for v in np.linspace(0.0, lv.max_verification, n_v):
                amp, acc = outcomes(prot, n, v, P)
                rows.append({"protocol": prot, "jury_size": n, "verification": float(v),
                             "cost": cost(prot, n, v, lv), "amp": float(amp[0]),
                             "acc": float(acc[0]),
                             "p_meet": float(np.mean(_meets(amp, acc, tg)))})
    return pd.DataFrame(rows)


def pareto(df, cols=("cost", "amp"), maximise=("acc",)):
    """Rows no other row dominates (lower cost and Amp, higher accuracy)."""
    vals = np.column_stack([df[c].to_numpy() for c in cols]
                           + [-df[c].to_numpy() for c in maximise])
    keep = np.ones(len(df), bool)
    for i in range(len(df)):
        if not keep[i]:
            continue
        dom = np.all(vals <= vals[i], axis=1) & np.any(vals < vals[i], axis=1)
        if dom.any():
            keep[i] = False
    return df[keep].sort_values("cost").reset_index(drop=True)


def front_through_engine(judge: Judge, lv: Levers, store, n_v: int = 19, executor=None):
    """The lever grid's exact outcomes from the engine: one baseline sweep over jury
    size and the verified pass rate rho (1 - v) into ``store`` (closed forms
    ``amp_theory``, ``acc_theory`` of both protocols; ``executor`` as in
    ``antiamp-sweep``, so a large lever grid can run on a cluster), then cost and
    the Pareto front."""
    import antiamp as sim

    vs = np.linspace(0.0, lv.max_verification, n_v)
    rhos = sorted(set(float(judge.rho * (1 - v)) for v in vs))
    jcfg = _judge_config(judge)
    cfg = {"model": {"name": "baseline", "p": judge.p, "rho": judge.rho},
           "judge": jcfg, "protocol": {"consult_default": judge.d},
           "run": {"n_instances": 1000, "progress": False},
           "sweep": {"name": "design_levers", "overwrite": True, "plot": False,
                     "axes": {"judge": {"jury_size": sorted(lv.jury_sizes)},
                              "model": {"rho": rhos}}}}
    if executor:
        cfg["executor"] = executor
    ds = sim.sweep(cfg, store=store, log=lambda *a: None).load()
    rows = []
    for prot in lv.protocols:
        for n in sorted(lv.jury_sizes):
            for v in vs:
                r = judge.rho * (1 - v)
                cell = ds.sel(jury_size=n, protocol=prot).sel(rho=r, method="nearest")
                rows.append({"protocol": prot, "jury_size": int(n), "verification": float(v),
                             "cost": cost(prot, n, v, lv),
                             "amp": float(cell.amp_theory), "acc": float(cell.acc_theory)})
    grid = pd.DataFrame(rows)
    return grid, pareto(grid)


def _judge_config(judge: Judge) -> dict:
    """The ``judge`` section of a baseline config for these parameters."""
    return ({"kind": "logit", "lam": judge.lam, "mu": judge.mu, "kappa": judge.kappa}
            if judge.kind == "logit" else {"kind": "tiebreak", "b": judge.b})


def verify(judge: Judge, rec: dict, n: int, seed: int) -> dict:
    """A fresh simulation of the recommended design: Amp and accuracy with SEs."""
    import antiamp as sim

    jcfg = {**_judge_config(judge), "jury_size": rec["jury_size"]}
    ds = sim.simulate({"model": {"p": judge.p, "rho": rec["rho_verified"]}, "judge": jcfg,
                       "protocol": {"consult_default": judge.d},
                       "run": {"n_instances": int(n), "seed": int(seed), "progress": False}})
    r = ds.sel(protocol=rec["protocol"])
    return {"amp_sim": float(r.amp), "amp_sim_se": float(r.amp_se),
            "acc_sim": float(r.acc), "acc_sim_se": float(r.acc_se)}


# ------------------------------------------------------------------ from an estimate store
def judge_from_estimates(path) -> tuple[Judge, list]:
    """The seed-000 judge and model an ``antiamp-estimate`` store implies, with SEs.

    Logit judge from the pooled logistic fit when it was fitted on binary evidence
    (lam = 1); else the tie-break judge from debate's b-hat.  p from the log, rho
    from rho_eq (consultancy; binomial SE).  Raises DesignError with the reason when
    the store does not identify a seed-000 judge."""
    try:
        ds = xr.open_zarr(path).load()
        ds.sel(stratum="all").rho_eq_P, ds.attrs["p_correct"], ds.mu_tilde  # noqa: B018
    except Exception:  # noqa: BLE001  (not a store, or not one antiamp-estimate wrote)
        raise DesignError(f"--estimates {path}: not a store written by antiamp-estimate") \
            from None
    notes = []
    a = ds.sel(stratum="all")
    rho = float(a.rho_eq_P.sel(protocol="consult"))
    n_w = float(a.n_known.sel(protocol="consult")) * (1 - float(ds.attrs["p_correct"]))
    se_rho = float(np.sqrt(max(rho * (1 - rho), 1e-12) / max(n_w, 1)))
    p = float(ds.attrs["p_correct"])
    reg = str(ds.regressor.sel(fit="pooled").item()) if "regressor" in ds else "e_P - e_A"
    mu, kappa = float(ds.mu_tilde.sel(fit="pooled")), float(ds.kappa_tilde.sel(fit="pooled"))
    if reg == "e_P - e_A" and np.isfinite(mu) and np.isfinite(kappa) and kappa >= 0:
        j = Judge("logit", lam=1.0, mu=mu, kappa=kappa, p=p, rho=rho,
                  se={"mu": float(ds.mu_tilde_se.sel(fit="pooled")),
                      "kappa": float(ds.kappa_tilde_se.sel(fit="pooled")), "rho": se_rho})
        notes.append(f"judge: logit from the pooled fit (mu~ {mu:.3f}, kappa~ {kappa:.3f}, "
                     "lam = 1)")
        return j, notes
    b = float(a.b_hat.sel(protocol="debate"))
    if not np.isfinite(b):
        why = (f"the pooled logistic fit used {reg}" if reg != "e_P - e_A" else
               "the logistic fit is not identified")
        raise DesignError(f"--estimates {path}: the store does not identify a seed-000 judge "
                          f"({why}, and debate b-hat is not defined: debate roles were "
                          f"assigned or no debate was a tie); give the judge with --judge and "
                          f"its parameters")
    n_t = float(a.tie_rate.sel(protocol="debate")) * float(a.n_rows.sel(protocol="debate"))
    se_b = float(np.sqrt(max(b * (1 - b), 1e-12) / max(n_t, 1)))
    d = float(a.b_hat.sel(protocol="consult")) if np.isfinite(
        float(a.b_hat.sel(protocol="consult"))) else 0.0
    notes.append(f"judge: tie-break from debate's b-hat ({b:.3f})")
    return Judge("tiebreak", b=b, d=d, p=p, rho=rho, se={"b": se_b, "rho": se_rho}), notes


# ------------------------------------------------------------------ figure and command
def plot_front(grid, front, rec: dict, current: dict | None, path: Path, tg: Target) -> list:
    """Amp against cost (accuracy as colour) of every design of the lever grid, the
    Pareto front, the target, the recommendation and the user's current protocol."""
    from .plotting import panel_grid, save

    fig, axs = panel_grid(2, height=3.6)
    for ax, (y, lab) in zip(axs, (("amp", "mistake amplification Amp"), ("acc", "accuracy"))):
        for prot, mk in (("consult", "o"), ("debate", "s")):
            g = grid[grid.protocol == prot]
            if len(g):
                sc = ax.scatter(g.cost, g[y], c=g.jury_size, cmap="viridis", s=10, marker=mk,
                                alpha=0.5, label=f"{prot} (colour: jury size)",
                                vmin=grid.jury_size.min(), vmax=grid.jury_size.max())
        ax.plot(front.cost, front[y], color="black", lw=1, drawstyle="steps-post",
                label="Pareto front (cost, Amp, accuracy)")
        ax.scatter([rec["cost"]], [rec[y]], marker="*", s=220, color="#d62728", zorder=5,
                   edgecolor="black", label="recommended")
        if current is not None:
            ax.scatter([current["cost"]], [current[y]], marker="X", s=120, color="#ff7f0e",
                       zorder=5, edgecolor="black", label="current")
        if y == "amp":
            ax.axhline(tg.max_amp, color="#d62728", lw=0.8, ls="--", label="target Amp")
        elif tg.min_acc > 0:
            ax.axhline(tg.min_acc, color="#d62728", lw=0.8, ls="--", label="target accuracy")
        ax.set_xlabel("cost per case")
        ax.set_ylabel(lab)
    cb = fig.colorbar(sc, ax=axs[-1], label="jury size n")
    cb.set_ticks(sorted(set(int(n) for n in grid.jury_size)))
    h, lab = axs[0].get_legend_handles_labels()
    fig.legend(h, lab, loc="outside lower center", ncols=3, fontsize=8, frameon=False)
    fig.suptitle(f"oversight designs: {rec['protocol']}, jury {rec['jury_size']}, "
                 f"verification {rec['verification']:.2f} recommended (cost "
                 f"{rec['cost']:.2f})", fontsize=10)
    return save(fig, path)


def _list(kind):
    def parse(s):
        try:
            return tuple(kind(x) for x in s.split(",") if x != "")
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected comma-separated values, got {s!r}")
    return parse


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(
        prog="antiamp-design", description="The cheapest oversight protocol (protocol, jury "
        "size, verification) that meets an Amp target, with the Pareto front of cost against "
        "Amp and accuracy.")
    ap.add_argument("--version", action="version", version=f"%(prog)s (antiamp {__version__})")
    g = ap.add_argument_group("what you cannot change (your judge and model)")
    g.add_argument("--estimates", default=None, help="an antiamp-estimate store: the judge, "
                   "p and rho it implies, with their standard errors")
    g.add_argument("--judge", default="tiebreak", help="tiebreak or logit (default tiebreak)")
    for k, d, h in (("b", 0.5, "tie-break bias toward the protagonist, [0, 1]"),
                    ("d", 0.0, "tie-break consultancy default Pr(y = a | no evidence), [0, 1]"),
                    ("lam", 1.0, "logit precision lambda, > 0"),
                    ("mu", 0.0, "logit bias mu, [-50, 50]"),
                    ("kappa", 2.0, "logit evidence salience kappa, >= 0"),
                    ("p", 0.8, "Pr(the model is right), [0, 1]"),
                    ("rho", 0.3, "Pr(a wrong side's evidence passes verification), [0, 1]")):
        g.add_argument(f"--{k}", type=float, default=None, help=f"{h}; default {d}")
        g.add_argument(f"--se-{k}", type=float, default=0.0,
                       help=f"standard error of {k} (robust designs draw from it); default 0")
    g = ap.add_argument_group("levers and their costs")
    g.add_argument("--protocols", type=_list(str), default=PROTOCOLS,
                   help="subset of consult,debate (default both)")
    g.add_argument("--jury-sizes", type=_list(int), default=(1, 3, 5, 7, 9),
                   help="odd jury sizes, majority rule (default 1,3,5,7,9)")
    g.add_argument("--max-verification", type=float, default=0.9,
                   help="largest verification v in [0, 1): rho becomes rho (1 - v); default 0.9")
    g.add_argument("--cost-call", type=float, default=1.0,
                   help="cost of a model call (consultancy 1, debate 2 a case); default 1")
    g.add_argument("--cost-judge", type=float, default=0.5, help="cost per juror; default 0.5")
    g.add_argument("--cost-verification", type=float, default=2.0,
                   help="cost per case of verification v = 1; default 2")
    g = ap.add_argument_group("target")
    g.add_argument("--max-amp", type=float, default=0.1, help="Amp at most this; default 0.1")
    g.add_argument("--min-acc", type=float, default=0.0, help="accuracy at least this")
    g.add_argument("--budget", type=float, default=np.inf, help="cost per case at most this")
    g.add_argument("--robust", type=float, default=0.9,
                   help="meet the target with this probability over the parameters' "
                        "uncertainty, [0, 1) (0: at the point values only); default 0.9")
    g.add_argument("--draws", type=int, default=400, help="parameter draws; default 400")
    g.add_argument("--current", default="consult:1:0",
                   help="your protocol as protocol:jury:verification (default consult:1:0)")
    ap.add_argument("--n-sim", type=int, default=1_000_000,
                    help="instances of the verifying simulation; default 1e6")
    ap.add_argument("--seed", type=int, default=0, help=">= 0")
    ap.add_argument("--out", default=None, help="output directory (default outputs/design/"
                    "<estimates name or 'configured'>)")
    args = ap.parse_args(argv)
    try:
        judge, notes = _judge_from_args(args)
        lv = Levers(tuple(args.protocols), tuple(args.jury_sizes), args.max_verification,
                    args.cost_call, args.cost_judge, args.cost_verification)
        tg = Target(args.max_amp, args.min_acc, args.budget, args.robust)
        validate(judge, lv, tg, args.draws)
        cur = _current(args.current, lv)
        if not 1 <= args.n_sim <= 10 ** 9:
            raise DesignError(f"--n-sim must lie in [1, 1e9], got {args.n_sim}")
        if args.seed < 0:
            raise DesignError(f"--seed must be >= 0, got {args.seed}")
        src = Path(args.estimates).resolve() if args.estimates else None
        out = Path(args.out or Path("outputs") / "design" / (
            "configured" if src is None else src.parent.name if src.stem == "estimates"
            else src.stem))
        if out.exists() and not out.is_dir():
            raise DesignError(f"--out {out} exists and is not a directory")
    except DesignError as exc:
        print(f"antiamp-design: error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    run(judge, lv, tg, cur, notes, args.draws, args.n_sim, args.seed, out)


def _judge_from_args(args) -> tuple:
    keys = ("b", "d", "lam", "mu", "kappa", "p", "rho")
    if args.estimates:
        if not Path(args.estimates).is_dir():
            raise DesignError(f"--estimates {args.estimates}: no such store")
        judge, notes = judge_from_estimates(args.estimates)
        for k in keys:  # a value given on the command line overrides the store's
            if getattr(args, k) is not None:
                setattr(judge, k, getattr(args, k))
                judge.se.pop(k, None)
        return judge, notes
    j = Judge(args.judge)
    for k in keys:
        if getattr(args, k) is not None:
            setattr(j, k, getattr(args, k))
        s = getattr(args, f"se_{k}")
        if s:
            j.se[k] = s
    return j, []


def _current(spec: str, lv: Levers) -> tuple:
    try:
        prot, n, v = spec.split(":")
        n, v = int(n), float(v)
    except ValueError:
        raise DesignError(f"--current must be protocol:jury:verification (consult:1:0), got "
                          f"{spec!r}") from None
    if prot not in PROTOCOLS or n < 1 or n % 2 == 0 or not 0 <= v < 1:
        raise DesignError(f"--current {spec!r}: protocol consult or debate, odd jury >= 1, "
                          f"verification in [0, 1)")
    return prot, n, v


def run(judge: Judge, lv: Levers, tg: Target, current, notes, n_draws, n_sim, seed,
        out: Path) -> dict:
    import time

    t0 = time.perf_counter()
    rec = optimise(judge, lv, tg, n_draws, seed)
    plug = optimise(judge, lv, Target(tg.max_amp, tg.min_acc, tg.budget, 0.0), n_draws, seed) \
        if tg.robust > 0 else rec
    rec.update(verify(judge, rec, n_sim, seed))
    P = _params(judge, 1, seed)
    ca, cc = outcomes(current[0], current[1], current[2], P)
    cur = {"protocol": current[0], "jury_size": current[1], "verification": current[2],
           "cost": cost(*current, lv), "amp": float(ca[0]), "acc": float(cc[0])}
    out.mkdir(parents=True, exist_ok=True)
    grid, front = front_through_engine(judge, lv, out / "levers.zarr")
    lines = [f"antiamp-design {__version__}: judge {judge.kind} ("
             + ", ".join(f"{k} {getattr(judge, k):.4g}" + (f" ± {judge.se[k]:.3g}"
                                                           if judge.se.get(k) else "")
                         for k in (("b", "d") if judge.kind == "tiebreak"
                                   else ("lam", "mu", "kappa")) + ("p", "rho")) + ")"]
    lines += notes
    lines.append(f"target: Amp <= {tg.max_amp:g}" + (f", accuracy >= {tg.min_acc:g}"
                                                      if tg.min_acc else "")
                 + (f", cost <= {tg.budget:g}" if np.isfinite(tg.budget) else "")
                 + (f", met with probability {tg.robust:g} over {n_draws} parameter draws"
                    if tg.robust else " at the point values"))
    lines.append("")
    for name, r in (("recommended", rec),) + ((("plug-in (point values)", plug),)
                                              if tg.robust > 0 else ()):
        state = "" if r["feasible"] else "  INFEASIBLE: no design meets the target; closest"
        lines.append(f"{name:<24} {r['protocol']}, jury {r['jury_size']}, verification "
                     f"{r['verification']:.3f} (rho {judge.rho:.3g} -> {r['rho_verified']:.3g})"
                     f": cost {r['cost']:.3f}, Amp {r['amp']:.4f}, accuracy {r['acc']:.4f}"
                     + (f", Pr(meets) {r['p_meet']:.3f}" if np.isfinite(r["p_meet"]) else "")
                     + state)
    lines.append(f"{'  simulated (' + format(n_sim, ',') + ')':<24} Amp {rec['amp_sim']:.4f} "
                 f"({rec['amp_sim_se']:.4f}), accuracy {rec['acc_sim']:.4f} "
                 f"({rec['acc_sim_se']:.4f})")
    lines.append(f"{'current':<24} {cur['protocol']}, jury {cur['jury_size']}, verification "
                 f"{cur['verification']:.3f}: cost {cur['cost']:.3f}, Amp {cur['amp']:.4f}, "
                 f"accuracy {cur['acc']:.4f}")
    lines += ["", f"Pareto front (cost, Amp, accuracy) of {len(grid)} designs on the lever "
              f"grid, from the engine: {len(front)} designs"]
    show = front if len(front) <= 12 else front.iloc[np.linspace(0, len(front) - 1, 12)
                                                     .round().astype(int)]
    lines.append(show.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    text = "\n".join(lines)
    print(text)
    (out / "design.txt").write_text(text + "\n")
    front.to_csv(out / "front.csv", index=False)
    grid.to_csv(out / "designs.csv", index=False)
    pd.DataFrame([rec, cur] + ([plug] if tg.robust > 0 else [])).assign(
        role=["recommended", "current"] + (["plug-in"] if tg.robust > 0 else [])).to_csv(
        out / "recommendation.csv", index=False)
    paths = plot_front(grid, front, rec, cur, out / "design", tg)
    print(f"\nwrote {out / 'design.txt'}, recommendation.csv, front.csv, designs.csv, "
          f"levers.zarr, "
          f"{', '.join(p.name for p in paths)} ({time.perf_counter() - t0:.1f} s)")
    return rec


if __name__ == "__main__":
    main()
