"""Process settings of the sleep service (`MEMORYD_SLEEP_*`), loaded in `setup`, never at import.

These are deployment knobs (how often the scheduler looks, batch sizes of the I/O);
the behaviour a user changes at run time (`sleepModeEnabled`, thresholds, caps) lives in
the `settings` table (`settings_logic.SleepSettings`).
"""

from __future__ import annotations

from typing import Annotated

import msgspec

Positive = Annotated[int, msgspec.Meta(ge=1)]
Seconds = Annotated[float, msgspec.Meta(gt=0)]


class SleepServiceConfig(msgspec.Struct, frozen=True, kw_only=True):
    scheduler: bool = True  # run the due-run scheduler in this replica
    tick_s: Seconds = 30.0  # how often the scheduler evaluates owners
    ack_wait_s: Seconds = 60.0  # the sleep consumer's ack wait (in_progress keeps long runs alive)
    lock_poll_s: Seconds = 0.5  # how often an idle lane looks for a free run slot
    lanes: Positive = 4  # runs this replica may hold at once; each holds a pooled connection (PG pool >= 2 x lanes)
    max_ack_pending: Positive = 256  # sleep jobs handed out at once (>= lanes of every replica)
    fetch_timeout_s: Seconds = 1.0  # how long a lane holding a slot waits for a job
    requeue_s: Seconds = 1.0  # a job whose owner is running elsewhere comes back after this
    limit_ttl_s: Seconds = 1.0  # how long a lane trusts the sleepMaxConcurrentRuns it read
    demotion_batch: Positive = 500  # memories per demotion transaction
