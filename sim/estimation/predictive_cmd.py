"""antiamp-estimate's predictive checks as a command: their options, the refusals of bad
ones before any output, and the run that prints and writes them.

Apart from :mod:`antiamp.estimation.predictive` (the checks themselves) so that the
statistic pooled over the folds (:mod:`antiamp.estimation.cvpool`, built on those
checks) is composed here, above both, and no import goes round in a circle.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from .cvpool import MAX_BOOT, MAX_SEEDS, MIN_BOOT, N_BOOT, format_pooled, pooled_check
from .predictive import (FITS, MAX_CHECK_DRAWS, N_DRAWS, CheckError, calibrate,
                         cross_validate, evidence_rate, fit_for, fold_units, format_calibrate,
                         format_cv, format_params, format_populations, format_selection,
                         format_sensitivity, format_stratified, population_predictions,
                         prior_sensitivity, shift_prior_of, stratified_check)

# ------------------------------------------------------------------ the command's options
def add_arguments(ap) -> None:
    """antiamp-estimate's options of this module."""
    g = ap.add_argument_group("predictive checks (the structural judge on rows it was or "
                              "was not fitted on)")
    g.add_argument("--cv", type=int, default=None, metavar="K",
                   help="K-fold cross-validation (K >= 2): each fold of judges (or rooms) "
                        "predicted by a fit to the others")
    g.add_argument("--cv-by", default="judge", choices=("judge", "room"),
                   help="what a fold holds out: judge (the default) or room")
    g.add_argument("--cv-boot", type=int, default=N_BOOT, metavar="B",
                   help="logs simulated from the fitted judge and cross-validated alike, the "
                        "reference of --cv's statistic pooled over the folds: 0 (no pooled "
                        f"statistic) or {MIN_BOOT} to {MAX_BOOT:,} (default {N_BOOT})")
    g.add_argument("--cv-seeds", type=int, default=1, metavar="N",
                   help="fold assignments of --cv (seeds --seed, --seed + 1, ...), the "
                        f"pooled statistic averaged over them: 1 to {MAX_SEEDS} (default 1)")
    g.add_argument("--debaters", default=None, metavar="COLUMN",
                   help="a column naming each row's population of debaters: a persuasiveness "
                        "shift per population, the judge's parameters shared")
    g.add_argument("--protocol-gap", action="store_true",
                   help="fit debate's quality gap apart from consultancy's (the same as "
                        "--structural-fit probabilities+gap)")
    g.add_argument("--structural-fit", default="auto", choices=("auto", *FITS),
                   metavar="READING",
                   help="how the predictive checks read the log: auto (the default: the "
                        "reading that predicts held-out judges' labels best), or one of "
                        + ", ".join(FITS))
    g.add_argument("--calibrate", default=None, metavar="LOG",
                   help="another log (with a room column) of new debaters: calibrate them on "
                        "--calibrate-rooms of its rooms and predict the others")
    g.add_argument("--calibrate-rooms", type=int, default=10, metavar="N",
                   help="rooms of the --calibrate log used to calibrate (default 10)")
    g.add_argument("--calibrate-prior", type=float, default=None, metavar="TAU",
                   help="both scales of the shift prior at once (--shift-prior-consult and "
                        "--shift-prior-debate), > 0, or inf for none")
    from .structural import SHIFT_CORR, SHIFT_SCALE

    g.add_argument("--shift-prior-consult", type=float, default=SHIFT_SCALE["consult"],
                   metavar="TAU",
                   help="between-population sd of the dishonest side's persuasiveness shift "
                        "in consultancy, in spreads of argument quality, > 0 or inf (flat) "
                        f"(default {SHIFT_SCALE['consult']:g})")
    g.add_argument("--shift-prior-debate", type=float, default=SHIFT_SCALE["debate"],
                   metavar="TAU",
                   help="the same in debate, > 0 or inf (default "
                        f"{SHIFT_SCALE['debate']:g})")
    g.add_argument("--shift-prior-corr", type=float, default=SHIFT_CORR, metavar="R",
                   help="correlation of a population's two shifts, in (-1, 1) (default "
                        f"{SHIFT_CORR:g})")
    g.add_argument("--check-draws", type=int, default=N_DRAWS, metavar="N",
                   help=f"parameter draws of the predictive checks, 2 to {MAX_CHECK_DRAWS:,} "
                        f"(default {N_DRAWS})")


def wanted(args) -> bool:
    return bool(args.simulate or args.cv or args.calibrate)


def check_options(args) -> None:
    """Refuse an option out of its range (CheckError names it and the range), before
    the work the options ask for is estimated (an out-of-range count is a bad option,
    not a long request)."""
    if args.cv is not None and args.cv < 2:
        raise CheckError(f"--cv must be an integer >= 2, got {args.cv}")
    # checked with or without --cv: a bad value is never silently ignored
    if not (args.cv_boot == 0 or MIN_BOOT <= args.cv_boot <= MAX_BOOT):
        raise CheckError(f"--cv-boot must be 0 (no pooled statistic) or an integer in "
                         f"[{MIN_BOOT}, {MAX_BOOT:,}], got {args.cv_boot}")
    if not 1 <= args.cv_seeds <= MAX_SEEDS:
        raise CheckError(f"--cv-seeds must be an integer in [1, {MAX_SEEDS}], got "
                         f"{args.cv_seeds}")
    if not 2 <= args.check_draws <= MAX_CHECK_DRAWS:
        raise CheckError(f"--check-draws must be an integer in [2, {MAX_CHECK_DRAWS:,}], "
                         f"got {args.check_draws}")


def check_arguments(args, df: pd.DataFrame, load) -> pd.DataFrame | None:
    """Refuse bad options before any output (CheckError names the option); returns the
    --calibrate log, read by ``load``."""
    check_options(args)
    if (args.debaters or args.protocol_gap or args.structural_fit != "auto") \
            and not wanted(args):
        raise CheckError("--debaters, --protocol-gap and --structural-fit shape the "
                         "structural fit: give --simulate, --cv or --calibrate with them")
    if args.protocol_gap and args.structural_fit not in ("auto", "probabilities+gap"):
        raise CheckError(f"--protocol-gap is --structural-fit probabilities+gap; it cannot "
                         f"be given with --structural-fit {args.structural_fit}")
    if args.debaters is not None and args.debaters not in df.columns:
        raise CheckError(f"--debaters {args.debaters}: the log has no such column (columns: "
                         f"{', '.join(map(str, df.columns))})")
    if args.debaters is not None and df[args.debaters].isna().any():
        r = int(np.flatnonzero(df[args.debaters].isna())[0])
        raise CheckError(f"column {args.debaters!r}, row {r}: value is missing (every row "
                         f"needs its population of debaters)")
    if args.cv is not None:  # the folds checked before anything is written
        n = fold_units(_final(df, args.round), args.cv_by).nunique()
        if not args.cv <= n:
            raise CheckError(f"--cv {args.cv}: needs 2 <= K <= the number of "
                             f"{args.cv_by}s ({n})")
    if wanted(args) and df.attrs.get("K", 2) > 2:
        raise CheckError(f"the predictive checks run the two-answer structural judge; the log "
                         f"has {df.attrs['K']} answers")
    # checked with or without --calibrate: a bad value is never silently ignored
    if args.calibrate_rooms < 1:
        raise CheckError(f"--calibrate-rooms must be >= 1, got {args.calibrate_rooms}")
    if args.calibrate_prior is not None and not args.calibrate_prior > 0:  # (NaN too)
        raise CheckError(f"--calibrate-prior must be > 0 (inf: no prior), got "
                         f"{args.calibrate_prior}")
    for opt in ("shift_prior_consult", "shift_prior_debate"):
        if not getattr(args, opt) > 0:
            raise CheckError(f"--{opt.replace('_', '-')} must be > 0 (inf: flat), got "
                             f"{getattr(args, opt)}")
    if not -1 < args.shift_prior_corr < 1:
        raise CheckError(f"--shift-prior-corr must be in (-1, 1), got {args.shift_prior_corr}")
    if args.calibrate is None:
        return None
    new = load(args.calibrate)
    if "room" not in new.columns:
        raise CheckError(f"--calibrate {args.calibrate}: the log has no 'room' column (the "
                         f"rooms to calibrate on and to predict)")
    n = new["room"].nunique()
    if not args.calibrate_rooms < n:
        raise CheckError(f"--calibrate-rooms {args.calibrate_rooms}: the --calibrate log has "
                         f"{n} rooms; allowed 1 to {n - 1}")
    return new


def _final(df: pd.DataFrame, rnd) -> pd.DataFrame:
    from .logs import select_round

    return select_round(df, rnd) if "round" in df.columns else df


def run(args, df: pd.DataFrame, new: pd.DataFrame | None, conf: float, out,
        fitted=None) -> None:
    """Print and write (``out``/predictive_*.csv) what the options ask for.
    ``fitted``: (fit, selection table or None) of ``--simulate``'s structural check,
    already printed (the same reading; refitted here only with populations of
    debaters)."""
    from pathlib import Path

    from ..outputs_policy import write_csv  # (formula cells escaped, files recorded)

    out = Path(out)
    df = _final(df, args.round)
    prior = shift_prior_of(args)
    kw = {"debaters": args.debaters}
    if args.debaters:  # a shift per population and protocol, tied by the shift prior
        kw.update(protocol_shifts=True, pop_prior=prior)
    choice = "probabilities+gap" if args.protocol_gap else args.structural_fit
    if args.simulate:
        if fitted is not None and fitted[1] is not None:
            write_csv(out / "structural_selection.csv", fitted[1])
        if fitted is not None and not args.debaters:
            f = fitted[0]
        else:
            f, sel = fit_for(df, choice, args.seed, **kw)
            if sel is not None and fitted is None:
                print(format_selection(sel))
                write_csv(out / "structural_selection.csv", sel)
            elif sel is not None:  # re-selected with the populations: said and written
                print(format_selection(sel).replace(
                    "which reading of the log", f"with populations of {args.debaters!r}, "
                    "which reading of the log", 1))
                write_csv(out / "structural_selection_debaters.csv", sel)
                print(f"reading selected with populations of {args.debaters!r}: {f.reading}"
                      + (f" (without them: {fitted[0].reading})" if fitted[0].reading !=
                         f.reading else " (as without them)")
                      + f"; wrote {out / 'structural_selection_debaters.csv'}")
        if args.debaters:  # not the fit printed above
            what = ", ".join(x for x in (args.debaters and f"populations of {args.debaters!r}",
                                         "gap" in f.reading and "debate's own quality gap",
                                         "spread" in f.reading and "debate's own spread",
                                         "labels" in f.reading and "the labels only")
                             if x)
            print("\n".join(["", f"structural judge with {what} (the fit the predictive "
                                  f"checks below run; judge-clustered SEs):"]
                             + format_params(f, conf)))
        if args.debaters:  # each population's dishonest evidence rate beside its shift
            print(f"  {prior.text()}")
            if f.honest:  # one line: whose honest consultant's shift the log identifies
                print("  honest consultant's shift: " + "; ".join(
                    f"{lab} " + ("fitted" if why == "fitted" else f"not fitted ({why}), 0")
                    for lab, why in f.honest.items()))
            for lab in f.populations:
                r = evidence_rate(df[df[args.debaters].astype(str) == lab], conf)
                print(f"  rho[{lab}] (dishonest side's evidence rate) {r['k']}/{r['n']} = "
                      f"{r['rho']:.4f} [{r['lo']:.4f}, {r['hi']:.4f}] (Jeffreys)")
            if len(f.populations) > 1:
                sens = prior_sensitivity(df, f.reading, prior, debaters=args.debaters,
                                         protocol_shifts=True)
                print(format_sensitivity(f, sens))
                write_csv(out / "structural_prior_sensitivity.csv", sens)
        pop = population_predictions(f, df, conf, args.check_draws, args.seed, prior=prior)
        print(format_populations(pop, conf))
        write_csv(out / "predictive_populations.csv", pop)
        print(f"wrote {out / 'predictive_populations.csv'}")
        store_attrs(out, {"population_predictions": pop.to_json(orient="records"),
                          "shift_prior": pop.attrs["shift_prior"],
                          # (numbers, for antiamp-design's new population; inf as text)
                          **{f"shift_prior_{k}": v if np.isfinite(v) else str(v) for k, v in
                             (("consult", prior.tau_consult), ("debate", prior.tau_debate),
                              ("corr", prior.corr))},
                          "structural_reading_populations": f.reading,
                          # per population: "fitted", or why its honest shift is not
                          "honest_consult_fitted": json.dumps(f.honest)})
        tab, summ = stratified_check(f, df, conf, args.check_draws, args.seed)
        print(format_stratified(tab, summ, conf))
        write_csv(out / "predictive_strata.csv", tab)
        print(f"wrote {out / 'predictive_strata.csv'}")
    if args.cv:
        seeds = [args.seed + i for i in range(args.cv_seeds)]
        cv = pd.concat([cross_validate(df, args.cv, args.cv_by, conf, args.check_draws, s,
                                       kw, choice).assign(fold_seed=s) for s in seeds],
                       ignore_index=True)
        pooled = None
        if args.cv_boot:
            # the model the reference is simulated from: the fit of the checks above
            # (with --simulate), else the reading the log selects (or the one named)
            whole = f if args.simulate else fit_for(df, choice, args.seed, **kw)[0]
            # (auto: each fold's reading selected on its training rows, in the log and
            # in every simulated log, so that the statistic covers the selection)
            pooled = pooled_check(df, whole, args.cv, args.cv_by, seeds, args.cv_boot,
                                  args.seed, kw, reading="auto" if choice == "auto" else None)
        print(format_cv(cv, args.cv, args.cv_by, conf)
              + ("\n" + format_pooled(pooled, conf) if pooled is not None else ""))
        write_csv(out / "predictive_cv.csv", cv)
        print(f"wrote {out / 'predictive_cv.csv'}")
        if pooled is not None:
            write_csv(out / "predictive_cv_pooled.csv", pooled)
            store_attrs(out, {"cv_pooled": pooled.to_json(orient="records"),
                              "cv_pooled_reading": pooled.attrs["reading"],
                              "cv_pooled_n_boot": int(pooled.attrs["n_boot"]),
                              "cv_pooled_fold_readings": json.dumps(
                                  pooled.attrs["fold_readings"]),
                              "cv_pooled_ref_readings": json.dumps(
                                  pooled.attrs["ref_readings"]),
                              "cv_fold_seeds": [int(x) for x in seeds]})
            print(f"wrote {out / 'predictive_cv_pooled.csv'}")
    if new is not None:
        new = _final(new, args.round)
        f, tab, r = calibrate(df, new, args.calibrate_rooms, conf, args.check_draws,
                              args.seed, False, args.debaters, choice, prior=prior)
        print(format_calibrate(f, tab, r, args.calibrate_rooms, conf))
        write_csv(out / "predictive_calibrated.csv", tab)
        print(f"wrote {out / 'predictive_calibrated.csv'}")


def store_attrs(out, attrs: dict) -> None:
    """Add ``attrs`` to the estimates store written in ``out`` (the predictions made
    after it was written), its consolidated metadata rewritten to match."""
    from pathlib import Path

    import zarr

    path = Path(out) / "estimates.zarr"
    if not path.exists():
        return
    g = zarr.open_group(str(path), mode="r+")
    g.attrs.update(attrs)
    if (path / ".zmetadata").exists() or (path / "zarr.json").exists():
        zarr.consolidate_metadata(str(path))
