// The official MCP TypeScript SDK client (npm @modelcontextprotocol/sdk)
// against `airlock mcp`: list the tools (their annotations, the
// javascript alias), run python, node (also as javascript) and bash,
// open a session, write a file, run a command that reads it, time out a
// sleeping session_run (status timeout), start an http.server in the
// background (process_start), find its port (process_list), fetch the
// file through it (http_request) and read its log (process_output: only
// new output), see it on the host until session_close kills it, cancel a
// sleeping run and check from the host (/proc) that its sandbox is gone
// within 1 s, close the session. Bad input: an unknown tool, schema
// violations, paths out of the workspace (../, absolute, planted
// symlinks) and a file past the server's --max-request are each an error
// the client sees; the host checks that nothing was written outside the
// workspace (a host directory they aim at stays as it was, no file they
// name appears anywhere in the server's work dir) and that nothing ran
// (no marker file in the session; over HTTP, the server's
// airlock_runs_total is unchanged).
//
// Usage: node e2e.mjs stdio AIRLOCK_BINARY WORK_DIR
//        node e2e.mjs http URL TOKEN_FILE WORK_DIR
// AIRLOCK_NPM is where scripts/setup installed the SDK. The stdio server
// is started with --max-request 1MiB; run the HTTP one so too.
import { readFileSync, readdirSync, mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';

const sdk = process.env.AIRLOCK_NPM + '/node_modules/@modelcontextprotocol/sdk/dist/esm';
const { Client } = await import(sdk + '/client/index.js');
const [mode, arg1, arg2, arg3] = process.argv.slice(2);

let transport, workDir, metrics;
if (mode === 'stdio') {
  const { StdioClientTransport } = await import(sdk + '/client/stdio.js');
  transport = new StdioClientTransport({ command: arg1, args: ['mcp', '--work-dir', arg2, '--max-request', '1MiB'], stderr: 'inherit' });
  workDir = arg2;
} else if (mode === 'http' && arg3) {
  const { StreamableHTTPClientTransport } = await import(sdk + '/client/streamableHttp.js');
  const headers = { Authorization: 'Bearer ' + readFileSync(arg2, 'utf8').trim() };
  transport = new StreamableHTTPClientTransport(new URL(arg1), { requestInit: { headers } });
  workDir = arg3;
  // The sandbox runs the server counted so far (GET /metrics).
  metrics = async () => {
    const text = await (await fetch(new URL('metrics', arg1), { headers })).text();
    let n = 0;
    for (const m of text.matchAll(/^airlock_runs_total\{[^}]*\} (\S+)$/gm)) n += Number(m[1]);
    return n;
  };
} else {
  console.error('usage: node e2e.mjs stdio AIRLOCK_BINARY WORK_DIR | http URL TOKEN_FILE WORK_DIR');
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
const want = ['capabilities', 'http_request', 'list_files', 'process_input', 'process_list', 'process_output', 'process_signal', 'process_start',
  'read_file', 'run_code', 'session_close', 'session_open', 'session_run', 'write_file'];
check(JSON.stringify(names) === JSON.stringify(want), 'tools/list: ' + names.join(' '), names);
const readOnly = ['capabilities', 'list_files', 'process_list', 'process_output', 'read_file'];
check(tools.every((t) => t.inputSchema && t.outputSchema && t.annotations && t.annotations.readOnlyHint === readOnly.includes(t.name)),
  'every tool has input and output schemas, and readOnlyHint true only on ' + readOnly.join(', '), tools);
const runCode = tools.find((t) => t.name === 'run_code');
check(runCode && runCode.inputSchema.properties.language.enum.includes('javascript') && /one-shot/.test(runCode.description),
  'run_code takes javascript and says it is one-shot', runCode);
check(tools.every((t) => !/killed when the call returns|nothing runs between calls/.test(t.description)) &&
  /background/.test(tools.find((t) => t.name === 'session_open').description),
  'no tool says a background process dies with its call; session_open says they last', tools);

// callTool validates structuredContent against the tool's output schema.
async function call(name, args, opts) {
  return client.callTool({ name, arguments: args }, undefined, opts);
}

for (const [language, code, want] of [
  ['python', 'import sys; print("hello from python", sys.argv[1])', 'hello from python 1\n'],
  ['node', 'console.log("hello from node", process.argv.at(-1))', 'hello from node 1\n'],
  ['javascript', 'console.log("hello from javascript", process.argv.at(-1))', 'hello from javascript 1\n'],
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
const slow = await call('session_run', { session: id, command: 'sleep 30', timeout: 1 });
check(!slow.isError && slow.structuredContent.status === 'timeout', 'session_run of sleep 30 with timeout 1: status timeout', slow);
// A server started in the background by one call, found and fetched by
// later ones; the host sees it until session_close (below) kills it.
const port = 20000 + Math.floor(Math.random() * 20000);
const started = await call('process_start', { session: id, command: `exec python3 -m http.server ${port} --bind 127.0.0.1` });
const pid = (started.structuredContent || {}).pid;
check(!started.isError && pid > 0 && started.structuredContent.state === 'running', 'process_start of an http.server returns its pid', started);
let listening = false;
for (let i = 0; i < 200 && !listening; i++) {
  const l = await call('process_list', { session: id });
  listening = (l.structuredContent.listening || []).includes(port);
  if (!listening) await new Promise((r) => setTimeout(r, 50));
}
check(listening, `process_list shows port ${port} listening`, null);
const fetched = await call('http_request', { session: id, port, path: '/notes/in.txt' });
check(!fetched.isError && fetched.structuredContent.status === 200 && fetched.structuredContent.body === 'written by the client\n',
  'http_request in a later call fetches a file from the background server', fetched);
const logged = await call('process_output', { session: id, pid, wait: 5 });
check(!logged.isError && logged.structuredContent.running === true && /GET \/notes\/in.txt/.test(logged.structuredContent.stderr),
  'process_output has the server\'s log line of that request', logged);
const again = await call('process_output', { session: id, pid });
check(!again.isError && again.structuredContent.stderr === '', 'a second process_output has no new output', again);
function serverOnHost() {
  for (const p of readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    try {
      const args = readFileSync(`/proc/${p}/cmdline`, 'latin1').split('\0');
      if (args.includes('http.server') && args.includes(String(port))) return true;
    } catch { /* gone meanwhile */ }
  }
  return false;
}
check(serverOnHost(), 'the host sees the background server', null);
const res = await client.readResource({ uri: `airlock://session/${id}/notes/in.txt` });
check(res.contents[0].text === 'written by the client\n', 'resources/read airlock://session/{id}/notes/in.txt', res);
const escape = await call('read_file', { session: id, path: '../../etc/passwd' });
check(escape.isError && escape.structuredContent.error.class === 'invalid', 'a path out of the workspace is refused', escape);

// Bad input. Each is an error the client sees, and nothing runs or is
// written outside the workspace. The paths aim at a host directory with
// a secret in it: followed naively, they would write there or read it.
const tag = randomBytes(8).toString('hex'); // in the names of files that must not appear
const secret = randomBytes(8).toString('hex'); // in a host file that must not be read
const host = mkdtempSync('/tmp/airlock-mcp-e2e-host-');
writeFileSync(join(host, 'secret'), 'host secret ' + secret + '\n');
const planted = await call('session_run', { session: id, command: `ln -s ${host} hostdir && ln -s ${host}/secret hostsecret && ln -s ../../../../../../.. up` });
check(!planted.isError && planted.structuredContent.status === 'ok', 'session_run plants symlinks to a host directory and file', planted);
const { structuredContent: caps } = await call('capabilities', {});
const maxRequest = caps.server.max_request;
const runsBefore = metrics ? await metrics() : 0;
const up = '../'.repeat(16) + host.slice(1);
let unknown;
try { unknown = await call('rm_rf', { path: '/' }); } catch (e) { unknown = e; }
check(unknown instanceof Error && unknown.code === -32602 && /unknown tool "rm_rf".*nothing ran.*run_code.*do not retry/.test(unknown.message),
  'an unknown tool: JSON-RPC error -32602 naming the tools: ' + unknown.message, String(unknown));
function refusal(r, field, what) {
  const e = (r.structuredContent || {}).error || {};
  const text = r.content.map((c) => c.text || '').join('');
  return check(r.isError && e.class === 'invalid' && e.retryable === false && e.field === field && /do not retry as is/.test(text) && !JSON.stringify(r).includes(secret),
    `${what}: isError, invalid, field ${field}: ${e.message}`, r);
}
refusal(await call('session_run', { session: id, command: `touch ran-${tag}`, background: true }), 'background', 'a schema violation (an unknown argument)');
refusal(await call('run_code', { language: 'cobol', code: `touch ran-${tag}` }), 'language', 'a schema violation (a language not in the enum)');
refusal(await call('run_code', { language: 'bash', code: 'true', files: [{ name: `../ran-${tag}`, content: 'x' }] }), 'files', 'run_code with a file named ../');
refusal(await call('write_file', { session: id, path: `${up}/dotdot-${tag}`, content: 'x' }), 'path', 'write_file ../ out to the host directory');
refusal(await call('read_file', { session: id, path: `${up}/secret` }), 'path', 'read_file ../ out to the host secret');
refusal(await call('write_file', { session: id, path: `${host}/abs-${tag}`, content: 'x' }), 'path', 'write_file to an absolute path');
refusal(await call('read_file', { session: id, path: `${host}/secret` }), 'path', 'read_file of an absolute path');
refusal(await call('write_file', { session: id, path: `hostdir/sym-${tag}`, content: 'x' }), 'path', 'write_file through a planted symlink to a host directory');
refusal(await call('write_file', { session: id, path: `up/tmp/up-${tag}`, content: 'x' }), 'path', 'write_file through a planted symlink up and out');
refusal(await call('read_file', { session: id, path: 'hostsecret' }), 'path', 'read_file of a planted symlink to a host file');
refusal(await call('write_file', { session: id, path: `big-${tag}`, content: 'x'.repeat(maxRequest + 1) }), 'content', `write_file of ${maxRequest + 1} bytes (--max-request ${maxRequest})`);
let res2;
try { res2 = await client.readResource({ uri: `airlock://session/${id}/hostsecret` }); } catch (e) { res2 = e; }
check(res2 instanceof Error && res2.code === -32602 && !String(res2.message).includes(secret), 'resources/read of the planted symlink fails: ' + res2.message, String(res2));
// From the host: the host directory is as it was, no file the calls
// named is anywhere in the server's work dir, and nothing ran.
check(JSON.stringify(readdirSync(host)) === '["secret"]', 'the host directory is untouched: ' + readdirSync(host).join(' '), null);
const strays = [];
(function walk(d) {
  for (const e of readdirSync(d, { withFileTypes: true })) {
    if (e.name.includes(tag)) strays.push(join(d, e.name));
    if (e.isDirectory()) { try { walk(join(d, e.name)); } catch { /* gone meanwhile */ } }
  }
})(workDir);
check(strays.length === 0, 'no file the bad calls named is in the server\'s work dir', strays);
const listed = await call('list_files', { session: id });
check(!listed.isError && !listed.structuredContent.files.some((f) => f.path.includes(tag)), 'nor in the session\'s workspace (list_files)', listed);
if (metrics) {
  const runsAfter = await metrics();
  check(runsAfter === runsBefore, `no sandbox ran for the bad calls (airlock_runs_total ${runsBefore} -> ${runsAfter})`, null);
}
rmSync(host, { recursive: true, force: true });

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

check(serverOnHost(), 'the background server outlived the cancelled run', null);
const closed = await call('session_close', { session: id });
check(!closed.isError && closed.structuredContent.closed === true, 'session_close', closed);
check(!serverOnHost(), 'session_close killed the background server: the host sees no such process', null);
const gone2 = await call('session_run', { session: id, command: 'true' });
check(gone2.isError, 'a closed session refuses runs', gone2);

await client.close();
console.log(failed ? `FAILED: ${failed} checks (${mode})` : `ok: every check (${mode})`);
process.exit(failed ? 1 : 0);
