"""Shared test settings: hypothesis profiles, so CI runs the same examples every time.

`ci` (chosen when the CI variable is set: `.ci/run` exports CI=1) derandomizes every property test:
a red CI run is then reproducible on a laptop with HYPOTHESIS_PROFILE=ci, and a green one does
not depend on luck. `dev` keeps hypothesis's random search for local runs, where finding new
counter-examples is the point. Example counts stay per test (`@settings(max_examples=...)`).
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    derandomize=True,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev"))
