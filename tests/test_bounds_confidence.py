"""Confidence in debate: the exact oversight values within their reported error of
independent references where the judge weighs stated confidence steeply.

At kappa_c = 50 (lam 8: the judge's argument moves by 400 per unit of the logit
difference of the two closing reports) the endorsement is a step across the two
sides' own report terms; Gauss-Legendre across that step converged like 1/n and
its fine-against-coarse difference (8.0e-3) understated the error (0.0138).  The
reference, 0.52731, is the debate Amp of two independent high-precision
integrations (mpmath, scipy adaptive quadrature), written from the seed's report
model without the code; the model's own simulation of 2,000,000 debates gives
0.52759 +/- 0.0005.
"""

import pytest

from antiamp.models.confidence import core as cf
from antiamp.registry import to_model_config

ISSUE = {"model": {"name": "confidence", "p": 0.5, "rho": 1.0},
         "judge": {"kind": "logit", "lam": 8, "mu": -0.3, "kappa": 2, "jury_size": 3},
         "confidence": {"condition": "public_bets", "kappa_c": 50, "ppc_draws": 0}}
#: The reference, to the digits given (half a unit of the last one is added to the bound).
REFERENCE, REF_DIGITS = 0.52731, 0.5e-5


@pytest.mark.slow
def test_steep_confidence_weight_within_its_bound():
    _, c = to_model_config(ISSUE)
    rep, _ = cf.reports_of(c.confidence)
    j = c.judge
    ex, err = cf.oversight_exact_bounded(rep, rep, p=0.5, rho=1.0, lam=j.lam, mu=j.mu,
                                         kappa=j.kappa, kappa_c=50.0, n=j.jury_size,
                                         icc=float(c.confidence.icc), tie=j.jury_tie)
    amp = ex["debate"]["amp"]
    assert abs(amp - REFERENCE) <= err + REF_DIGITS, (amp, err)
    # with rho = 1 both sides always show evidence and the reports do not depend on
    # the truth (public bets: weight 0): debate cannot tell right from wrong
    assert abs(ex["debate"]["amp"] - ex["debate"]["fwc"]) <= 2 * err
