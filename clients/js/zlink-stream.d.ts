// Type declarations for zlink-stream.js.

/** Packet kinds. */
export declare const Kind: Readonly<{ Send: 1; Request: 2; Response: 3; Error: 4; Control: 5 }>;
/** Payload codecs a session speaks. */
export declare const Codec: Readonly<{ Raw: 0; Json: 1 }>;
/** Why a session ended (the `session-closing` notice's reason). */
export declare const CloseReason: Readonly<{
  ClientClose: 1; IdleTimeout: 2; HeartbeatTimeout: 3; ServerDrain: 4; ProtocolError: 5; TransportError: 6;
}>;
/** zlink's error kinds, indexed by an Error packet's `code`. */
export declare const ErrorKind: readonly string[];

export type CloseReasonName =
  'ClientClose' | 'IdleTimeout' | 'HeartbeatTimeout' | 'ServerDrain' | 'ProtocolError' | 'TransportError';

/** A request the server answered with an Error packet, or one that timed out (code 7). */
export declare class ZlinkError extends Error {
  readonly code: number;
  readonly kind: string;
}

/** A request that was pending when its session ended. */
export declare class SessionClosedError extends Error {
  readonly reason: number;
  readonly reasonName: CloseReasonName;
  readonly diagnostic: string;
}

export interface Flow { id: string; origin: number }

/** One packet as the client reads it. */
export interface Packet {
  kind: number;
  codec: number;
  flags: number;
  seq: number | null;
  name: string;
  metadata: Record<string, string>;
  correlation: Uint8Array | null;
  flow: Flow | null;
  payload: Uint8Array;
}

export interface PacketToEncode {
  kind: number;
  codec?: number;
  seq?: number | bigint | null;
  name?: string;
  metadata?: Record<string, string>;
  correlation?: Uint8Array;
  flow?: Flow;
  payload?: Uint8Array;
}

/** Encodes one packet, prefix included. Throws a TypeError on a field over its limit. */
export declare function encodePacket(packet: PacketToEncode): Uint8Array;
/** Decodes a header and its payload (the 6-byte prefix already taken off). */
export declare function decodePacket(header: Uint8Array, payload: Uint8Array): Packet;

/** Splits a byte stream into packets. */
export declare class PacketSplitter {
  constructor(maxMessage: number);
  push(bytes: Uint8Array): Packet[];
}

export interface ReconnectOptions { initialDelay?: number; maxDelay?: number; factor?: number }

export interface ClientOptions {
  /** Per-request timeout in ms (default 30000). */
  requestTimeout?: number;
  /** Nothing heard for this long (ms) ends the session (default 35000; the server pings every 10 s). */
  heartbeatTimeout?: number;
  /** The largest packet the client reads (default 16 MiB). */
  maxMessageSize?: number;
  /** Reconnect with backoff (default { initialDelay: 100, maxDelay: 5000, factor: 2 }), or false. */
  reconnect?: ReconnectOptions | false;
  /** The WebSocket class to use (default: the global one, else the `ws` package). */
  WebSocket?: unknown;
  /** Node's tls.connect options for tls:// (e.g. { ca }). */
  tls?: Record<string, unknown>;
}

export interface SendOptions {
  /** Codec.Json (default) or Codec.Raw (the value is then bytes). */
  codec?: number;
  metadata?: Record<string, string>;
  flow?: Flow;
}

export interface RequestOptions extends SendOptions {
  /** This request's timeout in ms. */
  timeout?: number;
}

export interface OpenEvent { reconnected: boolean; attempt: number; session: number }
export interface CloseEvent {
  reason: number;
  reasonName: CloseReasonName;
  diagnostic: string;
  /** The WebSocket close code (4000 + reason), or null over TCP. */
  code: number | null;
  willReconnect: boolean;
}
export interface ReconnectingEvent { attempt: number; delay: number }

/** One STREAM session, reconnected with backoff as a new session when it ends. */
export declare class StreamClient {
  constructor(url: string, options?: ClientOptions);
  readonly url: URL;
  readonly state: 'idle' | 'connecting' | 'open' | 'reconnecting' | 'closed';
  /** Sessions opened so far (the first is 1). */
  readonly sessions: number;
  /** Connects; resolves once the first session is open. */
  connect(): Promise<void>;
  /** Sends a request; resolves with the reply (JSON value, or Uint8Array for Raw). */
  request<T = unknown>(name: string, value: unknown, options?: RequestOptions): Promise<T>;
  /** Sends a one-way packet. */
  send(name: string, value: unknown, options?: SendOptions): void;
  /** Ends the session with ClientClose and stops reconnecting. */
  close(diagnostic?: string): void;
  on(event: 'open', fn: (event: OpenEvent) => void): () => void;
  on(event: 'close', fn: (event: CloseEvent) => void): () => void;
  on(event: 'reconnecting', fn: (event: ReconnectingEvent) => void): () => void;
  on(event: 'error', fn: (error: ZlinkError) => void): () => void;
  /** Handles the server's Send packets named `name` ("*" for every one). */
  onPacket<T = unknown>(name: string, fn: (value: T, packet: Packet) => void): () => void;
}
