// zlink STREAM client: one ES module for browsers and Node >= 18, no build step, no
// runtime dependency. It speaks the packet format of the book's Wire chapter ("STREAM
// packets") over WebSocket (ws://, wss://) and, in Node, over TCP and TLS (tcp://,
// tls://). See README.md.

/** Packet kinds. */
export const Kind = Object.freeze({ Send: 1, Request: 2, Response: 3, Error: 4, Control: 5 });

/** Payload codecs a session speaks. */
export const Codec = Object.freeze({ Raw: 0, Json: 1 });

/** Why a session ended, as the server's `session-closing` notice says it. */
export const CloseReason = Object.freeze({
  ClientClose: 1,
  IdleTimeout: 2,
  HeartbeatTimeout: 3,
  ServerDrain: 4,
  ProtocolError: 5,
  TransportError: 6,
});

/** zlink's error kinds, by the `code` an Error packet carries. */
export const ErrorKind = Object.freeze([
  'NotFound', 'AlreadyExists', 'TypeMismatch', 'NotConfigured', 'Rejected', 'Unavailable',
  'CapacityExceeded', 'DeadlineExceeded', 'ShuttingDown', 'ProtocolError',
  'InvalidOperation', 'DataLost', 'InternalFailure',
]);

const MARKER = 0xf2;
const FLAG_SEQ = 0x01;
const FLAG_METADATA = 0x02;
const FLAG_CORRELATION = 0x08;
const FLAG_FLOW = 0x10;
const PING = '$zlink.heartbeat.ping';
const PONG = '$zlink.heartbeat.pong';
const CLOSING = 'session-closing';
const MAX_METADATA_BYTES = 1024;
const FLOW_ID_LEN = 36;

const utf8 = new TextEncoder();
const fromUtf8 = new TextDecoder('utf-8', { fatal: true });

function reasonName(code) {
  return Object.keys(CloseReason).find((name) => CloseReason[name] === code) ?? `reason ${code}`;
}

/** A request the server answered with an Error packet (or one that timed out). */
export class ZlinkError extends Error {
  constructor(code, message) {
    super(message);
    this.name = 'ZlinkError';
    /** The ErrorKind number. */
    this.code = code;
    /** Its name, e.g. "NotFound". */
    this.kind = ErrorKind[code] ?? `code ${code}`;
  }
}

/** A request that was pending when its session ended. */
export class SessionClosedError extends Error {
  constructor(close) {
    super(`the session closed (${close.reasonName}) before the answer came: ${close.diagnostic}`);
    this.name = 'SessionClosedError';
    this.reason = close.reason;
    this.reasonName = close.reasonName;
    this.diagnostic = close.diagnostic;
  }
}

function toBytes(value) {
  if (value instanceof Uint8Array) return value;
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  if (ArrayBuffer.isView(value)) return new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  throw new TypeError('a Raw payload is a Uint8Array, an ArrayBuffer or a typed array view');
}

function encodeMetadata(metadata) {
  const entries = Object.entries(metadata ?? {});
  if (entries.length === 0) return null;
  if (entries.length > 255) throw new TypeError('at most 255 metadata entries');
  const parts = [Uint8Array.of(entries.length)];
  let total = 0;
  for (const [key, value] of entries) {
    const k = utf8.encode(key);
    const v = utf8.encode(String(value));
    if (k.length < 1 || k.length > 255) throw new TypeError(`metadata key ${JSON.stringify(key)}: 1..=255 bytes`);
    total += k.length + v.length;
    const head = new Uint8Array(3 + k.length);
    head[0] = k.length;
    head.set(k, 1);
    new DataView(head.buffer).setUint16(1 + k.length, v.length);
    parts.push(head, v);
  }
  if (total > MAX_METADATA_BYTES) throw new TypeError(`metadata of ${total} bytes: at most ${MAX_METADATA_BYTES}`);
  return concat(parts);
}

function concat(parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

/**
 * Encodes one packet, prefix included.
 * @param {{kind: number, codec?: number, seq?: number|bigint, name?: string,
 *          metadata?: Record<string,string>, correlation?: Uint8Array,
 *          flow?: {id: string, origin: number}, payload?: Uint8Array}} packet
 */
export function encodePacket(packet) {
  const name = utf8.encode(packet.name ?? '');
  if (name.length > 255) throw new TypeError(`packet name of ${name.length} bytes: at most 255`);
  const metadata = encodeMetadata(packet.metadata);
  const correlation = packet.correlation ? toBytes(packet.correlation) : null;
  if (correlation && correlation.length > 255) throw new TypeError('correlation: at most 255 bytes');
  const flowId = packet.flow ? utf8.encode(packet.flow.id) : null;
  if (flowId && flowId.length !== FLOW_ID_LEN) throw new TypeError('a flow ID is 36 ASCII bytes');
  const payload = packet.payload ?? new Uint8Array(0);
  let flags = 0;
  const parts = [];
  if (packet.seq !== undefined && packet.seq !== null) {
    flags |= FLAG_SEQ;
    const seq = new Uint8Array(8);
    new DataView(seq.buffer).setBigUint64(0, BigInt(packet.seq));
    parts.push(seq);
  }
  parts.push(Uint8Array.of(name.length), name);
  if (metadata) {
    flags |= FLAG_METADATA;
    const len = new Uint8Array(2);
    new DataView(len.buffer).setUint16(0, metadata.length);
    parts.push(len, metadata);
  }
  if (correlation) {
    flags |= FLAG_CORRELATION;
    parts.push(Uint8Array.of(correlation.length), correlation);
  }
  if (flowId) {
    flags |= FLAG_FLOW;
    parts.push(flowId, Uint8Array.of(packet.flow.origin & 0xff));
  }
  const header = concat([Uint8Array.of(MARKER, packet.kind, packet.codec ?? Codec.Raw, flags), ...parts]);
  const prefix = new Uint8Array(6);
  const view = new DataView(prefix.buffer);
  view.setUint16(0, header.length);
  view.setUint32(2, payload.length);
  return concat([prefix, header, payload]);
}

/** Decodes a header and payload (the 6-byte prefix already read); throws on a malformed one. */
export function decodePacket(header, payload) {
  const view = new DataView(header.buffer, header.byteOffset, header.byteLength);
  let at = 0;
  const take = (n) => {
    if (at + n > header.length) throw new Error(`a header of ${header.length} bytes ends before ${at + n}`);
    const part = header.subarray(at, at + n);
    at += n;
    return part;
  };
  const [marker, kind, codec, flags] = take(4);
  if (marker !== MARKER) throw new Error(`a header starts with ${marker}, not the marker 0xf2`);
  const packet = { kind, codec, flags, seq: null, name: '', metadata: {}, correlation: null, flow: null, payload };
  if (flags & FLAG_SEQ) {
    take(8);
    packet.seq = Number(view.getBigUint64(at - 8));
  }
  packet.name = fromUtf8.decode(take(take(1)[0]));
  if (flags & FLAG_METADATA) {
    take(2);
    const block = take(view.getUint16(at - 2));
    const bv = new DataView(block.buffer, block.byteOffset, block.byteLength);
    let b = 1;
    for (let i = 0; i < block[0]; i++) {
      const klen = block[b];
      const key = fromUtf8.decode(block.subarray(b + 1, b + 1 + klen));
      const vlen = bv.getUint16(b + 1 + klen);
      packet.metadata[key] = fromUtf8.decode(block.subarray(b + 3 + klen, b + 3 + klen + vlen));
      b += 3 + klen + vlen;
    }
  }
  if (flags & FLAG_CORRELATION) packet.correlation = take(take(1)[0]);
  if (flags & FLAG_FLOW) packet.flow = { id: fromUtf8.decode(take(FLOW_ID_LEN)), origin: take(1)[0] };
  if (at !== header.length) throw new Error(`${header.length - at} bytes follow the header's last field`);
  return packet;
}

/** Splits a byte stream (TCP, TLS) into packets; refuses one larger than `maxMessage`. */
export class PacketSplitter {
  constructor(maxMessage) {
    this.maxMessage = maxMessage;
    this.buffer = new Uint8Array(0);
  }

  /** Adds received bytes; returns the packets now complete. */
  push(bytes) {
    this.buffer = this.buffer.length ? concat([this.buffer, bytes]) : bytes;
    const packets = [];
    while (this.buffer.length >= 6) {
      const view = new DataView(this.buffer.buffer, this.buffer.byteOffset, 6);
      const headerLen = view.getUint16(0);
      const payloadLen = view.getUint32(2);
      if (headerLen + payloadLen > this.maxMessage) {
        throw new Error(`a packet of ${headerLen + payloadLen} bytes: this client takes at most ${this.maxMessage}`);
      }
      const end = 6 + headerLen + payloadLen;
      if (this.buffer.length < end) break;
      packets.push(decodePacket(this.buffer.slice(6, 6 + headerLen), this.buffer.slice(6 + headerLen, end)));
      this.buffer = this.buffer.subarray(end);
    }
    return packets;
  }
}

function decodePayload(packet) {
  if (packet.codec === Codec.Json) {
    return packet.payload.length ? JSON.parse(fromUtf8.decode(packet.payload)) : null;
  }
  return packet.payload;
}

function encodePayload(value, codec) {
  return codec === Codec.Raw ? toBytes(value) : utf8.encode(JSON.stringify(value === undefined ? null : value));
}

/** Decodes a whole WebSocket message: exactly one packet. */
function packetOfMessage(bytes) {
  if (bytes.length < 6) throw new Error('a WebSocket message shorter than a prefix');
  const view = new DataView(bytes.buffer, bytes.byteOffset, 6);
  const headerLen = view.getUint16(0);
  if (bytes.length !== 6 + headerLen + view.getUint32(2)) throw new Error('one packet per WebSocket message');
  return decodePacket(bytes.subarray(6, 6 + headerLen), bytes.slice(6 + headerLen));
}

async function webSocketClass(options) {
  if (options.WebSocket) return options.WebSocket;
  if (typeof globalThis.WebSocket === 'function') return globalThis.WebSocket;
  try {
    return (await import('ws')).default;
  } catch {
    throw new Error('this runtime has no WebSocket: Node 18-21 needs the `ws` package (npm install ws), or pass options.WebSocket');
  }
}

/** Opens a WebSocket transport: resolves with { send, close } once open. */
async function openWebSocket(url, options, sink) {
  const WS = await webSocketClass(options);
  return new Promise((resolve, reject) => {
    const socket = new WS(url);
    socket.binaryType = 'arraybuffer';
    let open = false;
    socket.onopen = () => {
      open = true;
      resolve({
        send: (bytes) => socket.send(bytes),
        close: () => socket.close(1000),
      });
    };
    socket.onmessage = (event) => {
      if (typeof event.data === 'string') return sink.fail('the server sent a text message');
      try {
        sink.packet(packetOfMessage(new Uint8Array(event.data)));
      } catch (e) {
        sink.fail(e.message);
      }
    };
    socket.onerror = () => {
      if (!open) reject(new Error(`WebSocket ${url} failed to open`));
    };
    socket.onclose = (event) => {
      if (!open) return reject(new Error(`WebSocket ${url} closed before it opened (${event.code})`));
      sink.closed({ code: event.code, text: event.reason });
    };
  });
}

/** Opens a TCP or TLS transport (Node only). */
async function openSocket(url, options, sink) {
  const secure = url.protocol === 'tls:';
  const net = await import(secure ? 'node:tls' : 'node:net');
  const port = Number(url.port);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const splitter = new PacketSplitter(options.maxMessageSize);
  return new Promise((resolve, reject) => {
    const socket = secure
      ? net.connect({ host, port, servername: options.tls?.servername ?? host, ...options.tls })
      : net.connect({ host, port });
    let open = false;
    socket.setNoDelay?.(true);
    socket.once(secure ? 'secureConnect' : 'connect', () => {
      open = true;
      resolve({
        send: (bytes) => socket.write(bytes),
        close: () => socket.end(),
      });
    });
    socket.on('data', (chunk) => {
      try {
        for (const packet of splitter.push(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.length))) {
          sink.packet(packet);
        }
      } catch (e) {
        sink.fail(e.message);
        socket.destroy();
      }
    });
    socket.on('error', (e) => {
      if (!open) reject(e);
    });
    socket.on('close', () => {
      if (open) sink.closed({ code: null, text: '' });
    });
  });
}

const DEFAULTS = Object.freeze({
  requestTimeout: 30_000,
  heartbeatTimeout: 35_000,
  maxMessageSize: 16 * 1024 * 1024,
  reconnect: { initialDelay: 100, maxDelay: 5_000, factor: 2 },
});

/**
 * One STREAM session, reconnected with backoff as a new session when it ends.
 *
 * Events (`on(event, fn)`): `open` ({ reconnected, attempt }), `close` ({ reason,
 * reasonName, diagnostic, code, willReconnect }), `reconnecting` ({ attempt, delay }),
 * `error` (a ZlinkError the server sent without a request sequence). Pushes and one-ways
 * from the server: `onPacket(name, fn(value, packet))`.
 */
export class StreamClient {
  /**
   * @param {string} url ws://, wss://, or in Node tcp://host:port and tls://host:port
   * @param {object} [options] requestTimeout, heartbeatTimeout (ms), maxMessageSize,
   *   reconnect ({ initialDelay, maxDelay, factor } or false), WebSocket (a class),
   *   tls (Node's tls.connect options, e.g. { ca })
   */
  constructor(url, options = {}) {
    this.url = new URL(url);
    if (!['ws:', 'wss:', 'tcp:', 'tls:'].includes(this.url.protocol)) {
      throw new TypeError(`${url}: a STREAM endpoint is ws://, wss://, tcp:// or tls://`);
    }
    this.options = { ...DEFAULTS, ...options };
    if (this.options.reconnect) this.options.reconnect = { ...DEFAULTS.reconnect, ...this.options.reconnect };
    /** "idle", "connecting", "open", "reconnecting" or "closed". */
    this.state = 'idle';
    /** Sessions opened so far (the first is 1). */
    this.sessions = 0;
    this.listeners = new Map();
    this.handlers = new Map();
    this.pending = new Map();
    this.nextSeq = 1;
    this.transport = null;
    this.closing = null;
    this.stopped = false;
  }

  /** Adds a listener for a lifecycle event; returns a function that removes it. */
  on(event, fn) {
    if (!this.listeners.has(event)) this.listeners.set(event, new Set());
    this.listeners.get(event).add(fn);
    return () => this.listeners.get(event)?.delete(fn);
  }

  /** Adds a handler for the server's Send packets named `name` ("*": every one). */
  onPacket(name, fn) {
    if (!this.handlers.has(name)) this.handlers.set(name, new Set());
    this.handlers.get(name).add(fn);
    return () => this.handlers.get(name)?.delete(fn);
  }

  emit(event, detail) {
    for (const fn of this.listeners.get(event) ?? []) {
      try {
        fn(detail);
      } catch (e) {
        console.error(`zlink-stream: a ${event} listener threw`, e);
      }
    }
  }

  /** Connects; resolves once the first session is open. */
  async connect() {
    if (this.state !== 'idle') throw new Error(`connect() once: the client is ${this.state}`);
    this.stopped = false;
    try {
      await this.openSession(false, 0);
    } catch (e) {
      this.state = 'idle';
      throw e;
    }
  }

  async openSession(reconnected, attempt) {
    this.state = reconnected ? 'reconnecting' : 'connecting';
    this.closing = null;
    const sink = {
      packet: (packet) => this.received(packet),
      fail: (detail) => this.transportFailed(detail),
      closed: (frame) => this.ended(frame),
    };
    const open = this.url.protocol.startsWith('ws') ? openWebSocket : openSocket;
    this.transport = await open(this.url, this.options, sink);
    this.sessions += 1;
    this.state = 'open';
    this.heard();
    this.emit('open', { reconnected, attempt, session: this.sessions });
  }

  /**
   * Sends a request; resolves with the reply (parsed JSON, or a Uint8Array for Raw),
   * rejects with a ZlinkError (the server's Error, or DeadlineExceeded after the
   * timeout) or a SessionClosedError.
   * @param {object} [options] codec, timeout (ms), metadata, flow
   */
  request(name, value, options = {}) {
    if (this.state !== 'open') return Promise.reject(new Error(`the client is ${this.state}: no request can go out`));
    const seq = this.nextSeq++;
    const codec = options.codec ?? Codec.Json;
    const bytes = encodePacket({
      kind: Kind.Request, codec, seq, name, metadata: options.metadata, flow: options.flow,
      payload: encodePayload(value, codec),
    });
    return new Promise((resolve, reject) => {
      const timeout = options.timeout ?? this.options.requestTimeout;
      const timer = setTimeout(() => {
        this.pending.delete(seq);
        reject(new ZlinkError(7, `request ${name} had no answer within ${timeout} ms`));
      }, timeout);
      this.pending.set(seq, { resolve, reject, timer });
      this.write(bytes);
    });
  }

  /** Sends a one-way packet. */
  send(name, value, options = {}) {
    if (this.state !== 'open') throw new Error(`the client is ${this.state}: nothing can be sent`);
    const codec = options.codec ?? Codec.Json;
    this.write(encodePacket({
      kind: Kind.Send, codec, name, metadata: options.metadata, flow: options.flow,
      payload: encodePayload(value, codec),
    }));
  }

  /** Ends the session (`session-closing`, ClientClose) and stops reconnecting. */
  close(diagnostic = 'the client closed the session') {
    this.stopped = true;
    clearTimeout(this.reconnectTimer);
    if (this.state !== 'open') {
      this.state = 'closed';
      return;
    }
    const text = utf8.encode(diagnostic).subarray(0, 512);
    const payload = new Uint8Array(4 + text.length);
    payload.set([1, CloseReason.ClientClose, text.length >> 8, text.length & 0xff]);
    payload.set(text, 4);
    this.write(encodePacket({ kind: Kind.Control, codec: Codec.Raw, name: CLOSING, payload }));
    this.closing = { reason: CloseReason.ClientClose, diagnostic };
    this.transport.close();
  }

  write(bytes) {
    try {
      this.transport.send(bytes);
    } catch (e) {
      this.transportFailed(`writing failed: ${e.message}`);
    }
  }

  heard() {
    clearTimeout(this.heartbeatTimer);
    this.heartbeatTimer = setTimeout(() => {
      this.transportFailed(`nothing heard for ${this.options.heartbeatTimeout} ms`, CloseReason.HeartbeatTimeout);
    }, this.options.heartbeatTimeout);
  }

  received(packet) {
    this.heard();
    switch (packet.kind) {
      case Kind.Response:
      case Kind.Error:
        return this.answered(packet);
      case Kind.Control:
        return this.control(packet);
      case Kind.Send:
        return this.pushed(packet);
      default:
        return undefined;
    }
  }

  answered(packet) {
    let value;
    try {
      value = decodePayload(packet);
    } catch (e) {
      value = e;
    }
    if (packet.seq === null) {
      this.emit('error', new ZlinkError(value?.code ?? 12, value?.message ?? 'an undecodable Error'));
      return;
    }
    const waiting = this.pending.get(packet.seq);
    if (!waiting) return; // Timed out already: a late answer is dropped.
    this.pending.delete(packet.seq);
    clearTimeout(waiting.timer);
    if (packet.kind === Kind.Error) waiting.reject(new ZlinkError(value?.code ?? 12, value?.message ?? ''));
    else if (value instanceof Error) waiting.reject(value);
    else waiting.resolve(value);
  }

  control(packet) {
    if (packet.name === PING) {
      this.write(encodePacket({ kind: Kind.Control, codec: Codec.Raw, name: PONG, payload: packet.payload }));
    } else if (packet.name === CLOSING && packet.payload.length >= 4) {
      const len = (packet.payload[2] << 8) | packet.payload[3];
      let diagnostic = '';
      try {
        diagnostic = fromUtf8.decode(packet.payload.subarray(4, 4 + len));
      } catch {
        diagnostic = '(not UTF-8)';
      }
      this.closing = { reason: packet.payload[1], diagnostic };
    }
  }

  pushed(packet) {
    let value;
    try {
      value = decodePayload(packet);
    } catch (e) {
      this.emit('error', new ZlinkError(9, `push ${packet.name}: ${e.message}`));
      return;
    }
    for (const name of [packet.name, '*']) {
      for (const fn of this.handlers.get(name) ?? []) {
        try {
          fn(value, packet);
        } catch (e) {
          console.error(`zlink-stream: a handler of ${packet.name} threw`, e);
        }
      }
    }
  }

  transportFailed(detail, reason = CloseReason.TransportError) {
    if (!this.closing) this.closing = { reason, diagnostic: detail };
    try {
      this.transport?.close();
    } catch {
      // Already closed.
    }
    this.ended({ code: null, text: '' });
  }

  ended(frame) {
    if (this.state !== 'open') return;
    clearTimeout(this.heartbeatTimer);
    let closing = this.closing;
    if (!closing && frame.code >= 4001 && frame.code <= 4006) {
      closing = { reason: frame.code - 4000, diagnostic: frame.text.replace(/^\w+: /, '') };
    }
    closing ??= { reason: CloseReason.TransportError, diagnostic: 'the connection closed without a notice' };
    const close = {
      reason: closing.reason,
      reasonName: reasonName(closing.reason),
      diagnostic: closing.diagnostic,
      code: frame.code,
      willReconnect: !this.stopped && Boolean(this.options.reconnect),
    };
    this.state = close.willReconnect ? 'reconnecting' : 'closed';
    for (const [, waiting] of this.pending) {
      clearTimeout(waiting.timer);
      waiting.reject(new SessionClosedError(close));
    }
    this.pending.clear();
    this.nextSeq = 1;
    this.emit('close', close);
    if (close.willReconnect) this.scheduleReconnect(1);
  }

  scheduleReconnect(attempt) {
    const { initialDelay, maxDelay, factor } = this.options.reconnect;
    const base = Math.min(maxDelay, initialDelay * factor ** (attempt - 1));
    const delay = Math.round(base / 2 + Math.random() * (base / 2));
    this.emit('reconnecting', { attempt, delay });
    this.reconnectTimer = setTimeout(async () => {
      if (this.stopped) return;
      try {
        await this.openSession(true, attempt);
      } catch {
        if (!this.stopped) this.scheduleReconnect(attempt + 1);
      }
    }, delay);
  }
}
