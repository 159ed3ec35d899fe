# C11: keyrings are not namespaced: the session and user keyrings, a new
# key, a key request, and what /proc/keys lists.
OUT["keyctl get @s"] = sc(250, 0, -3, 0)
OUT["keyctl get @u"] = sc(250, 0, -4, 0)
OUT["keyctl join session"] = sc(250, 1, 0)
OUT["add_key"] = sc(248, b"user", b"airlock-escape", b"x", 1, -3)
OUT["request_key"] = sc(249, b"user", ARGS[0].encode(), 0, 0)
attempt("proc_keys", lambda: read("/proc/keys").splitlines())
attempt("proc_key_users", lambda: read("/proc/key-users").splitlines())
done()
