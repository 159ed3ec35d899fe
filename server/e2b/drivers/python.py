# airlock's code-interpreter driver for Python: one persistent namespace,
# cells read from stdin (one JSON object a line: {"code", "env"}), and
# every message to the server on fd 1 as "\x1e" + JSON + "\n". A
# subprocess's own output reaches fd 1 and 2 unframed: the server takes
# it as stdout and stderr. Written for airlock; runs as the sandbox's
# user, confined like any other process of the sandbox.
import ast
import base64
import io
import json
import os
import sys
import traceback

_proto = os.fdopen(os.dup(1), "w", encoding="utf-8", errors="replace")
# The cells come on a copy of fd 0; a cell (and what it starts) reads an
# empty stdin, not the next cells.
_cells = os.fdopen(os.dup(0), "r", encoding="utf-8")
_null = os.open(os.devnull, os.O_RDONLY)
os.dup2(_null, 0)
os.close(_null)
sys.stdin = open(os.devnull)


def _emit(msg):
    _proto.write("\x1e" + json.dumps(msg) + "\n")
    _proto.flush()


class _Stream(io.TextIOBase):
    # Lines go out whole (print's text and its newline are one message),
    # and what is left at the end of a cell with it.
    def __init__(self, name):
        self._name = name
        self._buf = ""

    def writable(self):
        return True

    def write(self, s):
        self._buf += s
        i = self._buf.rfind("\n")
        if i >= 0 or len(self._buf) > 8192:
            cut = i + 1 if i >= 0 else len(self._buf)
            _emit({"type": self._name, "text": self._buf[:cut]})
            self._buf = self._buf[cut:]
        return len(s)

    def flush(self):
        if self._buf:
            _emit({"type": self._name, "text": self._buf})
            self._buf = ""

    def isatty(self):
        return False

    @property
    def encoding(self):
        return "utf-8"


sys.stdout = _Stream("stdout")
sys.stderr = _Stream("stderr")
_ns = {"__name__": "__main__", "__builtins__": __builtins__}
_count = 0


def _formats(value):
    out = {"text": repr(value)}
    for attr, key in (("_repr_html_", "html"), ("_repr_markdown_", "markdown"), ("_repr_svg_", "svg"),
                      ("_repr_latex_", "latex"), ("_repr_json_", "json"), ("_repr_javascript_", "javascript")):
        f = getattr(value, attr, None)
        if callable(f):
            try:
                v = f()
            except Exception:
                continue
            if v is not None:
                out[key] = v if isinstance(v, str) else json.dumps(v)
    f = getattr(value, "_repr_png_", None)
    if callable(f):
        try:
            v = f()
            if v:
                out["png"] = base64.b64encode(v).decode() if isinstance(v, bytes) else v
        except Exception:
            pass
    return out


def _figures():
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return
    for num in plt.get_fignums():
        fig = plt.figure(num)
        buf = io.BytesIO()
        fig.savefig(buf, format="png", bbox_inches="tight")
        _emit({"type": "result", "text": repr(fig), "png": base64.b64encode(buf.getvalue()).decode(), "is_main_result": False})
    plt.close("all")


def _run(code):
    tree = ast.parse(code, "<cell>", "exec")
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
    exec(compile(tree, "<cell>", "exec"), _ns)
    value = None
    if last is not None:
        value = eval(compile(last, "<cell>", "eval"), _ns)
    _figures()
    if value is not None:
        msg = _formats(value)
        msg.update({"type": "result", "is_main_result": True})
        _emit(msg)


def _main():
    global _count
    for line in _cells:
        if not line.strip():
            continue
        req = json.loads(line)
        _count += 1
        _emit({"type": "number_of_executions", "execution_count": _count})
        saved = {}
        for k, v in (req.get("env") or {}).items():
            saved[k] = os.environ.get(k)
            os.environ[k] = v
        try:
            _run(req["code"])
        except BaseException as e:  # noqa: B036 - a cell's SystemExit and KeyboardInterrupt are its errors
            tb = e.__traceback__
            while tb is not None and tb.tb_frame.f_code.co_filename != "<cell>":
                tb = tb.tb_next
            if isinstance(e, SyntaxError):
                tb = None
            _emit({"type": "error", "name": type(e).__name__, "value": str(e),
                   "traceback": "".join(traceback.format_exception(type(e), e, tb))})
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
            _emit({"type": "end_of_execution"})


_main()
