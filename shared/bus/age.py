"""How close a stream is to dropping work nobody has processed yet.

JetStream drops a message at the stream's ``max_age`` whether or not it was processed
(``MEM_EVENTS``, ``MEM_JOBS``, ``MEM_SLEEP``: ``MEMORYD_NATS_STREAM_MAX_AGE_DAYS``, 7 days by
default). Each consumer loop reports the age of the oldest message its durable consumer
has not acknowledged (``memoryd_stream_oldest_unprocessed_age_seconds``, beside
``memoryd_stream_max_age_seconds``) and logs ``stream.unprocessed_aging`` once that age
passes ``MEMORYD_NATS_AGE_WARNING_FRACTION`` (half by default) of the max age, so an
operator has days, not seconds, to fix a stuck stage before anything is lost.
"""

from __future__ import annotations

from datetime import UTC, datetime

from nats.js import JetStreamContext
from nats.js.api import ConsumerInfo
from nats.js.errors import NotFoundError

from ..observability.logging import get_logger
from ..observability.metrics import STREAM_MAX_AGE, STREAM_OLDEST_AGE

log = get_logger(__name__)


def aging(age_s: float, max_age_s: float, fraction: float) -> bool:
    """True when unprocessed work is old enough to warn about (``max_age_s`` 0 = kept forever)."""
    return max_age_s > 0 and age_s >= fraction * max_age_s


async def oldest_unprocessed_age(
    js: JetStreamContext, stream: str, subject: str, info: ConsumerInfo, now: datetime | None = None
) -> float:
    """Seconds since the oldest message the consumer has not acked was stored; 0 if none."""
    if not (info.num_pending or info.num_ack_pending):
        return 0.0
    floor = info.ack_floor.stream_seq if info.ack_floor is not None else 0
    try:
        raw = await js.get_msg(stream, seq=(floor or 0) + 1, subject=subject, next=True)
    except NotFoundError:
        return 0.0
    stored = raw.time
    if stored is None:
        return 0.0
    if stored.tzinfo is None:
        stored = stored.replace(tzinfo=UTC)
    return max(0.0, ((now or datetime.now(UTC)) - stored).total_seconds())


class AgeWatch:
    """Report one stream's oldest unprocessed age; warn (once per crossing) when it nears max age."""

    def __init__(self, js: JetStreamContext, stream: str, subject: str, fraction: float) -> None:
        self._js, self._stream, self._subject, self._fraction = js, stream, subject, fraction
        self._max_age_s: float | None = None
        self._warned = False

    async def update(self, info: ConsumerInfo) -> float:
        if self._max_age_s is None:
            self._max_age_s = float((await self._js.stream_info(self._stream)).config.max_age or 0.0)
            STREAM_MAX_AGE.labels(self._stream).set(self._max_age_s)
        age = await oldest_unprocessed_age(self._js, self._stream, self._subject, info)
        STREAM_OLDEST_AGE.labels(self._stream).set(age)
        if aging(age, self._max_age_s, self._fraction):
            if not self._warned:
                log.warning(
                    "stream.unprocessed_aging",
                    stream=self._stream,
                    oldest_age_s=round(age),
                    max_age_s=round(self._max_age_s),
                    drops_in_s=round(max(0.0, self._max_age_s - age)),
                )
            self._warned = True
        else:
            self._warned = False
        return age
