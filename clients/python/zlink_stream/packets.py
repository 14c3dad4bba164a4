"""The STREAM packet format (the book's wire chapter, "STREAM packets").

A packet is a 6-byte prefix (u16 header length, u32 payload length, big-endian), a header
starting with the marker 0xF2, and the payload.
"""

import json
import struct
from dataclasses import dataclass, field
from typing import Dict, Optional, Tuple

MARKER = 0xF2
SEND, REQUEST, RESPONSE, ERROR, CONTROL = 1, 2, 3, 4, 5
RAW, JSON = 0, 1
FLAG_SEQ, FLAG_METADATA, FLAG_CORRELATION, FLAG_FLOW = 0x01, 0x02, 0x08, 0x10
PING, PONG, CLOSING = "$zlink.heartbeat.ping", "$zlink.heartbeat.pong", "session-closing"
MAX_METADATA_BYTES = 1024
FLOW_ID_LEN = 36

CLOSE_REASONS = {
    1: "ClientClose",
    2: "IdleTimeout",
    3: "HeartbeatTimeout",
    4: "ServerDrain",
    5: "ProtocolError",
    6: "TransportError",
}

ERROR_KINDS = [
    "NotFound", "AlreadyExists", "TypeMismatch", "NotConfigured", "Rejected", "Unavailable",
    "CapacityExceeded", "DeadlineExceeded", "ShuttingDown", "ProtocolError",
    "InvalidOperation", "DataLost", "InternalFailure",
]


@dataclass
class Packet:
    """One packet as the client reads or writes it."""

    kind: int
    codec: int = RAW
    seq: Optional[int] = None
    name: str = ""
    metadata: Dict[str, str] = field(default_factory=dict)
    correlation: Optional[bytes] = None
    flow: Optional[Tuple[str, int]] = None
    payload: bytes = b""

    def value(self):
        """The payload: a JSON value, or the bytes for Raw."""
        if self.codec == JSON:
            return json.loads(self.payload) if self.payload else None
        return self.payload


def encode(packet: Packet) -> bytes:
    """The packet's bytes, prefix included; ValueError for a field over its limit."""
    name = packet.name.encode()
    if len(name) > 255:
        raise ValueError("packet name of %d bytes: at most 255" % len(name))
    flags = 0
    header = b""
    if packet.seq is not None:
        flags |= FLAG_SEQ
        header += struct.pack(">Q", packet.seq)
    header += bytes([len(name)]) + name
    if packet.metadata:
        flags |= FLAG_METADATA
        block = bytes([len(packet.metadata)])
        total = 0
        for key, value in packet.metadata.items():
            k, v = key.encode(), str(value).encode()
            if not 1 <= len(k) <= 255:
                raise ValueError("metadata key %r: 1..=255 bytes" % key)
            total += len(k) + len(v)
            block += bytes([len(k)]) + k + struct.pack(">H", len(v)) + v
        if total > MAX_METADATA_BYTES:
            raise ValueError("metadata of %d bytes: at most %d" % (total, MAX_METADATA_BYTES))
        header += struct.pack(">H", len(block)) + block
    if packet.correlation is not None:
        if len(packet.correlation) > 255:
            raise ValueError("correlation: at most 255 bytes")
        flags |= FLAG_CORRELATION
        header += bytes([len(packet.correlation)]) + packet.correlation
    if packet.flow is not None:
        flow_id, origin = packet.flow
        raw_id = flow_id.encode("ascii")
        if len(raw_id) != FLOW_ID_LEN:
            raise ValueError("a flow ID is 36 ASCII bytes")
        flags |= FLAG_FLOW
        header += raw_id + bytes([origin & 0xFF])
    header = bytes([MARKER, packet.kind, packet.codec, flags]) + header
    return struct.pack(">HI", len(header), len(packet.payload)) + header + packet.payload


def decode(header: bytes, payload: bytes) -> Packet:
    """One packet from its header and payload (the prefix already read)."""
    at = 0

    def take(n):
        nonlocal at
        if at + n > len(header):
            raise ValueError("a header of %d bytes ends before %d" % (len(header), at + n))
        part = header[at:at + n]
        at += n
        return part

    marker, kind, codec, flags = take(4)
    if marker != MARKER:
        raise ValueError("a header starts with %#04x, not the marker 0xf2" % marker)
    packet = Packet(kind=kind, codec=codec, payload=payload)
    if flags & FLAG_SEQ:
        (packet.seq,) = struct.unpack(">Q", take(8))
    packet.name = take(take(1)[0]).decode()
    if flags & FLAG_METADATA:
        (block_len,) = struct.unpack(">H", take(2))
        block = take(block_len)
        b = 1
        for _ in range(block[0] if block else 0):
            klen = block[b]
            key = block[b + 1:b + 1 + klen].decode()
            (vlen,) = struct.unpack(">H", block[b + 1 + klen:b + 3 + klen])
            packet.metadata[key] = block[b + 3 + klen:b + 3 + klen + vlen].decode()
            b += 3 + klen + vlen
    if flags & FLAG_CORRELATION:
        packet.correlation = take(take(1)[0])
    if flags & FLAG_FLOW:
        packet.flow = (take(FLOW_ID_LEN).decode("ascii"), take(1)[0])
    if at != len(header):
        raise ValueError("%d bytes follow the header's last field" % (len(header) - at))
    return packet


def split_message(message: bytes) -> Packet:
    """One WebSocket binary message: exactly one packet."""
    if len(message) < 6:
        raise ValueError("a WebSocket message shorter than a prefix")
    header_len, payload_len = struct.unpack(">HI", message[:6])
    if len(message) != 6 + header_len + payload_len:
        raise ValueError("one packet per WebSocket message")
    return decode(message[6:6 + header_len], message[6 + header_len:])


def closing_notice(reason: int, diagnostic: str = "") -> bytes:
    """A session-closing payload."""
    text = diagnostic.encode()[:512]
    return struct.pack(">BBH", 1, reason, len(text)) + text


def read_closing(payload: bytes) -> Tuple[int, str]:
    """(reason, diagnostic) of a session-closing payload."""
    version, reason, diag_len = struct.unpack(">BBH", payload[:4])
    if version != 1:
        raise ValueError("closing notice version %d" % version)
    return reason, payload[4:4 + diag_len].decode(errors="replace")
