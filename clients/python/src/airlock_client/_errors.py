"""The errors of airlock_client: every failure is an AirlockError whose
error_class is one of the server's classes (docs/serve.md, Errors) and
whose retryable says whether trying again can help."""

from __future__ import annotations

import http.client
import json
import socket
import ssl
from typing import Any, Dict, Mapping, Optional, Type

JSON = Dict[str, Any]

# The server's error classes (policy.Class*), as docs/serve.md lists them.
INVALID = "invalid"
UNSUPPORTED = "unsupported"
UNAVAILABLE = "unavailable"
INTERNAL = "internal"


class AirlockError(Exception):
    """A failure of a call: an error response of the server, or a failure
    to get one (connection, timeout, an answer that is not airlock serve's).

    error_class: "invalid" (fix the request or the address; do not retry),
    "unsupported" (the host cannot enforce what was asked), "unavailable"
    (transient: retry, after retry_after seconds when set), "internal".
    retryable: whether trying again can help. status: the HTTP status, 0
    when there was no HTTP answer. field, stage, message, fix: the server's
    (or the client's) description. result: the library's result when the
    server returned one with the error (a setup failure).
    """

    default_class = INTERNAL
    default_retryable = False

    def __init__(
        self,
        message: str,
        *,
        status: int = 0,
        error_class: Optional[str] = None,
        retryable: Optional[bool] = None,
        field: str = "",
        stage: str = "",
        fix: str = "",
        retry_after: Optional[float] = None,
        result: Optional[JSON] = None,
    ) -> None:
        self.status = status
        self.error_class = error_class or self.default_class
        self.retryable = self.default_retryable if retryable is None else bool(retryable)
        self.field = field
        self.stage = stage
        self.message = message
        self.fix = fix
        self.retry_after = retry_after
        self.result = result
        where = "%d %s" % (status, self.error_class) if status else self.error_class
        text = "airlock serve: %s: %s" % (where, message)
        if fix:
            text += " (fix: %s)" % fix
        super().__init__(text)

    @property
    def cls(self) -> str:
        """The error class (error_class; the name of 0.1)."""
        return self.error_class


class InvalidError(AirlockError):
    """Fix the request (or the client's address, token or CA); do not retry."""

    default_class = INVALID


class UnsupportedError(AirlockError):
    """The server's host cannot enforce what was asked; fix says what would."""

    default_class = UNSUPPORTED


class UnavailableError(AirlockError):
    """Transient: busy, draining, restarting, unreachable for now. Retry,
    after retry_after seconds when the server said."""

    default_class = UNAVAILABLE
    default_retryable = True


class InternalError(AirlockError):
    """A failure with no reason to expect a retry to do better."""

    default_class = INTERNAL


_BY_CLASS: Dict[str, Type[AirlockError]] = {
    INVALID: InvalidError,
    UNSUPPORTED: UnsupportedError,
    UNAVAILABLE: UnavailableError,
    INTERNAL: InternalError,
}


class RedirectError(InvalidError):
    """The address answered with a redirect (3xx): airlock serve never
    redirects, so the address is not the server's (a web server, or a TLS
    front that sends http:// to https://). location is where it pointed."""

    def __init__(self, status: int, location: str) -> None:
        self.location = location
        super().__init__(
            "the address answered %d, a redirect to %r: airlock serve never redirects" % (status, location),
            status=status,
            fix="use the server's own address (https:// if the front redirects there)",
        )


class BadResponseError(AirlockError):
    """The answer is not airlock serve's JSON (an HTML page of a proxy or
    web server, an empty 5xx, garbage). body is its first 1 KiB. Its class
    follows the status: see GatewayError, ForeignResponseError, ServerError."""

    def __init__(self, status: int, body: bytes, what: str, **kw: Any) -> None:
        self.body = body[:1024]
        snippet = self.body.decode("utf-8", "replace").strip().replace("\n", " ")[:200]
        msg = "%s (status %d)" % (what, status)
        if snippet:
            msg += ": %s" % snippet
        super().__init__(msg, status=status, **kw)


class GatewayError(BadResponseError, UnavailableError):
    """408, 429, 502, 503 or 504 without airlock's error body: a proxy in
    front of a server that is restarting, busy or gone for now. Retryable."""


class ForeignResponseError(BadResponseError, InvalidError):
    """A 2xx or 4xx answer that is not airlock serve's: the address (or the
    route) is something else's. Not retryable: fix the address."""


class ServerError(BadResponseError, InternalError):
    """A 5xx (500, 501, 505...) without airlock's error body."""


class ConnectError(UnavailableError, ConnectionError):
    """No connection: refused, reset, no socket at the path, unreachable.
    Retryable: the server may be starting or restarting."""


class AccessDeniedError(InvalidError, PermissionError):
    """The unix socket's mode refuses this user (docs/serve.md: its group)."""


class TLSError(InvalidError):
    """The TLS handshake failed (certificate not trusted: give ca_file)."""


class ClientTimeoutError(UnavailableError, TimeoutError):
    """The client's own timeout elapsed before the answer (connect or a
    read). The server ends the run when the connection closes; retryable,
    with a longer timeout when the run needs one. Also a TimeoutError."""


def retry_after(headers: Mapping[str, str]) -> Optional[float]:
    """Retry-After in seconds (its delta-seconds form), or None."""
    v = headers.get("retry-after")
    if v is None:
        return None
    try:
        return max(0.0, float(v.strip()))
    except ValueError:
        return None


def from_info(status: int, info: Mapping[str, Any], headers: Mapping[str, str], result: Optional[JSON]) -> AirlockError:
    """The AirlockError of the server's {"error": info}."""
    cls = str(info.get("class") or INTERNAL)
    kind = _BY_CLASS.get(cls, InternalError)
    r = info.get("retryable")
    return kind(
        str(info.get("message", "")),
        status=status,
        error_class=cls,
        retryable=None if r is None else bool(r),
        field=str(info.get("field", "")),
        stage=str(info.get("stage", "")),
        fix=str(info.get("fix", "")),
        retry_after=retry_after(headers),
        result=result,
    )


def from_response(status: int, headers: Mapping[str, str], body: bytes) -> AirlockError:
    """The AirlockError of a response that is not a success. headers' names
    are lower case."""
    if 300 <= status < 400:
        return RedirectError(status, headers.get("location", ""))
    doc: Any = None
    try:
        doc = json.loads(body)
    except ValueError:
        pass
    if isinstance(doc, dict) and isinstance(doc.get("error"), dict):
        res = doc.get("result")
        return from_info(status, doc["error"], headers, res if isinstance(res, dict) else None)
    return foreign(status, headers, body)


def foreign(status: int, headers: Mapping[str, str], body: bytes) -> AirlockError:
    """The error of an answer whose body is not airlock serve's."""
    what = "an answer that is not airlock serve's" if body.strip() else "an answer without a body"
    if status in (408, 429, 502, 503, 504):
        return GatewayError(status, body, what, retry_after=retry_after(headers))
    if status >= 500:
        return ServerError(status, body, what)
    return ForeignResponseError(status, body, what, fix="check the address: it does not answer as airlock serve")


def transport(err: BaseException, addr: str) -> AirlockError:
    """The AirlockError of a failure to talk to addr."""
    if isinstance(err, AirlockError):
        return err
    if isinstance(err, (socket.timeout, TimeoutError)) or type(err).__name__ == "TimeoutError":
        return ClientTimeoutError("no answer from %s within the client's timeout" % addr, fix="raise the client's timeout if the run needs longer")
    if isinstance(err, ssl.SSLError):
        return TLSError("TLS with %s: %s" % (addr, err), fix="give ca_file (the CA that signed the server's certificate), or check the address")
    if isinstance(err, PermissionError):
        return AccessDeniedError("%s: %s" % (addr, err), fix="run as the server's user or a member of its --socket-group")
    if isinstance(err, socket.gaierror):
        return InvalidError("%s: the name does not resolve: %s" % (addr, err), fix="check the address")
    if isinstance(err, http.client.HTTPException) and not isinstance(err, ConnectionError):
        return ForeignResponseError(0, b"", "%s answered what is not HTTP (%s: %s)" % (addr, type(err).__name__, err), fix="check the address (http:// or https://)")
    if isinstance(err, (OSError, EOFError)):
        return ConnectError("%s: %s" % (addr, err or type(err).__name__))
    return InternalError("%s: %s: %s" % (addr, type(err).__name__, err))
