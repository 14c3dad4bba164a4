"""The packet format, without a server."""

import asyncio
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from zlink_stream import (CONTROL, JSON, RAW, REQUEST, RESPONSE, SEND, Packet,  # noqa: E402
                          StreamClient, ZlinkError, decode, encode, split_message)
from zlink_stream import client as client_module  # noqa: E402


class Packets(unittest.TestCase):
    def test_a_send_is_the_bytes_the_book_shows(self):
        data = encode(Packet(kind=SEND, codec=JSON, name="note", payload=b'{"text":"hi"}'))
        self.assertEqual(data.hex(), "0009" "0000000d" "f2010100046e6f7465" + b'{"text":"hi"}'.hex())

    def test_every_optional_field_round_trips(self):
        packet = Packet(kind=REQUEST, codec=RAW, seq=2 ** 40 + 3, name="blob",
                        metadata={"a": "1", "ключ": "значение"}, correlation=b"\x09\x08",
                        flow=("0b7e4c5a-1d2f-4e3a-9c8b-7a6f5e4d3c2b", 4), payload=b"\x00\xff")
        self.assertEqual(split_message(encode(packet)), packet)

    def test_limits_are_refused_before_sending(self):
        with self.assertRaises(ValueError):
            encode(Packet(kind=SEND, name="n", metadata={"k": "v" * 1100}))
        with self.assertRaises(ValueError):
            encode(Packet(kind=SEND, name="x" * 256))

    def test_a_malformed_header_is_refused(self):
        with self.assertRaises(ValueError):
            decode(bytes([0xF3, 1, 1, 0, 0]), b"")
        with self.assertRaises(ValueError):
            decode(bytes([0xF2, 1, 1, 0, 0, 7]), b"")


class FakeTransport:
    def __init__(self):
        self.sent = []

    async def send(self, data):
        self.sent.append(split_message(data))

    async def close(self):
        pass


class Client(unittest.TestCase):
    def client(self):
        c = StreamClient("tcp://127.0.0.1:1", reconnect=False)
        c._transport = FakeTransport()
        c.state = "open"
        return c

    def test_a_ping_is_answered_with_its_payload(self):
        async def run():
            c = self.client()
            await c._received(Packet(kind=CONTROL, name="$zlink.heartbeat.ping", payload=b"\x01\x02"))
            return c._transport.sent
        sent = asyncio.run(run())
        self.assertEqual([(p.name, p.payload) for p in sent], [("$zlink.heartbeat.pong", b"\x01\x02")])

    def test_a_request_times_out_with_deadline_exceeded_and_its_late_answer_is_dropped(self):
        async def run():
            c = self.client()
            with self.assertRaises(ZlinkError) as caught:
                await c.request("where", None, timeout=0.05)
            late = c._transport.sent[0].seq
            await c._received(Packet(kind=RESPONSE, codec=JSON, seq=late, payload=b'"late"'))
            return caught.exception
        self.assertEqual(asyncio.run(run()).kind, "DeadlineExceeded")

    def test_the_servers_notice_is_the_close_reason_and_pending_requests_fail_with_it(self):
        async def run():
            c = self.client()
            closes = []
            c.on("close", closes.append)
            pending = asyncio.ensure_future(c.request("where", None))
            await asyncio.sleep(0)
            await c._received(Packet(kind=CONTROL, name="session-closing",
                                     payload=bytes([1, 4, 0, 3]) + b"bye"))
            await c._ended()
            with self.assertRaises(client_module.SessionClosed) as caught:
                await pending
            return closes, caught.exception
        closes, error = asyncio.run(run())
        self.assertEqual(closes[0]["reason_name"], "ServerDrain")
        self.assertEqual(closes[0]["diagnostic"], "bye")
        self.assertEqual(error.reason_name, "ServerDrain")


class BookSnippets(unittest.TestCase):
    def test_the_python_the_book_and_readme_show_compiles_and_imports_what_exists(self):
        import re
        import zlink_stream
        here = os.path.dirname(os.path.abspath(__file__))
        sources = [os.path.join(here, "..", "..", "..", "book", "src", "clients.md"),
                   os.path.join(here, "..", "README.md")]
        checked = 0
        for path in sources:
            text = open(path, encoding="utf-8").read()
            for code in re.findall(r"```python\n(.*?)```", text, re.S):
                compile(code, path, "exec")
                for names in re.findall(r"from zlink_stream import ([^\n]+)", code):
                    for name in names.split(","):
                        self.assertTrue(hasattr(zlink_stream, name.strip()), name)
                checked += 1
        self.assertGreaterEqual(checked, 2)


if __name__ == "__main__":
    unittest.main()
