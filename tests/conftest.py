import os
import sys

# On a GPU, the tests launch small grids on purpose (a few thousand instances), and
# numba-cuda's low-occupancy NumbaPerformanceWarning would be an error under the
# suite's filterwarnings; numba reads this setting when numba.cuda is first imported.
os.environ.setdefault("NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS", "0")

sys.path.insert(0, os.path.dirname(__file__))  # the oracles beside the tests

from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile(
    "antiamp", deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True
)
settings.load_profile("antiamp")
