"""The GPU check's plumbing without a GPU and without a network.

``benchmarks/gpu_offline.py`` (the wheelhouse for machines without a network): which
wheels an offline install takes, the pip command it runs, its refusals;
``benchmarks/bench_gpu.py``'s adaptive timings and its Markdown from a run's records
(a run cut short included).  Downloading the wheelhouse needs the network and is
checked by hand (the script's docstring says how); ``benchmarks/gpu_check.sh --smoke``
runs the whole check on numba's CUDA simulator.
"""

import json
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import bench_gpu  # noqa: E402
import gpu_offline as go  # noqa: E402

WHEELS = ["antlr4_python3_runtime-4.9.3-py3-none-any.whl", "hydra_core-1.3.8-py3-none-any.whl",
          "numcodecs-0.16.6-cp312-cp312-manylinux_2_28_x86_64.whl",
          "pip-26.3-py3-none-any.whl", "PyYAML-6.0.4-cp312-cp312-manylinux_2_28_x86_64.whl",
          "zarr-3.1.6-py3-none-any.whl"]


def _wheelhouse(tmp_path, python=None, sizes=None):
    wh = tmp_path / "wheelhouse"
    wh.mkdir()
    for w in WHEELS:
        (wh / w).write_bytes(b"\0" * (sizes or {}).get(w, 10))
    py = python or f"{sys.version_info.major}.{sys.version_info.minor}"
    (wh / go.MANIFEST).write_text(json.dumps({
        "python_version": py, "platforms": ["manylinux_2_28_x86_64"],
        "requirements": ["zarr>=3.0", "hydra-core>=1.3.2", "pyyaml>=6"],
        "build": ["setuptools>=77", "pip"], "wheels": WHEELS, "left_out": ["numpy"]}))
    return wh


def test_only_the_missing_wheels_are_installed(tmp_path):
    manifest = json.loads((_wheelhouse(tmp_path) / go.MANIFEST).read_text())
    have = {"pyyaml": "6.0.1", "hydra-core": "1.3.2", "pip": "24.0", "numpy": "2.5.0"}
    todo = go.plan(manifest, have)
    assert todo == ["antlr4_python3_runtime-4.9.3-py3-none-any.whl",
                    "numcodecs-0.16.6-cp312-cp312-manylinux_2_28_x86_64.whl",
                    "zarr-3.1.6-py3-none-any.whl"]
    assert go.plan(manifest, {go.wheel_name(w): "1" for w in WHEELS}) == []


def test_names_are_normalised():
    assert go.norm("Hydra_Core") == go.norm("hydra.core") == "hydra-core"
    assert go.wheel_name("PyYAML-6.0.4-cp312-cp312-manylinux_2_28_x86_64.whl") == "pyyaml"
    assert go.wheel_name("antlr4_python3_runtime-4.9.3-py3-none-any.whl") == \
        "antlr4-python3-runtime"
    assert go.is_present("nvidia-cuda-nvcc-cu12", set()) and go.is_present("numpy", {"numpy"})
    assert not go.is_present("zarr", {"numpy"})


def test_the_install_command_resolves_nothing_and_reaches_no_index(tmp_path):
    wh = _wheelhouse(tmp_path)
    cmd = go.install_command(wh, ["zarr-3.1.6-py3-none-any.whl"], project=ROOT)
    assert cmd[0] == "install" and {"--no-index", "--no-deps"} <= set(cmd)
    assert cmd[cmd.index("--find-links") + 1] == str(wh)
    assert "--upgrade" not in cmd and "-U" not in cmd  # nothing installed is replaced
    assert cmd[-2:] == [str(wh / "zarr-3.1.6-py3-none-any.whl"), str(ROOT)]
    tgt = go.install_command(wh, [], target=tmp_path / "site", project=None)
    assert tgt[tgt.index("--target") + 1] == str(tmp_path / "site") and tgt[-1] == "--upgrade"
    env = go._offline_env()
    assert env["PIP_CONFIG_FILE"] and not any(k.startswith("PIP_") and k != "PIP_CONFIG_FILE"
                                              for k in env)


def test_install_refuses_a_wheelhouse_of_another_python_before_running_pip(tmp_path,
                                                                         monkeypatch):
    wh = _wheelhouse(tmp_path, python="2.7")
    monkeypatch.setattr(go.subprocess, "run", lambda *a, **k: pytest.fail("pip was run"))
    with pytest.raises(SystemExit, match=r"wheelhouse is for CPython 2\.7, this is "
                                         r"3\.\d+ .*--python-version 3\.\d+"):
        go.main(["install", "--wheelhouse", str(wh)])
    with pytest.raises(SystemExit, match="manifest.json not found: run .*download"):
        go.main(["install", "--wheelhouse", str(tmp_path)])


def test_install_dry_run_names_the_missing_wheels_only(tmp_path, capsys):
    wh = _wheelhouse(tmp_path)
    assert go.main(["install", "--wheelhouse", str(wh), "--dry-run", "--no-project"]) == 0
    cmd = capsys.readouterr().out.strip().splitlines()[-1]
    # Exactly the wheels whose package this Python lacks, and not antiamp (--no-project).
    have = go.installed_versions()
    for w in WHEELS:
        assert (str(wh / w) in cmd) == (go.wheel_name(w) not in have), w
    assert str(ROOT) not in cmd.split()


def test_the_size_limit(tmp_path, capsys):
    wh = _wheelhouse(tmp_path, sizes={"numcodecs-0.16.6-cp312-cp312-manylinux_2_28_x86_64.whl":
                                      3 << 20})
    assert go.show(wh, max_mib=4) == 0
    assert go.show(wh, max_mib=2) == 1
    out = capsys.readouterr()
    assert "3.00 MiB  numcodecs" in out.out and "exceeds --max-mib 2" in out.err


def test_the_requirements_come_from_pyproject():
    reqs = go.project_requirements()
    names = {go._req_name(r) for r in reqs["run"]}
    assert {"numba", "hydra-core", "zarr", "dask", "filelock", "salib"} <= names
    assert {go._req_name(r) for r in reqs["check"]} == set(go.CHECK_TOOLS)
    assert any(go._req_name(r) == "setuptools" for r in reqs["build"])


def test_freeze_files(tmp_path):
    f = tmp_path / "freeze.txt"
    f.write_text("numpy==2.5.0\nNumba_Cuda==0.30.4  # a comment\n-e git+https://x/y#egg=z\n"
                 "jax @ file:///wheels/jax.whl\n\n")
    assert go.read_freeze(f) == {"numpy": "2.5.0", "numba-cuda": "0.30.4", "jax": None}


def test_timings_grow_until_a_call_lasts_min_time():
    calls = []

    def fn(m):  # 1e5 units a second
        calls.append(m)
        time.sleep(m / 1e5)

    m, t = bench_gpu.timed(fn, 100, 10**9, 0.05, 3)
    assert 0.04 < t and m >= 5000 and calls[-3:] == [m, m, m]
    assert calls[:2] == [100, 100]  # one untimed call (compilation) first
    assert all(b >= 2 * a for a, b in zip(calls[1:-3], calls[2:-2]))  # grew each step
    calls.clear()
    assert bench_gpu.timed(fn, 100, 400, 10.0, 2)[0] == 400  # the cap wins
    calls.clear()
    assert bench_gpu.timed(fn, 7, 10**9, 0.0, 2)[0] == 7 and calls == [7, 7, 7]


def test_timings_are_not_stopped_by_a_slow_first_call():
    """A first call that compiles, and a later one slow by accident (a hiccup), do not
    leave the timing at a size whose calls last a fraction of min_time."""
    calls = []

    def fn(m, slow=(0, 2)):  # 1e5 units a second; calls 0 and 2 last 0.3 s more
        if len(calls) in slow:
            time.sleep(0.3)
        calls.append(m)
        time.sleep(m / 1e5)

    m, t = bench_gpu.timed(fn, 100, 10**9, 0.05, 3)
    assert t >= 0.025 and m >= 2500, (m, t, calls)


def test_markdown_from_records_of_a_run_cut_short(tmp_path):
    path = tmp_path / "bench.jsonl"
    log = bench_gpu.Log(str(path))
    log(kind="machine", gpu="NVIDIA H200", date="2026-01-01 00:00 UTC", cpu="x86_64",
        threads=16, python="3.12.3", numba="0.68.0", numpy="2.5.0", jax="0.11.2",
        simulator=False, args={"repeats": 3, "min_time": 0.2}, **{"numba-cuda": "0.30.4"})
    log(kind="floor", n=1 << 36, seconds=0.25, rate=2.7e11)
    log(kind="kernel", name="baseline (one cell)", floor_rate=2.7e11, same=True,
        gpu_rate=2.0e11, cpu_rate=0.8e9, jax_rate=2.0e9)
    log(kind="kernel", name="loop (256 paths), per case", floor_rate=2.7e11, same=False,
        error="AssertionError: the GPU's results differ from the CPU's")
    log(kind="sweep", model="signals", device="cuda", cells=10000, n=10**7, seconds=2.0)
    with open(path, "a") as f:
        f.write('{"kind": "sweep", "model": "signals", "dev')  # killed mid-line
    recs = bench_gpu.load_records(path)
    assert len(recs) == 5
    md = "\n".join(bench_gpu.render(recs))
    assert "NVIDIA H200" in md and "numba-cuda 0.30.4" in md
    assert "| baseline (one cell) | 2e+11 | 0.741 | 8e+08 | 250 | 2e+09 | 100 |" in md
    assert "| loop (256 paths), per case | - | - | - | - | - | - | failed: AssertionError" in md
    assert "| signals | 10000 | 1e+07 | GPU | 2.00 | 5e+10 |" in md
    assert bench_gpu.report(str(tmp_path / "absent.jsonl"))[2].startswith("No GPU figures yet")
    assert bench_gpu.report(str(path))[0].startswith("## GPU")
    assert "One run, medians of 3 calls" in md
    # the kernel's share of the GPU sweep: 10^11 instances at 2e11/s = 0.5 s of 2.0 s
    assert "signals at 1e+07 a cell" not in md  # no signals kernel record: no share
    recs.insert(3, {"kind": "kernel", "name": "signals (one cell)", "gpu_rate": 2e11})
    recs.insert(1, {"kind": "note", "text": "Put together from two runs."})
    recs[3] = dict(recs[3], note="the first run's")
    md = "\n".join(bench_gpu.render(recs))
    assert "One run" not in md and "Medians of 3 calls" in md
    assert "\nPut together from two runs.\n" in md
    assert "| baseline (one cell) (the first run's) | 2e+11 |" in md
    assert "signals at 1e+07 a cell: 0.50 s of kernel at 2e+11/s, 25% of its 2.00 s" in md
