// The OpenAI Agents SDK's E2B sandbox client (@openai/agents-extensions,
// pinned by scripts/setup) running its own sandbox operations against
// airlock serve through the E2B SDK: create a session from a manifest
// (its workspace root /workspace, its files written by the client),
// execCommand, readFile, materializeEntry (a write), pathExists and directoryExists, then close (the sandbox
// killed). Exposed ports the client asks for as public traffic, which
// airlock refuses (each port needs the sandbox's traffic token): that
// refusal is checked too. Environment as for e2e.mjs.
import assert from 'node:assert/strict';

const npm = process.env.AIRLOCK_NPM + '/node_modules/';
const { E2BSandboxClient } = await import(npm + '@openai/agents-extensions/dist/sandbox/e2b/index.mjs');
const { Sandbox } = await import(npm + 'e2b/dist/index.mjs');
const run = `agents${process.pid}`;
let failed = 0;
async function check(name, fn) {
  try {
    await fn();
    console.log(`ok ${name}`);
  } catch (e) {
    failed++;
    console.log(`FAIL ${name}: ${e && e.stack ? e.stack : e}`);
  }
}

await check('E2BSandboxClient: a session from a manifest, exec, files, close', async () => {
  const client = new E2BSandboxClient({ template: 'base', timeout: 120, metadata: { suite: run } });
  const session = await client.create({
    manifest: { entries: { 'notes/hello.txt': { type: 'file', content: 'hello from the manifest\n' } } },
  });
  try {
    const listed = await Sandbox.list({ query: { metadata: { suite: run } } }).nextItems();
    assert.equal(listed.length, 1, 'one sandbox, made by the client');
    // execCommand answers the model's text: the output and the exit code.
    const r = await session.execCommand({ cmd: 'cat notes/hello.txt && pwd' });
    assert.match(r, /hello from the manifest\n\/workspace/, r);
    assert.match(r, /exit code 0|Process exited with code 0/i, r);
    const fail = await session.execCommand({ cmd: 'echo oops >&2; exit 4' });
    assert.match(fail, /oops/, fail);
    assert.match(fail, /exit code 4|Process exited with code 4/i, fail);
    const bytes = await session.readFile({ path: 'notes/hello.txt' });
    assert.equal(Buffer.from(bytes).toString(), 'hello from the manifest\n');
    assert.equal(await session.directoryExists('notes'), true);
    assert.equal(await session.directoryExists('notes/hello.txt'), false);
    await session.materializeEntry({ path: 'out/result.txt', entry: { type: 'file', content: 'written by the client\n' } });
    assert.match(await session.execCommand({ cmd: 'cat out/result.txt' }), /written by the client/);
    assert.equal(await session.pathExists('out/result.txt'), true);
    assert.equal(await session.pathExists('out/missing.txt'), false);
  } finally {
    await session.close();
  }
  const left = await Sandbox.list({ query: { metadata: { suite: run } } }).nextItems();
  assert.deepEqual(left, [], 'close killed the sandbox');
});

await check('E2BSandboxClient: exposed ports (public traffic) are refused, saying why', async () => {
  const client = new E2BSandboxClient({ template: 'base', timeout: 60, exposedPorts: [8080], metadata: { suite: run } });
  let err;
  try {
    const s = await client.create({ manifest: {} });
    await s.close();
  } catch (e) {
    err = e;
  }
  assert.ok(err, 'create did not fail');
  const text = `${err.message} ${JSON.stringify(err.details ?? {})} ${err.cause ? err.cause.message : ''}`;
  assert.match(text, /network|traffic token/, text);
});

console.log(failed ? `agents: ${failed} FAILED` : 'agents: ok');
process.exit(failed);
