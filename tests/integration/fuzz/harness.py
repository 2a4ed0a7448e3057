"""The fuzz harness: hostile payloads drawn with hypothesis, sent to the running stack, checked, tallied.

Payloads are drawn up front per subject by a ``@given`` collector (``draw``) and sent from the
async test (a ``@given`` test would wrap the stack's event loop in hypothesis's synchronous
runner); there is no shrinking, and ``MEMORYD_FUZZ_SEED`` reproduces the whole set.
Properties: an RPC gets a typed 4xx ``RpcError`` (with matching service-error headers) or a
result of the operation's type within ``REPLY_TIMEOUT_S``, and a 4xx leaves the database digest
unchanged; a JetStream message is dead-lettered (undecodable ones on first delivery; the database
unchanged) or acked, nothing the pipeline publishes itself is dead-lettered, and a valid message
afterwards is still processed.
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
import zlib
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import asyncpg
import pytest
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st
from nats.aio.client import Client
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeout
from nats.js import JetStreamContext

from memoryd.codec import decode, decode_reply
from memoryd.schemas import DeadLetter, RpcError, RpcOp
from memoryd.subjects import (
    DLQ_PREFIX,
    DLQ_STREAM,
    EMBED_CONSUMER,
    EVENTS_STREAM,
    EXTRACT_CONSUMER,
    INGEST_CONSUMER,
    JOBS_STREAM,
    MSG_ID_HEADER,
    SLEEP_CONSUMER,
    SLEEP_STREAM,
)
from tests.support.digest import Digest, changed_tables, digest_query

from .cases import StreamTarget

T = TypeVar("T")

EXAMPLES = int(os.environ.get("MEMORYD_FUZZ_EXAMPLES", "10"))
SEED = int(os.environ.get("MEMORYD_FUZZ_SEED", "20260301"))
REPLY_TIMEOUT_S = 30.0
SETTLE_TIMEOUT_S = 60.0
FUZZ_ID = "fuzz-"
SUMMARY = pytest.StashKey[str]()  # the summary line, printed by this package's conftest
DECODE_ERRORS = ("validation:", "too_large:")  # how the consumer words a letter it could not decode

#: Consumers in pipeline order: once one is idle after those before it, nothing new reaches it.
PIPELINE = [
    (EVENTS_STREAM, INGEST_CONSUMER),
    (JOBS_STREAM, EXTRACT_CONSUMER),
    (JOBS_STREAM, EMBED_CONSUMER),
    (SLEEP_STREAM, SLEEP_CONSUMER),
]


def draw(strategy: st.SearchStrategy[T], subject: str, n: int = EXAMPLES) -> list[T]:
    """``n`` examples of ``strategy`` from hypothesis's engine, reproducible per subject and seed."""
    out: list[T] = []

    @seed(SEED ^ zlib.crc32(subject.encode()))
    @settings(
        max_examples=n,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def collect(value: T) -> None:
        out.append(value)

    collect()
    return list(dict.fromkeys(out))


class Hang(AssertionError):
    """Something that should settle did not within its timeout."""


async def wait_for(check: Callable[[], Awaitable[bool]], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    delay = 0.005
    while not await check():
        if time.monotonic() > deadline:
            raise Hang(f"timed out after {timeout:.0f} s waiting for {what}")
        await asyncio.sleep(delay)
        delay = min(0.1, delay * 2)


# --- the tally ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Violation:
    subject: str
    problem: str
    payload: bytes

    def __str__(self) -> str:
        shown = self.payload[:300]
        more = f"... ({len(self.payload)} bytes)" if len(self.payload) > 300 else ""
        return f"{self.subject}: {self.problem}; payload {shown!r}{more}"


@dataclass
class Tally:
    cases: Counter[str] = field(default_factory=Counter)
    accepted: Counter[str] = field(default_factory=Counter)
    violations: list[Violation] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)

    def record(self, subject: str, accepted: bool) -> None:
        self.cases[subject] += 1
        self.accepted[subject] += accepted

    def violated(self, subject: str, problem: str, payload: bytes) -> None:
        self.violations.append(Violation(subject, problem, payload))

    def discard(self, subject: str) -> None:
        """Forget a subject's cases and violations (the harness's self-check is not memoryd's)."""
        self.cases.pop(subject, None)
        self.accepted.pop(subject, None)
        self.violations = [v for v in self.violations if v.subject != subject]

    def of(self, subject: str) -> list[str]:
        return [str(v) for v in self.violations if v.subject == subject]

    def summary(self) -> str:
        total = sum(self.cases.values())
        return f"fuzz: {total} cases over {len(self.cases)} subjects, {len(self.violations)} crashes"

    def report(self) -> dict[str, Any]:
        total = sum(self.cases.values())
        accepted = sum(self.accepted.values())
        return {
            "cases": total,
            "subjects": len(self.cases),
            "crashes": len(self.violations),
            "digest_changed_on_rejection": sum(
                v.problem.startswith("rejected, yet tables changed") for v in self.violations
            ),
            "accepted": accepted,
            "rejected": total - accepted,
            "examples_per_subject": EXAMPLES,
            "seed": SEED,
            "seconds": round(time.monotonic() - self.started, 1),
            "per_subject": {
                s: {"cases": n, "accepted": self.accepted[s], "rejected": n - self.accepted[s]}
                for s, n in sorted(self.cases.items())
            },
            "violations": [str(v) for v in self.violations],
            "summary": self.summary(),
            "markdown": self.markdown(),
        }

    def markdown(self) -> str:
        """The README table: totals, then cases per subject."""
        total = sum(self.cases.values())
        accepted = sum(self.accepted.values())
        rows = [
            "| cases | subjects | accepted (valid) | rejected (4xx or DLQ) | crashes | examples per subject | seed |",
            "|---|---|---|---|---|---|---|",
            f"| {total} | {len(self.cases)} | {accepted} | {total - accepted} | {len(self.violations)} "
            f"| {EXAMPLES} | {SEED} |",
            "",
            "| subject | cases | accepted | rejected |",
            "|---|---|---|---|",
        ]
        for subject, n in sorted(self.cases.items()):
            rows.append(f"| `{subject}` | {n} | {self.accepted[subject]} | {n - self.accepted[subject]} |")
        return "\n".join(rows)


# --- dead letters ------------------------------------------------------------------------------
class DeadLetters:
    """Reads the DLQ as it fills: letters of fuzz messages by their msg id, any other as stray."""

    def __init__(self, js: JetStreamContext) -> None:
        self._js = js
        self._sub: Any = None
        self.by_id: dict[str, DeadLetter] = {}
        self.stray: list[DeadLetter] = []

    async def start(self) -> None:
        durable = f"fuzz-dlq-{uuid.uuid4().hex[:6]}"
        self._sub = await self._js.pull_subscribe(f"{DLQ_PREFIX}.>", durable=durable, stream=DLQ_STREAM)

    async def refresh(self) -> None:
        while (pending := (await self._sub.consumer_info()).num_pending) > 0:
            for msg in await self._sub.fetch(min(pending, 256), timeout=5.0):
                letter = decode(msg.data, DeadLetter)
                msg_id = letter.headers.get(MSG_ID_HEADER, "")
                if msg_id.startswith(FUZZ_ID):
                    self.by_id[msg_id] = letter
                else:
                    self.stray.append(letter)
                await msg.ack()


# --- the stack under fuzz ----------------------------------------------------------------------
@dataclass
class FuzzStack:
    nc: Client
    pool: asyncpg.Pool
    contexts: Mapping[str, Any]
    tally: Tally
    dlq: DeadLetters
    digest_sql: str
    _known: Digest | None = None  # the digest, while no accepted case may have changed it

    @property
    def js(self) -> JetStreamContext:
        return self.nc.jetstream()

    @classmethod
    async def open(cls, nc: Client, pool: asyncpg.Pool, contexts: Mapping[str, Any]) -> FuzzStack:
        dlq = DeadLetters(nc.jetstream())
        await dlq.start()
        return cls(nc=nc, pool=pool, contexts=contexts, tally=Tally(), dlq=dlq, digest_sql=await digest_query(pool))

    # pipeline state
    async def busy_consumers(self) -> list[str]:
        busy = []
        for stream, durable in PIPELINE:
            info = await self.js.consumer_info(stream, durable)
            if info.num_pending or info.num_ack_pending:
                busy.append(durable)
        return busy

    async def settle(self) -> None:
        """Wait until every stage has acked (or dead-lettered) everything it was given."""

        async def idle() -> bool:
            return not await self.busy_consumers()

        await wait_for(idle, SETTLE_TIMEOUT_S, "the pipeline to drain")
        await self.dlq.refresh()

    async def digest(self) -> Digest:
        if self._known is None:
            await self.settle()
            rows = await self.pool.fetch(self.digest_sql)
            self._known = {r["t"]: (r["n"], r["h"]) for r in rows}
        return self._known

    def forget_digest(self) -> None:
        self._known = None

    async def check_unchanged(self, subject: str, before: Digest, payload: bytes) -> None:
        self.forget_digest()
        if changed := changed_tables(before, await self.digest()):
            self.tally.violated(subject, f"rejected, yet tables changed: {', '.join(changed)}", payload)

    async def check_no_stray(self, subject: str, payload: bytes, seen: int) -> None:
        for letter in self.dlq.stray[seen:]:
            problem = f"the pipeline dead-lettered its own {letter.subject} message: {letter.error[:300]}"
            self.tally.violated(subject, problem, payload)

    # RPC
    async def rpc_case(self, to: str, op: RpcOp, payload: bytes, *, label: str | None = None) -> RpcError | Any | None:
        """Send one request to ``to`` and check the reply; the reply (None when there was none).

        ``label`` is the subject the case counts for (default ``to``).
        """
        subject = label or to
        before = await self.digest()
        try:
            msg = await self.nc.request(to, payload, timeout=REPLY_TIMEOUT_S)
        except (NatsTimeout, NoRespondersError) as exc:
            self.tally.violated(subject, f"no reply: {type(exc).__name__}", payload)
            self.tally.record(subject, False)
            self.forget_digest()
            return None
        try:
            reply = decode_reply(msg.data, op.result)
        except Exception as exc:
            self.tally.violated(subject, f"undecodable reply {msg.data[:200]!r}: {exc}", payload)
            reply = None
        if isinstance(reply, RpcError):
            self._check_error(subject, reply, msg.headers or {}, payload)
            await self.check_unchanged(subject, before, payload)
        else:
            self.forget_digest()
        self.tally.record(subject, reply is not None and not isinstance(reply, RpcError))
        return reply

    def _check_error(self, subject: str, reply: RpcError, headers: Mapping[str, str], payload: bytes) -> None:
        if not 400 <= reply.code < 500:
            problem = f"{reply.code} {reply.err_code}: {reply.description} (error_id={reply.error_id})"
            self.tally.violated(subject, problem, payload)
        if headers.get("Nats-Service-Error-Code") != str(reply.code):
            self.tally.violated(subject, f"error headers {dict(headers)} do not match {reply.code}", payload)

    # JetStream
    async def publish(self, subject: str, payload: bytes) -> tuple[str, int]:
        msg_id = f"{FUZZ_ID}{uuid.uuid4().hex}"
        ack = await self.js.publish(subject, payload, headers={MSG_ID_HEADER: msg_id}, timeout=10.0)
        return msg_id, ack.seq

    async def acked(self, target: StreamTarget, seq: int) -> bool:
        info = await self.js.consumer_info(target.stream, target.durable)
        idle = not info.num_pending and not info.num_ack_pending
        return idle and info.ack_floor is not None and (info.ack_floor.stream_seq or 0) >= seq

    async def rejected_batch(self, target: StreamTarget, payloads: list[bytes]) -> None:
        """Payloads its consumer cannot decode: all dead-lettered on first delivery, nothing written."""
        if not payloads:
            return
        before, seen = await self.digest(), len(self.dlq.stray)
        sent = [(await self.publish(target.subject, p), p) for p in payloads]

        async def all_dead() -> bool:
            await self.dlq.refresh()
            return all(msg_id in self.dlq.by_id for (msg_id, _), _p in sent)

        try:
            await wait_for(all_dead, SETTLE_TIMEOUT_S, f"{len(sent)} dead letters on {target.subject}")
        except Hang as exc:
            self.tally.violated(target.subject, str(exc), b"")
        await self.check_unchanged(target.subject, before, b"<batch of undecodable payloads>")
        for (msg_id, _), payload in sent:
            letter = self.dlq.by_id.get(msg_id)
            if letter is not None and (
                letter.deliveries != 1 or not letter.error.startswith(("validation:", "too_large:"))
            ):
                problem = f"dead letter after {letter.deliveries} deliveries: {letter.error[:200]}"
                self.tally.violated(target.subject, problem, payload)
            self.tally.record(target.subject, False)
        await self.check_no_stray(target.subject, b"<batch of undecodable payloads>", seen)

    async def stream_case(self, target: StreamTarget, payload: bytes, *, label: str | None = None) -> bool | None:
        """One decodable message: acked (True) or dead-lettered with nothing written (False);
        None when it was neither in time. ``label``: the subject the case counts for."""
        subject = label or target.subject
        before, seen = await self.digest(), len(self.dlq.stray)
        msg_id, seq = await self.publish(target.subject, payload)

        async def done() -> bool:
            await self.dlq.refresh()
            return msg_id in self.dlq.by_id or await self.acked(target, seq)

        try:
            await wait_for(done, SETTLE_TIMEOUT_S, f"{msg_id} to be acked or dead-lettered")
            await self.settle()
        except Hang as exc:
            self.tally.violated(subject, str(exc), payload)
            self.tally.record(subject, False)
            return None
        dead = msg_id in self.dlq.by_id
        if dead:
            await self.check_unchanged(subject, before, payload)
        else:
            self.forget_digest()
        await self.check_no_stray(subject, payload, seen)
        self.tally.record(subject, not dead)
        return not dead
