"""Wire schemas: every message and RPC request/response, as tagged msgspec Structs."""

from .base import Wire, wire_tag
from .events import Activity, ChatEvent, ChatMessage, DeadLetter, EmbedJob, ExtractJob, SleepRun, Turn
from .memory import DeletionReceipt, MemoryRecord
from .ops import RpcError
from .rpc import HEALTH_OP, RPC_OPS, RpcOp, ops_of

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
