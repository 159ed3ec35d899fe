"""A client for airlock serve: the Python standard library only, one module.

    from airlock_client import Client
    c = Client("unix:/run/airlock.sock")           # or Client("http://127.0.0.1:8080", token="...")
    r = c.exec("python", "print(6*7)")
    r["status"], r["stdout"]                        # ('ok', '42\\n')

Every method returns the server's JSON (the result object of `airlock run
--json`, with "files" for exec). An error response raises AirlockError,
whose `retryable` says whether trying again can help.
"""

import base64
import http.client
import json
import socket
import urllib.parse

__all__ = ["Client", "Session", "AirlockError"]


class AirlockError(Exception):
    """An error response: class ("invalid", "unsupported", "unavailable",
    "internal"), retryable, field, message, fix, the HTTP status, and the
    library's result when the server returned one."""

    def __init__(self, status, info, result=None):
        self.status = status
        self.cls = info.get("class", "internal")
        self.retryable = bool(info.get("retryable", False))
        self.field = info.get("field", "")
        self.message = info.get("message", "")
        self.fix = info.get("fix", "")
        self.result = result
        super().__init__("airlock serve: %d %s: %s" % (status, self.cls, self.message))


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout):
        super().__init__("airlock", timeout=timeout)
        self._path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self._path)
        self.sock = s


def _b64(data):
    if isinstance(data, str):
        data = data.encode()
    return base64.b64encode(data).decode("ascii")


class Client:
    """A client for one server: addr is "unix:/path/to/airlock.sock" or an
    http:// URL; token is sent as a bearer token (TCP listeners need it)."""

    def __init__(self, addr, token=None, timeout=300):
        self.token = token
        self.timeout = timeout
        if addr.startswith("unix:"):
            self._unix, self._host, self._port = addr[len("unix:"):], None, None
        else:
            u = urllib.parse.urlsplit(addr)
            if u.scheme != "http" or not u.hostname:
                raise ValueError("addr: want unix:PATH or http://HOST:PORT, got %r" % addr)
            self._unix, self._host, self._port = None, u.hostname, u.port or 80

    def _conn(self):
        if self._unix is not None:
            return _UnixConnection(self._unix, self.timeout)
        return http.client.HTTPConnection(self._host, self._port, timeout=self.timeout)

    def _request(self, method, path, body=None, headers=None, raw=False):
        h = dict(headers or {})
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        if body is not None and not raw:
            body = json.dumps(body).encode()
            h["Content-Type"] = "application/json"
        conn = self._conn()
        try:
            conn.request(method, path, body=body, headers=h)
            resp = conn.getresponse()
            data = resp.read()
        finally:
            conn.close()
        if resp.status // 100 != 2:
            _raise(resp.status, data)
        return resp.status, data

    def _stream(self, path, body, on_output):
        h = {"Content-Type": "application/json", "Accept": "application/x-ndjson"}
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        conn = self._conn()
        try:
            conn.request("POST", path, body=json.dumps(body).encode(), headers=h)
            resp = conn.getresponse()
            if resp.status != 200:
                _raise(resp.status, resp.read())
            for line in resp:
                msg = json.loads(line)
                for name in ("stdout", "stderr"):
                    if name in msg:
                        data = msg[name]
                        if msg.get("encoding") == "base64":
                            data = base64.b64decode(data)
                        else:
                            data = data.encode()
                        on_output(name, data)
                if "error" in msg:
                    raise AirlockError(resp.status, msg["error"], msg.get("result"))
                if "result" in msg:
                    return msg["result"]
        finally:
            conn.close()
        raise AirlockError(0, {"class": "internal", "message": "the stream ended without a result"})

    def _run(self, path, body, on_output):
        if on_output is not None:
            return self._stream(path, body, on_output)
        return json.loads(self._request("POST", path, body)[1])

    def run(self, argv, stdin=None, env=None, policy=None, on_output=None):
        """Run argv. policy may tighten the server's limits: timeout, cpu_time,
        memory, pids, cpus, file_size, open_files, max_output, net. With
        on_output(stream_name, bytes) the output streams as it is written."""
        return self._run("/v1/run", _body({"argv": list(argv)}, stdin, env, policy), on_output)

    def exec(self, language, code, args=None, stdin=None, input=None, files=None, env=None, policy=None, on_output=None):
        """Run code in an installed language. files maps names (relative to
        /workspace) to str or bytes; input is any JSON value, given to the
        program as /workspace/input.json ($AIRLOCK_INPUT). The result's
        "files" are what the program left in /workspace (data in base64)."""
        return self._run("/v1/exec", _exec_body(language, code, args, stdin, input, files, env, policy), on_output)

    def capabilities(self):
        return json.loads(self._request("GET", "/v1/capabilities")[1])

    def health(self):
        return json.loads(self._request("GET", "/healthz")[1])

    def session(self, env=None, policy=None, idle_timeout=None):
        """Open a session: a /workspace kept across runs. Use it as a context
        manager, or close() it."""
        body = {}
        if env:
            body["env"] = env
        if policy:
            body["policy"] = policy
        if idle_timeout is not None:
            body["idle_timeout"] = idle_timeout
        info = json.loads(self._request("POST", "/v1/sessions", body)[1])
        return Session(self, info["id"])

    def sessions(self):
        return json.loads(self._request("GET", "/v1/sessions")[1])


class Session:
    """A server session. Its runs share /workspace, one at a time."""

    def __init__(self, client, id):
        self.client, self.id = client, id
        self._path = "/v1/sessions/" + urllib.parse.quote(id, safe="")

    def run(self, argv, stdin=None, on_output=None):
        return self.client._run(self._path + "/run", _body({"argv": list(argv)}, stdin, None, None), on_output)

    def exec(self, language, code, args=None, stdin=None, input=None, files=None, on_output=None):
        return self.client._run(self._path + "/exec", _exec_body(language, code, args, stdin, input, files, None, None), on_output)

    def upload(self, name, data):
        if isinstance(data, str):
            data = data.encode()
        self.client._request("PUT", self._path + "/files/" + urllib.parse.quote(name), data, raw=True)

    def download(self, name):
        return self.client._request("GET", self._path + "/files/" + urllib.parse.quote(name))[1]

    def files(self):
        return json.loads(self.client._request("GET", self._path + "/files")[1])

    def close(self):
        self.client._request("DELETE", self._path)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _body(body, stdin, env, policy):
    if stdin is not None:
        body["stdin"], body["stdin_encoding"] = _b64(stdin), "base64"
    if env:
        body["env"] = env
    if policy:
        body["policy"] = policy
    return body


def _exec_body(language, code, args, stdin, input, files, env, policy):
    body = {"language": language, "code": code}
    if args:
        body["args"] = list(args)
    if input is not None:
        body["input"] = input
    if files:
        body["files"] = [{"name": n, "content": _b64(d), "encoding": "base64"} for n, d in files.items()]
    return _body(body, stdin, env, policy)


def _raise(status, data):
    try:
        doc = json.loads(data)
        info = doc.get("error") if isinstance(doc, dict) else None
    except ValueError:
        doc, info = None, None
    if not isinstance(info, dict):
        info = {"class": "internal", "message": data.decode(errors="replace").strip()}
    raise AirlockError(status, info, doc.get("result") if isinstance(doc, dict) else None)
