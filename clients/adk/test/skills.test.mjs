// Skill scripts through ADK's SkillToolset and RunSkillScriptTool, with
// AirlockCodeExecutor as the toolset's executor: each script runs in a
// sandbox of its own with the skill's files in /workspace, under the
// executor's per-script timeout, and the agent sees how it ended.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { mkdtempSync, writeFileSync, rmSync, chmodSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SkillToolset } from '@google/adk';
import { AirlockCodeExecutor } from '../src/index.js';
import { serve, run, ScriptedLlm, text, call, toolResponses, seen } from './helpers.mjs';

let srv;
let hostDir;
let listener;
let connections = 0;
before(async () => {
  // A secret in the environment of the agent's process (and so of the
  // server it starts): no script may see it.
  process.env.ADK_TEST_SECRET = 'sk-of-the-host';
  srv = await serve();
  // A host file a script must not read, and a host port it must not reach.
  hostDir = mkdtempSync(join(tmpdir(), 'airlock-adk-host-'));
  chmodSync(hostDir, 0o755);
  writeFileSync(join(hostDir, 'secret.txt'), 'TOPSECRET-of-the-host\n', { mode: 0o644 });
  listener = net.createServer((c) => { connections++; c.end('hello from the host\n'); });
  await new Promise((r) => listener.listen(0, '127.0.0.1', r));
});
after(async () => {
  listener.close();
  rmSync(hostDir, { recursive: true, force: true });
  assert.equal(await srv.stop(), 0);
});

const skill = {
  frontmatter: { name: 'probe', description: 'Scripts that probe their sandbox.' },
  instructions: 'Run the scripts with run_skill_script.',
  resources: {
    references: { 'data.txt': 'three\nlines\nhere\n' },
    scripts: {
      'count.py': { src: 'import sys\nn = len(open("references/data.txt").read().split())\nopen("report.txt", "w").write(f"words={n}\\n")\nprint("words", n, sys.argv[1:])\n' },
      'count.sh': { src: 'echo "sh args: $*"; wc -l < references/data.txt\n' },
      'count.js': { src: 'const fs = require("fs");\nconsole.log("js", fs.readFileSync("references/data.txt", "utf8").split("\\n").length - 1, process.argv.slice(2).join(" "));\n' },
      'loop.py': { src: 'while True:\n    pass\n' },
      'hostfile.py': { src: 'import sys\nprint(open(sys.argv[2]).read())\n' },
      'connect.py': { src: 'import socket, sys\ns = socket.create_connection((sys.argv[2], int(sys.argv[4])), timeout=3)\nprint(s.recv(100))\n' },
      'env.py': { src: 'import os\nprint(" ".join(sorted(os.environ)))\n' },
      'memory.py': { src: 'x = bytearray(512 << 20)\nprint(len(x))\n' },
    },
  },
};

async function runScript(script, args, opts = {}) {
  const { keep, ...o } = opts;
  const executor = new AirlockCodeExecutor({ url: srv.url, timeoutSeconds: 2, ...o });
  const toolset = new SkillToolset([skill], { codeExecutor: executor });
  const a = { skill_name: 'probe', script_path: `scripts/${script}` };
  if (args) a.args = args;
  const model = new ScriptedLlm([call('run_skill_script', a), text('finished')]);
  const { events } = await run({ model, tools: [toolset] }, 'run it');
  await executor.close();
  const [resp] = toolResponses(events);
  assert.ok(resp, 'the tool answered');
  // RunSkillScriptTool makes an output directory of the host's per toolset.
  if (resp.outputDirectory && !opts.keep) rmSync(resp.outputDirectory, { recursive: true, force: true });
  // What the tool answered is what the model was sent next.
  assert.equal(model.requests.length, 2);
  assert.ok(seen(model).includes(JSON.stringify(resp.stderr).slice(1, -1)), 'the model saw the script\'s stderr');
  return { resp, model, events };
}

test('a skill script runs with the skill\'s files in /workspace; its output file comes back', async () => {
  const { resp } = await runScript('count.py', { verbose: true }, { keep: true });
  assert.equal(resp.status, 'ok', JSON.stringify(resp));
  assert.equal(resp.stdout, "words 3 ['--verbose', 'true']\n");
  assert.equal(resp.stderr, '');
  // RunSkillScriptTool wrote the output file to its output directory.
  assert.deepEqual(resp.outputFiles.map((f) => f.name), ['report.txt']);
  assert.equal(readFileSync(join(resp.outputDirectory, 'report.txt'), 'utf8'), 'words=3\n');
  rmSync(resp.outputDirectory, { recursive: true, force: true });
});

test('shell and javascript skill scripts run as bash and node', async () => {
  const sh = (await runScript('count.sh', { n: 1 })).resp;
  assert.equal(sh.stdout, 'sh args: --n 1\n3\n');
  const js = (await runScript('count.js', { n: 2 })).resp;
  assert.equal(js.stdout, 'js 3 --n 2\n');
});

test('a script that loops forever is killed at the per-script timeout and the agent sees a timeout', async () => {
  const { resp } = await runScript('loop.py');
  assert.equal(resp.status, 'timeout');
  assert.equal(resp.exitCode, 137);
  assert.match(resp.stderr, /airlock: status timeout: killed after the wall-clock limit of 2s/);
});

test('a script that reads a host file does not see it, and the agent sees why', async () => {
  const { resp } = await runScript('hostfile.py', { path: join(hostDir, 'secret.txt') });
  assert.equal(resp.status, 'exited');
  assert.match(resp.stderr, /FileNotFoundError: \[Errno 2\] No such file or directory/);
  assert.ok(!JSON.stringify(resp).includes('TOPSECRET'));
});

test('a script that opens a network connection is denied, and the agent sees why', async () => {
  const port = listener.address().port;
  const local = (await runScript('connect.py', { host: '127.0.0.1', port })).resp;
  assert.equal(local.status, 'exited');
  assert.match(local.stderr, /ConnectionRefusedError/);
  const out = (await runScript('connect.py', { host: '192.0.2.1', port: 80 })).resp;
  assert.match(out.stderr, /OSError: \[Errno 101\] Network is unreachable/);
  assert.equal(connections, 0, 'the host\'s listener was never reached');
});

test('a script sees a clean environment, not the agent\'s', async () => {
  const { resp } = await runScript('env.py');
  assert.equal(resp.status, 'ok');
  assert.ok(!JSON.stringify(resp).includes('sk-of-the-host'));
  assert.equal(resp.stdout, 'HOME LANG PATH\n');
});

test('a script that allocates past its memory limit is killed, and the agent sees a memory kill', async () => {
  const { resp } = await runScript('memory.py', undefined, { timeoutSeconds: 10 });
  if (srv.rlimitMemory) {
    // Rootless on cgroup v1: RLIMIT_DATA refuses the allocation instead.
    assert.equal(resp.status, 'exited');
    assert.match(resp.stderr, /\nMemoryError\n/);
    return;
  }
  assert.equal(resp.status, 'memory_limit');
  assert.match(resp.stderr, /airlock: status memory_limit: killed for using more memory than the sandbox allows \(128 MiB\)/);
});

test('a refused script says whether to retry (here: not)', async () => {
  const { resp } = await runScript('count.py', undefined, { policy: { memory: '1GiB' } });
  assert.equal(resp.status, 'refused');
  assert.equal(resp.retryable, false);
  assert.equal(resp.error.class, 'invalid');
  assert.match(resp.stderr, /Retrying will not help/);
});
