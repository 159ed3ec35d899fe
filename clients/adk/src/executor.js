// AirlockCodeExecutor: ADK's BaseCodeExecutor on airlock serve.
//
// One-shot (stateful false, or no execution id): each call is one
// POST /v1/exec, a fresh sandbox per call. Stateful: one live sandbox
// (POST /v1/sandboxes) per ADK execution id, kept across calls until the
// session is closed through this executor or the sandbox idles out; for
// Python one interpreter (src/driver.js) runs every block of it.
import { randomBytes } from 'node:crypto';
import { BaseCodeExecutor } from '@google/adk';
import { AirlockError, Client, errorOf as errorOfRes } from './http.js';
import { DRIVER } from './driver.js';

// ADK's languages (CodeExecutionLanguage values) and airlock's names for them.
const LANGUAGES = { python: 'python', javascript: 'node', shell: 'bash' };
// The file /v1/exec writes the code to (executor/languages.go).
const CODE_FILES = { python: 'main.py', node: 'main.js', bash: 'main.sh' };

// What a status means, in a line the model reads (stderr's last line).
function statusLine(r, timeoutSeconds) {
  const limit = (r.enforced && r.enforced.timeout) || (timeoutSeconds ? `${timeoutSeconds}s` : 'the served policy\'s');
  switch (r.status) {
    case 'ok': return '';
    case 'exited': return `airlock: status exited: the program exited with code ${r.exit_code}.`;
    case 'signaled': return `airlock: status signaled: the program was killed by ${r.signal}.`;
    case 'timeout': return `airlock: status timeout: killed after the wall-clock limit of ${limit}; it did not finish. Running the same code again will time out again: make it finish sooner.`;
    case 'cpu_limit': return 'airlock: status cpu_limit: killed for using up its CPU-time budget. Make it do less work.';
    case 'memory_limit': return `airlock: status memory_limit: killed for using more memory than the sandbox allows${memoryOf(r)}. Running the same code again will be killed again: use less memory.`;
    case 'seccomp_violation': return `airlock: status seccomp_violation: killed for making the system call ${r.seccomp_syscall || '(unknown)'}, which the sandbox forbids. Do not retry it.`;
    case 'output_limit': return 'airlock: status output_limit: killed for printing more than the output limit. Print less.';
    case 'cancelled': return 'airlock: status cancelled: the run was cancelled before it finished.';
    default: return `airlock: status ${r.status}.`;
  }
}

function memoryOf(r) {
  const b = r.enforced && r.enforced.cgroup && r.enforced.cgroup.memory_bytes;
  return b ? ` (${Math.round(b / 1048576)} MiB)` : '';
}

// refusalLine tells the model what a refusal was and whether a retry can help.
function refusalLine(e) {
  const again = e.retryable
    ? 'This is transient (the server is busy or short of something): trying again later may help.'
    : 'Retrying will not help: this request will be refused again as it is.';
  const fix = e.fix ? ` Fix: ${e.fix}.` : '';
  return `airlock refused to run this code (class ${e.klass}${e.field ? `, field ${e.field}` : ''}): ${e.message}.${fix} ${again}`;
}

/** refusal is the result of code that did not run: ADK and the model both can tell. */
function refusal(e) {
  return {
    stdout: '',
    stderr: refusalLine(e),
    outputFiles: [],
    status: 'refused',
    refused: true,
    retryable: Boolean(e.retryable),
    error: { class: e.klass, retryable: Boolean(e.retryable), message: e.message, fix: e.fix || undefined, field: e.field || undefined },
  };
}

const MIME = {
  '.txt': 'text/plain', '.csv': 'text/csv', '.json': 'application/json', '.md': 'text/markdown',
  '.html': 'text/html', '.xml': 'application/xml', '.yaml': 'text/yaml', '.yml': 'text/yaml',
  '.py': 'text/x-python', '.js': 'text/javascript', '.sh': 'text/x-shellscript',
  '.png': 'image/png', '.jpg': 'image/jpeg', '.jpeg': 'image/jpeg', '.gif': 'image/gif',
  '.svg': 'image/svg+xml', '.pdf': 'application/pdf',
};
function mimeOf(name) {
  const i = name.lastIndexOf('.');
  return (i >= 0 && MIME[name.slice(i).toLowerCase()]) || 'application/octet-stream';
}

/** outputFile is an ADK File: base64 content, so that any bytes survive. */
function outputFile(name, bytes) {
  return { name, content: bytes.toString('base64'), contentEncoding: 'base64', mimeType: mimeOf(name) };
}

/** bytesOf reads an ADK File's content: base64 when it says so, else text. */
function bytesOf(f) {
  if (Buffer.isBuffer(f.content)) return f.content;
  return Buffer.from(String(f.content ?? ''), f.contentEncoding === 'base64' ? 'base64' : 'utf8');
}

/** argList turns ADK's args (a list, or {key: value} as --key value) into argv. */
function argList(args) {
  if (!args) return [];
  if (Array.isArray(args)) return args.map(String);
  const out = [];
  for (const [k, v] of Object.entries(args)) out.push(`--${k}`, String(v));
  return out;
}

function seconds(name, v, dflt) {
  if (v === undefined || v === null) return dflt;
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) {
    throw new TypeError(`AirlockCodeExecutor: ${name} must be a positive number of seconds, not ${JSON.stringify(v)}`);
  }
  return v;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * AirlockCodeExecutor runs ADK's code in airlock sandboxes, through
 * airlock serve at `url` ("unix:PATH" or "http://HOST:PORT").
 */
export class AirlockCodeExecutor extends BaseCodeExecutor {
  constructor(options = {}) {
    super();
    const o = options;
    this.client = new Client({ url: o.url, token: o.token });
    this.stateful = Boolean(o.stateful);
    // undefined: the served policy's timeout (the server's --timeout).
    this.timeoutSeconds = seconds('timeoutSeconds', o.timeoutSeconds, undefined);
    this.idleTimeoutSeconds = seconds('idleTimeoutSeconds', o.idleTimeoutSeconds, 300);
    this.policy = { ...(o.policy || {}) };
    if ('timeout' in this.policy) throw new TypeError('AirlockCodeExecutor: give the time limit as timeoutSeconds, not policy.timeout');
    this.env = o.env;
    this.busyRetries = o.busyRetries ?? 2;
    this.maxRetryDelaySeconds = o.maxRetryDelaySeconds ?? 5;
    this.maxOutputFileBytes = o.maxOutputFileBytes ?? 16 << 20;
    if (o.errorRetryAttempts !== undefined) this.errorRetryAttempts = o.errorRetryAttempts;
    if (o.optimizeDataFile !== undefined) this.optimizeDataFile = Boolean(o.optimizeDataFile);
    if (o.codeBlockDelimiters) this.codeBlockDelimiters = o.codeBlockDelimiters;
    // Live sandboxes by execution id, each a promise (created once even
    // when two calls race) of a Live; calls on one run one at a time.
    this.live = new Map();
  }

  /**
   * executeCode runs one block or script. It never throws for what the
   * server said or for what the code did: every outcome is a result, with
   * `status` (a Result status, or "refused"), `exitCode`, and for a
   * refusal `refused`, `retryable` and `error`; stderr ends with a line
   * that says what happened and whether running it again can help.
   */
  async executeCode({ codeExecutionInput }) {
    const input = codeExecutionInput || {};
    const lang = LANGUAGES[input.language];
    if (!lang) {
      return refusal(new AirlockError({
        klass: 'invalid', retryable: false, field: 'language',
        message: `airlock runs ${Object.keys(LANGUAGES).join(', ')} code, not ${JSON.stringify(input.language)}`,
        fix: 'write the code in one of those languages',
      }));
    }
    let timeoutSeconds;
    try {
      timeoutSeconds = seconds('timeoutSeconds', input.timeoutSeconds, this.timeoutSeconds);
    } catch (e) {
      return refusal(new AirlockError({ klass: 'invalid', retryable: false, field: 'timeoutSeconds', message: e.message }));
    }
    const job = { lang, code: String(input.code ?? ''), args: argList(input.args), inputs: input.inputFiles || [], timeoutSeconds };
    try {
      if (this.stateful && input.executionId) return await this.runLive(String(input.executionId), job);
      return await this.runOnce(job);
    } catch (e) {
      if (e instanceof AirlockError) return refusal(e);
      return refusal(new AirlockError({ klass: 'internal', retryable: false, message: `the airlock client failed: ${e && e.message ? e.message : e}` }));
    }
  }

  /** busy retries fn while the server says it is busy (429/503, retryable), honouring Retry-After. */
  async busy(fn) {
    for (let attempt = 0; ; attempt++) {
      try {
        return await fn();
      } catch (e) {
        if (!(e instanceof AirlockError) || !e.retryable || attempt >= this.busyRetries) throw e;
        const wait = Math.min(e.retryAfterSeconds ?? 1, this.maxRetryDelaySeconds);
        await sleep(wait * 1000);
      }
    }
  }

  async runOnce(job) {
    const files = job.inputs.map((f) => ({ name: f.name, content: bytesOf(f).toString('base64'), encoding: 'base64' }));
    const pol = { ...this.policy };
    if (job.timeoutSeconds) pol.timeout = `${job.timeoutSeconds}s`;
    const body = { language: job.lang, code: job.code, args: job.args, files, policy: pol };
    if (this.env) body.env = this.env;
    let r;
    try {
      r = await this.busy(() => this.client.json('POST', '/v1/exec', body));
    } catch (e) {
      if (e instanceof AirlockError && e.result && e.result.status) r = e.result;
      else throw e;
    }
    if (r.error && (r.status === 'error' || r.status === 'setup_error')) throw errorFromResult(r);
    const inputs = new Map(job.inputs.map((f) => [f.name, bytesOf(f)]));
    const outputFiles = [];
    const notes = [];
    for (const f of r.files || []) {
      if (f.skipped || f.path === CODE_FILES[job.lang]) continue;
      const data = Buffer.from(f.data || '', 'base64');
      if (f.truncated) { notes.push(`airlock: ${f.path} (${f.size} bytes) is larger than the server returns; it was not returned.`); continue; }
      const before = inputs.get(f.path);
      if (before && before.equals(data)) continue;
      outputFiles.push(outputFile(f.path, data));
    }
    return resultOf(r, job.timeoutSeconds, outputFiles, notes);
  }

  // ---- stateful: live sandboxes ------------------------------------------

  async runLive(executionId, job) {
    let entry = this.live.get(executionId);
    if (!entry) {
      entry = { sandbox: null, queue: Promise.resolve() };
      this.live.set(executionId, entry);
    }
    const run = entry.queue.then(() => this.runLiveNow(executionId, entry, job));
    entry.queue = run.catch(() => {});
    return run;
  }

  async runLiveNow(executionId, entry, job) {
    const notes = [];
    for (let attempt = 0; ; attempt++) {
      if (!entry.sandbox) entry.sandbox = await this.busy(() => Live.create(this, executionId));
      const sb = entry.sandbox;
      try {
        const out = await sb.run(job);
        out.stdout = notes.concat(out.notes || []).map((n) => n + '\n').join('') + out.stdout;
        delete out.notes;
        return out;
      } catch (e) {
        // The sandbox ended under us (idle timeout, lifetime, a server
        // restart): say so, and start again in a new one, once.
        if (e instanceof AirlockError && e.httpStatus === 404 && attempt === 0) {
          entry.sandbox = null;
          notes.push('airlock: the sandbox of this session had ended (idle timeout, lifetime or server restart); this ran in a new one: variables and files of earlier blocks are gone.');
          continue;
        }
        throw e;
      }
    }
  }

  /** closeExecution closes the live sandbox of one execution id (an ADK session id), if any. */
  async closeExecution(executionId) {
    const entry = this.live.get(executionId);
    if (!entry) return;
    this.live.delete(executionId);
    await entry.queue;
    if (entry.sandbox) await entry.sandbox.close();
  }

  /** close closes every live sandbox of this executor and its connections. */
  async close() {
    await Promise.allSettled([...this.live.keys()].map((id) => this.closeExecution(id)));
    this.client.close();
  }

  /**
   * closeWithSessions makes sessionService.deleteSession close the
   * session's sandbox too (ADK's execution id of a session is its id).
   * Returns sessionService.
   */
  closeWithSessions(sessionService) {
    const del = sessionService.deleteSession.bind(sessionService);
    sessionService.deleteSession = async (req) => {
      const out = await del(req);
      await this.closeExecution(req.sessionId);
      return out;
    };
    return sessionService;
  }

  /** sandboxId is the airlock id of an execution's live sandbox (undefined if none). */
  sandboxId(executionId) {
    const e = this.live.get(executionId);
    return e && e.sandbox ? e.sandbox.id : undefined;
  }
}

function errorFromResult(r) {
  const e = r.error || {};
  return new AirlockError({ klass: e.class || 'internal', retryable: e.retryable, message: e.message || `status ${r.status}`, fix: e.fix, field: e.field, stage: e.stage });
}

/** resultOf maps an airlock Result onto ADK's result, keeping the status. */
function resultOf(r, timeoutSeconds, outputFiles, notes = []) {
  let stdout = decode(r.stdout, r.stdout_encoding);
  let stderr = decode(r.stderr, r.stderr_encoding);
  if (r.stdout_truncated) stdout += '\nairlock: stdout was truncated at the output limit.';
  if (r.stderr_truncated) stderr += '\nairlock: stderr was truncated at the output limit.';
  const line = statusLine(r, timeoutSeconds);
  if (line) stderr += (stderr && !stderr.endsWith('\n') ? '\n' : '') + line;
  if (notes.length) stdout += (stdout && !stdout.endsWith('\n') ? '\n' : '') + notes.join('\n');
  const out = { stdout, stderr, outputFiles, status: r.status, exitCode: r.exit_code };
  if (r.signal) out.signal = r.signal;
  if (r.seccomp_syscall) out.seccompSyscall = r.seccomp_syscall;
  return out;
}

function decode(s, enc) {
  if (!s) return '';
  return enc === 'base64' ? Buffer.from(s, 'base64').toString('utf8') : s;
}

/** Live is one live sandbox of an execution id. */
class Live {
  static async create(ex, executionId) {
    const body = { idle_timeout: `${ex.idleTimeoutSeconds}s`, metadata: { adk_execution_id: executionId } };
    if (Object.keys(ex.policy).length) body.policy = ex.policy;
    if (ex.env) body.env = ex.env;
    const info = await ex.client.json('POST', '/v1/sandboxes', body);
    const live = new Live(ex, info.id);
    // The served timeout bounds a block when timeoutSeconds is not set.
    live.servedTimeoutSeconds = goDuration(info.policy && info.policy.timeout) || 30;
    return live;
  }

  constructor(ex, id) {
    this.ex = ex;
    this.client = ex.client;
    this.id = id;
    this.path = `/v1/sandboxes/${encodeURIComponent(id)}`;
    this.nonce = randomBytes(16).toString('hex');
    this.driver = null; // {pid, n, out, err}: the Python interpreter, once started
    this.uploaded = new Map(); // input file name -> bytes last written
    this.seen = new Map(); // workspace path -> "size mtime" after the last call
  }

  async close() {
    try {
      await this.client.request('DELETE', this.path);
    } catch { /* the server is gone: so is the sandbox */ }
  }

  async run(job) {
    await this.syncInputs(job.inputs);
    let out;
    if (job.lang === 'python') out = await this.runPython(job);
    else out = await this.runProcess(job);
    out.outputFiles = await this.changedFiles(out.notes);
    return out;
  }

  /** syncInputs writes the input files that are new or changed since the last call. */
  async syncInputs(inputs) {
    let wrote = false;
    for (const f of inputs) {
      const bytes = bytesOf(f);
      const last = this.uploaded.get(f.name);
      if (last && last.equals(bytes)) continue;
      const res = await this.client.request('PUT', `${this.path}/files/${encodePath(f.name)}`, { raw: bytes });
      if (res.status >= 300) throw errorOfRes(res);
      this.uploaded.set(f.name, bytes);
      wrote = true;
    }
    // What was written is not output of the next block.
    if (wrote) await this.changedFiles(null);
  }

  /** runProcess runs a non-Python block as one foreground process of the sandbox. */
  async runProcess(job) {
    const body = { language: job.lang, code: job.code, argv: job.args };
    if (job.timeoutSeconds) body.timeout = `${job.timeoutSeconds}s`;
    const r = await this.ex.busy(() => this.client.json('POST', `${this.path}/processes`, body));
    const out = resultOf(r, job.timeoutSeconds, []);
    out.notes = [];
    return out;
  }

  async startDriver() {
    const body = {
      argv: ['python3', '-I', '-u', '-c', DRIVER, this.nonce],
      stdin_open: true, background: true, tag: 'adk-python-driver',
    };
    const info = await this.ex.busy(() => this.client.json('POST', `${this.path}/processes`, body));
    this.driver = { pid: info.pid, n: 0, out: 0, err: 0 };
  }

  /** runPython sends the block to the session's interpreter and reads its output up to the block's END. */
  async runPython(job) {
    const notes = [];
    if (!this.driver) await this.startDriver();
    const d = this.driver;
    const n = ++d.n;
    const proc = `${this.path}/processes/${d.pid}`;
    const msg = { data: JSON.stringify({ n, code: job.code, argv: job.args }) + '\n' };
    try {
      await this.client.json('POST', `${proc}/stdin`, msg);
    } catch (e) {
      // The interpreter ended between blocks (a process the last block
      // left behind used up the memory, say): unless the sandbox itself
      // is gone (404 on it: runLiveNow starts a new one), start a new
      // interpreter and say so.
      if (!(e instanceof AirlockError)) throw e;
      const sb = await this.client.request('GET', this.path);
      if (sb.status === 404) throw errorOfRes(sb);
      let state = '';
      try { state = JSON.parse(sb.body.toString('utf8')).state; } catch { /* not JSON */ }
      if (state === 'closed') throw new AirlockError({ klass: 'invalid', httpStatus: 404, message: `sandbox ${this.id} is closed` });
      this.driver = null;
      const out = await this.runPython(job);
      out.notes.unshift('airlock: the Python interpreter of this session had ended since the last block: variables set by earlier blocks are gone (files in /workspace are kept).');
      return out;
    }
    const mark = Buffer.from(`\x1eairlock-end:${this.nonce}:${n}:`);
    const got = { stdout: [], stderr: [] };
    const len = { stdout: 0, stderr: 0 };
    const end = { stdout: -1, stderr: -1 };
    let code = 0;
    let ended = null; // the process's result, when it ended
    const ac = new AbortController();
    let timedOut = false;
    const limit = job.timeoutSeconds || this.servedTimeoutSeconds;
    const timer = setTimeout(() => { timedOut = true; ac.abort(); }, limit * 1000);
    const find = (s) => {
      const buf = Buffer.concat(got[s]);
      const i = buf.indexOf(mark);
      if (i < 0) return false;
      const nl = buf.indexOf(0x0a, i + mark.length);
      if (nl < 0) return false;
      end[s] = i;
      if (s === 'stdout') code = Number(buf.subarray(i + mark.length, nl).toString());
      len[s] = nl + 1; // what the next block's read starts after
      got[s] = [buf];
      return true;
    };
    try {
      await this.client.stream(`${proc}/output?follow=1&stdout_offset=${d.out}&stderr_offset=${d.err}`, (line) => {
        if (line.result) { ended = line.result; return true; }
        for (const s of ['stdout', 'stderr']) {
          if (line[s] === undefined) continue;
          got[s].push(Buffer.from(line[s], line.encoding === 'base64' ? 'base64' : 'utf8'));
          if (end[s] < 0) find(s);
        }
        return end.stdout >= 0 && end.stderr >= 0;
      }, { signal: ac.signal });
    } catch (e) {
      // No telling where the block is: end this interpreter (a sandbox
      // that is gone is runLiveNow's), so that no later block reads its output.
      this.driver = null;
      await this.client.request('POST', `${proc}/signal`, { json: { signal: 'KILL' } }).catch(() => {});
      throw e;
    } finally {
      clearTimeout(timer);
    }
    const text = (s) => {
      const buf = Buffer.concat(got[s]);
      return (end[s] >= 0 ? buf.subarray(0, end[s]) : buf).toString('utf8');
    };
    if (end.stdout >= 0 && end.stderr >= 0) {
      d.out += len.stdout;
      d.err += len.stderr;
      const r = { status: code === 0 ? 'ok' : 'exited', exit_code: code, stdout: text('stdout'), stderr: text('stderr') };
      const out = resultOf(r, job.timeoutSeconds, []);
      out.notes = notes;
      return out;
    }
    // The block did not finish: it ran out of time (kill the
    // interpreter), or it ended the interpreter itself.
    this.driver = null;
    let r;
    if (timedOut) {
      await this.client.request('POST', `${proc}/signal`, { json: { signal: 'KILL' } }).catch(() => {});
      r = { status: 'timeout', exit_code: 137, signal: 'SIGKILL', enforced: { timeout: `${limit}s` } };
    } else {
      const info = ended || (await this.client.json('GET', proc).catch(() => ({})));
      r = { status: info.status || 'error', exit_code: info.exit_code ?? -1, signal: info.signal || '', seccomp_syscall: info.seccomp_syscall || '', enforced: info.enforced };
    }
    r.stdout = text('stdout');
    r.stderr = text('stderr');
    const out = resultOf(r, job.timeoutSeconds, []);
    out.stderr += '\nairlock: the Python interpreter of this session ended: variables set by earlier blocks are gone (files in /workspace are kept); the next block starts a new interpreter.';
    out.notes = notes;
    return out;
  }

  /**
   * changedFiles lists /workspace (path, size, mtime: one find in the
   * sandbox) and returns the files created or changed since the last
   * listing, downloaded. With notes null it only takes the listing.
   */
  async changedFiles(notes) {
    const body = { argv: ['find', '.', '-xdev', '-type', 'f', '-printf', '%s %T@ %P\\0'], timeout: '10s' };
    const r = await this.client.json('POST', `${this.path}/processes`, body);
    if (r.status !== 'ok') throw new AirlockError({ klass: 'internal', retryable: false, message: `listing /workspace failed: ${r.status} ${r.stderr || ''}` });
    const now = new Map();
    for (const rec of decode(r.stdout, r.stdout_encoding).split('\0')) {
      if (!rec) continue;
      const a = rec.indexOf(' ');
      const b = rec.indexOf(' ', a + 1);
      now.set(rec.slice(b + 1), rec.slice(0, b));
    }
    const changed = [];
    for (const [p, stamp] of now) if (this.seen.get(p) !== stamp) changed.push(p);
    this.seen = now;
    if (!notes) return [];
    const out = [];
    for (const p of changed.sort()) {
      const size = Number(now.get(p).split(' ')[0]);
      if (size > this.ex.maxOutputFileBytes) { notes.push(`airlock: ${p} (${size} bytes) is larger than maxOutputFileBytes; it was not returned.`); continue; }
      const res = await this.client.request('GET', `${this.path}/files/${encodePath(p)}`);
      if (res.status === 404) continue; // gone again
      if (res.status >= 300) throw errorOfRes(res);
      out.push(outputFile(p, res.body));
    }
    return out;
  }
}

/** goDuration reads a Go duration ("1m30s", "500ms") or a number of seconds; 0 if neither. */
function goDuration(v) {
  if (typeof v === 'number') return v;
  if (typeof v !== 'string') return 0;
  const units = { h: 3600, m: 60, s: 1, ms: 1e-3, us: 1e-6, 'µs': 1e-6, ns: 1e-9 };
  let total = 0;
  let rest = v;
  const re = /^([0-9.]+)(h|ms|m|s|us|µs|ns)/;
  while (rest) {
    const m = re.exec(rest);
    if (!m) return 0;
    total += Number(m[1]) * units[m[2]];
    rest = rest.slice(m[0].length);
  }
  return total;
}

function encodePath(p) {
  return p.split('/').map(encodeURIComponent).join('/');
}
