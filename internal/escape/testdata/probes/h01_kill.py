# H01: kill every process this uid may signal, and the process group.
attempt("kill -1", lambda: os.kill(-1, 9))
# Our own group includes us: bare as inside, a SIGTERM would end us here.
import signal
signal.signal(signal.SIGTERM, signal.SIG_IGN)
attempt("kill 0 TERM", lambda: os.kill(0, 15))
done()
