"""Regenerate the README's figures from the named sweeps and the README's commands.

    python docs/make_figures.py                 # every figure (tens of minutes on 2 cores)
    python docs/make_figures.py amp_gap loop_phase   # some of them
    python docs/make_figures.py --check              # which figures are stale (seconds)

Each named sweep runs with ``antiamp-sweep sweep=<name>`` into a fresh scratch run
directory (the sweep's own sizes: 10^6 instances per cell for the baseline ones), and
the figure it writes is copied to ``docs/figures/`` under the name the README shows.
The closed-loop cell figure comes from the README's ``antiamp model=loop`` command,
the design figure from the README's ``antiamp-estimate`` and ``antiamp-design`` ones.
The benchmark figures (``bench_*.png``) come from ``benchmarks/run_all.py``.

Each figure written is recorded in ``docs/figures/figures.json`` with the command
that made it, the SHA-256 of the file, and a fingerprint of what it is drawn from:
the composed configuration of the sections its model reads (the run's result fields
only), the drawing code's syntax tree (``antiamp.sweeps.plot`` but its command-line
``main``, ``antiamp.plotting`` and the model's own figure function; the design's figure
functions for the design figure; imports, comments and layout not counted) and, for
the design figure, the commands.  ``tests/test_figures_fresh.py``
recomputes the fingerprints: a figure whose configuration or drawing code changed
since it was made is stale, and the test names the command that redraws it.  (The
numbers a figure shows are the models', which the tests check against their oracles;
the fingerprint does not follow the models' code, or every change to a kernel would
ask for every figure again.)
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import json
import shutil
import subprocess
import sys
import tempfile
import textwrap
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


MANIFEST = OUT / "figures.json"
#: The run settings a figure's numbers depend on (threads, progress bars do not count).
RESULT_RUN_FIELDS = ("n_instances", "seed", "device")


def _source(obj, skip: tuple = ()) -> str:
    """The code of a module or function, as its syntax tree (comments and layout do not
    count); a module's imports and the top-level functions named in ``skip`` (a
    command's argument parsing, which draws nothing) are left out."""
    import ast

    if obj is None:
        return ""
    tree = ast.parse(textwrap.dedent(inspect.getsource(obj)))
    tree.body = [n for n in tree.body if not isinstance(n, (ast.Import, ast.ImportFrom))
                 and not (isinstance(n, ast.FunctionDef) and n.name in skip)]
    return ast.dump(tree)


def _composed(args: list, config_name: str) -> tuple[dict, object]:
    """The configuration a command composes (the sections its model reads) and the model."""
    from antiamp import cli, registry
    from antiamp.sweeps import cli as sweep_cli

    cli.setup()  # the commands' schemas, as antiamp and antiamp-sweep register them
    sweep_cli.setup()
    cfg = cli.compose_overrides(list(args), config_name)
    model = registry.get(cfg["model"]["name"])
    keep = set(model.uses) | set(model.sections) | {"sweep"}
    cfg = {k: v for k, v in cfg.items() if k in keep}
    cfg["run"] = {k: v for k, v in cfg.get("run", {}).items() if k in RESULT_RUN_FIELDS}
    return cfg, model


def fingerprints() -> dict:
    """Every README figure's command and the fingerprint of what it is drawn from."""
    import antiamp.plotting
    import antiamp.sweeps.plot

    # antiamp-plot's command line (main) draws through the functions fingerprinted here
    common = _source(antiamp.sweeps.plot, skip=("main",)) + _source(antiamp.plotting)
    out = {}

    def digest(*parts) -> str:
        return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()

    for target, (sweep, _, extra) in SWEEPS.items():
        cfg, model = _composed([f"sweep={sweep}"], "sweep_config")
        fp = {"command": f"antiamp-sweep sweep={sweep}", "redraw": target[:-4],
              "inputs": digest(cfg, common, _source(model.figures))}
        for name in (target, *extra.values()):
            out[name] = fp
    for target, cmd in CELLS.items():
        cfg, model = _composed(cmd, "config")
        out[target] = {"command": "antiamp " + " ".join(cmd), "redraw": target[:-4],
                       "inputs": digest(cfg, common, _source(model.cell_figures))}
    from antiamp import design

    for target, (steps, _) in COMMANDS.items():
        out[target] = {"command": "; ".join(" ".join(c) for c in steps), "redraw": target[:-4],
                       "inputs": digest(steps, _source(antiamp.plotting),
                                        _source(design.plot_front), _source(design.plot_escalation))}
    return out


def file_sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _record(out: Path, names: list, prints: dict) -> None:
    """Add the figures just written to the manifest (written whole, then renamed)."""
    path = out / MANIFEST.name
    manifest = json.loads(path.read_text()) if path.exists() else {}
    for name in names:
        manifest[name] = {**prints[name], "sha256": file_sha(out / name)}
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(dict(sorted(manifest.items())), indent=1) + "\n")
    tmp.replace(path)


def stale(out: Path = OUT) -> tuple[list[str], list[str]]:
    """The figures (and why) whose file or inputs differ from what the manifest recorded,
    and the names to pass to this script to redraw them."""
    path = out / MANIFEST.name
    manifest = json.loads(path.read_text()) if path.exists() else {}
    found, redraw = [], set()
    for name, fp in fingerprints().items():
        rec = manifest.get(name)
        if rec is None:
            why = f"not in {MANIFEST.name} (never drawn by this script)"
        elif rec.get("inputs") != fp["inputs"]:
            why = f"its configuration or drawing code changed since it was drawn ({fp['command']})"
        elif not (out / name).is_file() or rec.get("sha256") != file_sha(out / name):
            why = "the file is not the one this script wrote"
        else:
            continue
        found.append(f"{name}: {why}")
        redraw.add(fp["redraw"])
    return found, sorted(redraw)


def _run(argv: list, cwd: Path) -> None:
    r = subprocess.run(argv, cwd=cwd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{r.stderr[-2000:]}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help="README figure names or sweep names (default: all)")
    ap.add_argument("--out", default=str(OUT), help="where the figures go (default: docs/figures)")
    ap.add_argument("--check", action="store_true",
                    help="list the stale figures and exit 1 if any (draws nothing)")
    args = ap.parse_args(argv)
    out = Path(args.out)
    if args.check:
        found, redraw = stale(out)
        for line in found:
            print(line)
        if found:
            raise SystemExit(f"{len(found)} stale figure(s): python docs/make_figures.py "
                             f"{' '.join(redraw)}")
        print(f"every figure of {MANIFEST.name} is fresh")
        return
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
    prints = fingerprints()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for target, (sweep, made, extra) in chosen.items():
            t = time.perf_counter()
            run_dir = tmp / sweep
            _run([str(exe / "antiamp-sweep"), f"sweep={sweep}", f"hydra.run.dir={run_dir}"], tmp)
            shutil.copyfile(run_dir / made, out / target)
            for src, dst in extra.items():
                shutil.copyfile(run_dir / src, out / dst)
            _record(out, [target, *extra.values()], prints)
            print(f"{target}: sweep={sweep}, {time.perf_counter() - t:.0f} s", flush=True)
        for target, cmd in cells.items():
            t = time.perf_counter()
            run_dir = tmp / target[:-4]
            _run([str(exe / "antiamp"), *cmd, f"hydra.run.dir={run_dir}"], tmp)
            shutil.copyfile(run_dir / "results.png", out / target)
            _record(out, [target], prints)
            print(f"{target}: antiamp {' '.join(cmd)}, {time.perf_counter() - t:.0f} s", flush=True)
        for target, (steps, made) in cmds.items():
            t = time.perf_counter()
            work = tmp / target[:-4]
            work.mkdir()
            for step in steps:
                _run([str(exe / step[0]), *step[1:]], work)
            shutil.copyfile(work / made, out / target)
            _record(out, [target], prints)
            print(f"{target}: {'; '.join(' '.join(c) for c in steps)}, "
                  f"{time.perf_counter() - t:.0f} s", flush=True)


if __name__ == "__main__":
    main()
