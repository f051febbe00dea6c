"""The config sections of the built-in models, as plain dataclasses.

Kept apart from the models (which load numpy, scipy and the compiled kernels) so
that composing and checking a command line, and answering ``--help``, needs none
of those: the registry builds the config schema from these classes alone.  Each
model module re-exports its own class.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional



@dataclass
class SignalsConfig:
    """Correlated signals (``signals.*``); at the defaults the baseline is recovered."""

    #: Protagonist accuracy Pr(s_P = omega); null = model.p.
    p_P: Optional[float] = None
    #: Antagonist accuracy Pr(s_A = omega); null = p_P.
    p_A: Optional[float] = None
    #: Correlation of the two correctness indicators (see eta_mode).
    eta: float = 0.0
    #: ``absolute``: eta is the correlation and must be feasible for (p_P, p_A);
    #: ``fraction``: eta in [-1, 1] is the fraction of the feasible maximum (eta >= 0)
    #: or minimum (eta < 0), so every accuracy pair accepts it.
    eta_mode: str = "absolute"
    #: Full table Pr(s_P, s_A | omega) as [omega][s_P][s_A]; overrides p_P, p_A, eta.
    joint: Optional[Any] = None
    #: Search efficacy: availability for a true stance its sender does not believe.
    phi: float = 1.0
    #: Availability for a false stance its sender does not believe; null = model.rho.
    rho_unbelieved: Optional[float] = None
    #: Full availability table [[true & believed, true & not], [false & believed,
    #: false & not]]; overrides phi, rho_unbelieved and model.rho.
    avail: Optional[Any] = None
    #: Weight of rhetoric in a logit judge (0 = no rhetoric): sigma(lam (mu + kappa
    #: (e_P - e_A) + kappa_r (r_P - r_A))).
    kappa_r: float = 0.0
    #: How much weaker a sender's rhetoric is when it does not believe its stance.
    r_gap: float = 0.0
    #: Standard deviation of rhetoric.
    r_sd: float = 1.0



@dataclass
class EffortConfig:
    """Endogenous judge attention (``effort.*``); off unless ``enabled``."""

    enabled: bool = False
    #: Largest attention level.
    t_max: float = 1.0
    #: Grid points on [0, t_max] used to bracket equilibria.
    n_grid: int = 41
    #: Continuous attention with grid bracketing (true) or attention restricted to the grid.
    refine: bool = True
    #: Exogenous attention: null = the judge chooses; a value fixes t.
    t_fixed: Optional[float] = None
    #: Attention cost scale c_J in c_J load t^gamma.
    c_J: float = 0.1
    #: Attention cost exponent gamma >= 1.
    gamma: float = 2.0
    #: Debate's attention-cost multiplier (consultancy's is 1).
    load: float = 1.0
    #: lam(t) = judge.lam (1 + lam_gain t) (logit judge).
    lam_gain: float = 0.0
    #: kappa(t) = judge.kappa (1 + kappa_gain t) (logit judge).
    kappa_gain: float = 0.0
    #: Largest probability of checking and rejecting a false-side artifact.
    v_max: float = 0.0
    #: Rate of v(t) = v_max (1 - exp(-v_rate t)).
    v_rate: float = 3.0



@dataclass
class PortfolioConfig:
    """Evidence portfolios (``portfolio.*``, with ``extension=portfolio``)."""

    #: Budget B: candidate items per sender.
    budget: int = 3
    #: Pr(an item for a true stance passes verification).
    q_true: float = 0.8
    #: Pr(a fabricated item for a false stance passes verification).
    q_fab: float = 0.1
    #: Pr(a false side finds a misleading-but-authentic item when its fabrication fails).
    mislead: float = 0.3
    #: Pr(the relevance check, cross-examination, catches a misleading item).
    cross_exam: float = 0.0
    #: Threshold tau: e_i = 1{V_i >= tau} (rule = threshold).
    tau: int = 1
    #: ``threshold`` (baseline judge on e_i) or ``logit`` on kappa_v (V_P - V_A) (logit judge).
    rule: str = "threshold"
    #: Salience of one accepted item (rule = logit).
    kappa_v: float = 1.0
    #: Cost of submitting one item.
    c_item: float = 0.0



@dataclass
class PanelConfig:
    """A panel of judges (``panel.*``, with ``extension=panel``)."""

    #: Number of judges.
    size: int = 5
    #: ``majority``, ``supermajority``, ``unanimity`` or ``confidence``.
    rule: str = "majority"
    #: Supermajority: fraction of the panel needed to endorse the protagonist.
    quota: float = 2 / 3
    #: Even majority panels: Pr(y = a) on a tied vote.
    tie: float = 0.5
    #: Unanimity: Pr(y = a) when the panel is split.
    default: float = 0.0
    #: Latent intra-class correlation of the judges (shared blind spot), in [0, 1].
    icc: float = 0.0
    #: Standard deviation of the judges' own biases (probit scale).
    bias_sd: float = 0.0
    #: How the panel's tables are computed: ``quadrature`` (exact: the biases and the
    #: judges' noises integrated out in closed form, the shared latent by adaptive
    #: quadrature) or ``monte_carlo`` (the compiled kernel over ``n_panels`` panels).
    method: str = "quadrature"
    #: Monte Carlo panels per table with ``method=monte_carlo`` (rounded up to blocks
    #: of 256); exact when icc and bias_sd are 0.
    n_panels: int = 16384



@dataclass
class MessagesConfig:
    """Evidence plus rhetoric (``messages.*``, with ``extension=messages``)."""

    #: ``exogenous`` (rhetoric drawn by stance truth) or ``strategic`` (chosen at a cost).
    mode: str = "exogenous"
    #: Weight of verifiable evidence.
    kappa_v: float = 2.0
    #: Weight of rhetoric.
    kappa_r: float = 0.5
    #: Exogenous: mean rhetoric of a true stance.
    r_mean_true: float = 0.0
    #: Exogenous: mean rhetoric of a false stance.
    r_mean_false: float = 0.0
    #: Exogenous: standard deviation of rhetoric.
    r_sd: float = 1.0
    #: Strategic: number of rhetoric levels in [0, r_max].
    r_levels: int = 5
    #: Strategic: largest rhetoric level.
    r_max: float = 2.0
    #: Strategic: cost per unit of rhetoric.
    c_r: float = 0.05
    #: Exogenous: the judge's label, ``sample`` (drawn with its probability, the seed's
    #: judge) or ``favoured`` (the answer its probability favours, as a judge who states
    #: a probability and answers with the likelier side).
    decision: str = "sample"
    #: Favoured decision: half-width (log-odds) of the band around even odds where the
    #: judge's recorded probability rounds to 1/2 (0: none).
    decision_band: float = 0.0
    #: Favoured decision: Pr(label = the protagonist's answer) inside that band.
    decision_tie: float = 0.5



@dataclass
class OptionsConfig:
    """Multi-option answers (``options.*``, with ``extension=options``)."""

    #: Number of answers K.
    K: int = 4
    #: Prior over the true answer (K probabilities); null = uniform.
    prior: Optional[Any] = None
    #: When wrong, extra probability of picking the distractor omega + 1 (mod K).
    distractor_weight: float = 0.0
    #: ``assigned``, ``best_of_k`` or ``attack``.
    antagonist: str = "assigned"
    #: Alternatives the antagonist examines (best_of_k).
    k_examine: int = 2
    #: Pr(a passing artifact exists for the true answer).
    q_true: float = 1.0
    #: Pr(a passing artifact exists for the distractor); null = model.rho.
    distractor_rho: Optional[float] = None
    #: The judge's extra bias toward the distractor.
    distractor_bias: float = 0.0
    #: The judge's bias mu_j toward each answer by label (K numbers); null = none.
    option_bias: Optional[Any] = None
    #: Loss of answering the distractor (the truth costs 0, other answers 1).
    near_miss_loss: float = 1.0
    #: An answer is suboptimal when its loss exceeds this.
    loss_tol: float = 0.0



@dataclass
class EquilibriumConfig:
    """How equilibria are computed (``equilibrium.*``)."""

    #: ``enumerate`` (exact support enumeration), ``br``, ``qre``, ``root`` (general
    #: engine) or ``all`` (enumeration plus every general method, merged).
    method: str = "enumerate"
    #: ``exact`` (closed-form payoffs) or ``simulated`` (kernel class counts, CRN).
    payoffs: str = "exact"
    #: Certificate tolerance: a reported equilibrium's deviation gain is below it.
    tol: float = 1e-9
    #: Starting profiles for the general methods.
    starts: int = 9


@dataclass
class LoopConfig:
    """Closed-loop oversight (``loop.*``, with ``model=loop``): endorsed labels train the model."""

    #: Rounds T of answer -> oversight -> training.
    rounds: int = 40
    #: Instances per round and path (per instance type for the majority learner).
    batch: int = 1000
    #: Independent simulated paths (0: the exact recursion only).
    paths: int = 200
    #: Share m of each round's training targets that are the labels oversight endorsed.
    m: float = 0.5
    #: Error e_h of the other targets (ground truth or fresh data).
    e_h: float = 0.05
    #: Starting error e_0 of the model; null = 1 - model.p.
    e_0: Optional[float] = None
    #: Learning rate: the share of the way the error moves toward its targets' each round
    #: (majority learner: the probability that a type updates in a round).
    rate: float = 1.0
    #: ``calibrated`` (error tracks the targets' error rate) or ``majority`` (MAP: each
    #: instance type takes the majority of its targets).
    learner: str = "calibrated"
    #: Instance types of the majority learner.
    types: int = 100
    #: The calibrated learner's own drift delta: its error is its targets' plus delta.
    bias: float = 0.0
    #: Persuasive error rewarded: rho_{t+1} = rho_t + gain R_t (1 - rho_t), R_t the share
    #: of overseen cases whose wrong answer was endorsed.
    rho_gain: float = 0.0
    #: Escalation policy: share of cases sent to debate at random (an audit).
    audit: float = 0.1
    #: Escalation policy's flag: ``none``, ``no_evidence`` (consultancy shows no
    #: evidence) or ``uncertain`` (the consultancy judge endorses with a probability
    #: within flag_band of 1/2).
    flag: str = "no_evidence"
    #: Half-width of the ``uncertain`` flag's band around 1/2.
    flag_band: float = 0.25
    #: Most cases that may be escalated, as a share of the overseen cases (challenger budget).
    budget: float = 1.0
    #: Where escalated cases go: ``debate`` (the configured judge) or ``jury`` (a
    #: consultancy judged by a majority of escalate_jury such judges).
    escalate_to: str = "debate"
    #: Judges of the escalation jury (escalate_to=jury).
    escalate_jury: int = 5
    #: Long-run error target of the cheapest escalation policy; null = no design.
    target: Optional[float] = None


@dataclass
class ConfidenceConfig:
    """Stated confidence in multi-round debate (``confidence.*``, with ``model=confidence``)."""

    #: Condition of the bets data whose fitted report model the debaters follow
    #: (shipped: cross_model, self_debate, informed_self, public_bets, self_redteam_debate).
    condition: str = "cross_model"
    #: Condition of the antagonist's reports in debate; null = the same condition.
    antagonist: Optional[str] = None
    #: Bets CSV (debate, condition, side, round, bet); null = the shipped published bets.
    data: Optional[str] = None
    #: Share of the outcome's variance the transcript reveals by the last round (0, 1).
    info: float = 0.5
    #: Judge's weight on stated confidence: kappa_c (logit c_P - logit c_A) in the logit judge.
    kappa_c: float = 0.0
    #: Latent correlation of a jury's judges (judge.jury_size > 1); 0 = independent judges.
    icc: float = 0.0
    #: Vote histogram that calibrates icc: debates by votes for one side (votes_judges + 1
    #: counts) or by dissenting judges (votes_judges // 2 + 1 counts); null = use icc.
    votes: Optional[Any] = None
    #: Judges per debate in the vote histogram.
    votes_judges: int = 6
    #: Override of the fitted mean report by round (0-100); null = fitted.
    intercepts: Optional[Any] = None
    #: Override of the fitted weight on belief w; null = fitted.
    weight: Optional[float] = None
    #: Override of the fitted side bias beta (calibration only; oversight uses Phi^-1(p)).
    side_bias: Optional[float] = None
    #: Override of the fitted sd of the debate-level component shared by both sides.
    shared_sd: Optional[float] = None
    #: Override of the fitted sd of a side's persistent disposition.
    side_sd: Optional[float] = None
    #: Override of the fitted sd of per-report noise.
    noise_sd: Optional[float] = None
    #: Replicated data sets of the posterior predictive check (0 = no check).
    ppc_draws: int = 200


@dataclass
class RedeliberationConfig:
    """Adaptive re-deliberation of fact-check verdicts (seed 003) (``redeliberation.*``,
    with ``model=redeliberation``).  Verdicts are truth percentages (0-100); the
    advocate's runs share the claim's evidence-pool bias and add run noise."""

    #: Share of contested claims (the rest are clear).
    contested: float = 0.5
    #: Share of true claims.
    p_true: float = 0.5
    #: Distance of a clear claim's evidence from 50, toward the truth (percentage points).
    margin_clear: float = 25.0
    #: Distance of a contested claim's evidence from 50, toward the truth (points).
    margin_contested: float = 6.0
    #: Run-to-run noise sd of a clear claim's verdict (points).
    noise_clear: float = 3.0
    #: Run-to-run noise sd of a contested claim's verdict (points).
    noise_contested: float = 14.0
    #: Mean evidence-pool bias toward "true", shared by every run of a claim (points).
    bias: float = 0.0
    #: Sd over claims of the evidence-pool bias (points).
    bias_sd: float = 8.0
    #: Advocate runs per pass: the advocate and its self-consistency samples (k).
    runs: int = 3
    #: Probability that the true side's evidence is found (the challenger's contrarian
    #: evidence when the advocate is wrong); the false side's passes with model.rho.
    evidence: float = 0.8
    #: Per extra round (re-reconciliation or adaptive round): probability that the
    #: truth is established (the hazard h).
    hazard: float = 0.5
    #: Most extra rounds of the adaptive policy (Climinator: 18).
    max_rounds: int = 18
    #: Spread bands' upper edges (points); null = the seed's 5, 12, 20.
    bands: Optional[Any] = None
    #: Confidence multiplier per band (one more than bands); null = 1.0, 0.9, 0.7, 0.4.
    multipliers: Optional[Any] = None
    #: Adjusted confidence below which a verdict is reported INSUFFICIENT (0-100).
    insufficient_below: float = 40.0
    #: Re-reconciliation runs when the spread exceeds this (points) and contrarian
    #: evidence is present.
    trigger_spread: float = 20.0
    #: Model calls of the fixed pipeline per claim.
    base_calls: int = 7
    #: Model calls per adaptive round (the k advocate runs and the mediator).
    round_calls: int = 4
    #: Extra rounds of the forced-rounds accuracy series (every claim runs them all).
    forced_rounds: int = 5


@dataclass
class ColmadConfig:
    """Error detection by debate (seed 001): collaborative (ColMAD) against competitive
    (CopMAD) debate and a single detector (``colmad.*``, with ``model=colmad``).  The
    judge (judge=logit) weighs the flagging side: mu > 0 leans toward "error"."""

    #: Share of responses that contain an error (omega = 1).
    p_error: float = 0.4
    #: Detector 1 (the stronger; the single-agent baseline): Pr(flags | error).
    sens_1: float = 0.8
    #: Detector 1: Pr(does not flag | no error).
    spec_1: float = 0.8
    #: Detector 2: Pr(flags | error).
    sens_2: float = 0.7
    #: Detector 2: Pr(does not flag | no error).
    spec_2: float = 0.7
    #: Correlation of the two detectors' correctness, in each class (see eta_mode).
    eta: float = 0.0
    #: ``absolute``: eta is the correlation; ``fraction``: eta in [-1, 1] is the
    #: fraction of the feasible maximum (eta >= 0) or minimum (eta < 0) in each class.
    eta_mode: str = "fraction"
    #: Debate rounds R on a disagreement.
    rounds: int = 3
    #: Per round: the right side finds an authentic, relevant quote.
    evidence: float = 0.8
    #: Per round: the wrong side fabricates a quote (rho_fab) ...
    fabricate: float = 0.5
    #: ... which exact-match verification catches with probability v_q.
    verify: float = 0.8
    #: Per round: the wrong side misinterprets an authentic quote (passes exact match).
    mislead: float = 0.2
    #: Probability that a relevance check catches a misinterpreted quote (0: none).
    relevance: float = 0.0
    #: CopMAD debate hacking: the wrong side's rhetoric mean above the right side's.
    hack: float = 0.8
    #: Sd of each side's rhetoric.
    r_sd: float = 1.0
    #: Judge's weight on rhetoric (kappa_r) in CopMAD; ColMAD debaters use none.
    kappa_r: float = 1.0
    #: ColMAD: per round without verified evidence, a debater concedes to the other's
    #: unverified assertion with probability delta (degenerated collaboration).
    delta: float = 0.1


@dataclass
class MediationConfig:
    """Provenance-backed pluralistic mediation (seed 002, FOAM) (``mediation.*``, with
    ``model=mediation``): citations, the critic-evaluator-proposer loop, the synthesis
    that keeps or erases dissent, and escalation to a human."""

    #: Citations per case (M).
    citations: int = 8
    #: Citation generator: ``foam`` (sentence-level provenance), ``human`` (expert),
    #: ``zeroshot`` (zero-shot AI), each calibrated to the seed's Tables 1 and 2, or
    #: ``custom`` (the five shares below).
    source: str = "foam"
    #: Custom shares of citation classes: [exact and relevant, exact but irrelevant
    #: (a wrong pointer), partial, paraphrase, fabricated]; used with source=custom.
    classes: Optional[Any] = None
    #: Probability that a relevance check catches a verbatim-but-irrelevant citation.
    relevance: float = 0.0
    #: Mean material flaws of a proposal before mediation (Poisson F_0).
    flaws: float = 2.0
    #: Per iteration, the critic finds a remaining flaw with probability d ...
    detect: float = 0.6
    #: ... and the proposer repairs a found flaw with probability r.
    repair: float = 0.7
    #: Critic-evaluator-proposer iterations (k).
    iterations: int = 3
    #: Per iteration, a false alarm whose accepted "repair" breaks a sound part (a new flaw).
    false_alarm: float = 0.05
    #: Perspectives whose dissent the synthesis sees.
    perspectives: int = 3
    #: A perspective dissents on a residual flaw with probability s per flaw.
    dissent: float = 0.5
    #: A perspective dissents on a sound recommendation (false dissent).
    false_dissent: float = 0.05
    #: A monolithic summary erases each dissent with this probability (a dissent memo keeps it).
    erase: float = 0.8
    #: Escalate to a human when at least this many dissents survive the synthesis.
    escalate_at: int = 1
    #: The human's probability of deciding an escalated case correctly.
    human_accuracy: float = 0.9
    #: Cost of one human review, in model calls.
    human_cost: float = 20.0


@dataclass
class CompareConfig:
    """Every protocol on one task (``compare.*``, with ``model=compare``): the model's
    answer is right with probability model.p, the wrong side's evidence passes
    verification with probability model.rho, one logit judge (judge.*); the other
    models' sections (colmad.*, mediation.*, redeliberation.*) set what only their
    protocol has (rounds, rhetoric, the critique loop, the re-deliberation policy)."""

    #: Judges in each jury of the jury protocols (majority; judge.jury_tie on a tie).
    jury_size: int = 5
