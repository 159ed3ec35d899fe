// airlock's code-interpreter driver for JavaScript: one persistent vm
// context, cells read from stdin (one JSON object a line: {"code",
// "env"}), every message to the server on fd 1 as "\x1e" + JSON + "\n".
// A cell's completion value is its text result (a promise is awaited).
// Written for airlock; confined like any other process of the sandbox.
'use strict';
const vm = require('node:vm');
const util = require('node:util');
const readline = require('node:readline');
const fs = require('node:fs');
const path = require('node:path');
const { createRequire } = require('node:module');

function emit(msg) { fs.writeSync(1, '\x1e' + JSON.stringify(msg) + '\n'); }
const fmt = (args) => util.formatWithOptions({ colors: false }, ...args) + '\n';
const cellConsole = {
  log: (...a) => emit({ type: 'stdout', text: fmt(a) }),
  info: (...a) => emit({ type: 'stdout', text: fmt(a) }),
  debug: (...a) => emit({ type: 'stdout', text: fmt(a) }),
  error: (...a) => emit({ type: 'stderr', text: fmt(a) }),
  warn: (...a) => emit({ type: 'stderr', text: fmt(a) }),
  dir: (o) => emit({ type: 'stdout', text: util.inspect(o) + '\n' }),
};
const sandbox = {
  console: cellConsole,
  require: createRequire(path.join(process.cwd(), 'cell.js')),
  process, Buffer, setTimeout, clearTimeout, setInterval, clearInterval, setImmediate, clearImmediate,
  URL, URLSearchParams, TextEncoder, TextDecoder, fetch: globalThis.fetch, structuredClone,
};
sandbox.globalThis = sandbox;
const context = vm.createContext(sandbox);
let count = 0;
const queue = [];
let busy = false;

async function run(req) {
  count++;
  emit({ type: 'number_of_executions', execution_count: count });
  const saved = {};
  for (const [k, v] of Object.entries(req.env || {})) { saved[k] = process.env[k]; process.env[k] = v; }
  try {
    let value = vm.runInContext(req.code, context, { filename: '<cell>', breakOnSigint: true });
    if (value && typeof value.then === 'function') value = await value;
    if (value !== undefined) {
      emit({ type: 'result', text: typeof value === 'string' ? `'${value}'` : util.inspect(value), is_main_result: true });
    }
  } catch (e) {
    // A cell's errors are of the context's realm: not instanceof this Error.
    const isErr = e !== null && typeof e === 'object' && typeof e.message === 'string';
    emit(isErr
      ? { type: 'error', name: String(e.name || 'Error'), value: e.message, traceback: String(e.stack || e.message) }
      : { type: 'error', name: 'Error', value: String(e), traceback: String(e) });
  } finally {
    for (const [k, v] of Object.entries(saved)) { if (v === undefined) delete process.env[k]; else process.env[k] = v; }
    emit({ type: 'end_of_execution' });
  }
}

async function pump() {
  if (busy) return;
  busy = true;
  while (queue.length) await run(queue.shift());
  busy = false;
}

process.on('SIGINT', () => {}); // an interrupt outside a cell is nothing
const rl = readline.createInterface({ input: process.stdin });
rl.on('line', (line) => { if (line.trim()) { queue.push(JSON.parse(line)); pump(); } });
