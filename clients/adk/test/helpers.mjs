// What the tests share: a real `airlock serve` (AIRLOCK_BIN), a scripted
// model (a BaseLlm that answers with fixed turns and keeps every request,
// as ADK's own tests script one), and an agent run with ADK's Runner and
// its in-memory services.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, existsSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  BaseLlm, InMemoryArtifactService, InMemorySessionService, LlmAgent, Runner,
} from '@google/adk';

export const BIN = process.env.AIRLOCK_BIN;
if (!BIN) throw new Error('AIRLOCK_BIN: the airlock binary these tests serve (clients/run-tests sets it)');

/**
 * serve starts `airlock serve` with the served policy the tests use (10 s,
 * 128 MiB). A memory limit needs a cgroup: where the server refuses it
 * for want of one (rootless on a cgroup v1 host, such as CI's), it is
 * served with --best-effort (limits only: RLIMIT_DATA instead) and
 * rlimitMemory is set, so that the tests expect what that enforces: an
 * allocation past it fails (MemoryError) instead of a memory kill.
 */
export async function serve() {
  const args = ['--timeout', '10s', '--memory', '128MiB'];
  try {
    return { ...(await serveWith(args)), rlimitMemory: false };
  } catch (e) {
    if (!/memory limit needs a cgroup/.test(e.message)) throw e;
    return { ...(await serveWith([...args, '--best-effort'])), rlimitMemory: true };
  }
}

/**
 * serveWith starts `airlock serve` on a unix socket and a loopback TCP
 * port in a directory of its own, with args (run flags: the served
 * policy). Returns {url, tcp, dir, log(), stop()}; stop sends SIGTERM and
 * resolves the exit code.
 */
export async function serveWith(args = []) {
  const dir = mkdtempSync(join(tmpdir(), 'airlock-adk-'));
  chmodSync(dir, 0o755);
  const logFile = join(dir, 'log');
  const { openSync } = await import('node:fs');
  const fd = openSync(logFile, 'w');
  const child = spawn(BIN, ['serve', '--listen', `unix:${dir}/s.sock`, '--listen', 'tcp:127.0.0.1:0',
    '--work-dir', join(dir, 'work'), '--drain-timeout', '5s', ...args], { stdio: ['ignore', 'ignore', fd] });
  let gone = false;
  const exited = new Promise((resolve) => child.on('exit', (code, sig) => { gone = true; resolve(code ?? sig); }));
  const log = () => readFileSync(logFile, 'utf8');
  let port = '';
  for (let i = 0; i < 200 && !port && !gone; i++) {
    const m = /msg=listening address=tcp:127\.0\.0\.1:(\d+)/.exec(log());
    if (m && existsSync(join(dir, 's.sock'))) port = m[1];
    else await sleep(50);
  }
  if (!port) {
    child.kill('SIGKILL');
    await exited;
    const l = log();
    rmSync(dir, { recursive: true, force: true });
    throw new Error('airlock serve did not start:\n' + l);
  }
  return {
    url: `unix:${dir}/s.sock`, tcp: `http://127.0.0.1:${port}`, dir, log,
    /** stop sends SIGTERM; it resolves the exit code, and fails if the server left anything in its work dir but its lock. */
    async stop() {
      child.kill('SIGTERM');
      const code = await exited;
      const left = readdirSync(join(dir, 'work'), { recursive: true }).filter((f) => f !== '.lock');
      rmSync(dir, { recursive: true, force: true });
      if (left.length) throw new Error(`airlock serve left in its work dir: ${left.join(', ')}`);
      return code;
    },
  };
}

/**
 * ScriptedLlm answers the n-th request with turns[n] (an LlmResponse, or
 * a function of the request returning one, or a promise of one) and keeps each request's
 * contents. Past the script it answers "done".
 */
export class ScriptedLlm extends BaseLlm {
  constructor(turns) {
    super({ model: 'scripted' });
    this.turns = turns;
    this.requests = [];
  }

  async *generateContentAsync(request) {
    this.requests.push(structuredClone(request.contents));
    let t = this.turns[this.requests.length - 1];
    if (typeof t === 'function') t = await t(request);
    yield structuredClone(t || { content: { role: 'model', parts: [{ text: 'done' }] } });
  }

  async connect() { throw new Error('ScriptedLlm has no live connection'); }
}

/** text is a model turn of text. */
export const text = (s) => ({ content: { role: 'model', parts: [{ text: s }] } });
/** call is a model turn calling a tool. */
export const call = (name, args) => ({ content: { role: 'model', parts: [{ functionCall: { name, args } }] } });

/**
 * run runs agent (an LlmAgent config without name) for one user message
 * with ADK's Runner and in-memory session and artifact services. With
 * session given it continues that session. Returns {events, session,
 * sessions, artifacts, runner}.
 */
export async function run(agentConfig, message, reuse = {}) {
  const agent = reuse.agent || new LlmAgent({ name: 'coder', ...agentConfig });
  const sessions = reuse.sessions || new InMemorySessionService();
  const artifacts = reuse.artifacts || new InMemoryArtifactService();
  const runner = reuse.runner || new Runner({ appName: 'adk_test', agent, sessionService: sessions, artifactService: artifacts });
  const session = reuse.session || (await sessions.createSession({ appName: 'adk_test', userId: 'u' }));
  const events = [];
  for await (const e of runner.runAsync({ userId: 'u', sessionId: session.id, newMessage: { role: 'user', parts: [{ text: message }] } })) {
    events.push(e);
  }
  return { events, session, sessions, artifacts, runner, agent };
}

/** results are the code-execution outputs among events, in order. */
export function codeResults(events) {
  const out = [];
  for (const e of events) for (const p of e.content?.parts || []) if (p.codeExecutionResult) out.push(p.codeExecutionResult);
  return out;
}

/** toolResponses are the function responses among events, in order. */
export function toolResponses(events) {
  const out = [];
  for (const e of events) for (const p of e.content?.parts || []) if (p.functionResponse) out.push(p.functionResponse.response);
  return out;
}

/** lastText is the text of the last event with text. */
export function lastText(events) {
  for (let i = events.length - 1; i >= 0; i--) {
    const t = (events[i].content?.parts || []).map((p) => p.text || '').join('');
    if (t) return t;
  }
  return '';
}

/** seen is everything the model was sent, as one string (what it could act on). */
export function seen(model) {
  return JSON.stringify(model.requests);
}
