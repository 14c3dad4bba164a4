// The client against a real gateway node (the gateway-chat example), over TCP and over
// WebSocket (Node's global WebSocket from 22; the `ws` package before).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { StreamClient, ZlinkError } from '../zlink-stream.js';
import { next, startGateway } from '../testing/gateway.js';

let gateway;
before(async () => {
  gateway = await startGateway();
});
after(async () => {
  await gateway?.stop();
});

/** Logs `name` in and joins `room`; collects the room's lines. */
async function chatter(url, name, room) {
  const client = new StreamClient(url, { requestTimeout: 10_000 });
  const lines = [];
  client.onPacket('line', (line) => lines.push(line));
  const opened = next(client, 'open');
  await client.connect();
  await opened;
  const welcome = await client.request('login', { name });
  assert.equal(welcome.player, name);
  const joined = await client.request('join', { room });
  return { client, lines, welcome, joined };
}

async function until(condition, what, ms = 10_000) {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

for (const transport of ['tcp', 'ws']) {
  test(`${transport}: requests answer, one-ways go out and pushes arrive per packet name`, async () => {
    const url = gateway[transport];
    const { client, lines, welcome } = await chatter(url, `ann-${transport}`, `hall-${transport}`);
    assert.match(welcome.node, /^players-[12]$/);
    client.send('say', { text: 'hello' });
    client.send('say', { text: 'again' });
    await until(() => lines.length === 2, 'both lines heard');
    assert.deepEqual(lines.map((l) => l.text), ['hello', 'again']);
    assert.equal(lines[1].seq, lines[0].seq + 1);
    const here = await client.request('where', null);
    assert.equal(here.node, welcome.node);
    client.close();
  });

  test(`${transport}: an Error answer rejects with its kind and the session goes on`, async () => {
    const { client } = await chatter(gateway[transport], `bob-${transport}`, 'errors');
    await assert.rejects(client.request('no-such-packet', {}), (e) => e instanceof ZlinkError && e.kind === 'NotFound');
    await assert.rejects(client.request('join', { wrong: 1 }), (e) => e instanceof ZlinkError && e.kind === 'ProtocolError');
    assert.ok((await client.request('where', null)).node);
    client.close();
  });

  test(`${transport}: a session closed by the server reports its reason and comes back as a new session`, async () => {
    const name = `cat-${transport}`;
    const first = await chatter(gateway[transport], name, 'again');
    const closed = next(first.client, 'close');
    const reopened = next(first.client, 'open', 15_000);
    const replaced = new Promise((resolve) => first.client.onPacket('replaced', resolve));
    // The same name logging in elsewhere takes the player over: this session ends.
    const second = await chatter(gateway[transport], name, 'again');
    assert.equal((await replaced).player, name);
    const close = await closed;
    assert.equal(close.reasonName, 'ServerDrain');
    assert.equal(close.willReconnect, true);
    const open = await reopened;
    assert.equal(open.reconnected, true);
    assert.equal(first.client.sessions, 2, 'a new session');
    // A new session: the application logs in again (taking the player back).
    const welcome = await first.client.request('login', { name });
    assert.equal(welcome.player, name);
    second.client.close();
    first.client.close();
  });

  test(`${transport}: close() ends the session with ClientClose and no reconnect`, async () => {
    const { client } = await chatter(gateway[transport], `dan-${transport}`, 'bye');
    const closed = next(client, 'close');
    client.close('done here');
    const close = await closed;
    assert.equal(close.reasonName, 'ClientClose');
    assert.equal(close.willReconnect, false);
    assert.equal(client.state, 'closed');
  });
}

test('chatting goes on through a drain: every line heard once, in one order, on the same session', async () => {
  const room = 'drained';
  const a = await chatter(gateway.tcp, 'eve', room);
  const b = await chatter(gateway.ws, 'fay', room);
  let closes = 0;
  for (const c of [a, b]) c.client.on('close', () => { closes += 1; });
  const nodes = new Set([a.welcome.node, b.welcome.node]);
  const said = [];
  let n = 0;
  const talk = setInterval(() => {
    n += 1;
    const speaker = n % 2 ? a : b;
    speaker.client.send('say', { text: `line ${n}` });
    said.push(`line ${n}`);
  }, 10);
  await new Promise((r) => setTimeout(r, 200));
  for (const node of nodes) await gateway.drain(node);
  await new Promise((r) => setTimeout(r, 200));
  clearInterval(talk);
  // The room orders lines from two speakers as they reach it (a speaker whose player is
  // being moved arrives later): what is fixed is one order for every listener, numbered
  // without a gap, and each speaker's own lines in the order said.
  for (const c of [a, b]) {
    await until(() => c.lines.length === said.length, `${said.length} lines heard`);
    const seqs = c.lines.map((l) => l.seq);
    assert.deepEqual(seqs, seqs.map((_, i) => seqs[0] + i), 'numbered without a gap or a repeat');
    assert.deepEqual([...c.lines.map((l) => l.text)].sort(), [...said].sort(), 'every line once');
    for (const speaker of ['eve', 'fay']) {
      const own = c.lines.filter((l) => l.from === speaker).map((l) => Number(l.text.split(' ')[1]));
      assert.deepEqual(own, [...own].sort((x, y) => x - y), `${speaker}'s lines in the order said`);
    }
  }
  assert.deepEqual(a.lines.map((l) => l.text), b.lines.map((l) => l.text), 'one order for both');
  assert.equal(closes, 0, 'no session closed');
  assert.equal(a.client.sessions, 1);
  const moved = a.lines.at(-1).via;
  assert.notEqual(moved, a.welcome.node, 'the player runs elsewhere now');
  a.client.close();
  b.client.close();
});
