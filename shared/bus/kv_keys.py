"""Every key of a NATS KV bucket, without nats-py's premature "no keys".

``KeyValue.keys()`` watches the bucket and can signal the end before it has processed the first
entry delivered, then raises ``NoKeysError`` for a bucket that holds keys (seen under load: the
sleep scheduler took every owner for idle). ``all_keys`` believes "no keys" only when the
bucket holds no messages, and asks again otherwise.
"""

from __future__ import annotations

from nats.js.errors import NoKeysError
from nats.js.kv import KeyValue

#: times ``all_keys`` asks again when a bucket holding messages answers "no keys"
ATTEMPTS = 3


async def all_keys(kv: KeyValue) -> list[str]:
    """The bucket's keys; [] for an empty bucket (or one holding only delete markers)."""
    for _ in range(ATTEMPTS):
        try:
            return list(await kv.keys())
        except NoKeysError:
            if (await kv.status()).values == 0:
                return []
    return []
