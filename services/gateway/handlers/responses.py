"""``POST /v1/responses``: the OpenAI Responses API through the memory proxy.

The chat proxy's steps (``proxy.py``), read the Responses way (``logic/responses.py``): the query
is the last user input, memory goes into ``instructions`` ahead of the caller's own, the answer's
text is its ``output_text`` (streamed: the ``response.output_text.delta`` events). Every other
field (``previous_response_id``, tools, ``store``, ...) passes to the upstream unchanged.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from ..context import Gateway
from ..logic.responses import OutputTextDeltas, checked_instructions, inject, input_messages, output_text
from .common import Endpoint, authenticate, json_object, openai_guarded, read_body
from .proxy import Api, forward, open_exchange, recall
from .proxy_limits import admit_proxy

RESPONSES = Api("responses", output_text, OutputTextDeltas, ask_usage=False)  # its streams end with usage


def responses_endpoint(gw: Gateway) -> Endpoint:
    @openai_guarded
    async def endpoint(request: Request) -> Response:
        key = await authenticate(gw, request)
        body = json_object(await read_body(gw, request))
        messages = input_messages(body.get("input"))
        checked_instructions(body.get("instructions"))
        ex = open_exchange(key, request, messages, body.get("model"))
        grant = await admit_proxy(gw, key, body)  # the key's limits, before memory and the upstream
        memory = await recall(gw, ex)
        forwarded = body if memory is None else inject(body, memory.context, memory.placement)
        return await forward(gw, key, request, ex, RESPONSES, forwarded, grant)

    return endpoint
