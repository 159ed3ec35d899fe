"""The blocking client (http.client)."""

from __future__ import annotations

import http.client
import json
import socket
import ssl
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from . import _errors, _wire
from ._errors import JSON
from ._wire import Data, OnOutput, Policy, PortResponse


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: Optional[float]) -> None:
        super().__init__("airlock", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.settimeout(self.timeout)
            s.connect(self._path)
        except BaseException:
            s.close()
            raise
        self.sock = s


class Client:
    """A blocking client for one airlock serve.

    addr is "unix:/path/to/airlock.sock", "http://HOST:PORT" or
    "https://HOST:PORT" (TLS with the system's CAs and host name check;
    ca_file adds a CA, ssl_context replaces the whole context). token is
    sent as a bearer token (TCP listeners need one off loopback). timeout
    is the seconds any one network operation (connect, a read) may take;
    None = no limit. Every failure raises an AirlockError.
    """

    def __init__(self, addr: str, token: Optional[str] = None, timeout: Optional[float] = 300.0,
                 ca_file: Optional[str] = None, ssl_context: Optional[ssl.SSLContext] = None) -> None:
        self.addr = _wire.Address(addr)
        self.token = token
        self.timeout = timeout
        self._tls = _wire.tls_context(self.addr, ca_file, ssl_context)

    def _conn(self) -> http.client.HTTPConnection:
        a = self.addr
        if a.unix is not None:
            return _UnixConnection(a.unix, self.timeout)
        if a.tls:
            return http.client.HTTPSConnection(a.host, a.port, timeout=self.timeout, context=self._tls)
        return http.client.HTTPConnection(a.host, a.port, timeout=self.timeout)

    def _send(self, method: str, path: str, body: Any = None, raw: bool = False,
              extra: Optional[Mapping[str, str]] = None) -> Tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
        data, content = _wire.encode(body, raw)
        h = _wire.headers(self.token, self.addr, content)
        h.update(extra or {})
        conn = self._conn()
        try:
            conn.request(method, path, body=data, headers=h)
            return conn, conn.getresponse()
        except BaseException as e:
            conn.close()
            if isinstance(e, Exception):
                raise _errors.transport(e, self.addr.text) from e
            raise

    def _exchange(self, method: str, path: str, body: Any = None, raw: bool = False,
                  extra: Optional[Mapping[str, str]] = None) -> Tuple[int, Dict[str, str], bytes]:
        conn, resp = self._send(method, path, body, raw, extra)
        try:
            data = resp.read()
        except Exception as e:
            raise _errors.transport(e, self.addr.text) from e
        finally:
            conn.close()
        return resp.status, _wire.lower(resp.getheaders()), data

    def _request(self, method: str, path: str, body: Any = None, raw: bool = False) -> bytes:
        status, hdrs, data = self._exchange(method, path, body, raw)
        _wire.check(status, hdrs, data)
        return data

    def _json(self, method: str, path: str, body: Any = None) -> Any:
        status, hdrs, data = self._exchange(method, path, body)
        _wire.check(status, hdrs, data)
        return _wire.decode_json(status, data)

    def _stream(self, path: str, body: JSON, on_output: OnOutput) -> JSON:
        conn, resp = self._send("POST", path, body, extra={"Accept": "application/x-ndjson"})
        try:
            if resp.status != 200:
                _wire.check(resp.status, _wire.lower(resp.getheaders()), resp.read())
                raise _errors.from_response(resp.status, _wire.lower(resp.getheaders()), b"")
            sr = _wire.StreamReader(resp.status, on_output)
            for line in resp:
                if sr.line(line):
                    break
            return sr.end()
        except _errors.AirlockError:
            raise
        except Exception as e:
            raise _errors.transport(e, self.addr.text) from e
        finally:
            conn.close()

    def _run(self, path: str, body: JSON, on_output: Optional[OnOutput]) -> JSON:
        if on_output is not None:
            return self._stream(path, body, on_output)
        out: JSON = self._json("POST", path, body)
        return out

    # One-shot runs.

    def run(self, argv: Sequence[str], stdin: Optional[Data] = None, env: Optional[Mapping[str, str]] = None,
            policy: Optional[Policy] = None, on_output: Optional[OnOutput] = None) -> JSON:
        """Run argv; returns the Result (`airlock run --json`'s object).
        policy may tighten the server's limits: timeout, cpu_time, memory,
        pids, cpus, file_size, open_files, max_output, net. With
        on_output(stream_name, bytes) the output streams as it is written."""
        return self._run("/v1/run", _wire.run_body(argv, stdin, env, policy), on_output)

    def exec(self, language: str, code: str, args: Optional[Sequence[str]] = None, stdin: Optional[Data] = None,
             input: Any = None, files: Optional[Mapping[str, Data]] = None, env: Optional[Mapping[str, str]] = None,
             policy: Optional[Policy] = None, on_output: Optional[OnOutput] = None) -> JSON:
        """Run code in an installed language. files maps names (relative to
        /workspace) to str or bytes; input is any JSON value, given to the
        program as /workspace/input.json ($AIRLOCK_INPUT). The result's
        "files" are what the program left in /workspace (data in base64)."""
        return self._run("/v1/exec", _wire.exec_body(language, code, args, stdin, input, files, env, policy), on_output)

    def capabilities(self) -> JSON:
        out: JSON = self._json("GET", "/v1/capabilities")
        return out

    def health(self) -> JSON:
        out: JSON = self._json("GET", "/healthz")
        return out

    # Sessions.

    def session(self, env: Optional[Mapping[str, str]] = None, policy: Optional[Policy] = None,
                idle_timeout: Optional[str] = None) -> "Session":
        """Open a session: a /workspace kept across runs. Use it as a context
        manager, or close() it."""
        info = self._json("POST", "/v1/sessions", _wire.session_body(env, policy, idle_timeout))
        return Session(self, info["id"], info)

    def sessions(self) -> List[JSON]:
        out: List[JSON] = self._json("GET", "/v1/sessions")
        return out

    # Live sandboxes (DESIGN "Live sandboxes").

    def create_sandbox(self, policy: Optional[Policy] = None, env: Optional[Mapping[str, str]] = None,
                       files: Optional[Mapping[str, Data]] = None, idle_timeout: Optional[str] = None,
                       timeout: Optional[str] = None, metadata: Optional[Mapping[str, str]] = None) -> "Sandbox":
        """Create a live sandbox: one jail that any number of processes
        enter until it is deleted, idles out (idle_timeout, "5m") or reaches
        its lifetime (timeout, "1h"). Use it as a context manager, or
        delete() it."""
        body = _wire.sandbox_body(policy, env, files, idle_timeout, timeout, metadata)
        info = self._json("POST", "/v1/sandboxes", body)
        return Sandbox(self, info["id"], info)

    def sandboxes(self) -> List[JSON]:
        """The open sandboxes of this credential."""
        out: List[JSON] = self._json("GET", "/v1/sandboxes")
        return out

    def sandbox(self, id: str) -> "Sandbox":
        """A handle on the sandbox id (no request is made)."""
        return Sandbox(self, id, None)


class Session:
    """A server session. Its runs share /workspace, one at a time."""

    def __init__(self, client: Client, id: str, info: Optional[JSON] = None) -> None:
        self.client, self.id, self.info = client, id, info or {"id": id}
        self._path = "/v1/sessions/" + _wire.quote(id)

    def run(self, argv: Sequence[str], stdin: Optional[Data] = None, on_output: Optional[OnOutput] = None) -> JSON:
        return self.client._run(self._path + "/run", _wire.run_body(argv, stdin, None, None), on_output)

    def exec(self, language: str, code: str, args: Optional[Sequence[str]] = None, stdin: Optional[Data] = None,
             input: Any = None, files: Optional[Mapping[str, Data]] = None, on_output: Optional[OnOutput] = None) -> JSON:
        return self.client._run(self._path + "/exec", _wire.exec_body(language, code, args, stdin, input, files, None, None), on_output)

    def upload(self, name: str, data: Data) -> None:
        self.client._request("PUT", self._path + "/files/" + _wire.file_path(name), data, raw=True)

    def download(self, name: str) -> bytes:
        return self.client._request("GET", self._path + "/files/" + _wire.file_path(name))

    def files(self) -> Any:
        return self.client._json("GET", self._path + "/files")

    def close(self) -> None:
        self.client._request("DELETE", self._path)

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Sandbox:
    """A live sandbox of the server (Client.create_sandbox). info is what
    the server said when it was created (None for Client.sandbox(id))."""

    def __init__(self, client: Client, id: str, info: Optional[JSON]) -> None:
        self.client, self.id, self.info = client, id, info
        self._path = "/v1/sandboxes/" + _wire.quote(id)

    def describe(self) -> JSON:
        """GET /v1/sandboxes/{id}: its state, lifetime, processes, usage."""
        out: JSON = self.client._json("GET", self._path)
        return out

    def delete(self) -> None:
        """Kill every process and remove the sandbox."""
        self.client._request("DELETE", self._path)

    def run(self, argv: Optional[Sequence[str]] = None, command: Optional[str] = None, env: Optional[Mapping[str, str]] = None,
            cwd: Optional[str] = None, stdin: Optional[Data] = None, timeout: Optional[str] = None,
            on_output: Optional[OnOutput] = None) -> JSON:
        """Run a process in the foreground (argv, or command for /bin/sh -c):
        its Result, once it ended."""
        body = _wire.process_body(argv, command, env, cwd, stdin, False, timeout, None, False)
        return self.client._run(self._path + "/processes", body, on_output)

    def start(self, argv: Optional[Sequence[str]] = None, command: Optional[str] = None, env: Optional[Mapping[str, str]] = None,
              cwd: Optional[str] = None, stdin_open: bool = False, timeout: Optional[str] = None,
              tag: Optional[str] = None) -> "Process":
        """Start a process in the background; with stdin_open its stdin
        stays open for Process.write_stdin."""
        body = _wire.process_body(argv, command, env, cwd, None, stdin_open, timeout, tag, True)
        info = self.client._json("POST", self._path + "/processes", body)
        return Process(self, int(info["pid"]), info)

    def processes(self) -> List[JSON]:
        out: List[JSON] = self.client._json("GET", self._path + "/processes")
        return out

    def process(self, pid: int) -> "Process":
        return Process(self, pid, None)

    def files(self) -> Any:
        return self.client._json("GET", self._path + "/files")

    def read_file(self, path: str) -> bytes:
        return self.client._request("GET", self._path + "/files/" + _wire.file_path(path))

    def write_file(self, path: str, data: Data) -> None:
        self.client._request("PUT", self._path + "/files/" + _wire.file_path(path), data, raw=True)

    def port(self, port: int, path: str = "/", method: str = "GET", body: Optional[Data] = None,
             headers: Optional[Mapping[str, str]] = None) -> PortResponse:
        """An HTTP request to the sandbox's own loopback port, through the
        server: the program's answer, whatever its status (PortResponse)."""
        status, hdrs, data = self.client._exchange(method, _wire.port_path(self._path, port, path),
                                                   body, raw=body is not None, extra=headers)
        return PortResponse(status, hdrs, data)

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc: object) -> None:
        self.delete()


class Process:
    """A process in a live sandbox (Sandbox.start, Sandbox.process)."""

    def __init__(self, sandbox: Sandbox, pid: int, info: Optional[JSON]) -> None:
        self.sandbox, self.pid, self.info = sandbox, pid, info
        self._path = sandbox._path + "/processes/" + str(int(pid))

    def describe(self) -> JSON:
        """Its state and, once it ended, its exit status."""
        out: JSON = self.sandbox.client._json("GET", self._path)
        return out

    def output(self, offset: Optional[int] = None, stdout_offset: Optional[int] = None,
               stderr_offset: Optional[int] = None, stream: Optional[str] = None) -> JSON:
        """Its output from a byte offset on: {"stdout": chunk, "stderr": chunk,
        "process": ...}, each chunk {data, encoding, next, dropped, eof}
        (chunk_bytes decodes one); with stream ("stdout", "stderr") that
        one chunk alone."""
        out: JSON = self.sandbox.client._json("GET", self._path + "/output" + _wire.output_query(offset, stdout_offset, stderr_offset, stream))
        return out

    def write_stdin(self, data: Data, close: bool = False) -> None:
        """Write to its stdin (started with stdin_open); close ends it."""
        self.sandbox.client._request("POST", self._path + "/stdin", {"data": _wire.b64(data), "encoding": "base64", "close": close})

    def signal(self, sig: Union[str, int] = "TERM") -> None:
        """Send a signal ("TERM", "SIGKILL", 9) to its process group."""
        self.sandbox.client._request("POST", self._path + "/signal", {"signal": sig})
