"""The ``MEM_DLQ`` stream as a list of dead letters: read, republish, delete (JetStream API).

Entries are read by sequence number with ``STREAM.MSG.GET`` (``next_by_subj`` walks
forward from a sequence, filtered by stage), deleted with ``STREAM.MSG.DELETE``.
A replay publishes the original payload to the original subject with the original
headers, except JetStream's own (``Nats-*``): the message id becomes ``dlq-replay-<seq>``,
so the duplicate window cannot swallow a replay of a message that failed moments ago,
and a replay repeated within the window is stored once.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import msgspec
from nats.js import JetStreamContext
from nats.js.errors import NotFoundError

from memoryd.codec import decode
from memoryd.schemas import DeadLetter
from memoryd.subjects import DLQ_PREFIX, DLQ_STREAM, MSG_ID_HEADER, dlq_subject

_CUT_MARK = "bytes cut to"


@dataclass(frozen=True)
class Letter:
    seq: int
    letter: DeadLetter


class DlqStore:
    def __init__(self, js: JetStreamContext) -> None:
        self._js = js

    async def totals(self) -> tuple[int, int]:
        """Entries and bytes in the stream."""
        info = await self._js.stream_info(DLQ_STREAM)
        return int(info.state.messages or 0), int(info.state.bytes or 0)

    async def get(self, seq: int) -> Letter | None:
        try:
            raw = await self._js.get_msg(DLQ_STREAM, seq=seq)
        except NotFoundError:
            return None
        return Letter(seq=int(raw.seq or seq), letter=decode(raw.data or b"", DeadLetter))

    async def scan(self, stage: str | None = None) -> AsyncIterator[Letter]:
        """Every entry (of ``stage``), oldest first."""
        subject = dlq_subject(stage) if stage else f"{DLQ_PREFIX}.>"
        seq = 1
        while True:
            try:
                raw = await self._js.get_msg(DLQ_STREAM, seq=seq, subject=subject, next=True)
            except NotFoundError:
                return
            assert raw.seq is not None
            yield Letter(seq=raw.seq, letter=decode(raw.data or b"", DeadLetter))
            seq = raw.seq + 1

    async def republish(self, item: Letter) -> None:
        """Publish the original message again and wait for JetStream's ack; raises ``ValueError``
        when the letter kept only part of its payload."""
        letter = item.letter
        if _CUT_MARK in letter.error:
            raise ValueError("the dead letter kept only part of the payload")
        headers = {k: v for k, v in letter.headers.items() if not k.startswith("Nats-")}
        headers[MSG_ID_HEADER] = f"dlq-replay-{item.seq}"
        await self._js.publish(letter.subject, letter.payload, headers=headers)

    async def delete(self, seq: int) -> bool:
        try:
            return bool(await self._js.delete_msg(DLQ_STREAM, seq))
        except NotFoundError:
            return False


def payload_ids(payload: bytes) -> tuple[str | None, str | None]:
    """``owner`` and ``event_id`` of a payload, when it is a JSON object that has them."""
    try:
        value = msgspec.json.decode(payload)
    except (msgspec.DecodeError, RecursionError):
        return None, None
    if not isinstance(value, dict):
        return None, None
    owner, event_id = value.get("owner"), value.get("event_id")
    return (owner if isinstance(owner, str) else None), (event_id if isinstance(event_id, str) else None)
