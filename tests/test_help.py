"""``--help`` and ``--version`` of every command."""

from limits import limit
import dataclasses
import subprocess
import sys

import pytest

import antiamp
from antiamp.helptext import field_docs
from antiamp.registry import get, section_types

HYDRA = {"antiamp": "antiamp.cli", "antiamp-sweep": "antiamp.sweeps.cli",
         "antiamp-solve": "antiamp.models.equilibrium.cli", "antiamp-ext": "antiamp.ext_cli"}
ARGPARSE = {"antiamp-estimate": "antiamp.estimate", "antiamp-plot": "antiamp.sweeps.plot",
            "antiamp-merge": "antiamp.sweeps.merge", "antiamp-check": "antiamp.sweeps.check",
            "antiamp-design": "antiamp.design", "antiamp-discover": "antiamp.sweeps.discover"}


def _run(module, args):
    return subprocess.run([sys.executable, "-c", f"import sys; from {module} import main; "
                           "sys.exit(main())", *args], capture_output=True, text=True,
                          timeout=limit(120))


@pytest.mark.parametrize("prog", list(HYDRA) + list(ARGPARSE))
def test_version_names_antiamp(prog):
    r = _run({**HYDRA, **ARGPARSE}[prog], ["--version"])
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"{prog} (antiamp {antiamp.__version__})"


def test_the_version_is_the_installed_distributions():
    """``antiamp.__version__`` is a literal (no metadata lookup at start-up) that the
    build reads: the installed package must report the same."""
    from importlib.metadata import version

    assert antiamp.__version__ == version("antiamp")


@pytest.mark.parametrize("prog", list(ARGPARSE))
def test_argparse_help(prog):
    r = _run(ARGPARSE[prog], ["--help"])
    assert r.returncode == 0 and r.stdout.startswith("usage:"), r.stderr


@pytest.mark.parametrize("model", ["baseline", "signals", "panel", "portfolio", "messages",
                                   "options", "equilibrium", "loop"])
def test_help_describes_every_field_the_model_reads(model):
    r = _run("antiamp.cli", [f"model={model}", "--help"])
    assert r.returncode == 0, r.stderr
    m = get(model)
    types = {**{f.name: f.default_factory for f in dataclasses.fields(antiamp.Config)},
             **section_types()}
    reads = set(m.uses) | set(m.sections)
    for sec, cls in types.items():
        for f in dataclasses.fields(cls):
            line = [ln for ln in r.stdout.splitlines() if ln.strip().startswith(f"{sec}.{f.name} =")]
            if sec in reads:
                assert line, f"{sec}.{f.name} missing from the help of model={model}"
                doc = field_docs(cls).get(f.name)
                if doc:  # the description's first words follow the default
                    assert doc.split()[0] in line[0], (sec, f.name, line[0])
            else:
                assert not line, f"{sec}.{f.name} shown for model={model}, which does not read it"


def test_help_shows_the_composed_defaults():
    """Defaults come from the schema, the chosen group files and the primary config."""
    r = _run("antiamp.sweeps.cli", ["sweep=jury", "--help"])
    assert r.returncode == 0, r.stderr
    assert "run.n_instances = 1000000" in r.stdout  # sweep_config.yaml's own value
    assert "sweep.name = jury" in r.stdout  # the named sweep's file
    r = _run("antiamp.cli", ["judge=logit", "--help"])
    assert "judge.kind = logit" in r.stdout


@pytest.mark.parametrize("prog", list(HYDRA))
def test_hydra_commands_help(prog):
    r = _run(HYDRA[prog], ["--help"])
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"{prog}: ") and "config groups" in r.stdout
    assert "judge.b = 0.5" in r.stdout


def test_help_for_an_unknown_model_is_refused():
    r = _run("antiamp.cli", ["model=nosuch", "--help"])
    assert r.returncode == 2 and "model.name must be one of" in r.stderr


def test_progress_bars_default_on_in_terminals_and_notebooks_only(monkeypatch):
    import types

    from antiamp.runner import interactive

    monkeypatch.setattr(sys.stderr, "isatty", lambda: False, raising=False)
    monkeypatch.delitem(sys.modules, "IPython", raising=False)
    assert not interactive()  # a CI log, a redirected file

    class ZMQInteractiveShell:  # what a Jupyter kernel's get_ipython() returns
        pass

    fake = types.SimpleNamespace(get_ipython=lambda: ZMQInteractiveShell())
    monkeypatch.setitem(sys.modules, "IPython", fake)
    assert interactive()

    class TerminalInteractiveShell:  # plain IPython in a terminal whose stderr is piped
        pass

    fake.get_ipython = lambda: TerminalInteractiveShell()
    assert not interactive()
