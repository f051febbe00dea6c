"""The settings of ``model=colmad``: its config sections, each field declared once.

Light on purpose (dataclasses only): the registry reads every model's sections
from here to build the config schema and ``--help`` without loading numpy or
the compiled kernels."""

from __future__ import annotations

from dataclasses import dataclass

from ...config import BIG, declare


ETA_MODES = ("absolute", "fraction")

@dataclass
class ColmadConfig:
    """Error detection by debate (seed 001): collaborative (ColMAD) against competitive
    (CopMAD) debate and a single detector (``colmad.*``, with ``model=colmad``).  The
    judge (judge=logit) weighs the flagging side: mu > 0 leans toward "error"."""

    #: Share of responses that contain an error (omega = 1).
    p_error: float = declare(0.4, 'π_err', 'share of responses with an error', range='[0, 1]')
    #: Detector 1 (the stronger; the single-agent baseline): Pr(flags | error).
    sens_1: float = declare(0.8, 'se_1', 'detector 1 sensitivity', range='[0, 1]')
    #: Detector 1: Pr(does not flag | no error).
    spec_1: float = declare(0.8, 'sp_1', 'detector 1 specificity', range='[0, 1]')
    #: Detector 2: Pr(flags | error).
    sens_2: float = declare(0.7, 'se_2', 'detector 2 sensitivity', range='[0, 1]')
    #: Detector 2: Pr(does not flag | no error).
    spec_2: float = declare(0.7, 'sp_2', 'detector 2 specificity', range='[0, 1]')
    #: Correlation of the two detectors' correctness, in each class (see eta_mode).
    eta: float = declare(0.0, 'η', "detectors' correctness correlation", range='[-1, 1]')
    #: ``absolute``: eta is the correlation; ``fraction``: eta in [-1, 1] is the
    #: fraction of the feasible maximum (eta >= 0) or minimum (eta < 0) in each class.
    eta_mode: str = declare("fraction", choices=ETA_MODES)
    #: Debate rounds R on a disagreement.
    rounds: int = declare(3, 'R', 'debate rounds', range='int [1, 1000]')
    #: Per round: the right side finds an authentic, relevant quote.
    evidence: float = declare(0.8, 'x', 'right side finds verified evidence per round',
                              range='[0, 1]')
    #: Per round: the wrong side fabricates a quote (rho_fab) ...
    fabricate: float = declare(0.5, 'ρ_fab', 'fabrication rate', range='[0, 1]')
    #: ... which exact-match verification catches with probability v_q.
    verify: float = declare(0.8, 'v_q', 'exact-match verification', range='[0, 1]')
    #: Per round: the wrong side misinterprets an authentic quote (passes exact match).
    mislead: float = declare(0.2, 'm', 'misinterpretation rate', range='[0, 1]')
    #: Probability that a relevance check catches a misinterpreted quote (0: none).
    relevance: float = declare(0.0, 'v_r', 'relevance check', range='[0, 1]')
    #: CopMAD debate hacking: the wrong side's rhetoric mean above the right side's.
    hack: float = declare(0.8, 'h_r', 'debate-hacking rhetoric gap', range=f'[-{BIG:g}, {BIG:g}]')
    #: Sd of each side's rhetoric.
    r_sd: float = declare(1.0, range=f'[0, {BIG:g}]')
    #: Judge's weight on rhetoric (kappa_r) in CopMAD; ColMAD debaters use none.
    kappa_r: float = declare(1.0, 'κ_r', "judge's weight on rhetoric", range=f'[-{BIG:g}, {BIG:g}]')
    #: ColMAD: per round without verified evidence, a debater concedes to the other's
    #: unverified assertion with probability delta (degenerated collaboration).
    delta: float = declare(0.1, 'δ', 'concession to bare assertions', range='[0, 1]')


#: The config group options this model chooses unless the command line chooses
#: another (``judge=tiebreak`` on the command line still wins, and is refused with
#: the reason): its own defaults run.
GROUPS = {"judge": "logit"}

#: The sections this model adds to the shared schema.
SECTIONS = {"colmad": ColmadConfig}

#: Small example configs, ``(what, config)``: ``antiamp warm`` runs each one (compiling
#: the kernels for the argument types real runs use), and the tests and docs use them.
#: The first is the model's example; ``sweep.axes`` makes one a grid, ``export`` a
#: transcript export.
EXAMPLES = [
    ('error detection by debate',
     {'model': {'name': 'colmad'}, 'judge': {'kind': 'logit'}, 'run': {'n_instances': 2_000}}),
]

#: Small grids (``sweep.axes``) of this model: the conformance checks
#: (:func:`antiamp.testing.check_model`) and the figure tests run them.
GRIDS = [
    {'model': {'name': 'colmad'},
     'judge': {'kind': 'logit'},
     'run': {'n_instances': 4000},
     'sweep': {'axes': {'colmad': {'eta': [0.0, 0.5, 1.0], 'verify': [0.2, 0.8]}}}},
    {'model': {'name': 'colmad'},
     'judge': {'kind': 'logit'},
     'run': {'n_instances': 4000},
     'sweep': {'axes': {'colmad': {'rounds': [1, 2, 3]}}}},
]
