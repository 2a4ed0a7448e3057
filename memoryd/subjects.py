"""Every NATS subject, stream, consumer and bucket name memoryd uses, in one place.

No stream's subject filter may cover ``mem.v1.rpc.>``: a stream would answer an RPC
request with a PubAck before the service does.
"""

from __future__ import annotations

import hashlib
import re

PREFIX = "mem.v1"

# JetStream: chat events
EVENTS_STREAM = "MEM_EVENTS"
CHAT_EVENTS = f"{PREFIX}.events.chat"
EVENTS_SUBJECTS = (f"{PREFIX}.events.>",)

# JetStream: work queues
JOBS_STREAM = "MEM_JOBS"
EXTRACT_JOBS = f"{PREFIX}.jobs.extract"
EMBED_JOBS = f"{PREFIX}.jobs.embed"
JOBS_SUBJECTS = (EXTRACT_JOBS, EMBED_JOBS)

SLEEP_STREAM = "MEM_SLEEP"
SLEEP_JOBS = f"{PREFIX}.jobs.sleep"

# JetStream: dead letters
DLQ_STREAM = "MEM_DLQ"
DLQ_PREFIX = f"{PREFIX}.dlq"
DLQ_SUBJECTS = (f"{DLQ_PREFIX}.>",)


def dlq_subject(stage: str) -> str:
    """The dead-letter subject of one pipeline stage (``ingest``, ``extract``, ...)."""
    return f"{DLQ_PREFIX}.{stage}"


# Durable consumers, one per stage
INGEST_CONSUMER = "ingest"
EXTRACT_CONSUMER = "extract"
EMBED_CONSUMER = "embed"
SLEEP_CONSUMER = "sleep"

# Activity (core NATS + KV bucket of last-activity times)
ACTIVITY_PREFIX = f"{PREFIX}.activity"
ACTIVITY_BUCKET = "MEM_ACTIVITY"


def activity_subject(owner: str) -> str:
    """Core-NATS subject announcing activity of one owner."""
    return f"{ACTIVITY_PREFIX}.{owner}"


def activity_key(owner: str) -> str:
    """The ``MEM_ACTIVITY`` KV key of an owner.

    KV keys allow no ``:`` or ``@`` (owners may hold them), so those are written as
    ``=3A`` / ``=40`` (and ``=`` as ``=3D``); ``owner_of_activity_key`` reverses it.
    """
    return owner.replace("=", "=3D").replace(":", "=3A").replace("@", "=40")


READ_KEY_PREFIX = "=R."


def read_activity_key(owner: str) -> str:
    """The ``MEM_ACTIVITY`` key of an owner's last *read* (retrieval); no owner key starts so."""
    return READ_KEY_PREFIX + activity_key(owner)


def owner_of_activity_key(key: str) -> str:
    """The owner an ``activity_key`` was made from."""
    return re.sub(r"=([0-9A-F]{2})", lambda m: chr(int(m.group(1), 16)), key)


# Settings change notifications (core NATS; every replica drops its cache)
SETTINGS_CHANGED = f"{PREFIX}.settings.changed"

# Request-reply
RPC_PREFIX = f"{PREFIX}.rpc"


def rpc_subject(op: str) -> str:
    """The request subject of one RPC operation, e.g. ``mem.v1.rpc.memory.get``."""
    return f"{RPC_PREFIX}.{op}"


#: Client operations that also have an owner-bound subject ``mem.v1.rpc.<op>.<owner>``: a
#: credential allowed only that subject can act only for that owner (see shared/nats_auth.py).
OWNER_BOUND_OPS = (
    "retrieve",
    "inject",
    "memory.create",
    "memory.get",
    "memory.history",
    "memory.update",
    "memory.delete",
    "memory.restore",
    "memory.list",
    "memory.stats",
    "memory.clear",
    "memory.export",
    "memory.import",
    "memory.batch",
    "conflicts.list",
    "conflicts.resolve",
    "entities.list",
    "entities.relations",
)


def owner_rpc_subject(op: str, owner: str) -> str:
    return f"{RPC_PREFIX}.{op}.{owner}"


def owner_events_subject(owner: str) -> str:
    """Chat events of an owner-bound client (captured by ``MEM_EVENTS`` like ``CHAT_EVENTS``)."""
    return f"{CHAT_EVENTS}.{owner}"


# Header names
MSG_ID_HEADER = "Nats-Msg-Id"
#: Correlates an RPC request, its reply and both sides' logs.
REQUEST_ID_HEADER = "x-request-id"
NO_MEMORY_HEADER = "x-memory-no-memory"
REQUEST_ID_HEADER = "x-request-id"  # an RPC's request id, echoed in its reply and logs


def chat_msg_id(owner: str, event_id: str, payload: bytes) -> str:
    """``Nats-Msg-Id`` of a chat event: ``chat:<owner>:<event_id>:<digest>``.

    ``MEM_EVENTS``' duplicate window spans every owner, so the bare event id would let one
    owner's id (colliding or guessed) turn another owner's event into a silent duplicate.
    The owner namespaces the id, and the digest of the encoded event makes a suppressing
    id unguessable without the exact payload; a retried publish of the same event encodes
    to the same bytes, so it is still deduplicated.
    """
    return f"chat:{owner}:{event_id}:{hashlib.sha256(payload).hexdigest()[:32]}"


def embed_msg_id(memory_id: str, content_hash: str) -> str:
    """``Nats-Msg-Id`` of a memory's EmbedJob: one job per memory and content hash."""
    return f"embed:{memory_id}:{content_hash}"


ALL_STREAM_SUBJECTS: dict[str, tuple[str, ...]] = {
    EVENTS_STREAM: EVENTS_SUBJECTS,
    JOBS_STREAM: JOBS_SUBJECTS,
    SLEEP_STREAM: (SLEEP_JOBS,),
    DLQ_STREAM: DLQ_SUBJECTS,
}


#: The NATS users ``memoryd up`` creates for applications and for the operator.
CLIENT_ROLE = "client"
OPERATOR_ROLE = "operator"


def inbox_prefix(user: str) -> str:
    """Each user's private reply-subject prefix (``_INBOX.<user>``)."""
    return f"_INBOX.{user}"
