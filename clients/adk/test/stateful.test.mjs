// Stateful execution: one live sandbox (POST /v1/sandboxes) per ADK
// execution id, that is per session; Python blocks share one
// interpreter in it, so a block sees what the blocks before it set.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { InMemorySessionService, InMemoryArtifactService, LlmAgent, Runner } from '@google/adk';
import { AirlockCodeExecutor, AirlockCodeBlockProcessor } from '../src/index.js';
import { Client } from '../src/http.js';
import { serve, ScriptedLlm, text, codeResults, lastText, seen } from './helpers.mjs';

let srv;
before(async () => { srv = await serve(); });
after(async () => { assert.equal(await srv.stop(), 0); });

const block = (lang, code) => text(`\`\`\`${lang}\n${code}\n\`\`\``);

/** A session of an agent with a stateful executor: say(message) runs one invocation. */
async function agentSession(turns, opts = {}) {
  const model = new ScriptedLlm(turns);
  const executor = new AirlockCodeExecutor({ url: srv.url, stateful: true, ...opts });
  const agent = new LlmAgent({ name: 'coder', model, codeExecutor: executor, responseProcessors: [new AirlockCodeBlockProcessor()] });
  const sessions = executor.closeWithSessions(new InMemorySessionService());
  const artifacts = new InMemoryArtifactService();
  const runner = new Runner({ appName: 'adk_test', agent, sessionService: sessions, artifactService: artifacts });
  const session = await sessions.createSession({ appName: 'adk_test', userId: 'u' });
  const say = async (msg) => {
    const events = [];
    for await (const e of runner.runAsync({ userId: 'u', sessionId: session.id, newMessage: { role: 'user', parts: [{ text: msg }] } })) events.push(e);
    return events;
  };
  return { model, executor, sessions, artifacts, session, say };
}

/** sandboxStatus asks the server whether the sandbox id is still there (200) or not (404). */
async function sandboxStatus(id) {
  const c = new Client({ url: srv.url });
  const r = await c.request('GET', `/v1/sandboxes/${id}`);
  c.close();
  return r.status;
}

/** listed says whether the server lists the sandbox (a listing is no call on it: its idle timer runs on). */
async function listed(id) {
  const c = new Client({ url: srv.url });
  const r = await c.json('GET', '/v1/sandboxes');
  c.close();
  return JSON.stringify(r).includes(id);
}

test('a second block, in the same and in a later invocation, uses the variables and files the first set', async () => {
  const s = await agentSession([
    block('python', 'import math\nx = 6 * 7\nopen("notes.txt", "w").write("kept\\n")\nprint("set", x)'),
    block('python', 'print("again", x, math.pi > 3)'),
    text('first done'),
    block('bash', 'cat notes.txt; echo "pid1 is $(cat /proc/1/comm)"'),
    block('python', 'x += 1\nprint("later", x, open("notes.txt").read().strip())'),
    text('second done'),
  ]);
  const first = await s.say('one');
  const [a, b] = codeResults(first);
  assert.match(a.output, /^Code execution result:\nset 42\n/);
  assert.match(b.output, /^Code execution result:\nagain 42 True\n/);
  // notes.txt came back once, from the block that wrote it.
  assert.match(a.output, /Saved artifacts: notes\.txt/);
  assert.doesNotMatch(b.output, /Saved artifacts/);
  const id = s.executor.sandboxId(s.session.id);
  assert.ok(id, 'the session has a live sandbox');
  const second = await s.say('two');
  const [c, d] = codeResults(second);
  assert.match(c.output, /kept\n/);
  assert.match(d.output, /^Code execution result:\nlater 43 kept\n/);
  assert.equal(s.executor.sandboxId(s.session.id), id, 'the same sandbox served both invocations');
  assert.equal(lastText(second), 'second done');
  // Deleting ADK's session closes its sandbox.
  await s.sessions.deleteSession({ appName: 'adk_test', userId: 'u', sessionId: s.session.id });
  assert.equal(await sandboxStatus(id), 404);
  await s.executor.close();
});

test('a block that times out kills the interpreter: the model is told its variables are gone, its files are not', async () => {
  const s = await agentSession([
    block('python', 'y = 1\nopen("f.txt", "w").write("f")'),
    block('python', 'print("start", flush=True)\nwhile True:\n    pass'),
    block('python', 'print(open("f.txt").read())\nprint(y)'),
    text('done'),
  ], { timeoutSeconds: 2, errorRetryAttempts: 5 });
  const events = await s.say('go');
  const [, t, after] = codeResults(events);
  assert.equal(t.outcome, 'OUTCOME_DEADLINE_EXCEEDED');
  assert.match(t.output, /^start\n/);
  assert.match(t.output, /airlock: status timeout: killed after the wall-clock limit of 2s/);
  assert.match(t.output, /variables set by earlier blocks are gone \(files in \/workspace are kept\)/);
  assert.match(after.output, /^f\n.*NameError: name 'y' is not defined/s);
  assert.ok(seen(s.model).includes('status timeout'));
  await s.executor.close();
});

test('a block that allocates past the memory limit is a memory kill; the session goes on', async () => {
  const s = await agentSession([
    block('python', 'x = bytearray(512 << 20)'),
    block('python', 'print("alive")'),
    text('done'),
  ], { errorRetryAttempts: 5 });
  const events = await s.say('go');
  const [m, ok] = codeResults(events);
  if (srv.rlimitMemory) assert.match(m.output, /\nMemoryError\n/); // RLIMIT_DATA (rootless, cgroup v1): the allocation fails
  else assert.match(m.output, /airlock: status memory_limit/);
  assert.match(ok.output, /^Code execution result:\nalive\n/);
  await s.executor.close();
});

test('a sandbox that idled out is replaced, and the model is told', async () => {
  const s = await agentSession([block('python', 'z = 5'), text('a'), block('python', 'print("new")'), text('b')], { idleTimeoutSeconds: 1 });
  await s.say('one');
  const id = s.executor.sandboxId(s.session.id);
  for (let i = 0; i < 100 && (await listed(id)); i++) await sleep(100);
  assert.ok(!(await listed(id)), 'the server closed the idle sandbox');
  const [r] = codeResults(await s.say('two'));
  assert.match(r.output, /the sandbox of this session had ended .* variables and files of earlier blocks are gone\.\nnew\n/s);
  assert.notEqual(s.executor.sandboxId(s.session.id), id);
  await s.executor.close();
});

test('an interpreter that ended between blocks is started again, and the model is told', async () => {
  let s;
  // Before its second turn the model waits until the interpreter is gone:
  // the first block left a process behind that kills it.
  const interpreterGone = async () => {
    const c = new Client({ url: srv.url });
    const id = s.executor.sandboxId(s.session.id);
    let gone = false;
    for (let i = 0; i < 200 && !gone; i++) {
      const ps = await c.json('GET', `/v1/sandboxes/${id}/processes`);
      const d = ps.find((p) => p.tag === 'adk-python-driver');
      gone = d && d.state === 'exited';
      if (!gone) await sleep(50);
    }
    c.close();
    assert.ok(gone, 'the interpreter was killed');
    return block('python', 'print("fresh", "w" in dir())');
  };
  s = await agentSession([
    block('python', 'import os, subprocess\nw = 1\nsubprocess.Popen(["sh", "-c", "sleep 0.2; kill -9 %d" % os.getpid()])'),
    interpreterGone,
    text('done'),
  ]);
  const [, r] = codeResults(await s.say('go'));
  assert.match(r.output, /^Code execution result:\nairlock: the Python interpreter of this session had ended since the last block: variables set by earlier blocks are gone.*\nfresh False\n/s);
  await s.executor.close();
});
