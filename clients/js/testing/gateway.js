// Starts `gateway-chat --serve --port 0` (the binary named by ZLINK_GATEWAY_CHAT) and
// reads its addresses from what it prints; drains go to its stdin.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

export async function startGateway(extraArgs = []) {
  const binary = process.env.ZLINK_GATEWAY_CHAT;
  if (!binary) {
    throw new Error('set ZLINK_GATEWAY_CHAT to the gateway-chat binary (cargo build -p zlink-examples --bin gateway-chat; target/debug/gateway-chat)');
  }
  const child = spawn(binary, ['--serve', '--port', '0', ...extraArgs], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout });
  const said = [];
  const waiters = [];
  lines.on('line', (line) => {
    said.push(line);
    for (const w of [...waiters]) w();
  });
  const waitFor = (pattern, ms = 30_000) => new Promise((resolve, reject) => {
    const check = () => {
      const found = said.find((line) => pattern.test(line));
      if (found) {
        waiters.splice(waiters.indexOf(check), 1);
        clearTimeout(timer);
        resolve(found.match(pattern));
      }
    };
    const timer = setTimeout(() => {
      waiters.splice(waiters.indexOf(check), 1);
      reject(new Error(`gateway-chat never printed ${pattern}; it said:\n${said.join('\n')}`));
    }, ms);
    waiters.push(check);
    check();
  });
  child.on('exit', (code) => said.push(`(exited ${code})`));
  const [, tcp, ws] = await waitFor(/^gateway: TCP clients at (\S+), WebSocket clients at (\S+)$/);
  const [, page] = await waitFor(/^chat page: (http:\/\/\S+) /);
  return {
    tcp: tcp.includes('://') ? tcp : `tcp://${tcp}`,
    ws,
    page,
    said,
    waitFor,
    drain(rid) {
      child.stdin.write(`drain ${rid}\n`);
      return waitFor(new RegExp(`^moved \\d+ players off ${rid}`));
    },
    stop() {
      return new Promise((resolve) => {
        if (child.exitCode !== null) return resolve(child.exitCode);
        child.once('exit', resolve);
        child.kill('SIGINT');
      });
    },
  };
}

/** Resolves with the next `event` the client emits, or rejects after `ms`. */
export function next(client, event, ms = 10_000) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${event} within ${ms} ms`)), ms);
    const off = client.on(event, (detail) => {
      clearTimeout(timer);
      off();
      resolve(detail);
    });
  });
}
