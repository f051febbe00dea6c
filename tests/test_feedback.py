"""What a user sees while a command runs or refuses: Ctrl-C, progress in a log,
unfinished stores, lock files, misspelt names and options, ad hoc sweep directories."""

from __future__ import annotations

from limits import limit

import os
import re
import select
import signal
import sys
import time
import warnings
from pathlib import Path

import pytest
import zarr

from cli_runner import run_command

SWEEP = ["sweep.axes.model.rho={linspace:[0,1,20]}", "sweep.axes.judge.b={linspace:[0,1,20]}",
         "sweep.cells_per_block=1", "run.n_instances=1000", "sweep.plot=false"]


def _script(prog: str) -> str:
    import shutil

    path = shutil.which(prog) or str(Path(sys.executable).with_name(prog))
    assert os.path.exists(path), prog
    return path


def _in_a_terminal(argv: list, cwd: Path, interrupt_after: str, timeout: float = 600):
    """Run ``argv`` in a pseudo-terminal; once ``interrupt_after`` has been printed,
    type Ctrl-C (the terminal sends SIGINT to the foreground process).  Returns
    (exit status, everything printed)."""
    import pty

    pid, fd = pty.fork()
    if pid == 0:  # the child: a terminal's default SIGINT, the command
        try:
            os.chdir(cwd)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.execv(argv[0], argv)
        finally:
            os._exit(127)
    out, sent, t0 = b"", False, time.monotonic()
    timeout = limit(timeout) or float("inf")  # a hang guard, scaled by the load
    while True:
        if time.monotonic() - t0 > timeout:
            os.kill(pid, signal.SIGKILL)
            break
        if not sent and interrupt_after.encode() in out:
            time.sleep(0.5)  # well inside the verification
            os.write(fd, b"\x03")
            sent = True
        r, _, _ = select.select([fd], [], [], 0.1)
        if r:
            try:
                data = os.read(fd, 65536)
            except OSError:  # the child closed the terminal
                break
            if not data:
                break
            out += data
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    assert sent, out.decode(errors="replace")[-3000:]
    return os.waitstatus_to_exitcode(status), out.decode(errors="replace")


def test_ctrl_c_during_a_resumed_stores_verification_prints_one_line(tmp_path):
    """A resumed store is verified block by block (zarr reads through its own event
    loop thread); Ctrl-C there gives the one-line message and exit 130, none of the
    asyncio and zarr tracebacks an interrupted read leaves at exit."""
    r = run_command("antiamp-sweep", SWEEP + ["sweep.name=big"], tmp_path)
    assert r.returncode == 0, r.stderr
    store = tmp_path / "outputs" / "sweeps" / "big" / "sweep.zarr"
    zarr.open_group(str(store), mode="r+").attrs["complete"] = 0  # a run cut off at the end
    code, text = _in_a_terminal([_script("antiamp-sweep"), *SWEEP, "sweep.name=big"], tmp_path,
                                interrupt_after="verifying the finished blocks")
    assert code == 130, text[-3000:]
    lines = [x for x in text.splitlines() if x.strip() and x.strip() != "^C"]
    after = lines[[i for i, x in enumerate(lines) if "verifying" in x][0] + 1:]
    assert len(after) == 1 and "interrupted" in after[0], text[-3000:]
    for noise in ("Traceback", "Task was destroyed", "Exception ignored", "RuntimeError",
                  "never awaited"):
        assert noise not in text, text[-3000:]


def test_a_redirected_sweep_logs_its_progress(tmp_path, monkeypatch):
    """Without a terminal there is no bar: a line every LOG_EVERY_SECONDS says how far
    the sweep is, and it reaches the job's log."""
    from antiamp.sweeps import progress

    monkeypatch.setattr(progress, "LOG_EVERY_SECONDS", 0.0)
    r = run_command("antiamp-sweep", SWEEP[:1] + ["sweep.cells_per_block=1",
                                                  "run.n_instances=1000", "sweep.plot=false"],
                    tmp_path)
    assert r.returncode == 0, r.stderr
    log = (tmp_path / "outputs" / "sweeps" / "adhoc-baseline" / "antiamp-sweep.log").read_text()
    lines = [x for x in log.splitlines() if "blocks done" in x]
    assert len(lines) >= 5, log
    m = re.search(r"sweep: (\d+) of 20 blocks done \((\d+) of 20 cells, \d+%\) in .*, "
                  r"[\d.]+ blocks/s, about .* left", lines[0])
    assert m and m.group(1) == m.group(2), lines[0]
    assert "all 20 blocks done" in log
    # a run shorter than the interval logs no progress line
    monkeypatch.setattr(progress, "LOG_EVERY_SECONDS", 3600.0)
    r = run_command("antiamp-sweep", SWEEP[:1] + ["run.n_instances=1000", "sweep.plot=false",
                                                  "sweep.name=quiet"], tmp_path)
    assert r.returncode == 0 and "blocks done" not in r.stdout, r.stdout


def test_an_interrupted_store_is_called_interrupted_not_damaged(tmp_path):
    r = run_command("antiamp-sweep", SWEEP[:1] + ["sweep.cells_per_block=5",
                                                  "run.n_instances=1000", "sweep.plot=false"],
                    tmp_path)
    assert r.returncode == 0, r.stderr
    store = tmp_path / "outputs" / "sweeps" / "adhoc-baseline" / "sweep.zarr"
    g = zarr.open_group(str(store), mode="r+")
    g["cell_done"][10:] = False  # the run stopped after two of its four blocks
    g.attrs["complete"] = 0
    r = run_command("antiamp-check", [store], tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "2 of 4 blocks not finished" in r.stdout, r.stdout
    assert "interrupted, no damage found" in r.stdout, r.stdout
    assert "DAMAGED" not in r.stdout
    # real damage beside the unfinished blocks is still called damage
    counts = g["class_counts"][:]
    counts.flat[0] += 1
    g["class_counts"][:] = counts
    r = run_command("antiamp-check", [store], tmp_path)
    assert r.returncode == 1 and "DAMAGED" in r.stdout, r.stdout
    # a model grid cut off before its store was written
    part = tmp_path / "grid.zarr.partial"
    part.mkdir()
    r = run_command("antiamp-check", [tmp_path / "grid.zarr"], tmp_path)
    assert r.returncode == 1 and "interrupted" in r.stdout, r.stdout + r.stderr


@pytest.mark.parametrize("model_args", [[], ["model=signals", "sweep.axes.signals.eta=[0,0.3]"]])
def test_no_lock_file_is_left_beside_a_finished_store(tmp_path, model_args):
    args = (model_args or ["sweep.axes.model.rho=[0.1,0.4]"]) + ["run.n_instances=1000",
                                                                 "sweep.plot=false"]
    r = run_command("antiamp-sweep", args, tmp_path)
    assert r.returncode == 0, r.stderr
    d = next((tmp_path / "outputs" / "sweeps").iterdir())
    assert sorted(p.name for p in d.iterdir()) == [".hydra", "antiamp-sweep.log", "sweep.zarr"]
    # a lock file left by an earlier run (empty, beside antiamp's store) goes too
    (d / "sweep.zarr.lock").touch()
    r = run_command("antiamp-sweep", args, tmp_path)
    assert r.returncode == 0, r.stderr
    assert not (d / "sweep.zarr.lock").exists()


def test_a_lock_file_antiamp_did_not_make_stays(tmp_path):
    """An empty file at the lock's path beside a directory that is not antiamp's
    store: not provably antiamp's, so it is left."""
    from antiamp.sweeps.lockpath import lock_store

    store = tmp_path / "mine.zarr"
    store.mkdir()
    (tmp_path / "mine.zarr.lock").touch()
    lock_store(store, RuntimeError).release()
    assert (tmp_path / "mine.zarr.lock").exists()
    fresh = tmp_path / "new.zarr"
    lock_store(fresh, RuntimeError).release()  # made by this lock: removed with it
    assert not (tmp_path / "new.zarr.lock").exists()


def test_a_lock_only_removes_the_file_it_holds(tmp_path):
    """Release removes the lock file only while the path still names the file this
    lock holds: a lock whose file was removed (by the run before it) is known as
    such, and a file put in its place since is left."""
    from filelock import FileLock

    from antiamp.sweeps import lockpath

    path = tmp_path / "s.zarr.lock"
    stale = FileLock(str(path), timeout=0)
    stale.acquire()
    try:
        path.unlink()  # the previous holder removed the file this one had opened
        assert not lockpath._names_locked_file(stale, path)
        lockpath.lock_store(tmp_path / "s.zarr", RuntimeError).release()  # not blocked
    finally:
        stale.release()
    held = lockpath.lock_store(tmp_path / "t.zarr", RuntimeError)
    other = tmp_path / "t.zarr.lock"
    other.unlink()
    other.touch()  # another run's lock file, made after this one's was removed
    held.release()
    assert other.exists()


# ----------------------------------------------------------------------------- typos
@pytest.mark.parametrize("prog,args,want", [
    ("antiamp", ["model.roh=0.4"], "model.roh: no such field; did you mean model.rho=0.4?"),
    ("antiamp", ["run.n_instance=5"], "did you mean run.n_instances=5?"),
    ("antiamp", ["modle.rho=0.3"], "did you mean model.rho=0.3?"),
    ("antiamp", ["model=panel", "panel.sise=3"], "did you mean panel.size=3?"),
    ("antiamp", ["model.zzzz=1"], "model.zzzz: no such field; model has name, pi, p, rho"),
    ("antiamp", ["model=panle"], "model=panle: no such model; did you mean model=panel?"),
    ("antiamp", ["judge=logti"], "judge=logti: no such judge option; did you mean judge=logit?"),
    ("antiamp-sweep", ["model=sginals"], "did you mean model=signals?"),
    ("antiamp-sweep", ["sweep=amp_gapp"], "did you mean sweep=amp_gap?"),
    ("antiamp", ["--n-instances", "1000"], "try antiamp run.n_instances=1000"),
    ("antiamp", ["--seed=3"], "try antiamp run.seed=3"),
    ("antiamp-sweep", ["--n-instances", "1000"], "try antiamp-sweep run.n_instances=1000"),
    # a section given a value is not answered with itself as "did you mean"
    ("antiamp-solve", ["model=panel"], "model=panel: this command has no model choice"),
    ("antiamp", ["run=fast"], "run=fast: this command has no run choice"),
    # a group given a number, a boolean or null: Hydra's bare ValueError, a traceback
    ("antiamp", ["judge=1"], "judge=1: judge takes the name of one of its options (logit, "
                             "tiebreak)"),
    ("antiamp", ["model=null"], "model=null: model takes the name of one of its options"),
    ("antiamp-sweep", ["executor=true"], "executor=true: executor takes the name of one"),
    ("antiamp", ["=1"], "=1: nothing before '=' names what it sets"),
    ("antiamp", ["~model.rho"], "~model.rho: a field cannot be deleted"),
])
def test_misspelt_names_and_options_get_the_closest_name(tmp_path, prog, args, want):
    r = run_command(prog, args, tmp_path)
    assert r.returncode == 2, r.stdout + r.stderr
    assert want in r.stderr, r.stderr
    for noise in ("To append to your config", "Config search path", "Lexer", "usage:",
                  "Traceback", "caused by"):
        assert noise not in r.stderr, r.stderr
    assert not (tmp_path / "outputs").exists()
    assert len(r.stderr.strip().splitlines()) <= 2, r.stderr


@pytest.mark.parametrize("prog,args,want", [
    ("antiamp-estimate", ["--sample", "--round", "99999999999999999999999"],
     "argument --round: must be final or a round number in [1, 10,000]"),
    ("antiamp-estimate", ["--sample", "--n-resamples", "x"], "argument --n-resamples"),
    ("antiamp-design", ["--seed", "abc"], "argument --seed"),
    ("antiamp-plot", [], "the following arguments are required: store"),
    ("antiamp-merge", ["x.zarr"], "the following arguments are required: -o/--out"),
    ("antiamp-discover", ["x.zarr"], "the following arguments are required: --where"),
    ("antiamp-check", ["--bogus", "x.zarr"], "unrecognized arguments: --bogus"),
    ("antiamp", ["--info", "model.rho=2"], "argument --info/-i: invalid choice"),
    ("antiamp-sweep", ["--info", "bad"], "argument --info/-i: invalid choice"),
])
def test_a_refused_option_is_one_line_not_a_usage_block(tmp_path, prog, args, want):
    """Every command's refused --option is one line, as every other refusal (argparse
    printed its usage block above it: 15 lines for antiamp-estimate)."""
    r = run_command(prog, args, tmp_path)
    assert r.returncode == 2, r.stdout + r.stderr
    err = r.stderr.strip()
    assert err.startswith(f"{prog}: error: ") and want in err, err
    assert len(err.splitlines()) == 1 and "usage:" not in err, err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("prog,args,want", [
    ("antiamp", ["model.rho=abc"], "model.rho=abc: not a number; model.rho must lie in [0, 1]"),
    ("antiamp", ["run.n_instances=1e3"],
     "run.n_instances=1e3: not an integer; run.n_instances must be an integer >= 1 and <= "
     "100,000,000,000,000"),
    ("antiamp", ["run.seed=1.5"], "run.seed=1.5: not an integer; run.seed must be an integer"),
    ("antiamp", ["model=panel", "panel.size=x"],
     "panel.size=x: not an integer; panel.size must be an integer >= 1 and <= 501"),
    ("antiamp", ["run.progress=maybe"],
     "run.progress=maybe: run.progress must be true or false (or null)"),
    ("antiamp-sweep", ["sweep.axes.model.rho=[0.1]", "judge.b=x"],
     "judge.b=x: not a number; judge.b must lie in [0, 1]"),
    ("antiamp-solve", ["model.c_e=x"], "model.c_e=x: not a number; model.c_e must"),
])
def test_a_value_of_the_wrong_type_names_the_field_and_its_range(tmp_path, prog, args, want):
    """A value OmegaConf cannot convert gets the field's allowed values, not OmegaConf's
    report (its full_key, reference_type and object_type lines)."""
    r = run_command(prog, args, tmp_path)
    assert r.returncode == 2, r.stdout + r.stderr
    assert want in r.stderr, r.stderr
    for noise in ("reference_type", "object_type", "full_key", "caused by", "Traceback"):
        assert noise not in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not (tmp_path / "outputs").exists()


@pytest.mark.parametrize("prog,extra", [("antiamp", ["run.n_instances=1000"]),
                                        ("antiamp-sweep", ["sweep.axes.model.rho=[0.1]",
                                                           "run.n_instances=1000"])])
@pytest.mark.parametrize("where", ["a_file", "a_file/sub"])
def test_a_run_directory_on_an_existing_file_is_refused_naming_the_field(tmp_path, prog,
                                                                         extra, where):
    (tmp_path / "a_file").write_text("mine\n")
    before = sorted(p.name for p in tmp_path.iterdir())
    r = run_command(prog, [*extra, f"hydra.run.dir={where}"], tmp_path)
    assert r.returncode == 2, r.stdout + r.stderr
    assert f"hydra.run.dir={where}: " in r.stderr and "not a directory" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert (tmp_path / "a_file").read_text() == "mine\n"


def test_misspelt_field_in_a_multirun_job_names_the_job(tmp_path):
    r = run_command("antiamp", ["-m", "model.roh=0.1,0.3"], tmp_path)
    assert r.returncode == 2
    assert "job model.roh=0.1: model.roh: no such field; did you mean model.rho=0.1?" \
        in r.stderr, r.stderr


# ----------------------------------------------------------------------------- ad hoc sweeps
def test_ad_hoc_sweeps_of_two_models_get_their_own_directories(tmp_path):
    """Following the README in order: an ad hoc baseline sweep, then another model's
    (the plugin example's): both run, each into its own directory."""
    a = run_command("antiamp-sweep", ["sweep.axes.model.rho=[0.1,0.4]", "run.n_instances=1000",
                                      "sweep.plot=false"], tmp_path)
    b = run_command("antiamp-sweep", ["model=signals", "sweep.axes.signals.eta=[0,0.3]",
                                      "run.n_instances=1000", "sweep.plot=false"], tmp_path)
    assert a.returncode == 0 and b.returncode == 0, a.stderr + b.stderr
    sweeps = tmp_path / "outputs" / "sweeps"
    assert sorted(p.name for p in sweeps.iterdir()) == ["adhoc-baseline", "adhoc-signals"]
    assert zarr.open_group(str(sweeps / "adhoc-signals" / "sweep.zarr"),
                           mode="r").attrs["model"] == "signals"


# ----------------------------------------------------------------------------- notebooks
def test_no_tqdm_warning_in_a_notebook_without_ipywidgets(monkeypatch):
    """In a Jupyter kernel without ipywidgets the progress bar is tqdm's text bar,
    chosen without tqdm.auto's TqdmWarning."""
    import importlib.util
    import types

    from antiamp import runner

    class ZMQInteractiveShell:
        config = {"IPKernelApp": {}}

    fake = types.ModuleType("IPython")
    fake.get_ipython = lambda: ZMQInteractiveShell()
    monkeypatch.setitem(sys.modules, "IPython", fake)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False, raising=False)
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "ipywidgets" else real(name, *a))
    assert runner.interactive()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cls = runner.tqdm_class()
        bar = cls(total=3, disable=True)
        bar.update(3)
        bar.close()
    from tqdm import tqdm as text_bar

    assert cls is text_bar


# ----------------------------------------------------------------------------- not a grid
@pytest.fixture(scope="module")
def not_grids(tmp_path_factory):
    """A store of one cell (antiamp) and one of estimates (antiamp-estimate)."""
    d = tmp_path_factory.mktemp("notgrids")
    r = run_command("antiamp", ["run.n_instances=1000", "run.figure=false",
                                "hydra.run.dir=cell"], d)
    e = run_command("antiamp-estimate", ["--sample", "--n-resamples", "10", "--out", "est"], d)
    assert r.returncode == 0 and e.returncode == 0, r.stderr + e.stderr
    return {"cell": (d / "cell" / "results.zarr", "one cell of antiamp (model baseline)"),
            "estimates": (d / "est" / "estimates.zarr", "the estimates of antiamp-estimate")}


@pytest.mark.parametrize("kind", ["cell", "estimates"])
@pytest.mark.parametrize("prog,args", [("antiamp-plot", ["--out", "figs"]),
                                       ("antiamp-discover", ["--where", "amp > 0.5"]),
                                       ("antiamp-merge", ["-o", "m.zarr"])])
def test_grid_commands_say_a_store_is_not_a_grid(tmp_path, not_grids, kind, prog, args):
    """Not "its sweep was interrupted" (such a store never had a sweep to finish)."""
    store, what = not_grids[kind]
    r = run_command(prog, [*args, store], tmp_path)
    assert r.returncode == 2, r.stdout + r.stderr
    assert f"{store} holds {what}, not a grid" in r.stderr, r.stderr
    assert "interrupted" not in r.stderr and "not complete" not in r.stderr, r.stderr
    assert list(tmp_path.iterdir()) == []


def test_a_grid_computed_whole_plots_without_allow_incomplete(tmp_path):
    """antiamp-solve writes its grid whole, once done, with no sweep's complete flag:
    antiamp-plot and antiamp-discover read it as finished (they said its sweep was
    interrupted and asked for --allow-incomplete)."""
    r = run_command("antiamp-solve", ["sweep.axes.model.c_e=[0,0.4]",
                                      "sweep.axes.judge.b=[0.2,0.8]", "hydra.run.dir=run"],
                    tmp_path)
    assert r.returncode == 0, r.stderr
    store = tmp_path / "run" / "equilibria.zarr"
    p = run_command("antiamp-plot", [store, "--out", "figs", "--formats", "png"], tmp_path)
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "figs" / "amp.png").is_file()
    d = run_command("antiamp-discover", [store, "--where", "n_equilibria_debate > 0",
                                         "--out", "disc"], tmp_path)
    assert "interrupted" not in d.stderr and "not complete" not in d.stderr, d.stderr
    assert "the condition holds in 4 of 4 cases" in d.stderr, d.stderr  # read, then judged
