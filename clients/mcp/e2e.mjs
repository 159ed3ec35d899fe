// The official MCP TypeScript SDK client (npm @modelcontextprotocol/sdk)
// against `airlock mcp`: list the tools, run python, node and bash, open
// a session, write a file, run a command that reads it, cancel a
// sleeping run and check from the host (/proc) that its sandbox is gone
// within 1 s, close the session.
//
// Usage: node e2e.mjs stdio AIRLOCK_BINARY WORK_DIR
//        node e2e.mjs http URL TOKEN_FILE
// AIRLOCK_NPM is where scripts/setup installed the SDK.
import { readFileSync, readdirSync } from 'node:fs';
import { randomBytes } from 'node:crypto';

const sdk = process.env.AIRLOCK_NPM + '/node_modules/@modelcontextprotocol/sdk/dist/esm';
const { Client } = await import(sdk + '/client/index.js');
const [mode, arg1, arg2] = process.argv.slice(2);

let transport;
if (mode === 'stdio') {
  const { StdioClientTransport } = await import(sdk + '/client/stdio.js');
  transport = new StdioClientTransport({ command: arg1, args: ['mcp', '--work-dir', arg2], stderr: 'inherit' });
} else if (mode === 'http') {
  const { StreamableHTTPClientTransport } = await import(sdk + '/client/streamableHttp.js');
  const token = readFileSync(arg2, 'utf8').trim();
  transport = new StreamableHTTPClientTransport(new URL(arg1), { requestInit: { headers: { Authorization: 'Bearer ' + token } } });
} else {
  console.error('usage: node e2e.mjs stdio AIRLOCK_BINARY WORK_DIR | http URL TOKEN_FILE');
  process.exit(2);
}

let failed = 0;
function check(ok, what, detail) {
  console.log(`${ok ? 'ok' : 'FAIL'} ${mode}: ${what}${ok ? '' : ': ' + JSON.stringify(detail)}`);
  if (!ok) failed++;
  return ok;
}

const client = new Client({ name: 'airlock-e2e', version: '1.0.0' });
await client.connect(transport);
const info = client.getServerVersion();
check(info && info.name === 'airlock', 'initialize: server ' + JSON.stringify(info), info);

const { tools } = await client.listTools();
const names = tools.map((t) => t.name).sort();
const want = ['capabilities', 'list_files', 'read_file', 'run_code', 'session_close', 'session_open', 'session_run', 'write_file'];
check(JSON.stringify(names) === JSON.stringify(want), 'tools/list: ' + names.join(' '), names);
check(tools.every((t) => t.inputSchema && t.outputSchema && t.annotations && t.annotations.readOnlyHint === false),
  'every tool has input and output schemas and readOnlyHint false', tools);

// callTool validates structuredContent against the tool's output schema.
async function call(name, args, opts) {
  return client.callTool({ name, arguments: args }, undefined, opts);
}

for (const [language, code, want] of [
  ['python', 'import sys; print("hello from python", sys.argv[1])', 'hello from python 1\n'],
  ['node', 'console.log("hello from node", process.argv.at(-1))', 'hello from node 1\n'],
  ['bash', 'echo "hello from bash $1"', 'hello from bash 1\n'],
]) {
  const r = await call('run_code', { language, code, args: ['1'] });
  const s = r.structuredContent || {};
  check(!r.isError && s.status === 'ok' && s.stdout === want && r.content[0].text.includes(want), `run_code ${language}`, r);
}
const bad = await call('run_code', { language: 'bash', code: 'exit 7' });
check(!bad.isError && bad.structuredContent.status === 'exited' && bad.structuredContent.exit_code === 7, 'a non-zero exit is a normal result', bad);
const refused = await call('run_code', { language: 'bash', code: 'echo ran', timeout: 1e5 });
check(refused.isError && refused.structuredContent.error.class === 'invalid' && /do not retry/.test(refused.content[0].text), 'a refusal is isError, saying not to retry', refused);

const opened = await call('session_open', {});
const id = opened.structuredContent.session;
check(!opened.isError && /^[0-9a-f]{32}$/.test(id), 'session_open', opened);
const wrote = await call('write_file', { session: id, path: 'notes/in.txt', content: 'written by the client\n' });
check(!wrote.isError && wrote.structuredContent.size === 22, 'write_file', wrote);
const ran = await call('session_run', { session: id, command: 'cat notes/in.txt; wc -c < notes/in.txt' });
check(!ran.isError && ran.structuredContent.stdout === 'written by the client\n22\n', 'session_run reads the file', ran);
const res = await client.readResource({ uri: `airlock://session/${id}/notes/in.txt` });
check(res.contents[0].text === 'written by the client\n', 'resources/read airlock://session/{id}/notes/in.txt', res);
const escape = await call('read_file', { session: id, path: '../../etc/passwd' });
check(escape.isError && escape.structuredContent.error.class === 'invalid', 'a path out of the workspace is refused', escape);

// Cancel a sleeping run: its sandbox (found by a marker in its argv)
// must be gone from the host within 1 s of the cancel.
const marker = 'airlock-mcp-e2e-' + randomBytes(8).toString('hex');
function running() {
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, 'latin1').includes(marker)) return true;
    } catch { /* gone meanwhile */ }
  }
  return false;
}
const ac = new AbortController();
let progressed = 0;
const sleeping = call('session_run', { session: id, language: 'python', code: 'import time\ntime.sleep(3600)', args: [marker] },
  { signal: ac.signal, onprogress: () => { progressed++; }, timeout: 120000 });
sleeping.catch(() => {});
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
for (let i = 0; i < 300 && !(running() && progressed > 0); i++) await sleep(50);
check(running(), 'the sleeping run is running (marker in /proc)', null);
check(progressed > 0, `progress notifications while it runs (${progressed})`, progressed);
const t0 = Date.now();
ac.abort('the test cancels it');
let gone = false;
while (Date.now() - t0 <= 1000) {
  if (!running()) { gone = true; break; }
  await sleep(10);
}
check(gone, `cancelled: the sandbox is gone ${Date.now() - t0} ms after the cancel (bound 1000 ms)`, null);
let rejected = false;
try { await sleeping; } catch { rejected = true; }
check(rejected, 'the cancelled call rejects on the client', null);

// The session is usable again once the cancelled run released it.
let after;
for (let i = 0; i < 100; i++) {
  after = await call('session_run', { session: id, command: 'cat notes/in.txt' });
  if (!after.isError) break;
  await sleep(50);
}
check(!after.isError && after.structuredContent.stdout === 'written by the client\n', 'the session runs again after the cancel', after);

const closed = await call('session_close', { session: id });
check(!closed.isError && closed.structuredContent.closed === true, 'session_close', closed);
const gone2 = await call('session_run', { session: id, command: 'true' });
check(gone2.isError, 'a closed session refuses runs', gone2);

await client.close();
console.log(failed ? `FAILED: ${failed} checks (${mode})` : `ok: every check (${mode})`);
process.exit(failed ? 1 : 0);
