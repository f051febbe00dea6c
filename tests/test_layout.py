"""The house's layout: a model is one package, and nothing outside it names it.

A built-in model lives in ``sim/models/<name>/`` (its settings, numerics, table and
figures) with its kernel in ``kernels/`` (GPU launchers in ``kernels/gpu/``); the registry finds it by a scan, so no
other module may name it: not by importing its package, not by choosing it
(``model=<name>``, ``"name": "<name>"``, ``name == "<name>"``), not by reading a
config section it owns (``cfg["signals"]``, ``"signals.eta"``, ``cfg.signals.``).
Named sweeps (``conf/sweep/``), the README and the tests are exempt: they are
where users and checks name models.

``KNOWN`` lists the mentions that remain, each with its reason; the test fails on a
new mention and on a listed one that is gone (so the list only shrinks).
"""

import importlib
import re
from pathlib import Path

import pytest

from antiamp.registry import builtin_names, builtin_config
from antiamp.config import EquilibriumConfig

ROOT = Path(__file__).resolve().parents[1]

#: (file, model) -> why the file still names the model.
KNOWN = {
    ("sim/config.py", "baseline"): "DEFAULT_MODEL: the model a config runs when it names none",
    ("sim/extended.py", "signals"): "antiamp-ext's default model (the older alias command)",
    ("sim/ext_cli.py", "signals"): "antiamp-ext, the older alias command of the section-5 models",
    ("sim/cli.py", "signals"): "an example in antiamp --help",
    ("sim/cli.py", "panel"): "an example in antiamp --help",
    ("sweeps/cli.py", "signals"): "an example in antiamp-sweep --help",
    ("sweeps/cli.py", "panel"): "an example in antiamp-sweep --help",
    ("sim/estimation/structural.py", "messages"): "the structural judge of oversight logs is the messages "
                                       "model's logit judge (estimation runs it on the engine)",
    ("sim/estimation/estimate.py", "confidence"): "not the model: the estimate store's interval level",
    ("sim/models/panel/config.py", "confidence"): "not the model: a jury rule named confidence",
    ("sim/estimation/estimators.py", "confidence"): "not the model: the estimate store's interval level",
    ("sim/estimation/estimate_report.py", "confidence"): "not the model: the estimate store's interval level",
    ("sim/estimation/estimate_check.py", "confidence"): "not the model: the estimate store's interval level",
    ("sim/design.py", "confidence"): "not the model: the estimate store's interval level",
    ("sim/models/panel/core.py", "confidence"): "not the model: a jury rule named confidence",
    ("sim/models/compare/core.py", "colmad"): "compare composes the other models (their public "
                                              "functions and sections)",
    ("sim/models/compare/core.py", "mediation"): "compare composes the other models",
    ("sim/models/compare/core.py", "redeliberation"): "compare composes the other models",
    ("sim/models/compare/core.py", "baseline"): "compare composes the other models",
    ("sim/models/compare/model.py", "colmad"): "compare composes the other models",
    ("sim/models/compare/model.py", "mediation"): "compare composes the other models",
    ("sim/models/compare/model.py", "redeliberation"): "compare composes the other models",
    ("sim/models/compare/__init__.py", "colmad"): "compare composes the other models",
    ("sim/models/compare/__init__.py", "mediation"): "compare composes the other models",
    ("sim/models/compare/__init__.py", "redeliberation"): "compare composes the other models",
    ("sim/models/compare/config.py", "colmad"): "compare composes the other models",
    ("sim/models/compare/config.py", "mediation"): "compare composes the other models",
    ("sim/models/compare/config.py", "redeliberation"): "compare composes the other models",
    ("sim/estimation/estimate.py", "options"): "a log with more than two answers is pointed to model=options",
    ("sim/__init__.py", "equilibrium"): "antiamp.solve, the top-level API of the equilibrium "
                                        "model",
    ("sim/models/portfolio/model.py", "signals"): "not the model: the dataset attribute "
                                                  "effort=off (no judge attention here)",
}


#: Config sections several models share (``antiamp.evidence_game``): a quoted name that is
#: also a shared section (``"equilibrium"``, a section and a dimension) is not the model.
SHARED = {"equilibrium": EquilibriumConfig}


def owned_sections() -> dict:
    """model -> the config sections it owns (declared by it and by no shared module)."""
    shared = SHARED
    return {n: {s for s, t in builtin_config(n).SECTIONS.items() if shared.get(s) is not t}
            for n in builtin_names()}


def patterns(name: str, sections: set) -> list:
    q = "[\"']"
    pats = [rf"models[./]{name}\b", rf"\bmodel={name}\b", rf"{q}name{q}\s*:\s*{q}{name}{q}",
            rf"name\s*[!=]=\s*{q}{name}{q}", rf"\bimport {name}\b"]
    if name not in SHARED:  # the section equilibrium.* is shared, not the model's
        pats += [rf"{q}{name}{q}", rf"from \.+{name}\b"]
    for s in sections:
        pats += [rf"{q}{s}{q}", rf"{q}{s}\.\w", rf"\.{s}\.\w", rf"\b{s}\.\*"]
    return [re.compile(p) for p in pats]


def sources() -> list:
    out = []
    for folder in ("sim", "sweeps", "kernels", "conf"):
        for p in sorted((ROOT / folder).rglob("*")):
            rel = p.relative_to(ROOT).as_posix()
            if p.suffix in (".py", ".yaml") and "__pycache__" not in p.parts \
                    and not rel.startswith("conf/sweep/"):
                out.append(rel)
    return out


def mentions() -> dict:
    """(file, model) -> the lines that name the model."""
    own = owned_sections()
    found: dict = {}
    for rel in sources():
        text = (ROOT / rel).read_text()
        for name in builtin_names():
            # A model's kernel module, and its GPU launchers beside the GPU helpers.
            if rel.startswith(f"sim/models/{name}/") or rel in (f"kernels/{name}.py",
                                                               f"kernels/gpu/{name}.py"):
                continue
            pats = patterns(name, own[name])
            lines = [ln.strip() for ln in text.splitlines() if any(p.search(ln) for p in pats)]
            if lines:
                found[(rel, name)] = lines
    return found


def test_the_built_in_models_are_packages_found_by_a_scan():
    names = builtin_names()
    on_disk = sorted(p.name for p in (ROOT / "sim" / "models").iterdir()
                     if (p / "__init__.py").is_file())
    assert sorted(names) == on_disk and len(names) >= 13
    for n in names:
        cfg = builtin_config(n)
        assert cfg.EXAMPLES and cfg.GRIDS, n
        assert all(isinstance(s, str) for s in cfg.SECTIONS), n
        assert importlib.import_module(f"antiamp.models.{n}").__doc__, n


def test_nothing_outside_a_model_names_it():
    found = mentions()
    new = {k: v for k, v in found.items() if k not in KNOWN}
    assert not new, "modules that name a model outside its package:\n" + "\n".join(
        f"  {f} names {m}: {lines[:3]}" for (f, m), lines in sorted(new.items()))
    gone = sorted(k for k in KNOWN if k not in found)
    assert not gone, f"no longer named (remove from KNOWN): {gone}"


@pytest.mark.parametrize("text, model", [
    ("from antiamp.models.loop import core", "loop"),
    ("from .models.signals.core import eta_range", "signals"),
    ('cfg = {"model": {"name": "colmad"}}', "colmad"),
    ("if cfg.model.name == 'panel':", "panel"),
    ('fields = ["signals.eta"]', "signals"),
    ("x = cfg.mediation.rounds", "mediation"),
    ('doc = "antiamp model=options K=3"', "options"),
])
def test_the_name_check_can_fail(text, model):
    pats = patterns(model, owned_sections()[model])
    assert any(p.search(text) for p in pats)
    others = [n for n in builtin_names() if n != model]
    assert not any(p.search("x = compute(rho, p)") for n in others
                   for p in patterns(n, owned_sections()[n]))


def test_every_models_table_writes_a_metric_one_way():
    """value ± se [exact]; no exact: value ± se; nothing simulated or SE 0: the exact
    value, marked; neither: a dash (once four conventions in four models)."""
    from antiamp.layout import pm

    nan = float("nan")
    assert pm(0.25, 0.01, 0.2512) == "0.2500 ± 0.0100 [0.2512]"
    assert pm(0.25, 0.01) == "0.2500 ± 0.0100"
    assert pm(nan, nan, 0.25) == pm(0.25, 0.0, 0.25) == "0.2500 (exact)"
    assert pm(nan, nan, nan) == "-"
    assert pm(0.123456, 0.001, 0.12, digits=2) == "0.12 ± 0.00 [0.12]"
    for name in ("colmad", "compare", "mediation", "redeliberation"):
        src = (ROOT / "sim" / "models" / name / "model.py").read_text()
        assert not re.search(r"\}\s*±\s*\{", src), name  # no f"{v} ± {se}" of their own


# ----------------------------------------------------------------------------- private names
#: The installed package of each source folder (pyproject's package-dir).
PACKAGES = {"sim": "antiamp", "sweeps": "antiamp.sweeps", "kernels": "antiamp.kernels",
            "conf": "antiamp.conf"}


def module_of(rel: str) -> tuple[str, bool]:
    """(the dotted module of a source file, whether it is a package's ``__init__``)."""
    folder, *rest = rel[:-3].split("/")
    parts = PACKAGES[folder].split(".") + rest
    init = parts[-1] == "__init__"
    return ".".join(parts[:-1] if init else parts), init


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _model(module: str) -> str | None:
    """The model whose package holds ``module`` (``antiamp.models.<name>...``)."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[:2] == ["antiamp", "models"] else None


def _owner(module: str) -> str:
    """Who may use ``module``'s private names: a model's package as a whole
    (``antiamp.models.<name>``); a kernel module with its GPU launcher
    (``antiamp.kernels.gpu.<x>`` is ``antiamp.kernels.<x>``'s second target, DESIGN's
    "One kernel, two targets"); any other module alone."""
    m = _model(module)
    if m is not None:
        return f"antiamp.models.{m}"
    parts = module.split(".")
    if parts[:3] == ["antiamp", "kernels", "gpu"] and len(parts) > 3:
        return ".".join(["antiamp", "kernels"] + parts[3:])
    return module


def _owner_of_name(full: str) -> str | None:
    """The owner of the first private part of the dotted name ``full`` (None where
    nothing in it is private or it is not antiamp's)."""
    parts = full.split(".")
    if parts[0] != "antiamp":
        return None
    for i, p in enumerate(parts):
        if _private(p) and full != "antiamp._version.__version__":  # the build's version
            return _owner(".".join(parts[:i]))
    return None


def private_imports(rel: str, text: str) -> list:
    """Private names (``_x``) of another module that module ``rel`` imports, or reads
    off a module it imported; a model's package counts as one module, and so does a
    kernel module with its GPU launcher (:func:`_owner`)."""
    import ast

    module, init = module_of(rel)
    own = _owner(module)
    package = module if init else module.rpartition(".")[0]
    found, aliases = [], {}
    tree = ast.parse(text)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = package.split(".")
            if node.level:
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for a in node.names:
                full = f"{target}.{a.name}"
                owner = _owner_of_name(full)
                if owner is not None and owner != own:
                    found.append(f"line {node.lineno}: from {target} import {a.name}")
                elif full.startswith("antiamp.") and owner is None:
                    aliases[a.asname or a.name] = full  # maybe a module, bound here
        elif isinstance(node, ast.Import):
            for a in node.names:
                owner = _owner_of_name(a.name)
                if owner is not None and owner != own:
                    found.append(f"line {node.lineno}: import {a.name}")
                elif a.name.startswith("antiamp.") and owner is None and a.asname:
                    aliases[a.asname] = a.name
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in aliases and _private(node.attr)
                and _owner(aliases[node.value.id]) != own):
            found.append(f"line {node.lineno}: {node.value.id}.{node.attr} "
                         f"({aliases[node.value.id]})")
    return found


def test_no_module_imports_a_private_name_of_another_module():
    """A module's private names are its own (a model's package and a kernel with its
    GPU launcher count as one): another model (compare composes four) or a shared
    module uses public functions (DESIGN: "Models are packages")."""
    bad = {}
    for rel in sources():
        if rel.endswith(".py"):
            got = private_imports(rel, (ROOT / rel).read_text())
            if got:
                bad[rel] = got
    assert not bad, "private names imported from another module:\n" + "\n".join(
        f"  {rel}: {lines}" for rel, lines in sorted(bad.items()))


@pytest.mark.parametrize("rel, text", [
    ("sim/models/compare/core.py", "from ..baseline.core import _setup\n"),
    ("sim/models/compare/core.py", "from ..colmad import core as cm\nx = cm._eta(1)\n"),
    ("sim/models/compare/core.py", "from antiamp.models.baseline import _grid\n"),
    ("sim/cli.py", "from .models.loop.core import _helper\n"),
    ("sweeps/blocks.py", "import antiamp.models.panel._masks\n"),
    ("sim/models/panel/core.py", "from ...judge import _dominant\n"),
    ("sim/models/confidence/core.py", "from ...kernels import confidence as kc\nkc._jury(1)\n"),
    ("sim/estimation/estimate.py", "from .logstats import _acc\n"),
    ("sweeps/engine.py", "from .blocks import _lock\n"),
    ("kernels/gpu/colmad.py", "from ..baseline import _class_index\n"),
])
def test_the_private_import_check_can_fail(rel, text):
    assert private_imports(rel, text)


def test_public_names_and_a_models_own_private_names_pass():
    assert not private_imports("sim/models/compare/core.py",
                               "from ..baseline.core import exact_values\n"
                               "from ..colmad import core as cm\nx = cm.eta_range(1)\n")
    assert not private_imports("sim/models/baseline/model.py",
                               "from .core import _setup\nfrom . import grid as _grid\n")
    assert not private_imports("sim/models/panel/core.py",
                               "from ...judge import dominant_presentation\n")
    assert not private_imports("kernels/gpu/colmad.py", "from ..colmad import _instance\n")
    assert not private_imports("sim/estimation/logs.py", "from . import logstats as _ls\nx = _ls.rate\n")


#: Most top-level modules of the package's own folder (``sim/*.py``): the log wing
#: lives in ``sim/estimation/``, the models in ``sim/models/``.
MAX_TOP_MODULES = 36


def test_the_package_folder_stays_small_and_the_log_wing_is_one_package():
    top = sorted(p.name for p in (ROOT / "sim").glob("*.py"))
    assert len(top) <= MAX_TOP_MODULES, f"{len(top)} top-level modules in sim/: {top}"
    wing = ROOT / "sim" / "estimation"
    for name in ("logs", "estimate", "estimators", "structural", "predictive", "inspect"):
        assert (wing / f"{name}.py").is_file(), name
        assert not (ROOT / "sim" / f"{name}.py").exists() or name == "estimate", name
    # antiamp.estimate is the API's first name: a facade, no code of its own
    facade = (ROOT / "sim" / "estimate.py").read_text()
    assert "def main" not in facade and "from .estimation.estimate import *" in facade


def test_nothing_below_the_log_wing_imports_it():
    """The engine, the models, the sweeps and the protocol advisor (which reads
    estimate stores, not logs) import nothing of the log wing: no module outside
    ``sim/estimation/`` but its facade ``antiamp.estimate`` imports
    ``antiamp.estimation``."""
    allowed = {"sim/estimate.py"}
    bad = []
    for folder in ("sim", "sweeps", "kernels"):
        for p in sorted((ROOT / folder).rglob("*.py")):
            rel = p.relative_to(ROOT).as_posix()
            if rel.startswith("sim/estimation/") or rel in allowed:
                continue
            text = p.read_text()
            if re.search(r"^\s*(from\s+(\.+estimation|antiamp\.estimation)\b|import\s+antiamp"
                         r"\.estimation\b|from\s+\.+\s+import\s+.*\bestimation\b)"
                         r"|lazy\([\"']antiamp\.estimation", text, re.M):
                bad.append(rel)
    assert not bad, f"modules below the log wing that import it: {bad}"
