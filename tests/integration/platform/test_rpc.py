"""The RPC layer on real NATS: micro discovery, the Result | RpcError envelope, code mapping."""

from __future__ import annotations

import asyncio
import json

import pytest
from nats.aio.client import Client

from memoryd.codec import decode_reply
from memoryd.errors import NotFound, RemoteError, TooLarge, ValidationFailed
from memoryd.rpc import call
from memoryd.schemas import RPC_OPS
from memoryd.schemas.memory import MemoryGetRequest, MemoryGetResult
from memoryd.schemas.ops import RpcError
from shared.bus.rpc import ERROR_CODE_HEADER, ERROR_HEADER, RpcServer

OP = RPC_OPS["memory.get"]
MEM_ID = "00000000-0000-0000-0000-000000000001"


async def _server(nc: Client, handler) -> RpcServer:  # type: ignore[no-untyped-def]
    server = RpcServer(nc, "testsvc", "0.1.0")
    await server.start()
    await server.add(OP, handler)
    return server


async def test_validation_error_is_400_with_path_and_micro_headers(nc: Client) -> None:
    async def handler(req: MemoryGetRequest) -> MemoryGetResult:
        raise AssertionError("must not be called")

    server = await _server(nc, handler)
    msg = await nc.request("mem.v1.rpc.memory.get", b'{"type":"mem.v1.memory_get_request","owner":5}', timeout=2)
    reply = decode_reply(msg.data, MemoryGetResult)
    assert isinstance(reply, RpcError)
    assert reply.code == 400 and reply.err_code == "validation"
    assert "$.owner" in reply.description
    assert msg.headers is not None
    assert msg.headers[ERROR_CODE_HEADER] == "400"
    assert "$.owner" in msg.headers[ERROR_HEADER]
    await server.drain()


@pytest.mark.parametrize("payload", [b"\xff\xfe\x00", b'{"type":', b"[]", b'{"type":"mem.v1.other"}', b""])
async def test_garbage_gets_400(nc: Client, payload: bytes) -> None:
    server = await _server(nc, lambda req: None)
    with pytest.raises(ValidationFailed):
        await _raw_call(nc, payload)
    await server.drain()


async def _raw_call(nc: Client, payload: bytes) -> None:
    from memoryd.rpc import raise_for

    msg = await nc.request("mem.v1.rpc.memory.get", payload, timeout=2)
    reply = decode_reply(msg.data, MemoryGetResult)
    assert isinstance(reply, RpcError)
    raise_for(reply)


async def test_typed_errors_keep_their_code(nc: Client) -> None:
    async def handler(req: MemoryGetRequest) -> MemoryGetResult:
        raise NotFound(f"memory {req.id} not found for owner {req.owner}")

    server = await _server(nc, handler)
    with pytest.raises(NotFound, match=MEM_ID):
        await call(nc, OP, MemoryGetRequest(owner="alice", id=MEM_ID), timeout=2)
    await server.drain()


async def test_unexpected_error_is_opaque_500(nc: Client) -> None:
    async def handler(req: MemoryGetRequest) -> MemoryGetResult:
        raise RuntimeError("secret connection string postgres://user:pw@db")

    server = await _server(nc, handler)
    msg = await nc.request("mem.v1.rpc.memory.get", _encode(MemoryGetRequest(owner="a", id=MEM_ID)), timeout=10)
    body = json.loads(msg.data)
    assert body["code"] == 500 and body["description"] == "internal error"
    assert len(body["error_id"]) == 12
    assert b"secret" not in msg.data and "secret" not in json.dumps(dict(msg.headers or {}))
    with pytest.raises(RemoteError):
        await call(nc, OP, MemoryGetRequest(owner="a", id=MEM_ID), timeout=10)
    await server.drain()


async def test_oversize_request_is_413(nc: Client) -> None:
    server = await _server(nc, lambda req: None)
    big = b'{"type":"mem.v1.memory_get_request","owner":"' + b"a" * (5 * 1024 * 1024) + b'"}'
    with pytest.raises(TooLarge):
        await _raw_call(nc, big)
    await server.drain()


async def test_requests_are_served_concurrently(nc: Client) -> None:
    """A slow request does not hold up the others (each request runs in its own task)."""
    started = asyncio.Event()

    async def handler(req: MemoryGetRequest) -> MemoryGetResult:
        if req.owner == "slow":
            started.set()
            await asyncio.sleep(1.0)
        raise NotFound(req.owner)

    server = await _server(nc, handler)
    slow = asyncio.create_task(call(nc, OP, MemoryGetRequest(owner="slow", id=MEM_ID), timeout=5))
    await started.wait()
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    with pytest.raises(NotFound):
        await call(nc, OP, MemoryGetRequest(owner="fast", id=MEM_ID), timeout=5)
    assert loop.time() - t0 < 0.5
    with pytest.raises(NotFound):
        await slow
    await server.drain()


async def test_micro_discovery_and_stats(nc: Client) -> None:
    server = await _server(nc, lambda req: None)
    ping = json.loads((await nc.request("$SRV.PING.memoryd-testsvc", b"", timeout=2)).data)
    assert ping["name"] == "memoryd-testsvc" and ping["version"] == "0.1.0"
    info = json.loads((await nc.request("$SRV.INFO.memoryd-testsvc", b"", timeout=2)).data)
    assert [e["subject"] for e in info["endpoints"]] == ["mem.v1.rpc.memory.get", "mem.v1.rpc.memory.get.*"]
    assert info["endpoints"][0]["queue_group"] == "memoryd-testsvc"
    stats = json.loads((await nc.request("$SRV.STATS.memoryd-testsvc", b"", timeout=2)).data)
    assert stats["endpoints"][0]["num_requests"] == 0
    await server.drain()


def _encode(msg: object) -> bytes:
    from memoryd.codec import encode

    return encode(msg)


async def test_owner_bound_subject_rejects_another_owner(nc: Client) -> None:
    from memoryd.errors import Forbidden
    from memoryd.subjects import owner_rpc_subject

    async def handler(req: MemoryGetRequest) -> MemoryGetResult:
        raise NotFound(f"looked up for {req.owner}")

    server = await _server(nc, handler)
    alice_subject = owner_rpc_subject("memory.get", "alice")
    with pytest.raises(Forbidden, match="'alice', not 'bob'"):
        await call(nc, OP, MemoryGetRequest(owner="bob", id=MEM_ID), subject=alice_subject, timeout=2)
    with pytest.raises(NotFound, match="looked up for alice"):
        await call(nc, OP, MemoryGetRequest(owner="alice", id=MEM_ID), subject=alice_subject, timeout=2)
    await server.drain()
