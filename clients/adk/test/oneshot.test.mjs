// One-shot execution (a fresh sandbox per block, POST /v1/exec) under
// ADK's own Runner: what the model sees of each outcome, input and
// output files, and ADK's retry loop on a refusal.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { LlmAgent } from '@google/adk';
import { AirlockCodeExecutor, AirlockCodeBlockProcessor } from '../src/index.js';
import { serve, run, ScriptedLlm, text, codeResults, lastText, seen } from './helpers.mjs';

let srv;
before(async () => { srv = await serve(); });
after(async () => { assert.equal(await srv.stop(), 0, 'airlock serve exits 0 on SIGTERM'); });

const block = (lang, code) => text(`Let me run it.\n\`\`\`${lang}\n${code}\n\`\`\``);

test('a Python block runs in the sandbox and the model sees its output', async () => {
  const model = new ScriptedLlm([block('python', 'import os\nprint(6 * 7, os.getcwd(), os.getuid())'), text('It is 42.')]);
  const executor = new AirlockCodeExecutor({ url: srv.url });
  const { events } = await run({ model, codeExecutor: executor, responseProcessors: [new AirlockCodeBlockProcessor()] }, 'What is 6*7?');
  const [r] = codeResults(events);
  assert.equal(r.outcome, 'OUTCOME_OK');
  assert.match(r.output, /^Code execution result:\n42 \/workspace 1000\n/);
  // The model's second request carries the output, as ADK renders it.
  assert.equal(model.requests.length, 2);
  const last = model.requests[1].at(-1);
  assert.equal(last.role, 'user');
  assert.match(last.parts[0].text, /^```tool_output\nCode execution result:\n42 \/workspace 1000\n/);
  assert.equal(lastText(events), 'It is 42.');
  await executor.close();
});

test('javascript and shell blocks run as node and bash', async () => {
  const model = new ScriptedLlm([
    block('javascript', 'console.log("js", 1 + 1)'), block('bash', 'echo "sh $BASH_VERSION" | cut -c1-5'), text('ok'),
  ]);
  const executor = new AirlockCodeExecutor({ url: srv.url });
  const { events } = await run({ model, codeExecutor: executor, responseProcessors: [new AirlockCodeBlockProcessor()] }, 'go');
  const [js, sh] = codeResults(events);
  assert.match(js.output, /\njs 2\n/);
  assert.match(sh.output, /\nsh 5\.\n/);
  await executor.close();
});

test('an input file is read in /workspace and a file the code writes comes back as an ADK artifact', async () => {
  const model = new ScriptedLlm([
    block('python', [
      'rows = open("data.csv").read().split()',
      'total = sum(int(r.split(",")[1]) for r in rows[1:])',
      'open("total.txt", "w").write(f"total={total}\\n")',
      'print("rows", len(rows) - 1)',
    ].join('\n')),
    text('Saved.'),
  ]);
  const executor = new AirlockCodeExecutor({ url: srv.url });
  const agent = new LlmAgent({ name: 'coder', model, codeExecutor: executor, responseProcessors: [new AirlockCodeBlockProcessor()] });
  const { InMemorySessionService, InMemoryArtifactService } = await import('@google/adk');
  const sessions = new InMemorySessionService();
  const artifacts = new InMemoryArtifactService();
  // ADK keeps a code executor's input files in the session's state.
  const session = await sessions.createSession({
    appName: 'adk_test', userId: 'u',
    state: { _code_executor_input_files: [{ name: 'data.csv', content: 'k,v\na,1\nb,2\nc,39\n', mimeType: 'text/csv' }] },
  });
  const { events } = await run({}, 'sum it', { agent, sessions, artifacts, session });
  const [r] = codeResults(events);
  assert.match(r.output, /rows 3\n/);
  assert.match(r.output, /Saved artifacts: total\.txt$/);
  const result = events.find((e) => e.actions && e.actions.artifactDelta && 'total.txt' in e.actions.artifactDelta);
  assert.ok(result, 'the result event records the artifact');
  const part = await artifacts.loadArtifact({ appName: 'adk_test', userId: 'u', sessionId: session.id, filename: 'total.txt' });
  assert.equal(Buffer.from(part.inlineData.data, 'base64').toString(), 'total=42\n');
  assert.equal(part.inlineData.mimeType, 'text/plain');
  // The input file, unchanged, is not an output; nor is the code's own file.
  assert.deepEqual(Object.keys(result.actions.artifactDelta), ['total.txt']);
  await executor.close();
});

test('a timeout, a memory kill and a seccomp kill reach the model as failed results naming the limit', async () => {
  const model = new ScriptedLlm([
    block('python', 'while True:\n    pass'),
    block('python', 'x = bytearray(512 << 20)\nprint(len(x))'),
    block('python', 'import ctypes\nctypes.CDLL(None).syscall(0x40000027)'),
    text('done'),
  ]);
  const executor = new AirlockCodeExecutor({ url: srv.url, timeoutSeconds: 1, errorRetryAttempts: 5 });
  const { events } = await run({ model, codeExecutor: executor, responseProcessors: [new AirlockCodeBlockProcessor()] }, 'go');
  const [t, m, s] = codeResults(events);
  assert.equal(t.outcome, 'OUTCOME_DEADLINE_EXCEEDED');
  assert.match(t.output, /airlock: status timeout: killed after the wall-clock limit of 1s/);
  assert.equal(m.outcome, 'OUTCOME_FAILED');
  if (srv.rlimitMemory) assert.match(m.output, /MemoryError\nairlock: status exited/);
  else assert.match(m.output, /airlock: status memory_limit: .*\(128 MiB\)/);
  assert.equal(s.outcome, 'OUTCOME_FAILED');
  assert.match(s.output, /airlock: status seccomp_violation: killed for making the system call x32:getpid/);
  const saw = seen(model);
  for (const w of ['status timeout', srv.rlimitMemory ? 'MemoryError' : 'status memory_limit', 'status seccomp_violation']) assert.ok(saw.includes(w), `the model saw ${w}`);
  assert.equal(lastText(events), 'done');
  await executor.close();
});

// A spy: counts the calls that reach the executor.
class Counting extends AirlockCodeExecutor {
  constructor(o) { super(o); this.calls = 0; }
  async executeCode(p) { this.calls++; return super.executeCode(p); }
}

test('a refusal that retrying cannot fix is tried once, not errorRetryAttempts times', async () => {
  // The served memory ceiling is 128 MiB: asking for 1 GiB is refused (400, invalid, not retryable).
  const model = new ScriptedLlm([block('python', 'print(1)'), block('python', 'print(2)'), block('python', 'print(3)'), text('gave up')]);
  const executor = new Counting({ url: srv.url, policy: { memory: '1GiB' } });
  assert.equal(executor.errorRetryAttempts, 2);
  const { events } = await run({ model, codeExecutor: executor, responseProcessors: [new AirlockCodeBlockProcessor()] }, 'go');
  assert.equal(executor.calls, 1);
  const [r] = codeResults(events);
  assert.equal(r.outcome, 'OUTCOME_FAILED');
  assert.match(r.output, /airlock refused to run this code \(class invalid, field policy\.memory\): .*above the server's maximum.*Retrying will not help/);
  // The model saw the refusal; its next answer (a block) is final, not run.
  assert.equal(model.requests.length, 2);
  assert.ok(seen(model).includes('Retrying will not help'));
  assert.match(lastText(events), /print\(2\)/);
  await executor.close();
});

test('a failing block is retried as ADK retries: errorRetryAttempts times in a row, then not', async () => {
  const model = new ScriptedLlm([block('python', 'raise ValueError("a")'), block('python', 'raise ValueError("b")'), block('python', 'print(3)'), text('x')]);
  const executor = new Counting({ url: srv.url });
  const { events } = await run({ model, codeExecutor: executor, responseProcessors: [new AirlockCodeBlockProcessor()] }, 'go');
  assert.equal(executor.calls, 2);
  const rs = codeResults(events);
  assert.match(rs[0].output, /ValueError: a\nairlock: status exited: the program exited with code 1\./);
  assert.match(rs[1].output, /ValueError: b/);
  assert.match(lastText(events), /print\(3\)/);
  await executor.close();
});

test('a busy server is retried after its Retry-After; past the retries it is a retryable failure, which ADK may retry', async () => {
  // A stand-in server that is always busy, counting what it is asked.
  let asked = 0;
  const busy = http.createServer((req, res) => {
    asked++;
    req.resume();
    res.writeHead(429, { 'Content-Type': 'application/json', 'Retry-After': '0' });
    res.end(JSON.stringify({ error: { class: 'unavailable', retryable: true, message: 'queue full (--max-queue 0)', fix: 'retry later' } }));
  });
  await new Promise((r) => busy.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${busy.address().port}`;
  const model = new ScriptedLlm([block('python', 'print(1)'), block('python', 'print(1)'), block('python', 'print(1)'), text('x')]);
  const executor = new Counting({ url, busyRetries: 1 });
  const { events } = await run({ model, codeExecutor: executor, responseProcessors: [new AirlockCodeBlockProcessor()] }, 'go');
  busy.close();
  // ADK tried errorRetryAttempts (2) blocks; each was asked twice (one retry here).
  assert.equal(executor.calls, 2);
  assert.equal(asked, 4);
  const [r] = codeResults(events);
  assert.match(r.output, /class unavailable\): queue full.*trying again later may help/);
  await executor.close();
});

test('a language airlock does not run is refused once, saying so', async () => {
  const model = new ScriptedLlm([block('typescript', 'const x: number = 1'), block('typescript', 'x'), text('x')]);
  const executor = new Counting({ url: srv.url });
  const { events } = await run({ model, codeExecutor: executor, responseProcessors: [new AirlockCodeBlockProcessor()] }, 'go');
  assert.equal(executor.calls, 1);
  assert.match(codeResults(events)[0].output, /airlock runs python, javascript, shell code, not "typescript".*Retrying will not help/);
  await executor.close();
});

test('a timeout in the input (as the Python RFC adds it) overrides the executor\'s', async () => {
  const executor = new AirlockCodeExecutor({ url: srv.url, timeoutSeconds: 5 });
  const r = await executor.executeCode({ codeExecutionInput: { code: 'while True: pass', language: 'python', inputFiles: [], timeoutSeconds: 1 } });
  assert.equal(r.status, 'timeout');
  assert.match(r.stderr, /limit of 1s/);
  await executor.close();
});

test('a bad url is refused when the executor is made', () => {
  assert.throws(() => new AirlockCodeExecutor({ url: 'https://x:1' }), /only http:\/\/HOST:PORT/);
  assert.throws(() => new AirlockCodeExecutor({ url: 'unix:rel.sock' }), /absolute path/);
  assert.throws(() => new AirlockCodeExecutor({ url: 'unix:/x', timeoutSeconds: 0 }), /positive number/);
});
