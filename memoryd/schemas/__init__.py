"""Wire schemas: every message and RPC request/response, as tagged msgspec Structs."""

from memoryd.schemas.base import Wire, wire_tag
from memoryd.schemas.events import Activity, ChatEvent, ChatMessage, DeadLetter, EmbedJob, ExtractJob, SleepRun, Turn
from memoryd.schemas.memory import DeletionReceipt, MemoryRecord
from memoryd.schemas.ops import RpcError
from memoryd.schemas.rpc import HEALTH_OP, RPC_OPS, RpcOp, ops_of

__all__ = [
    "HEALTH_OP",
    "RPC_OPS",
    "Activity",
    "ChatEvent",
    "ChatMessage",
    "DeadLetter",
    "DeletionReceipt",
    "EmbedJob",
    "ExtractJob",
    "MemoryRecord",
    "RpcError",
    "RpcOp",
    "SleepRun",
    "Turn",
    "Wire",
    "ops_of",
    "wire_tag",
]
