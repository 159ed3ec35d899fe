"""Tests of airlock_client against a running airlock serve: AIRLOCK_ADDR is
its address (unix:PATH or http://127.0.0.1:PORT), or AIRLOCK_SOCKET names its
unix socket (clients/run-tests starts one, pip-installs the package into a
venv and runs these over both, with the blocking and the asyncio client).
test_transport.py tests what needs a fake server (the live sandbox calls,
TLS, HTML and empty answers)."""

import asyncio
import base64
import http.server
import os
import socket
import sys
import threading
import unittest

try:
    import airlock_client
except ImportError:  # not installed: the checkout's
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "src"))
    import airlock_client
from airlock_client import AirlockError, AsyncClient, Client  # noqa: E402


def server_addr():
    addr = os.environ.get("AIRLOCK_ADDR")
    if not addr and os.environ.get("AIRLOCK_SOCKET"):
        addr = "unix:" + os.environ["AIRLOCK_SOCKET"]
    if not addr:
        raise unittest.SkipTest("neither AIRLOCK_ADDR nor AIRLOCK_SOCKET is set (clients/run-tests sets them)")
    return addr


class ClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.c = Client(server_addr())

    def test_exec_files_in_and_out(self):
        r = self.c.exec("python", "import json,os,sys\nprint(open('in.txt').read(), sys.argv[1], json.load(open(os.environ['AIRLOCK_INPUT']))['n'])\nopen('out.bin','wb').write(b'\\x00\\x01')",
                        args=["arg"], input={"n": 3}, files={"in.txt": "hello"})
        self.assertEqual(r["status"], "ok", r)
        self.assertEqual(r["stdout"], "hello arg 3\n")
        out = {f["path"]: base64.b64decode(f["data"]) for f in r["files"]}
        self.assertEqual(out, {"out.bin": b"\x00\x01"})

    def test_run_exit_and_stdin(self):
        r = self.c.run(["sh", "-c", "cat; exit 3"], stdin=b"in\xff")
        self.assertEqual((r["status"], r["exit_code"]), ("exited", 3))

    def test_stream(self):
        got = []
        r = self.c.run(["sh", "-c", "echo a; echo b >&2"], on_output=lambda name, data: got.append((name, data)))
        self.assertEqual(r["status"], "ok")
        self.assertEqual(sorted(got), [("stderr", b"b\n"), ("stdout", b"a\n")])

    def test_timeout_is_a_result(self):
        r = self.c.run(["sleep", "10"], policy={"timeout": "200ms"})
        self.assertEqual(r["status"], "timeout")

    def test_errors_say_whether_to_retry(self):
        with self.assertRaises(AirlockError) as e:
            self.c.exec("cobol", "x")
        self.assertEqual((e.exception.status, e.exception.cls, e.exception.field, e.exception.retryable), (400, "invalid", "language", False))
        self.assertIsInstance(e.exception, airlock_client.InvalidError)
        with self.assertRaises(AirlockError) as e:
            self.c.run(["true"], policy={"memory": "100GiB"})
        self.assertEqual((e.exception.field, e.exception.retryable), ("policy.memory", False))

    def test_session(self):
        with self.c.session(env={"K": "v"}) as s:
            s.upload("data/x.txt", "up")
            r = s.exec("bash", 'cat data/x.txt; echo " $K" > made.txt')
            self.assertEqual(r["status"], "ok", r)
            self.assertEqual(s.download("made.txt"), b" v\n")
            self.assertIn("data/x.txt", [f["path"] for f in s.files()])
            self.assertEqual(s.run(["cat", "made.txt"])["stdout"], " v\n")
            sid = s.id
        self.assertNotIn(sid, [x["id"] for x in self.c.sessions()])

    def test_capabilities(self):
        caps = self.c.capabilities()
        self.assertIn("python", [l["name"] for l in caps["languages"]])
        self.assertEqual(self.c.health()["status"], "ok")



class AsyncClientTest(unittest.TestCase):
    """The asyncio client against the same server: the same answers."""

    @classmethod
    def setUpClass(cls):
        cls.addr = server_addr()

    def test_runs_streams_sessions_and_errors(self):
        async def go():
            c = AsyncClient(self.addr)
            r = await c.exec("python", "import sys; print(sys.stdin.read()[::-1])", stdin="olleh")
            self.assertEqual((r["status"], r["stdout"]), ("ok", "hello\n"), r)
            got = []
            r = await c.run(["sh", "-c", "echo a; echo b >&2"], on_output=lambda n, d: got.append((n, d)))
            self.assertEqual(r["status"], "ok")
            self.assertEqual(sorted(got), [("stderr", b"b\n"), ("stdout", b"a\n")])
            # Runs at once on one event loop.
            rs = await asyncio.gather(*(c.run(["sh", "-c", "echo %d" % i]) for i in range(4)))
            self.assertEqual([x["stdout"] for x in rs], ["%d\n" % i for i in range(4)])
            async with await c.session() as s:
                await s.upload("x/y.bin", b"\x00\xff")
                self.assertEqual(await s.download("x/y.bin"), b"\x00\xff")
                self.assertEqual((await s.run(["cat", "x/y.bin"]))["status"], "ok")
                sid = s.id
            self.assertNotIn(sid, [x["id"] for x in await c.sessions()])
            with self.assertRaises(airlock_client.InvalidError) as e:
                await c.exec("cobol", "x")
            self.assertEqual((e.exception.status, e.exception.field, e.exception.retryable), (400, "language", False))
            self.assertEqual((await c.health())["status"], "ok")
            self.assertIn("python", [x["name"] for x in (await c.capabilities())["languages"]])
        asyncio.run(go())


class TransportErrors(unittest.TestCase):
    """What is not an answer of the server's still comes as an AirlockError
    with a class and a retry hint: a redirect in front of it, a refused
    connection, the client's own timeout (after which the server still
    answers: the run died with the connection)."""

    @classmethod
    def setUpClass(cls):
        cls.addr = server_addr()

    def both(self, addr, call, **kw):
        out = []
        for make in (Client, AsyncClient):
            try:
                r = call(make(addr, **kw))
                out.append(asyncio.run(r) if asyncio.iscoroutine(r) else r)
            except Exception as e:  # noqa: BLE001
                out.append(e)
        return out

    def test_redirect(self):
        class Redirect(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(301)
                self.send_header("Location", "https://airlock.example/healthz")
                self.send_header("Content-Type", "text/html")
                body = b"<html><body>Moved</body></html>"
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            do_POST = do_GET

            def log_message(self, *a):
                pass
        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Redirect)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        self.addCleanup(srv.server_close)
        self.addCleanup(srv.shutdown)
        for e in self.both("http://127.0.0.1:%d" % srv.server_address[1], lambda c: c.run(["true"])):
            self.assertIsInstance(e, airlock_client.RedirectError, e)
            self.assertEqual((e.status, e.error_class, e.retryable, e.location), (301, "invalid", False, "https://airlock.example/healthz"))

    def test_refused(self):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        for e in self.both("http://127.0.0.1:%d" % port, lambda c: c.run(["true"])):
            self.assertIsInstance(e, airlock_client.ConnectError, e)
            self.assertEqual((e.status, e.error_class, e.retryable), (0, "unavailable", True))

    def test_client_timeout(self):
        for e in self.both(self.addr, lambda c: c.run(["sleep", "30"]), timeout=0.5):
            self.assertIsInstance(e, airlock_client.ClientTimeoutError, e)
            self.assertIsInstance(e, TimeoutError)
            self.assertEqual((e.error_class, e.retryable), ("unavailable", True))
        # The server is not stuck on the runs the client gave up on.
        self.assertEqual(Client(self.addr).run(["echo", "after"])["stdout"], "after\n")


if __name__ == "__main__":
    unittest.main()
