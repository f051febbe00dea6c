import os
import sys

sys.path.insert(0, os.path.dirname(__file__))  # the oracles beside the tests

from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile(
    "antiamp", deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True
)
settings.load_profile("antiamp")
