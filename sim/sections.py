"""Config sections shared by several models, as plain dataclasses.

``equilibrium.*`` (how evidence-game equilibria are computed) is read by every model
that solves for presentation strategies; each model's own sections live in its
package (``antiamp.models.<name>.config``).
"""

from __future__ import annotations

from dataclasses import dataclass

from .config import declare


@dataclass
class EquilibriumConfig:
    """How equilibria are computed (``equilibrium.*``)."""

    #: ``enumerate`` (exact support enumeration), ``br``, ``qre``, ``root`` (general
    #: engine) or ``all`` (enumeration plus every general method, merged).
    method: str = "enumerate"
    #: ``exact`` (closed-form payoffs) or ``simulated`` (kernel class counts, CRN).
    payoffs: str = "exact"
    #: Certificate tolerance: a reported equilibrium's deviation gain is below it.
    tol: float = declare(1e-9, 'tol', 'certificate tolerance')
    #: Starting profiles for the general methods.
    starts: int = 9
