"""What antiamp-estimate prints and draws: the report of the estimates, the
structural check's table, the estimates figure and the calibration figure.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..lazy import lazy
from .logs import PROTOCOLS

pd = lazy("pandas")
xr = lazy("xarray")


def format_report(ds: xr.Dataset, source: str) -> str:
    lines = [f"antiamp-estimate {ds.attrs['antiamp_version']}: {source}",
             f"{ds.attrs['confidence']:.0%} stratified bootstrap intervals, "
             f"{ds.attrs['n_resamples']} resamples"]
    if ds.attrs.get("bootstrap") == "judges":
        lines[1] = (f"{ds.attrs['confidence']:.0%} judge-cluster bootstrap intervals "
                    f"({ds.attrs['n_judges']} judges resampled with all their rows, paired "
                    f"across protocols), {ds.attrs['n_resamples']} resamples")
        also = [w for k, w in (("amp_prob", "the probabilities' t intervals"),
                               ("amp_round", "the rounds' Wilson intervals")) if k in ds]
        if also:
            lines[1] += (f"; {' and '.join(also)} judge-clustered (CR1 standard errors, t "
                         "with judges - 1 df)")
    judges = ds.attrs.get("bootstrap") == "judges"
    if ds.attrs.get("log_notes"):
        lines.append(f"read: {ds.attrs['log_notes']}")
    for prot in PROTOCOLS:  # said plainly, not left out of the tables without a word
        if int(ds.n_rows.sel(protocol=prot).max()) == 0:
            lines.append(f"{prot}: no rows in the log; nothing is estimated for it")
    lines.append("")
    labs = list(ds.stratum.values)
    if len(labs) == 2 and labs[1] == "all" and labs[0] != "all":
        labs = labs[:1]  # one stratum: "all" holds the same rows and values
    for lab in labs:
        lines.append(f"stratum {lab}" + (" (the only one: every row)" if len(labs) == 1
                                          and lab != "all" else "") + ":")
        for prot in PROTOCOLS:
            r = ds.sel(stratum=lab, protocol=prot)
            if r.n_rows.item() == 0:
                continue
            f = lambda n: (f"{r[n].item():.4f} [{r[n + '_lo'].item():.4f}, "  # noqa: E731
                           f"{r[n + '_hi'].item():.4f}]")
            lines.append(f"  {prot:<8} n={int(r.n_rows.item()):,} (truth known {int(r.n_known.item()):,})"
                         f"  Amp {f('amp')}  acc {f('acc')}  fwc {f('fwc')}")
            extra = [f"rho_eq_P {r.rho_eq_P.item():.4f}"]
            if prot == "debate":
                extra.append(f"rho_eq_A {r.rho_eq_A.item():.4f}")
            for n in ("rho_feas_P", "rho_feas_A", "b_hat_blind", "b_hat_labelled"):
                if np.isfinite(r[n].item()):
                    extra.append(f"{n} {r[n].item():.4f}")
            extra += [f"b_hat {r.b_hat.item():.4f}", f"ties {r.tie_rate.item():.4f}",
                      f"imbalance {r.imbalance_rate.item():.4f}"]
            if "rho_graded" in ds and np.isfinite(r.v_wrong.item()):
                extra.append(f"graded evidence: wrong sides {r.v_wrong.item():.4g}, right "
                             f"sides {r.v_right.item():.4g}, rho_graded "
                             f"{r.rho_graded.item():.4f} [{r.rho_graded_lo.item():.4f}, "
                             f"{r.rho_graded_hi.item():.4f}]")
            if np.isfinite(r.amp_mislabel_lo.item()):
                extra.append(f"Amp under mislabel <= {ds.attrs['mislabel']}: "
                             f"[{r.amp_mislabel_lo.item():.4f}, {r.amp_mislabel_hi.item():.4f}]")
            lines.append("           " + ", ".join(extra))
            if "amp_prob" in ds and np.isfinite(r.brier.item()):
                lines.append(f"           judge probabilities p_y ({ds.attrs['confidence']:.0%} "
                             f"{'judge-clustered ' if judges else ''}t intervals): Amp {f('amp_prob')}, fwc {f('fwc_prob')}, Brier "
                             f"{f('brier')}, log loss {r.log_loss.item():.4f}, exact 0.5 "
                             f"{r.tie_prob.item():.4f}")
            if "notes" in ds and str(r["notes"].item()):
                lines.append(f"           notes: {r['notes'].item()}")
        dd = ds.sel(stratum=lab)
        why = str(dd.amp_diff_notes.item()) if "amp_diff_notes" in ds else ""
        if np.isfinite(dd.amp_diff.item()):
            lines.append(f"  Amp(consult) - Amp(debate) = {dd.amp_diff.item():.4f} "
                         f"[{dd.amp_diff_lo.item():.4f}, {dd.amp_diff_hi.item():.4f}], "
                         f"one-sided p = {dd.p_value.item():.3g}" + (f" ({why})" if why else ""))
        elif why:
            lines.append(f"  Amp(consult) - Amp(debate): {why}")
        if "amp_prob_diff" in ds and np.isfinite(dd.amp_prob_diff_lo.item()):
            lines.append(f"  amp_prob(consult) - amp_prob(debate) = {dd.amp_prob_diff.item():.4f} "
                         f"[{dd.amp_prob_diff_lo.item():.4f}, {dd.amp_prob_diff_hi.item():.4f}] "
                         "(judge-clustered t interval, a judge's rows in both protocols)")
    if "amp_round" in ds:
        lines += ["", "Amp after each round (all instances' rows of that round, "
                  + ("design-effect Wilson intervals, judge-clustered):" if judges else
                     "Wilson intervals):")]
        for prot in PROTOCOLS:
            r = ds.sel(protocol=prot)
            cells = [f"{int(k)}: {v:.3f} [{lo:.3f}, {hi:.3f}] n={int(n)}" for k, v, lo, hi, n in
                     zip(ds["round"].values, r.amp_round.values, r.amp_round_lo.values,
                         r.amp_round_hi.values, r.n_round.values) if n > 0]
            if cells:
                lines.append(f"  {prot:<8} " + "; ".join(cells))
    lines += ["", "logistic fit Pr(y = a) = sigma(mu~ + kappa~ x), judge-clustered standard "
              "errors; each fit names its evidence regressor x:"]
    for fit in ds.fit.values:
        r = ds.sel(fit=fit)
        reg = (str(r.regressor.item()) if "regressor" in ds else
               ("v_P - v_A" if ds.attrs["graded_evidence"] else "e_P - e_A"))
        lines.append(f"  {fit:<8} x = {reg:<10} mu~ = {r.mu_tilde.item():.4f} "
                     f"({r.mu_tilde_se.item():.4f}) "
                     f"[{r.mu_tilde_lo.item():.4f}, {r.mu_tilde_hi.item():.4f}]   "
                     f"kappa~ = {r.kappa_tilde.item():.4f} ({r.kappa_tilde_se.item():.4f}) "
                     f"[{r.kappa_tilde_lo.item():.4f}, {r.kappa_tilde_hi.item():.4f}]")
        if "mu_tilde_firth" in ds and np.isfinite(r.mu_tilde_firth.item()):
            lines.append(f"  {'':<8} separated: Firth   mu~ = {r.mu_tilde_firth.item():.4f} "
                         f"({r.mu_tilde_firth_se.item():.4f})   kappa~ = "
                         f"{r.kappa_tilde_firth.item():.4f} ({r.kappa_tilde_firth_se.item():.4f})")
    if ds.attrs["fit_notes"]:
        lines.append(f"  notes: {ds.attrs['fit_notes']}")
    return "\n".join(lines)


def plot_estimates(ds: xr.Dataset, path: Path, pred: pd.DataFrame | None = None) -> Path:
    """Observed metrics per stratum and protocol with their intervals; with ``pred``
    (``--simulate``) the structural judge's prediction beside the pooled value, with
    its interval over the fit's uncertainty, and the seed-000 judges' as crosses."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labs = list(ds.stratum.values)
    if len(labs) == 2 and "all" in labs:  # one stratum: "all" holds the same rows
        labs = [f"{[s for s in labs if s != 'all'][0]} (all rows)"]
        ds = ds.sel(stratum=["all"])
    fig, axs = plt.subplots(1, 3, figsize=(10.5, 3.9))
    undefined = 0
    colors = {"consult": "#d95f02", "debate": "#1b9e77"}
    for ax, m in zip(axs, ("amp", "acc", "fwc")):
        for k, prot in enumerate(PROTOCOLS):
            r = ds[m].sel(protocol=prot)
            lo, hi = ds[f"{m}_lo"].sel(protocol=prot), ds[f"{m}_hi"].sel(protocol=prot)
            x = np.arange(len(labs)) + (k - 0.5) * 0.36
            # (a percentile interval may exclude its estimate: no negative bar is drawn)
            ax.errorbar(x, r.values, yerr=np.maximum([r.values - lo.values,
                                                      hi.values - r.values], 0.0), fmt="o",
                        color=colors[prot], label=f"{prot}, observed", capsize=3)
            # a value or interval that is not defined is said where it would be drawn
            for xi, v, lv in zip(x, r.values, lo.values):
                if not (np.isfinite(v) and np.isfinite(lv)) and ds.n_rows.sel(
                        protocol=prot).values[list(x).index(xi)] > 0:
                    undefined += 1
                    ax.text(xi, 0.5, "not defined" if not np.isfinite(v) else "no interval",
                            rotation=90, ha="center", va="center", fontsize=7,
                            color=colors[prot], transform=ax.get_xaxis_transform())
            if pred is None:
                continue
            row = pred[(pred.protocol == prot) & (pred.metric == m)]
            if "predicted" in pred.columns and len(row) and np.isfinite(row["predicted"].item()):
                v = row["predicted"].item()
                # (a point outside its interval over the fit's draws, as a fit that
                # did not converge gives, draws no bar on that side)
                ax.errorbar([x[-1] + 0.12], [v], yerr=[[max(v - row["predicted_lo"].item(), 0)],
                                                       [max(row["predicted_hi"].item() - v, 0)]],
                            fmt="D", ms=5, color="black", capsize=3, zorder=3,
                            label="structural judge, predicted" if k == 0 else None)
            for j, col in enumerate([c for c in pred.columns if "(" in c]):
                if len(row) and np.isfinite(row[col].item()):
                    ax.scatter([x[-1] + 0.12], [row[col].item()], marker=["x", "+"][j % 2],
                               color="0.45", s=40, zorder=3,
                               label=f"seed-000 {col}" if k == 0 else None)
        ax.set_xticks(range(len(labs)), labs)
        ax.set_xlim(-0.6, len(labs) - 0.4)  # every stratum's label inside, NaN or not
        ax.set_title({"amp": "Amp = Pr(y = a | a ≠ ω)", "acc": "accuracy",
                      "fwc": "follow-when-correct"}[m], fontsize=10)
        ax.set_xlabel("stratum")
    handles, labels = axs[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(len(labels), 3), fontsize=7,
               frameon=False)
    how = ("judge-cluster bootstrap" if ds.attrs.get("bootstrap") == "judges"
           else "stratified bootstrap")
    fig.suptitle(f"oversight log estimates, {ds.attrs['confidence']:.0%} {how} "
                 "intervals (Wilson where every row agrees)"
                 + ("\n'not defined': no row of the event the rate conditions on (the "
                    "report says why)" if undefined else ""), fontsize=10)
    fig.tight_layout(rect=(0, 0.05 + 0.04 * (len(labels) > 3), 1, 1))
    from ..outputs_policy import save_figure

    save_figure(fig, path, dpi=120)
    plt.close(fig)
    return path


def plot_reliability(ds: xr.Dataset, path: Path) -> list:
    """Reliability diagram of the judges' probabilities p_y, one panel per protocol:
    the share of rows whose protagonist is right against the mean p_y per bin (marker
    area by rows), the diagonal for perfect calibration, Brier score in the title."""
    from ..plotting import panel_grid, save

    fig, axs = panel_grid(len(PROTOCOLS), height=3.2)
    for ax, prot in zip(axs, PROTOCOLS):
        r = ds.sel(protocol=prot)
        n = r.reliability_n.values
        ok = n > 0
        ax.plot([0, 1], [0, 1], color="0.6", lw=0.8, ls="--")
        # Wilson intervals per bin (statsmodels): small bins say little
        from statsmodels.stats.proportion import proportion_confint

        k = np.round(r.reliability_freq.values[ok] * n[ok])
        lo, hi = proportion_confint(k, n[ok], alpha=1 - float(ds.attrs["confidence"]),
                                    method="wilson")
        fr = r.reliability_freq.values[ok]
        ax.errorbar(r.reliability_p.values[ok], fr, yerr=np.maximum([fr - lo, hi - fr], 0.0),
                    fmt="none", ecolor="C0", elinewidth=0.8, capsize=2, alpha=0.7)
        ax.scatter(r.reliability_p.values[ok], r.reliability_freq.values[ok],
                   s=12 + 150 * n[ok] / max(n.max(), 1), color="C0", alpha=0.8)
        ax.plot(r.reliability_p.values[ok], r.reliability_freq.values[ok], color="C0", lw=0.8)
        a = ds.sel(protocol=prot, stratum="all")
        both = "reliability_both_sides" in ds and bool(r.reliability_both_sides.item())
        ax.set_title(f"{prot}: Brier {a.brier.item():.3f}, log loss {a.log_loss.item():.3f}, "
                     + (f"{int(n.sum())} sides (2 a debate)" if both
                        else f"{int(n.sum())} rows"), fontsize=9)
        ax.set_xlim(0, 1)
        ax.set_ylim(-0.02, 1.02)
        if both:  # assigned roles: the protagonist is the wrong debater by construction
            ax.set_xlabel("judge's probability for a debater (bin mean; both debaters)",
                          fontsize=8)
            ax.set_ylabel("share of those debaters who were right", fontsize=8)
        else:
            ax.set_xlabel("judge's probability for the protagonist's answer (bin mean)",
                          fontsize=8)
            ax.set_ylabel("share of rows with the protagonist right", fontsize=8)
    fig.suptitle("calibration of the judges' probabilities (dashed: perfect calibration; "
                 f"marker area: rows; bars: {float(ds.attrs['confidence']):.0%} Wilson "
                 "intervals)", fontsize=9)
    return save(fig, path)


def format_check(f, pc: pd.DataFrame, conf: float) -> str:
    """The structural fit and its predictive check, as printed."""
    tab = f.table(conf)
    lines = ["", "structural judge (reads the argument: z = logit p_y = mu + kappa_v x + "
             "quality gap; messages model, decision=favoured), maximum likelihood, "
             f"judge-clustered SEs, {f.n_rows:,} rows, {f.n_judges} judges; reading "
             f"{f.reading} (stored for antiamp-design):"]
    for k, r in tab.iterrows():
        fixed = " (fixed)" if r["se"] == 0 else ""
        lines.append(f"  {k:<10} {r['value']:8.4f} ({r['se']:.4f}) [{r['lo']:.4f}, "
                     f"{r['hi']:.4f}]{fixed}")
    lines.append("  notes: " + "; ".join(f.notes))
    lines += ["", f"predicted (the fitted judge on the engine, {conf:.0%} interval over the "
              "fit's uncertainty) against observed:"]
    for _, r in pc.iterrows():
        lines.append(f"  {r['protocol']:<8} {r['metric']:<9} observed {r['observed']:.4f} "
                     f"[{r['observed_lo']:.4f}, {r['observed_hi']:.4f}]  predicted "
                     f"{r['predicted']:.4f} [{r['predicted_lo']:.4f}, {r['predicted_hi']:.4f}]"
                     f"  z {r['z']:+.2f}  p {r['p_value']:.3f}"
                     + ("  POOR FIT" if r["poor"] else ""))
    poor = pc[pc["poor"]]
    if len(poor):
        lines.append(f"  the fit is poor for {len(poor)} of {len(pc)} metrics (p < "
                     f"{1 - conf:.2g}): " + ", ".join(f"{a} {b}" for a, b in
                                                      zip(poor["protocol"], poor["metric"])))
    else:
        lines.append(f"  every observed metric is within what the fit predicts (all p >= "
                     f"{1 - conf:.2g}; smallest {pc['p_value'].min():.3f})")
    return "\n".join(lines)
