// The official E2B SDKs (npm e2b and @e2b/code-interpreter, pinned by
// scripts/setup) against airlock serve's E2B routes, unchanged: only
// E2B_API_URL, E2B_SANDBOX_URL and E2B_API_KEY point them at airlock.
// Every check asserts an outcome that could fail; each prints "ok NAME"
// or "FAIL NAME: why", and the exit status is the number of failures.
//
// Environment: AIRLOCK_NPM (where the packages are), E2B_API_URL and
// E2B_SANDBOX_URL (serve's TCP listener), E2B_API_KEY (a serve token of
// the form e2b_ + hex), E2B_API_KEY_2 (another tenant's token).
import http from 'node:http';
import assert from 'node:assert/strict';

const npm = process.env.AIRLOCK_NPM + '/node_modules/';
const { Sandbox, CommandExitError, TimeoutError, NotFoundError, FileType } = await import(npm + 'e2b/dist/index.mjs');
const CI = await import(npm + '@e2b/code-interpreter/dist/index.mjs');

const run = `run${process.pid}`;
let failed = 0;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function check(name, fn) {
  try {
    await fn();
    console.log(`ok ${name}`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${name}: ${e && e.stack ? e.stack : e}`);
  }
}
async function rejects(p, pred, what) {
  try {
    await p;
  } catch (e) {
    assert.ok(pred(e), `${what}: rejected with ${e && e.constructor && e.constructor.name}: ${e && e.message}`);
    return e;
  }
  assert.fail(`${what}: did not reject`);
}

// getHost(port) through serve: the name {port}-{id}.{domain} resolved to
// serve's loopback address, the sandbox's traffic token sent.
function getVia(host, token) {
  const port = new URL(process.env.E2B_SANDBOX_URL).port;
  const lookup = (_h, opts, cb) => (opts && opts.all ? cb(null, [{ address: '127.0.0.1', family: 4 }]) : cb(null, '127.0.0.1', 4));
  return new Promise((resolve, reject) => {
    const req = http.get(`http://${host}:${port}/`, { lookup, headers: token ? { 'E2B-Traffic-Access-Token': token } : {} }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode, body }));
    });
    req.on('error', reject);
  });
}

await check('an unknown template is refused, naming it', async () => {
  await rejects(Sandbox.create('no-such-template'), (e) => /no-such-template/.test(e.message) && /base/.test(e.message), 'create');
});

let sbx;
await check('create with metadata and env', async () => {
  sbx = await Sandbox.create('base', { metadata: { suite: run, role: 'main' }, envs: { GREETING: 'from-create' }, timeoutMs: 120_000 });
  assert.match(sbx.sandboxId, /^[0-9a-f]{16,}$/);
  const info = await sbx.getInfo();
  assert.equal(info.metadata.suite, run);
  assert.equal(info.templateId, 'base');
  assert.equal(info.state, 'running');
  const r = await sbx.commands.run('echo "$GREETING"');
  assert.equal(r.stdout, 'from-create\n');
});

await check('commands.run in the foreground', async () => {
  const r = await sbx.commands.run('echo out; echo err >&2');
  assert.equal(r.exitCode, 0);
  assert.equal(r.stdout, 'out\n');
  assert.equal(r.stderr, 'err\n');
});

await check('commands.run: cwd (default /workspace) and env', async () => {
  assert.equal((await sbx.commands.run('pwd')).stdout, '/workspace\n');
  assert.equal((await sbx.commands.run('pwd', { cwd: '/tmp' })).stdout, '/tmp\n');
  assert.equal((await sbx.commands.run('echo "$A-$GREETING"', { envs: { A: 'b' } })).stdout, 'b-from-create\n');
});

await check('commands.run: user "user" is the sandbox user; "root" is refused', async () => {
  const plain = (await sbx.commands.run('id -u')).stdout;
  assert.equal((await sbx.commands.run('id -u', { user: 'user' })).stdout, plain);
  await rejects(sbx.commands.run('id -u', { user: 'root' }), (e) => /root/.test(e.message), 'user root');
});

await check('commands.run: a nonzero exit is CommandExitError with its code and output', async () => {
  const e = await rejects(sbx.commands.run('echo partial; exit 3'), (e) => e instanceof CommandExitError, 'exit 3');
  assert.equal(e.exitCode, 3);
  assert.equal(e.stdout, 'partial\n');
});

await check('commands.run: a timeout kills the command', async () => {
  await rejects(sbx.commands.run('sleep 30; echo late', { timeoutMs: 1000 }), (e) => e instanceof TimeoutError || /deadline|timeout/i.test(e.message), 'timeoutMs 1000');
  await sleep(300);
  const left = (await sbx.commands.list()).filter((p) => p.args.join(' ').includes('sleep 30'));
  assert.deepEqual(left, []);
});

await check('commands.run with stdin', async () => {
  const h = await sbx.commands.run('cat; echo done', { background: true, stdin: true });
  await sbx.commands.sendStdin(h.pid, 'hello stdin\n');
  await sbx.commands.closeStdin(h.pid);
  const r = await h.wait();
  assert.equal(r.stdout, 'hello stdin\ndone\n');
});

await check('pty: an interactive bash answers, on a terminal of the sandbox\'s own', async () => {
  let seen = '';
  const h = await sbx.pty.create({ cols: 100, rows: 30, onData: (d) => { seen += new TextDecoder().decode(d); } });
  await sbx.pty.sendInput(h.pid, new TextEncoder().encode('echo $((6*7)); stty size; tty; exit 3\n'));
  const r = await h.wait().catch((e) => e);
  assert.match(seen, /42\r\n/, seen); // (after the echoed line, whose 42 is $((6*7)))
  assert.match(seen, /30 100/, seen);
  assert.match(seen, /\/dev\/pts\/\d+/, seen);
  assert.equal(r.exitCode, 3);
});

await check('commands.run in the background: a server reached by a later command and by getHost', async () => {
  await sbx.files.write('site/index.html', 'served from the sandbox\n');
  const server = await sbx.commands.run('exec python3 -m http.server 8080 --bind 127.0.0.1 --directory site', { background: true, timeoutMs: 0 });
  assert.ok(server.pid > 0);
  const listed = await sbx.commands.list();
  assert.ok(listed.some((p) => p.pid === server.pid), `commands.list lacks ${server.pid}: ${JSON.stringify(listed)}`);
  const probe = `python3 -c "import urllib.request,time
for i in range(100):
    try:
        print(urllib.request.urlopen('http://127.0.0.1:8080/').read().decode(), end=''); break
    except OSError: time.sleep(0.05)"`;
  assert.equal((await sbx.commands.run(probe)).stdout, 'served from the sandbox\n');
  const host = sbx.getHost(8080);
  assert.equal(host, `8080-${sbx.sandboxId}.localhost`);
  const got = await getVia(host, sbx.trafficAccessToken);
  assert.equal(got.status, 200);
  assert.equal(got.body, 'served from the sandbox\n');
  const anon = await getVia(host, '');
  assert.equal(anon.status, 401, 'a port without the sandbox\'s token');
  assert.equal(await server.kill(), true);
  await rejects(server.wait(), (e) => e instanceof CommandExitError, 'the killed server');
});

await check('files: write (multipart, octet-stream, gzip), read, list, rename, remove, exists; a path outside /workspace is refused', async () => {
  const w = await sbx.files.write('/workspace/dir/a.txt', 'alpha');
  assert.equal(w.path, '/workspace/dir/a.txt');
  assert.equal(await sbx.files.read('dir/a.txt'), 'alpha');
  await sbx.files.write([{ path: 'dir/b.bin', data: new Uint8Array([0, 1, 2, 255]).buffer }]);
  const oct = await sbx.files.write('dir/oct.txt', 'raw body', { useOctetStream: true });
  assert.equal(oct.path, '/workspace/dir/oct.txt');
  await sbx.files.write('dir/gz.txt', 'gzipped body', { gzip: true });
  assert.equal((await sbx.commands.run('cat dir/oct.txt; echo; cat dir/gz.txt')).stdout, 'raw body\ngzipped body');
  await sbx.files.remove('dir/oct.txt');
  await sbx.files.remove('dir/gz.txt');
  assert.deepEqual([...(await sbx.files.read('dir/b.bin', { format: 'bytes' }))], [0, 1, 2, 255]);
  const names = (await sbx.files.list('/workspace/dir')).map((e) => `${e.name}:${e.type}:${e.size}`).sort();
  assert.deepEqual(names, ['a.txt:file:5', 'b.bin:file:4']);
  assert.equal(await sbx.files.makeDir('dir/sub'), true);
  assert.equal(await sbx.files.makeDir('dir/sub'), false);
  const moved = await sbx.files.rename('dir/a.txt', 'dir/sub/c.txt');
  assert.equal(moved.path, '/workspace/dir/sub/c.txt');
  assert.equal((await sbx.commands.run('cat dir/sub/c.txt')).stdout, 'alpha');
  assert.equal(await sbx.files.exists('dir/a.txt'), false);
  const info = await sbx.files.getInfo('dir/sub/c.txt');
  assert.equal(info.type, FileType.FILE);
  await sbx.files.remove('dir');
  assert.equal(await sbx.files.exists('dir'), false);
  await rejects(sbx.files.read('/etc/passwd'), (e) => /outside \/workspace/.test(e.message), 'read /etc/passwd');
  await rejects(sbx.files.read('missing.txt'), (e) => e instanceof NotFoundError || /not found|no such/i.test(e.message), 'read a missing file');
});

await check('files.watchDir sees a create, a write and a remove', async () => {
  await sbx.files.makeDir('watched');
  const events = [];
  const handle = await sbx.files.watchDir('watched', (e) => events.push(`${e.type}:${e.name}`), { timeoutMs: 30_000 });
  await sbx.files.write('watched/new.txt', 'one');
  await sleep(400);
  await sbx.commands.run('echo more >> watched/new.txt');
  await sleep(400);
  await sbx.files.remove('watched/new.txt');
  for (let i = 0; i < 50 && !events.includes('remove:new.txt'); i++) await sleep(50);
  await handle.stop();
  assert.ok(events.includes('create:new.txt'), JSON.stringify(events));
  assert.ok(events.includes('write:new.txt'), JSON.stringify(events));
  assert.ok(events.includes('remove:new.txt'), JSON.stringify(events));
});

await check('another API key does not reach the sandbox; a wrong access token is refused', async () => {
  const other = { apiKey: process.env.E2B_API_KEY_2 };
  await rejects(Sandbox.getInfo(sbx.sandboxId, other), (e) => /not found/i.test(e.message), 'getInfo with another key');
  await rejects(Sandbox.connect(sbx.sandboxId, other), (e) => /not found/i.test(e.message), 'connect with another key');
  assert.equal(await Sandbox.kill(sbx.sandboxId, other), false);
  const listed = await Sandbox.list({ ...other, query: { metadata: { suite: run } } }).nextItems();
  assert.deepEqual(listed, []);
  const res = await fetch(process.env.E2B_SANDBOX_URL + '/health', { headers: { 'E2b-Sandbox-Id': sbx.sandboxId, 'E2b-Sandbox-Port': '49983', 'X-Access-Token': 'wrong' } });
  assert.equal(res.status, 401);
  assert.equal(await sbx.isRunning(), true);
});

// The code interpreter.
let ci;
await check('runCode: stateful across calls', async () => {
  ci = await CI.Sandbox.create({ metadata: { suite: run, role: 'ci' }, timeoutMs: 120_000 });
  assert.equal((await ci.getInfo()).templateId, 'code-interpreter-v1');
  const first = await ci.runCode('x = 41\nprint("set")');
  assert.deepEqual(first.logs.stdout, ['set\n']);
  assert.equal(first.error, undefined);
  const second = await ci.runCode('x + 1');
  assert.equal(second.text, '42');
  assert.equal(second.executionCount, 2);
});

await check('runCode: an error with its traceback', async () => {
  const r = await ci.runCode('def f():\n    return 1 / 0\nf()');
  assert.equal(r.error.name, 'ZeroDivisionError');
  assert.equal(r.error.value, 'division by zero');
  assert.match(r.error.traceback, /line 2, in f/);
  const after = await ci.runCode('x');
  assert.equal(after.text, '41', 'the state survives an error');
  const input = await ci.runCode('input()');
  assert.equal(input.error && input.error.name, 'EOFError', 'a cell reads an empty stdin, not the next cells');
});

await check('runCode: a matplotlib plot as PNG', async () => {
  const r = await ci.runCode('import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [1, 4, 9])\nplt.title("squares")\nplt.show()', { timeoutMs: 120_000 });
  assert.equal(r.error, undefined, r.error && r.error.traceback);
  const png = r.results.find((x) => x.png);
  assert.ok(png, `no PNG result: ${JSON.stringify(r.results.map((x) => x.formats()))}`);
  const bytes = Buffer.from(png.png, 'base64');
  assert.equal(bytes.subarray(1, 4).toString(), 'PNG');
  assert.ok(bytes.length > 1000);
});

await check('runCode: JavaScript and bash contexts, created, listed, removed', async () => {
  const js = await ci.runCode('const a = 20; a + 1', { language: 'javascript' });
  assert.equal(js.text, '21');
  assert.equal((await ci.runCode('a * 2', { language: 'javascript' })).text, '40');
  const jerr = await ci.runCode('null.x', { language: 'javascript' });
  assert.equal(jerr.error.name, 'TypeError');
  const ctx = await ci.createCodeContext({ language: 'bash', cwd: '/tmp' });
  assert.equal(ctx.language, 'bash');
  const b1 = await ci.runCode('V=kept; pwd', { context: ctx });
  assert.deepEqual(b1.logs.stdout, ['/tmp\n']);
  assert.deepEqual((await ci.runCode('echo $V', { context: ctx })).logs.stdout, ['kept\n']);
  const listed = await ci.listCodeContexts();
  assert.ok(listed.some((c) => c.id === ctx.id), JSON.stringify(listed));
  await ci.removeCodeContext(ctx);
  assert.ok(!(await ci.listCodeContexts()).some((c) => c.id === ctx.id));
  await rejects(ci.runCode('echo gone', { context: ctx }), (e) => /not found/i.test(e.message), 'a removed context');
  await rejects(ci.runCode('1', { language: 'cobol' }), (e) => /400/.test(e.message), 'an unknown language');
});

await check('list with metadata and state filters', async () => {
  const all = await Sandbox.list({ query: { metadata: { suite: run } } }).nextItems();
  assert.deepEqual(all.map((s) => s.sandboxId).sort(), [sbx.sandboxId, ci.sandboxId].sort());
  const mains = await Sandbox.list({ query: { metadata: { suite: run, role: 'ci' } } }).nextItems();
  assert.deepEqual(mains.map((s) => s.sandboxId), [ci.sandboxId]);
  const pager = Sandbox.list({ query: { metadata: { suite: run } }, limit: 1 });
  const p1 = await pager.nextItems();
  assert.equal(p1.length, 1);
  assert.equal(pager.hasNext, true);
  const p2 = await pager.nextItems();
  assert.equal(p2.length, 1);
  assert.notEqual(p1[0].sandboxId, p2[0].sandboxId);
  assert.equal(pager.hasNext, false);
});

// Pause freezes the sandbox's cgroup; where airlock has none (rootless
// without a delegated cgroup) it is refused, naming the control, and the
// sandbox goes on. AIRLOCK_E2B_PAUSE=required (clients/run-tests, as
// root) makes a refusal a failure.
await check('pause and resume keep the processes and memory (or a clear refusal)', async () => {
  let paused;
  try {
    paused = await ci.pause();
  } catch (e) {
    assert.notEqual(process.env.AIRLOCK_E2B_PAUSE, 'required', `pause refused: ${e.message}`);
    assert.match(e.message, /^501: pause: .*cgroup/, e.message);
    assert.equal((await ci.getInfo()).state, 'running');
    assert.equal((await ci.runCode('x * 2')).text, '82', 'the sandbox goes on after the refusal');
    console.log(`   (pause refused on this host: ${e.message})`);
    return;
  }
  assert.equal(paused, true);
  assert.equal(await ci.pause(), false, 'pausing a paused sandbox');
  assert.equal((await ci.getInfo()).state, 'paused');
  const listed = await Sandbox.list({ query: { metadata: { suite: run }, state: ['paused'] } }).nextItems();
  assert.deepEqual(listed.map((s) => s.sandboxId), [ci.sandboxId]);
  const again = await CI.Sandbox.connect(ci.sandboxId);
  assert.equal((await again.getInfo()).state, 'running');
  assert.equal((await again.runCode('x * 2')).text, '82', 'the interpreter\'s memory kept');
});

await check('set timeout: the sandbox expires and is gone', async () => {
  const short = await Sandbox.create({ metadata: { suite: run, role: 'short' }, timeoutMs: 60_000 });
  await short.setTimeout(1000);
  await sleep(2500);
  await rejects(Sandbox.getInfo(short.sandboxId), (e) => /not found/i.test(e.message), 'getInfo after the timeout');
  assert.equal(await short.isRunning(), false);
});

await check('kill', async () => {
  assert.equal(await sbx.kill(), true);
  assert.equal(await Sandbox.kill(sbx.sandboxId), false, 'a second kill');
  assert.equal(await sbx.isRunning(), false);
  assert.equal(await ci.kill(), true);
});

await check('nothing left', async () => {
  const left = await Sandbox.list({ query: { metadata: { suite: run } } }).nextItems();
  assert.deepEqual(left, []);
});

console.log(failed ? `e2b: ${failed} FAILED` : 'e2b: ok');
process.exit(failed);
