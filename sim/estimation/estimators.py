"""Every estimate of a validated oversight log as one Dataset (dims protocol, stratum,
fit): the options, their range checks and :func:`estimate`, which reads the
statistics of :mod:`antiamp.estimation.logstats` per protocol and stratum and the fits of
:mod:`antiamp.estimation.logfit`.
"""

from __future__ import annotations

import numpy as np

from ..lazy import lazy

pd = lazy("pandas")
xr = lazy("xarray")
stats = lazy("scipy.stats")
from dataclasses import dataclass

from .._version import __version__
from .logfit import logistic_fit
from .logs import PROTOCOLS, LogError, amp_by_round, select_round, validate_log
from .logstats import (EVENTS, GRADED, N_BINS, PROB_METRICS, RATIOS, acc_of_codes, amp_of_codes, boot_interval,
                       row_codes, fwc_of_codes, bootstrap, JudgeClusters, resampled_judge_counts,
                       percentile_interval, masked_rate, resampled_counts, code_counts,
                       corrected_amp_counts, graded_rho, probability_metrics, reliability,
                       clustered_difference, wrong_probabilities)
from ..transcripts import SCHEMA_VERSION


@dataclass
class EstimateOptions:
    """The options of :func:`antiamp.estimate.estimate` (``antiamp-estimate``'s flags).

    Parameters
    ----------
    confidence : float
        The intervals' confidence level, in (0, 1) (``--confidence``).
    n_resamples : int
        Bootstrap resamples, in [1, ``MAX_RESAMPLES``] (``--n-resamples``).
    mislabel : float
        A stated rate of mislabelled ground truth, in [0, 0.5): sensitivity
        intervals for Amp (``--mislabel``; two answers only).
    seed : int
        The bootstrap's seed, in [0, 2**63) (``--seed``).
    round : str or int
        With a ``round`` column: the round every estimate reads, ``"final"`` (each
        instance's last) or a round number >= 1 (``--round``).
    cluster : str
        What the bootstrap resamples (``--cluster``): ``"rows"`` (rows within each
        stratum: these judges held fixed) or ``"judge"`` (judges with all their
        rows, from ``judge_id``: other judges drawn from the same population).
    """

    confidence: float = 0.95
    n_resamples: int = 2000
    mislabel: float = 0.0
    seed: int = 0
    #: With a ``round`` column: the round every estimate reads, ``final`` (each
    #: instance's last) or a round number.
    round: object = "final"
    #: What the bootstrap resamples: ``rows`` (within each stratum; these judges held
    #: fixed) or ``judge`` (judges with all their rows, from judge_id: other judges).
    cluster: str = "rows"

#: The values of :attr:`EstimateOptions.cluster`.
CLUSTERS = ("rows", "judge")


def _undefined_notes(out: dict, prot: str, assigned: bool, any_tie: bool,
                     has_p: bool, clustered: bool = False) -> list:
    """Why the fabrication rates, b-hat and the probability metrics of one cell are not
    defined, where they are not (the bootstrap's rates say their own)."""
    notes = []
    nan = lambda k: not np.isfinite(out.get(k, np.nan))  # noqa: E731
    if nan("rho_eq_P"):
        notes.append("rho_eq_P: no row with a wrong protagonist")
    if prot == "debate" and nan("rho_eq_A"):
        notes.append("rho_eq_A: no debate with a right protagonist (so no wrong antagonist)"
                     + (": assigned roles read the wrong debater as the protagonist"
                        if assigned else ""))
    if nan("b_hat"):
        notes.append("b_hat: " + ("not defined with assigned debate roles (a lean toward a "
                                  "role)" if assigned and any_tie else
                                  "no tie (e_P = e_A) in these rows"))
    if has_p:
        side = {"amp_prob": "a wrong protagonist", "fwc_prob": "a right protagonist"}
        for m in PROB_METRICS:
            if nan(m):
                notes.append(f"{m}: no row with p_y and {side.get(m, 'a known truth')}")
            elif nan(f"{m}_lo"):
                notes.append(f"{m}: no judge-clustered t interval (such rows of fewer than "
                             "two judges)" if clustered else
                             f"{m}: no t interval (a stratum has fewer than two such rows)")
    return notes


def cell_estimates(ds_: pd.DataFrame, prot: str, pooled: bool, opts: EstimateOptions, rng,
                   has_v: bool, has_p: bool, judge_ids=None) -> tuple[dict, list, list]:
    """The estimates of one protocol and stratum (``pooled``: every stratum, each
    resampled within itself): (values by variable name, why any is not defined or has
    a Wilson interval, the row codes of each stratum for the difference of Amp; with
    ``judge_ids`` (the log's judges, a pandas Index: the judge-cluster bootstrap) a
    pair (row codes, row judge indices) of each stratum)."""
    out, why = {}, []
    assigned = ("role" in ds_.columns and prot == "debate"
                and bool((ds_["role"] == "assigned").any()))
    groups = [g for _, g in ds_.groupby("stratum", observed=True)] if pooled else [ds_]
    samples = [row_codes(g) for g in groups]
    out["n_known"] = int(sum((s >= 4).sum() for s in samples))
    ks = [s[s >= 4] for s in samples]
    jc = None
    if judge_ids is not None:
        jidx = [judge_ids.get_indexer(g["judge_id"]) for g in groups]
        jc = JudgeClusters([j[s >= 4] for s, j in zip(samples, jidx)], len(judge_ids))
        samples = [(s, j) for s, j in zip(samples, jidx)]
    for n, f in (("amp", amp_of_codes), ("acc", acc_of_codes), ("fwc", fwc_of_codes)):
        iv = bootstrap(ks, f, opts.confidence, opts.n_resamples, rng, RATIOS[n], EVENTS[n],
                       judges=jc)
        out[n], out[f"{n}_lo"], out[f"{n}_hi"] = iv
        out[f"{n}_undefined"] = iv.undefined
        if iv.why:
            why.append(f"{n}: {iv.why}" + (
                " (assigned roles: the protagonist is read as the wrong debater)"
                if assigned and n == "fwc" and iv.method == "" else ""))
    known = ds_["omega"].notna()
    om = ds_["omega"]
    p_false = known & (ds_["a"] != om)
    a_false = known & (ds_["a"] == om)
    out["n_wrong"] = int(p_false.sum())
    out["n_right"] = int(a_false.sum())
    out["rho_eq_P"] = masked_rate(ds_["e_P"] == 1, p_false)
    if prot == "debate":
        out["rho_eq_A"] = masked_rate(ds_["e_A"] == 1, a_false)
    if "t_P" in ds_.columns:
        out["rho_feas_P"] = masked_rate(ds_["t_P"] == 1, p_false & ds_["t_P"].notna())
    if "t_A" in ds_.columns and prot == "debate":
        out["rho_feas_A"] = masked_rate(ds_["t_A"] == 1, a_false & ds_["t_A"].notna())
    if has_v:
        out.update(graded_rho(ds_, prot, opts.confidence))
    if has_p:
        for n, (v, lo, hi) in probability_metrics(ds_, opts.confidence,
                                                   opts.cluster).items():
            out[n], out[f"{n}_lo"], out[f"{n}_hi"] = v, lo, hi
    tie = ds_["e_P"] == ds_["e_A"]
    endorse = ds_["y"] == ds_["a"]
    out["tie_rate"] = tie.mean()
    out["imbalance_rate"] = 1 - tie.mean()
    # b-hat is a lean toward a role: not defined where debate roles were assigned
    open_ = ~((ds_["role"] == "assigned") & (ds_["protocol"] == "debate")) \
        if "role" in ds_.columns else True
    out["b_hat"] = masked_rate(endorse, tie & open_)
    why += _undefined_notes(out, prot, assigned, bool(tie.any()), has_p,
                            judge_ids is not None)
    if "label_blind" in ds_.columns:
        out["b_hat_blind"] = masked_rate(endorse, tie & open_ & (ds_["label_blind"] == 1))
        out["b_hat_labelled"] = masked_rate(endorse, tie & open_ & (ds_["label_blind"] == 0))
        for k, v in (("b_hat_blind", 1), ("b_hat_labelled", 0)):
            if not np.isfinite(out[k]) and np.isfinite(out["b_hat"]):  # (else b_hat's says)
                why.append(f"{k}: no tie (e_P = e_A) with label_blind = {v}")
    if opts.mislabel > 0:
        los, his = [], []
        for e in (0.0, opts.mislabel):
            def st(c, e=e):
                return corrected_amp_counts(c, e)
            _, lo, hi = boot_interval(ks, st, opts.confidence, opts.n_resamples, rng,
                                      judges=jc)
            los.append(lo)
            his.append(hi)
        if np.isfinite(los).any():
            out["amp_mislabel_lo"] = np.nanmin(los)
            out["amp_mislabel_hi"] = np.nanmax(his)
    return out, why, samples


def amp_difference(consult: list, debate: list, opts: EstimateOptions, rng,
                   n_judges: int = 0) -> tuple[dict, str]:
    """Amp(consult) - Amp(debate) from the row codes of each protocol's strata: the
    difference, its stratified bootstrap interval (consultancy and debate rows are
    independent samples: each resampled) and the one-sided p-value of Amp(debate) >=
    Amp(consult); and why any is not defined.

    With ``n_judges`` (the judge-cluster bootstrap; ``consult`` and ``debate`` hold
    (row codes, row judge indices) per stratum) one draw of judges serves both
    protocols, so the difference keeps the pairing of the judges who judged both."""
    tables = None
    if n_judges:
        tables = [JudgeClusters([j[s >= 4] for s, j in side], n_judges).table(
            [s[s >= 4] for s, _ in side]) for side in (consult, debate)]
        consult, debate = [s for s, _ in consult], [s for s, _ in debate]
    cs = [code_counts(s[s >= 4]) for s in consult]
    dsm = [code_counts(s[s >= 4]) for s in debate]
    if any(c.sum() < 2 for c in cs + dsm):
        return {}, "not tested: a stratum of a protocol has fewer than two rows with a known truth"
    if tables is not None and int(((tables[0] + tables[1]).sum(axis=1) > 0).sum()) < 2:
        return {}, "not tested: the rows are one judge's (no judge-cluster bootstrap)"
    point = float(amp_of_codes(np.sum(cs, axis=0)) - amp_of_codes(np.sum(dsm, axis=0)))
    if tables is not None:
        rc, rd = resampled_judge_counts(tables, opts.n_resamples, rng)
        dist = amp_of_codes(rc) - amp_of_codes(rd)
    else:
        dist = (amp_of_codes(resampled_counts(cs, opts.n_resamples, rng))
                - amp_of_codes(resampled_counts(dsm, opts.n_resamples, rng)))
    lo, hi = percentile_interval(dist, opts.confidence)
    ok = np.isfinite(dist)
    bad = float(1 - ok.mean())
    se = float(np.std(dist[ok], ddof=1)) if ok.sum() > 1 else 0.0
    out = {"amp_diff": point, "amp_diff_lo": lo, "amp_diff_hi": hi, "amp_diff_undefined": bad,
           "p_value": float(stats.norm.sf(point / se)) if se > 0 else np.nan}
    if not np.isfinite(point):
        return out, "not tested: Amp is not defined in a protocol (no wrong protagonist)"
    if not se > 0:
        # Every row of each protocol agrees, so every resample does: Newcombe's hybrid
        # score interval (from the Wilson intervals of the two rates; statsmodels)
        # instead of an interval of no width, as each rate gets its Wilson interval.
        from statsmodels.stats.proportion import confint_proportions_2indep

        (kc, nc), (kd, nd) = (RATIOS["amp"](np.sum(c, axis=0)) for c in (cs, dsm))
        lo, hi = confint_proportions_2indep(kc, nc, kd, nd, method="newcomb",
                                            compare="diff", alpha=1 - opts.confidence)
        out["amp_diff_lo"], out["amp_diff_hi"] = min(float(lo), point), max(float(hi), point)
        return out, ("every row of each protocol agrees, so every resample does: Newcombe's "
                     "interval; no p-value")
    if bad > 0:
        return out, (f"Amp is not defined in {bad:.1%} of resamples (no wrong protagonist "
                     "drawn); the interval and p-value are over the others")
    return out, ""


def logistic_fits(df: pd.DataFrame) -> dict:
    """:func:`antiamp.estimation.logfit.logistic_fit` of the consultancy rows, the debate rows and
    all rows."""
    fits = {}
    for name, sub in (("consult", df[df["protocol"] == "consult"]),
                      ("debate", df[df["protocol"] == "debate"]), ("pooled", df)):
        fits[name] = logistic_fit(sub) if len(sub) else dict(mu=np.nan, mu_se=np.nan,
                                                              kappa=np.nan, kappa_se=np.nan,
                                                              graded=False, regressor="none",
                                                              note="no rows")
    return fits


def _cell_variables(out: dict, why: list, diff: dict, diff_why: list,
                    opts: EstimateOptions, n_judges: int = 0) -> dict:
    """The Dataset variables of the cells (protocol, stratum) and of the difference of
    Amp (stratum), with their long names."""
    dims = ("protocol", "stratum")
    long = {
        "amp": "Amp-hat = Pr(y = a | a != omega)", "acc": "accuracy Pr(y = omega)",
        "fwc": "follow-when-correct Pr(y = a | a = omega)",
        "rho_eq_P": "equilibrium fabrication rate, protagonist",
        "rho_eq_A": "equilibrium fabrication rate, antagonist",
        "rho_feas_P": "feasibility rate (forced attempts), protagonist",
        "rho_feas_A": "feasibility rate (forced attempts), antagonist",
        "b_hat": "tie bias Pr(y = a | e_P = e_A)", "b_hat_blind": "tie bias, label-blind judges",
        "b_hat_labelled": "tie bias, judges told the roles", "tie_rate": "Pr(e_P = e_A)",
        "imbalance_rate": "Pr(e_P != e_A)", "n_rows": "rows", "n_known": "rows with known omega",
        "amp_mislabel_lo": f"Amp sensitivity interval, lower (mislabel rate up to {opts.mislabel})",
        "amp_mislabel_hi": f"Amp sensitivity interval, upper (mislabel rate up to {opts.mislabel})",
        "n_wrong": "rows with a known truth and a wrong protagonist",
        "n_right": "rows with a known truth and a right protagonist",
        **{f"{m}_undefined": f"share of bootstrap resamples in which {m} was not defined (left "
                             "out of its interval)" for m in ("amp", "acc", "fwc")},
        **PROB_METRICS, **GRADED,
    }
    boot = (f"judge-cluster bootstrap ({n_judges} judges resampled with all their rows)"
            if n_judges else "bootstrap")
    if n_judges:
        for k in ("amp_mislabel_lo", "amp_mislabel_hi"):
            long[k] += f", {boot}"
    data = {}
    for k, v in out.items():
        base = k[:-3] if k.endswith(("_lo", "_hi")) and not k.startswith("amp_mislabel") else k
        ln = long.get(k, long.get(base, k))
        how = ("judge-clustered t interval (CR1 standard error, t with judges - 1 df)"
               if n_judges and base in PROB_METRICS else "t interval" if base in PROB_METRICS else
               "judge-clustered delta-method" if base in GRADED else boot)
        if k.endswith("_lo") and not k.startswith("amp_mislabel"):
            ln = f"{ln}, {opts.confidence:.0%} {how} lower bound"
        if k.endswith("_hi") and not k.startswith("amp_mislabel"):
            ln = f"{ln}, {opts.confidence:.0%} {how} upper bound"
        data[k] = (dims, v, {"long_name": ln, "units": "1"})
    data["notes"] = (dims, np.array([["; ".join(w) for w in row] for row in why], dtype=str),
                     {"long_name": "why a value is not defined, or its interval is not the "
                                   "bootstrap's"})
    for k, v in diff.items():
        data[k] = (("stratum",), v, {"long_name": {
            "amp_diff": "Amp(consult) - Amp(debate)",
            "amp_diff_lo": "lower bound" + (f", paired {boot}" if n_judges else ""),
            "amp_diff_hi": "upper bound" + (f", paired {boot}" if n_judges else ""),
            "p_value": "one-sided p-value of H0: Amp(debate) >= Amp(consult)",
            "amp_diff_undefined": "share of resamples in which the difference was not "
                                  "defined (left out)",
            "amp_prob_diff": "amp_prob(consult) - amp_prob(debate) (mean p_y when a is wrong)",
            "amp_prob_diff_lo": f"lower bound, {opts.confidence:.0%} judge-clustered t "
                                "interval (CR1, clustered jointly: a judge's rows in both "
                                "protocols; t with judges - 1 df)",
            "amp_prob_diff_hi": f"upper bound, {opts.confidence:.0%} judge-clustered t "
                                "interval (CR1, clustered jointly: a judge's rows in both "
                                "protocols; t with judges - 1 df)"}[k], "units": "1"})
    data["amp_diff_notes"] = (("stratum",), np.array(diff_why, dtype=str),
                              {"long_name": "why the difference or its test is not defined"})
    return data


def _fit_variables(fits: dict, opts: EstimateOptions) -> dict:
    """The Dataset variables of the logistic fits (dim fit)."""
    data = {}
    for f in fits.values():
        f.setdefault("df", np.nan)
    crit = {f: (stats.t.ppf(0.5 + opts.confidence / 2, fits[f]["df"])
                if np.isfinite(fits[f]["df"]) else np.nan) for f in fits}
    for k in ("mu", "kappa"):
        for side, sgn in (("lo", -1), ("hi", 1)):
            data[f"{k}_tilde_{side}"] = (("fit",), np.array(
                [fits[f][k] + sgn * crit[f] * fits[f][f"{k}_se"] for f in ("consult", "debate", "pooled")]),
                {"long_name": f"{opts.confidence:.0%} interval ({side}), t with (judges - 1) df"})
    for k in ("mu", "mu_se", "kappa", "kappa_se"):
        data[f"{k}_tilde" if not k.endswith("_se") else f"{k[:-3]}_tilde_se"] = (
            ("fit",), np.array([fits[f][k] for f in ("consult", "debate", "pooled")]),
            {"long_name": {"mu": "effective bias mu~ (lambda = 1)", "kappa":
                           "effective salience kappa~ (lambda = 1)"}[k.replace("_se", "")]
             + (", judge-clustered standard error" if k.endswith("_se") else "")})
    for k in ("mu", "mu_se", "kappa", "kappa_se"):
        name = f"{k[:-3]}_tilde_firth_se" if k.endswith("_se") else f"{k}_tilde_firth"
        data[name] = (("fit",), np.array([fits[f].get(f"firth_{k}", np.nan) for f in
                                          ("consult", "debate", "pooled")]),
                      {"long_name": f"{k.replace('_se', '')}~, Firth's penalised estimate where "
                                    "the data are separated (no maximum-likelihood estimate)"
                                    + (", judge-clustered standard error" if k.endswith("_se")
                                       else "")})
    data["regressor"] = (("fit",), np.array([fits[f]["regressor"] for f in
                                             ("consult", "debate", "pooled")], dtype=str),
                         {"long_name": "the evidence regressor x each fit used"})
    return data


def reliability_variables(df: pd.DataFrame) -> dict:
    """The reliability table of the judges' probabilities per protocol (dims protocol,
    p_bin): :func:`antiamp.estimation.logstats.reliability`."""
    data = {}
    rel = [reliability(df[df["protocol"] == prot]) for prot in PROTOCOLS]
    for j, (k, ln) in enumerate((("reliability_n", "rows in the p_y bin"),
                                 ("reliability_p", "mean p_y in the bin"),
                                 ("reliability_freq", "share of the bin with a right"))):
        data[k] = (("protocol", "p_bin"), np.array([r[j] for r in rel]),
                   {"long_name": ln, "units": "1"})
    # assigned debates are read from both sides (logstats.reliability)
    data["reliability_both_sides"] = ("protocol", np.array([int(
        "role" in df.columns and prot == "debate" and bool(
            ((df["role"] == "assigned") & (df["protocol"] == prot)).any()))
        for prot in PROTOCOLS]), {"long_name": "1: each debate is in the reliability "
                                                "table twice, the judge's probability for "
                                                "the right and for the wrong debater"})
    return data


def estimate(df: pd.DataFrame, opts: EstimateOptions | None = None, *,
             cluster: str | None = None) -> xr.Dataset:
    """All estimates of a log as a Dataset (dims protocol, stratum, fit): a log as
    :func:`antiamp.estimate.load_log` returns it, or a DataFrame in the log schema, which is
    checked first (``validate_log``: a ``LogError`` names the column and
    the row).  ``cluster`` (``rows`` or ``judge``), if given, replaces ``opts.cluster``:
    what the bootstrap resamples."""
    opts = opts or EstimateOptions()
    if cluster is not None:
        from dataclasses import replace

        opts = replace(opts, cluster=cluster)
    check_options(opts)
    if "K" not in df.attrs:  # not read by load_log: the user's own frame, checked here
        df = validate_log(df)
    if opts.mislabel > 0 and df.attrs.get("K", 2) > 2:
        raise LogError(f"the mislabel correction assumes two answers (a mislabelled truth is "
                       f"the other answer); the log has {df.attrs['K']}")
    if opts.cluster == "judge":
        check_judges(df)
    by_round = amp_by_round(df, opts.confidence, opts.cluster) if "round" in df.columns else None
    if "round" in df.columns:
        df = select_round(df, opts.round)
    judge_ids = None
    if opts.cluster == "judge":
        judge_ids = pd.Index(pd.unique(df["judge_id"]))
        if len(judge_ids) < 2:  # (round selection left one)
            check_judges(df)
    rng = np.random.default_rng(opts.seed)
    strata = sorted(df["stratum"].unique().tolist())
    labels = strata + (["all"] if len(strata) > 1 or strata != ["all"] else [])
    if "all" not in labels:
        labels.append("all")
    labels = list(dict.fromkeys(labels))
    S, P = len(labels), len(PROTOCOLS)
    names = ["amp", "acc", "fwc"]
    out = {f"{n}{suf}": np.full((P, S), np.nan) for n in names for suf in ("", "_lo", "_hi")}
    for n in ("rho_eq_P", "rho_eq_A", "rho_feas_P", "rho_feas_A", "b_hat", "b_hat_blind",
              "b_hat_labelled", "tie_rate", "imbalance_rate", "n_rows", "n_known",
              "amp_mislabel_lo", "amp_mislabel_hi", "n_wrong", "n_right", "amp_undefined",
              "acc_undefined", "fwc_undefined"):
        out[n] = np.full((P, S), np.nan)
    # why a value of a cell is not defined, or its interval is not the bootstrap's
    why = [[[] for _ in labels] for _ in PROTOCOLS]
    has_v = "v_P" in df.columns and bool(df["v_P"].notna().any())
    if has_v:
        for n in (*GRADED, "rho_graded_lo", "rho_graded_hi"):
            out[n] = np.full((P, S), np.nan)
    has_p = "p_y" in df.columns and bool(df["p_y"].notna().any())
    if has_p:
        for n in PROB_METRICS:
            for suf in ("", "_lo", "_hi"):
                out[f"{n}{suf}"] = np.full((P, S), np.nan)
    diff = {k: np.full(S, np.nan) for k in ("amp_diff", "amp_diff_lo", "amp_diff_hi", "p_value",
                                            "amp_diff_undefined")}
    diff_why = ["" for _ in labels]
    code_cache = {}
    for pi_, prot in enumerate(PROTOCOLS):
        dp = df[df["protocol"] == prot]
        for si, lab in enumerate(labels):
            ds_ = dp if lab == "all" else dp[dp["stratum"] == lab]
            out["n_rows"][pi_, si] = len(ds_)
            if len(ds_) == 0:
                continue
            values, notes, code_cache[prot, lab] = cell_estimates(
                ds_, prot, lab == "all", opts, rng, has_v, has_p, judge_ids)
            for k, v in values.items():
                out[k][pi_, si] = v
            why[pi_][si] = notes
    # Amp(debate) < Amp(consult): the difference, its bootstrap interval, a one-sided p.
    for si, lab in enumerate(labels):
        if ("consult", lab) in code_cache and ("debate", lab) in code_cache:
            values, diff_why[si] = amp_difference(code_cache["consult", lab],
                                                  code_cache["debate", lab], opts, rng,
                                                  len(judge_ids) if judge_ids is not None
                                                  else 0)
            for k, v in values.items():
                diff[k][si] = v
    if has_p and opts.cluster == "judge":
        # amp_prob(consult) - amp_prob(debate), clustered jointly: a judge's rows in both
        for k in ("amp_prob_diff", "amp_prob_diff_lo", "amp_prob_diff_hi"):
            diff[k] = np.full(S, np.nan)
        for si, lab in enumerate(labels):
            sides = [df[(df["protocol"] == prot) & ((df["stratum"] == lab) if lab != "all"
                                                    else True)] for prot in PROTOCOLS]
            (x1, g1), (x2, g2) = (wrong_probabilities(d) for d in sides)
            (diff["amp_prob_diff"][si], diff["amp_prob_diff_lo"][si],
             diff["amp_prob_diff_hi"][si]) = clustered_difference(x1, g1, x2, g2,
                                                                  opts.confidence)
    if len(strata) == 1 and labels == [strata[0], "all"]:
        # One stratum: it holds the same rows as "all", so it reports the same values
        # (the pooled ones), not a second bootstrap of the same rows.
        for v in out.values():
            v[:, 0] = v[:, 1]
        for v in diff.values():
            v[0] = v[1]
        for w in why:
            w[0] = list(w[1])
        diff_why[0] = diff_why[1]
    fits = logistic_fits(df)
    n_judges = len(judge_ids) if judge_ids is not None else 0
    data = {**_cell_variables(out, why, diff, diff_why, opts, n_judges),
            **_fit_variables(fits, opts)}
    if has_p:
        data.update(reliability_variables(df))
    if by_round is not None:
        rounds, rv = by_round
        bounds = ("Wilson" if not n_judges else "judge-clustered design-effect Wilson "
                  "(n / deff rows, deff from the CR1 variance; t with judges - 1 df)")
        for k, ln in (("amp_round", "Amp = Pr(y = a | a wrong) after each round (all rows "
                                    "of that round)"),
                      ("amp_round_lo", f"{opts.confidence:.0%} {bounds} lower bound"),
                      ("amp_round_hi", f"{opts.confidence:.0%} {bounds} upper bound"),
                      ("n_round", "rows with a wrong protagonist in that round")):
            data[k] = (("protocol", "round"), rv[k], {"long_name": ln, "units": "1"})
    coords = {"protocol": list(PROTOCOLS), "stratum": labels,
              "fit": ["consult", "debate", "pooled"]}
    if by_round is not None:
        coords["round"] = ("round", by_round[0], {"long_name": "round"})
    if has_p:
        coords["p_bin"] = ("p_bin", (np.arange(N_BINS) + 0.5) / N_BINS,
                           {"long_name": "centre of the p_y bin"})
    ds = xr.Dataset(data, coords=coords)
    from antiamp.provenance import global_attrs

    ds.attrs.update({
        **global_attrs("antiamp-estimate: parameters and amplification from an oversight log",
                       f"antiamp {__version__}, estimation from an oversight log (antiamp-estimate)"),
        "antiamp_version": __version__, "confidence": opts.confidence,
        "n_resamples": opts.n_resamples, "mislabel": opts.mislabel, "seed": opts.seed,
        "graded_evidence": int(fits["pooled"]["graded"]),
        "fit_notes": "; ".join(f"{k}: {v['note']}" for k, v in fits.items() if v["note"]) or "",
        "log_notes": "; ".join(df.attrs.get("notes", [])
                               + ([f"rounds: every estimate reads round {opts.round}"
                                   + (" (each instance's last)" if opts.round == "final"
                                      else "")] if by_round is not None else [])),
        "round": str(opts.round),
        "log_schema": SCHEMA_VERSION,
        "n_answers": int(df.attrs.get("K", 2)),
        # Pr(the protagonist is right) over rows whose protagonist chose or was given
        # its answer: an assigned debate is read with the wrong debater as protagonist
        "p_correct": float((df["a"] == df["omega"])[df["omega"].notna() & ~(
            ((df["protocol"] == "debate") & (df["role"] == "assigned")) if "role" in df.columns
            else pd.Series(False, index=df.index))].mean()),
        "pi": float(df["omega"].mean()),
    })
    if n_judges:  # (the row bootstrap's store is as it always was)
        ds.attrs.update({"bootstrap": "judges", "n_judges": n_judges, "judge_clustered": (
            "amp, acc, fwc, amp_diff, amp_mislabel: judge-cluster bootstrap"
            + (f"; {', '.join(PROB_METRICS)}, amp_prob_diff: CR1 t intervals (judges - 1 df)"
               if has_p else "")
            + ("; amp_round: design-effect Wilson intervals" if by_round is not None else "")
            + "; mu~, kappa~, rho_graded: judge-clustered standard errors (in either mode)")})
    return ds


def check_judges(df: pd.DataFrame) -> None:
    """LogError unless the log names at least two judges (the judge-cluster bootstrap)."""
    if not df.attrs.get("judges_logged", "judge_id" in df.columns):
        raise LogError("cluster=judge (--cluster judge) resamples judges: the log needs a "
                       "judge_id column (the judge of each row); it has none")
    n = int(df["judge_id"].nunique())
    if n < 2:
        raise LogError(f"cluster=judge (--cluster judge) resamples judges: the log needs "
                       f"at least 2 distinct judge_id values; it has {n}")


MAX_RESAMPLES = 10_000_000  # the bootstrap holds [resamples, 8] counts per statistic


def check_options(opts: EstimateOptions) -> None:
    """Range checks of the estimation options (LogError names the option)."""
    import numbers

    if isinstance(opts.n_resamples, bool) or not isinstance(opts.n_resamples, numbers.Integral) \
            or not 1 <= opts.n_resamples <= MAX_RESAMPLES:
        raise LogError(f"n_resamples must be an integer in [1, {MAX_RESAMPLES:,}], "
                       f"got {opts.n_resamples!r}")
    if isinstance(opts.seed, bool) or not isinstance(opts.seed, numbers.Integral) \
            or not 0 <= opts.seed < 2 ** 63:
        raise LogError(f"seed must be an integer in [0, 2**63), got {opts.seed!r}")
    if not (isinstance(opts.confidence, numbers.Real) and 0 < opts.confidence < 1):
        raise LogError(f"confidence must lie in (0, 1), got {opts.confidence!r}")
    r = opts.round
    if r != "final" and (isinstance(r, bool) or not isinstance(r, numbers.Integral) or r < 1):
        raise LogError(f"round must be final or a round number >= 1, got {r!r}")
    if not (isinstance(opts.mislabel, numbers.Real) and 0 <= opts.mislabel < 0.5):
        raise LogError(f"mislabel rate must lie in [0, 0.5), got {opts.mislabel!r}")
    if not isinstance(opts.cluster, str) or opts.cluster not in CLUSTERS:
        raise LogError(f"cluster must be one of {', '.join(CLUSTERS)}, got {opts.cluster!r}")

