# F08: host unix sockets: none on the filesystem, the well-known ones
# unreachable. ARGS: directories not to walk.
import socket, stat
found = []
def walk(d):
    try:
        ents = list(os.scandir(d))
    except OSError:
        return
    for e in ents:
        if e.path == "/proc" or e.path in ARGS:
            continue
        # d_type answers for files, dirs and links; stat only the rest.
        if e.is_dir(follow_symlinks=False):
            walk(e.path)
        elif not e.is_file(follow_symlinks=False) and not e.is_symlink():
            try:
                if stat.S_ISSOCK(e.stat(follow_symlinks=False).st_mode):
                    found.append(e.path)
            except OSError:
                pass
walk("/")
OUT["sockets"] = found
for p in ("/var/run/docker.sock", "/run/containerd/containerd.sock", "/run/dbus/system_bus_socket",
          "/tmp/.X11-unix/X0", "/run/user/0/bus", "/run/systemd/private"):
    def conn(p=p):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(p)
    attempt(p, conn)
attempt("ls /run/user", lambda: os.listdir("/run/user"))
attempt("ls /tmp/.X11-unix", lambda: os.listdir("/tmp/.X11-unix"))
done()
