"""Reported error bounds of the exact values that rest on a truncation or a quadrature,
against references computed another way: mediation's residual flaw law (cut where its
Poisson tail is negligible), compare's rows (CopMAD's judge table, FOAM's flaw law,
the adaptive re-deliberation's quadrature) and the panel's tables (a quadrature over
the judges' shared latent, against 30-digit integration).

* mediation: :func:`exact_error` bounds what cutting the residual law at ``n_max``
  loses; at cuts far too short (where the loss is large) the bound must still cover
  the difference from a cut 400 flaws out, metric by metric, and at the default cut it
  must be at rounding level;
* compare: CopMAD's row recomputed with its judge table integrated to 30 digits
  (mpmath, :mod:`test_exact_colmad`'s reference) at steep rhetoric, within the row's
  reported ``quad_error``; a FOAM row within its bound of the same metrics at a long
  cut; every row's bound finite and non-negative, closed forms 0.
"""

from dataclasses import replace

import numpy as np
import pytest

from antiamp.models.colmad import core as cm
from antiamp.models.compare import core as cmp
from antiamp.models.mediation import core as md
from antiamp.registry import to_model_config

from test_exact_colmad import reference_table


def _worst(a: dict, b: dict, keys) -> float:
    return max(float(np.nanmax(np.abs(np.asarray(a[k], float) - np.asarray(b[k], float))))
               for k in keys)


@pytest.mark.parametrize("flaws", [0.5, 3.0, 10.0, 40.0])
def test_mediation_truncation_bound_covers_short_cuts(flaws):
    _, c = to_model_config({"model": {"name": "mediation"}})
    par = replace(md.params_of(c), flaws=flaws)
    far = md.exact(par, 400)
    keys = [k for k in md.METRICS] + ["wrong", "residual"]
    covered_large = 0
    for cut in (2, 4, 8, 16, 32):
        diff = _worst(md.exact(par, cut), far, keys)
        bound = md.exact_error(par, cut)
        assert diff <= bound, (flaws, cut, diff, bound)
        covered_large += diff > 1e-6
    assert covered_large >= 1 or flaws < 1  # some cut lost a visible amount
    assert md.exact_error(par) <= 1e-13  # the default cut: rounding only


#: Steep rhetoric for CopMAD inside compare (lam kappa_r r_sd up to 60).
STEEP = [{"judge": {"lam": 10.0}, "colmad": {"kappa_r": 3.0, "r_sd": 2.0, "hack": 0.3}},
         {"judge": {"lam": 20.0}, "colmad": {"kappa_r": -1.5, "r_sd": 2.0, "hack": -1.0}},
         {"judge": {"lam": 2.0}, "colmad": {"kappa_r": 0.5, "r_sd": 0.1, "hack": 5.0}}]


@pytest.mark.parametrize("over", STEEP)
def test_compare_rows_within_their_bounds(over, monkeypatch):
    cfg = {"model": {"name": "compare", "p": 0.7, "rho": 0.4},
           "judge": {"kind": "logit", "lam": 4.0}, **{k: v for k, v in over.items()
                                                      if k != "judge"}}
    cfg["judge"].update(over.get("judge", {}))
    _, c = to_model_config(cfg)
    mp = cmp.mapped(c)
    ex, err = cmp.exact_with_error(c, mp)
    assert np.all(np.isfinite(err)) and np.all(err >= 0)
    closed = [cmp.NAMES.index(k) for k in ("unchecked", "consult", "debate", "consult_jury",
                                           "debate_jury", "colmad", "redelib_fixed")]
    assert np.all(err[closed] == 0)
    # CopMAD with its judge table to 30 digits
    ref_T = reference_table(mp.colmad)

    def table(par, errors=None):
        if errors is not None:
            errors.append(0.0)
        return ref_T

    monkeypatch.setattr(cm, "judge_right", table)
    ref = cmp.exact(c, mp)
    monkeypatch.undo()
    j = cmp.NAMES.index("copmad")
    for k in ("amp", "fwc", "acc", "asd"):
        assert abs(ex[k][j] - ref[k][j]) <= err[j], (k, ex[k][j], ref[k][j], err[j])
    # FOAM with its flaw law cut 400 flaws out
    orig = md.residual_pmf
    monkeypatch.setattr(md, "residual_pmf", lambda par, n_max=None: orig(par, 400))
    long = cmp.exact(c, mp)
    monkeypatch.undo()
    for name in ("foam_memo", "foam_summary"):
        j = cmp.NAMES.index(name)
        for k in ("amp", "fwc", "acc", "asd"):
            assert abs(ex[k][j] - long[k][j]) <= err[j], (name, k)


# --- panel: the tables' quadrature over the shared latent ---------------------------

def _mp_majority(q, n, icc, tie=0.5):
    """Pr(a majority of n judges endorses) at single-judge probability q, judges
    sharing a latent with correlation icc (no biases), to 30 digits (mpmath)."""
    import mpmath

    mpmath.mp.dps = 30
    t = mpmath.sqrt(2) * mpmath.erfinv(2 * mpmath.mpf(q) - 1)  # Phi^-1(q)
    a, e = mpmath.sqrt(icc), mpmath.sqrt(1 - mpmath.mpf(icc))

    def given(z):
        p = mpmath.ncdf((t - a * z) / e)
        tot = mpmath.mpf(0)
        for k in range(n + 1):
            w = 1 if 2 * k > n else (tie if 2 * k == n else 0)
            if w:
                tot += w * mpmath.binomial(n, k) * p ** k * (1 - p) ** (n - k)
        return tot * mpmath.npdf(z)

    return float(mpmath.quad(given, [-mpmath.inf, t / a, mpmath.inf]))


@pytest.mark.parametrize("n,icc", [(3, 0.05), (7, 0.5), (15, 0.95), (9, 0.999), (4, 0.3)])
def test_panel_tables_within_their_error(n, icc):
    from antiamp.models.panel import core as pn
    from antiamp.models.panel.config import PanelConfig

    pc = PanelConfig(size=n, icc=icc)
    q = np.array([0.01, 0.3, 0.5, 0.9, 0.999])
    val, err = pn.panel_probability_quad(q, pc, with_error=True)
    assert 0 < err < 1e-9
    for qi, v in zip(q, val):
        ref = _mp_majority(qi, n, icc)
        assert abs(v - ref) <= err, (qi, v, ref, err)
