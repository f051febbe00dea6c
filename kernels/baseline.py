"""The former name of :mod:`antiamp.kernels.transcript_classes`, the 32-class
transcript kernel that the baseline model shares with the runner, the metrics and
the transcript export: the same module object, so that every name (private ones
included, which the GPU twins read) resolves as before."""

import sys

from . import transcript_classes

sys.modules[__name__] = transcript_classes
