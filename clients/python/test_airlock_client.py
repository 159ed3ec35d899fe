"""Tests of airlock_client against a running airlock serve: AIRLOCK_ADDR is
its address (unix:PATH or http://127.0.0.1:PORT), or AIRLOCK_SOCKET names its
unix socket (clients/run-tests starts one, and runs these over both)."""

import base64
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from airlock_client import AirlockError, Client  # noqa: E402


class ClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        addr = os.environ.get("AIRLOCK_ADDR")
        if not addr and os.environ.get("AIRLOCK_SOCKET"):
            addr = "unix:" + os.environ["AIRLOCK_SOCKET"]
        if not addr:
            raise unittest.SkipTest("neither AIRLOCK_ADDR nor AIRLOCK_SOCKET is set (clients/run-tests sets them)")
        cls.c = Client(addr)

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


if __name__ == "__main__":
    unittest.main()
