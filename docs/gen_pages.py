"""Pages of the documentation generated from the code (run by ``docs/conf.py``).

* ``models/<name>.md``, one per model of the registry (``antiamp.registry``; no
  list of models here): its description (the package's docstring), its parameters
  as a table from the field declarations (``antiamp.config.declare`` and the ``#:``
  comments), its example cells, its grids, its named sweeps with their figures;
* ``models/index.md``, the table of models;
* ``models/results.md``, the result schema every model's Dataset follows, with each
  model's protocols and which metrics carry a standard error and an exact value (from
  its example cell, run once for its page);
and each model page links the guides (``docs/guides/*.md``, written by hand) that
link to it: its tutorial.

Written into ``docs/models/`` (ignored by git); a file is rewritten only when its
text changes, so that Sphinx rebuilds only what changed.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import yaml

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def _cell(value) -> str:
    """A table cell: one line, pipes escaped."""
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return _roles(" ".join(str(text).split()).replace("|", "\\|")) or " "


def _flat(d: dict, prefix: str = "") -> list:
    out = []
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and v and not (set(v) <= {"linspace", "logspace", "uniform"}):
            out += _flat(v, key + ".")
        else:
            out.append((key, v))
    return out


def _arg(key: str, value) -> str:
    text = json.dumps(value, separators=(",", ":")) if not isinstance(value, str) else value
    text = text.replace('"', "")
    return f"'{key}={text}'" if any(c in text for c in "[]{}, ") else f"{key}={text}"


def cell_command(cfg: dict) -> str:
    """``antiamp ...`` for an example config (``model.name`` as ``model=<name>``)."""
    args = []
    for key, value in _flat(cfg):
        args.append(f"model={value}" if key == "model.name" else _arg(key, value))
    return "antiamp " + " ".join(args)


def grid_command(cfg: dict) -> str:
    args = []
    for key, value in _flat(cfg):
        if key == "model.name":
            args.insert(0, f"model={value}")
        else:
            args.append(_arg(key, value))
    return "antiamp-sweep " + " ".join(args)


def _description(doc: str) -> str:
    """A model package's docstring without the paragraph on the package's layout."""
    paras = [p for p in (doc or "").strip().split("\n\n")
             if not p.strip().startswith("The package is the model")]
    return _roles("\n\n".join(" ".join(p.split()) for p in paras))


def _roles(text: str) -> str:
    """reStructuredText roles of docstrings (``:func:`x```) in MyST's spelling."""
    return re.sub(r":(mod|func|class|meth|attr|data|obj):`", r"{py:\1}`", text)


def parameter_table(section: str, cls: type) -> str:
    from antiamp.config import describe_values
    from antiamp.fields import declared
    from antiamp.helptext import field_docs

    docs = field_docs(cls)
    rows = ["| parameter | symbol | meaning | default | allowed | description |",
            "|---|---|---|---|---|---|"]
    for f in dataclasses.fields(cls):
        path = f"{section}.{f.name}"
        try:
            d = declared(path)
        except (KeyError, LookupError, ValueError):
            d = {}
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            default = ""
        sym = d.get("symbol") or ""
        rows.append(f"| `{path}` | {_cell(sym)} | {_cell(d.get('meaning') or '')} "
                    f"| `{_cell(default)}` | {_cell(describe_values(f))} "
                    f"| {_cell(docs.get(f.name, ''))} |")
    return "\n".join(rows)


def named_sweeps() -> dict:
    """Every named sweep (conf/sweep/*.yaml): name -> (model, summary)."""
    from antiamp.helptext import group_options, option_summary
    from antiamp.registry import DEFAULT_MODEL

    out = {}
    for name in group_options("sweep"):
        path = ROOT / "conf" / "sweep" / f"{name}.yaml"
        spec = yaml.safe_load(path.read_text()) or {}
        if not (spec.get("sweep") or {}).get("axes"):
            continue  # a template (sweep=adhoc: the axes come from the command line)
        model = ((spec.get("model") or {}).get("name")) or DEFAULT_MODEL
        out[name] = (model, option_summary("sweep", name))
    return out


def _figure(stem: str) -> str | None:
    for name in (f"{stem}.png", f"ext_{stem}.png"):
        if (DOCS / "figures" / name).is_file():
            return name
    return None


#: Each model's example cell, as run for its page (the results page reads them).
CELLS: dict = {}


def _output(model, cfg: dict) -> list:
    """The first example cell, run (a few thousand instances): what the command prints
    and the metrics of its Dataset.  A model whose example stops working fails the
    build."""
    import antiamp

    run = {**cfg.get("run", {}), "progress": False}
    ds = antiamp.simulate({**cfg, "run": run})
    CELLS[model.name] = ds
    lines = ["Its output (the first example above; a small run, so wide intervals):", ""]
    if model.format_table is not None:
        lines += ["```text", model.format_table(ds).rstrip(), "```", ""]
    names = [v for v in ds.data_vars if not str(v).endswith(("_se", "_exact"))
             or str(v).rsplit("_", 1)[0] not in ds.data_vars]
    lines += ["### Metrics", "",
              "The variables of a cell's Dataset (`antiamp.simulate`; a grid's adds the "
              "grid's axes as dimensions); a `_se` variable beside a metric is its "
              "standard error, an `_exact` one its exact value (see "
              "[the result schema](results.md)).", "",
              "| variable | meaning | units | dimensions |", "|---|---|---|---|"]
    for v in names:
        a = ds[v].attrs
        se = (" (± `_se`)" if f"{v}_se" in ds.data_vars else "") + (
            f" (exact: `{v}_exact`)" if f"{v}_exact" in ds.data_vars else "")
        lines.append(f"| `{v}`{se} | {_cell(a.get('long_name', ''))} | {_cell(a.get('units', ''))} "
                     f"| {_cell(', '.join(map(str, ds[v].dims)))} |")
    return lines + [""]


def model_page(name: str, sweeps: dict) -> str:
    import importlib

    from antiamp.registry import builtin_config, get

    pkg = importlib.import_module(f"antiamp.models.{name}")
    model = get(name)
    cfgmod = builtin_config(name)
    # a short title; the one-sentence summary opens the description below it (as the
    # heading it filled seven lines of large type)
    lines = [f"# `model={name}`", "", _description(pkg.__doc__), ""]
    lines += ["## One cell", ""]
    examples = getattr(cfgmod, "EXAMPLES", None) or []
    if not examples:
        lines += ["```bash", f"antiamp model={name}", "```", ""]
    for title, cfg in examples:
        head = f"{title[:1].upper()}{title[1:]}"
        if "sweep" in cfg:  # an example grid
            lines += [f"{head} (a grid):", "", "```bash", grid_command(cfg), "```", "",
                      "or from Python (in memory):", "", "```python", "import antiamp",
                      f"ds = antiamp.sweep({cfg!r})", "```", ""]
        else:
            lines += [f"{head}:", "", "```bash", cell_command(cfg), "```", "",
                      "or from Python:", "", "```python", "import antiamp",
                      f"ds = antiamp.simulate({cfg!r})", "```", ""]
    cells = [cfg for _, cfg in examples if "sweep" not in cfg]
    if cells:
        lines += _output(model, cells[0])
    fig = _figure(f"{name}_cell")
    if fig:
        lines += [f"![A cell of model={name}](../figures/{fig})", ""]
    guides = tutorials(name)
    if guides:
        lines += ["## Tutorial", "", "Worked through, with the commands and what they print: "
                  + ", ".join(f"[{title}](../guides/{file})" for title, file in guides) + ".",
                  ""]
    lines += ["## Parameters", ""]
    sections = dict(getattr(cfgmod, "SECTIONS", None) or model.sections or {})
    if sections:
        for sec, cls in sections.items():
            lines += [f"### `{sec}.*`", "", _roles(" ".join((cls.__doc__ or "").split())), "",
                      parameter_table(sec, cls), ""]
    shared = [s for s in model.uses if s not in sections]
    lines += [f"It also reads the shared sections {', '.join(f'`{s}.*`' for s in shared)} "
              "(see [shared settings](shared.md)).", ""]
    grids = getattr(cfgmod, "GRIDS", None) or []
    if grids:
        lines += ["## Grids", "",
                  "The model's own small grids (the conformance checks of "
                  "`antiamp.testing.check_model` run them):", ""]
        for g in grids:
            lines += ["```bash", grid_command(g), "```", ""]
    mine = {s: v for s, v in sweeps.items() if v[0] == name}
    if mine:
        lines += ["## Named sweeps", ""]
        for s, (_, text) in mine.items():
            lines += [f"### `{s}`", "", text + ("." if text and text[-1] not in ".)" else ""),
                      "", "```bash", f"antiamp-sweep sweep={s}", "```", ""]
            fig = _figure(s)
            if fig:
                lines += [f"![{s}](../figures/{fig})", ""]
    return "\n".join(lines).rstrip() + "\n"


def shared_page() -> str:
    from antiamp.config import Config
    from antiamp.registry import BASE_SECTIONS

    types = {f.name: f.default_factory for f in dataclasses.fields(Config)}
    lines = ["# Shared settings", "",
             "The sections every model may read (each model's page says which it reads).", ""]
    for sec in BASE_SECTIONS:
        cls = types.get(sec)
        if cls is None:
            continue
        lines += [f"## `{sec}.*`", "", _roles(" ".join((cls.__doc__ or "").split())), "",
                  parameter_table(sec, cls), ""]
    return "\n".join(lines).rstrip() + "\n"


def gallery(sweeps: dict) -> str:
    """Every named sweep: its model, what it shows, the command, its figure."""
    lines = ["# Gallery of named sweeps", "",
             "Every named sweep (`conf/sweep/*.yaml`), with the command that makes it "
             "and its figure (as drawn for `docs/figures/` by `python docs/make_figures.py`).",
             ""]
    for s, (model, text) in sweeps.items():
        lines += [f"## `{s}`", "", f"Model [`{model}`]({model}.md). {text}"
                  + ("." if text and text[-1] not in ".)" else ""), "",
                  "```bash", f"antiamp-sweep sweep={s}", "```", ""]
        fig = _figure(s)
        if fig:
            lines += [f"![{s}](../figures/{fig})", ""]
    return "\n".join(lines).rstrip() + "\n"


RESULTS_INTRO = """# The result schema

Every model returns an `xarray.Dataset` (`antiamp.simulate` for one cell,
`antiamp.sweep` for a grid, the same in a store) whose variables follow one schema,
so that analysis code written for one model runs on every other:

- `<metric>`: the simulated estimate (or the value the model computes), with
  `long_name`, `units` and `ancillary_variables = "<metric>_se"`;
- `<metric>_se`: its Monte Carlo standard error, same dimensions (0 where the value
  is exact), with `long_name = "standard error of <long_name>"` and the metric's
  `units`;
- `<metric>_exact`: its exact value (closed form, enumeration or quadrature), where
  the model has an exact path, with `long_name = "exact value of <long_name>"` and
  the metric's `units`.

A grid adds its axes as the leading dimensions (a design: one dimension `point`, the
swept fields as coordinates along it); the model's own dimensions follow
(`protocol`, `equilibrium`, `round`...).  The `protocol` coordinate carries a
`long_name` and a `description` of its values, which differ between models (below).

```python
import antiamp

ds = antiamp.simulate({"model": {"name": "colmad"}, "judge": {"kind": "logit"}})
for m in ds.data_vars:
    if f"{m}_se" in ds and f"{m}_exact" in ds:      # the same loop for every model
        z = (ds[m] - ds[f"{m}_exact"]) / ds[f"{m}_se"]
```

`antiamp.testing.check_model` holds every model to the schema (its `schema`
check, on the model's grids and on one cell), a third-party model included:
`antiamp.schema.problems(ds)` lists where a Dataset departs from it, and
`antiamp.schema.label(ds)` gives a model's companions their attributes (the engines
apply it to every model's output).

**Stores of the former names.** Before this schema the baseline's exact values were
called `<metric>_theory`.  A store written then is read under the current names:
`antiamp-plot`, `antiamp-check` (which verifies it as it is, and repairs it under its
own names), `antiamp-merge` (whose merged store has the current names), a sweep
resumed into it and `antiamp.sweeps.blocks.open_store` (which `antiamp.sweep(cfg,
store=...)` returns) rename them on opening (`antiamp.schema.upgrade`); a plain
`xarray.open_zarr` shows the names as stored.

**Metrics without an exact value.** A metric with no `_exact` has no exact path in
its model: a fitted parameter or a statistic of the shipped data, a simulated
path's endpoint, a quantity of a simulated equilibrium.  The models with
`equilibrium.payoffs` (the equilibrium models of section 5) solve their equilibrium
on exact payoffs by default: their metrics are then themselves the exact values at
that equilibrium and `<metric>_se` is the standard error a simulation of
`run.n_instances` instances would have; with `equilibrium.payoffs=simulated` the
equilibrium is solved on simulated payoffs and the metrics are simulated (an exact
value beside them would be that of another equilibrium).  Their contrast `amp_gap`
carries no standard error yet.

**The field's metrics beside Amp.** Wherever a model reports Amp (`amp`) and
follow-when-correct (`fwc`) of the same protocols, its Dataset also carries the
**Agent Score Difference** `asd` = fwc - Amp (Sudhir et al. 2025, "A Benchmark for
Scalable Oversight Mechanisms"): how much more the protagonist earns arguing the
truth than a falsehood when the judge's verdict is the reward (win 1, lose 0; the
sides' evidence costs are not part of it).  `asd_se` is sqrt(fwc_se² + amp_se²):
the two condition on the disjoint events a = ω and a ≠ ω of independent instances,
so their estimates are uncorrelated; where they are not (an equilibrium solved from
the simulated counts moves both, a comparison's mediations build Amp from
follow-when-correct's run) the model writes its own `asd_se` through the
covariance.  `asd_exact` = fwc_exact - amp_exact where both exist.  One function
adds them to every model's cell and grid (`antiamp.schema.derive`, applied with the
schema's labels); the baseline's metric table (`antiamp.metrics.PROTOCOL_METRICS`)
lists `asd`, so the fused sweep engine's stores carry it too.  A model without
follow-when-correct has no `asd` (below).

The **judge's ROC AUC against ground truth**, `auc`, is defined where the judge reads
every transcript class with one probability: the models that evaluate seed 000's
judge tables per transcript class (`antiamp.metrics.evaluate`), whose reading of a
class is J = Pr(y = a | the evidence shown).  `auc` = Pr(J of a right argument > J
of a wrong one) + Pr(tie) / 2 over the instances, per protocol, equal to
scikit-learn's `roc_auc_score` on the instances the class counts stand for;
`auc_se` by the delta method on the multinomial class frequencies (asymptotically
DeLong's variance), checked against the spread over independent seeds;
`auc_exact` from the class probabilities.  The other models give their judge no
such reading per transcript (a continuous latent, a verdict over several rounds or
answers, a detector's or a human's decision): they carry no `auc`, and their
section below says so.  For a log, `antiamp-estimate` reports the judge's AUC from
its stated probabilities (`p_y`) with DeLong's standard error.

## Each model
"""


def results_page(names: list) -> str:
    """The result schema, and each model's protocols and metrics (from its example
    cell, as run for its own page)."""
    from antiamp.registry import get
    from antiamp.schema import companions

    lines = [RESULTS_INTRO]
    for n in names:
        ds = CELLS.get(n)
        lines += [f"### [`{n}`]({n}.md)", ""]
        if ds is None:
            lines += ["(no example cell)", ""]
            continue
        if "protocol" in ds.coords:
            p = ds["protocol"]
            lines += [f"`protocol` ({_cell(p.attrs.get('long_name', ''))}): "
                      + ", ".join(f"`{v}`" for v in p.values)
                      + (f"; {_cell(p.attrs['description'])}" if p.attrs.get("description")
                         else "") + ".", ""]
        comp = companions(ds.data_vars)
        both = [m for m, s in comp.items() if len(s) == 2]
        se_only = [m for m, s in comp.items() if s == ["_se"]]
        ex_only = [m for m, s in comp.items() if s == ["_exact"]]
        for what, ms in (("with `_se` and `_exact`", both), ("with `_se` only", se_only),
                         ("with `_exact` only", ex_only)):
            if ms:
                lines += [f"- {what}: " + ", ".join(f"`{m}`" for m in ms)]
        if not comp:
            lines += ["- no metric of this cell carries `_se` or `_exact` (exact payoffs: "
                      "every value is exact)" if ds.attrs.get("payoffs") == "exact" else
                      "- no metric of this cell carries `_se` or `_exact`"]
        field = [f"`{m}`" for m in ("asd", "auc") if m in ds.data_vars]
        lines += ["- the field's metrics: " + (", ".join(field) if field else "none")
                  + ("" if "asd" in ds.data_vars else
                     "; no `asd`: the cell has no follow-when-correct beside Amp")
                  + ("" if "auc" in ds.data_vars else
                     "; no `auc`: its judge gives no probability per transcript class")]
        if "equilibrium" in get(n).uses and "payoffs" in ds.attrs:
            lines += [f"- the cell's payoffs: {ds.attrs['payoffs']} (`equilibrium.payoffs`)"]
        lines += [""]
    return "\n".join(lines).rstrip() + "\n"


def models_index(names: list) -> str:
    from antiamp.registry import summary

    lines = ["# Models", "",
             "Every built-in model, generated from the registry "
             "(`antiamp.registry.builtin_names()`).  Each is a package "
             "`antiamp.models.<name>`; `antiamp model=<name>` runs one cell of it.", "",
             "| model | what it is |", "|---|---|"]
    lines += [f"| [`{n}`]({n}.md) | {_cell(summary(n))} |" for n in names]
    lines += ["", "Also: the [shared settings](shared.md) every model may read, "
              "[the result schema](results.md) every model's Dataset follows, and the "
              "[gallery of named sweeps](gallery.md).", "",
              "```{toctree}", ":hidden:", "", "shared", "results", "gallery", *names, "```",
              ""]
    return "\n".join(lines)


def tutorials(name: str) -> list:
    """The guides (``docs/guides/*.md``, written by hand) that link to the model's page,
    as (title, file name): a guide says which models it is about, no list here."""
    out = []
    for p in sorted((DOCS / "guides").glob("*.md")):
        text = p.read_text()
        if f"](../models/{name}.md)" in text:
            out.append((text.splitlines()[0].lstrip("# ").strip(), p.name))
    return out


def commands() -> list:
    """Every command line the generated model pages print (for the tests)."""
    out = []
    for p in sorted((DOCS / "models").glob("*.md")):
        block = None
        for line in p.read_text().splitlines():
            if line.startswith("```"):
                block = line[3:] if block is None else None
            elif block == "bash" and line.startswith("antiamp"):
                out.append(line)
    return out


def generate() -> list:
    """Write every generated page; the paths written (relative to docs/)."""
    from antiamp.registry import builtin_names

    names = list(builtin_names())
    sweeps = named_sweeps()
    written = {"models/index.md": models_index(names), "models/shared.md": shared_page(),
               "models/gallery.md": gallery(sweeps)}
    for n in names:
        written[f"models/{n}.md"] = model_page(n, sweeps)
    written["models/results.md"] = results_page(names)  # after the pages: their cells
    for rel, text in written.items():
        _write(DOCS / rel, text)
    # Pages of models no longer registered are removed (the folder is generated).
    for p in (DOCS / "models").glob("*.md"):
        if f"models/{p.name}" not in written:
            p.unlink()
    return sorted(written)


if __name__ == "__main__":
    print("\n".join(generate()))
