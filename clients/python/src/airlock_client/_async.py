"""The asyncio client: HTTP/1.1 over asyncio streams, standard library
only. One connection per call (Connection: close), as the blocking
client."""

from __future__ import annotations

import asyncio
import ssl
from typing import Any, AsyncIterator, Awaitable, Dict, List, Mapping, Optional, Sequence, Tuple, TypeVar, Union

from . import _errors, _wire
from ._errors import JSON
from ._wire import Data, OnOutput, Policy, PortResponse

T = TypeVar("T")

_MAX_HEADER = 64 * 1024


class _Response:
    def __init__(self, client: "AsyncClient", status: int, headers: Dict[str, str],
                 reader: asyncio.StreamReader, writer: asyncio.StreamWriter, method: str) -> None:
        self.client, self.status, self.headers = client, status, headers
        self.reader, self.writer, self.method = reader, writer, method

    async def chunks(self) -> AsyncIterator[bytes]:
        """The body's pieces: chunked, Content-Length or up to EOF."""
        if self.method == "HEAD" or self.status in (204, 304) or 100 <= self.status < 200:
            return
        t = self.client._io
        if "chunked" in self.headers.get("transfer-encoding", "").lower():
            while True:
                line = await t(self.reader.readline())
                try:
                    size = int(line.split(b";", 1)[0].strip(), 16)
                except ValueError:
                    raise _errors.ForeignResponseError(self.status, line, "a broken chunked body") from None
                if size == 0:
                    while (await t(self.reader.readline())).strip():
                        pass  # trailers
                    return
                yield await t(self.reader.readexactly(size))
                await t(self.reader.readexactly(2))
        elif "content-length" in self.headers:
            n = int(self.headers["content-length"])
            if n:
                yield await t(self.reader.readexactly(n))
        else:
            while True:
                b = await t(self.reader.read(65536))
                if not b:
                    return
                yield b

    async def read(self) -> bytes:
        return b"".join([c async for c in self.chunks()])

    async def lines(self) -> AsyncIterator[bytes]:
        buf = b""
        async for c in self.chunks():
            buf += c
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                yield line
        if buf:
            yield buf

    def close(self) -> None:
        self.writer.close()


class AsyncClient:
    """The asyncio client: the same calls as Client, each a coroutine, the
    same addresses, TLS options and errors (every failure an AirlockError;
    the client's timeout a ClientTimeoutError, also a TimeoutError).
    timeout is the seconds any one network operation (connect, a read)
    may take; None = no limit."""

    def __init__(self, addr: str, token: Optional[str] = None, timeout: Optional[float] = 300.0,
                 ca_file: Optional[str] = None, ssl_context: Optional[ssl.SSLContext] = None) -> None:
        self.addr = _wire.Address(addr)
        self.token = token
        self.timeout = timeout
        self._tls = _wire.tls_context(self.addr, ca_file, ssl_context)

    async def _io(self, aw: Awaitable[T]) -> T:
        try:
            return await asyncio.wait_for(aw, self.timeout)
        except asyncio.TimeoutError as e:
            raise _errors.transport(TimeoutError(str(e)), self.addr.text) from None
        except asyncio.IncompleteReadError as e:
            raise _errors.ConnectError("%s: the connection closed mid-answer (%d of %s bytes)" % (
                self.addr.text, len(e.partial), e.expected)) from e
        except _errors.AirlockError:
            raise
        except (OSError, EOFError, ValueError) as e:
            raise _errors.transport(e, self.addr.text) from e

    async def _send(self, method: str, path: str, body: Any = None, raw: bool = False,
                    extra: Optional[Mapping[str, str]] = None) -> _Response:
        data, content = _wire.encode(body, raw)
        h = _wire.headers(self.token, self.addr, content)
        h.update(extra or {})
        h["Connection"] = "close"
        if data is not None or method in ("POST", "PUT", "PATCH"):
            h["Content-Length"] = str(len(data or b""))
        a = self.addr
        if a.unix is not None:
            reader, writer = await self._io(asyncio.open_unix_connection(a.unix, limit=_MAX_HEADER))
        else:
            reader, writer = await self._io(asyncio.open_connection(
                a.host, a.port, ssl=self._tls, server_hostname=a.host if self._tls else None, limit=_MAX_HEADER))
        try:
            head = "%s %s HTTP/1.1\r\n" % (method, path) + "".join("%s: %s\r\n" % kv for kv in h.items()) + "\r\n"
            writer.write(head.encode("latin-1") + (data or b""))
            await self._io(writer.drain())
            line = await self._io(reader.readline())
            if not line:
                raise _errors.ConnectError("%s closed the connection without an answer" % a.text)
            parts = line.decode("latin-1").split(None, 2)
            if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
                raise _errors.ForeignResponseError(0, line, "%s answered what is not HTTP" % a.text, fix="check the address (http:// or https://)")
            status = int(parts[1])
            hdrs: Dict[str, str] = {}
            while True:
                hl = await self._io(reader.readline())
                if not hl:
                    raise _errors.ConnectError("%s: the connection closed in the answer's headers" % a.text)
                if hl in (b"\r\n", b"\n"):
                    break
                k, _, v = hl.decode("latin-1").partition(":")
                hdrs[k.strip().lower()] = v.strip()
            return _Response(self, status, hdrs, reader, writer, method)
        except BaseException:
            writer.close()
            raise

    async def _exchange(self, method: str, path: str, body: Any = None, raw: bool = False,
                        extra: Optional[Mapping[str, str]] = None) -> Tuple[int, Dict[str, str], bytes]:
        resp = await self._send(method, path, body, raw, extra)
        try:
            return resp.status, resp.headers, await resp.read()
        finally:
            resp.close()

    async def _request(self, method: str, path: str, body: Any = None, raw: bool = False) -> bytes:
        status, hdrs, data = await self._exchange(method, path, body, raw)
        _wire.check(status, hdrs, data)
        return data

    async def _json(self, method: str, path: str, body: Any = None) -> Any:
        status, hdrs, data = await self._exchange(method, path, body)
        _wire.check(status, hdrs, data)
        return _wire.decode_json(status, data)

    async def _stream(self, path: str, body: JSON, on_output: OnOutput) -> JSON:
        resp = await self._send("POST", path, body, extra={"Accept": "application/x-ndjson"})
        try:
            if resp.status != 200:
                data = await resp.read()
                _wire.check(resp.status, resp.headers, data)
                raise _errors.from_response(resp.status, resp.headers, b"")
            sr = _wire.StreamReader(resp.status, on_output)
            async for line in resp.lines():
                if sr.line(line):
                    break
            return sr.end()
        finally:
            resp.close()

    async def _run(self, path: str, body: JSON, on_output: Optional[OnOutput]) -> JSON:
        if on_output is not None:
            return await self._stream(path, body, on_output)
        out: JSON = await self._json("POST", path, body)
        return out

    async def run(self, argv: Sequence[str], stdin: Optional[Data] = None, env: Optional[Mapping[str, str]] = None,
                  policy: Optional[Policy] = None, on_output: Optional[OnOutput] = None) -> JSON:
        """Client.run."""
        return await self._run("/v1/run", _wire.run_body(argv, stdin, env, policy), on_output)

    async def exec(self, language: str, code: str, args: Optional[Sequence[str]] = None, stdin: Optional[Data] = None,
                   input: Any = None, files: Optional[Mapping[str, Data]] = None, env: Optional[Mapping[str, str]] = None,
                   policy: Optional[Policy] = None, on_output: Optional[OnOutput] = None) -> JSON:
        """Client.exec."""
        return await self._run("/v1/exec", _wire.exec_body(language, code, args, stdin, input, files, env, policy), on_output)

    async def capabilities(self) -> JSON:
        out: JSON = await self._json("GET", "/v1/capabilities")
        return out

    async def health(self) -> JSON:
        out: JSON = await self._json("GET", "/healthz")
        return out

    async def session(self, env: Optional[Mapping[str, str]] = None, policy: Optional[Policy] = None,
                      idle_timeout: Optional[str] = None) -> "AsyncSession":
        """Client.session: use it with `async with`, or await close()."""
        info = await self._json("POST", "/v1/sessions", _wire.session_body(env, policy, idle_timeout))
        return AsyncSession(self, info["id"], info)

    async def sessions(self) -> List[JSON]:
        out: List[JSON] = await self._json("GET", "/v1/sessions")
        return out

    async def create_sandbox(self, policy: Optional[Policy] = None, env: Optional[Mapping[str, str]] = None,
                             files: Optional[Mapping[str, Data]] = None, idle_timeout: Optional[str] = None,
                             timeout: Optional[str] = None, metadata: Optional[Mapping[str, str]] = None) -> "AsyncSandbox":
        """Client.create_sandbox: use it with `async with`, or await delete()."""
        body = _wire.sandbox_body(policy, env, files, idle_timeout, timeout, metadata)
        info = await self._json("POST", "/v1/sandboxes", body)
        return AsyncSandbox(self, info["id"], info)

    async def sandboxes(self) -> List[JSON]:
        out: List[JSON] = await self._json("GET", "/v1/sandboxes")
        return out

    def sandbox(self, id: str) -> "AsyncSandbox":
        return AsyncSandbox(self, id, None)


class AsyncSession:
    """Session, for AsyncClient."""

    def __init__(self, client: AsyncClient, id: str, info: Optional[JSON] = None) -> None:
        self.client, self.id, self.info = client, id, info or {"id": id}
        self._path = "/v1/sessions/" + _wire.quote(id)

    async def run(self, argv: Sequence[str], stdin: Optional[Data] = None, on_output: Optional[OnOutput] = None) -> JSON:
        return await self.client._run(self._path + "/run", _wire.run_body(argv, stdin, None, None), on_output)

    async def exec(self, language: str, code: str, args: Optional[Sequence[str]] = None, stdin: Optional[Data] = None,
                   input: Any = None, files: Optional[Mapping[str, Data]] = None, on_output: Optional[OnOutput] = None) -> JSON:
        return await self.client._run(self._path + "/exec", _wire.exec_body(language, code, args, stdin, input, files, None, None), on_output)

    async def upload(self, name: str, data: Data) -> None:
        await self.client._request("PUT", self._path + "/files/" + _wire.file_path(name), data, raw=True)

    async def download(self, name: str) -> bytes:
        return await self.client._request("GET", self._path + "/files/" + _wire.file_path(name))

    async def files(self) -> Any:
        return await self.client._json("GET", self._path + "/files")

    async def close(self) -> None:
        await self.client._request("DELETE", self._path)

    async def __aenter__(self) -> "AsyncSession":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


class AsyncSandbox:
    """Sandbox, for AsyncClient."""

    def __init__(self, client: AsyncClient, id: str, info: Optional[JSON]) -> None:
        self.client, self.id, self.info = client, id, info
        self._path = "/v1/sandboxes/" + _wire.quote(id)

    async def describe(self) -> JSON:
        out: JSON = await self.client._json("GET", self._path)
        return out

    async def delete(self) -> None:
        await self.client._request("DELETE", self._path)

    async def run(self, argv: Optional[Sequence[str]] = None, command: Optional[str] = None, env: Optional[Mapping[str, str]] = None,
                  cwd: Optional[str] = None, stdin: Optional[Data] = None, timeout: Optional[str] = None,
                  on_output: Optional[OnOutput] = None) -> JSON:
        body = _wire.process_body(argv, command, env, cwd, stdin, False, timeout, None, False)
        return await self.client._run(self._path + "/processes", body, on_output)

    async def start(self, argv: Optional[Sequence[str]] = None, command: Optional[str] = None, env: Optional[Mapping[str, str]] = None,
                    cwd: Optional[str] = None, stdin_open: bool = False, timeout: Optional[str] = None,
                    tag: Optional[str] = None) -> "AsyncProcess":
        body = _wire.process_body(argv, command, env, cwd, None, stdin_open, timeout, tag, True)
        info = await self.client._json("POST", self._path + "/processes", body)
        return AsyncProcess(self, int(info["pid"]), info)

    async def processes(self) -> List[JSON]:
        out: List[JSON] = await self.client._json("GET", self._path + "/processes")
        return out

    def process(self, pid: int) -> "AsyncProcess":
        return AsyncProcess(self, pid, None)

    async def files(self) -> Any:
        return await self.client._json("GET", self._path + "/files")

    async def read_file(self, path: str) -> bytes:
        return await self.client._request("GET", self._path + "/files/" + _wire.file_path(path))

    async def write_file(self, path: str, data: Data) -> None:
        await self.client._request("PUT", self._path + "/files/" + _wire.file_path(path), data, raw=True)

    async def port(self, port: int, path: str = "/", method: str = "GET", body: Optional[Data] = None,
                   headers: Optional[Mapping[str, str]] = None) -> PortResponse:
        status, hdrs, data = await self.client._exchange(method, _wire.port_path(self._path, port, path),
                                                         body, raw=body is not None, extra=headers)
        return PortResponse(status, hdrs, data)

    async def __aenter__(self) -> "AsyncSandbox":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.delete()


class AsyncProcess:
    """Process, for AsyncClient."""

    def __init__(self, sandbox: AsyncSandbox, pid: int, info: Optional[JSON]) -> None:
        self.sandbox, self.pid, self.info = sandbox, pid, info
        self._path = sandbox._path + "/processes/" + str(int(pid))

    async def describe(self) -> JSON:
        out: JSON = await self.sandbox.client._json("GET", self._path)
        return out

    async def output(self, offset: Optional[int] = None, stdout_offset: Optional[int] = None,
                     stderr_offset: Optional[int] = None, stream: Optional[str] = None) -> JSON:
        out: JSON = await self.sandbox.client._json("GET", self._path + "/output" + _wire.output_query(offset, stdout_offset, stderr_offset, stream))
        return out

    async def write_stdin(self, data: Data, close: bool = False) -> None:
        await self.sandbox.client._request("POST", self._path + "/stdin", {"data": _wire.b64(data), "encoding": "base64", "close": close})

    async def signal(self, sig: Union[str, int] = "TERM") -> None:
        await self.sandbox.client._request("POST", self._path + "/signal", {"signal": sig})
