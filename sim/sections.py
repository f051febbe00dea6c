"""Config sections shared by several models, as plain dataclasses.

``equilibrium.*`` (how evidence-game equilibria are computed) is read by every model
that solves for presentation strategies; each model's own sections live in its
package (``antiamp.models.<name>.config``).
"""

from __future__ import annotations

from dataclasses import dataclass

from .config import declare


METHODS = ("enumerate", "br", "qre", "root", "all")
PAYOFFS = ("exact", "simulated")

@dataclass
class EquilibriumConfig:
    """How equilibria are computed (``equilibrium.*``)."""

    #: ``enumerate`` (exact support enumeration), ``br``, ``qre``, ``root`` (general
    #: engine) or ``all`` (enumeration plus every general method, merged).
    method: str = declare("enumerate", choices=METHODS)
    #: ``exact`` (closed-form payoffs) or ``simulated`` (kernel class counts, CRN).
    payoffs: str = declare("exact", choices=PAYOFFS)
    #: Certificate tolerance: a reported equilibrium's deviation gain is below it.
    tol: float = declare(1e-9, 'tol', 'certificate tolerance', range='(0, 1)')
    #: Starting profiles for the general methods.
    starts: int = declare(9, range='int [1, 10000]')
