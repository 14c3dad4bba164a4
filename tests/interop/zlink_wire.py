"""The zlink wire, written from the book's "The wire" chapter: enough for a client of a
ClientServer channel and a subscriber of a fanout publisher."""

import struct

import cbor2

VERSION = 3
MAGIC = b"\x5a\x4d" + bytes([VERSION])
HELLO, ADMIT, REJECT, UPDATE, PROBE, ACK = 1, 2, 3, 4, 5, 6
CHANNEL_SEND, CHANNEL_REQUEST, REPLY, FANOUT_EVENT = 18, 19, 20, 40
FLAG_METADATA = 0x01
STATUS_OK = 0xFF
BEACON_TOPIC = b"\x01ZLF1"


def control(command, header):
    """Frame 0 of a control record: the 5-byte prefix and the CBOR header map."""
    return MAGIC + bytes([command, 0]) + cbor2.dumps(header)


def call_head(command, packet, operation, channel="", correlation=0, deadline_ms=0, flags=0):
    """Frame 0 of an application command: the prefix and the fixed binary call head.
    `operation` is the sender's non-zero identity of this piece of work."""
    channel, packet = channel.encode(), packet.encode()
    return (
        MAGIC
        + bytes([command, flags])
        + struct.pack(">QQIBBB", correlation, operation, deadline_ms, 0, len(channel), len(packet))
        + channel
        + packet
    )


def command_of(frame):
    """The command number of a head frame."""
    if frame[:3] != MAGIC:
        raise ValueError("not a zlink head: %r" % frame[:5])
    return frame[3]


def parse_control(frame):
    """The CBOR header map of a control record."""
    return cbor2.loads(frame[5:])


def parse_call(frame):
    """(flags, correlation, operation, deadline_ms, channel, packet) of an application head."""
    correlation, operation, deadline_ms, _hops, channel_len, packet_len = struct.unpack(
        ">QQIBBB", frame[5:28]
    )
    names = frame[28:]
    if len(names) != channel_len + packet_len:
        raise ValueError("call head length does not match its names")
    return (
        frame[4],
        correlation,
        operation,
        deadline_ms,
        names[:channel_len].decode(),
        names[channel_len:].decode(),
    )


def parse_reply(frame):
    """(correlation, operation, error kind or None, detail) of a reply head."""
    correlation, operation, status, detail_len = struct.unpack(">QQBH", frame[5:24])
    detail = frame[24:24 + detail_len].decode()
    return correlation, operation, None if status == STATUS_OK else status, detail
