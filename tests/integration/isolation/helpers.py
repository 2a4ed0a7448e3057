"""Shared by the isolation tests: canary tokens in memory text, tenant user names, Hypothesis
settings."""

from __future__ import annotations

import os
import random
import re

from hypothesis import HealthCheck, Phase, settings

#: Every memory of an isolation world carries one unique canary; a response holding the canary
#: of a memory its caller may not see is a leak.
CANARY = re.compile(r"cnry[0-9a-f]{8}")


def canary(rng: random.Random) -> str:
    return f"cnry{rng.getrandbits(32):08x}"


def tenant_user(i: int) -> str:
    """The NATS user name of the ``i``-th owner-bound tenant (owners are not all valid user names)."""
    return f"tenant{i}"


def property_settings(examples: int) -> settings:
    """Bounded examples, no deadline, no example database; derandomized (the same examples on
    every run, as CI needs) unless ``MEMORYD_ISOLATION_RANDOM`` is set."""
    return settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=not os.environ.get("MEMORYD_ISOLATION_RANDOM"),
        # a failing example is reported as found: shrinking would rerun these RPCs for minutes
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
