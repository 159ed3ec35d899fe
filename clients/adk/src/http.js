// The HTTP side: requests to airlock serve over a unix socket or TCP,
// and its error bodies turned into AirlockError (class, retryable, fix).
import http from 'node:http';

/**
 * An error airlock serve answered (or a failure to reach it). `klass` is
 * the server's error class: invalid (fix the request), unsupported (this
 * host cannot enforce what was asked), unavailable (busy or transient: a
 * retry may help), internal. `retryable` is the server's own word on it.
 */
export class AirlockError extends Error {
  constructor({ klass, retryable, message, fix, field, stage, httpStatus, retryAfterSeconds }) {
    super(message);
    this.name = 'AirlockError';
    this.klass = klass;
    this.retryable = Boolean(retryable);
    this.fix = fix || '';
    this.field = field || '';
    this.stage = stage || '';
    this.httpStatus = httpStatus || 0;
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/**
 * parseURL reads `unix:PATH` or `http://HOST:PORT` into node:http options.
 * Anything else is refused here, before any request.
 */
export function parseURL(url) {
  if (typeof url !== 'string' || url === '') {
    throw new TypeError('AirlockCodeExecutor: url is required: "unix:PATH" or "http://HOST:PORT"');
  }
  if (url.startsWith('unix:')) {
    const socketPath = url.slice('unix:'.length);
    if (!socketPath.startsWith('/')) {
      throw new TypeError(`AirlockCodeExecutor: url ${JSON.stringify(url)}: a unix socket needs an absolute path (unix:/run/airlock.sock)`);
    }
    return { socketPath, host: 'localhost' };
  }
  let u;
  try {
    u = new URL(url);
  } catch {
    throw new TypeError(`AirlockCodeExecutor: url ${JSON.stringify(url)} is neither "unix:PATH" nor "http://HOST:PORT"`);
  }
  if (u.protocol !== 'http:' || u.pathname !== '/' || u.search || u.hash || u.username) {
    throw new TypeError(`AirlockCodeExecutor: url ${JSON.stringify(url)}: only http://HOST:PORT (no path, no TLS: airlock serve speaks plain HTTP; put TLS in front)`);
  }
  return { hostname: u.hostname.replace(/^\[|\]$/g, ''), port: Number(u.port || 80), host: u.host };
}

/** Client speaks airlock serve's JSON API. One per executor. */
export class Client {
  constructor({ url, token }) {
    this.target = parseURL(url);
    this.url = url;
    this.token = token || '';
    this.agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
  }

  options(method, path, headers) {
    const h = { Host: this.target.host, ...headers };
    if (this.token) h.Authorization = `Bearer ${this.token}`;
    const o = { method, path, headers: h, agent: this.agent };
    if (this.target.socketPath) o.socketPath = this.target.socketPath;
    else { o.hostname = this.target.hostname; o.port = this.target.port; }
    return o;
  }

  /**
   * request sends one request and resolves {status, headers, body (Buffer)};
   * it rejects only with an AirlockError (unreachable server: unavailable).
   */
  request(method, path, { json, raw, headers = {}, signal } = {}) {
    let payload;
    if (json !== undefined) {
      payload = Buffer.from(JSON.stringify(json));
      headers = { 'Content-Type': 'application/json', ...headers };
    } else if (raw !== undefined) {
      payload = raw;
      headers = { 'Content-Type': 'application/octet-stream', ...headers };
    }
    if (payload) headers['Content-Length'] = String(payload.length);
    return new Promise((resolve, reject) => {
      const req = http.request(this.options(method, path, headers), (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) }));
        res.on('error', (e) => reject(this.unreachable(e)));
      });
      req.on('error', (e) => reject(this.unreachable(e)));
      if (signal) {
        if (signal.aborted) req.destroy(new Error('aborted'));
        else signal.addEventListener('abort', () => req.destroy(new Error('aborted')), { once: true });
      }
      req.end(payload);
    });
  }

  /**
   * stream sends a GET whose answer is NDJSON and calls onLine(obj) for
   * each line until the answer ends, onLine returns true (done: the
   * request is dropped), or signal aborts. Resolves 'end' | 'done' |
   * 'aborted'.
   */
  stream(path, onLine, { signal } = {}) {
    return new Promise((resolve, reject) => {
      let settled = false;
      const finish = (how) => { if (!settled) { settled = true; resolve(how); } };
      const req = http.request(this.options('GET', path, { Accept: 'application/x-ndjson' }), (res) => {
        if (res.statusCode !== 200) {
          const chunks = [];
          res.on('data', (c) => chunks.push(c));
          res.on('end', () => { settled = true; reject(errorOf({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) })); });
          return;
        }
        let buf = '';
        res.setEncoding('utf8');
        res.on('data', (s) => {
          buf += s;
          let i;
          while (!settled && (i = buf.indexOf('\n')) >= 0) {
            const line = buf.slice(0, i);
            buf = buf.slice(i + 1);
            if (!line.trim()) continue;
            let obj;
            try { obj = JSON.parse(line); } catch { continue; }
            if (onLine(obj) === true) { finish('done'); req.destroy(); return; }
          }
        });
        res.on('end', () => finish('end'));
        res.on('error', () => finish('aborted'));
      });
      req.on('error', (e) => { if (!settled) { settled = true; if (signal && signal.aborted) resolve('aborted'); else reject(this.unreachable(e)); } });
      if (signal) {
        const stop = () => { finish('aborted'); req.destroy(); };
        if (signal.aborted) stop(); else signal.addEventListener('abort', stop, { once: true });
      }
      req.end();
    });
  }

  unreachable(e) {
    return new AirlockError({
      klass: 'unavailable', retryable: true, stage: 'connect',
      message: `airlock serve at ${this.url} did not answer: ${e.code || e.message}`,
      fix: 'start `airlock serve` (or check the url and the socket\'s permissions)',
    });
  }

  /** json does a request and returns the parsed body of a 2xx, else throws the server's error. */
  async json(method, path, body, opts = {}) {
    const res = await this.request(method, path, { json: body, ...opts });
    if (res.status >= 200 && res.status < 300) {
      if (res.body.length === 0) return {};
      return JSON.parse(res.body.toString('utf8'));
    }
    throw errorOf(res);
  }

  close() { this.agent.destroy(); }
}

/** errorOf turns a non-2xx answer into an AirlockError, keeping the server's words. */
export function errorOf(res) {
  let e = {};
  let result;
  try {
    const parsed = JSON.parse(res.body.toString('utf8'));
    e = parsed.error || {};
    result = parsed.result;
  } catch { /* not JSON: a proxy's page, say */ }
  const ra = Number(res.headers && res.headers['retry-after']);
  const klass = e.class || (res.status === 429 || res.status === 503 ? 'unavailable' : res.status >= 500 ? 'internal' : 'invalid');
  const err = new AirlockError({
    klass,
    retryable: e.retryable !== undefined ? e.retryable : klass === 'unavailable',
    message: e.message || `airlock serve answered HTTP ${res.status}`,
    fix: e.fix, field: e.field, stage: e.stage, httpStatus: res.status,
    retryAfterSeconds: Number.isFinite(ra) && ra >= 0 ? ra : undefined,
  });
  if (result) err.result = result;
  return err;
}
