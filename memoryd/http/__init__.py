"""The HTTP clients of memoryd's gateway: ``Memory`` (blocking) and ``AsyncMemory`` (asyncio).

For applications outside the NATS network: the gateway's REST API with an API key, mem0-style
calls (``add``, ``search``, ``get``, ``get_all``, ``update``, ``delete``, ``delete_all``,
``history``) and the typed errors of ``memoryd.errors``. ``calls`` builds the requests and reads
the answers; ``sync`` and ``aio`` only send them.
"""

from memoryd.http.aio import AsyncMemory
from memoryd.http.calls import AddResult
from memoryd.http.sync import Memory

__all__ = ["AddResult", "AsyncMemory", "Memory"]
