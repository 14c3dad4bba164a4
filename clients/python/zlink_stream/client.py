"""An asyncio STREAM client: the same shape as the JavaScript one (clients/js)."""

import asyncio
import json
import random
import ssl
import struct
from typing import Any, Callable, Dict, Optional
from urllib.parse import urlsplit

from . import packets as p


class ZlinkError(Exception):
    """A request the server answered with an Error packet, or one that timed out (code 7)."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code
        self.kind = p.ERROR_KINDS[code] if 0 <= code < len(p.ERROR_KINDS) else "code %d" % code


class SessionClosed(Exception):
    """A request that was pending when its session ended."""

    def __init__(self, close: Dict[str, Any]):
        super().__init__("the session closed (%s): %s" % (close["reason_name"], close["diagnostic"]))
        self.reason = close["reason"]
        self.reason_name = close["reason_name"]
        self.diagnostic = close["diagnostic"]


class _Tcp:
    def __init__(self, reader, writer, max_message):
        self.reader, self.writer, self.max_message = reader, writer, max_message

    async def receive(self) -> Optional[p.Packet]:
        try:
            prefix = await self.reader.readexactly(6)
            header_len, payload_len = struct.unpack(">HI", prefix)
            if header_len + payload_len > self.max_message:
                raise ValueError("a packet of %d bytes: this client takes at most %d"
                                 % (header_len + payload_len, self.max_message))
            header = await self.reader.readexactly(header_len)
            payload = await self.reader.readexactly(payload_len)
        except (asyncio.IncompleteReadError, ConnectionError):
            return None
        return p.decode(header, payload)

    async def send(self, data: bytes):
        self.writer.write(data)
        await self.writer.drain()

    async def close(self):
        self.writer.close()


class _WebSocket:
    def __init__(self, ws):
        self.ws = ws

    async def receive(self) -> Optional[p.Packet]:
        from websockets.exceptions import ConnectionClosed
        try:
            message = await self.ws.recv()
        except ConnectionClosed:
            return None
        if isinstance(message, str):
            raise ValueError("the server sent a text message")
        return p.split_message(message)

    def close_frame(self):
        frame = getattr(self.ws, "close_code", None)
        return frame, getattr(self.ws, "close_reason", "") or ""

    async def send(self, data: bytes):
        await self.ws.send(data)

    async def close(self):
        await self.ws.close()


class StreamClient:
    """One STREAM session, reconnected with backoff as a new session when it ends.

    Events (`on(event, fn)`): "open" ({reconnected, session}), "close" ({reason,
    reason_name, diagnostic, will_reconnect}), "error" (a ZlinkError the server sent
    without a sequence). Pushes and one-ways: `on_packet(name, fn(value, packet))`.
    """

    def __init__(self, url: str, request_timeout: float = 30.0, heartbeat_timeout: float = 35.0,
                 reconnect: Optional[Dict[str, float]] = None, ssl_context: Optional[ssl.SSLContext] = None,
                 max_message_size: int = 16 * 1024 * 1024):
        parts = urlsplit(url)
        if parts.scheme not in ("tcp", "tls", "ws", "wss"):
            raise ValueError("%s: a STREAM endpoint is tcp://, tls://, ws:// or wss://" % url)
        self.url = url
        self.parts = parts
        self.request_timeout = request_timeout
        self.heartbeat_timeout = heartbeat_timeout
        self.reconnect = None if reconnect is False else {
            "initial_delay": 0.1, "max_delay": 5.0, "factor": 2.0, **(reconnect or {})}
        self.ssl_context = ssl_context
        self.max_message_size = max_message_size
        self.state = "idle"
        self.sessions = 0
        self._listeners: Dict[str, list] = {}
        self._handlers: Dict[str, list] = {}
        self._pending: Dict[int, asyncio.Future] = {}
        self._next_seq = 1
        self._transport = None
        self._closing = None
        self._stopped = False
        self._reader_task = None

    def on(self, event: str, fn: Callable) -> Callable[[], None]:
        self._listeners.setdefault(event, []).append(fn)
        return lambda: self._listeners[event].remove(fn)

    def on_packet(self, name: str, fn: Callable) -> Callable[[], None]:
        """Handles the server's Send packets named `name` ("*": every one)."""
        self._handlers.setdefault(name, []).append(fn)
        return lambda: self._handlers[name].remove(fn)

    def _emit(self, event, detail):
        for fn in list(self._listeners.get(event, [])):
            fn(detail)

    async def connect(self):
        """Opens the first session."""
        if self.state != "idle":
            raise RuntimeError("connect() once: the client is %s" % self.state)
        try:
            await self._open(reconnected=False)
        except Exception:
            self.state = "idle"
            raise

    async def _open(self, reconnected: bool):
        self.state = "reconnecting" if reconnected else "connecting"
        self._closing = None
        scheme, host, port = self.parts.scheme, self.parts.hostname, self.parts.port
        if scheme in ("tcp", "tls"):
            context = None
            if scheme == "tls":
                context = self.ssl_context or ssl.create_default_context()
            reader, writer = await asyncio.open_connection(host, port, ssl=context)
            self._transport = _Tcp(reader, writer, self.max_message_size)
        else:
            import websockets
            ws = await websockets.connect(self.url, ssl=self.ssl_context if scheme == "wss" else None,
                                          max_size=self.max_message_size, open_timeout=10)
            self._transport = _WebSocket(ws)
        self.sessions += 1
        self._next_seq = 1
        self.state = "open"
        self._reader_task = asyncio.ensure_future(self._read())
        self._emit("open", {"reconnected": reconnected, "session": self.sessions})

    async def request(self, name: str, value: Any = None, codec: int = p.JSON,
                      timeout: Optional[float] = None, metadata: Optional[Dict[str, str]] = None):
        """Sends a request; the reply (a JSON value, or bytes for Raw). Raises ZlinkError or
        SessionClosed."""
        if self.state != "open":
            raise RuntimeError("the client is %s: no request can go out" % self.state)
        seq = self._next_seq
        self._next_seq += 1
        future = asyncio.get_running_loop().create_future()
        self._pending[seq] = future
        await self._write(p.Packet(kind=p.REQUEST, codec=codec, seq=seq, name=name,
                                   metadata=metadata or {}, payload=_payload(value, codec)))
        limit = self.request_timeout if timeout is None else timeout
        try:
            return await asyncio.wait_for(asyncio.shield(future), limit)
        except asyncio.TimeoutError:
            self._pending.pop(seq, None)
            raise ZlinkError(7, "request %s had no answer within %s s" % (name, limit)) from None

    async def send(self, name: str, value: Any = None, codec: int = p.JSON,
                   metadata: Optional[Dict[str, str]] = None):
        """Sends a one-way packet."""
        if self.state != "open":
            raise RuntimeError("the client is %s: nothing can be sent" % self.state)
        await self._write(p.Packet(kind=p.SEND, codec=codec, name=name, metadata=metadata or {},
                                   payload=_payload(value, codec)))

    async def close(self, diagnostic: str = "the client closed the session"):
        """Ends the session with ClientClose and stops reconnecting; returns once it ended."""
        self._stopped = True
        if self.state != "open":
            self.state = "closed"
            return
        self._closing = (1, diagnostic)
        await self._write(p.Packet(kind=p.CONTROL, codec=p.RAW, name=p.CLOSING,
                                   payload=p.closing_notice(1, diagnostic)))
        # The server answers with its own notice and closes; the reader sees the end.
        try:
            await asyncio.wait_for(asyncio.shield(self._reader_task), 5)
        except asyncio.TimeoutError:
            await self._transport.close()

    async def _write(self, packet: p.Packet):
        await self._transport.send(p.encode(packet))

    async def _read(self):
        while True:
            try:
                packet = await asyncio.wait_for(self._transport.receive(), self.heartbeat_timeout)
            except asyncio.TimeoutError:
                self._closing = self._closing or (3, "nothing heard for %s s" % self.heartbeat_timeout)
                packet = None
            except ValueError as e:
                self._closing = self._closing or (6, str(e))
                packet = None
            if packet is None:
                break
            await self._received(packet)
        await self._ended()

    async def _received(self, packet: p.Packet):
        if packet.kind in (p.RESPONSE, p.ERROR):
            value = packet.value()
            if packet.seq is None:
                self._emit("error", ZlinkError(value.get("code", 12), value.get("message", "")))
                return
            future = self._pending.pop(packet.seq, None)
            if future is None or future.done():
                return
            if packet.kind == p.ERROR:
                future.set_exception(ZlinkError(value.get("code", 12), value.get("message", "")))
            else:
                future.set_result(value)
        elif packet.kind == p.CONTROL:
            if packet.name == p.PING:
                await self._write(p.Packet(kind=p.CONTROL, codec=p.RAW, name=p.PONG, payload=packet.payload))
            elif packet.name == p.CLOSING:
                reason, diagnostic = p.read_closing(packet.payload)
                self._closing = (reason, diagnostic)
        elif packet.kind == p.SEND:
            value = packet.value()
            for name in (packet.name, "*"):
                for fn in list(self._handlers.get(name, [])):
                    fn(value, packet)

    async def _ended(self):
        if self.state != "open":
            return
        try:
            await self._transport.close()
        except Exception:  # noqa: BLE001 - already closed
            pass
        if self._closing is None and isinstance(self._transport, _WebSocket):
            code, text = self._transport.close_frame()
            if code is not None and 4001 <= code <= 4006:
                self._closing = (code - 4000, text.split(": ", 1)[-1])
        reason, diagnostic = self._closing or (6, "the connection closed without a notice")
        close = {
            "reason": reason,
            "reason_name": p.CLOSE_REASONS.get(reason, "reason %d" % reason),
            "diagnostic": diagnostic,
            "will_reconnect": not self._stopped and self.reconnect is not None,
        }
        self.state = "reconnecting" if close["will_reconnect"] else "closed"
        for future in self._pending.values():
            if not future.done():
                future.set_exception(SessionClosed(close))
        self._pending.clear()
        self._emit("close", close)
        if close["will_reconnect"]:
            asyncio.ensure_future(self._reconnect())

    async def _reconnect(self):
        attempt = 1
        while not self._stopped:
            r = self.reconnect
            base = min(r["max_delay"], r["initial_delay"] * r["factor"] ** (attempt - 1))
            await asyncio.sleep(base / 2 + random.random() * base / 2)
            if self._stopped:
                return
            try:
                await self._open(reconnected=True)
                return
            except OSError:
                attempt += 1


def _payload(value: Any, codec: int) -> bytes:
    if codec == p.RAW:
        return bytes(value)
    return json.dumps(value).encode()
