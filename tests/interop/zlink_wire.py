"""The zlink wire, written from the book's "The wire" chapter: enough for a client of a
ClientServer channel and a subscriber of a fanout publisher."""

import cbor2

MAGIC = b"\x5a\x4d\x01"
HELLO, ADMIT, REJECT, UPDATE, PROBE, ACK = 1, 2, 3, 4, 5, 6
CHANNEL_SEND, CHANNEL_REQUEST, REPLY, FANOUT_EVENT = 18, 19, 20, 40
BEACON_TOPIC = b"\x01ZLF1"


def head(command, header, flags=0):
    """Frame 0: the 5-byte prefix and the CBOR header map."""
    return MAGIC + bytes([command, flags]) + cbor2.dumps(header)


def parse_head(frame):
    """Returns (command, flags, header map) of a head frame."""
    if frame[:3] != MAGIC:
        raise ValueError("not a zlink head: %r" % frame[:5])
    return frame[3], frame[4], cbor2.loads(frame[5:])
