# I09: survive the timeout: setsid -f, nohup, and a python double fork
# with setsid; every one carries the marker. Then wait to be killed.
import subprocess, time
keep = [sys.executable, "-I", "-c", "import signal, time; signal.signal(signal.SIGHUP, signal.SIG_IGN); time.sleep(3600)", MARKER]
subprocess.run(["setsid", "-f"] + keep)
subprocess.Popen(["nohup"] + keep, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv(keep[0], keep)
    os._exit(0)
os.wait()
time.sleep(0.5)
# (Not pid 1: the reaper, whose command line is ours.)
OUT["daemons"] = sum(1 for p in pids() if MARKER in read("/proc/%d/cmdline" % p) and p not in (os.getpid(), 1))
done()
time.sleep(3600)
