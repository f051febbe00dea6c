"""What a resumed run reads from disk is data, checked before it is used: chunks of an
interrupted store that are damaged, swapped, of another run or crafted to run code
are recomputed, and one store has one lock whatever path names it."""

from limits import limit
import pickle

import numpy as np
import pytest
import xarray as xr

from antiamp.sweeps import blocks
from antiamp.sweeps.blocks import plan_grid, run_grid_store
from antiamp.sweeps.driver import verify

GRID = {"model": {"name": "signals", "c_e": 0.4}, "judge": {"b": 0.7},
        "signals": {"phi": 0.3}, "equilibrium": {"payoffs": "simulated"},
        "run": {"n_instances": 20_000},
        "sweep": {"axes": {"signals": {"eta": [0.0, 0.2, 0.4]}, "model": {"p": [0.7, 0.9]}},
                  "cells_per_block": 1}}
VOLATILE = ("created", "run_seconds", "solve_seconds")


def _quiet(*a):
    pass


def assert_bit_identical(a: xr.Dataset, b: xr.Dataset):
    assert set(a.variables) == set(b.variables)
    for v in a.variables:
        x, y = a[v].values, b[v].values
        assert x.dtype == y.dtype and x.shape == y.shape, v
        if x.dtype.kind in "fc":
            assert np.array_equal(x.view(f"u{x.dtype.itemsize}") if x.dtype.kind == "f" else x,
                                  y.view(f"u{y.dtype.itemsize}") if y.dtype.kind == "f" else y), v
        else:
            assert np.array_equal(x, y), v
        assert a[v].attrs == b[v].attrs, v
    strip = lambda d: {k: v for k, v in d.attrs.items() if k not in VOLATILE}  # noqa: E731
    assert strip(a) == strip(b)


def _interrupted(cfg, store, n_blocks, monkeypatch):
    """A run of ``cfg`` into ``store`` stopped (Ctrl-C) after ``n_blocks`` blocks."""
    import zarr

    calls = {"n": 0}
    real = blocks.run_block

    def dying(*a, **k):
        calls["n"] += 1
        if calls["n"] > n_blocks:
            raise KeyboardInterrupt
        return real(*a, **k)

    monkeypatch.setattr(blocks, "run_block", dying)
    with pytest.raises(KeyboardInterrupt):
        run_grid_store(cfg, store, progress=False, log=_quiet)
    monkeypatch.setattr(blocks, "run_block", real)
    group = zarr.open_group(str(store), mode="r")
    assert int(np.asarray(group["cell_done"][...]).sum()) == n_blocks
    assert group.attrs["complete"] == 0


class _Payload:
    """A pickle that, once loaded, writes a marker file: foreign code run."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (exec, (f"open({self.marker!r}, 'w').write('foreign code ran')",))


def test_tampered_chunks_of_an_interrupted_store_are_recomputed_never_trusted(tmp_path,
                                                                             monkeypatch):
    ref_store = tmp_path / "ref.zarr"
    run_grid_store(GRID, ref_store, progress=False, log=_quiet)
    ref = xr.open_zarr(ref_store).load()

    store = tmp_path / "s.zarr"
    _interrupted(GRID, store, 5, monkeypatch)
    plan = plan_grid(GRID)
    regions = plan.regions()
    from antiamp.sweeps.verify import block_name

    names = [block_name(plan.grid.dims, r) for r in regions]

    def chunk(var, k):  # block k's chunk of ``var`` (one cell a block)
        i, j = regions[k][0].start, regions[k][1].start
        return store / var / ".".join(map(str, (i, j) + (0,) * (
            len(xr.open_zarr(ref_store)[var].dims) - 2)))

    marker = tmp_path / "MARKER"
    # A crafted pickle in place of a chunk.
    chunk("amp", 0).write_bytes(pickle.dumps(_Payload(marker)))
    # One flipped bit in a block's values (decompressed: the chunk rewritten with it).
    import zarr

    group = zarr.open_group(str(store), mode="r+")
    v = np.asarray(group["acc"][regions[1]])
    v.view(np.uint64).flat[0] ^= 1 << 20
    group["acc"][regions[1]] = v
    # Two sound chunks swapped.
    a, b = chunk("welfare", 2), chunk("welfare", 3)
    ba, bb = a.read_bytes(), b.read_bytes()
    a.write_bytes(bb)
    b.write_bytes(ba)
    # A sound chunk of another run (another seed), same cell.
    other = {**GRID, "run": {**GRID["run"], "seed": 99}}
    run_grid_store(other, tmp_path / "other.zarr", progress=False, log=_quiet)
    chunk("fwc", 4).write_bytes((tmp_path / "other.zarr" / chunk("fwc", 4).relative_to(
        store)).read_bytes())
    plan_grid(GRID)  # the run below validates GRID again, not the other plan

    msgs = []
    ds = run_grid_store(GRID, store, progress=False, log=msgs.append).load()
    text = "\n".join(msgs)
    assert not marker.exists(), "a crafted pickle in the store ran its code"
    assert_bit_identical(ref, ds)
    for k in range(5):
        line = [m for m in msgs if m.startswith(f"damaged block {names[k]}:")]
        assert line and "recomputed" in line[0], text
    assert "resuming" in text and "1 of 6 blocks left" in text
    # The finished store is sound by antiamp-check's verification.
    assert verify(blocks.ModelBlocks(plan), store, repair=False, log=_quiet).ok


def test_a_store_whose_array_asks_for_pickles_is_never_unpickled(tmp_path):
    """A crafted store: an array of Python objects stored with the pickle codec.
    antiamp-check (and a rerun reading the store) never run what it holds."""
    import json

    from cli_runner import run_command

    store = tmp_path / "S.zarr"
    (store / "x").mkdir(parents=True)
    (store / ".zgroup").write_text(json.dumps({"zarr_format": 2}))
    (store / ".zattrs").write_text(json.dumps({"antiamp_version": "0", "model": "signals",
                                               "sweep_json": "{}", "config_json": "{}"}))
    (store / "x" / ".zarray").write_text(json.dumps({
        "zarr_format": 2, "shape": [2], "chunks": [2], "dtype": "|O", "compressor": None,
        "fill_value": None, "filters": [{"id": "pickle", "protocol": 5}], "order": "C"}))
    (store / "x" / ".zattrs").write_text(json.dumps({"_ARRAY_DIMENSIONS": ["cell"]}))
    marker = tmp_path / "MARKER"
    (store / "x" / "0").write_bytes(pickle.dumps(_Payload(marker)))
    r = run_command("antiamp-check", [store], tmp_path)
    assert r.returncode in (1, 2) and "Traceback" not in r.stderr, r.stdout + r.stderr
    with pytest.raises(Exception):  # noqa: B017 - whatever the reader says, no code runs
        xr.open_zarr(store, consolidated=False).load()
    assert not marker.exists(), "a pickle inside a store ran its code"


def test_every_models_store_holds_its_blocks_exactly(tmp_path):
    """Every model's grid written block by block into its store reads back as the grid
    computed in memory in one block: variables, dtypes, values, attributes."""
    import antiamp
    from antiamp.registry import get

    for name in antiamp.models.names():
        if get(name).fused_grid is not None:  # its store holds its counts (test_fused_grid)
            continue
        cfg = {"model": {"name": name, "rho": 0.3},
               **({} if name == "mediation" else {"judge": {"kind": "logit"}}),
               "run": {"n_instances": 2000}, "loop": {"rounds": 3, "paths": 4, "batch": 50},
               "sweep": {"axes": {"model": {"rho": [0.2, 0.6, 0.7]}}, "cells_per_block": 1}}
        if name != "loop":
            cfg.pop("loop")
        mem = blocks.run_grid(cfg, progress=False)
        st = antiamp.sweep(cfg, tmp_path / f"{name}.zarr", progress=False, log=_quiet).load()
        st = st.drop_vars(["cell_done", "cell_digest"])
        assert set(mem.variables) == set(st.variables), (name, set(mem.variables)
                                                         ^ set(st.variables))
        for v in mem.variables:
            x, y = mem[v].values, st[v].values
            assert x.shape == y.shape, (name, v)
            if x.dtype.kind in "OUS":
                assert (x.astype(str) == y.astype(str)).all(), (name, v)
            else:
                assert x.dtype == y.dtype, (name, v)
                assert np.asarray(x).tobytes() == np.asarray(y).tobytes(), (name, v)
            assert mem[v].attrs == st[v].attrs, (name, v)


# ----------------------------------------------------------------------------- one lock
def _cli(prog, args, cwd):
    import shutil
    import subprocess

    return subprocess.run([shutil.which(prog), *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=limit(600))


SWEEP_ARGS = {"baseline": ["sweep.axes.model.rho=[0.2,0.6]", "run.n_instances=1000"],
              "signals": ["model=signals", "sweep.axes.signals.eta=[0.0,0.3]",
                          "run.n_instances=1000"]}


@pytest.mark.parametrize("model", sorted(SWEEP_ARGS))
def test_one_store_under_two_names_has_one_lock(tmp_path, model):
    """A process is writing a store; a second process naming the same store through
    a link (the store's own path a link, or a linked directory above it) is refused,
    exit 2, before any directory is made and without touching the store."""
    from antiamp.sweeps.lockpath import lock_store

    real = tmp_path / "real"
    real.mkdir()
    store = real / "S.zarr"
    (tmp_path / "alias").symlink_to(real, target_is_directory=True)
    (real / "alias.zarr").symlink_to(store, target_is_directory=True)
    lock = lock_store(store, RuntimeError)  # the first process, writing
    try:
        for name, why in ((real / "alias.zarr", "is a symbolic link"),
                          (tmp_path / "alias" / "S.zarr", f"lock {real / 'S.zarr.lock'} is held")):
            r = _cli("antiamp-sweep", SWEEP_ARGS[model] + [
                f"sweep.store={name}", "sweep.plot=false", "hydra.run.dir=run"], tmp_path)
            assert r.returncode == 2 and why in r.stderr, (name, r.stdout + r.stderr)
            assert "Traceback" not in r.stderr
            assert not (tmp_path / "run").exists()
            assert sorted(p.name for p in real.iterdir()) == ["S.zarr.lock", "alias.zarr"]
            assert (real / "alias.zarr").is_symlink()
    finally:
        lock.release()


@pytest.mark.parametrize("model", sorted(SWEEP_ARGS))
def test_a_lock_file_that_is_a_link_is_refused_and_check_leaves_no_lock(tmp_path, model):
    store = tmp_path / "S.zarr"
    r = _cli("antiamp-sweep", SWEEP_ARGS[model] + [f"sweep.store={store}", "sweep.plot=false",
                                                   "hydra.run.dir=first"], tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    lockf = tmp_path / "S.zarr.lock"
    lockf.unlink(missing_ok=True)
    r = _cli("antiamp-check", [store], tmp_path)
    assert r.returncode == 0 and "sound" in r.stdout, r.stdout + r.stderr
    assert not lockf.exists() and not lockf.is_symlink()
    for target in (lockf, tmp_path / "elsewhere"):  # a loop, and a link to another file
        lockf.symlink_to(target)
        for prog, args in (("antiamp-check", ["--repair", store]), ("antiamp-check", [store]),
                           ("antiamp-sweep", SWEEP_ARGS[model] + [
                               f"sweep.store={store}", "sweep.plot=false",
                               "hydra.run.dir=run"])):
            r = _cli(prog, args, tmp_path)
            assert r.returncode == 2, (prog, r.stdout, r.stderr)
            assert "lock file" in r.stderr and "is a symbolic link" in r.stderr, r.stderr
            assert "Traceback" not in r.stderr and "Too many levels" not in r.stderr
        assert not (tmp_path / "elsewhere").exists() and not (tmp_path / "run").exists()
        lockf.unlink()


# ----------------------------------------------------------------------------- command lines
AXIS = "sweep.axes.model.rho=[0.2,0.6]"
BAD_LINES = [
    ("antiamp-sweep", ["--config-name=sweep_config", "run.n_instances=0", AXIS],
     "run.n_instances must be"),
    ("antiamp-sweep", ["-cn", "sweep_config", "judge.b=7", AXIS], "judge.b"),
    ("antiamp-sweep", ["-m", "--config-name=sweep_config", "run.n_instances=1000,0", AXIS],
     "job run.n_instances=0"),
    ("antiamp-sweep", ["--multirun", "hydra.job.chdir=true", "run.n_instances=1000,0", AXIS],
     "job hydra.job.chdir=true run.n_instances=0"),
    ("antiamp-sweep", ["hydra.run.dir=", AXIS], "hydra.run.dir must name a directory"),
    ("antiamp-sweep", ["hydra.run.dir=null", AXIS], "hydra.run.dir must name a directory"),
    ("antiamp-sweep", ["-m", "hydra.sweep.dir=", AXIS], "hydra.sweep.dir must name a directory"),
    ("antiamp-sweep", ["-m", "hydra.sweep.subdir=''", AXIS],
     "hydra.sweep.subdir must name a directory"),
    ("antiamp-sweep", ["hydra.job.chdir=maybe", AXIS], "hydra.job.chdir must be true or false"),
    ("antiamp-sweep", ["hydra.output_subdir=../x", AXIS], "hydra.output_subdir must be"),
    ("antiamp-sweep", ["--experimental-rerun", "config.pickle"], "never loads"),
    ("antiamp", ["--config-name=config", "model.rho=2"], "model.rho"),
    ("antiamp", ["-m", "-cn", "config", "model.rho=0.3,2"], "job model.rho=2"),
    ("antiamp", ["hydra.job.chdir=maybe"], "hydra.job.chdir must be true or false"),
    ("antiamp", ["hydra.run.dir="], "hydra.run.dir must name a directory"),
    ("antiamp", ["--config-dir", "{confdir}", "--config-name", "mine"], "run.n_instances"),
    ("antiamp", ["-m", "--config-dir", "{confdir}", "-cn", "mine", "model.rho=0.2,0.4"],
     "run.n_instances"),
]


@pytest.mark.parametrize("prog, args, msg", BAD_LINES,
                         ids=[f"{p}:{' '.join(a)}" for p, a, _ in BAD_LINES])
def test_every_command_line_hydra_accepts_is_checked_before_any_directory(
        tmp_path, prog, args, msg):
    from cli_runner import run_command

    confdir = tmp_path / "conf"
    confdir.mkdir()
    (confdir / "mine.yaml").write_text("defaults:\n  - config\n  - _self_\n"
                                       "run:\n  n_instances: 0\n")
    work = tmp_path / "work"
    work.mkdir()
    r = run_command(prog, [a.format(confdir=confdir) for a in args], work)
    assert r.returncode == 2, r.stdout + r.stderr
    assert msg in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert list(work.iterdir()) == [], "a directory was made before the command was refused"


# ----------------------------------------------------------------------------- Ctrl-C
#: Run in the child: the real antiamp-sweep, with every compiled kernel, once it has
#: run once (compiled or loaded), called again and again until Ctrl-C arrives, so
#: that the Ctrl-C lands while a kernel runs (as a long kernel would have it).
_DRIVER = """
import sys
from numba.core.registry import CPUDispatcher

_call = CPUDispatcher.__call__
_state = {"hold": False}

def call(self, *a, **k):
    out = _call(self, *a, **k)
    if not _state["hold"]:
        _state["hold"] = True
        sys.stdout.write("\\nIN-KERNEL " + self.py_func.__name__ + "\\n")
        sys.stdout.flush()
    while True:
        out = _call(self, *a, **k)

CPUDispatcher.__call__ = call
from antiamp.sweeps.cli import main
sys.argv = ["antiamp-sweep"] + sys.argv[1:]
main()
"""


def _model_args(name):
    """Command-line overrides of a small grid of model ``name`` that validates (its
    judge a logit judge where it needs one), on simulated payoffs where it has them."""
    import antiamp

    model = antiamp.models.get(name)
    base = {"model": {"name": name}, "run": {"n_instances": 20_000},
            "sweep": {"axes": {"model": {"rho": [0.2, 0.6]}}, "cells_per_block": 1}}
    if "equilibrium" in model.sections:
        base["equilibrium"] = {"payoffs": "simulated"}
    for extra in ({}, {"judge": {"kind": "logit"}}):
        cfg = {**base, **extra}
        try:
            plan_grid(cfg)
        except Exception:  # noqa: BLE001 - the next variant
            continue
        args = [f"model={name}", "sweep.axes.model.rho=[0.2,0.6]", "run.n_instances=20000",
                "sweep.cells_per_block=1", "sweep.plot=false", "hydra.run.dir=run"]
        if "equilibrium" in model.sections:
            args.append("equilibrium.payoffs=simulated")
        if extra:
            args.append("judge=logit")
        return args
    pytest.fail(f"no small grid of model {name} validates")


def _ctrl_c_in_a_kernel(tmp_path, name):
    """The sweep of model ``name`` in a pseudo-terminal; Ctrl-C typed while one of its
    kernels runs: one line, exit 130, no traceback."""
    import fcntl
    import os
    import pty
    import select
    import signal
    import subprocess
    import sys
    import termios
    import time

    driver = tmp_path / "driver.py"
    driver.write_text(_DRIVER)
    master, slave = pty.openpty()

    def child():
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # a terminal's default
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)  # the pty is the controlling terminal

    p = subprocess.Popen([sys.executable, str(driver), *_model_args(name)], cwd=tmp_path,
                         stdin=slave, stdout=slave, stderr=slave, start_new_session=True,
                         preexec_fn=child)
    os.close(slave)
    out, sent, t0 = b"", False, time.monotonic()
    try:
        while time.monotonic() - t0 < 300:
            ready, _, _ = select.select([master], [], [], 0.05)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # the child has closed the terminal
                    break
                if not chunk:
                    break
                out += chunk
            if not sent and b"IN-KERNEL" in out:
                time.sleep(0.3)  # well inside the repeated kernel calls
                os.write(master, b"\x03")  # Ctrl-C, typed
                sent = True
            if p.poll() is not None and not ready:
                break
    finally:
        if p.poll() is None:
            p.kill()
        p.wait()
        os.close(master)
    text = out.decode(errors="replace")
    assert sent, f"model {name}: no kernel ran: {text[-2000:]}"
    assert p.returncode == 130, f"model {name}: exit {p.returncode}: {text[-3000:]}"
    assert "interrupted" in text and "Traceback" not in text and "SystemError" not in text, text
    tail = text[text.index("IN-KERNEL"):].split("\n", 1)[1].strip().splitlines()
    assert [t for t in tail if t.strip() and "^C" not in t][-1:] and sum(
        "interrupted" in t for t in tail) == 1, text


#: Models whose Ctrl-C runs in the default tier (the baseline's engine, a model with
#: simulated payoffs, and the one whose kernel once answered with a SystemError).
CTRL_C_FAST = ("baseline", "signals", "loop")


def _all_models():
    import antiamp

    return antiamp.models.names()


@pytest.mark.parametrize("name", CTRL_C_FAST)
def test_ctrl_c_in_a_kernel_gives_one_line_and_exit_130(tmp_path, name):
    assert name in _all_models()
    _ctrl_c_in_a_kernel(tmp_path, name)


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in _all_models() if n not in CTRL_C_FAST])
def test_ctrl_c_in_every_models_kernel_gives_one_line_and_exit_130(tmp_path, name):
    _ctrl_c_in_a_kernel(tmp_path, name)


# ----------------------------------------------------------------------------- log fields
HEADER = "instance,protocol,stratum,judge_id,omega,a,y,e_P,e_A\n"
ROWS = ["0,consult,all,1,1,0,0,0,0", "1,debate,all,2,1,1,1,1,0", "2,debate,all,3,0,1,1,1,0",
        "3,consult,all,4,1,0,1,1,0"]


@pytest.mark.parametrize("row, col, value", [
    (3, "stratum", "x" * 200_000),
    (0, "judge_id", '"' + "ab,\n" * 50_000 + '"'),  # quoted: commas and newlines inside
    (2, "e_A", "1" * 70_000),
], ids=["long-label", "quoted-with-newlines", "long-number"])
def test_a_log_field_too_long_is_refused_naming_row_and_column(tmp_path, row, col, value):
    from antiamp.estimate import LogError, load_log

    names = HEADER.strip().split(",")
    lines = [r.split(",") for r in ROWS]
    lines[row][names.index(col)] = value
    path = tmp_path / "log.csv"
    path.write_text(HEADER + "\n".join(",".join(r) for r in lines) + "\n")
    with pytest.raises(LogError, match=rf"column '{col}', row {row}: a field longer than "
                                       r"65,536 bytes"):
        load_log(path)
    # Quoted commas and newlines inside a field are one field: a short one is read.
    lines[row][names.index(col)] = '"3,\n4"' if col == "stratum" else ROWS[row].split(",")[
        names.index(col)]
    path.write_text(HEADER + "\n".join(",".join(r) for r in lines) + "\n")
    assert len(load_log(path)) == 4


def test_a_100_mb_field_is_refused_in_bounded_memory(tmp_path):
    """The whole command on a log with one field of 100 MB: exit 2 naming the field,
    in a process whose peak memory stays far below the field's hundredfold."""
    import subprocess
    import sys

    path = tmp_path / "wide.csv"
    with open(path, "w") as fh:
        fh.write(HEADER + ROWS[0] + "\n" + "1,debate,all,")
        for _ in range(100):
            fh.write("x" * (1 << 20))
        fh.write(",1,1,1,1,0\n")
    code = ("import sys\nfrom antiamp.estimate import main\ntry:\n    main(sys.argv[1:])\n"
            "finally:\n    print([l for l in open('/proc/self/status') if "
            "l.startswith('VmHWM')][0], file=sys.stderr)\n")
    r = subprocess.run([sys.executable, "-c", code, str(path), "--out", str(tmp_path / "o")],
                       capture_output=True, text=True, timeout=limit(300))
    assert r.returncode == 2, r.stderr
    assert "column 'judge_id', row 1: a field longer than 65,536 bytes" in r.stderr, r.stderr
    peak_mb = int(r.stderr.split("VmHWM:")[1].split()[0]) / 1024
    assert peak_mb < 600, f"peak {peak_mb:.0f} MB reading a log with a 100 MB field"
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("sample", ["sample_log.csv", "michael2023_human_judges.csv"])
def test_a_log_read_in_pieces_gives_the_same_estimates_bit_for_bit(sample, monkeypatch):
    from importlib.resources import files

    from antiamp.estimation import logread
    from antiamp.estimate import EstimateOptions, estimate, load_log

    path = files("antiamp") / "data" / sample
    if not path.is_file():
        pytest.skip(f"no shipped {sample}")
    opts = EstimateOptions(n_resamples=200)
    monkeypatch.setattr(logread, "ROWS_PER_PIECE", 10**9)
    whole = load_log(path)
    monkeypatch.setattr(logread, "ROWS_PER_PIECE", 997)
    pieces = load_log(path)
    assert list(whole.columns) == list(pieces.columns)
    for c in whole.columns:
        assert whole[c].astype(object).equals(pieces[c].astype(object)), c
    # ... and the estimates of the log read whole by pandas, as before pieces.
    import pandas as pd

    from antiamp.estimate import validate_log

    plain = validate_log(pd.read_csv(path, dtype={"protocol": "category",
                                                  "stratum": "category"}))
    ref = estimate(plain, opts)
    for other in (estimate(whole, opts), estimate(pieces, opts)):
        assert set(ref.variables) == set(other.variables)
        for v in ref.variables:
            x, y = np.asarray(ref[v].values), np.asarray(other[v].values)
            assert x.dtype == y.dtype, v
            if x.dtype.kind == "f":
                assert np.array_equal(x.view(f"u{x.itemsize}"), y.view(f"u{y.itemsize}")), v
            else:
                assert np.array_equal(x, y), v
