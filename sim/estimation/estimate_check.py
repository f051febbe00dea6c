"""The estimates run on the engine: the seed-000 judges the section-6 estimators
imply (tie-break and logit) and the structural judge fitted to the log
(:mod:`antiamp.estimation.structural`), each prediction beside the observed metrics.
"""

from __future__ import annotations

import numpy as np

from ..lazy import lazy

pd = lazy("pandas")
xr = lazy("xarray")

from .logs import PROTOCOLS, LogError, select_round


def fitted_config(ds: xr.Dataset, notes: list | None = None) -> dict:
    """Model parameters implied by the estimates, for the simulator.  A parameter the
    log does not identify takes a stated default (rho and b 0.5, the consultancy
    default 0), and ``notes`` (a list) gets a line saying which and why."""
    all_ = ds.sel(stratum="all")
    rho = all_.rho_feas_P.sel(protocol="consult").item()
    if np.isnan(rho):
        rho = all_.rho_eq_P.sel(protocol="consult").item()
    b = all_.b_hat.sel(protocol="debate").item()
    d = all_.b_hat.sel(protocol="consult").item()
    said = [] if notes is None else notes
    for name, v, why, default in (
            ("model.rho", rho, "no consultancy row with a wrong consultant", 0.5),
            ("judge.b", b, "no debate tie read with open roles", 0.5),
            ("protocol.consult_default", d, "no consultancy row without evidence", 0.0)):
        if np.isnan(v):
            said.append(f"{name} is not identified by the log ({why}): {default} is used")
    clip = (lambda v, lo=0.0, hi=1.0: float(min(max(v, lo), hi)) if not np.isnan(v) else 0.5)
    return {
        "model": {"pi": clip(ds.attrs["pi"]), "p": clip(ds.attrs["p_correct"]), "rho": clip(rho)},
        "judge": {"kind": "tiebreak", "b": clip(b)},
        "protocol": {"consult_default": clip(d) if not np.isnan(d) else 0.0},
    }


def simulate_fitted(ds: xr.Dataset, n: int = 2_000_000, seed: int = 0) -> pd.DataFrame:
    """Predicted against observed metrics, under the fitted tie-break and logit judges."""
    import antiamp as sim

    notes = []
    cfg = fitted_config(ds, notes)
    cfg["run"] = {"n_instances": n, "seed": seed, "progress": False}
    rows = []
    preds = {"tie-break (rho, b, consult default)": sim.simulate(cfg)}
    mu = ds.mu_tilde.sel(fit="pooled").item()
    kappa = ds.kappa_tilde.sel(fit="pooled").item()
    pooled_x = (str(ds.regressor.sel(fit="pooled").item()) if "regressor" in ds else
                ("v_P - v_A" if ds.attrs["graded_evidence"] else "e_P - e_A"))
    # The simulator's logit judge reads binary evidence: only a fit on e_P - e_A maps to it.
    if np.isfinite(mu) and np.isfinite(kappa) and kappa >= 0 and pooled_x == "e_P - e_A":
        lcfg = {**cfg, "judge": {"kind": "logit", "lam": 1.0, "mu": mu, "kappa": kappa},
                "protocol": {"consult_default": 0.0}}
        preds["logit (mu~, kappa~)"] = sim.simulate(lcfg)
    obs = ds.sel(stratum="all")
    for prot in PROTOCOLS:
        for m in ("amp", "acc", "fwc"):
            row = {"protocol": prot, "metric": m, "observed": obs[m].sel(protocol=prot).item(),
                   "lo": obs[f"{m}_lo"].sel(protocol=prot).item(),
                   "hi": obs[f"{m}_hi"].sel(protocol=prot).item()}
            for name, p in preds.items():
                row[name] = float(p[m].sel(protocol=prot))
            rows.append(row)
    out = pd.DataFrame(rows)
    out.attrs["notes"] = notes
    return out


def structural_check(df: pd.DataFrame, ds: xr.Dataset, n: int, seed: int,
                     choice: str = "auto"):
    """The structural judge (:mod:`antiamp.estimation.structural`) fitted to the log in the
    reading ``choice`` (:data:`antiamp.estimation.predictive.FITS`, or ``auto``: the reading that
    predicts held-out judges' labels, :func:`antiamp.estimation.predictive.select_fit`, as the
    predictive checks use) and run on the engine: adds its parameters, the reading
    (attribute ``structural_reading``) and the predicted metrics
    (``predicted_<metric>`` with ``_lo``, ``_hi``, ``_se`` and ``ppc_p_<metric>``, over
    ``protocol``) to ``ds``; returns (fit, the predicted-against-observed table, the
    selection's table or None)."""
    from . import predictive
    from . import structural as st

    conf = float(ds.attrs["confidence"])
    if "round" in df.columns:
        df = select_round(df, ds.attrs["round"] if ds.attrs["round"] == "final"
                          else int(ds.attrs["round"]))
    deb = df[df["protocol"] == "debate"]
    if "role" in deb.columns and deb["role"].nunique() > 1:
        raise LogError("--simulate: the debate rows mix open and assigned roles; the "
                       "structural judge's lean is read differently in each (estimate them "
                       "as two logs)")
    try:
        f, sel = predictive.fit_for(df, choice, seed)
    except (st.FitError, predictive.CheckError) as exc:
        raise LogError(f"--simulate: {exc}") from None
    pc = st.predictive_check(f, df, ds, conf, n=n, seed=seed)
    tab = f.table(conf)
    ds.coords["param"] = ("param", list(tab.index), {"long_name": "structural parameter"})
    for col, ln in (("value", "structural judge, maximum likelihood"),
                    ("se", "judge-clustered standard error (0: fixed, not identified)"),
                    ("lo", f"{conf:.0%} t interval, lower"),
                    ("hi", f"{conf:.0%} t interval, upper")):
        ds[f"structural_{col}"] = ("param", tab[col].to_numpy(float),
                                   {"long_name": ln, "units": "log-odds"})
    # joint sampling covariance on the natural scale (sigma by the delta method; fixed
    # parameters 0): what antiamp-design draws the robust designs from, the same as the
    # predictive draws' (under a shift prior, raised to the Laplace posterior's where
    # the judge-clustered sandwich falls short: structural.laplace_floor)
    jac = np.array([np.exp(f.params[i]) if n.startswith("log_") else 1.0
                    for i, n in enumerate(f.names)])
    cov = np.zeros((len(tab), len(tab)))
    k = len(f.names)
    cov[:k, :k] = f.draw_cov() * np.outer(jac, jac)
    ds.coords["param_2"] = ("param_2", list(tab.index), {"long_name": "structural parameter"})
    ds["structural_cov"] = (("param", "param_2"), cov,
                            {"long_name": "sampling covariance of the predictive draws "
                                          "(natural scale; 0 for fixed parameters)",
                             "description": "the judge-clustered sandwich; under a shift "
                                            "prior raised to the Laplace posterior's "
                                            "where it falls short"})
    ds["structural_doc"] = ("param", np.array([st.PARAM_DOC.get(k, k) for k in tab.index],
                                              dtype=str), {"long_name": "meaning"})
    for m in dict.fromkeys(pc["metric"]):
        for col, suf, ln in (("predicted", "", "predicted by the fitted structural judge "
                              "(messages model on the engine)"),
                             ("predicted_se", "_se", "Monte Carlo standard error of the "
                              "prediction"),
                             ("predicted_lo", "_lo", f"{conf:.0%} interval over the fit's "
                              "sampling distribution, lower"),
                             ("predicted_hi", "_hi", f"{conf:.0%} interval over the fit's "
                              "sampling distribution, upper"),
                             ("p_value", None, "two-sided p-value of observed = predicted")):
            v = np.full(len(PROTOCOLS), np.nan)
            for i, prot in enumerate(PROTOCOLS):
                r = pc[(pc["protocol"] == prot) & (pc["metric"] == m)]
                if len(r):
                    v[i] = float(r[col].iloc[0])
            name = f"predicted_{m}{suf}" if suf is not None else f"ppc_p_{m}"
            ds[name] = ("protocol", v, {"long_name": f"{m}: {ln}", "units": "1"})
    ds.attrs.update({"structural_notes": "; ".join(f.notes),
                     "structural_loglike": f.loglike, "structural_converged": int(f.converged),
                     "structural_judges": f.n_judges, "structural_rows": f.n_rows,
                     "structural_n_sim": int(n), "structural_reading": f.reading,
                     "structural_prior": f.prior or "none (maximum likelihood)",
                     "structural_reading_by": reading_by(choice, sel)})
    return f, pc, sel


def reading_by(choice: str, sel) -> str:
    """How the structural fit's reading was chosen, in words (stored and printed)."""
    if choice != "auto":
        return "named (--structural-fit)"
    if sel is None or not np.isfinite(sel["score"]).any():
        return "the only reading the log could fit (no judges to hold out)"
    return ("chosen by leave-judges-out label log-likelihood (the fewest parameters within "
            "one judge-clustered SE of the best)")
