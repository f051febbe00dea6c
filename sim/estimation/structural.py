"""A judge who reads the argument: a structural fit of real oversight logs.

The section-6 estimators measure Amp; they do not say why a judge follows a wrong
model, so the seed's tie-break judge (who sees only whether evidence was shown)
cannot predict a log in which every side quotes verified text.  This module fits
the messages model of seed 000, section 5 (exogenous rhetoric), with the judge's
stated probability through its logit link:

    z = logit p_y = mu_prot + kappa_v x + (r_P - r_A)     debate
    z = logit p_y = mu_consult + kappa_v e_P + r_P        consultancy

where x = e_P - e_A, and r_i, the latent quality of side i's argument as the judge
reads it, is N(+d/2, sigma^2) when side i argues the right answer and N(-d/2,
sigma^2) when it argues the wrong one.  The judge's label is the answer p_y
favours as recorded (on a grid of step h, log-odds within +-logit(1/2 + h/2) are
recorded as 1/2, a tie, labelled as the log labels its rows at 1/2).  These are the messages model's lam = 1, kappa_r = 1, r_mean_true = d/2,
r_mean_false = -d/2, r_sd = sigma and ``messages.decision=favoured`` (with
``decision_band`` and ``decision_tie`` for the recording), so the fitted model runs
on the engine as ``model=messages``.

Maximum likelihood over every row with a known truth (statsmodels'
GenericLikelihoodModel, BFGS): a stated probability is a point of z; one at the
log's smallest or largest value (an interface's bounds, 0.01 and 0.99 in the
shipped log) is censored there (z at or beyond it); a label without a probability
says only the sign of z.  Standard errors are judge-clustered (sandwich over
judges, small-sample factor G/(G-1) (N-1)/(N-K)), intervals t with G - 1 degrees
of freedom, as in the logistic fit of :mod:`antiamp.estimate`.

What is identified, and what is refused rather than fitted:
- mu_debate, the judge's lean toward the protagonist at equal arguments, only from
  open-role debates.  An assigned debate is read with the wrong debater as the
  protagonist (:func:`antiamp.estimation.logs.symmetric_roles`); a lean toward the wrong debater
  that no argument shows is not a lean toward a role, so it is 0 there.
- kappa_v only when x varies within a protocol; a regressor constant within each
  protocol is the protocol's intercept (refused with a note, kappa_v = 0).
- sigma only when some row states a probability; from labels alone the scale of z
  is not identified and sigma is fixed at 1 (a probit), which leaves every label
  prediction unchanged.

:func:`predictive_check` runs the fitted model on the engine (the messages
model's compiled kernel) per protocol and compares its Amp, accuracy and
follow-when-correct (and the mean stated probability for the protagonist when
p_y is logged) with the observed ones; the intervals of the prediction come from
draws of the parameters from their judge-clustered sampling distribution, each
evaluated by the same model's exact path; a fit is called poor where the observed
value and the prediction differ by more than their combined uncertainty allows.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..lazy import lazy
from ..moments import IDENT_TOL, Identification, information_rule  # noqa: F401 (re-exported)

special = lazy("scipy.special")
stats = lazy("scipy.stats")

#: Metrics the predictive check compares (observed names as in ``estimates.zarr``).
CHECK_METRICS = ("amp", "acc", "fwc")
#: Draws of the parameters for the prediction intervals.
N_DRAWS = 400


class FitError(ValueError):
    """The log cannot identify the structural model (the message says why)."""


# ------------------------------------------------------------------ identification
#: A location parameter beyond this many consultancy spreads (|mu|, |d|... / sigma)
#: has run off: a label probability within 1e-15 of 0 or 1 (separation).
RUNOFF = 8.0
#: The weakly informative prior under separation: independent Cauchy priors centred at
#: 0 with Gelman, Jakulin, Pittau and Su (2008)'s default scales for a logistic
#: regression, 10 on intercepts (the leans mu) and 2.5 on the other coefficients
#: (kappa_v on a 0/1 regressor, d and the shifts on a side's +-1/2), divided by
#: :data:`PROBIT_PER_LOGIT` because the label is a probit in m / sigma here.  Used only
#: where the maximum-likelihood fit runs off or is not unique; stated in the fit's notes.
SEPARATION_SCALE = {"mu": 10.0, "coef": 2.5}
#: Logistic to probit coefficients (Amemiya 1981; Gelman et al. 2008's factor).
PROBIT_PER_LOGIT = 1.6


def identification(score_obs: np.ndarray, w: np.ndarray) -> Identification:
    """The rule on a fit's per-row information: ``score_obs`` the scores of merged rows
    (each ``w`` identical rows' summed), so the outer product of one row's score is
    s s' / w."""
    s = np.asarray(score_obs, float)
    return information_rule((s / np.asarray(w, float)[:, None]).T @ s)


def cov_factor(cov: np.ndarray) -> np.ndarray:
    """A factor L with L L' = ``cov`` for drawing parameters, chosen by a stated rule
    rather than by whether Cholesky happens to fail: Cholesky where the covariance
    scaled to unit diagonal has 20 n^1.5 kappa u < 1/2 (Higham 2002, theorem 10.7:
    then it runs to completion in floating point), else the symmetric eigenvalue
    factor with negative rounding clipped at 0."""
    cov = (np.asarray(cov, float) + np.asarray(cov, float).T) / 2
    n = len(cov)
    dg = np.diag(cov)
    if n and np.all(np.isfinite(cov)) and np.all(dg > 0):
        r = 1.0 / np.sqrt(dg)
        w = np.linalg.eigvalsh(cov * np.outer(r, r))
        if w[0] > 0 and 20 * n ** 1.5 * (w[-1] / w[0]) * np.finfo(float).eps < 0.5:
            return np.linalg.cholesky(cov + 1e-300 * np.eye(n))
    w, v = np.linalg.eigh(np.nan_to_num(cov))
    return v * np.sqrt(np.clip(w, 0, None))


def laplace_floor(sandwich: np.ndarray, laplace: np.ndarray) -> np.ndarray:
    """The smallest covariance at least as large as both ``sandwich`` and ``laplace``
    along every direction of ``laplace``'s metric: in coordinates where ``laplace`` is
    the identity, the sandwich's eigenvalues raised to at least 1.

    Why: a judge-clustered sandwich estimates the score's variance from the judges'
    scores, and a population seen in a few rooms has its shift's information from a
    few judges only; with few clusters the sandwich is biased down and as noisy as a
    variance from that many residuals (Cameron and Miller 2015, section VI), so
    intervals from it miss more than they say (measured: 30 calibration rooms of a new
    population, the sandwich's SE of its consultancy shift 0.35 to 0.77 against the
    posterior's 0.46 to 0.71 by importance sampling).  The Laplace posterior (the
    inverse of the log posterior's curvature, which importance sampling on the exact
    posterior confirms) is the floor where the model holds; the sandwich is kept
    where the judges' rows vary more than the model says."""
    A = (np.asarray(laplace, float) + np.asarray(laplace, float).T) / 2
    B = (np.asarray(sandwich, float) + np.asarray(sandwich, float).T) / 2
    w, v = np.linalg.eigh(A)
    if not (np.all(np.isfinite(A)) and np.all(np.isfinite(B)) and w[0] > 0):
        return B
    half = v * np.sqrt(w)  # half @ half.T = A
    inv = (v / np.sqrt(w)).T
    lam, u = np.linalg.eigh(inv @ B @ inv.T)
    out = half @ (u * np.maximum(lam, 1.0)) @ u.T @ half.T
    return (out + out.T) / 2


def separation_prior_text(names, sep_prior) -> str:
    """The separation prior in words (printed in the notes, stored with the fit)."""
    by = {}
    for i, scale in sep_prior:
        by.setdefault(round(scale, 4), []).append(names[i])
    return ("independent Cauchy(0, s) on the location parameters in units of the "
            "consultancy spread sigma (Gelman et al. 2008's logistic defaults 10 for "
            "intercepts and 2.5 for coefficients, /1.6 on this probit scale): "
            + "; ".join(f"s = {k:.4g} for {', '.join(v)}" for k, v in by.items()))


@dataclass
class StructuralFit:
    names: list
    params: np.ndarray
    cov: np.ndarray
    df: int
    n_rows: int
    n_judges: int
    sigma_free: bool
    loglike: float
    converged: bool
    fixed: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)
    bounds: tuple = (np.nan, np.nan)
    #: Recording grid of p_y (0: exact), the band of log-odds whose recorded
    #: probability is 1/2, and the share of rows at 1/2 labelled with the
    #: protagonist's answer: the label is the answer the *recorded* p_y favours.
    grid: float = 0.0
    band: float = 0.0
    tie: dict = field(default_factory=lambda: {"consult": 0.5, "debate": 0.5})
    #: Populations of debaters (``debaters=`` column's labels; the first is the
    #: reference, whose persuasiveness shift is 0) and the column they came from.
    populations: list = field(default_factory=list)
    debaters: str | None = None
    #: Which reading of the log the fit took (:data:`antiamp.estimation.predictive.FITS`).
    reading: str = "probabilities"
    #: The weakly informative prior the fit used under separation ("" for none).
    prior: str = ""
    #: The hierarchical prior of the per-protocol shifts (:class:`ShiftPrior`; None:
    #: one shift per population, or flat).
    shift_prior: object = None
    #: Under a prior on the populations' shifts: the Laplace posterior's covariance
    #: (the inverse curvature of the log posterior), the floor of the predictive
    #: draws' covariance (:meth:`draw_cov`); None without such a prior.
    cov_laplace: np.ndarray | None = None
    #: Under a shift prior: the log posterior density (:class:`LogPosterior`) the
    #: predictive draws are importance-resampled from (:func:`posterior_draws`).
    log_post: object = field(default=None, repr=False, compare=False)
    #: Per population but the reference (per-protocol shifts only): whether its honest
    #: consultant's shift ``honest_consult[<label>]`` was fitted ("fitted") or why not.
    honest: dict = field(default_factory=dict)

    def draw_cov(self) -> np.ndarray:
        """The covariance of the predictive parameter draws: ``cov`` (the
        judge-clustered sandwich), under a shift prior no smaller along any direction
        than the Laplace posterior's (:func:`laplace_floor` says why)."""
        if self.cov_laplace is None or np.shape(self.cov_laplace) != np.shape(self.cov):
            return self.cov
        return laplace_floor(self.cov, self.cov_laplace)

    def value(self, name: str, params=None) -> float:
        """A parameter on its natural scale (sigma, not log sigma); fixed ones too."""
        p = self.params if params is None else params
        if name in self.names:
            return float(p[self.names.index(name)])
        if name == "sigma":
            return float(np.exp(p[self.names.index("log_sigma")])) if self.sigma_free else 1.0
        if name == "sigma_debate" and "log_sigma_debate" in self.names:
            return float(np.exp(p[self.names.index("log_sigma_debate")]))
        return float(self.fixed[name])

    def quality(self, prot: str, params=None) -> tuple[float, float]:
        """(quality gap, spread) of one protocol: debate's own ``d_debate`` and
        ``sigma_debate`` where they are fitted apart, else the shared d and sigma."""
        debate = prot == "debate"
        d = self.value("d_debate" if debate and "d_debate" in self.names else "d", params)
        s = self.value("sigma_debate" if debate and "log_sigma_debate" in self.names
                       else "sigma", params)
        return d, s

    def table(self, confidence: float) -> pd.DataFrame:
        """Estimates, judge-clustered SEs and t intervals on the natural scale; under a
        shift prior the SEs of :meth:`draw_cov` (the sandwich no smaller than the
        Laplace posterior along any direction: the sandwich alone is biased down where
        a population's rows say little, as under separation, where every judge's
        observed score is small and of one sign: an honest shift's SE 0.44 against a
        posterior SD of 0.68 by importance sampling, Laplace 0.65)."""
        crit = stats.t.ppf(0.5 + confidence / 2, max(self.df, 1))
        rows = []
        se = np.sqrt(np.diag(self.draw_cov()))
        for i, n in enumerate(self.names):
            v, s = float(self.params[i]), float(se[i])
            if n.startswith("log_"):  # delta method for the SE, the interval transformed
                rows.append((n[4:], np.exp(v), np.exp(v) * s, np.exp(v - crit * s),
                             np.exp(v + crit * s)))
            else:
                rows.append((n, v, s, v - crit * s, v + crit * s))
        for n, v in self.fixed.items():
            rows.append((n, v, 0.0, v, v))
        return pd.DataFrame(rows, columns=["param", "value", "se", "lo", "hi"]).set_index("param")


class LogPosterior:
    """A fit's log posterior density up to a constant: its likelihood plus the priors
    it was fitted under (``prior``: [(index, tau)] normal shift priors; ``hier``: the
    hierarchical shift prior's [(indices, precision, k)]; ``sep``: the separation
    prior's [(index, Cauchy scale)]), every scale in units of the consultancy spread
    at the parameters.  A plain object rather than a closure, so that a fit pickles."""

    def __init__(self, lik, prior, hier, i_sig, sep=()):
        self.lik, self.prior, self.hier, self.i_sig = lik, list(prior), list(hier), i_sig
        self.sep = list(sep)

    def _sig(self, params):
        return np.exp(params[self.i_sig]) if self.i_sig is not None else 1.0

    def log_prior(self, params):
        sig = self._sig(params)
        lp = sum(-0.5 * (params[i] / (tau * sig)) ** 2 for i, tau in self.prior)
        for idx, prec, k in self.hier:  # N(0, sig^2 Sigma), its normalising -k log sig too
            x = params[idx] / sig
            lp = lp - 0.5 * x @ prec @ x - k * np.log(sig)
        return lp

    def log_sep(self, params):
        sig = self._sig(params)
        return sum(-np.log1p((params[i] / (s * sig)) ** 2) for i, s in self.sep)

    def __call__(self, params) -> float:
        with np.errstate(all="ignore"):
            v = float(self.lik.loglikeobs(params).sum() + self.log_prior(params)
                      + self.log_sep(params))
        return v if np.isfinite(v) else -np.inf


#: Importance resampling of the predictive draws under a shift prior
#: (:func:`posterior_draws`): proposals per draw, the proposal's t degrees of freedom
#: and its covariance as a multiple of the draws' normal covariance, and the smallest
#: effective sample size (per draw asked for) at which the resampled draws are used.
SIR_PER_DRAW, SIR_DF, SIR_SCALE, SIR_MIN_ESS = 8, 5, 2.0, 1.0


def posterior_draws(f: "StructuralFit", n_draws: int, rng):
    """Parameter draws of a fit under a shift prior that follow its posterior's shape:
    sampling importance resampling (Rubin 1988) from a multivariate t proposal
    (:data:`SIR_DF` degrees of freedom, covariance :data:`SIR_SCALE` times
    :meth:`StructuralFit.draw_cov`) to the target

        log p*(x) = log posterior(x) + log N(x; theta, D) - log N(x; theta, Lambda)

    (D the draws' normal covariance, the sandwich no smaller than the Laplace posterior
    Lambda): the exact posterior where the sandwich is not the larger (along such a
    direction D = Lambda and the factor is 1), widened by the same Gaussian factor
    where the judges' rows vary more than the model says (for a normal posterior,
    exactly N(theta, D)).  Why: under separation the posterior of a shift is skewed
    (its mode against the prior, a long tail where the likelihood is flat), and
    normal draws at the mode with any SD misplace both tails (measured: an honest
    shift's 95% posterior interval [-0.36, 2.33] by importance sampling, normal draws
    [-0.64, 1.93]).  The project's own sampler rather than a library's: the target is
    this fit's likelihood (a stock model of none) times the Gaussian factor, and the
    few lines are those of textbook SIR.  Draw 0 is the estimate.  Returns (draws,
    effective sample size of the proposals); None where the effective sample size is
    below :data:`SIR_MIN_ESS` per draw (the normal draws are then used)."""
    D = f.draw_cov()
    Lam = f.cov_laplace
    K = len(f.names)
    M = SIR_PER_DRAW * max(n_draws, 1)
    try:
        Dinv, Linv = np.linalg.inv(D), np.linalg.inv(Lam)
        prop = stats.multivariate_t(f.params, SIR_SCALE * D, df=SIR_DF, allow_singular=False)
    except (np.linalg.LinAlgError, ValueError):
        return None
    L = cov_factor(SIR_SCALE * D)
    z = rng.standard_normal((M, K)) / np.sqrt(rng.chisquare(SIR_DF, (M, 1)) / SIR_DF)
    th = f.params + z @ L.T
    dev = th - f.params
    widen = -0.5 * np.einsum("ij,jk,ik->i", dev, Dinv - Linv, dev)
    lw = np.array([f.log_post(t) for t in th]) + widen - prop.logpdf(th)
    if not np.any(np.isfinite(lw)):
        return None
    w = np.exp(lw - np.max(lw))
    w = w / w.sum()
    ess = float(1.0 / np.sum(w ** 2))
    if ess < SIR_MIN_ESS * n_draws:
        return None
    # systematic resampling of n_draws - 1 draws (Kitagawa 1996): each proposal is kept
    # within one of (n_draws - 1) w times, less variable than multinomial draws
    u = (rng.random() + np.arange(n_draws - 1)) / max(n_draws - 1, 1)
    idx = np.minimum(np.searchsorted(np.cumsum(w), u), M - 1)
    out = np.vstack([f.params[None, :], th[rng.permutation(idx)]])
    return out, ess


PARAM_DOC = {
    "mu_consult": "judge's lean toward the consultant at an average argument (log-odds)",
    "mu_debate": "judge's lean toward the protagonist in an open-role debate (log-odds)",
    "kappa_v": "weight of shown evidence (log-odds)",
    "d": "quality gap: right minus wrong side's mean argument (log-odds)",
    "sigma": "spread of argument quality (log-odds)",
    "d_debate": "quality gap in debate, where it is fitted apart from consultancy's d (log-odds)",
    "sigma_debate": "spread of argument quality in debate, where it is fitted apart from "
                    "consultancy's sigma (log-odds)",
}


def pop_param(label, prot: str | None = None) -> str:
    """The persuasiveness shift's parameter name for a population of debaters: one
    shift for both protocols (``prot`` None), or the shift in one protocol
    (``consult`` or ``debate``) where the shifts are fitted per protocol."""
    return f"delta[{label}]" if prot is None else f"delta_{prot}[{label}]"


def honest_param(label) -> str:
    """The honest consultant's persuasiveness shift's parameter name for a population:
    how much better than the reference's its right consultant's argument reads.  Only
    consultancy has one: a right consultant argues alone, so a population's
    right-consultant rows measure it; in debate, with both debaters from the same
    population, only the difference of the two sides' shifts enters the judge's
    reading (``delta_debate`` is that net), and a separate honest debate shift would
    need mixed pairings, which one population column per row cannot express."""
    return f"honest_consult[{label}]"


PROTOCOLS = ("consult", "debate")
#: Default between-population scales of the dishonest side's persuasiveness shift, in
#: spreads of argument quality (the consultancy sigma), per protocol, and the
#: correlation of a population's two shifts.  Why these values:
#: - one spread per protocol: the shipped human-judge logs (Michael et al. 2023) put
#:   the online and offline judges' readings of the same human debaters about 0.7 to
#:   0.9 spreads apart in each protocol (``tests/calibrate_real_rooms.py``), and the
#:   AI-debater rooms of the same study against the human ones up to about one spread
#:   (consultancy Amp 0.13 against 0.40, debate 0.22 against 0.16: on the labels'
#:   probit scale of the human-fitted judge about -0.9 spread in consultancy and +0.3
#:   in debate); a scale of one spread puts shifts of that size within one SD, and a
#:   shift of two spreads (a dishonest consultant winning 0.4 -> 0.95 of the time)
#:   at about 5%;
#: - correlation 0: the same AI debaters are less persuasive than the human ones as
#:   dishonest consultants and more as dishonest debaters (the opposite signs of the
#:   shifts above), and Khan et al. (2024, "Debating with more persuasive LLMs leads
#:   to more truthful answers") find that stronger debaters raise judge accuracy in
#:   debate while stronger consultants lower it in consultancy: a population's
#:   persuasiveness as a consultant says little about its persuasiveness as a
#:   debater, so neither sign of the correlation is assumed.
SHIFT_SCALE = {"consult": 1.0, "debate": 1.0}
SHIFT_CORR = 0.0


@dataclass(frozen=True)
class ShiftPrior:
    """The hierarchical prior of the populations' per-protocol shifts: a population's
    (delta_consult, delta_debate) relative to the reference population is
    N(0, sigma^2 Sigma), Sigma = [[tau_c^2, r tau_c tau_d], [r tau_c tau_d, tau_d^2]]
    (sigma the consultancy spread; 1 from labels alone).  The reference population
    (the first, best measured) stands at the centre of the populations' distribution.
    An infinite scale is a flat prior on that protocol's shift (the correlation then
    ties nothing)."""

    tau_consult: float = SHIFT_SCALE["consult"]
    tau_debate: float = SHIFT_SCALE["debate"]
    corr: float = SHIFT_CORR

    def tau(self, prot: str) -> float:
        return self.tau_consult if prot == "consult" else self.tau_debate

    def scaled(self, k: float) -> "ShiftPrior":
        """The prior with both scales times ``k`` (the sensitivity's half and double)."""
        return ShiftPrior(self.tau_consult * k, self.tau_debate * k, self.corr)

    def cov(self, prots=PROTOCOLS) -> np.ndarray:
        """Sigma over ``prots`` (in spreads squared); flat components are left out by
        the callers (:meth:`finite`)."""
        t = np.array([self.tau(p) for p in prots], float)
        c = np.where(np.eye(len(t), dtype=bool), 1.0, self.corr)
        return c * np.outer(t, t)

    def finite(self, prots) -> list:
        return [p for p in prots if np.isfinite(self.tau(p))]

    def conditional(self, missing: str, given: dict) -> tuple[float, float]:
        """(mean, sd) in spreads of one protocol's shift given the other's (``given``:
        {protocol: value in spreads}, possibly empty): the normal's conditional."""
        tm = self.tau(missing)
        other = [p for p in given if np.isfinite(self.tau(p)) and p != missing]
        if not other or not np.isfinite(tm):
            return 0.0, tm
        o = other[0]
        r = self.corr
        return r * tm / self.tau(o) * given[o], tm * np.sqrt(max(1.0 - r * r, 0.0))

    def text(self) -> str:
        def sd(t):
            return "flat" if not np.isfinite(t) else f"{t:g} sigma"
        return (f"shift prior: a population's (delta_consult, delta_debate) relative to the "
                f"reference ~ N(0, Sigma), sd {sd(self.tau_consult)} (consultancy) and "
                f"{sd(self.tau_debate)} (debate), correlation {self.corr:g}")


# ------------------------------------------------------------------ the likelihood
def merged_rows(df: pd.DataFrame, debaters: str | None = None, populations=None,
            evidence: bool = False):
    """Rows with a known truth as arrays, identical rows merged (weights); with
    ``debaters`` a column ``pop``: the index of each row's population in
    ``populations`` (default: the column's labels sorted); with ``evidence`` the
    sides' evidence flags ``ep``, ``ea`` beside x."""
    d = df[df["omega"].notna()]
    if not len(d):
        raise FitError("no row has a known truth (omega): the structural fit needs it")
    prot = (d["protocol"] == "debate").to_numpy()
    open_ = ~(prot & (d["role"] == "assigned").to_numpy()) if "role" in d.columns else \
        np.ones(len(d), bool)
    right = (d["a"] == d["omega"]).to_numpy()
    ep = d["e_P"].fillna(0).to_numpy(float)
    ea = d["e_A"].fillna(0).to_numpy(float) if "e_A" in d.columns else np.zeros(len(d))
    x = np.where(prot, ep - ea, ep)
    endorse = (d["y"] == d["a"]).to_numpy()
    p = d["p_y"].to_numpy(float) if "p_y" in d.columns else np.full(len(d), np.nan)
    cols = {"g": pd.factorize(d["judge_id"])[0], "debate": prot, "open": open_,
            "right": right, "x": x, "endorse": endorse, "p": np.nan_to_num(p, nan=-1.0)}
    if evidence:
        cols["ep"], cols["ea"] = ep, np.where(prot, ea, 0.0)
    if debaters is not None:
        lab = d[debaters].astype(str).to_numpy()
        pops = list(populations) if populations is not None else sorted(set(lab))
        where = {k: i for i, k in enumerate(pops)}
        unknown = sorted(set(lab) - set(where))
        if unknown:
            raise FitError(f"column {debaters!r}: population(s) {', '.join(unknown)} not in "
                           f"the fit (fitted: {', '.join(pops)})")
        cols["pop"] = np.array([where[k] for k in lab], dtype=np.int64)
    agg = pd.DataFrame(cols).value_counts(sort=False).reset_index(name="w")
    return agg, d


class Likelihood:
    """Censored-normal likelihood of z per merged row (see the module docstring)."""

    def __init__(self, agg: pd.DataFrame, names: list, fixed: dict, sigma_free: bool,
                 bounds: tuple, grid: float = 0.0):
        self.names, self.fixed, self.sigma_free = names, fixed, sigma_free
        self.populations: list = []
        self.w = agg["w"].to_numpy(float)
        self.debate = agg["debate"].to_numpy()
        self.open = agg["open"].to_numpy()
        self.sign = np.where(agg["right"].to_numpy(), 0.5, -0.5)
        self.x = agg["x"].to_numpy(float)
        self.pop = agg["pop"].to_numpy() if "pop" in agg.columns else None
        p = agg["p"].to_numpy(float)
        has = p >= 0
        lo, hi = bounds
        # within 1e-9 of a bound counts as at it: a relabelled 0.99 is 1 - 0.99 =
        # 0.010000000000000009, not 0.01
        self.kind = np.where(~has, np.where(agg["endorse"].to_numpy(), 3, 4),
                             np.where(p <= lo + 1e-9, 1, np.where(p >= hi - 1e-9, 2, 0)))
        # A probability recorded on a grid (0.01 steps, say) is the interval of width
        # `grid` around it: read as a point its log-odds would add rounding noise that
        # is large near the bounds (0.02 and 0.03 are 0.4 apart in log-odds).
        h = grid / 2
        if grid > 0:
            self.kind = np.where(self.kind == 0, 5, self.kind)
        with np.errstate(divide="ignore"):
            self.z = np.where(self.kind == 0, special.logit(np.clip(p, 1e-300, 1 - 1e-16)), 0.0)
            self.zl = special.logit(np.clip(p - h, 1e-300, 1 - 1e-16))
            self.zu = special.logit(np.clip(p + h, 1e-300, 1 - 1e-16))
        self.c_lo = special.logit(lo + h) if np.isfinite(lo) else -np.inf
        self.c_hi = special.logit(hi - h) if np.isfinite(hi) else np.inf

    def moments(self, params):
        v = dict(self.fixed)
        v.update(zip(self.names, params))
        sigma = np.exp(v["log_sigma"]) if self.sigma_free else 1.0
        mu = np.where(self.debate, np.where(self.open, v.get("mu_debate", 0.0), 0.0),
                      v.get("mu_consult", 0.0))
        # debate: r_P - r_A has mean +-d and variance 2 sigma^2; consultancy r_P: +-d/2
        # (debate's own d_debate and sigma_debate where they are fitted apart)
        d = np.where(self.debate, v["d_debate"], v["d"]) if "d_debate" in v else v["d"]
        sigma = np.where(self.debate, np.exp(v["log_sigma_debate"]), sigma) \
            if "log_sigma_debate" in v else sigma
        m = mu + v.get("kappa_v", 0.0) * self.x + d * self.sign * np.where(
            self.debate, 2.0, 1.0)
        if self.pop is not None and self.populations:
            # a population's dishonest side reads delta better than the reference's:
            # toward the protagonist when it is the wrong side, away when it is the
            # right one (debate); a right consultant has no dishonest opponent
            # (per protocol where the shifts are fitted so: delta_consult, delta_debate)
            dc, dd = (np.array([v.get(pop_param(k, prot), v.get(pop_param(k), 0.0))
                                for k in self.populations])[self.pop] for prot in PROTOCOLS)
            delta = np.where(self.debate, dd, dc)
            wrong = self.sign < 0
            m = m + delta * np.where(self.debate, np.where(wrong, 1.0, -1.0),
                                     np.where(wrong, 1.0, 0.0))
            # a right consultant argues alone: its population's honest shift moves the
            # judge toward it (0 where not fitted)
            hc = np.array([v.get(honest_param(k), 0.0) for k in self.populations])[self.pop]
            m = m + hc * (~self.debate & ~wrong)
        s = sigma * np.where(self.debate, np.sqrt(2.0), 1.0)
        return m, s

    def loglikeobs(self, params):
        m, s = self.moments(params)
        k = self.kind
        ll = np.empty_like(m)
        i = k == 0
        ll[i] = stats.norm.logpdf(self.z[i], m[i], s[i])
        i = k == 1
        ll[i] = special.log_ndtr((self.c_lo - m[i]) / s[i])
        i = k == 2
        ll[i] = special.log_ndtr((m[i] - self.c_hi) / s[i])
        i = k == 3
        ll[i] = special.log_ndtr(m[i] / s[i])
        i = k == 4
        ll[i] = special.log_ndtr(-m[i] / s[i])
        i = k == 5
        ll[i] = np.log(np.maximum(special.ndtr((self.zu[i] - m[i]) / s[i])
                                  - special.ndtr((self.zl[i] - m[i]) / s[i]), 1e-300))
        return self.w * ll


#: Grids a stated probability may be recorded on, coarsest first.
GRIDS = (0.1, 0.05, 0.01, 0.005, 0.001)


def recording_grid(p: np.ndarray) -> float:
    """The coarsest of :data:`GRIDS` every value lies on (0: none, read as exact)."""
    if len(p) < 2:
        return 0.0
    for g in GRIDS:
        if np.all(np.abs(p / g - np.round(p / g)) < 1e-6):
            return g
    return 0.0


def fit(df: pd.DataFrame, debaters: str | None = None, protocol_gap: bool = False,
        populations=None, protocol_spread: bool = False,
        shift_prior: dict | None = None, protocol_shifts: bool = False,
        pop_prior: ShiftPrior | None = None, _honest_not: dict | None = None) -> StructuralFit:
    """Maximum-likelihood fit of the structural judge on a validated two-answer log
    (after :func:`antiamp.estimate.validate_log`: roles read, final round selected).

    ``debaters``: a column naming each row's population of debaters; the judge's
    parameters are shared and each population but the first (the reference) gets a
    persuasiveness shift ``delta[<label>]`` of its dishonest side's argument
    (log-odds; the reference's is 0, else it is d).  ``protocol_gap``: debate's
    quality gap ``d_debate`` fitted apart from consultancy's ``d`` where the log has
    both protocols; ``protocol_spread``: debate's spread ``sigma_debate`` apart from
    consultancy's ``sigma`` (where the log has both protocols and stated
    probabilities; from labels alone the spread of debate is not identified apart
    from its gap).  :func:`antiamp.estimation.predictive.select_fit` lets the log choose.

    ``shift_prior``: {population label: tau}, a normal prior N(0, (tau sigma)^2) on
    those populations' shifts (sigma the consultancy spread at the current
    parameters; 1 from labels alone): the estimate is the posterior mode and the
    covariance the sandwich with the penalised information as bread and the prior's
    precision added to the judges' scores' (the Laplace posterior where the model
    holds; judge-clustered where it does not).  A population seen in a few rooms is
    shrunk toward the reference's reading instead of taking whatever shift a handful
    of labels allow (every label of it agreeing, no finite estimate at all).

    ``protocol_shifts``: each population but the reference gets its own shift in each
    protocol it has rows of, ``delta_consult[<label>]`` and ``delta_debate[<label>]``
    (a population's debaters may be less persuasive than the reference's as dishonest
    consultants and more as dishonest debaters), tied by ``pop_prior``
    (:class:`ShiftPrior`, None: flat), whose log density is added to the
    log-likelihood: the estimate is the posterior mode and the covariance the same
    sandwich as above (the Laplace approximation where the model holds).  The project's
    own likelihood with a Laplace approximation rather than a sampler (PyMC, NumPyro):
    the likelihood (censored and grid-recorded probabilities, a recording band with its
    tie share, labels) is not a stock model of those libraries, and a judge-clustered
    sandwich around the mode keeps the checks honest where the judges' rows are not
    independent.  With ``protocol_shifts`` a population with right-consultant rows also
    gets its honest consultant's shift ``honest_consult[<label>]`` (:func:`honest_param`)
    where the rows identify it by the same information rule the fit applies (its prior
    not counted); elsewhere it is 0, not fitted, and the notes and ``honest`` say why.
    Its prior: N(0, (tau_consult sigma)^2), independent of the population's
    delta_consult.  The tests validate the mode against statsmodels' probit GLM (flat
    prior) and the Laplace posterior against importance sampling."""
    import warnings

    from statsmodels.base.model import GenericLikelihoodModel
    from statsmodels.tools.numdiff import approx_fprime, approx_hess

    if df.attrs.get("K", 2) > 2:
        raise FitError(f"the structural judge is fitted on two-answer logs; the log has "
                       f"{df.attrs['K']} answers")
    if debaters is not None and debaters not in df.columns:
        raise FitError(f"no column {debaters!r} naming the populations of debaters")
    agg, d = merged_rows(df, debaters, populations)
    pops = (list(populations) if populations is not None else
            sorted(set(d[debaters].astype(str)))) if debaters is not None else []
    notes: list = []
    names, fixed = [], {}
    if (~agg["debate"]).any():
        names.append("mu_consult")
    if (agg["debate"] & agg["open"]).any():
        names.append("mu_debate")
    if (agg["debate"] & ~agg["open"]).any():
        notes.append("assigned debates: the lean toward the wrong debater at equal arguments "
                     "is 0 (roles assigned; no lean toward a role is identified there)")
    if "mu_debate" not in names:
        fixed["mu_debate"] = 0.0
    varies = agg.groupby("debate")["x"].agg(np.ptp)
    if (varies > 0).any():
        names.append("kappa_v")
    else:
        fixed["kappa_v"] = 0.0
        notes.append("kappa_v not identified: the evidence regressor is constant within each "
                     "protocol (a protocol intercept), so it is absorbed in mu; not fitted")
    names.append("d")
    both = bool(agg["debate"].any() and (~agg["debate"]).any())
    if protocol_gap and both:
        names.append("d_debate")
        notes.append("quality gap fitted per protocol: d (consultancy), d_debate (debate)")
    honest_not = dict(_honest_not or {})
    for k, lab in enumerate(pops[1:], start=1):
        if protocol_shifts:  # a shift per protocol the population has rows of
            for prot in PROTOCOLS:
                if ((agg["pop"] == k) & (agg["debate"] == (prot == "debate"))).any():
                    names.append(pop_param(lab, prot))
            if lab in honest_not:
                pass
            elif ((agg["pop"] == k) & ~agg["debate"] & agg["right"]).any():
                names.append(honest_param(lab))
            else:
                honest_not[lab] = "no right-consultant rows"
        elif (agg["pop"] == k).any():
            names.append(pop_param(lab))
    if pops:
        notes.append(f"debaters ({debaters}): {pops[0]!r} is the reference (shift 0); "
                     + (", ".join(n for n in names if n.startswith("delta"))
                        or "no other population")
                     + " the dishonest side's persuasiveness shift of the others"
                     + (" per protocol" if protocol_shifts else ""))
    if protocol_shifts and pop_prior is not None and len(pops) > 1:
        notes.append(pop_prior.text() + "; estimates are posterior modes")
    if protocol_shifts and len(pops) > 1:
        fitted_h = [lab for lab in pops[1:] if honest_param(lab) in names]
        prior_h = ("" if pop_prior is None or not np.isfinite(pop_prior.tau_consult) else
                   f", prior N(0, ({pop_prior.tau_consult:g} sigma)^2) independent of "
                   "delta_consult")
        notes.append("honest consultant's shift (its right consultants' persuasiveness "
                     "against the reference's): "
                     + (f"fitted for {', '.join(fitted_h)}{prior_h}" if fitted_h else
                        "fitted for none")
                     + "".join(f"; not fitted for {lab} ({why}), 0"
                               for lab, why in honest_not.items())
                     + "; in debate only the net of the dishonest and honest sides' shifts "
                       "is identified (both debaters from one population): delta_debate "
                       "is that net, no honest debate shift is fitted")
    for lab, tau in (shift_prior or {}).items():
        if pop_param(lab) in names:
            notes.append(f"{pop_param(lab)}: prior N(0, ({tau:g} sigma)^2), the estimate its "
                         f"posterior mode")
    has_p = (agg["p"] >= 0).any()
    if has_p:
        names.append("log_sigma")
        if protocol_spread and both:
            names.append("log_sigma_debate")
            notes.append("spread fitted per protocol: sigma (consultancy), sigma_debate "
                         "(debate)")
        pv = agg.loc[agg["p"] >= 0, "p"].to_numpy()
        pos, below = pv[pv > 1e-9], pv[pv < 1 - 1e-9]
        if len(np.unique(pv)) < 3:
            raise FitError("p_y takes fewer than three distinct values: the spread of the "
                           "judge's log-odds is not identified")
        bounds = (pos.min() if len(pos) else 0.0, below.max() if len(below) else 1.0)
        notes.append(f"stated probabilities at or beyond the log's extremes "
                     f"({bounds[0]:g}, {bounds[1]:g}) read as censored there")
        inner = pv[(pv > bounds[0] + 1e-9) & (pv < bounds[1] - 1e-9)]
        grid = recording_grid(inner)
        if grid:
            notes.append(f"p_y recorded on a {grid:g} grid: each value read as the interval "
                         f"of width {grid:g} around it")
    else:
        bounds, grid = (np.nan, np.nan), 0.0
        fixed["sigma"] = 1.0
        if protocol_spread and both:
            notes.append("labels only: debate's spread is not identified apart from its "
                         "quality gap; sigma_debate not fitted")
        notes.append("labels only: the scale of the judge's log-odds is not identified, "
                     "sigma fixed at 1 (a probit); label predictions do not depend on it")
    if not has_p and agg["endorse"].nunique() < 2:
        raise FitError("the judge's label never varies: nothing to fit")
    if not has_p and "kappa_v" in names:
        from .logfit import separation

        c = agg[~agg["debate"].to_numpy(bool)]
        sep = separation(c["x"].to_numpy(float), c["endorse"].to_numpy(float)) if len(c) else ""
        if sep and sep != "the label never varies":
            notes.append(f"separation in consultancy ({sep}, with x the evidence "
                         "regressor): from labels alone mu_consult and kappa_v may have no "
                         "finite maximum-likelihood estimate (where the fit runs off, the "
                         "separation prior below bounds them)")
    lik = Likelihood(agg, names, fixed, has_p, bounds, grid)
    lik.populations = pops

    prior = [(names.index(pop_param(lab)), float(tau))
             for lab, tau in (shift_prior or {}).items() if pop_param(lab) in names]
    # the hierarchical prior: per population, the indices of its shifts with a finite
    # prior scale and their protocols
    hier = []
    # the honest shifts' indices: their prior is left out of the rule that decides
    # whether the rows identify them
    i_honest = [names.index(n) for n in names if n.startswith("honest_")]
    if protocol_shifts and pop_prior is not None:
        for lab in pops[1:]:
            prots = [p for p in pop_prior.finite(PROTOCOLS) if pop_param(lab, p) in names]
            if prots:
                hier.append(([names.index(pop_param(lab, p)) for p in prots],
                             np.linalg.inv(pop_prior.cov(prots)), len(prots)))
            # Independent of delta_consult, under the consultancy scale: the honest and
            # the dishonest consultant are the same debaters arguing for and against
            # the truth, but how much more persuasive a population is when it is right
            # need not follow how much when it is wrong (stronger models are both
            # better at defending the truth and at arguing for a falsehood, with
            # opposite effects on accuracy), and no shipped log measures the
            # correlation: none is assumed
            if honest_param(lab) in names and np.isfinite(pop_prior.tau_consult):
                hier.append(([names.index(honest_param(lab))],
                             np.array([[1.0 / pop_prior.tau_consult ** 2]]), 1))
    has_prior = bool(prior or hier)
    i_sig = names.index("log_sigma") if "log_sigma" in names else None
    # the separation prior's (index, Cauchy scale) per location parameter; set below
    # only where the maximum-likelihood fit runs off
    sep_prior: list = []

    post = LogPosterior(lik, prior, hier, i_sig)
    log_prior, log_sep_prior = post.log_prior, post.log_sep

    class _Model(GenericLikelihoodModel):
        def loglikeobs(self, params):
            return lik.loglikeobs(params)

        def loglike(self, params):  # (the posterior's log density where a prior is set)
            ll = lik.loglikeobs(params).sum()
            if has_prior:
                ll = ll + log_prior(params)
            return ll + log_sep_prior(params) if sep_prior else ll

    start = np.zeros(len(names))
    start[names.index("d")] = 1.0
    G = int(agg["g"].max()) + 1
    N = int(agg["w"].sum())
    K = len(names)
    mod = _Model(np.zeros(len(agg)), None)
    w_rows = agg["w"].to_numpy(float)
    location = [i for i, n in enumerate(names) if not n.startswith("log_")]

    def optimise(x0):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                res = mod.fit(start_params=x0, method="bfgs", maxiter=2000, disp=0,
                              gtol=1e-8)
            except Exception as exc:  # noqa: BLE001  (overflow)
                raise FitError(f"the structural fit failed: {exc}") from None
            try:  # Newton's steps polish BFGS's optimum where the Hessian allows them;
                # whether the log identifies the fit is decided below by a stated rule,
                # not by whether a factorisation happens to fail in floating point
                polished = mod.fit(start_params=res.params, method="newton", maxiter=100,
                                   disp=0)
                if np.all(np.isfinite(polished.params)) and polished.llf >= res.llf:
                    res = polished
            except Exception:  # noqa: BLE001  (a singular or overflowing Newton step)
                pass
        return res

    def scaled(p):  # the location parameters in units of the consultancy spread
        sig = float(np.exp(p[i_sig])) if i_sig is not None else 1.0
        return np.abs(p[location]) / sig

    def identify(p):
        # the rows' information, plus the hierarchical prior's precision where it is
        # proper: a shift the rows do not measure (no wrong consultant among a few
        # calibration rooms) is then identified by the prior alone, as a posterior is
        s = np.asarray(mod.score_obs(p), float)
        J = (s / w_rows[:, None]).T @ s
        sig = float(np.exp(p[i_sig])) if i_sig is not None else 1.0
        for idx, prec, _ in hier:
            J[np.ix_(idx, idx)] += prec / sig ** 2
        return information_rule(J)

    res = optimise(start)
    params = np.asarray(res.params, float)
    if i_honest:
        # an honest shift is fitted only where the rows identify it: the same rule,
        # on the rows' information (the dishonest shifts' prior counted, the honest
        # ones' not), the flattest direction's heaviest honest shift dropped in turn
        s_ = np.asarray(mod.score_obs(params), float)
        J = (s_ / w_rows[:, None]).T @ s_
        sig_ = float(np.exp(params[i_sig])) if i_sig is not None else 1.0
        for idx, prec, _ in hier:
            if not set(idx) & set(i_honest):
                J[np.ix_(idx, idx)] += prec / sig_ ** 2
        keep, dropped = list(range(K)), []
        while True:
            r_ = information_rule(J[np.ix_(keep, keep)])
            if r_.identified:
                break
            hon = [j for j, i in enumerate(keep) if i in i_honest]
            if not hon:
                break
            j = max(hon, key=lambda j: abs(r_.direction[j]))
            dropped.append(keep.pop(j))
        if dropped:
            for i in dropped:
                honest_not[names[i][len("honest_consult["):-1]] = (
                    "the information rule: its right-consultant rows do not identify it")
            return fit(df, debaters, protocol_gap, populations, protocol_spread,
                       shift_prior, protocol_shifts, pop_prior, _honest_not=honest_not)
    runoff = [names[i] for i, v in zip(location, scaled(params)) if v > RUNOFF]
    ident = identify(params)
    if runoff or not ident.identified:
        # No finite maximum (separation: the labels or censored probabilities of some
        # group all agree) or a flat direction: refit with the stated weakly
        # informative prior, which bounds a separated parameter; a combination the
        # log's rows do not measure at all stays flat in the likelihood and is refused
        # by the rule below
        shifted = {i for i, _ in prior} | {i for idx, _, _ in hier for i in idx}
        sep_prior = [(i, SEPARATION_SCALE["mu" if names[i].startswith("mu_") else "coef"]
                      / PROBIT_PER_LOGIT) for i in location if i not in shifted]
        post.sep = sep_prior
        res = optimise(start)
        params = np.asarray(res.params, float)
        ident = identify(params)
        why = (f"the maximum-likelihood fit runs off ({', '.join(runoff)} beyond "
               f"{RUNOFF:g} spreads: separation, every label or bound probability of some "
               "group agrees)" if runoff else "the log-likelihood has no unique maximum")
        prior_text = separation_prior_text(names, sep_prior)
        notes.append(f"{why}: fitted with a weakly informative prior instead, {prior_text}; "
                     "estimates are posterior modes, SEs the judge-clustered sandwich "
                     "around them")
    if not ident.identified:
        raise FitError("the structural fit failed: the log-likelihood is flat along some "
                       "combination of the parameters (a singular Hessian), so the log does "
                       f"not identify all of {', '.join(names)} (too few rows or judges for "
                       f"this reading; {ident.describe(names)})")
    conv = bool(res.mle_retvals.get("converged", False))
    # Judge-clustered sandwich: scores summed within judges (merged rows carry their
    # weights), bread the inverse Hessian; statsmodels' numerical derivatives.
    score = mod.score_obs(params)
    H = mod.hessian(params)
    Hs = -(H + H.T) / 2
    ev, V = np.linalg.eigh(Hs)
    dg = np.diag(Hs)
    # (on the unit-diagonal scale, as the rule: parameters' units do not matter)
    if not (np.all(dg > 0) and np.linalg.eigvalsh(Hs / np.sqrt(np.outer(dg, dg)))[0]
            > IDENT_TOL):
        # the rows identify the parameters (the rule above) but the (penalised)
        # log-likelihood curves upward here: not a maximum, no Laplace approximation
        raise FitError("the structural fit failed: the fitted point is not a maximum of the "
                       "log-likelihood (its Hessian is not negative definite), so the log "
                       f"does not identify all of {', '.join(names)} in this reading")
    Hi = (V / ev) @ V.T
    Hi = (Hi + Hi.T) / 2
    P = np.zeros((K, K))
    if has_prior:  # the prior's precision (minus its Hessian) and gradient
        P = -approx_hess(params, log_prior)
    if sep_prior:
        # the Cauchy prior's curvature turns negative beyond its scale: only its
        # positive part is information, so that the sandwich stays positive definite
        w_p, v_p = np.linalg.eigh(-approx_hess(params, log_sep_prior))
        P = P + (v_p * np.clip(w_p, 0.0, None)) @ v_p.T
    if not conv:
        # Newton's step test fails at an optimum where the log-likelihood is flat in
        # float precision: an optimum is where the Newton decrement g' H^-1 g / 2 (the
        # log-likelihood a further step could gain) is negligible and -H is positive
        g = score.sum(axis=0)
        if has_prior:
            g = g + approx_fprime(params, log_prior)
        if sep_prior:
            g = g + approx_fprime(params, log_sep_prior)
        conv = bool(0.5 * g @ Hi @ g < 1e-8)
    if not conv:
        notes.append("the optimiser did not report convergence: read the fit with care")
    gid = agg["g"].to_numpy()
    S = np.zeros((G, K))
    np.add.at(S, gid, score)
    corr = G / (G - 1) * (N - 1) / (N - K) if G > 1 and N > K else np.nan
    cov = Hi @ (S.T @ S) @ Hi * corr if not (has_prior or sep_prior) else \
        Hi @ (S.T @ S * corr + P) @ Hi
    cov = (cov + cov.T) / 2
    var = np.diag(cov)
    if G > 1 and not (np.all(np.isfinite(var)) and np.all(var > 0)):
        raise FitError("the structural fit failed: its judge-clustered variance is not "
                       f"positive for {', '.join(n for n, v in zip(names, var) if not v > 0)}"
                       " (the judges' scores do not vary along it), so the log does not "
                       "identify it in this reading")
    if G < 2:
        notes.append("one judge: judge-clustered standard errors are not defined")
    band, tie = 0.0, {"consult": 0.5, "debate": 0.5}
    if grid > 0:  # z within +-logit(1/2 + grid/2) is recorded as 1/2: a tie
        band = float(special.logit(0.5 + grid / 2))
        said = []
        for deb, prot in ((False, "consult"), (True, "debate")):
            at_half = agg.loc[(np.abs(agg["p"] - 0.5) < 1e-9) & (agg["debate"] == deb)]
            n_half = int(at_half["w"].sum())
            if n_half > 0:  # how this log labels its rows at 0.5
                tie[prot] = float((at_half["w"] * at_half["endorse"]).sum() / n_half)
                said.append(f"{prot} {tie[prot]:.0%} of {n_half} row(s)")
            else:
                said.append(f"{prot} 1/2 (no row at 0.5)")
        notes.append(f"labels read as the answer the recorded p_y favours: even odds within "
                     f"+-{band:.4f} log-odds (recorded 0.5) labelled with the protagonist's "
                     f"answer as the log does at 0.5: " + ", ".join(said))
    return StructuralFit(names, params, cov, G - 1, N, G, has_p, float(res.llf), conv, fixed,
                         notes, bounds, grid, band, tie, pops, debaters,
                         prior=separation_prior_text(names, sep_prior) if sep_prior else "",
                         shift_prior=pop_prior if protocol_shifts else None,
                         cov_laplace=Hi if has_prior else None,
                         log_post=post if has_prior else None,
                         honest={lab: "fitted" if honest_param(lab) in names
                                 else honest_not.get(lab, "") for lab in pops[1:]}
                         if protocol_shifts else {})


# ------------------------------------------------------------------ simulate a log
def simulate_log(n_rows: int, *, mu_consult=0.5, mu_debate=0.0, d=2.0, sigma=1.5,
                 kappa_v=0.0, rho=1.0, p=0.5, n_judges=20, share_debate=0.5,
                 roles="assigned", bounds=(0.01, 0.99), probabilities=True,
                 seed=0, delta=0.0, delta_consult=None, delta_debate=None,
                 honest_consult=0.0) -> pd.DataFrame:
    """A log drawn from the structural judge (for tests and for checking a design).

    Each row: protocol, a truth and the protagonist's answer (right w.p. ``p``;
    assigned debates written with debater A as the protagonist, as a platform
    would), evidence (the right side always, the wrong side w.p. ``rho``),
    arguments, the judge's stated probability rounded to 0.01 and clipped to
    ``bounds`` (or only the label with ``probabilities=False``); ``delta``: the
    wrong side's argument reads that much better (a population's persuasiveness);
    ``delta_consult``, ``delta_debate``: that shift per protocol (default ``delta``);
    ``honest_consult``: a right consultant's argument reads that much better."""
    rng = np.random.default_rng(seed)
    debate = rng.random(n_rows) < share_debate
    omega = rng.integers(0, 2, n_rows)
    right = rng.random(n_rows) < p
    a = np.where(right, omega, 1 - omega)
    eP = np.where(right | (rng.random(n_rows) < rho), 1, 0)
    eA = np.where(~right | (rng.random(n_rows) < rho), 1, 0)
    rP = np.where(right, d / 2, -d / 2) + sigma * rng.standard_normal(n_rows)
    rA = np.where(right, -d / 2, d / 2) + sigma * rng.standard_normal(n_rows)
    dl = np.where(debate, delta if delta_debate is None else delta_debate,
                  delta if delta_consult is None else delta_consult)
    if np.any(dl != 0):
        rP, rA = rP + dl * ~right, rA + dl * right
    rP = rP + honest_consult * (right & ~debate)
    z = np.where(debate, (mu_debate if roles == "open" else 0.0) + kappa_v * (eP - eA)
                 + rP - rA, mu_consult + kappa_v * eP + rP)
    py = special.expit(z)
    if bounds is not None:
        py = np.clip(np.round(py, 2), *bounds)
    y = np.where(py > 0.5, a, 1 - a)
    log = pd.DataFrame({"protocol": np.where(debate, "debate", "consult"), "a": a, "y": y,
                        "omega": omega, "e_P": eP, "e_A": np.where(debate, eA, 0),
                        "judge_id": rng.integers(0, n_judges, n_rows)})
    if probabilities:
        log["p_y"] = py
    if roles == "assigned":
        log["role"] = np.where(debate, "assigned", "open")
    return log


# ------------------------------------------------------------------ predictive check
def _protocol_inputs(df: pd.DataFrame, prot: str) -> tuple[float, float]:
    """(p, rho) of one protocol in the log: the share of rows whose protagonist is
    right, and the share of wrong sides that showed evidence."""
    d = df[(df["protocol"] == prot) & df["omega"].notna()]
    right = d["a"] == d["omega"]
    shown = [d.loc[~right, "e_P"]]
    if prot == "debate" and "e_A" in d.columns:
        shown.append(d.loc[right, "e_A"])
    s = pd.concat(shown).dropna()
    return float(right.mean()), float(s.mean()) if len(s) else 1.0


def engine_config(f: StructuralFit, prot: str, p: float, rho: float, params=None, *,
                  decision="favoured", n=1_000_000, seed=0) -> dict:
    """The fitted judge as a ``model=messages`` configuration for one protocol."""
    name = "mu_consult" if prot == "consult" else "mu_debate"
    mu = f.value(name, params) if name in f.names or name in f.fixed else 0.0
    d, sigma = f.quality(prot, params)
    return {
        "model": {"name": "messages", "p": p, "rho": rho, "c_e": 0.0},
        "judge": {"kind": "logit", "lam": 1.0, "mu": mu},
        "messages": {"mode": "exogenous", "kappa_v": f.value("kappa_v", params),
                     "kappa_r": 1.0, "r_mean_true": d / 2, "r_mean_false": -d / 2,
                     "r_sd": sigma, "decision": decision,
                     **({"decision_band": f.band, "decision_tie": f.tie[prot]}
                        if decision == "favoured" else {})},
        "equilibrium": {"payoffs": "simulated"},
        "run": {"n_instances": int(n), "seed": int(seed), "progress": False,
                "figure": False},
    }


#: The parameter draws' E[sigma(a + s Z)] is a trapezoid rule on z in [-12, 12] with
#: step 0.01: for an analytic integrand with Gaussian tails its error falls like
#: exp(-2 pi c / h), c = pi / s the distance of the logistic's poles from the real
#: axis, so about 1e-15 up to s = 10 where Gauss-Hermite with 250 nodes still errs by
#: 3e-6 (tests compare with the messages model's adaptive quadrature).
_Z = np.linspace(-12.0, 12.0, 2401)
_WZ = np.exp(-0.5 * _Z ** 2) * (_Z[1] - _Z[0]) / np.sqrt(2.0 * np.pi)


def draw_metrics(f: StructuralFit, prot: str, p: float, rho: float, draws: np.ndarray,
                 decision: str) -> dict:
    """amp, acc, fwc of one protocol for every row of parameter ``draws``, exactly for
    the favoured label (normal cdf) and by Gauss-Hermite for the sampled one:
    vectorised over draws (the messages model's exact path is per cell and takes
    milliseconds)."""
    from ..models.messages import core as msm

    w = msm.type_weights(p, rho)  # [corr, t_P, t_A]
    debate = prot == "debate"
    name = "mu_debate" if debate else "mu_consult"
    mu = np.array([f.value(name, th) if name in f.names or name in f.fixed else 0.0
                   for th in draws])
    kv = np.array([f.value("kappa_v", th) for th in draws])
    d, s = np.array([f.quality(prot, th) for th in draws]).reshape(-1, 2).T
    s = s * (np.sqrt(2.0) if debate else 1.0)
    num = {0: 0.0, 1: 0.0}
    den = {0: 0.0, 1: 0.0}
    for corr in (0, 1):
        for ep in (0, 1):
            for ea in (0, 1):
                if w[corr, ep, ea] == 0:
                    continue
                gap = (1.0 if debate else 0.5) * (1 if corr else -1)
                a = mu + kv * ((ep - ea) if debate else ep) + d * gap
                if decision == "sample":
                    g = special.expit(a[:, None] + s[:, None] * _Z[None, :]) @ _WZ
                else:  # the recorded label: above the band, or a tie inside it
                    above = special.ndtr((a - f.band) / s)
                    g = above + f.tie[prot] * (special.ndtr((a + f.band) / s) - above)
                num[corr] = num[corr] + w[corr, ep, ea] * g
                den[corr] = den[corr] + w[corr, ep, ea]
    with np.errstate(invalid="ignore", divide="ignore"):
        amp = num[0] / den[0] if den[0] > 0 else np.full(len(draws), np.nan)
        fwc = num[1] / den[1] if den[1] > 0 else np.full(len(draws), np.nan)
    acc = num[1] + (den[0] - num[0])
    return {"amp": np.asarray(amp), "acc": np.asarray(acc), "fwc": np.asarray(fwc)}


def predictive_check(f: StructuralFit, df: pd.DataFrame, observed, confidence=0.95,
                     n=1_000_000, seed=0, n_draws=N_DRAWS) -> pd.DataFrame:
    """Predicted against observed per protocol and metric.

    ``observed``: the estimates Dataset (its ``stratum='all'`` values and intervals).
    Columns: protocol, metric, observed, observed_lo/hi, predicted (the engine, the
    messages kernel at n instances), predicted_se (its Monte Carlo SE),
    predicted_lo/hi (percentiles over parameter draws from N(theta-hat, V-hat)
    evaluated exactly), z and p_value (observed minus predicted over the combined
    standard error; observed SE from its bootstrap interval's width), poor."""
    from .. import simulate

    rng = np.random.default_rng(seed)
    chol = cov_factor(f.cov)
    draws = f.params + rng.standard_normal((n_draws, len(f.names))) @ chol.T
    zq = stats.norm.ppf(0.5 + confidence / 2)
    obs = observed.sel(stratum="all")
    rows = []
    has_prob = "amp_prob" in observed and f.sigma_free
    for prot in ("consult", "debate"):
        if not ((df["protocol"] == prot) & df["omega"].notna()).any():
            continue
        p, rho = _protocol_inputs(df, prot)
        i = 1 if prot == "debate" else 0
        runs = {"favoured": simulate(engine_config(f, prot, p, rho, n=n, seed=seed))}
        if has_prob:
            runs["sample"] = simulate(engine_config(f, prot, p, rho, decision="sample", n=n,
                                                    seed=seed))
        dist = {dec: draw_metrics(f, prot, p, rho, draws, dec) for dec in runs}
        metrics = [(m, m, "favoured") for m in CHECK_METRICS]
        if has_prob:  # the mean stated probability for a wrong protagonist
            metrics.append(("amp_prob", "amp", "sample"))
        for name, src, dec in metrics:
            o = float(obs[name].sel(protocol=prot))
            olo = float(obs[f"{name}_lo"].sel(protocol=prot))
            ohi = float(obs[f"{name}_hi"].sel(protocol=prot))
            pred = float(runs[dec][src].isel(protocol=i))
            pse = float(runs[dec][f"{src}_se"].isel(protocol=i))
            vals = dist[dec][src]
            vals = vals[np.isfinite(vals)]
            if not np.isfinite(o) or not len(vals) or not np.isfinite(pred):
                continue
            lo, hi = np.percentile(vals, [50 * (1 - confidence), 50 * (1 + confidence)])
            se_o = (ohi - olo) / (2 * zq) if np.isfinite(ohi - olo) else np.nan
            se = float(np.sqrt(se_o ** 2 + np.var(vals, ddof=1) + pse ** 2))
            z = (o - pred) / se if se > 0 else np.nan
            pv = float(2 * stats.norm.sf(abs(z))) if np.isfinite(z) else np.nan
            rows.append({"protocol": prot, "metric": name, "observed": o, "observed_lo": olo,
                         "observed_hi": ohi, "predicted": pred, "predicted_se": pse,
                         "predicted_lo": float(lo), "predicted_hi": float(hi), "z": z,
                         "p_value": pv, "poor": bool(pv < 1 - confidence)})
    return pd.DataFrame(rows)
