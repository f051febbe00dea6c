"""``antiamp warm``: every warming run reaches its kernels without error, and the
command refuses a model it does not know."""

import subprocess
import sys

import pytest

from antiamp.registry import builtin_names
from antiamp.warm import _one, runs

RUNS = runs()


def test_every_built_in_model_ships_an_example_that_warms_it():
    named = {(cfg.get("model") or {}).get("name") for _, cfg in RUNS}
    assert named == set(builtin_names())


@pytest.mark.parametrize("item", RUNS, ids=[w for w, _ in RUNS])
def test_every_warming_run_succeeds(item):
    what, seconds, err = _one(item)
    assert err is None, f"{what}: {err}"
    assert seconds >= 0


def test_warm_refuses_an_unknown_model_and_explains_itself():
    cmd = [sys.executable, "-c", "from antiamp.cli import main; main()"]
    bad = subprocess.run(cmd + ["warm", "now"], capture_output=True, text=True)
    assert bad.returncode == 2 and "MODEL must be a registered model" in bad.stderr
    assert "got now" in bad.stderr
    ok = subprocess.run(cmd + ["warm", "--help"], capture_output=True, text=True)
    assert ok.returncode == 0 and "usage: antiamp warm [MODEL ...]" in ok.stdout
