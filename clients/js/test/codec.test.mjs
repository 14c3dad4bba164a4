// The packet format, without a server: what the client writes and reads, byte for byte.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  Codec, Kind, PacketSplitter, StreamClient, decodePacket, encodePacket,
} from '../zlink-stream.js';

const split = (bytes) => {
  const headerLen = (bytes[0] << 8) | bytes[1];
  return decodePacket(bytes.subarray(6, 6 + headerLen), bytes.subarray(6 + headerLen));
};

test('a Send packet is the bytes the book shows', () => {
  const bytes = encodePacket({
    kind: Kind.Send, codec: Codec.Json, name: 'note',
    payload: new TextEncoder().encode('{"text":"hi"}'),
  });
  const hex = Buffer.from(bytes).toString('hex');
  assert.equal(hex, '0009' + '0000000d' + 'f2010100046e6f7465' + Buffer.from('{"text":"hi"}').toString('hex'));
});

test('every optional field round-trips', () => {
  const packet = {
    kind: Kind.Request, codec: Codec.Raw, seq: 2 ** 40 + 3, name: 'blob',
    metadata: { a: '1', 'ключ': 'значение' },
    correlation: Uint8Array.of(9, 8, 7),
    flow: { id: '0b7e4c5a-1d2f-4e3a-9c8b-7a6f5e4d3c2b', origin: 4 },
    payload: Uint8Array.of(0, 255, 1),
  };
  const back = split(encodePacket(packet));
  assert.equal(back.kind, Kind.Request);
  assert.equal(back.codec, Codec.Raw);
  assert.equal(back.seq, 2 ** 40 + 3);
  assert.equal(back.name, 'blob');
  assert.deepEqual(back.metadata, packet.metadata);
  assert.deepEqual([...back.correlation], [9, 8, 7]);
  assert.deepEqual(back.flow, packet.flow);
  assert.deepEqual([...back.payload], [0, 255, 1]);
});

test('the metadata block length counts its count byte', () => {
  const bytes = encodePacket({ kind: Kind.Send, codec: Codec.Json, name: 'n', metadata: { k: 'v' }, payload: new Uint8Array(0) });
  // marker kind codec flags | name len 1 'n' | block length u16 | count ...
  const header = bytes.subarray(6);
  assert.equal(header[3], 0x02);
  const blockLen = (header[6] << 8) | header[7];
  assert.equal(blockLen, 1 + 1 + 1 + 2 + 1, 'count, key_len, key, value_len, value');
});

test('metadata over 1024 bytes and names over 255 bytes are refused before sending', () => {
  assert.throws(() => encodePacket({ kind: Kind.Send, name: 'n', metadata: { k: 'v'.repeat(1100) } }), /at most 1024/);
  assert.throws(() => encodePacket({ kind: Kind.Send, name: 'x'.repeat(256) }), /at most 255/);
  assert.throws(() => encodePacket({ kind: Kind.Send, name: 'n', metadata: { '': 'v' } }), /1..=255/);
});

test('a stream is split into packets however its bytes arrive', () => {
  const one = encodePacket({ kind: Kind.Send, codec: Codec.Json, name: 'a', payload: new TextEncoder().encode('1') });
  const two = encodePacket({ kind: Kind.Response, codec: Codec.Json, seq: 7, payload: new TextEncoder().encode('[2]') });
  const stream = new Uint8Array([...one, ...two]);
  for (let cut = 0; cut <= stream.length; cut++) {
    const splitter = new PacketSplitter(1 << 20);
    const packets = [...splitter.push(stream.slice(0, cut)), ...splitter.push(stream.slice(cut))];
    assert.deepEqual(packets.map((p) => [p.kind, p.seq, p.name]), [[Kind.Send, null, 'a'], [Kind.Response, 7, '']]);
  }
});

test('a prefix declaring more than the client takes is refused before its body', () => {
  const splitter = new PacketSplitter(1024);
  assert.throws(() => splitter.push(Uint8Array.of(0, 5, 0xff, 0xff, 0xff, 0xff)), /at most 1024/);
});

test('a malformed header is refused', () => {
  assert.throws(() => split(Uint8Array.of(0, 4, 0, 0, 0, 0, 0xf3, 1, 1, 0)), /marker/);
  assert.throws(() => split(Uint8Array.of(0, 6, 0, 0, 0, 0, 0xf2, 1, 1, 0, 0, 7)), /follow the header/);
  assert.throws(() => split(Uint8Array.of(0, 5, 0, 0, 0, 0, 0xf2, 1, 1, 0, 3)), /ends before/);
});

/** A client with a fake transport that records what it writes. */
function fakeClient(options = {}) {
  const client = new StreamClient('ws://127.0.0.1:1/', { reconnect: false, ...options });
  const written = [];
  client.transport = { send: (bytes) => written.push(split(bytes)), close: () => client.ended({ code: null, text: '' }) };
  client.state = 'open';
  return { client, written };
}

test('a ping is answered with a pong carrying its payload', () => {
  const { client, written } = fakeClient();
  client.received({ kind: Kind.Control, codec: 0, seq: null, name: '$zlink.heartbeat.ping', payload: Uint8Array.of(1, 2, 3) });
  assert.equal(written.length, 1);
  assert.equal(written[0].name, '$zlink.heartbeat.pong');
  assert.deepEqual([...written[0].payload], [1, 2, 3]);
  client.close();
});

test('Raw requests carry bytes and Raw answers come back as a Uint8Array', async () => {
  const { client, written } = fakeClient();
  const answer = client.request('blob', Uint8Array.of(5, 6), { codec: Codec.Raw });
  assert.equal(written[0].codec, Codec.Raw);
  assert.deepEqual([...written[0].payload], [5, 6]);
  client.received({ kind: Kind.Response, codec: Codec.Raw, seq: written[0].seq, name: '', payload: Uint8Array.of(7) });
  const value = await answer;
  assert.ok(value instanceof Uint8Array);
  assert.deepEqual([...value], [7]);
  client.close();
});

test('the server\'s closing notice is what the close event reports, and pending requests fail with it', async () => {
  const { client } = fakeClient();
  const pending = client.request('where', null);
  const closed = new Promise((resolve) => client.on('close', resolve));
  const diag = new TextEncoder().encode('the node is stopping');
  client.received({ kind: Kind.Control, codec: 0, seq: null, name: 'session-closing', payload: Uint8Array.of(1, 4, 0, diag.length, ...diag) });
  client.ended({ code: 4004, text: 'ServerDrain: the node is stopping' });
  const close = await closed;
  assert.equal(close.reasonName, 'ServerDrain');
  assert.equal(close.diagnostic, 'the node is stopping');
  assert.equal(close.willReconnect, false);
  await assert.rejects(pending, (e) => e.name === 'SessionClosedError' && e.reasonName === 'ServerDrain');
});

test('a WebSocket close code alone still names the reason', async () => {
  const { client } = fakeClient();
  const closed = new Promise((resolve) => client.on('close', resolve));
  client.ended({ code: 4005, text: 'ProtocolError: a request sequence is never 0' });
  const close = await closed;
  assert.equal(close.reasonName, 'ProtocolError');
  assert.equal(close.diagnostic, 'a request sequence is never 0');
});

test('a request with no answer rejects with DeadlineExceeded, and its late answer is dropped', async () => {
  const { client, written } = fakeClient();
  const started = Date.now();
  await assert.rejects(client.request('where', null, { timeout: 50 }), (e) => e.kind === 'DeadlineExceeded' && e.code === 7);
  assert.ok(Date.now() - started >= 45);
  const next = client.request('where', null);
  client.received({ kind: Kind.Response, codec: Codec.Json, seq: written[0].seq, name: '', payload: new TextEncoder().encode('"late"') });
  client.received({ kind: Kind.Response, codec: Codec.Json, seq: written[1].seq, name: '', payload: new TextEncoder().encode('"mine"') });
  assert.equal(await next, 'mine');
  client.close();
});

test('an Error without a sequence is an error event, and the session goes on', async () => {
  const { client } = fakeClient();
  const errors = [];
  client.on('error', (e) => errors.push(e));
  client.received({ kind: Kind.Error, codec: Codec.Json, seq: null, name: '', payload: new TextEncoder().encode('{"code":0,"message":"no handler"}') });
  assert.equal(errors.length, 1);
  assert.equal(errors[0].kind, 'NotFound');
  assert.equal(client.state, 'open');
  client.close();
});
