// The Python driver of a stateful execution: one interpreter, started
// once in the live sandbox as a background process with its stdin open,
// runs every block it is sent in one namespace, so that a block sees the
// variables, imports and functions of the blocks before it.
//
// Protocol: each block is one line on stdin, a JSON object {n, code,
// argv}. The block's output goes to the process's own stdout and stderr
// (so that what its child processes print is there too); after it, the
// driver writes END to both streams, END being
// "\x1eairlock-end:<nonce>:<n>:<code>\n" (nonce: argv[1], chosen by the
// client per sandbox; code: 0, or the block's exit status: 1 for an
// uncaught exception, or what it passed to sys.exit). The client reads
// each stream up to its END, which tells it that the block is over and
// that it has all of the block's output. A block that kills the
// interpreter (os._exit, a signal, the memory limit) ends the process:
// the client sees its status instead of an END.
export const DRIVER = String.raw`
import builtins, json, os, sys, traceback
nonce = sys.argv[1]
ns = {"__name__": "__main__", "__builtins__": builtins}
out, err = sys.stdout, sys.stderr
# The blocks get no stdin (input() sees EOF): the protocol's pipe moves
# to a descriptor of its own.
proto = os.fdopen(os.dup(0), "rb")
null = os.open(os.devnull, os.O_RDONLY)
os.dup2(null, 0)
os.close(null)
sys.stdin = open(os.devnull)
def end(n, code):
    for s in (sys.stdout, sys.stderr, out, err):
        try:
            s.flush()
        except Exception:
            pass
    mark = ("\x1eairlock-end:%s:%d:%d\n" % (nonce, n, code)).encode()
    for fd in (1, 2):
        try:
            os.write(fd, mark)
        except OSError:
            pass
for line in proto:
    req = json.loads(line)
    n, code = req["n"], 0
    sys.argv = ["<block %d>" % n] + list(req.get("argv") or [])
    try:
        exec(compile(req["code"], "<block %d>" % n, "exec"), ns)
    except SystemExit as e:
        if e.code is None:
            code = 0
        elif isinstance(e.code, int):
            code = e.code & 0xff
        else:
            print(e.code, file=sys.stderr)
            code = 1
    except BaseException:
        t, v, tb = sys.exc_info()
        traceback.print_exception(t, v, tb.tb_next)
        code = 1
    end(n, code)
`;
