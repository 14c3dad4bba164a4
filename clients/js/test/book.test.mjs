// The JavaScript the book and this README show parses as a module, and names only what
// the client exports.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as client from '../zlink-stream.js';

const here = dirname(fileURLToPath(import.meta.url));
const sources = [join(here, '../../../book/src/clients.md'), join(here, '../README.md')];

/** The JavaScript of every ```js block and every <script type="module"> in a Markdown file. */
function snippets(path) {
  const text = readFileSync(path, 'utf8');
  const found = [];
  for (const [, lang, body] of text.matchAll(/```(js|html)\n([\s\S]*?)```/g)) {
    if (lang === 'js') found.push(body);
    else for (const [, script] of body.matchAll(/<script type="module">([\s\S]*?)<\/script>/g)) found.push(script);
  }
  return found;
}

test('every snippet of the book and the README parses and imports only what the module exports', () => {
  const dir = mkdtempSync(join(tmpdir(), 'zlink-stream-book-'));
  let checked = 0;
  for (const source of sources) {
    for (const [i, code] of snippets(source).entries()) {
      const file = join(dir, `snippet-${checked}-${i}.mjs`);
      writeFileSync(file, code);
      execFileSync(process.execPath, ['--check', file]);
      for (const [, names] of code.matchAll(/import \{([^}]*)\} from '\.\/zlink-stream\.js'/g)) {
        for (const name of names.split(',').map((n) => n.trim()).filter(Boolean)) {
          assert.ok(name in client, `${source}: imports ${name}, which the module does not export`);
        }
      }
      checked += 1;
    }
  }
  assert.ok(checked >= 4, `${checked} snippets`);
});
