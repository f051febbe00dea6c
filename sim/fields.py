"""What each config field means, in the seed's symbols: one table for the stores'
coordinate labels, the figures' axes and legends, and ``--help``.

``label(path)`` gives "fabrication rate ρ"; ``symbol(path)`` gives "ρ".  Fields
not listed here fall back to their dataclass comment (the first clause of the
``#:`` line above the field) and their own name.
"""

from __future__ import annotations

#: config path -> (symbol, meaning).  Symbols follow seed 000 (sections 3-5).
FIELDS = {
    "model.pi": ("π", "prior Pr(ω = 1)"),
    "model.p": ("p", "protagonist accuracy"),
    "model.rho": ("ρ", "fabrication rate"),
    "model.c_e": ("c_e", "evidence cost"),
    "model.x_P": ("x_P", "protagonist presentation probability (debate)"),
    "model.x_A": ("x_A", "antagonist presentation probability"),
    "model.x_P_consult": ("x_P", "protagonist presentation probability (consultancy)"),
    "judge.kind": ("judge", "judge rule"),
    "judge.b": ("b", "tie-break bias"),
    "judge.lam": ("λ", "logit rationality"),
    "judge.mu": ("μ", "logit bias toward the protagonist"),
    "judge.kappa": ("κ", "evidence salience"),
    "judge.jury_size": ("n", "jury size"),
    "judge.jury_tie": ("tie", "tied-vote rule of even juries"),
    "protocol.consult_default": ("d", "consultancy endorsement without evidence"),
    "welfare.alpha": ("α", "welfare weight on errors"),
    "welfare.beta": ("β", "welfare weight on ratified mistakes"),
    "welfare.delta_c": ("ΔC", "extra cost of debate"),
    "signals.p_P": ("p_P", "protagonist signal accuracy"),
    "signals.p_A": ("p_A", "antagonist signal accuracy"),
    "signals.eta": ("η", "correlation of the senders' errors"),
    "signals.phi": ("φ", "search efficacy"),
    "signals.rho_unbelieved": ("ρ_u", "availability of an unbelieved false stance"),
    "signals.kappa_r": ("κ_r", "weight of rhetoric"),
    "signals.r_gap": ("Δr", "rhetoric gap of an unbelieved stance"),
    "signals.r_sd": ("σ_r", "rhetoric standard deviation"),
    "effort.c_J": ("c_J", "judge attention cost"),
    "effort.gamma": ("γ", "attention cost exponent"),
    "effort.load": ("L", "debate attention load"),
    "effort.lam_gain": ("g_λ", "attention gain of λ"),
    "effort.kappa_gain": ("g_κ", "attention gain of κ"),
    "effort.v_max": ("v_max", "largest check probability"),
    "effort.v_rate": ("v_rate", "check-probability rate"),
    "effort.t_fixed": ("t", "fixed attention"),
    "effort.t_max": ("t_max", "largest attention"),
    "portfolio.budget": ("B", "evidence budget (items)"),
    "portfolio.q_true": ("q_T", "pass rate of a true-side item"),
    "portfolio.q_fab": ("q_F", "pass rate of a fabricated item"),
    "portfolio.mislead": ("m", "misleading-item rate"),
    "portfolio.cross_exam": ("x", "cross-examination catch rate"),
    "portfolio.tau": ("τ", "accepted items needed"),
    "portfolio.kappa_v": ("κ_v", "salience of an accepted item"),
    "portfolio.c_item": ("c_item", "cost of an item"),
    "panel.size": ("n", "panel size"),
    "panel.quota": ("q", "supermajority quota"),
    "panel.tie": ("tie", "tied-vote rule"),
    "panel.default": ("d", "split-unanimity endorsement"),
    "panel.icc": ("icc", "judges' latent correlation"),
    "panel.bias_sd": ("σ_β", "spread of judge biases"),
    "messages.kappa_v": ("κ_v", "weight of evidence"),
    "messages.kappa_r": ("κ_r", "weight of rhetoric"),
    "messages.r_mean_true": ("r_T", "mean rhetoric of a true stance"),
    "messages.r_mean_false": ("r_F", "mean rhetoric of a false stance"),
    "messages.r_sd": ("σ_r", "rhetoric standard deviation"),
    "messages.r_max": ("r_max", "largest rhetoric level"),
    "messages.c_r": ("c_r", "cost of rhetoric"),
    "messages.decision_band": ("δ", "recording band around even odds"),
    "messages.decision_tie": ("t", "endorsement inside the band"),
    "options.K": ("K", "number of answers"),
    "options.distractor_weight": ("w_d", "extra pull of the distractor"),
    "options.k_examine": ("k", "alternatives examined"),
    "options.q_true": ("q_T", "availability for the true answer"),
    "options.distractor_rho": ("ρ_d", "availability for the distractor"),
    "options.distractor_bias": ("μ_d", "judge's bias toward the distractor"),
    "options.near_miss_loss": ("ℓ", "loss of the distractor"),
    "equilibrium.tol": ("tol", "certificate tolerance"),
    "loop.rounds": ("T", "rounds of the loop"),
    "loop.batch": ("N", "cases per round"),
    "loop.m": ("m", "share of endorsed training targets"),
    "loop.e_h": ("e_h", "error of the other targets"),
    "loop.e_0": ("e_0", "starting error"),
    "loop.rate": ("r", "learning rate"),
    "loop.types": ("K", "instance types"),
    "loop.bias": ("δ", "learner drift"),
    "loop.rho_gain": ("g_ρ", "gain of ρ from ratified mistakes"),
    "loop.audit": ("a", "audit rate"),
    "loop.budget": ("B", "challenger budget"),
    "loop.escalate_jury": ("n_e", "judges of the escalation jury"),
    "loop.target": ("e*", "long-run error target"),
    "confidence.condition": ("condition", "debate condition"),
    "confidence.antagonist": ("condition_A", "antagonist's condition"),
    "confidence.info": ("π_R", "share of the outcome the transcript reveals"),
    "confidence.kappa_c": ("κ_c", "weight of stated confidence"),
    "confidence.icc": ("icc", "jury latent correlation"),
    "confidence.weight": ("w", "weight of reports on belief"),
    "confidence.shared_sd": ("σ_u", "shared report component sd"),
    "confidence.side_sd": ("σ_v", "side disposition sd"),
    "confidence.noise_sd": ("σ_ε", "report noise sd"),
    "redeliberation.contested": ("q", "share of contested claims"),
    "redeliberation.p_true": ("π", "share of true claims"),
    "redeliberation.margin_clear": ("D_clear", "clear claims' evidence margin"),
    "redeliberation.margin_contested": ("D_cont", "contested claims' evidence margin"),
    "redeliberation.noise_clear": ("σ_clear", "clear claims' run noise sd"),
    "redeliberation.noise_contested": ("σ_cont", "contested claims' run noise sd"),
    "redeliberation.bias": ("β", "mean evidence-pool bias"),
    "redeliberation.bias_sd": ("σ_β", "evidence-pool bias sd"),
    "redeliberation.runs": ("k", "advocate runs per pass"),
    "redeliberation.evidence": ("x", "true side's evidence found"),
    "redeliberation.hazard": ("h", "hazard: truth established per extra round"),
    "redeliberation.max_rounds": ("R_max", "most adaptive rounds"),
    "redeliberation.insufficient_below": ("c_min", "INSUFFICIENT threshold"),
    "redeliberation.trigger_spread": ("S_trig", "re-reconciliation spread trigger"),
    "redeliberation.round_calls": ("calls_r", "calls per adaptive round"),
    "colmad.p_error": ("π_err", "share of responses with an error"),
    "colmad.sens_1": ("se_1", "detector 1 sensitivity"),
    "colmad.spec_1": ("sp_1", "detector 1 specificity"),
    "colmad.sens_2": ("se_2", "detector 2 sensitivity"),
    "colmad.spec_2": ("sp_2", "detector 2 specificity"),
    "colmad.eta": ("η", "detectors' correctness correlation"),
    "colmad.rounds": ("R", "debate rounds"),
    "colmad.evidence": ("x", "right side finds verified evidence per round"),
    "colmad.fabricate": ("ρ_fab", "fabrication rate"),
    "colmad.verify": ("v_q", "exact-match verification"),
    "colmad.mislead": ("m", "misinterpretation rate"),
    "colmad.relevance": ("v_r", "relevance check"),
    "colmad.hack": ("h_r", "debate-hacking rhetoric gap"),
    "colmad.kappa_r": ("κ_r", "judge's weight on rhetoric"),
    "colmad.delta": ("δ", "concession to bare assertions"),
    "mediation.citations": ("M", "citations per case"),
    "mediation.source": ("source", "citation generator"),
    "mediation.relevance": ("v_r", "relevance check"),
    "mediation.flaws": ("F_0", "initial material flaws"),
    "mediation.detect": ("d", "critic finds a flaw"),
    "mediation.repair": ("r", "proposer repairs a found flaw"),
    "mediation.iterations": ("k", "critic-evaluator-proposer iterations"),
    "mediation.false_alarm": ("f_a", "false alarm breaks a sound part"),
    "mediation.perspectives": ("P", "perspectives"),
    "mediation.dissent": ("s", "dissent per residual flaw"),
    "mediation.false_dissent": ("f_d", "false dissent"),
    "mediation.erase": ("e", "summary erases a dissent"),
    "mediation.escalate_at": ("T", "dissents that escalate"),
    "mediation.human_accuracy": ("h", "human accuracy"),
    "mediation.human_cost": ("c_h", "human review cost"),
    "compare.jury_size": ("n", "jurors per jury"),
}


def _doc(path: str) -> str:
    """The first clause of the field's ``#:`` comment, when the table has no entry."""
    from .helptext import field_docs
    from .registry import section_types

    section, name = path.split(".", 1)
    import dataclasses

    from .config import Config

    types = {f.name: f.default_factory for f in dataclasses.fields(Config)}
    types.update(section_types())
    cls = types.get(section)
    text = field_docs(cls).get(name, "") if cls is not None else ""
    text = text.split(";")[0].split(". ")[0].rstrip(".")
    return text[:1].lower() + text[1:]


def symbol(path: str) -> str:
    """The field's symbol ("ρ"), or its name."""
    return FIELDS.get(path, (path.split(".")[-1], ""))[0]


def label(path: str) -> str:
    """"meaning symbol" for an axis ("fabrication rate ρ")."""
    sym, meaning = FIELDS.get(path, (path.split(".")[-1], ""))
    meaning = meaning or _doc(path)
    return f"{meaning} {sym}".strip() if meaning else sym
