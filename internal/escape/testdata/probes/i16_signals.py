# I16: block every signal and ignore TERM, in pid 1 and in a shell
# child that traps TERM; then wait to be killed.
import signal, subprocess, time
for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(s, signal.SIG_IGN)
signal.pthread_sigmask(signal.SIG_BLOCK, set(range(1, signal.NSIG)) - {signal.SIGKILL, signal.SIGSTOP})
subprocess.Popen(["sh", "-c", "trap '' TERM INT HUP; while :; do sleep 1; done", MARKER])
print(json.dumps({"blocking": True}), flush=True)
while True:
    time.sleep(1)
