# B06: set the hostname and domain name (the host's, if the UTS namespace
# were shared).
import socket
attempt("sethostname", lambda: socket.sethostname("pwned"))
OUT["setdomainname"] = sc(171, b"pwned", 5)
OUT["uname"] = os.uname().nodename
done()
