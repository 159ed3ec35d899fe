# H01: kill every process this uid may signal, and the process group.
attempt("kill -1", lambda: os.kill(-1, 9))
attempt("kill 0 TERM", lambda: os.kill(0, 15))
done()
