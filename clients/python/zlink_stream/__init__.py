"""zlink-stream: an asyncio STREAM client for zlink gateways (TCP, TLS, WebSocket)."""

from .client import SessionClosed, StreamClient, ZlinkError
from .packets import (CLOSE_REASONS, CONTROL, ERROR, ERROR_KINDS, JSON, RAW, REQUEST,
                      RESPONSE, SEND, Packet, closing_notice, decode, encode, read_closing,
                      split_message)

__all__ = [
    "StreamClient", "ZlinkError", "SessionClosed", "Packet", "encode", "decode",
    "split_message", "closing_notice", "read_closing", "CLOSE_REASONS", "ERROR_KINDS",
    "SEND", "REQUEST", "RESPONSE", "ERROR", "CONTROL", "RAW", "JSON",
]
