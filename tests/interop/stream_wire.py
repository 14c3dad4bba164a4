"""STREAM packets, written from the book's "STREAM packets" section (wire chapter).

A packet is a 6-byte prefix (u16 header length, u32 payload length, big-endian), a header
starting with the marker 0xF2, and the payload.
"""

import json
import select
import struct
import sys

MARKER = 0xF2
SEND, REQUEST, RESPONSE, ERROR, CONTROL = 1, 2, 3, 4, 5
RAW, JSON = 0, 1
FLAG_SEQ, FLAG_METADATA, FLAG_CORRELATION, FLAG_FLOW = 0x01, 0x02, 0x08, 0x10
PING, PONG, CLOSING = "$zlink.heartbeat.ping", "$zlink.heartbeat.pong", "session-closing"


def encode(kind, name, payload=b"", codec=JSON, seq=None):
    flags = FLAG_SEQ if seq is not None else 0
    header = bytes([MARKER, kind, codec, flags])
    if seq is not None:
        header += struct.pack(">Q", seq)
    raw_name = name.encode()
    header += bytes([len(raw_name)]) + raw_name
    return struct.pack(">HI", len(header), len(payload)) + header + payload


def encode_json(kind, name, value, seq=None):
    return encode(kind, name, json.dumps(value).encode(), JSON, seq)


def decode(header, payload):
    """(kind, codec, seq, name, payload) of one packet's header and payload."""
    if len(header) < 5 or header[0] != MARKER:
        raise ValueError("not a STREAM header: %r" % header[:8])
    kind, codec, flags = header[1], header[2], header[3]
    at = 4
    seq = None
    if flags & FLAG_SEQ:
        (seq,) = struct.unpack(">Q", header[at:at + 8])
        at += 8
    name_len = header[at]
    name = header[at + 1:at + 1 + name_len].decode()
    at += 1 + name_len
    if flags & FLAG_METADATA:
        (block_len,) = struct.unpack(">H", header[at:at + 2])
        at += 2 + block_len
    if flags & FLAG_CORRELATION:
        at += 1 + header[at]
    if flags & FLAG_FLOW:
        at += 37
    if at != len(header):
        raise ValueError("header of %d bytes ends at %d" % (len(header), at))
    return kind, codec, seq, name, payload


def split(message):
    """One WebSocket binary message as (header, payload)."""
    header_len, payload_len = struct.unpack(">HI", message[:6])
    header = message[6:6 + header_len]
    payload = message[6 + header_len:]
    if len(payload) != payload_len:
        raise ValueError("payload of %d bytes, %d declared" % (len(payload), payload_len))
    return header, payload


def closing_reason(payload):
    """The reason code of a session-closing payload."""
    version, reason, diag_len = struct.unpack(">BBH", payload[:4])
    if version != 1:
        raise ValueError("closing notice version %d" % version)
    return reason, payload[4:4 + diag_len].decode(errors="replace")


class Conversation:
    """What the scenario checks, whatever carries the packets.

    `send(bytes)` writes one packet; `receive()` returns (header, payload) or None once
    the server closed.
    """

    def __init__(self, send, receive):
        self.send = send
        self.receive = receive
        self.pings = 0

    def next(self):
        while True:
            got = self.receive()
            if got is None:
                return None
            kind, codec, seq, name, payload = decode(*got)
            if kind == CONTROL and name == PING:
                self.pings += 1
                self.send(encode(CONTROL, PONG, payload, RAW))
                continue
            return kind, codec, seq, name, payload

    def run(self, rounds):
        """`rounds` numbered requests and one-ways, interleaved; every request answered
        exactly once and in order, every push arrived in order."""
        for i in range(1, rounds + 1):
            self.send(encode_json(REQUEST, "echo", {"text": "r%d" % i}, seq=i))
            self.send(encode_json(SEND, "note", {"text": "n%d" % i}))
        answers, pushes = [], []
        while len(answers) < rounds or len(pushes) < rounds:
            got = self.next()
            if got is None:
                raise RuntimeError("the server closed after %d answers, %d pushes"
                                   % (len(answers), len(pushes)))
            kind, _codec, seq, name, payload = got
            body = json.loads(payload) if payload else None
            if kind == RESPONSE:
                answers.append((seq, body))
            elif kind == SEND and name == "note":
                pushes.append(body["text"])
            else:
                raise RuntimeError("unexpected packet kind %d %r: %r" % (kind, name, body))
        for i, (seq, body) in enumerate(answers, start=1):
            if seq != i or body["text"] != "r%d" % i or body["count"] != i:
                raise RuntimeError("answer %d out of order or wrong: %r %r" % (i, seq, body))
        for i, text in enumerate(pushes, start=1):
            if text != "heard n%d" % i:
                raise RuntimeError("push %d out of order or wrong: %r" % (i, text))
        # An unknown packet is answered NotFound (code 0), to its sequence.
        self.send(encode_json(REQUEST, "nobody", {}, seq=rounds + 1))
        kind, _codec, seq, _name, payload = self.next()
        error = json.loads(payload)
        if kind != ERROR or seq != rounds + 1 or error["code"] != 0:
            raise RuntimeError("the unknown packet got %d %r %r" % (kind, seq, error))
        # The client closes: the server closes the connection.
        self.send(encode(CONTROL, CLOSING, bytes([1, 1, 0, 0]), RAW))
        while self.next() is not None:
            pass
        return {"answers": len(answers), "pushes": len(pushes), "pings": self.pings}


def stdin_says_done():
    """Whether the driving test wrote a line on stdin (it does once its moves are done)."""
    readable, _, _ = select.select([sys.stdin], [], [], 0)
    return bool(readable) and sys.stdin.readline() != ""


class BoundConversation(Conversation):
    """The bound-Actor scenario: join a player Actor on another node, then numbered
    requests ("ask") and one-ways ("tick") in batches until the test says its moves are
    done, and a last few batches after that.

    Every request must be answered exactly once, to its own sequence, by an Actor that
    took it exactly once and in order (its `asked` equals the number); every one-way must
    come back as exactly one push (`ticked`, its `heard` equal to the number), in order. The
    connection must never close. Returns what it saw, with the owners in the order they
    answered.
    """

    BATCH = 8

    def __init__(self, send, receive, done=stdin_says_done):
        super().__init__(send, receive)
        self.done = done

    def run_bound(self, player, after_done=5):
        self.send(encode_json(REQUEST, "join", {"player": player}, seq=1))
        kind, _codec, seq, _name, payload = self.expect_packet()
        if kind != RESPONSE or seq != 1:
            raise RuntimeError("join answered %d %r: %r" % (kind, seq, payload))
        owners = [json.loads(payload)["owner"]]
        asked = ticked = 0
        left_after_done = None
        while left_after_done is None or left_after_done > 0:
            if left_after_done is None and self.done():
                left_after_done = after_done
            if left_after_done is not None:
                left_after_done -= 1
            first = asked + 1
            for n in range(first, first + self.BATCH):
                # Request sequences: 1 was the join, so ask n is sequence n + 1.
                self.send(encode_json(REQUEST, "ask", {"n": n}, seq=n + 1))
                self.send(encode_json(SEND, "tick", {"n": n}))
            answered, by = set(), {}
            while len(answered) < self.BATCH or ticked < first + self.BATCH - 1:
                kind, _codec, seq, name, payload = self.expect_packet()
                body = json.loads(payload) if payload else None
                if kind == RESPONSE:
                    n = seq - 1
                    if n in answered or not first <= n < first + self.BATCH:
                        raise RuntimeError("answer to sequence %r twice or unasked" % seq)
                    # Answers from two owners around a move may cross on the way; what
                    # must hold is that the Actor took each request once, in order.
                    if body["n"] != n or body["asked"] != n:
                        raise RuntimeError("request %d counted wrong: %r" % (n, body))
                    answered.add(n)
                    by[n] = body["by"]
                elif kind == SEND and name == "ticked":
                    if body["n"] != ticked + 1 or body["heard"] != body["n"]:
                        raise RuntimeError("push after %d out of order or counted wrong: %r"
                                           % (ticked, body))
                    ticked = body["n"]
                elif kind == ERROR:
                    raise RuntimeError("request %r failed: %r" % (seq, body))
                else:
                    raise RuntimeError("unexpected packet %d %r: %r" % (kind, name, body))
            asked = first + self.BATCH - 1
            for n in sorted(by):
                if by[n] != owners[-1]:
                    owners.append(by[n])
        self.send(encode(CONTROL, CLOSING, bytes([1, 1, 0, 0]), RAW))
        while self.next() is not None:
            pass
        return {"asked": asked, "ticked": ticked, "owners": owners, "pings": self.pings}

    def expect_packet(self):
        got = self.next()
        if got is None:
            raise RuntimeError("the server closed the connection")
        kind, codec, seq, name, payload = got
        if kind == CONTROL and name == CLOSING:
            raise RuntimeError("the server closed the session: %r" % (closing_reason(payload),))
        return got
