# G06: listen inside on 127.0.0.1:PORT while the host connects to the
# same port on its own loopback; the host says when it is done on stdin.
import socket
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(ARGS[0])))
s.listen(64)
c = socket.create_connection(("127.0.0.1", int(ARGS[0])), 3)  # the listener works
a, _ = s.accept()
a.close(); c.close()
print("listening", flush=True)
sys.stdin.readline()
s.setblocking(False)
n = 0
try:
    while True:
        s.accept()[0].close()
        n += 1
except BlockingIOError:
    pass
OUT["accepted from outside"] = n
done()
