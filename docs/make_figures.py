"""Regenerate the README's figures from the named sweeps and the README's commands.

    python docs/make_figures.py                 # every figure (tens of minutes on 2 cores)
    python docs/make_figures.py amp_gap loop_phase   # some of them

Each named sweep runs with ``antiamp-sweep sweep=<name>`` into a fresh scratch run
directory (the sweep's own sizes: 10^6 instances per cell for the baseline ones), and
the figure it writes is copied to ``docs/figures/`` under the name the README shows.
The closed-loop cell figure comes from the README's ``antiamp model=loop`` command,
the design figure from the README's ``antiamp-estimate`` and ``antiamp-design`` ones.
The benchmark figures (``bench_*.png``) come from ``benchmarks/run_all.py``.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "figures"

#: README figure -> (named sweep, figure the sweep writes, extra figure -> README name).
SWEEPS = {
    "amp_gap.png": ("amp_gap", "amp_gap.png", {}),
    "jury.png": ("jury", "amp.png", {}),
    "welfare_region.png": ("welfare_region", "welfare_diff.png", {}),
    "acc_tradeoff.png": ("acc_tradeoff", "acc_gap.png", {}),
    "logit_gap.png": ("logit_gap", "amp_gap.png", {}),
    "regimes.png": ("regimes", "sweep.png", {}),
    "ext_diversity.png": ("diversity", "sweep.png", {}),
    "ext_accuracy_gap.png": ("accuracy_gap", "sweep.png", {}),
    "ext_attention.png": ("attention", "sweep.png", {"attention_map.png": "ext_attention_map.png"}),
    "ext_attention_logit.png": ("attention_logit", "sweep.png",
                                {"attention_map.png": "ext_attention_logit_map.png"}),
    "ext_portfolio_budget.png": ("portfolio_budget", "sweep.png", {}),
    "ext_portfolio_logit.png": ("portfolio_logit", "sweep.png", {}),
    "ext_panel_size.png": ("panel_size", "sweep.png", {}),
    "ext_panel_hurts.png": ("panel_hurts", "sweep.png", {}),
    "ext_rhetoric.png": ("rhetoric", "sweep.png", {}),
    "ext_rhetoric_strategic.png": ("rhetoric_strategic", "sweep.png", {}),
    "ext_options_antagonist.png": ("options_antagonist", "sweep.png", {}),
    "ext_options_examine.png": ("options_examine", "sweep.png", {}),
    "loop_phase.png": ("loop_phase", "sweep.png", {}),
    "loop_drift.png": ("loop_drift", "sweep.png", {}),
    "loop_audit.png": ("loop_audit", "sweep.png", {}),
    "confidence_rounds.png": ("confidence_rounds", "sweep.png", {}),
    "confidence_amp.png": ("confidence_amp", "sweep.png", {}),
    "redeliberation_hazard.png": ("redeliberation_hazard", "sweep.png", {}),
    "redeliberation_bias.png": ("redeliberation_bias", "sweep.png", {}),
    "colmad_eta.png": ("colmad_eta", "sweep.png", {}),
    "colmad_rounds.png": ("colmad_rounds", "sweep.png", {}),
    "colmad_region.png": ("colmad_region", "sweep.png", {}),
    "mediation_iterations.png": ("mediation_iterations", "sweep.png", {}),
    "mediation_sources.png": ("mediation_sources", "sweep.png", {}),
    "compare_rho.png": ("compare_rho", "sweep.png", {}),
}
#: README figures of one cell: name -> the README's command (arguments of ``antiamp``).
CELLS = {
    "loop_paths.png": ["model=loop", "judge=logit", "model.rho=0.3", "model.p=0.7", "loop.m=0.9",
                       "loop.e_h=0.3", "loop.target=0.2"],
    "confidence_cell.png": ["model=confidence", "judge=logit", "judge.kappa=2",
                            "confidence.kappa_c=1"],
    "redeliberation_cell.png": ["model=redeliberation", "judge=logit", "judge.lam=1.5",
                                "judge.mu=1.5"],
    "colmad_cell.png": ["model=colmad", "judge=logit"],
    "mediation_cell.png": ["model=mediation"],
    "compare_cell.png": ["model=compare", "judge=logit", "judge.lam=1.5", "judge.mu=0.5"],
}

#: README figures of other commands: name -> (the README's commands, figure written).
COMMANDS = {
    "design_human_judges.png": (
        [["antiamp-estimate", "--sample", "human_judges", "--simulate"],
         ["antiamp-design", "--estimates", "outputs/estimates/michael2023_human_judges/estimates.zarr",
          "--rules", "majority,two_thirds,unanimous", "--min-acc", "0.8"]],
        "outputs/design/michael2023_human_judges/design.png"),
}


def _run(argv: list, cwd: Path) -> None:
    r = subprocess.run(argv, cwd=cwd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{r.stderr[-2000:]}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help="README figure names or sweep names (default: all)")
    ap.add_argument("--out", default=str(OUT), help="where the figures go (default: docs/figures)")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    want = set(args.names)
    chosen = {k: v for k, v in SWEEPS.items()
              if not want or k in want or k[:-4] in want or v[0] in want}
    cells = {k: v for k, v in CELLS.items() if not want or k in want or k[:-4] in want}
    cmds = {k: v for k, v in COMMANDS.items() if not want or k in want or k[:-4] in want}
    unknown = want - {k for k in chosen} - {k[:-4] for k in chosen} - {v[0] for v in chosen.values()} \
        - set(cells) - {k[:-4] for k in cells} - set(cmds) - {k[:-4] for k in cmds}
    if unknown:
        raise SystemExit(f"unknown figure or sweep: {', '.join(sorted(unknown))}; choose from "
                         f"{', '.join(sorted(v[0] for v in SWEEPS.values()))}, "
                         f"{', '.join(sorted(k[:-4] for k in CELLS))}, "
                         f"{', '.join(sorted(k[:-4] for k in COMMANDS))}")
    exe = Path(sys.executable).parent
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for target, (sweep, made, extra) in chosen.items():
            t = time.perf_counter()
            run_dir = tmp / sweep
            _run([str(exe / "antiamp-sweep"), f"sweep={sweep}", f"hydra.run.dir={run_dir}"], tmp)
            shutil.copyfile(run_dir / made, out / target)
            for src, dst in extra.items():
                shutil.copyfile(run_dir / src, out / dst)
            print(f"{target}: sweep={sweep}, {time.perf_counter() - t:.0f} s", flush=True)
        for target, cmd in cells.items():
            t = time.perf_counter()
            run_dir = tmp / target[:-4]
            _run([str(exe / "antiamp"), *cmd, f"hydra.run.dir={run_dir}"], tmp)
            shutil.copyfile(run_dir / "results.png", out / target)
            print(f"{target}: antiamp {' '.join(cmd)}, {time.perf_counter() - t:.0f} s", flush=True)
        for target, (steps, made) in cmds.items():
            t = time.perf_counter()
            work = tmp / target[:-4]
            work.mkdir()
            for step in steps:
                _run([str(exe / step[0]), *step[1:]], work)
            shutil.copyfile(work / made, out / target)
            print(f"{target}: {'; '.join(' '.join(c) for c in steps)}, "
                  f"{time.perf_counter() - t:.0f} s", flush=True)


if __name__ == "__main__":
    main()
