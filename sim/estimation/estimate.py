"""Estimating rho, b, kappa, mu and Amp from oversight logs (seed 000, section 6).

Reads a table in the schema of :data:`sim.transcripts.SCHEMA` (ours or a user's)
and reports, per protocol and stratum: Amp-hat, accuracy and follow-when-correct
with stratified percentile bootstrap intervals (each stratum resampled within
itself, as scipy.stats.bootstrap does with one sample per stratum, drawn as
multinomial code counts so that memory stays bounded whatever the log's size);
equilibrium fabrication rates per role; feasibility rates where forced attempts
are logged; the tie bias b-hat, split by label-blinding when logged; tie
and imbalance frequencies; a logistic fit of effective bias and salience with
judge-clustered standard errors (statsmodels GLM); the one-sided test of
Amp(debate) < Amp(consult); and sensitivity intervals for Amp under a stated
rate of mislabelled ground truth.

The command ``antiamp-estimate``; the estimators are in :mod:`antiamp.estimation.estimators`
(statistics :mod:`antiamp.estimation.logstats`, the logistic fit :mod:`antiamp.estimation.logfit`), the
report and figures in :mod:`antiamp.estimation.estimate_report`, the runs on the engine in
:mod:`antiamp.estimation.estimate_check`; this module re-exports their public names, the
``antiamp.estimate`` API.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from ..cmdline import Parser, interruptible
from ..outputs_policy import add_out_options, one_writer
from ..lazy import lazy

pd = lazy("pandas")
xr = lazy("xarray")

from .._version import __version__

from .logs import (  # noqa: F401  (reading and checking logs; re-exported)
    BINARY, PROTOCOLS, PROTOCOL_ALIASES, ANSWERS, LETTERS,
    MAX_ANSWERS, LogError, MAX_PARQUET_BYTES, MAX_ROUND, load_log,
    label_column, show_value, validate_log, check_answers, n_answers,
    check_rounds, select_round, amp_by_round, ROLES, SWAP,
    symmetric_roles)
from .logstats import (  # noqa: F401  (re-exported)
    GRADED, N_BINS, N_CODES, PROB_METRICS, acc_of_codes, amp_of_codes, boot_interval, row_codes, fold_codes, fwc_of_codes,
    percentile_interval, masked_rate, resampled_counts, stratified_mean, code_counts, corrected_amp,
    corrected_amp_counts, graded_rho, probability_metrics, reliability)
from .logfit import logistic_fit  # noqa: F401
from .estimators import (  # noqa: F401
    CLUSTERS, MAX_RESAMPLES, EstimateOptions, check_options, check_judges, estimate)
from .estimate_report import (  # noqa: F401
    format_check, format_report, plot_estimates, plot_reliability)
from .estimate_check import fitted_config, simulate_fitted, structural_check  # noqa: F401


#: Shipped logs (``--sample NAME``), in antiamp's data folder (see its README for
#: the attribution and license of the real one).
SAMPLES = {"simulated": "sample_log.csv", "human_judges": "michael2023_human_judges.csv",
           "two_judges": "michael2023_judgments.csv"}


def _round_arg(v: str):
    if v == "final":
        return v
    try:
        r = int(v)
    except ValueError:
        r = 0
    if not 1 <= r <= MAX_ROUND:
        raise argparse.ArgumentTypeError(f"must be final or a round number in [1, "
                                         f"{MAX_ROUND:,}], got {v!r}")
    return r


@interruptible("antiamp-estimate")
@one_writer  # (the --out lock taken below is let go however the command ends)
def main(argv=None) -> None:
    from ..config import MAX_INSTANCES

    ap = Parser(prog="antiamp-estimate", description=__doc__.splitlines()[0])
    ap.add_argument("--version", action="version", version=f"%(prog)s (antiamp {__version__})")
    ap.add_argument("log", nargs="?", default=None,
                    help="CSV (UTF-8) or Parquet log in the documented column schema, or an "
                         "Inspect .eval log or folder of them")
    ap.add_argument("--sample", nargs="?", const="simulated", default=None,
                    choices=tuple(SAMPLES),
                    help="use a shipped log instead of a file: simulated (the default: two "
                         "strata, a logit judge) or human_judges (Michael et al. 2023, "
                         "CC-BY 4.0: real human judges with their probabilities) or "
                         "two_judges (the same rooms, every online and offline judgment: "
                         "read_corr)")
    add_out_options(ap, "outputs/estimates/<log name>, beside the other commands' outputs/")
    ap.add_argument("--confidence", type=float, default=0.95, help="in (0, 1); default 0.95")
    ap.add_argument("--n-resamples", type=int, default=2000,
                    help=f"bootstrap resamples, 1 to {MAX_RESAMPLES:,}; default 2000")
    ap.add_argument("--mislabel", type=float, default=0.0,
                    help="rate of mislabelled ground truth for the Amp sensitivity interval, "
                         "in [0, 0.5)")
    ap.add_argument("--seed", type=int, default=0, help="bootstrap seed, >= 0")
    ap.add_argument("--cluster", choices=CLUSTERS, default="rows",
                    help="what the intervals treat as independent: rows (the default: the "
                         "bootstrap of Amp, accuracy and follow-when-correct resamples rows "
                         "within each stratum; the intervals hold these judges fixed) or "
                         "judge (from the judge_id column, at least 2 judges: the bootstrap "
                         "resamples judges with all their rows, differences paired by judge; "
                         "the probability metrics' t intervals, the rounds' Wilson intervals "
                         "and the field metrics' standard errors are judge-clustered: "
                         "intervals for the protocol with other judges)")
    ap.add_argument("--mapping", default=None,
                    help="with Inspect .eval logs: a YAML or JSON file mapping log columns "
                         "to sample fields (README, 'From Inspect logs')")
    ap.add_argument("--round", type=_round_arg, default="final",
                    help="with a round column: the round every estimate reads, final (each "
                         f"instance's last; the default) or a round number in [1, {MAX_ROUND:,}]")
    ap.add_argument("--simulate", action="store_true",
                    help="simulate the fitted parameters and compare with the observed metrics")
    ap.add_argument("--n-sim", type=int, default=2_000_000,
                    help=f"instances per simulated protocol, 1 to {MAX_INSTANCES:.0e}")
    from . import predictive, predictive_cmd, readcorr

    predictive_cmd.add_arguments(ap)
    args = ap.parse_args(argv)
    if args.sample and args.log:
        ap.error("give a log file or --sample, not both")
    if args.sample:
        from importlib.resources import files

        args.log = str(files("antiamp") / "data" / SAMPLES[args.sample])
    if not args.log:
        ap.error("give a log file (or --sample)")
    opts = EstimateOptions(args.confidence, args.n_resamples, args.mislabel, args.seed,
                           args.round, args.cluster)
    # Under outputs/ like antiamp and antiamp-sweep (a deterministic name per log, as
    # sweeps have: rerunning on the same log replaces only what antiamp wrote).
    out = Path(args.out or Path("outputs") / "estimates" / Path(args.log).stem)
    from ..output import OutputError, check_replaceable

    try:
        check_options(opts)
        if args.simulate and not 1 <= args.n_sim <= MAX_INSTANCES:
            raise LogError(f"--n-sim must lie in [1, {MAX_INSTANCES:.0e}], got {args.n_sim}")
        from ..outputs_policy import check_out_dir, refuse_file_above

        refuse_file_above(out / "estimates.zarr", "--out")
        check_replaceable(out / "estimates.zarr")  # (the more specific message first)
        check_out_dir(out, _RUN_FILES, force=args.force)
        t0 = time.perf_counter()
        df = load_log(args.log, args.mapping)
        if len(df) > 1_000_000:
            print(f"read {len(df):,} rows in {time.perf_counter() - t0:.1f} s; estimating "
                  f"(about {len(df) / 2e6:.0f}-{len(df) / 5e5:.0f} s more)", file=sys.stderr)
        predictive_cmd.check_options(args)  # (a bad option named, not priced)
        check_work(args, len(df))
        if args.simulate and df.attrs.get("K", 2) > 2:
            raise LogError(f"--simulate runs the two-answer models; the log has "
                           f"{df.attrs['K']} answers (model=options is the multi-option "
                           f"model: antiamp model=options judge=logit options.K=...)")
        from ..outputs_policy import lock_output

        lock_output(out, "antiamp-estimate")  # one writer per --out, as sweeps hold
        ds = estimate(df, opts)
        new = predictive_cmd.check_arguments(args, df, load_log)
        rc = readcorr.applies(df)
    except (LogError, OutputError, predictive.CheckError, readcorr.ReadCorrError) as exc:
        print(f"antiamp-estimate: error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    except KeyboardInterrupt:
        from ..cmdline import interrupted

        interrupted("\nantiamp-estimate: interrupted; nothing was written")
    print(format_report(ds, args.log))
    from .field_metrics import field_metrics, format_field_metrics, plot_field_metrics

    field = field_metrics(df, args.confidence, args.round, cluster=args.cluster)
    print(format_field_metrics(field, args.confidence))
    if rc:  # several judgments of one room: how much judges share their reading
        r = readcorr.estimate(df, confidence=float(ds.attrs["confidence"]), seed=args.seed)
        readcorr.store(ds, r)
        print(readcorr.format_result(r, float(ds.attrs["confidence"])))
    try:
        fitted = _write_outputs(ds, out, args, df)
        from ..outputs_policy import record

        record(out / "field_metrics.png")  # (antiamp's: replaced by the next run)
        print(f"wrote {plot_field_metrics(df, field, out / 'field_metrics.png')}")
        if predictive_cmd.wanted(args):
            predictive_cmd.run(args, df, new, float(ds.attrs["confidence"]), out, fitted)
    except (LogError, OutputError, predictive.CheckError) as exc:
        print(f"antiamp-estimate: error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    except KeyboardInterrupt:
        from ..cmdline import interrupted

        interrupted("\nantiamp-estimate: interrupted; the estimates store is written beside "
                    "and renamed, so no partial store is left")
    except OSError as exc:
        from ..output import describe_os_error

        print(f"antiamp-estimate: error: {describe_os_error(exc)}; the estimates store is "
              "written beside and renamed, so no partial store is left", file=sys.stderr)
        raise SystemExit(1) from None


def work_parts(args, n_rows: int) -> list:
    """Estimated seconds of the simulations and predictive checks asked for, by part
    (``(what, seconds)`` at the nominal rates of :mod:`antiamp.sweeps.budget`): the
    structural and section-6 judges' runs at ``--n-sim``, and the predictive checks'
    parameter draws over the log's rows, once per fit (the full log, each
    cross-validation fold, the calibration), and the structural fits themselves
    (:func:`antiamp.estimation.predictive.n_fits`)."""
    from . import predictive, predictive_cmd
    from ..sweeps import budget

    parts = []
    if args.simulate:
        parts.append((f"the simulations at --n-sim {args.n_sim:,}",
                      args.n_sim / budget.ESTIMATE_SIM_RATE))
    if predictive_cmd.wanted(args):
        fits = 1 + (args.cv or 0) * (getattr(args, "cv_seeds", 1) or 1) + (
            1 if args.calibrate else 0)
        evals = args.check_draws * n_rows * fits
        parts.append((f"the predictive checks ({args.check_draws:,} draws x {n_rows:,} rows "
                      f"x {fits} fit{'s' if fits > 1 else ''})",
                      evals / budget.CHECK_DRAW_RATE))
        n = predictive.n_fits(args)
        parts.append((f"the structural fits ({n:,} fits x {n_rows:,} rows, the reading's "
                      f"selection included)", n * n_rows / predictive.FIT_ROW_RATE))
    return parts


def check_work(args, n_rows: int, env=None) -> None:
    """Refuse (LogError) a request over the bound on total work, before any output."""
    from ..sweeps import budget

    try:
        budget.check_request(work_parts(args, n_rows), env)
    except budget.BudgetError as exc:
        raise LogError(str(exc)) from None


#: What antiamp-estimate writes into its --out directory.
_OUT_FILES = ("estimates.zarr", "predicted_vs_observed.csv", "estimates.png", "estimates.pdf",
              "calibration.png", "calibration.pdf")
#: Every file a run of antiamp-estimate may write there (a rerun replaces them all).
_RUN_FILES = _OUT_FILES + ("field_metrics.png", "structural_selection.csv",
                           "structural_selection_debaters.csv",
                           "predictive_strata.csv", "predictive_cv.csv",
                           "predictive_cv_pooled.csv",
                           "predictive_calibrated.csv", "predictive_populations.csv",
                           "structural_prior_sensitivity.csv")


def _write_outputs(ds: xr.Dataset, out: Path, args, df: pd.DataFrame | None = None):
    """Write the store and figures (with --simulate: the structural check first);
    returns (structural fit, selection table) with --simulate, else None."""
    pred = fitted = None
    if args.simulate:
        from .predictive import format_selection

        # the reading the predictive checks use (auto: the one that predicts held-out
        # judges' labels), so that the store antiamp-design reads is that fit too
        choice = ("probabilities+gap" if getattr(args, "protocol_gap", False)
                  else getattr(args, "structural_fit", "auto"))
        f, pc, sel = structural_check(df, ds, args.n_sim, args.seed, choice)
        fitted = (f, sel)
        if sel is not None:
            print(format_selection(sel))
        print(format_check(f, pc, float(ds.attrs["confidence"])))
        seed0 = simulate_fitted(ds, args.n_sim, args.seed)
        pred = pc.merge(seed0.drop(columns=["observed", "lo", "hi"]), how="outer",
                        on=["protocol", "metric"])
        print("\nthe seed-000 judges fitted by the section-6 estimators, simulated:")
        print(seed0.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
        for note in seed0.attrs.get("notes", []):
            print(f"  note: {note}")
    from ..output import write_zarr_atomic
    from ..outputs_policy import (OutputError, clear_earlier_run, open_out_dir, record,
                                 write_csv)

    try:
        open_out_dir(out, _RUN_FILES, force=getattr(args, "force", False))
    except OutputError as exc:  # changed since the check before the estimation
        raise LogError(str(exc)) from None
    # a run's outputs are one unit: none of an earlier run's left beside this one's
    clear_earlier_run(out, _RUN_FILES, keep=("estimates.zarr",))
    record(out / "estimates.zarr")
    write_zarr_atomic(ds, out / "estimates.zarr")
    if pred is not None:
        write_csv(out / "predicted_vs_observed.csv", pred)
    plot_estimates(ds, out / "estimates.png", pred)
    if "reliability_n" in ds:
        plot_reliability(ds, out / "calibration.png")
        print(f"wrote {out / 'calibration.png'} (and .pdf)")
    print(f"\nwrote {out / 'estimates.zarr'}, {out / 'estimates.png'}"
          + (f", {out / 'predicted_vs_observed.csv'}" if pred is not None else ""))
    return fitted


if __name__ == "__main__":
    main()
