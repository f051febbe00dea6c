"""What each config field means, in the seed's symbols: the stores' coordinate
labels, the figures' axes and legends, and ``--help``.

Each field is declared once, where its section is defined (shared sections in
:mod:`antiamp.config`, a model's in ``antiamp.models.<name>.config``), with
:func:`antiamp.config.declare`: ``label(path)`` gives "fabrication rate ρ",
``symbol(path)`` gives "ρ".  Fields declared without a symbol fall back to their
dataclass comment (the first clause of the ``#:`` line above the field) and
their own name.
"""

from __future__ import annotations

import dataclasses


def _section_types() -> dict:
    from .config import Config
    from .registry import section_types

    types = {f.name: f.default_factory for f in dataclasses.fields(Config)}
    types.update(section_types())
    return types


def _field(path: str):
    section, _, name = path.partition(".")
    cls = _section_types().get(section)
    if cls is None or not dataclasses.is_dataclass(cls):
        return None
    return next((f for f in dataclasses.fields(cls) if f.name == name), None)


def declared(path: str) -> dict:
    """The declaration of a config field (``{"symbol", "meaning", "unit"}``), or {}."""
    f = _field(path)
    return {} if f is None else dict(f.metadata)


def field_default(path: str):
    """The default of a config field (None also for a field that does not exist)."""
    f = _field(path)
    if f is None:
        return None
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return None


def _doc(path: str) -> str:
    """The first clause of the field's ``#:`` comment, when the table has no entry."""
    from .helptext import field_docs

    section, name = path.split(".", 1)
    cls = _section_types().get(section)
    text = field_docs(cls).get(name, "") if cls is not None else ""
    text = text.split(";")[0].split(". ")[0].rstrip(".")
    return text[:1].lower() + text[1:]


def symbol(path: str) -> str:
    """The field's symbol ("ρ"), or its name."""
    return declared(path).get("symbol") or path.split(".")[-1]


def label(path: str) -> str:
    """"meaning symbol" for an axis ("fabrication rate ρ")."""
    d = declared(path)
    sym = d.get("symbol") or path.split(".")[-1]
    meaning = d.get("meaning") or _doc(path)
    return f"{meaning} {sym}".strip() if meaning else sym
