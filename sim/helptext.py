"""``--help`` of the commands: what the command does, its config groups and every
field it reads, with its default and its meaning.

Built from the config dataclasses (their ``#:`` field comments) and the config
group files, without composing the config through Hydra and without loading the
numerical libraries: help answers in a fraction of a second.  Hydra's generic
help (which deep-copies the whole config repository once per config group, a few
seconds here) stays available as ``--hydra-help``.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import textwrap
from typing import Any, Mapping

CONFIG_MODULE = "antiamp.conf"
_DOC = re.compile(r"^\s*#:\s?(.*)$")
_FIELD = re.compile(r"^\s*(\w+)\s*:")


def field_docs(cls: type) -> dict:
    """``{field: text}`` from the ``#:`` comments above each field of a dataclass
    (the convention of Sphinx autodoc, which these classes follow)."""
    try:
        lines = inspect.getsource(cls).splitlines()
    except (OSError, TypeError):
        return {}
    out, pending = {}, []
    for line in lines:
        m = _DOC.match(line)
        if m:
            pending.append(m.group(1).strip().replace("``", ""))
            continue
        f = _FIELD.match(line)
        if f and pending:
            out[f.group(1)] = " ".join(pending)
        pending = [] if not m else pending
    return out


def _text(group: str | None, option: str):
    from importlib.resources import files

    root = files(CONFIG_MODULE)
    path = root.joinpath(group).joinpath(f"{option}.yaml") if group else \
        root.joinpath(f"{option}.yaml")
    return path.read_text() if path.is_file() else None


def _yaml(group: str | None, option: str):
    """(package, content, text) of a config file (``group/option.yaml`` or the
    primary config), or None when it does not exist."""
    import yaml

    text = _text(group, option)
    if text is None:
        return None
    content = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) or {}
    first = text.split("\n", 1)[0]
    pkg = "_global_" if "@package _global_" in first else (group or "_global_")
    return pkg, content, text


def group_options(group: str) -> list:
    """A config group's options: the registered models for ``model``, else its files."""
    from importlib.resources import files

    if group == "model":
        from .registry import names

        return sorted(names())
    d = files(CONFIG_MODULE).joinpath(group)
    return sorted(p.name[:-5] for p in d.iterdir() if p.name.endswith(".yaml"))


def option_summary(group: str, option: str) -> str:
    """One line on a group's option: a model's summary, or a file's first comment."""
    if group == "model":
        from .registry import summary

        return summary(option)
    text = _text(group, option)
    return _first_comment(text) if text else ""


def _first_comment(text: str) -> str:
    lines = []
    for line in text.splitlines():
        if line.startswith("# @package"):
            continue
        if not line.startswith("#"):
            break
        lines.append(line.lstrip("#").strip())
    return " ".join(lines).split(". ")[0].rstrip(".")


def _merge(base: dict, extra: Mapping) -> dict:
    out = dict(base)
    for k, v in (extra or {}).items():
        if isinstance(v, Mapping) and isinstance(out.get(k), Mapping):
            out[k] = _merge(out[k], v)
        else:
            out[k] = v
    return out


def _choices(args: list, config_name: str) -> tuple:
    """(group choices, defaults list) of the primary config with the command line's
    ``group=option`` overrides applied."""
    _, content, _ = _yaml(None, config_name)
    defaults = content.get("defaults", [])
    chosen = {}
    for d in defaults:
        if isinstance(d, dict):
            chosen.update(d)
    explicit = set()
    for a in args:
        if "=" in a and not a.startswith("-"):
            k, v = a.lstrip("+~").split("=", 1)
            if "." not in k and k in chosen:
                chosen[k] = v
                explicit.add(k)
            elif k == "model.name":
                chosen["model"] = v
    if "model" in chosen:  # the model's own group choices, unless the line chose
        from .config import ConfigError
        from .registry import group_defaults

        try:
            own = group_defaults(str(chosen["model"]))
        except ConfigError:
            own = {}
        for g, o in own.items():
            if g in chosen and g not in explicit:
                chosen[g] = o
    return chosen, content


def defaults_of(schema: type, args: list, config_name: str) -> dict:
    """The defaults Hydra would compose: the schema's, then each chosen group
    option in the defaults list, then the primary config's own values."""
    values = {f.name: dataclasses.asdict(f.default_factory())
              for f in dataclasses.fields(schema)
              if f.default_factory is not dataclasses.MISSING}
    chosen, content = _choices(args, config_name)
    for group, option in chosen.items():
        if option in (None, "null"):
            continue
        found = _yaml(group, str(option))
        if found is None:
            continue
        pkg, body, _ = found
        body = {k: v for k, v in body.items() if k not in ("defaults", "hydra")}
        values = _merge(values, body if pkg == "_global_" else {group: body})
    own = {k: v for k, v in content.items() if k not in ("defaults", "hydra")}
    return _merge(values, own)


def _fmt(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v) if abs(v) < 1e6 or v == 0 else f"{v:.6g}"
    return str(v) if not isinstance(v, (dict, list)) else (repr(v) if v else
                                                          ("{}" if isinstance(v, dict) else "[]"))


def render(prog: str, summary: str, usage: list, schema: type, args: list, config_name: str,
           sections: list | None = None, notes: list = ()) -> str:
    """The help text of one command."""
    from .config import describe_values

    chosen, _ = _choices(args, config_name)
    values = defaults_of(schema, args, config_name)
    out = textwrap.wrap(f"{prog}: {summary}", 88) + ["", "usage:"]
    out += [f"  {u}" for u in usage]
    out += ["", "config groups (group=option; the default first):"]
    for group, option in chosen.items():
        if group.startswith("antiamp"):
            continue
        opts = group_options(group)
        first = [str(option)] if str(option) in opts else []
        rest = [o for o in opts if o not in first]
        line = f"  {group:<9} " + ", ".join(first + rest)
        out += textwrap.wrap(line, 88, subsequent_indent=" " * 12)
        if group in ("model", "sweep"):
            for o in opts:
                text = option_summary(group, o)
                if text:
                    out += textwrap.wrap(f"      {o:<18} {text}", 88,
                                         subsequent_indent=" " * 25)
    types = {f.name: f.default_factory for f in dataclasses.fields(schema)
             if f.default_factory is not dataclasses.MISSING}
    names = [s for s in (sections or list(types)) if s in types]
    out += ["", "fields (section.field=value), with their defaults:"]
    for sec in names:
        cls = types[sec]
        doc = (inspect.getdoc(cls) or "").split("\n")[0].replace("``", "")
        out += ["", f"  {sec}.*" + (f"  ({doc})" if doc else "")]
        docs = field_docs(cls)
        vals = values.get(sec) or {}
        for f in dataclasses.fields(cls):
            head = f"    {sec}.{f.name} = {_fmt(vals.get(f.name, None))}"
            text = docs.get(f.name, "")
            allowed = describe_values(f)
            if allowed:
                text = f"{text} Allowed: {allowed}.".strip()
            if not text:
                out.append(head)
                continue
            if len(head) < 40:
                out += textwrap.wrap(f"{head:<40} {text}", 88, subsequent_indent=" " * 41)
            else:
                out.append(head)
                out += textwrap.wrap(text, 88, initial_indent=" " * 41,
                                     subsequent_indent=" " * 41)
    out += [""] + list(notes) + [
        "Hydra's own flags: --hydra-help; --cfg job prints the composed config; -m runs",
        "a comma-separated sweep of overrides as a multirun."]
    return "\n".join(out) + "\n"


def wants_help(args: list) -> bool:
    return any(a in ("--help", "-h") for a in args)


def model_sections(args: list, config_name: str, extra: tuple = ()) -> list:
    """The sections the chosen model reads (shared ones first), then ``extra``."""
    from .registry import BASE_SECTIONS, DEFAULT_MODEL, get

    chosen, _ = _choices(args, config_name)
    model = get(str(chosen.get("model", DEFAULT_MODEL)))
    reads = set(model.uses) | set(model.sections)
    return [s for s in BASE_SECTIONS if s in reads] + \
        [s for s in model.sections if s not in BASE_SECTIONS] + list(extra)
