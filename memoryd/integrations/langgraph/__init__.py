"""LangGraph's ``BaseStore`` over memoryd: ``MemorydStore("http://gateway:8420", api_key=...)``.

Mapping: the namespace label at ``owner_label`` (1) is the owner (``("memories", "alice")`` ->
``alice``; shorter namespaces: ``owner``, else the key's own owner); ``agent_label`` and
``session_label`` name the positions of the agent and the session (memoryd's own columns); the
whole namespace, the item's key and its value go in the memory's metadata; ``lg:["memories","alice","k"]`` is the
upsert key; ``content`` (what memoryd embeds) is the value's ``content``/``text``/``memory``
or its JSON, or the ``index={"fields": [...]}`` paths. ``created_at``/``updated_at`` are the
memory's. ``search`` with a ``query`` is memoryd's search within the prefix; without, a listing
by namespace (newest first); ``filter`` and ``list_namespaces`` read matches page by page.
"""

from memoryd.integrations.langgraph.store import MemorydStore

__all__ = ["MemorydStore"]
