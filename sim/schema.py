"""The result schema every model's Dataset follows.

A reported quantity ``<metric>`` (a simulated estimate, or a value the model
computes) comes with

``<metric>_se``
    its Monte Carlo standard error, same dimensions (0 where the value is exact);
``<metric>_exact``
    its exact value (closed form, enumeration or quadrature), where the model has
    an exact path.

``<metric>`` carries ``long_name`` and ``units``, and ``ancillary_variables =
"<metric>_se"`` when it has one; its companions carry the same ``units`` and the
``long_name`` "standard error of <long name>" or "exact value of <long name>" (a
model's own wording of it kept as their ``comment``).
:func:`label` gives a Dataset those attributes; :func:`problems` lists where one
departs from the schema (``antiamp.testing.check_model`` runs it on every model).

Stores written before the exact values were named ``_exact`` hold them as
``<metric>_theory``; :func:`upgrade` renames them when such a store is opened.
"""

from __future__ import annotations

from typing import Iterable

#: Suffixes of a metric's companions.
SE = "_se"
EXACT = "_exact"
#: Former names of the companions: old suffix -> current suffix.
LEGACY = {"_theory": EXACT}
#: Attributes of the ``protocol`` coordinate of the models with open consultancy and
#: open debate as their protocols.
CONSULT_DEBATE = {"long_name": "oversight protocol",
                  "description": "consult: open consultancy; debate: open debate"}


def se_long_name(long_name: str) -> str:
    return f"standard error of {long_name}"


def exact_long_name(long_name: str) -> str:
    return f"exact value of {long_name}"


def companions(names: Iterable[str]) -> dict:
    """``{metric: [suffixes present]}`` for every name that has a companion in ``names``."""
    names = set(names)
    out = {}
    for n in sorted(names):
        for suf in (SE, EXACT):
            if n.endswith(suf) and n[: -len(suf)] in names:
                out.setdefault(n[: -len(suf)], []).append(suf)
    return out


def legacy_name(name: str, present: Iterable[str]) -> str:
    """The name a store written under the former names holds ``name`` under: ``name``
    itself when the store has it, else its former name where the store has that."""
    present = set(present)
    if name in present:
        return name
    for old, new in LEGACY.items():
        if name.endswith(new):
            former = name[: -len(new)] + old
            if former in present:
                return former
    return name


def upgrade(ds):
    """``ds`` with variables of the former names renamed (``<metric>_theory`` ->
    ``<metric>_exact``) and their attributes brought to the schema."""
    rename = {}
    for v in ds.data_vars:
        for old, new in LEGACY.items():
            if v.endswith(old) and v[: -len(old)] in ds.data_vars \
                    and v[: -len(old)] + new not in ds.variables:
                rename[v] = v[: -len(old)] + new
    if not rename:
        return ds
    ds = ds.rename_vars(rename)
    for new in rename.values():
        base = ds[new[: -len(EXACT)]].attrs
        if "long_name" in base:
            ds[new].attrs["long_name"] = exact_long_name(base["long_name"])
    return ds


#: The Agent Score Difference, derived wherever a Dataset has Amp and follow-when-
#: correct (:func:`derive`); its attributes are the baseline table's
#: (:data:`antiamp.metrics.PROTOCOL_METRICS`).
ASD_READS = ("fwc", "amp")


def derive(ds):
    """Add the metrics derived from others (in place; returns ``ds``): the Agent Score
    Difference ``asd`` = fwc - Amp (:func:`antiamp.oversight_metrics.asd_from_rates`)
    wherever ``ds`` has ``amp`` and ``fwc`` of the same dimensions and no ``asd`` of
    its own, with ``asd_se`` = sqrt(fwc_se^2 + amp_se^2) where both have standard
    errors (fwc and Amp condition on the disjoint events a = omega and a != omega of
    independent instances: uncorrelated estimates; a model whose estimates are
    correlated, e.g. through an equilibrium solved from the same counts, writes its
    own ``asd_se``) and ``asd_exact`` where both have exact values."""
    import xarray as xr

    from .metrics import PROTOCOL_METRICS
    from .oversight_metrics import asd_from_rates

    names = set(ds.data_vars)
    if "asd" in ds.variables or not set(ASD_READS) <= names:
        return ds
    # Variables, not DataArrays: the same dimensions as fwc, nothing to align (building
    # a DataArray, its coordinates, cost more than the arithmetic); and the new
    # variables added in one update (each update aligns the whole Dataset again)
    var = ds.variables
    fwc, amp = var["fwc"], var["amp"]
    if fwc.dims != amp.dims:
        return ds
    spec = PROTOCOL_METRICS["asd"]
    attrs = {"long_name": spec.long_name, "units": spec.units, "definition": spec.definition}
    new = {"asd": xr.Variable(fwc.dims, asd_from_rates(fwc.values, amp.values)[0], attrs)}
    if "fwc_se" in names and "amp_se" in names and var["fwc_se"].dims == fwc.dims \
            and var["amp_se"].dims == fwc.dims and "asd_se" not in ds.variables:
        se = asd_from_rates(fwc.values, amp.values, var["fwc_se"].values,
                            var["amp_se"].values)[1]
        new["asd_se"] = xr.Variable(fwc.dims, se, {"long_name": se_long_name(spec.long_name),
                                                   "units": spec.units})
    if "fwc_exact" in names and "amp_exact" in names and var["fwc_exact"].dims == fwc.dims \
            and var["amp_exact"].dims == fwc.dims:
        ex = asd_from_rates(var["fwc_exact"].values, var["amp_exact"].values)[0]
        new["asd_exact"] = xr.Variable(fwc.dims, ex, {
            "long_name": exact_long_name(spec.long_name), "units": spec.units})
    ds.update(new)
    return ds


def label(ds):
    """Give every metric's companions the schema's attributes (in place; returns ``ds``):
    the metric's ``units``, a ``long_name`` derived from the metric's, and the
    metric's ``ancillary_variables`` pointing at its standard error.  The derived
    metrics (:func:`derive`) are added first, so that every model's cell and grid
    carry them."""
    derive(ds)
    var = ds.variables  # their attributes are the DataArrays' (none built here)
    for name, sufs in companions(ds.data_vars).items():
        attrs = var[name].attrs
        ln = attrs.get("long_name", name)
        for suf in sufs:
            c = var[name + suf].attrs
            want = se_long_name(ln) if suf == SE else exact_long_name(ln)
            # a model's own wording ("expected at run.n_instances", "NaN: at a bound
            # of the fit") is kept as the CF comment
            if c.get("long_name") not in (None, want) and "comment" not in c:
                c["comment"] = c["long_name"]
            c["long_name"] = want
            if "units" in attrs:
                c["units"] = attrs["units"]
        if SE in sufs:
            attrs["ancillary_variables"] = name + SE
    return ds


def problems(ds, what: str = "") -> list:
    """Where ``ds`` departs from the schema, as messages ([] when it follows it)."""
    out = []
    if "protocol" in ds.coords and not ds["protocol"].attrs.get("long_name"):
        out.append(f"{what}protocol: the coordinate has no 'long_name' (what its values are)")
    for v in ds.data_vars:
        for old, new in LEGACY.items():
            if v.endswith(old):
                out.append(f"{what}{v}: the former name; the schema calls it "
                           f"{v[: -len(old)]}{new}")
        for suf in (SE, EXACT):
            if v.endswith(suf) and v[: -len(suf)] not in ds.data_vars:
                out.append(f"{what}{v}: a companion without its metric {v[: -len(suf)]!r}")
    for name, sufs in companions(ds.data_vars).items():
        m = ds[name]
        for key in ("long_name", "units"):
            if key not in m.attrs:
                out.append(f"{what}{name}: no {key!r} attribute")
        for suf in sufs:
            c = ds[name + suf]
            if c.dims != m.dims:
                out.append(f"{what}{name}{suf}: dimensions {c.dims} differ from "
                           f"{name}'s {m.dims}")
            if "units" in m.attrs and c.attrs.get("units") != m.attrs["units"]:
                out.append(f"{what}{name}{suf}: units {c.attrs.get('units')!r}, not "
                           f"{name}'s {m.attrs['units']!r}")
            want = (se_long_name if suf == SE else exact_long_name)(m.attrs.get("long_name", name))
            if c.attrs.get("long_name") != want:
                out.append(f"{what}{name}{suf}: long_name {c.attrs.get('long_name')!r}, "
                           f"not {want!r}")
        if SE in sufs and m.attrs.get("ancillary_variables") != name + SE:
            out.append(f"{what}{name}: ancillary_variables is not {name + SE!r}")
    return out
