"""Tests of airlock_client's transport and error mapping, and of the live
sandbox calls' wire form, against a fake server these tests start in
process (http.server on 127.0.0.1, on a unix socket and behind TLS): no
airlock serve needed. The calls are checked against the contract of
DESIGN "Live sandboxes" and docs/serve.md, not against the real server
(test_airlock_client.py runs the rest against a real airlock serve)."""

import asyncio
import base64
import http.server
import json
import os
import shutil
import socket
import socketserver
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import unittest

here = os.path.dirname(os.path.abspath(__file__))
try:
    import airlock_client as al
except ImportError:  # not installed: the checkout's
    sys.path.insert(0, os.path.join(here, "src"))
    import airlock_client as al


class Fake:
    """A fake airlock serve: routes maps (method, path) to a function of
    the request returning (status, headers, body bytes); every request is
    recorded as (method, path, headers, body)."""

    def __init__(self, routes, unix=None, tls=None):
        self.routes = routes
        self.seen = []
        fake = self

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def handle_one(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else b""
                fake.seen.append((self.command, self.path, dict(self.headers), body))
                route = fake.routes.get((self.command, self.path.split("?")[0]))
                if route is None:
                    st, hd, out = 404, {"Content-Type": "application/json"}, json.dumps(
                        {"error": {"class": "invalid", "retryable": False, "field": "route", "message": "no route " + self.path}}).encode()
                else:
                    st, hd, out = route(self.path, body)
                if st is None:  # hang up without an answer
                    self.close_connection = True
                    return
                self.send_response(st)
                chunked = hd.pop("chunked", False)
                for k, v in hd.items():
                    self.send_header(k, v)
                if chunked:
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    for piece in out:
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                        self.wfile.flush()
                    self.wfile.write(b"0\r\n\r\n")
                else:
                    self.send_header("Content-Length", str(len(out)))
                    self.end_headers()
                    self.wfile.write(out)
                self.close_connection = True

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = handle_one

        if unix:
            class S(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
                daemon_threads = True

                def get_request(self):
                    conn, _ = self.socket.accept()
                    return conn, ("local", 0)
            self.server = S(unix, H)
            self.addr = "unix:" + unix
        else:
            self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
            self.server.daemon_threads = True
            if tls:
                ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
                ctx.load_cert_chain(*tls)
                self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True)
            self.addr = "%s://127.0.0.1:%d" % ("https" if tls else "http", self.server.server_address[1])
        self.server.handle_error = lambda *a: None  # a client that gave up: its broken pipe
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def js(status, doc, **headers):
    return lambda path, body: (status, dict({"Content-Type": "application/json"}, **headers), json.dumps(doc).encode())


def raw(status, body, **headers):
    return lambda path, b: (status, dict(headers), body)


def err(status, cls, retryable, **headers):
    return js(status, {"error": {"class": cls, "retryable": retryable, "field": "f", "message": "m", "fix": "x"}}, **headers)


def run_async(coro):
    return asyncio.run(coro)


class Both:
    """Calls name on the blocking client and on the async one; returns
    both outcomes (value or exception)."""

    @staticmethod
    def call(addr, fn, **kw):
        out = []
        for make in (al.Client, al.AsyncClient):
            c = make(addr, **kw)
            try:
                r = fn(c)
                if asyncio.iscoroutine(r):
                    r = run_async(r)
                out.append(r)
            except Exception as e:  # noqa: BLE001
                out.append(e)
        return out


class ErrorMapping(unittest.TestCase):
    """Every failure is an AirlockError whose class and retry hint agree
    with docs/serve.md's table, on both clients."""

    def setUp(self):
        self.f = Fake({
            ("GET", "/redirect"): raw(302, b"<html>moved</html>", Location="https://elsewhere/"),
            ("GET", "/html502"): raw(502, b"<html><body>Bad Gateway</body></html>", **{"Content-Type": "text/html"}),
            ("GET", "/empty503"): raw(503, b"", **{"Retry-After": "7"}),
            ("GET", "/empty500"): raw(500, b""),
            ("GET", "/html200"): raw(200, b"<!doctype html><html>a web page</html>", **{"Content-Type": "text/html"}),
            ("GET", "/html404"): raw(404, b"<html>Not Found</html>", **{"Content-Type": "text/html"}),
            ("GET", "/busy"): err(429, "unavailable", True, **{"Retry-After": "1"}),
            ("GET", "/invalid"): err(400, "invalid", False),
            ("GET", "/unsupported"): err(422, "unsupported", False),
            ("GET", "/internal"): err(500, "internal", False),
            ("GET", "/slow"): lambda p, b: (time.sleep(1), (200, {}, b"{}"))[1],
            ("GET", "/hangup"): lambda p, b: (None, {}, b""),
        })
        self.addCleanup(self.f.close)

    def get(self, path, **kw):
        return Both.call(self.f.addr, lambda c: c._json("GET", path), **kw)

    def check(self, path, kind, cls, retryable, status, **kw):
        for e in self.get(path, **kw):
            self.assertIsInstance(e, kind, path)
            self.assertIsInstance(e, al.AirlockError)
            self.assertEqual((e.error_class, e.retryable, e.status), (cls, retryable, status), (path, e))
        return e

    def test_redirect(self):
        e = self.check("/redirect", al.RedirectError, "invalid", False, 302)
        self.assertEqual(e.location, "https://elsewhere/")
        self.assertIsInstance(e, al.InvalidError)

    def test_html_gateway_error(self):
        e = self.check("/html502", al.GatewayError, "unavailable", True, 502)
        self.assertIsInstance(e, al.BadResponseError)
        self.assertIn(b"Bad Gateway", e.body)

    def test_5xx_without_a_body(self):
        e = self.check("/empty503", al.GatewayError, "unavailable", True, 503)
        self.assertEqual(e.retry_after, 7.0)
        self.check("/empty500", al.ServerError, "internal", False, 500)

    def test_html_success_or_404_is_not_airlock(self):
        self.check("/html200", al.ForeignResponseError, "invalid", False, 200)
        self.check("/html404", al.ForeignResponseError, "invalid", False, 404)

    def test_server_errors_keep_their_class(self):
        e = self.check("/busy", al.UnavailableError, "unavailable", True, 429)
        self.assertEqual((e.retry_after, e.field, e.fix, e.cls), (1.0, "f", "x", "unavailable"))
        self.check("/invalid", al.InvalidError, "invalid", False, 400)
        self.check("/unsupported", al.UnsupportedError, "unsupported", False, 422)
        self.check("/internal", al.InternalError, "internal", False, 500)

    def test_client_timeout(self):
        for e in self.get("/slow", timeout=0.2):
            self.assertIsInstance(e, al.ClientTimeoutError)
            self.assertIsInstance(e, TimeoutError)  # what 0.1 raised, still caught
            self.assertEqual((e.error_class, e.retryable, e.status), ("unavailable", True, 0))

    def test_hangup(self):
        for e in self.get("/hangup"):
            self.assertIsInstance(e, al.ConnectError, e)
            self.assertTrue(e.retryable)

    def test_refused(self):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()  # nothing listens there now
        for e in Both.call("http://127.0.0.1:%d" % port, lambda c: c.health()):
            self.assertIsInstance(e, al.ConnectError, e)
            self.assertIsInstance(e, ConnectionError)
            self.assertEqual((e.error_class, e.retryable, e.status), ("unavailable", True, 0))
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        for e in Both.call("unix:" + os.path.join(d, "none.sock"), lambda c: c.health()):
            self.assertIsInstance(e, al.ConnectError, e)

    @unittest.skipIf(os.geteuid() == 0, "root connects whatever the socket's mode (the rootless pass runs this)")
    def test_socket_mode_refuses(self):
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        f = Fake({("GET", "/healthz"): js(200, {"status": "ok"})}, unix=os.path.join(d, "s.sock"))
        self.addCleanup(f.close)
        os.chmod(os.path.join(d, "s.sock"), 0)
        for e in Both.call(f.addr, lambda c: c.health()):
            self.assertIsInstance(e, al.AccessDeniedError, e)
            self.assertEqual((e.error_class, e.retryable), ("invalid", False))

    def test_bad_addresses(self):
        for a in ("ftp://x", "unix:", "http://h:1/path", "x"):
            with self.assertRaises(ValueError):
                al.Client(a)
            with self.assertRaises(ValueError):
                al.AsyncClient(a)
        with self.assertRaises(ValueError):
            al.Client("http://h", ca_file="/ca.pem")


@unittest.skipUnless(shutil.which("openssl"), "openssl makes the test's certificate")
class TLS(unittest.TestCase):
    def setUp(self):
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        self.cert, key = os.path.join(d, "cert.pem"), os.path.join(d, "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                        "-keyout", key, "-out", self.cert, "-days", "1", "-subj", "/CN=127.0.0.1",
                        "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
        self.f = Fake({("GET", "/healthz"): js(200, {"status": "ok"})}, tls=(self.cert, key))
        self.addCleanup(self.f.close)

    def test_https_with_a_ca_file(self):
        for r in Both.call(self.f.addr, lambda c: c.health(), ca_file=self.cert):
            self.assertEqual(r, {"status": "ok"})

    def test_https_untrusted(self):
        for e in Both.call(self.f.addr, lambda c: c.health()):
            self.assertIsInstance(e, al.TLSError, e)
            self.assertEqual((e.error_class, e.retryable), ("invalid", False))


class SandboxCalls(unittest.TestCase):
    """The live sandbox calls' methods, paths and bodies (DESIGN "Live
    sandboxes"), and the decoding of their answers, on both clients and
    over a unix socket too. Against the fake only."""

    SB = {"id": "0123456789abcdef", "state": "running"}

    def routes(self):
        base = "/v1/sandboxes/0123456789abcdef"
        out = {"stdout": {"data": "aGk=", "encoding": "base64", "next": 2, "dropped": 0, "eof": True},
               "stderr": {"data": "", "next": 0, "dropped": 0, "eof": True}, "process": {"pid": 7, "state": "exited"}}
        return {
            ("POST", "/v1/sandboxes"): js(201, self.SB),
            ("GET", "/v1/sandboxes"): js(200, [self.SB]),
            ("GET", base): js(200, self.SB),
            ("DELETE", base): raw(204, b""),
            ("POST", base + "/processes"): lambda p, b: (201, {}, b'{"pid": 7, "state": "running"}') if json.loads(b).get("background")
            else (200, {}, b'{"status": "ok", "stdout": "hi\\n"}'),
            ("GET", base + "/processes"): js(200, [{"pid": 7}]),
            ("GET", base + "/processes/7"): js(200, {"pid": 7, "state": "exited", "exit_code": 0}),
            ("GET", base + "/processes/7/output"): js(200, out),
            ("POST", base + "/processes/7/stdin"): raw(204, b""),
            ("POST", base + "/processes/7/signal"): raw(204, b""),
            ("GET", base + "/files"): js(200, {"files": [{"path": "a b/c.txt", "size": 2}], "total": 1, "omitted": 0}),
            ("GET", base + "/files/a%20b/c.txt"): raw(200, b"\x00\x01"),
            ("PUT", base + "/files/a%20b/c.txt"): raw(204, b""),
            ("GET", base + "/ports/8000/api/x"): raw(418, b"teapot", **{"X-App": "1"}),
            ("POST", base + "/processes/9/signal"): err(404, "invalid", False),
        }

    def exercise(self, addr):
        f_addr = addr
        seen_results = []

        def sync(c):
            with c.create_sandbox(policy={"memory": "256MiB"}, env={"K": "v"}, files={"in.txt": "x"}, idle_timeout="1m", timeout="10m") as sb:
                seen_results.append(sb.info)
                assert c.sandboxes() == [self.SB]
                assert sb.describe()["state"] == "running"
                assert sb.run(["echo", "hi"], cwd="/tmp", timeout="5s")["stdout"] == "hi\n"
                p = sb.start(command="sleep 1; echo hi", stdin_open=True, tag="t")
                assert p.pid == 7 and p.info["state"] == "running"
                assert sb.processes() == [{"pid": 7}]
                assert p.describe()["exit_code"] == 0
                o = p.output(stdout_offset=0, stderr_offset=0)
                assert al.chunk_bytes(o["stdout"]) == b"hi" and o["stdout"]["eof"]
                p.write_stdin(b"\xff", close=True)
                p.signal("KILL")
                assert sb.files()["files"][0]["path"] == "a b/c.txt"
                assert sb.read_file("a b/c.txt") == b"\x00\x01"
                sb.write_file("a b/c.txt", b"\x02")
                r = sb.port(8000, "/api/x")
                assert (r.status, r.body, r.headers["x-app"], r.airlock_error()) == (418, b"teapot", "1", None)
                try:
                    sb.process(9).signal(15)
                    raise AssertionError("no error")
                except al.InvalidError as e:
                    assert e.status == 404
            return "done"

        async def asyn(c):
            async with await c.create_sandbox(policy={"memory": "256MiB"}, env={"K": "v"}, files={"in.txt": "x"}, idle_timeout="1m", timeout="10m") as sb:
                seen_results.append(sb.info)
                assert await c.sandboxes() == [self.SB]
                assert (await sb.describe())["state"] == "running"
                assert (await sb.run(["echo", "hi"], cwd="/tmp", timeout="5s"))["stdout"] == "hi\n"
                p = await sb.start(command="sleep 1; echo hi", stdin_open=True, tag="t")
                assert p.pid == 7
                assert await sb.processes() == [{"pid": 7}]
                assert (await p.describe())["exit_code"] == 0
                o = await p.output(stdout_offset=0, stderr_offset=0)
                assert al.chunk_bytes(o["stdout"]) == b"hi"
                await p.write_stdin(b"\xff", close=True)
                await p.signal("KILL")
                assert (await sb.files())["files"][0]["path"] == "a b/c.txt"
                assert await sb.read_file("a b/c.txt") == b"\x00\x01"
                await sb.write_file("a b/c.txt", b"\x02")
                r = await sb.port(8000, "/api/x")
                assert (r.status, r.body, r.headers["x-app"]) == (418, b"teapot", "1")
                try:
                    await sb.process(9).signal(15)
                    raise AssertionError("no error")
                except al.InvalidError as e:
                    assert e.status == 404
            return "done"

        self.assertEqual(sync(al.Client(f_addr, token="tok")), "done")
        self.assertEqual(run_async(asyn(al.AsyncClient(f_addr, token="tok"))), "done")

    def check_wire(self, seen):
        base = "/v1/sandboxes/0123456789abcdef"
        calls = [(m, p) for m, p, h, b in seen]
        half = len(calls) // 2
        self.assertEqual(calls[:half], calls[half:], "the two clients make the same calls")
        want = [("POST", "/v1/sandboxes"), ("GET", "/v1/sandboxes"), ("GET", base), ("POST", base + "/processes"),
                ("POST", base + "/processes"), ("GET", base + "/processes"), ("GET", base + "/processes/7"),
                ("GET", base + "/processes/7/output?stdout_offset=0&stderr_offset=0"), ("POST", base + "/processes/7/stdin"),
                ("POST", base + "/processes/7/signal"), ("GET", base + "/files"), ("GET", base + "/files/a%20b/c.txt"),
                ("PUT", base + "/files/a%20b/c.txt"), ("GET", base + "/ports/8000/api/x"), ("POST", base + "/processes/9/signal"),
                ("DELETE", base)]
        self.assertEqual(calls[:half], want)
        bodies = [b for m, p, h, b in seen[:half]]
        self.assertEqual(json.loads(bodies[0]), {"policy": {"memory": "256MiB"}, "env": {"K": "v"}, "idle_timeout": "1m", "timeout": "10m",
                                                 "files": [{"name": "in.txt", "content": "eA==", "encoding": "base64"}]})
        self.assertEqual(json.loads(bodies[3]), {"argv": ["echo", "hi"], "cwd": "/tmp", "timeout": "5s"})
        self.assertEqual(json.loads(bodies[4]), {"command": "sleep 1; echo hi", "stdin_open": True, "tag": "t", "background": True})
        self.assertEqual(json.loads(bodies[8]), {"data": "/w==", "encoding": "base64", "close": True})
        self.assertEqual(json.loads(bodies[9]), {"signal": "KILL"})
        self.assertEqual(bodies[12], b"\x02")
        self.assertEqual(json.loads(bodies[14]), {"signal": 15})
        for m, p, h, b in seen:
            self.assertEqual(h.get("Authorization"), "Bearer tok")
            if m == "POST":
                self.assertEqual(h.get("Content-Type"), "application/json", p)

    def test_tcp(self):
        f = Fake(self.routes())
        self.addCleanup(f.close)
        self.exercise(f.addr)
        self.check_wire(f.seen)

    def test_unix(self):
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        f = Fake(self.routes(), unix=os.path.join(d, "s.sock"))
        self.addCleanup(f.close)
        self.exercise(f.addr)
        self.check_wire(f.seen)
        self.assertEqual(f.seen[0][2].get("Host"), "airlock")

    def test_process_needs_argv_or_command(self):
        sb = al.Client("http://127.0.0.1:1").sandbox("x")
        for kw in ({}, {"argv": ["a"], "command": "a"}):
            with self.assertRaises(ValueError):
                sb.start(**kw)


class Streaming(unittest.TestCase):
    """A chunked NDJSON stream: output pieces, then the result or an
    error line, on both clients."""

    def test_stream(self):
        lines = [b'{"stdout":"a\\n"}\n', b'{"stderr":"AP8=","encoding":"base64"}\n{"res', b'ult":{"status":"ok"}}\n']
        f = Fake({("POST", "/v1/run"): lambda p, b: (200, {"Content-Type": "application/x-ndjson", "chunked": True}, lines),
                  ("POST", "/v1/exec"): lambda p, b: (200, {"chunked": True}, [b'{"stdout":"x"}\n', b'{"error":{"class":"unavailable","retryable":true,"message":"draining"}}\n']),
                  ("POST", "/v1/sessions"): lambda p, b: (200, {"chunked": True}, [b'{"stdout":"x"}\n'])})
        self.addCleanup(f.close)
        for make in (al.Client, al.AsyncClient):
            got = []
            r = make(f.addr).run(["x"], on_output=lambda n, d: got.append((n, d)))
            r = run_async(r) if asyncio.iscoroutine(r) else r
            self.assertEqual(r, {"status": "ok"})
            self.assertEqual(got, [("stdout", b"a\n"), ("stderr", b"\x00\xff")])
            with self.assertRaises(al.UnavailableError) as e:
                r = make(f.addr).exec("sh", "x", on_output=lambda n, d: None)
                run_async(r) if asyncio.iscoroutine(r) else r
            self.assertTrue(e.exception.retryable)
            # A stream that ends without its result: the connection was lost.
            with self.assertRaises(al.ConnectError):
                c = make(f.addr)
                r = c._run("/v1/sessions", {}, lambda n, d: None)
                run_async(r) if asyncio.iscoroutine(r) else r


if __name__ == "__main__":
    unittest.main()
