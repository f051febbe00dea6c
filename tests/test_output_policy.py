"""The output policy (sim/outputs_policy.py): nothing of the user's is overwritten or
deleted, and bad input is refused before anything is made.

Every bad request below is refused with exit status 2 and a message naming the path
or field, and leaves the folder it runs in exactly as it was: every file's bytes,
every link's target, no run directory, no new file.  The valid ones run, and what
they must keep (a user's files beside or inside a store) is kept byte for byte.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from cli_runner import run_command


def snapshot(root: Path) -> dict:
    """Every entry under ``root`` (links not followed): its kind and bytes or target."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = str(p.relative_to(root))
            if p.is_symlink():
                out[rel] = ("link", os.readlink(p))
            elif p.is_dir():
                out[rel] = ("dir",)
            elif p.is_file():
                out[rel] = ("file", hashlib.sha256(p.read_bytes()).hexdigest())
            else:
                out[rel] = ("other",)
    return out


def _foreign_zarr(path: Path) -> None:
    """A Zarr group that antiamp did not write."""
    path.mkdir(parents=True)
    (path / ".zgroup").write_text('{"zarr_format": 2}')
    (path / ".zattrs").write_text('{"owner": "someone else"}')


def _marker(path: Path, *names) -> None:
    from antiamp.outputs_policy import HEADER, MARKER

    path.mkdir(parents=True, exist_ok=True)
    (path / MARKER).write_text("\n".join([HEADER, *names]) + "\n")


@pytest.fixture(scope="module")
def grid_store(tmp_path_factory):
    """A small finished model grid (panel) to plot and repair."""
    d = tmp_path_factory.mktemp("grid")
    r = run_command("antiamp-sweep", ["model=panel", "sweep.axes.judge.b=[0.3,0.6]",
                                      "run.n_instances=1000", "sweep.plot=false",
                                      f"sweep.store={d / 's.zarr'}", f"hydra.run.dir={d / 'run'}"],
                    d)
    assert r.returncode == 0, r.stderr
    return d / "s.zarr"


DESIGN = ["--draws", "20", "--n-sim", "1000"]


def _bets(tmp, text):
    (tmp / "bets.csv").write_text("debate,condition,side,round,bet\n" + text)
    return str(tmp / "bets.csv")


def _bets_rows(bet=50, rnd=1):
    return "".join(f"{d},cross_model,{s},{rnd},{bet}\n" for d in range(6)
                   for s in ("proposition", "opposition"))


# (id, setup(tmp) -> (command, args), what the message names)
def _cases(grid):
    def discover_user_figure(t):
        d = t / "d"
        d.mkdir()
        (d / "discover.png").write_bytes(b"\x89PNG mine")
        return ("antiamp-discover", [grid, "--where", "amp_consult > 0", "--out", d],
                "discover.png exists and antiamp did not write it")

    def design_foreign(t):
        (t / "d").mkdir()
        (t / "d" / "design.txt").write_text("my design notes")
        (t / "d" / "front.csv").write_text("a,b\n1,2\n")
        return "antiamp-design", ["--out", t / "d", *DESIGN], "--out"

    def design_foreign_zarr(t):
        _foreign_zarr(t / "d" / "levers.zarr")
        return "antiamp-design", ["--out", t / "d", *DESIGN], "levers.zarr"

    def design_marked_foreign_zarr(t):
        _marker(t / "d")
        _foreign_zarr(t / "d" / "levers.zarr")
        return "antiamp-design", ["--out", t / "d", *DESIGN], "levers.zarr"

    def design_zarr_link(t):
        _foreign_zarr(t / "other.zarr")
        _marker(t / "d", "levers.zarr")
        (t / "d" / "levers.zarr").symlink_to(t / "other.zarr")
        return "antiamp-design", ["--out", t / "d", *DESIGN], "levers.zarr"

    def design_link(t):
        (t / "real").mkdir()
        (t / "real" / "design.png").write_bytes(b"\x89PNG mine")
        (t / "d").symlink_to(t / "real")
        return "antiamp-design", ["--out", t / "d", *DESIGN], "symbolic link"

    def design_force_foreign_file(t):
        (t / "d").mkdir()
        (t / "d" / "recommendation.csv").write_text("mine\n")
        return "antiamp-design", ["--out", t / "d", "--force", *DESIGN], "recommendation.csv"

    def design_marked_unlisted(t):
        _marker(t / "d", "design.txt")
        (t / "d" / "design.txt").write_text("antiamp's")
        (t / "d" / "design.png").write_bytes(b"mine")
        return "antiamp-design", ["--out", t / "d", *DESIGN], "design.png"

    def design_planted_link(t):
        (t / "target.txt").write_text("keep me")
        _marker(t / "d", "design.txt")
        (t / "d" / "design.txt").symlink_to(t / "target.txt")
        return "antiamp-design", ["--out", t / "d", *DESIGN], "design.txt"

    def plot_foreign(t):
        (t / "p").mkdir()
        (t / "p" / "amp.png").write_bytes(b"my figure")
        return "antiamp-plot", [grid, "--out", t / "p"], "--out"

    def plot_force(t):
        (t / "p").mkdir()
        (t / "p" / "amp.png").write_bytes(b"my figure")
        return "antiamp-plot", [grid, "--out", t / "p", "--force"], "amp.png"

    def plot_beside_user_file(t):  # no --out: beside the store, in a folder of the user's
        import shutil

        shutil.copytree(grid, t / "mine" / "s.zarr")
        (t / "mine" / "amp.png").write_bytes(b"my figure")
        return "antiamp-plot", [t / "mine" / "s.zarr"], "amp.png"

    def plot_link(t):
        (t / "real").mkdir()
        (t / "p").symlink_to(t / "real")
        return "antiamp-plot", [grid, "--out", t / "p"], "symbolic link"

    def estimate_link(t):
        (t / "real").mkdir()
        (t / "real" / "estimates.png").write_bytes(b"mine")
        (t / "e").symlink_to(t / "real")
        return "antiamp-estimate", ["--sample", "--out", t / "e"], "symbolic link"

    def estimate_foreign(t):
        (t / "e").mkdir()
        (t / "e" / "estimates.png").write_bytes(b"mine")
        return "antiamp-estimate", ["--sample", "--out", t / "e"], "--out"

    def estimate_foreign_zarr(t):
        _foreign_zarr(t / "e" / "estimates.zarr")
        return "antiamp-estimate", ["--sample", "--out", t / "e", "--force"], "estimates.zarr"

    def export_user_file(t):
        (t / "mine.csv").write_text("my data\n")
        return "antiamp", ["run.n_instances=1000", "export.n_instances=10",
                           f"export.path={t / 'mine.csv'}", f"hydra.run.dir={t / 'run'}"], \
            "export.path"

    def run_dir_link_file(t):
        (t / "target.png").write_bytes(b"keep me")
        (t / "run").mkdir()
        (t / "run" / "results.png").symlink_to(t / "target.png")
        return "antiamp", ["run.n_instances=1000", f"hydra.run.dir={t / 'run'}"], \
            "results.png"

    def run_dir_link_partial(t):
        (t / "target.txt").write_text("keep me")
        (t / "run").mkdir()
        (t / "run" / ".results.txt.partial").symlink_to(t / "target.txt")
        return "antiamp", ["run.n_instances=1000", f"hydra.run.dir={t / 'run'}"], \
            ".results.txt.partial"

    def run_dir_link_hydra(t):
        (t / "elsewhere").mkdir()
        (t / "elsewhere" / "config.yaml").write_text("mine: 1\n")
        (t / "run").mkdir()
        (t / "run" / ".hydra").symlink_to(t / "elsewhere")
        return "antiamp", ["run.n_instances=1000", f"hydra.run.dir={t / 'run'}"], ".hydra"

    def run_dir_link_log(t):
        (t / "target.log").write_text("keep me")
        (t / "run").mkdir()
        (t / "run" / "antiamp.log").symlink_to(t / "target.log")
        return "antiamp", ["run.n_instances=1000", f"hydra.run.dir={t / 'run'}"], "antiamp.log"

    def run_dir_is_link(t):
        (t / "elsewhere").mkdir()
        (t / "run").symlink_to(t / "elsewhere")
        return "antiamp", ["run.n_instances=1000", f"hydra.run.dir={t / 'run'}"], \
            "symbolic link"

    def sweep_store_link(t):
        import shutil

        shutil.copytree(grid, t / "real.zarr", symlinks=True)
        (t / "s.zarr").symlink_to(t / "real.zarr")
        return "antiamp-sweep", ["model=panel", "sweep.axes.judge.b=[0.3,0.5]",
                                 "run.n_instances=1000", "sweep.overwrite=true",
                                 f"sweep.store={t / 's.zarr'}", f"hydra.run.dir={t / 'run'}"], \
            "symbolic link"

    def sweep_lock_user_file(t):
        (t / "s.zarr.lock").write_text("my notes, not a lock")
        return "antiamp-sweep", ["model=panel", "sweep.axes.judge.b=[0.3,0.5]",
                                 "run.n_instances=1000", f"sweep.store={t / 's.zarr'}",
                                 f"hydra.run.dir={t / 'run'}"], "s.zarr.lock"

    def sweep_partial_with_user_file(t):
        part = t / "s.zarr.partial"
        part.mkdir()
        (part / "antiamp-partial.json").write_text('{"fingerprint": "0", "model": "panel"}')
        (part / "my_notes.txt").write_text("mine")
        return "antiamp-sweep", ["model=panel", "sweep.axes.judge.b=[0.3,0.5]",
                                 "run.n_instances=1000", "sweep.overwrite=true",
                                 f"sweep.store={t / 's.zarr'}", f"hydra.run.dir={t / 'run'}"], \
            "s.zarr.partial"

    def conf(extra, field):
        def f(t):
            return "antiamp", ["model=confidence", "judge=logit", *extra(t),
                               f"hydra.run.dir={t / 'run'}"], field
        return f

    def conf_fifo(t):
        os.mkfifo(t / "fifo")
        return [f"confidence.data={t / 'fifo'}"]

    def conf_dir(t):
        (t / "adir").mkdir()
        return [f"confidence.data={t / 'adir'}"]

    cases = {
        "design-foreign-dir": design_foreign,
        "design-foreign-levers-zarr": design_foreign_zarr,
        "design-own-dir-foreign-levers-zarr": design_marked_foreign_zarr,
        "design-levers-zarr-link": design_zarr_link,
        "design-out-link": design_link,
        "design-force-user-file": design_force_foreign_file,
        "design-own-dir-unlisted-file": design_marked_unlisted,
        "design-planted-link": design_planted_link,
        "plot-foreign-dir": plot_foreign,
        "plot-force-user-file": plot_force,
        "plot-out-link": plot_link,
        "plot-beside-store-user-file": plot_beside_user_file,
        "estimate-out-link": estimate_link,
        "estimate-foreign-dir": estimate_foreign,
        "estimate-force-foreign-zarr": estimate_foreign_zarr,
        "export-user-file": export_user_file,
        "run-dir-results-png-link": run_dir_link_file,
        "run-dir-partial-link": run_dir_link_partial,
        "run-dir-hydra-link": run_dir_link_hydra,
        "run-dir-log-link": run_dir_link_log,
        "run-dir-is-link": run_dir_is_link,
        "sweep-store-link-overwrite": sweep_store_link,
        "sweep-lock-user-file": sweep_lock_user_file,
        "sweep-partial-user-file": sweep_partial_with_user_file,
        "confidence-missing-file": conf(lambda t: [f"confidence.data={t / 'nope.csv'}"],
                                        "confidence.data"),
        "confidence-directory": conf(conf_dir, "confidence.data"),
        "confidence-fifo": conf(conf_fifo, "confidence.data"),
        "confidence-dev-zero": conf(lambda t: ["confidence.data=/dev/zero"], "confidence.data"),
        "confidence-bet-above-100": conf(
            lambda t: [f"confidence.data={_bets(t, _bets_rows(bet=150))}"], "confidence.data"),
        "confidence-bet-negative": conf(
            lambda t: [f"confidence.data={_bets(t, _bets_rows(bet=-1))}"], "confidence.data"),
        "confidence-round-1e9": conf(
            lambda t: [f"confidence.data={_bets(t, _bets_rows(rnd=10 ** 9))}"], "round"),
        "confidence-unknown-condition": conf(lambda t: ["confidence.condition=nosuch"],
                                             "confidence.condition"),
        "confidence-unknown-antagonist": conf(lambda t: ["confidence.antagonist=nosuch"],
                                              "confidence.antagonist"),
        "sweep-confidence-missing-file": lambda t: (
            "antiamp-sweep", ["model=confidence", "judge=logit", "sweep.axes.judge.lam=[1,2]",
                              f"confidence.data={t / 'nope.csv'}",
                              f"hydra.run.dir={t / 'run'}"], "confidence.data"),
        # an output under an existing file: refused before anything is computed (these
        # once ran and then failed: exit 1, a traceback, a run directory left behind)
        **{f"under-a-file-{name}": _under_a_file(prog, args, named)
           for name, prog, args, named in (
               ("estimate", "antiamp-estimate", ["--sample", "--out", "F/o"], "--out: F/o"),
               ("design", "antiamp-design", ["--out", "F/o", *DESIGN], "--out: F/o"),
               ("plot", "antiamp-plot", [grid, "--out", "F/o"], "--out: F/o"),
               ("discover", "antiamp-discover", [grid, "--where", "amp_consult > 0",
                                                 "--out", "F/o"], "--out: F/o"),
               ("merge", "antiamp-merge", [grid, "-o", "F/m.zarr"],
                "F exists and is not a directory"),
               ("sweep-store", "antiamp-sweep", ["sweep.axes.model.rho=[0.1]",
                                                 "run.n_instances=1000", "sweep.store=S"],
                "F exists and is not a directory"),
               ("export", "antiamp", ["export.n_instances=5", "export.path=S",
                                      "run.n_instances=1000", "hydra.run.dir=run"],
                "export.path"))},
        "discover-user-figure": discover_user_figure,
    }
    return cases


def _under_a_file(prog, args, named):
    def setup(t):
        (t / "F").write_text("mine\n")
        sub = {"F/o": "F/o", "F/m.zarr": "F/m.zarr", "S": str(t / "F" / "s.zarr")}
        out = [str(a) for a in args]
        out = [sub.get(a, a).replace("=S", "=" + str(t / "F" / ("x.csv" if "export" in a
                                                                else "s.zarr")))
               for a in out]
        return prog, out, named.replace("F exists", f"{t / 'F'} exists")
    return setup


def _log(t, edit):
    """The shipped sample log, changed by ``edit(header, rows)``."""
    from importlib.resources import files

    lines = (files("antiamp") / "data" / "sample_log.csv").read_text().splitlines()
    head, rows = edit(lines[0], lines[1:])
    (t / "log.csv").write_text("\n".join([head, *rows]) + "\n")
    return t / "log.csv"


def _with_round(value):
    return lambda h, rows: (h + ",round", [r + ("," + value if i == 0 else ",1")
                                           for i, r in enumerate(rows)])


def _estimates_copy(t, estimates, change):
    import shutil

    shutil.copytree(estimates, t / "est.zarr")
    change(t / "est.zarr")
    return t / "est.zarr"


def _string_attr(store):
    import json

    a = json.loads((store / ".zattrs").read_text())
    a["p_correct"] = "eighty percent"
    (store / ".zattrs").write_text(json.dumps(a))
    (store / ".zmetadata").unlink(missing_ok=True)


def _pickle_array(store):
    (store / "evil").mkdir()
    (store / "evil" / ".zarray").write_text(
        '{"zarr_format": 2, "shape": [1], "chunks": [1], "dtype": "|O", "compressor": null, '
        '"fill_value": 0, "order": "C", "filters": [{"id": "pickle"}]}')


def _value_cases(estimates):
    def design(*a, named):
        return lambda t: ("antiamp-design", [*a, "--out", t / "d", *DESIGN], named)

    def estimate(edit, named):
        return lambda t: ("antiamp-estimate", [_log(t, edit), "--out", t / "e"], named)

    def redelib(field):
        return lambda t: ("antiamp", ["model=redeliberation", "judge=logit", f"{field}=1e308",
                                      f"hydra.run.dir={t / 'run'}"], field)

    return {
        "design-lam-inf": design("--judge", "logit", "--lam", "inf", named="--lam"),
        "design-kappa-inf": design("--judge", "logit", "--kappa", "inf", named="--kappa"),
        "design-seed-2**64": design("--seed", str(2 ** 64), named="--seed"),
        "design-se-inf": design("--se-b", "inf", named="--se-b"),
        "design-cost-call-inf": design("--cost-call", "inf", named="--cost-call"),
        "design-cost-verification-inf": design("--cost-verification", "inf",
                                               named="--cost-verification"),
        "design-estimates-strings": lambda t: (
            "antiamp-design", ["--estimates", _estimates_copy(t, estimates, _string_attr),
                               "--out", t / "d", *DESIGN], "--estimates"),
        "design-estimates-pickle": lambda t: (
            "antiamp-design", ["--estimates", _estimates_copy(t, estimates, _pickle_array),
                               "--out", t / "d", *DESIGN], "pickle"),
        "log-duplicated-y": estimate(lambda h, rows: (h + ",y", [r + ",1" for r in rows]), "'y'"),
        "log-duplicated-protocol": estimate(
            lambda h, rows: (h + ",protocol", [r + ",debate" for r in rows]), "'protocol'"),
        "log-round-1e308": estimate(_with_round("1e308"), "round number (an integer in [1,"),
        "log-round-1e9": estimate(_with_round("1000000000"), "round number (an integer in [1,"),
        # a run directory the file system cannot name (was an OSError, exit status 1)
        "run-dir-300-byte-name": lambda t: (
            "antiamp", [f"hydra.run.dir={t / ('r' * 300)}"], "hydra.run.dir: a name"),
        "run-dir-5000-byte-path": lambda t: (
            "antiamp", [f"hydra.run.dir={t / '/'.join(['d' * 99] * 50)}"],
            "hydra.run.dir: the path"),
        "sweep-run-dir-300-byte-name": lambda t: (
            "antiamp-sweep", ["sweep=amp_gap", "run.n_instances=1000",
                              f"hydra.run.dir={t / ('r' * 300)}"], "hydra.run.dir: a name"),
        "multirun-sweep-dir-300-byte-name": lambda t: (
            "antiamp", ["-m", "model.rho=0.1,0.2", f"hydra.sweep.dir={t / ('r' * 300)}"],
            "hydra.sweep.dir: a name"),
        **{f"redeliberation-{f}-1e308": redelib(f"redeliberation.{f}")
           for f in ("margin_clear", "margin_contested", "noise_clear", "noise_contested",
                     "bias", "bias_sd")},
    }


@pytest.fixture(scope="module")
def estimates_store(tmp_path_factory):
    d = tmp_path_factory.mktemp("est")
    r = run_command("antiamp-estimate", ["--sample", "--out", d / "e"], d)
    assert r.returncode == 0, r.stderr
    return d / "e" / "estimates.zarr"


CASE_IDS = list(_cases(None))
VALUE_IDS = list(_value_cases(None))


@pytest.mark.parametrize("case", VALUE_IDS)
def test_bad_value_refused_before_anything(case, tmp_path, estimates_store):
    t = tmp_path / "w"
    t.mkdir()
    prog, args, named = _value_cases(estimates_store)[case](t)
    before = snapshot(t)
    r = run_command(prog, args, t)
    assert r.returncode == 2, (r.returncode, r.stdout[-2000:], r.stderr[-2000:])
    assert "Traceback" not in r.stderr
    assert named in r.stderr, r.stderr
    assert snapshot(t) == before  # nothing written: no --out, no run directory


@pytest.mark.parametrize("case", CASE_IDS)
def test_bad_request_refused_and_nothing_changed(case, tmp_path, grid_store):
    t = tmp_path / "w"
    t.mkdir()
    prog, args, named = _cases(grid_store)[case](t)
    before = snapshot(t)
    r = run_command(prog, args, t)
    assert r.returncode == 2, (r.returncode, r.stdout[-2000:], r.stderr[-2000:])
    assert "Traceback" not in r.stderr
    assert named in r.stderr, r.stderr
    assert snapshot(t) == before  # byte for byte; no run directory, nothing new


def test_repair_keeps_a_users_file_in_the_store(tmp_path, grid_store):
    import shutil

    s = tmp_path / "s.zarr"
    shutil.copytree(grid_store, s)
    (s / "my_notes.txt").write_text("my notes")
    (s / "amp" / "notes.md").write_text("about amp")
    chunk = next(p for p in (s / "amp").iterdir() if p.name[0].isdigit())
    chunk.write_bytes(b"garbage")
    r = run_command("antiamp-check", ["--repair", s], tmp_path)
    assert r.returncode == 0, r.stderr
    assert (s / "my_notes.txt").read_text() == "my notes"
    assert (s / "amp" / "notes.md").read_text() == "about amp"
    assert run_command("antiamp-check", [s], tmp_path).returncode == 0


@pytest.mark.parametrize("model", ["panel", "baseline"])
def test_temporary_names_holding_user_files_are_kept(model, tmp_path):
    """``.s.zarr.partial-*``, ``.s.zarr.creating-*``, ``.s.zarr.old-*`` are antiamp's
    temporaries' names, but one that holds a user's files is no temporary of ours."""
    for kind in ("partial", "creating", "old"):
        d = tmp_path / f".s.zarr.{kind}-abcd1234"
        d.mkdir()
        (d / "mine.txt").write_text(kind)
    (tmp_path / ".s.zarr.partial.tmp-abcd1234").mkdir()
    (tmp_path / ".s.zarr.partial.tmp-abcd1234" / "mine.txt").write_text("tmp")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "keep.txt").write_text("keep")
    (tmp_path / ".s.zarr.old-ffff0000").symlink_to(tmp_path / "elsewhere")
    before = snapshot(tmp_path)
    r = run_command("antiamp-sweep", [f"model={model}", "sweep.axes.judge.b=[0.3,0.6]",
                                      "run.n_instances=1000", "sweep.plot=false",
                                      f"sweep.store={tmp_path / 's.zarr'}",
                                      f"hydra.run.dir={tmp_path / 'run'}"], tmp_path)
    assert r.returncode == 0, r.stderr
    after = snapshot(tmp_path)
    assert {k: v for k, v in after.items() if k in before} == before


def test_valid_outputs_run_and_rerun_into_their_own_directory(tmp_path, grid_store):
    """A new --out, the same --out again (antiamp's marker proves the files its own),
    and --force into a directory of the user's, whose files are kept."""
    from antiamp.outputs_policy import MARKER

    for _ in range(2):
        r = run_command("antiamp-estimate", ["--sample", "--out", tmp_path / "e"], tmp_path)
        assert r.returncode == 0, r.stderr
        r = run_command("antiamp-plot", [grid_store, "--out", tmp_path / "p"], tmp_path)
        assert r.returncode == 0, r.stderr
    assert (tmp_path / "e" / MARKER).is_file() and (tmp_path / "p" / "amp.png").is_file()
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep")
    r = run_command("antiamp-plot", [grid_store, "--out", tmp_path / "mine", "--force"],
                    tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep"
    assert (tmp_path / "mine" / "amp.png").is_file()
    import shutil

    shutil.copytree(grid_store, tmp_path / "beside" / "s.zarr")
    for _ in range(2):  # no --out: beside the store, and again over its own figures
        r = run_command("antiamp-plot", [tmp_path / "beside" / "s.zarr"], tmp_path)
        assert r.returncode == 0, r.stderr
    assert (tmp_path / "beside" / "amp.png").is_file()
    (tmp_path / "empty").mkdir()
    r = run_command("antiamp-design", ["--out", tmp_path / "empty", *DESIGN], tmp_path)
    assert r.returncode == 0, r.stderr
    r = run_command("antiamp-design", ["--out", tmp_path / "empty", *DESIGN], tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "empty" / "levers.zarr").is_dir()


def test_export_to_a_new_file_and_confidence_at_shipped_data_run(tmp_path):
    r = run_command("antiamp", ["run.n_instances=1000", "export.n_instances=10",
                                f"export.path={tmp_path / 'new.csv'}",
                                f"hydra.run.dir={tmp_path / 'run'}"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "new.csv").read_text().startswith("instance,")
    assert (tmp_path / "run" / "results.txt").is_file()
    good = _bets(tmp_path, _bets_rows())
    r = run_command("antiamp", ["model=confidence", "judge=logit", f"confidence.data={good}",
                                "confidence.ppc_draws=0", f"hydra.run.dir={tmp_path / 'r2'}"],
                    tmp_path)
    assert r.returncode in (0, 2), r.stderr  # a valid file: runs, or refuses its fit cleanly
    assert "Traceback" not in r.stderr


def test_write_file_never_follows_a_link_nor_replaces_an_unlisted_file(tmp_path):
    from antiamp.outputs_policy import (OutputError, open_out_dir, owned, temporary,
                                        write_file)

    d = open_out_dir(tmp_path / "o")
    write_file(d / "a.txt", "one")
    write_file(d / "a.txt", "two")  # listed: antiamp's own, replaced
    assert (d / "a.txt").read_text() == "two" and owned(d / "a.txt")
    (tmp_path / "t.txt").write_text("keep")
    (d / "b.txt").symlink_to(tmp_path / "t.txt")
    with pytest.raises(OutputError, match="symbolic link"):
        write_file(d / "b.txt", "x")
    (d / "c.txt").write_text("user's")
    with pytest.raises(OutputError, match="did not write"):
        write_file(d / "c.txt", "x")
    assert (tmp_path / "t.txt").read_text() == "keep" and (d / "c.txt").read_text() == "user's"
    a, b = temporary(d / "x"), temporary(d / "x")
    assert a != b and a.name.startswith(".x.")
