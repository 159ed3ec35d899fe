"""Clients for airlock serve: Client (blocking, http.client) and
AsyncClient (asyncio), standard library only.

    from airlock_client import Client, AsyncClient
    c = Client("unix:/run/airlock.sock")      # or "http://127.0.0.1:8080", "https://host", token="..."
    r = c.exec("python", "print(6*7)")
    r["status"], r["stdout"]                   # ('ok', '42\\n')

    async with await AsyncClient(addr).create_sandbox() as sb:
        r = await sb.run(["echo", "hi"])

Every call returns the server's JSON (the Result of `airlock run --json`
for runs). Every failure raises an AirlockError with error_class
("invalid", "unsupported", "unavailable", "internal") and retryable, also
when there is no answer of the server's: a redirect (RedirectError), a
body that is not its JSON (BadResponseError: GatewayError, ServerError,
ForeignResponseError), no connection (ConnectError), the client's own
timeout (ClientTimeoutError, also a TimeoutError).
"""

from ._async import AsyncClient, AsyncProcess, AsyncSandbox, AsyncSession
from ._errors import (
    AccessDeniedError,
    AirlockError,
    BadResponseError,
    ClientTimeoutError,
    ConnectError,
    ForeignResponseError,
    GatewayError,
    InternalError,
    InvalidError,
    RedirectError,
    ServerError,
    TLSError,
    UnavailableError,
    UnsupportedError,
)
from ._sync import Client, Process, Sandbox, Session
from ._wire import PortResponse, chunk_bytes

__all__ = [
    "Client", "Session", "Sandbox", "Process",
    "AsyncClient", "AsyncSession", "AsyncSandbox", "AsyncProcess",
    "PortResponse", "chunk_bytes",
    "AirlockError", "InvalidError", "UnsupportedError", "UnavailableError", "InternalError",
    "RedirectError", "BadResponseError", "GatewayError", "ForeignResponseError", "ServerError",
    "ConnectError", "AccessDeniedError", "TLSError", "ClientTimeoutError",
]
