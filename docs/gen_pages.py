"""Pages of the documentation generated from the code (run by ``docs/conf.py``).

* ``models/<name>.md``, one per model of the registry (``antiamp.registry``; no
  list of models here): its description (the package's docstring), its parameters
  as a table from the field declarations (``antiamp.config.declare`` and the ``#:``
  comments), its example cells, its grids, its named sweeps with their figures;
* ``models/index.md``, the table of models;
* ``guides/*.md``, the README's sections, each a page (headings one level up,
  links to figures and BENCHMARKS.md rewritten for the site).

Written into ``docs/models/`` and ``docs/guides/_readme/`` (ignored by git); a file
is rewritten only when its text changes, so that Sphinx rebuilds only what changed.
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


def _output(model, cfg: dict) -> list:
    """The first example cell, run (a few thousand instances): what the command prints
    and the metrics of its Dataset.  A model whose example stops working fails the
    build."""
    import antiamp

    run = {**cfg.get("run", {}), "progress": False}
    ds = antiamp.simulate({**cfg, "run": run})
    lines = ["Its output (the first example above; a small run, so wide intervals):", ""]
    if model.format_table is not None:
        lines += ["```text", model.format_table(ds).rstrip(), "```", ""]
    names = [v for v in ds.data_vars if not str(v).endswith("_se")]
    lines += ["### Metrics", "",
              "The variables of a cell's Dataset (`antiamp.simulate`; a grid's adds the "
              "grid's axes as dimensions); a `_se` variable beside a metric is its "
              "standard error.", "",
              "| variable | meaning | units | dimensions |", "|---|---|---|---|"]
    for v in names:
        a = ds[v].attrs
        se = " (± `_se`)" if f"{v}_se" in ds.data_vars else ""
        lines.append(f"| `{v}`{se} | {_cell(a.get('long_name', ''))} | {_cell(a.get('units', ''))} "
                     f"| {_cell(', '.join(map(str, ds[v].dims)))} |")
    return lines + [""]


def model_page(name: str, sweeps: dict) -> str:
    import importlib

    from antiamp.registry import builtin_config, get, summary

    pkg = importlib.import_module(f"antiamp.models.{name}")
    model = get(name)
    cfgmod = builtin_config(name)
    lines = [f"# `model={name}`: {summary(name)}", "", _description(pkg.__doc__), ""]
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


def models_index(names: list) -> str:
    from antiamp.registry import summary

    lines = ["# Models", "",
             "Every built-in model, generated from the registry "
             "(`antiamp.registry.builtin_names()`).  Each is a package "
             "`antiamp.models.<name>`; `antiamp model=<name>` runs one cell of it.", "",
             "| model | what it is |", "|---|---|"]
    lines += [f"| [`{n}`]({n}.md) | {_cell(summary(n))} |" for n in names]
    lines += ["", "Also: the [shared settings](shared.md) every model may read, and the "
              "[gallery of named sweeps](gallery.md).", "",
              "```{toctree}", ":hidden:", "", "shared", "gallery", *names, "```", ""]
    return "\n".join(lines)


#: The guides: page -> (title, README sections in order).  A README section that is
#: renamed or removed fails the build here (named, not silently dropped).
GUIDES = {
    "quickstart": ("Getting started", ["Two commands on a fresh machine", "Models and the two commands",
                                       "Overriding parameters", "Python API"]),
    "model": ("The model and its metrics", ["The model", "What the table means"]),
    "sweeps": ("Sweeps: a laptop, a dask cluster, SLURM", ["Sweeps"]),
    "estimation": ("Estimating from your own logs", ["Estimating the model from oversight logs"]),
    "design": ("Protocol design", ["Protocol design: the cheapest protocol that meets an Amp target"]),
    "own_model": ("Writing your own model", ["Write your own model"]),
    "reproducibility": ("Reproducibility and stores", ["Reproducibility"]),
    "layout": ("The layout of the code", ["Layout"]),
}


def readme_sections() -> dict:
    """The README's level-2 sections (heading -> text, without the heading), fenced
    code skipped when looking for headings."""
    out, current, buf, fence = {}, None, [], None
    for line in (ROOT / "README.md").read_text().splitlines():
        m = re.match(r"^(`{3,}|~{3,})", line)
        if m:
            fence = None if fence and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) \
                else (fence or m.group(1))
        if fence is None and line.startswith("## "):
            if current is not None:
                out[current] = buf
            current, buf = line[3:].strip(), []
        elif current is not None:
            buf.append(line)
    if current is not None:
        out[current] = buf
    return out


def _adapt(lines: list, level_up: int) -> str:
    """Headings ``level_up`` levels up (outside code), links made relative to the site."""
    out, fence = [], None
    for line in lines:
        m = re.match(r"^(`{3,}|~{3,})", line)
        if m:
            fence = None if fence and m.group(1)[0] == fence[0] else (fence or m.group(1))
        if fence is None:
            h = re.match(r"^(#{3,6}) ", line)
            if h:
                line = line[level_up:]
            line = line.replace("](docs/figures/", "](../figures/")
            line = line.replace("](BENCHMARKS.md)", "](../benchmarks.md)")
        out.append(line)
    return "\n".join(out)


def guide_pages() -> dict:
    sections = readme_sections()
    pages = {}
    for page, (title, heads) in GUIDES.items():
        missing = [h for h in heads if h not in sections]
        if missing:
            raise RuntimeError(f"docs/gen_pages.py: README.md has no section {missing!r} "
                               f"(guide {page}); update GUIDES")
        parts = [f"# {title}", "",
                 "```{note}\nThis page is the README's section"
                 f"{'s' if len(heads) > 1 else ''} {', '.join(repr(h) for h in heads)}.\n```", ""]
        for h in heads:
            if len(heads) > 1:
                parts += [f"## {h}", "", _adapt(sections[h], 0), ""]
            else:
                parts += [_adapt(sections[h], 1), ""]
        pages[page] = "\n".join(parts).rstrip() + "\n"
    return pages


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
    for page, text in guide_pages().items():
        written[f"guides/{page}.md"] = text
    for rel, text in written.items():
        _write(DOCS / rel, text)
    # Pages of models no longer registered are removed (the folder is generated).
    for p in (DOCS / "models").glob("*.md"):
        if f"models/{p.name}" not in written:
            p.unlink()
    return sorted(written)


if __name__ == "__main__":
    print("\n".join(generate()))
