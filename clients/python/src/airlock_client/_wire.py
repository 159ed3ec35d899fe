"""What the blocking and the asyncio client share: addresses, request
bodies, paths, and the reading of answers."""

from __future__ import annotations

import base64
import json
import ssl
import urllib.parse
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from . import _errors
from ._errors import JSON, AirlockError

Data = Union[str, bytes]
OnOutput = Callable[[str, bytes], None]
Policy = Mapping[str, Any]


class Address:
    """A parsed server address: unix:PATH, http://HOST[:PORT] or https://HOST[:PORT]."""

    def __init__(self, addr: str) -> None:
        self.text = addr
        self.unix: Optional[str] = None
        self.host = "airlock"
        self.port = 0
        self.tls = False
        if addr.startswith("unix:"):
            path = addr[len("unix:"):]
            if not path:
                raise ValueError("addr: unix: needs a socket path")
            self.unix = path
            return
        u = urllib.parse.urlsplit(addr)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ValueError("addr: want unix:PATH, http://HOST:PORT or https://HOST:PORT, got %r" % addr)
        if u.path not in ("", "/") or u.query or u.fragment:
            raise ValueError("addr: %r: a server address has no path" % addr)
        self.tls = u.scheme == "https"
        self.host = u.hostname
        self.port = u.port or (443 if self.tls else 80)

    def host_header(self) -> str:
        if self.unix is not None:
            return "airlock"
        h = "[%s]" % self.host if ":" in self.host else self.host
        return h if self.port == (443 if self.tls else 80) else "%s:%d" % (h, self.port)


def tls_context(addr: Address, ca_file: Optional[str], context: Optional[ssl.SSLContext]) -> Optional[ssl.SSLContext]:
    """The TLS context of an https:// address: context, or the system's
    defaults (certificate and host name verified) with ca_file's CAs."""
    if not addr.tls:
        if ca_file or context:
            raise ValueError("ca_file and ssl_context are for https:// addresses")
        return None
    if context is not None:
        return context
    return ssl.create_default_context(cafile=ca_file)


def headers(token: Optional[str], addr: Address, extra: Optional[Mapping[str, str]] = None) -> Dict[str, str]:
    h = {"Host": addr.host_header(), "User-Agent": "airlock-client-python"}
    if token:
        h["Authorization"] = "Bearer " + token
    h.update(extra or {})
    return h


def encode(body: Any, raw: bool) -> Tuple[Optional[bytes], Dict[str, str]]:
    """The request body's bytes and content headers: JSON unless raw."""
    if body is None:
        return None, {}
    if raw:
        data = body.encode() if isinstance(body, str) else bytes(body)
        return data, {"Content-Type": "application/octet-stream"}
    return json.dumps(body).encode(), {"Content-Type": "application/json"}


def decode_json(status: int, data: bytes) -> Any:
    """A success's JSON body; ForeignResponseError when it is not JSON."""
    if not data.strip():
        return None
    try:
        return json.loads(data)
    except ValueError:
        raise _errors.ForeignResponseError(status, data, "a success whose body is not JSON", fix="check the address: it does not answer as airlock serve") from None


def check(status: int, hdrs: Mapping[str, str], data: bytes) -> None:
    if status // 100 != 2:
        raise _errors.from_response(status, hdrs, data)


class StreamReader:
    """Reads NDJSON lines of a streamed run, calling on_output; the result
    is what the last line carries."""

    def __init__(self, status: int, on_output: OnOutput) -> None:
        self.status = status
        self.on_output = on_output
        self.result: Optional[JSON] = None

    def line(self, raw: bytes) -> bool:
        """Handles one line; True once the result (or an error) came."""
        if not raw.strip():
            return False
        try:
            msg = json.loads(raw)
        except ValueError:
            raise _errors.ForeignResponseError(self.status, raw, "a stream line that is not JSON") from None
        for name in ("stdout", "stderr"):
            if name in msg:
                data = msg[name]
                chunk = base64.b64decode(data) if msg.get("encoding") == "base64" else str(data).encode()
                self.on_output(name, chunk)
        if isinstance(msg.get("error"), dict):
            res = msg.get("result")
            raise _errors.from_info(self.status, msg["error"], {}, res if isinstance(res, dict) else None)
        if isinstance(msg.get("result"), dict):
            self.result = msg["result"]
            return True
        return False

    def end(self) -> JSON:
        if self.result is None:
            raise _errors.ConnectError("the stream ended without a result (the server closed the connection)")
        return self.result


def b64(data: Data) -> str:
    if isinstance(data, str):
        data = data.encode()
    return base64.b64encode(data).decode("ascii")


def run_body(argv: Sequence[str], stdin: Optional[Data], env: Optional[Mapping[str, str]], policy: Optional[Policy]) -> JSON:
    return with_common({"argv": list(argv)}, stdin, env, policy)


def with_common(body: JSON, stdin: Optional[Data], env: Optional[Mapping[str, str]], policy: Optional[Policy]) -> JSON:
    if stdin is not None:
        body["stdin"], body["stdin_encoding"] = b64(stdin), "base64"
    if env:
        body["env"] = dict(env)
    if policy:
        body["policy"] = dict(policy)
    return body


def files_list(files: Mapping[str, Data]) -> List[JSON]:
    return [{"name": n, "content": b64(d), "encoding": "base64"} for n, d in files.items()]


def exec_body(language: str, code: str, args: Optional[Sequence[str]], stdin: Optional[Data], input: Any,
              files: Optional[Mapping[str, Data]], env: Optional[Mapping[str, str]], policy: Optional[Policy]) -> JSON:
    body: JSON = {"language": language, "code": code}
    if args:
        body["args"] = list(args)
    if input is not None:
        body["input"] = input
    if files:
        body["files"] = files_list(files)
    return with_common(body, stdin, env, policy)


def session_body(env: Optional[Mapping[str, str]], policy: Optional[Policy], idle_timeout: Optional[str]) -> JSON:
    body: JSON = {}
    if env:
        body["env"] = dict(env)
    if policy:
        body["policy"] = dict(policy)
    if idle_timeout is not None:
        body["idle_timeout"] = idle_timeout
    return body


def sandbox_body(policy: Optional[Policy], env: Optional[Mapping[str, str]], files: Optional[Mapping[str, Data]],
                 idle_timeout: Optional[str], timeout: Optional[str], metadata: Optional[Mapping[str, str]]) -> JSON:
    body = session_body(env, policy, idle_timeout)
    if files:
        body["files"] = files_list(files)
    if timeout is not None:
        body["timeout"] = timeout
    if metadata:
        body["metadata"] = dict(metadata)
    return body


def process_body(argv: Optional[Sequence[str]], command: Optional[str], env: Optional[Mapping[str, str]], cwd: Optional[str],
                 stdin: Optional[Data], stdin_open: bool, timeout: Optional[str], tag: Optional[str], background: bool) -> JSON:
    if (argv is None) == (command is None):
        raise ValueError("give exactly one of argv and command")
    body: JSON = {"argv": list(argv)} if argv is not None else {"command": command}
    if env:
        body["env"] = dict(env)
    if cwd:
        body["cwd"] = cwd
    if stdin is not None:
        body["stdin"], body["stdin_encoding"] = b64(stdin), "base64"
    if stdin_open:
        body["stdin_open"] = True
    if timeout is not None:
        body["timeout"] = timeout
    if tag:
        body["tag"] = tag
    if background:
        body["background"] = True
    return body


def quote(part: Union[str, int]) -> str:
    return urllib.parse.quote(str(part), safe="")


def file_path(name: str) -> str:
    """A workspace path in a URL: each segment escaped, the slashes kept."""
    return "/".join(urllib.parse.quote(seg, safe="") for seg in name.split("/"))


def output_query(offset: Optional[int], stdout_offset: Optional[int], stderr_offset: Optional[int], stream: Optional[str]) -> str:
    q: List[Tuple[str, str]] = []
    if stream is not None:
        q.append(("stream", stream))
    for k, v in (("offset", offset), ("stdout_offset", stdout_offset), ("stderr_offset", stderr_offset)):
        if v is not None:
            if v < 0:
                raise ValueError("%s: a byte offset is at least 0" % k)
            q.append((k, str(v)))
    return "?" + urllib.parse.urlencode(q) if q else ""


def chunk_bytes(chunk: Mapping[str, Any]) -> bytes:
    """The bytes of an output chunk ({data, encoding, next, dropped, eof})."""
    data = chunk.get("data", "")
    return base64.b64decode(data) if chunk.get("encoding") == "base64" else str(data).encode()


class PortResponse:
    """A response from a program's port in a sandboxes (through the server's
    proxy): its status, headers (names in lower case) and body, as the
    program sent them. An error of airlock's own (an unknown sandbox, a
    port nothing listens on) comes back the same way; airlock_error()
    returns it as an AirlockError when the body is airlock's error JSON."""

    def __init__(self, status: int, headers: Mapping[str, str], body: bytes) -> None:
        self.status = status
        self.headers = dict(headers)
        self.body = body

    def json(self) -> Any:
        return json.loads(self.body)

    def airlock_error(self) -> Optional[AirlockError]:
        if self.status // 100 == 2:
            return None
        try:
            doc = json.loads(self.body)
        except ValueError:
            return None
        if isinstance(doc, dict) and isinstance(doc.get("error"), dict) and "class" in doc["error"]:
            return _errors.from_info(self.status, doc["error"], self.headers, None)
        return None

    def __repr__(self) -> str:
        return "PortResponse(status=%d, %d bytes)" % (self.status, len(self.body))


def port_path(sandbox_path: str, port: int, path: str) -> str:
    if not 1 <= int(port) <= 65535:
        raise ValueError("port: 1 to 65535")
    rest = path.lstrip("/")
    return "%s/ports/%d/%s" % (sandbox_path, int(port), rest)


def lower(items: Iterable[Tuple[str, str]]) -> Dict[str, str]:
    return {k.lower(): v for k, v in items}
