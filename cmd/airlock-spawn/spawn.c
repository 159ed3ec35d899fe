// airlock-spawn starts a sandbox init in fresh namespaces on behalf of a
// Go supervisor (nsjail.Spec.SpawnPath), so that the supervisor never
// forks itself.
//
// Why it exists: Go can only create a user namespace with a real fork
// (clone without CLONE_VM: the parent must write the child's uid map
// before the child execs, which a vfork cannot wait for). That fork copies
// the supervisor's page tables and write-protects its whole heap, and the
// supervisor then takes a copy-on-write fault, with a TLB shootdown, on
// every page it writes next. The cost grows with the supervisor's memory:
// 1.5 ms per sandbox for a small supervisor, 8 ms with a 200 MiB heap
// (README, Performance). Go starts this static, libc-free helper with a
// vfork instead (no namespace flags), and the helper, a few pages in
// size, does the namespace fork.
//
// It is a parent that does nothing but wait: it never reads or runs what
// the sandbox does, and once the init is cloned it holds none of its fds.
//
//	airlock-spawn CLONEFLAGS UID GID INUID INGID CGROUPFD REPORTFD INIT ARG0
//
// CLONEFLAGS: the namespaces (decimal); UID and GID: the host ids the
// sandbox's ids INUID and INGID map to (one id each, as Go's UidMappings
// would write; the init takes them, with every capability as ambient
// ones when INUID is not 0, as Go's AmbientCaps would);
// CGROUPFD: a cgroup v2 directory the init is born in (CLONE_INTO_CGROUP),
// or -1; REPORTFD: a unix socket on which the helper reports, once, that
// the init was exec'd (its pid, and a pidfd as SCM_RIGHTS), or the step
// that failed and its errno. INIT is exec'd with argv {ARG0} and the
// helper's own environment; every other fd the helper was given (the
// init's channels) is the init's too, except CGROUPFD and REPORTFD.
//
// The helper then waits for the init and ends as it did: the same exit
// code, or killed by the same signal; its rusage includes the init's.
// Ordering, and who dies with whom:
//   - the helper dies with the supervisor's thread (Pdeathsig, set by Go);
//   - the init sets PR_SET_PDEATHSIG(SIGKILL) once it is the namespace's
//     root (a uid change clears it), acks, and execs only on the helper's
//     answer: a helper that died before it answered is EOF (the init
//     exits), one that dies after kills the init;
//   - the init is pid 1 of its pid namespace: its death kills the rest;
//   - the child runs on the helper's CPU from the clone until just before
//     the init's exec, where it takes back the helper's affinity, its
//     caller's (step affinity if it cannot: no init starts pinned).
//
// Run as "airlock-reaper" it is instead the sandbox's pid 1 (see reaper
// below and internal/jailinit/reaper_linux.go).
//
// Built by scripts/build with gcc -static -nostdlib (no C runtime: a
// static glibc's start-up costs more than this whole helper's work).
// x86_64 and aarch64; elsewhere the supervisor forks as before.

// Embedded on an architecture this file does not know: nothing (the Go
// package's Embedded is false there).
#if !defined(AIRLOCK_EMBEDDED) || defined(__x86_64__) || defined(__aarch64__)
#include <asm/ioctls.h>
#include <asm/unistd.h>
#include <linux/capability.h>
#include <linux/fcntl.h>
#include <linux/prctl.h>
#include <linux/resource.h>
#include <linux/sched.h>
#include <linux/signal.h>
#include <asm/stat.h>
#include <linux/types.h>
#include <linux/wait.h>

#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x00001000
#endif
#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif
// INIT_TIMERSLACK is launchabi.InitTimerSlack, ns: the init's (child()).
#define INIT_TIMERSLACK 1000000

// Steps, as reported (nsjail/spawn_linux.go names them).
enum { STEP_OK, STEP_ARGS, STEP_CLONE, STEP_UID_MAP, STEP_SETGROUPS, STEP_GID_MAP, STEP_SYNC, STEP_CREDENTIALS, STEP_EXEC, STEP_AFFINITY };

#if defined(__x86_64__)
static long sys6(long n, long a, long b, long c, long d, long e, long f) {
	long ret;
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	__asm__ volatile("syscall" : "=a"(ret) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9) : "rcx", "r11", "memory");
	return ret;
}
#ifndef AIRLOCK_EMBEDDED
__asm__(".text\n.global _start\n_start:\n"
	"  xor %rbp, %rbp\n"
	"  mov %rsp, %rdi\n"
	"  and $-16, %rsp\n"
	"  call start\n"
	"  hlt\n");
#endif
#elif defined(__aarch64__)
static long sys6(long n, long a, long b, long c, long d, long e, long f) {
	register long x8 __asm__("x8") = n;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;
	register long x3 __asm__("x3") = d;
	register long x4 __asm__("x4") = e;
	register long x5 __asm__("x5") = f;
	__asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5) : "memory", "cc");
	return x0;
}
#ifndef AIRLOCK_EMBEDDED
__asm__(".text\n.global _start\n_start:\n"
	"  mov x29, #0\n"
	"  mov x30, #0\n"
	"  mov x0, sp\n"
	"  and sp, x0, #-16\n"
	"  bl start\n"
	"  brk #0\n");
#endif
#else
#error "airlock-spawn: x86_64 and aarch64 only"
#endif

#define SYS(n, a, b, c) sys6(n, (long)(a), (long)(b), (long)(c), 0, 0, 0)

static void __attribute__((noreturn)) quit(int code) {
	for (;;)
		SYS(__NR_exit_group, code, 0, 0);
}

// num parses a decimal (optionally negative) argument; -2 marks garbage.
static long num(const char *s) {
	long n = 0, neg = 0;
	if (*s == '-')
		neg = 1, s++;
	if (!*s)
		return -2;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || n > (1L << 40))
			return -2;
		n = n * 10 + (*s - '0');
	}
	return neg ? -n : n;
}

// hexnum parses s, 1 to 16 lowercase hex digits, into *v.
static int hexnum(const char *s, unsigned long *v) {
	unsigned long n = 0;
	int i = 0;
	for (; s[i]; i++) {
		char c = s[i];
		if (i == 16 || !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return 0;
		n = n << 4 | (unsigned long)(c <= '9' ? c - '0' : c - 'a' + 10);
	}
	*v = n;
	return i > 0;
}

static char *put(char *p, const char *s) {
	while (*s)
		*p++ = *s++;
	return p;
}

static char *putnum(char *p, unsigned long v) {
	char t[24];
	int n = 0;
	do
		t[n++] = '0' + v % 10;
	while (v /= 10);
	while (n)
		*p++ = t[--n];
	return p;
}

struct report {
	__s32 step, err, pid;
};

// The kernel's struct iovec and struct msghdr (no libc headers here).
struct iov {
	void *base;
	unsigned long len;
};
struct msg {
	void *name;
	int namelen;
	struct iov *iov;
	unsigned long iovlen;
	void *control;
	unsigned long controllen;
	int flags;
};

static int reportfd = -1;

// report sends the one report; with a pidfd (success), as SCM_RIGHTS.
static void report(int step, long err, int pid, int pidfd) {
	struct report r = {step, (__s32)-err, pid};
	struct {
		unsigned long len;
		int level, type;
		int fd;
	} __attribute__((aligned(8))) cm = {sizeof(unsigned long) + 2 * sizeof(int) + sizeof(int), 1 /* SOL_SOCKET */, 1 /* SCM_RIGHTS */, pidfd};
	struct iov iov = {&r, sizeof r};
	struct msg msg = {0, 0, &iov, 1, pidfd >= 0 ? &cm : 0, pidfd >= 0 ? sizeof cm : 0, 0};
	SYS(__NR_sendmsg, reportfd, &msg, 0x4000 /* MSG_NOSIGNAL */);
}

static void __attribute__((noreturn)) fail(int step, long err) {
	report(step, err, 0, -1);
	quit(126);
}

// writeProc writes "IN ID 1\n" (or text) to /proc/PID/name.
static long writeProc(int pid, const char *name, const char *text, long in, long id) {
	char path[64], buf[32], *p = path, *b = buf;
	p = put(put(putnum(put(p, "/proc/"), pid), "/"), name);
	*p = 0;
	if (text)
		b = put(b, text);
	else
		b = put(putnum(put(putnum(b, in), " "), id), " 1\n");
	long fd = SYS(__NR_openat, -100 /* AT_FDCWD */, path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return fd;
	long n = SYS(__NR_write, fd, buf, b - buf);
	SYS(__NR_close, fd, 0, 0);
	return n < 0 ? n : n == b - buf ? 0 : -5 /* EIO */;
}

// The helper's CPU affinity before the clone (naff bytes of it), which
// the init must have too: the child is pinned to its parent's CPU for its
// first steps (see start), and takes this back before its exec.
static unsigned char affinity[512]; // 4096 CPUs
static long naff;

static int sameBytes(const void *a, const void *b, unsigned long n) {
	const unsigned char *x = a, *y = b;
	for (unsigned long i = 0; i < n; i++)
		if (x[i] != y[i])
			return 0;
	return 1;
}

// pinToThisCPU restricts pid's affinity to the CPU the caller runs on, if
// that CPU is in the helper's affinity (naff bytes of affinity).
static void pinToThisCPU(long pid) {
	unsigned cpu = 0;
	if (naff <= 0 || SYS(__NR_getcpu, &cpu, 0, 0) < 0 || cpu / 8 >= (unsigned long)naff || !(affinity[cpu / 8] & (1u << (cpu % 8))))
		return;
	unsigned char one[sizeof affinity];
	for (long i = 0; i < naff; i++)
		one[i] = 0;
	one[cpu / 8] = (unsigned char)(1u << (cpu % 8));
	SYS(__NR_sched_setaffinity, pid, naff, one);
}

// readByte reads one byte of fd (1), or says why not (0: EOF, -errno).
static long readByte(int fd) {
	char c;
	long r;
	do
		r = SYS(__NR_read, fd, &c, 1);
	while (r == -4 /* EINTR */);
	return r;
}

// child runs in the new namespaces: it waits for its uid map, takes the
// namespace's root, and execs the init. A failure goes to errp as
// {step, errno} (the exec closes errp on success: O_CLOEXEC).
// ambient raises every capability the kernel knows as an ambient one,
// which an exec keeps for a uid that is not 0 (Go's AmbientCaps does the
// same): they must be inheritable first.
static long ambient(void) {
	struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct d[2];
	long r;
	if ((r = SYS(__NR_capget, &h, d, 0)) < 0)
		return r;
	d[0].inheritable = d[0].permitted, d[1].inheritable = d[1].permitted;
	if ((r = SYS(__NR_capset, &h, d, 0)) < 0)
		return r;
	for (long c = 0; c < 64; c++)
		if ((r = sys6(__NR_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, c, 0, 0, 0)) < 0)
			return c > 0 && r == -22 /* EINVAL: past the last one */ ? 0 : r;
	return 0;
}

static long inuid, ingid;

static void __attribute__((noreturn)) child(int syncr, int errp, const char *init, char **argv, char **envp) {
	long r;
	int step = STEP_CREDENTIALS;
	__s32 e[2] = {STEP_OK, 0};
	// 1. The maps are written.
	if (readByte(syncr) != 1)
		quit(125); // the helper failed (it reports) or died (so do we)
	// A session of its own (no controlling tty, so no TIOCSTI into the
	// caller's terminal); then the mapped ids (an unmapped uid has no
	// capability after the exec), keeping every capability through it.
	if ((r = SYS(__NR_setsid, 0, 0, 0)) < 0 || (r = SYS(__NR_setresgid, ingid, ingid, ingid)) < 0 ||
	    (r = SYS(__NR_setresuid, inuid, inuid, inuid)) < 0 || (inuid != 0 && (r = ambient()) < 0))
		goto out;
	// 2. Death with the helper: only after the uid change, which clears
	// it. getppid cannot tell whether the helper died before (in a new
	// pid namespace it is 0 either way), so: ack, and wait for the
	// helper's second byte; a helper that died before it is EOF here, one
	// that dies after it kills us.
	step = STEP_SYNC;
	if ((r = SYS(__NR_prctl, PR_SET_PDEATHSIG, SIGKILL, 0)) < 0 || (r = SYS(__NR_write, errp, e, sizeof e)) != sizeof e)
		goto out;
	if (readByte(syncr) != 1)
		quit(125);
	// The init's timer slack (launchabi.InitTimerSlack): its Go
	// runtime's monitor thread, which every thread it starts inherits it
	// from, then sleeps about 1 ms a cycle instead of 20 µs while the init
	// works, waking a tenth as often on the CPU the supervisor shares. A
	// hint, so its failure is no error; the init sets the program's own
	// (the supervisor's caller's) before its exec.
	SYS(__NR_prctl, PR_SET_TIMERSLACK, INIT_TIMERSLACK, 0);
	// The affinity the helper had (the caller's), before the exec, which
	// is then free to place the init on any of its CPUs. A failure here
	// would leave the sandbox pinned to one CPU where its caller was not:
	// no init starts that way.
	step = STEP_AFFINITY;
	if (naff > 0) {
		unsigned char now[sizeof affinity];
		r = SYS(__NR_sched_getaffinity, 0, sizeof now, now);
		if (r != naff || !sameBytes(now, affinity, (unsigned long)naff)) {
			if ((r = SYS(__NR_sched_setaffinity, 0, naff, affinity)) < 0)
				goto out;
		}
	}
	step = STEP_EXEC;
	r = SYS(__NR_execve, init, argv, envp);
out:
	e[0] = step;
	e[1] = (__s32)-r;
	SYS(__NR_write, errp, e, sizeof e);
	quit(127);
}

struct clone_args3 {
	__u64 flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls, set_tid, set_tid_size, cgroup;
};

// The reaper: argv {"airlock-reaper", MASK, STATUSFD, TTY, PATH, ARG0, ARGS...}, the
// program's environment. The sandbox's init execs it (through the fd the
// supervisor gave it) as the sandbox's pid 1, with the program's filter,
// limits (but those MASK names: parseMask) and working directory in
// force, no capability and no_new_privs;
// it starts the program PATH as its child (with stdin, a pty of its own,
// as its controlling terminal when TTY is 1), so the program is no pid 1,
// whose default-action signals the kernel drops, and behaves as bare.
// It arrives with the forwarded signals and SIGCHLD blocked (the init
// blocked them: one sent during the exec waits), and takes them with
// sigtimedwait: no handlers. MASK, in hex, is the program's signal mask:
// the init's before it blocked them (jailinit's blockForwarded); after it
// may come limits its child sets before the exec (parseMask). It forwards each signal from outside
// the sandbox (fromOutside; one from the sandbox's own processes it
// ignores, as an init does) to the program's
// process group (the program leads a session of its own), reaps every
// process that ends, and reports on STATUSFD in the init's status form
// (internal/jailinit/wire.go, version 7): {started} once the program was exec'd, or
// {stage "exec", errno} if it could not be; {ended, wait status} when it
// ends, and then exits. Single-threaded, about ten KiB resident.
//
// The waiting reaper: argv {"airlock-reaper", MASK, STATUSFD, "w", PROGFD}, no
// environment. A warm pool's prepared sandbox execs it before its request
// arrives (initConfig.ReaperWaits), with the pool's filter loaded, so that
// a request skips the filter's load and this exec. It reads the program
// from PROGFD, the spec pipe, to its EOF: one message in programConfig's
// form (wire.go: argv, environment, working directory, rlimits; no filter,
// no terminal), having reported {prepared} once it is set up. The child
// then does what the init does for a cold program, in the init's order:
// rlimits, chdir, the PATH lookup (as
// lookPath in internal/jailinit/init_linux.go), exec; a failed step is
// reported as the init reports it ({stage "setrlimit", "chdir" or "exec",
// errno}, no message: the supervisor names the errno). All of this runs
// under the filter: the executor lets a pool's sandboxes wait only when
// its filter allows these calls (nsjail.ReaperSyscalls).

// forwardedSigs: SIGHUP INT QUIT USR1 USR2 ALRM TERM CONT TSTP TTIN TTOU
// WINCH (internal/jailinit/reaper_linux.go names the same).
#define BIT(s) (1UL << ((s) - 1))
static const unsigned long forwardedSigs = BIT(1) | BIT(2) | BIT(3) | BIT(10) | BIT(12) | BIT(14) | BIT(15) |
	BIT(18) | BIT(20) | BIT(21) | BIT(22) | BIT(28);

static unsigned char *uvarint(unsigned char *p, unsigned long v) {
	for (; v >= 0x80; v >>= 7)
		*p++ = (unsigned char)(v | 0x80);
	*p++ = (unsigned char)v;
	return p;
}

static unsigned char *wstr(unsigned char *p, const char *s, unsigned long max) {
	unsigned long n = 0;
	while (s[n] && n < max)
		n++;
	p = uvarint(p, n);
	for (unsigned long i = 0; i < n; i++)
		*p++ = (unsigned char)s[i];
	return p;
}

#define WIRE_VERSION 11

// What a status message reports (one of them): a failed stage, the
// waiting reaper set up ("prepared"), the program exec'd ("started"), or
// its end ("ended", with its wait status).
// A recycling reaper reports a run's "ended", then, once the sandbox is
// reset, "prepared" again.
enum { EV_FAILED, EV_PREPARED, EV_STARTED, EV_ENDED };

// status sends one init status message: event, with the wait status ws
// (EV_ENDED), or the failed stage's errno (a negative return value) and
// what (the message).
static void status(int fd, int event, unsigned ws, const char *stage, long err, const char *what) {
	unsigned char m[4200], *p = m;
	*p++ = WIRE_VERSION;
	*p++ = 0, *p++ = event == EV_PREPARED, *p++ = 0; // ready, prepared, listener
	*p++ = event == EV_STARTED, *p++ = event == EV_ENDED;
	p = uvarint(p, ws);
	p = wstr(p, stage, 16);
	p = uvarint(p, (unsigned long)(-err) << 1);  // errno, a zigzag varint
	p = wstr(p, what, 4096);
	*p++ = 0;                                    // no marks
	*p++ = 0;                                    // egress: no listener
	// Retried, as the init retries its reports: a lost one would make
	// our exit look like the program's. Only a supervisor that is gone
	// (EPIPE for good) loses it, and then nobody waits for it.
	for (int i = 0; i < 3; i++)
		if (sys6(__NR_sendto, fd, (long)m, p - m, 0x4000 /* MSG_NOSIGNAL */, 0, 0) >= 0)
			return;
}

static int equal(const char *a, const char *b) {
	while (*a && *a == *b)
		a++, b++;
	return *a == *b;
}

// A child's failed step, as it tells the reaper on its error pipe.
enum { CHILD_EXEC, CHILD_SETRLIMIT, CHILD_CHDIR };
static const char *const childStage[] = {"exec", "setrlimit", "chdir", "landlock"};

// The waiting reaper's program (parse). Bounds: the message, and the
// strings of argv and the environment together; the supervisor sends
// nothing larger (nsjail.reaperFits), and execve refuses far less.
// They are mapped by the waiting reaper only, sized to the message
// (mapBuffers), not in this binary's bss: a reaper exec'd under the
// program's RLIMIT_DATA (the rlimit-only backend) would be refused a
// large one, and a large mapping may be backed by huge pages, which the
// first touch zeroes (2 MiB each where transparent huge pages are
// "always").
#define MAXMSG (4UL << 20)
#define MAXSTRS (1UL << 17)
#define MAXRLIMITS 16
static unsigned char *msg;
static char *strs, **ptrs;
static unsigned long mapped;

// mapBuffers maps room for a message of n bytes (its header included):
// each string has a length prefix of a byte at least, so there are at
// most n strings, whose bytes and NULs take at most n bytes.
static long mapBuffers(unsigned long n) {
	unsigned long size = n + (n + 1) + (n + 2) * sizeof(char *);
	long a = sys6(__NR_mmap, 0, (long)size, 3 /* PROT_READ|PROT_WRITE */, 0x22 /* MAP_PRIVATE|MAP_ANONYMOUS */, -1, 0);
	if (a < 0 && a > -4096)
		return a;
	msg = (unsigned char *)a;
	strs = (char *)(msg + n);
	ptrs = (char **)(strs + n + 1);
	mapped = size;
	return 0;
}

// readFull reads up to n bytes of fd into b, stopping at EOF: how many,
// or -errno.
static long readFull(int fd, unsigned char *b, unsigned long n) {
	unsigned long got = 0;
	while (got < n) {
		long r = SYS(__NR_read, fd, b + got, n - got);
		if (r == -4 /* EINTR */)
			continue;
		if (r < 0)
			return r;
		if (r == 0)
			break;
		got += (unsigned long)r;
	}
	return (long)got;
}

struct program {
	char **argv, **envp, *dir;
	unsigned long nrl;
	struct {
		unsigned long resource, cur, max;
	} rl[MAXRLIMITS];
};

// getuv reads a uvarint at *p (before end) into *v; 0 if there is none.
static int getuv(const unsigned char **p, const unsigned char *end, unsigned long *v) {
	unsigned long x = 0;
	for (int shift = 0; *p < end && shift < 64; shift += 7) {
		unsigned char b = *(*p)++;
		if (shift == 63 && b > 1)
			return 0; // past 64 bits, as Go's decoder refuses
		x |= (unsigned long)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = x;
			return 1;
		}
	}
	return 0;
}

// getstr copies a length-prefixed string at *p to *o, NUL-terminated
// (one with a NUL inside cannot be an argument: 0).
static int getstr(const unsigned char **p, const unsigned char *end, char **o) {
	unsigned long n;
	if (!getuv(p, end, &n) || n > (unsigned long)(end - *p))
		return 0;
	for (unsigned long i = 0; i < n; i++) {
		if (!(*p)[i])
			return 0;
		*(*o)++ = (char)(*p)[i];
	}
	*(*o)++ = 0;
	*p += n;
	return 1;
}

// parse decodes msg[0:n], programConfig as wire.go writes it: a 4-byte
// little-endian length, the version, argv and the environment (counts and
// strings), the working directory, the rlimits (zigzag resource, cur,
// max), no filter, no terminal; nothing after. 0, or -EINVAL.
static long parse(unsigned long n, struct program *pg) {
	const unsigned char *p = msg, *end = msg + n;
	char *o = strs, **q = ptrs;
	unsigned long v, used = 0; // strings so far: at most MAXSTRS, then two NULLs
	if (n < 5 || (msg[0] | msg[1] << 8 | msg[2] << 16 | (unsigned long)msg[3] << 24) != n - 4 || msg[4] != WIRE_VERSION)
		return -22;
	p += 5;
	for (int list = 0; list < 2; list++) {
		if (!getuv(&p, end, &v) || v > MAXSTRS - used || (list == 0 && v == 0))
			return -22;
		used += v;
		if (list == 0)
			pg->argv = q;
		else
			pg->envp = q;
		for (; v > 0; v--) {
			*q++ = o;
			if (!getstr(&p, end, &o))
				return -22;
		}
		*q++ = 0;
	}
	pg->dir = o;
	if (!getstr(&p, end, &o) || !getuv(&p, end, &pg->nrl) || pg->nrl > MAXRLIMITS)
		return -22;
	for (unsigned long i = 0; i < pg->nrl; i++) {
		// A resource is a small non-negative int (zigzag: even).
		if (!getuv(&p, end, &v) || !getuv(&p, end, &pg->rl[i].cur) || !getuv(&p, end, &pg->rl[i].max) || (v & 1) || v > 2 * 64)
			return -22;
		pg->rl[i].resource = v >> 1;
	}
	// No filter (it is loaded), no terminal.
	if (end - p != 2 || p[0] != 0 || p[1] != 0)
		return -22;
	return 0;
}

// executable: as the init's (the same newfstatat, following links), not
// a directory, some execute bit.
static long executable(const char *path) {
	struct stat st;
	long r = sys6(__NR_newfstatat, -100 /* AT_FDCWD */, (long)path, (long)&st, 0, 0, 0);
	if (r < 0)
		return r;
	if ((st.st_mode & 0170000) == 0040000 || (st.st_mode & 0111) == 0)
		return -13; // EACCES
	return 0;
}

static int startsWith(const char *s, const char *prefix) {
	while (*prefix && *s == *prefix)
		s++, prefix++;
	return !*prefix;
}

// lookexec execs the program as the init's lookPath finds it: a name
// with a slash as it is, if executable; else the first executable
// DIR/NAME along the environment's (last) PATH, "" standing for ".",
// /usr/local/bin:/usr/bin:/bin without one. It returns only on failure.
static long lookexec(char **argv, char **envp) {
	const char *file = argv[0];
	long r;
	for (const char *c = file; *c; c++)
		if (*c == '/')
			return (r = executable(file)) < 0 ? r : SYS(__NR_execve, file, argv, envp);
	const char *path = "/usr/local/bin:/usr/bin:/bin";
	for (char **e = envp; *e; e++)
		if (startsWith(*e, "PATH="))
			path = *e + 5;
	static char buf[4096];
	for (const char *d = path;; d++) {
		const char *dir = d;
		while (*d && *d != ':')
			d++;
		unsigned long dn = (unsigned long)(d - dir), fn = 0;
		while (file[fn])
			fn++;
		if (dn == 0)
			dir = ".", dn = 1;
		// A candidate longer than a path can be fails its stat as the
		// init's would (ENAMETOOLONG): skipped.
		if (dn + 1 + fn < sizeof buf) {
			char *b = buf;
			for (unsigned long i = 0; i < dn; i++)
				*b++ = dir[i];
			*b++ = '/';
			for (unsigned long i = 0; i <= fn; i++)
				*b++ = file[i];
			if (executable(buf) == 0)
				return SYS(__NR_execve, buf, argv, envp);
		}
		if (!*d)
			return -2; // ENOENT
	}
}

// Recycling (argv {"airlock-reaper", MASK, STATUSFD, "r", PROGFD, DIR...}): a
// waiting reaper that serves one run after another (nsjail.Spec.Recycle).
// Each run's stdin, stdout and stderr arrive as three fds (SCM_RIGHTS) on
// STATUSFD, then its program on PROGFD (framed: the pipe stays open).
// When the program ends, the run's every process is killed (kill -1 from
// pid 1: its whole pid namespace but itself) and reaped, then the
// sandbox is reset (reset): each DIR emptied (the writable tmpfs mounts:
// /tmp, /dev/shm, /dev/mqueue) with its mode restored, and checked: no
// SysV IPC object left, and pid 1's own attributes that its children
// inherit and a program of the same uid could change (rlimits, nice,
// scheduler, affinity, I/O priority, oom_score_adj) as they were. Only
// then the run's "ended" goes out, with "prepared" when all of that held;
// else the reaper ends after it and the supervisor discards the sandbox.
#define MAXWIPE 8
#define MAXDEPTH 64
static unsigned wipeMode[MAXWIPE];
static int nwipe;

struct dirent64 {
	unsigned long ino;
	long off;
	unsigned short reclen;
	unsigned char type;
	char name[];
};

static long fstatFd(int fd, struct stat *st) {
	return sys6(__NR_newfstatat, fd, (long)"", (long)st, 0x1000 /* AT_EMPTY_PATH */, 0, 0);
}

// wipeAt empties the directory fd, which is on device dev, depth levels
// below a wiped root; 0 if it could not (then the sandbox is discarded).
// Entries are unlinked as they are read; after a subdirectory (emptied
// and made writable first, whatever mode its program left), the scan
// starts over: the buffer is shared by every level.
static int wipeAt(int fd, unsigned long dev, int depth, int mq) {
	static char buf[4096] __attribute__((aligned(8)));
	if (depth > MAXDEPTH)
		return 0;
	for (;;) {
		long n = SYS(__NR_getdents64, fd, buf, sizeof buf);
		if (n == 0)
			return 1;
		if (n < 0)
			return 0;
		int rescan = 0;
		for (long off = 0; off < n && !rescan;) {
			struct dirent64 *d = (struct dirent64 *)(buf + off);
			off += d->reclen;
			if (d->name[0] == '.' && (!d->name[1] || (d->name[1] == '.' && !d->name[2])))
				continue;
			long r = SYS(__NR_unlinkat, fd, d->name, 0);
			if (r == 0)
				continue;
			// A queue of the mqueue root (mq): unlink is refused there
			// (EACCES), mq_unlink removes it.
			if (r == -13 /* EACCES */ && mq && SYS(__NR_mq_unlink, d->name, 0, 0) == 0)
				continue;
			if (r != -21 /* EISDIR */)
				return 0;
			// Its name, before the scan below reuses the buffer.
			char name[256];
			unsigned long i = 0;
			for (; d->name[i] && i < sizeof name - 1; i++)
				name[i] = d->name[i];
			name[i] = 0;
			long sub = SYS(__NR_openat, fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub == -13 /* EACCES */ && sys6(__NR_fchmodat, fd, (long)name, 0700, 0, 0, 0) == 0)
				sub = SYS(__NR_openat, fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub < 0)
				return 0;
			struct stat st;
			int ok = fstatFd((int)sub, &st) == 0 && st.st_dev == dev && SYS(__NR_fchmod, sub, 0700, 0) == 0 && wipeAt((int)sub, dev, depth + 1, 0);
			SYS(__NR_close, sub, 0, 0);
			if (!ok || SYS(__NR_unlinkat, fd, name, 0x200 /* AT_REMOVEDIR */) < 0 || SYS(__NR_lseek, fd, 0, 0) < 0)
				return 0;
			rescan = 1;
		}
	}
}

// The roots to empty and the /proc files read between runs are opened
// once, when the reaper starts: opening them again each run cost more
// than the rest of the reset. A root cannot be replaced (no mount), and
// its fd keeps working whatever mode a run gives it.
static int wipeFd[MAXWIPE], wipeMq[MAXWIPE];
static int ipcFd[3], oomFd;
static unsigned long wipeDev[MAXWIPE];
// What a root must still have after each run, besides its mode: its
// inode flags (chattr's: +A, +d, +C... a tmpfs root passes some on to new
// files) and its extended attributes' names (user.* on a tmpfs; the
// security.* a host's LSM set stay as they were).
static struct rootState {
	long flagsErr, flags;
	long nxattr;
	char xattrs[1024];
} wipeState[MAXWIPE];

static void rootState(int fd, struct rootState *rs) {
	unsigned char *z = (unsigned char *)rs;
	for (unsigned long i = 0; i < sizeof *rs; i++)
		z[i] = 0; // sameBytes compares every byte
	int flags = 0;
	rs->flagsErr = SYS(__NR_ioctl, fd, 0x80086601 /* FS_IOC_GETFLAGS */, &flags);
	rs->flags = flags;
	rs->nxattr = SYS(__NR_flistxattr, fd, rs->xattrs, sizeof rs->xattrs);
}

// wipe restores root i's mode and empties it; 0 if it could not, or if
// its flags or extended attributes changed.
static int wipe(int i) {
	struct stat st;
	static struct rootState now;
	int fd = wipeFd[i];
	if (fstatFd(fd, &st) < 0 || ((st.st_mode & 07777) != wipeMode[i] && SYS(__NR_fchmod, fd, wipeMode[i], 0) < 0))
		return 0;
	rootState(fd, &now);
	return sameBytes(&now, &wipeState[i], sizeof now) && SYS(__NR_lseek, fd, 0, 0) == 0 && wipeAt(fd, wipeDev[i], 0, wipeMq[i]);
}

// preadSmall reads a small /proc file, open as fd, from its start into b
// (NUL-terminated): its length, or -1.
static long preadSmall(int fd, char *b, unsigned long size) {
	long n;
	do
		n = sys6(__NR_pread64, fd, (long)b, (long)(size - 1), 0, 0, 0);
	while (n == -4);
	if (n < 0 || n == (long)size - 1)
		return -1;
	b[n] = 0;
	return n;
}

// noIPC: the SysV tables of the sandbox's IPC namespace hold nothing (a
// header line only). Objects outlive their processes; a run that left
// one ends the sandbox rather than hand it to the next.
static int noIPC(void) {
	char b[512];
	for (int i = 0; i < 3; i++) {
		long n = preadSmall(ipcFd[i], b, sizeof b);
		if (n <= 0)
			return 0;
		for (long j = 0; j < n - 1; j++)
			if (b[j] == '\n')
				return 0; // a second line: an object
	}
	return 1;
}

// openRecycling opens what the resets use (argv's roots, the /proc
// files) and records each root's mode and device: 0, or -errno.
static long openRecycling(int argc, char **argv) {
	static const char *const tables[] = {"/proc/sysvipc/shm", "/proc/sysvipc/sem", "/proc/sysvipc/msg"};
	struct stat st;
	long fd;
	for (int i = 4; i < argc; i++) {
		if ((fd = SYS(__NR_openat, -100, argv[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
			return fd;
		if (fstatFd((int)fd, &st) < 0)
			return -5;
		struct {
			long type, rest[15];
		} sfs;
		if (SYS(__NR_fstatfs, fd, &sfs, 0) < 0)
			return -5;
		wipeMq[nwipe] = sfs.type == 0x19800202; // MQUEUE_MAGIC
		rootState((int)fd, &wipeState[nwipe]);
		wipeFd[nwipe] = (int)fd, wipeMode[nwipe] = st.st_mode & 07777, wipeDev[nwipe++] = st.st_dev;
	}
	for (int i = 0; i < 3; i++)
		if ((ipcFd[i] = (int)SYS(__NR_openat, -100, tables[i], O_RDONLY | O_CLOEXEC)) < 0)
			return ipcFd[i];
	if ((oomFd = (int)SYS(__NR_openat, -100, "/proc/self/oom_score_adj", O_RDONLY | O_CLOEXEC)) < 0)
		return oomFd;
	return 0;
}

// attrs are pid 1's own inherited attributes that another process of its
// uid may change: a run must leave them as the first run found them.
struct attrs {
	struct rlimit rl[16];
	long nice, policy, ioprio;
	unsigned char affinity[512]; // 4096 CPUs
	long naff;
	// sched_getattr's: policy, nice, priority, and the utilization
	// clamps a process of the same uid may set (CONFIG_UCLAMP_TASK).
	unsigned char sched[56];
	long nsched;
	char oom[32];
};

static int getAttrs(struct attrs *a) {
	unsigned char *z = (unsigned char *)a;
	for (unsigned long i = 0; i < sizeof *a; i++)
		z[i] = 0; // sameAttrs compares every byte
	for (int i = 0; i < 16; i++)
		if (sys6(__NR_prlimit64, 0, i, 0, (long)&a->rl[i], 0, 0) < 0)
			return 0;
	a->nice = SYS(__NR_getpriority, 0 /* PRIO_PROCESS */, 0, 0);
	a->policy = SYS(__NR_sched_getscheduler, 0, 0, 0);
	a->ioprio = SYS(__NR_ioprio_get, 1 /* IOPRIO_WHO_PROCESS */, 0, 0);
	a->naff = SYS(__NR_sched_getaffinity, 0, sizeof a->affinity, a->affinity);
	a->nsched = sys6(__NR_sched_getattr, 0, (long)a->sched, sizeof a->sched, 0, 0, 0);
	return a->nice >= 0 && a->policy >= 0 && a->ioprio >= 0 && a->naff > 0 && a->nsched == 0 && preadSmall(oomFd, a->oom, sizeof a->oom) > 0;
}

static int sameAttrs(const struct attrs *a, const struct attrs *b) { return sameBytes(a, b, sizeof *a); }

// recvStreams receives a run's three stdio fds on the status socket: 1,
// 0 at EOF (the supervisor discarded the sandbox), or -errno.
static long recvStreams(int st, int fds[3]) {
	char byte;
	struct {
		unsigned long len;
		int level, type;
		int fd[3];
		int pad;
	} __attribute__((aligned(8))) cm;
	struct iov iov = {&byte, 1};
	struct msg msg = {0, 0, &iov, 1, &cm, sizeof cm, 0};
	long r;
	do
		r = SYS(__NR_recvmsg, st, &msg, 0x40000000 /* MSG_CMSG_CLOEXEC */);
	while (r == -4);
	if (r <= 0)
		return r;
	if (msg.controllen < sizeof(unsigned long) + 2 * sizeof(int) + 3 * sizeof(int) || cm.level != 1 || cm.type != 1 ||
	    cm.len != sizeof(unsigned long) + 2 * sizeof(int) + 3 * sizeof(int) || (msg.flags & 0x8 /* MSG_CTRUNC */))
		return -22;
	for (int i = 0; i < 3; i++)
		fds[i] = cm.fd[i];
	return 1;
}

// childFail tells the reaper which step failed and why, and ends.
static void __attribute__((noreturn)) childFail(int errp, long stage, long err) {
	long e[2] = {stage, err};
	SYS(__NR_write, errp, e, sizeof e);
	quit(127);
}

// dropSignals takes the pending signals of set, without waiting.
static void dropSignals(unsigned long set) {
	struct {
		long s, ns;
	} zero = {0, 0};
	while (sys6(__NR_rt_sigtimedwait, (long)&set, 0, (long)&zero, sizeof set, 0, 0) > 0)
		;
}

// readProgram reads a waiting reaper's program from progfd into msg and
// parses it: to its EOF (the supervisor closes the pipe after it), or,
// recycling, just the one framed message. 0, EOF (1: discarded unused),
// or -errno.
static long readProgram(int progfd, int framed, struct program *pg) {
	unsigned char hdr[4], extra;
	long r = readFull(progfd, hdr, sizeof hdr);
	if (r == 0)
		return 1;
	unsigned long n = r == 4 ? (hdr[0] | hdr[1] << 8 | hdr[2] << 16 | (unsigned long)hdr[3] << 24) + 4 : 0;
	if (n == 0 || n > MAXMSG)
		return r < 0 ? r : -22;
	if ((r = mapBuffers(n)) < 0)
		return r;
	for (int i = 0; i < 4; i++)
		msg[i] = hdr[i];
	if ((r = readFull(progfd, msg + 4, n - 4)) < 0)
		return r;
	if (r != (long)(n - 4) || (!framed && readFull(progfd, &extra, 1) != 0))
		return -22;
	return parse(n, pg);
}

// ksigaction is the kernel's struct sigaction on x86_64 and aarch64
// (both have sa_restorer); a set of signals is one word.
struct ksigaction {
	unsigned long handler, flags, restorer, mask;
};

// ignoreChld ignores SIGCHLD again, in the program's process before its
// exec, where the reaper found it ignored (reaper()).
static void ignoreChld(int ignored) {
	struct ksigaction ign = {.handler = 1};
	if (ignored)
		sys6(__NR_rt_sigaction, SIGCHLD, (long)&ign, 0, sizeof ign.mask, 0, 0);
}

// The process backend's reaper (nsjail Spec.Process): argv {"airlock-reaper",
// MASK, STATUSFD, "p", LANDLOCKFD, PPID, TTY, PATH, ARG0, ARGS...}. There
// is no pid namespace to take the program's processes with it, so this
// reaper does what the namespace would (internal/jailinit/reaper_linux.go
// says why it is safe from the program):
//   - it is a child subreaper: every orphan of the program is reparented
//     to it, reaped by it, and stays where it can be killed;
//   - its parent-death signal is SIGEND, taken like the forwarded ones
//     (the init's was SIGKILL, which would leave no time to clean up);
//     PPID is the supervisor, the parent it must still have once that is
//     set, or the supervisor died before (and the SIGKILL missed us);
//   - the supervisor's kill is SIGEND too, never SIGKILL;
//   - when the program ends, or on SIGEND, it kills every process left
//     (endAll) before it reports, so nothing outlives the run;
//   - the child applies the Landlock ruleset LANDLOCKFD (-1: none) just
//     before its exec, so the program's domain is nested below this
//     reaper's (none): Landlock's signal scope and ptrace rules keep the
//     program from signalling, stopping or tracing its reaper.
#define SIGEND 34
enum { CHILD_LANDLOCK = 3 };

static long childrenFd = -1; // /proc/thread-self/children, opened before the program

// killChildren sends SIGKILL to every child listed in childrenFd: the
// number it found, or -errno (the list unreadable, or a kill refused
// other than for a child already gone: a filter rule that denies kill).
// A number cut at the buffer's end is read again by the next round.
static long killChildren(void) {
	char buf[4096];
	long n = sys6(__NR_pread64, childrenFd, (long)buf, sizeof buf, 0, 0, 0), found = 0, pid = 0;
	if (n < 0)
		return n;
	for (long i = 0; i < n; i++) {
		if (buf[i] >= '0' && buf[i] <= '9') {
			pid = pid * 10 + (buf[i] - '0');
			continue;
		}
		long r = pid > 0 ? SYS(__NR_kill, pid, SIGKILL, 0) : -3;
		if (r == 0)
			found++;
		else if (r != -3 /* ESRCH */)
			return r;
		pid = 0;
	}
	return found;
}

// endAll kills and reaps every process below this reaper: as subreaper,
// each one whose parent dies becomes our child, so kill the children,
// reap, and again, until there are none (ECHILD). A forking tree
// converges: a process with SIGKILL pending forks no more, and each round
// takes the top of what is left. main's wait status is kept in *ws when
// it is reaped here. A zombie is still listed until reaped, so a round
// that found none is waited for without blocking, and the list read
// again.
static void endAll(int st, long main, int *ws, int *mainDone) {
	for (;;) {
		long found = killChildren();
		if (found < 0) {
			// What is left cannot be ended: no quiet "ended", a failure
			// the supervisor reports (and then it kills us).
			status(st, EV_FAILED, 0, "reaper", found, "airlock-reaper could not kill the run's remaining processes");
			quit(1);
		}
		// One wait that may block (a child was killed: it ends), then
		// every other child already ended, before the list is read again.
		int opts = found != 0 ? 0 : WNOHANG;
		for (;;) {
			int st = 0;
			long r = sys6(__NR_wait4, -1, (long)&st, opts | __WALL, 0, 0, 0);
			if (r == -10 /* ECHILD */)
				return;
			if (r <= 0)
				break;
			if (r == main && !*mainDone && (st & 0x7f) != 0x7f)
				*ws = st, *mainDone = 1;
			opts = WNOHANG;
		}
	}
}

// ksiginfo is the head of the kernel's siginfo_t on x86_64 and aarch64
// (the union after si_code is 8-aligned), as rt_sigtimedwait fills it: a
// sent signal's sender pid (as this process's pid namespace sees it) and
// uid; 128 bytes in all.
struct ksiginfo {
	int signo, err, code, pad;
	int pid, uid;
	char rest[128 - 24];
};

// fromOutside says whether pid 1 passes a signal it took on to the
// program: only one from outside the sandbox, as the host's init takes
// only the kernel's and ignores an ordinary process's. That is one sent
// by a process outside our pid namespace (the supervisor, the caller of
// airlock, anyone with the init's host pid: the kernel gives its si_pid
// as 0), or by the kernel (si_code > 0: a terminal's). One a process of
// the sandbox sends us (kill(1, SIGQUIT), a tgkill) is dropped, as a
// signal to init is: the program goes on. (A program can forge si_pid 0
// with rt_sigqueueinfo's SI_QUEUE; what it gains is a signal to its own
// process group, which it can send itself.) The process backend's reaper
// has no pid namespace of its own, so every sender has a pid: it passes
// on everything it takes, which Landlock's signal scope keeps to what
// comes from outside the program's domain (its wait loop).
static int fromOutside(const struct ksiginfo *si) {
	return si->code > 0 || si->pid == 0;
}

// The limits a cold reaper's child sets just before the program's exec
// (MASK's ",RESOURCE:CUR:MAX" entries, in hex: jailinit's
// deferredToReaper, the data and address-space limits), which the init
// leaves to it: they bound an exec's image, and the embedded reaper's (a
// cgo binary's, whose bss holds 32 MiB of Go's heap index) is far larger
// than a small program's.
#define MAXDEFERRED 8 // a limit given twice is set twice, the last one holding
struct limit {
	unsigned long resource, cur, max; // cur and max: a struct rlimit
};

// hexField parses the hex digits at *s up to a ',' or ':' (or the end)
// into *v, and moves *s to that character.
static int hexField(const char **s, unsigned long *v) {
	char b[17];
	int n = 0;
	for (; **s && **s != ',' && **s != ':'; (*s)++) {
		if (n == 16)
			return 0;
		b[n++] = **s;
	}
	b[n] = 0;
	return hexnum(b, v);
}

// parseMask parses MASK[,RESOURCE:CUR:MAX]...: the mask into *mask and
// the limits into l; how many limits, or -1.
static int parseMask(const char *s, unsigned long *mask, struct limit *l) {
	int n = 0;
	if (!hexField(&s, mask))
		return -1;
	while (*s == ',') {
		s++;
		if (n == MAXDEFERRED || !hexField(&s, &l[n].resource) || l[n].resource >= 64 || *s != ':')
			return -1;
		s++;
		if (!hexField(&s, &l[n].cur) || *s != ':')
			return -1;
		s++;
		if (!hexField(&s, &l[n].max))
			return -1;
		n++;
	}
	return *s ? -1 : n;
}

// execWaited is a waiting reaper's child's part, after its setsid, in
// the init's order: its own streams when it has them (fds; ours are
// close-on-exec), its terminal as its controlling one (tty), its rlimits,
// working directory and signal mask (MASK), SIGCHLD as the reaper found
// it, the PATH lookup and the exec. A failed step goes to errp
// (childFail); it never returns.
static void __attribute__((noreturn)) execWaited(int errp, const int *fds, int tty, const struct program *pg, unsigned long mask, int chldIgnored) {
	long r;
	for (int i = 0; fds && i < 3; i++)
		if ((r = fds[i] == i ? SYS(__NR_fcntl, i, F_SETFD, 0) : SYS(__NR_dup3, fds[i], i, 0)) < 0)
			childFail(errp, CHILD_EXEC, r);
	if (tty && (r = SYS(__NR_ioctl, 0, TIOCSCTTY, 0)) < 0)
		childFail(errp, CHILD_EXEC, r);
	for (unsigned long i = 0; i < pg->nrl; i++)
		if ((r = sys6(__NR_prlimit64, 0, (long)pg->rl[i].resource, (long)&pg->rl[i].cur, 0, 0, 0)) < 0)
			childFail(errp, CHILD_SETRLIMIT, r);
	if ((r = SYS(__NR_chdir, pg->dir, 0, 0)) < 0)
		childFail(errp, CHILD_CHDIR, r);
	sys6(__NR_rt_sigprocmask, SIG_SETMASK, (long)&mask, 0, sizeof mask, 0, 0);
	ignoreChld(chldIgnored);
	childFail(errp, CHILD_EXEC, lookexec(pg->argv, pg->envp));
}

// Live (argv {"airlock-reaper", MASK, STATUSFD, "l", PROGFD}): pid 1 of a
// sandbox that lives (nsjail.Live), into which any number of processes
// enter, at once or one after another, until the supervisor ends it (its
// SIGKILL to this pid 1, which takes the whole pid namespace, or EOF on
// STATUSFD). Each process is this reaper's child, so it runs under
// exactly the confinement pid 1 has: the filter, the Landlock domain
// (one domain: the sandbox's processes may signal one another, as in any
// sandbox, and nothing outside it), no capability, the sandbox's ids,
// namespaces and cgroup. Nothing here is privileged: the supervisor
// resolved every process's spec (argv, environment, directory, rlimits),
// this only carries it out, as the waiting reaper does for one program.
//
// Requests come on STATUSFD (a SOCK_SEQPACKET socket), one struct liveReq
// each; events go back on it, one struct liveEv each (magic LIVE_MAGIC,
// never the first word of an init status message, whose first byte is
// its version). Single-threaded: a ppoll on STATUSFD and a signalfd of
// SIGCHLD and the forwarded signals, which stay blocked.
//   - START id [flags TTY], with the process's stdin, stdout and stderr
//     as SCM_RIGHTS (a terminal's slave three times with TTY), then its
//     program on PROGFD (framed, as recycling sends it): the child does
//     what the waiting reaper's does (its own session, its streams, the
//     terminal as its controlling one, rlimits, chdir, the signal mask,
//     lookup and exec); STARTED id pid once it was exec'd, or FAILED id
//     stage errno. Its end (reaped on SIGCHLD): ENDED id wait-status.
//     STARTED always goes before ENDED: the table entry exists before any
//     wait, and waits happen only in the poll loop.
//   - SIGNAL id sig [flags GROUP]: to the process's group (it leads one)
//     or the process; one that ended is nothing to signal. The pid is
//     ours until we reap it, so it never names another process.
//   - DIAL id port [flags V6]: a TCP socket connecting to 127.0.0.1 (or
//     ::1) port in the sandbox's own network namespace, non-blocking;
//     DIALED id 0 with the socket as SCM_RIGHTS, or DIALED id errno.
//   - OPEN id which: an O_PATH descriptor of /workspace (0) or /tmp (1),
//     the supervisor's way into the sandbox's own tmpfs mounts, or a
//     pty's master from the sandbox's own /dev/ptmx (2); OPENED.
// Forwarded signals sent to pid 1 from outside are dropped: no process is
// "the" program; the supervisor signals each through SIGNAL. An orphan
// (a background process whose parent ended) is reaped silently.
#define LIVE_MAGIC 0x4556494cU // "LIVE"
enum { LIVE_START = 1, LIVE_SIGNAL, LIVE_DIAL, LIVE_OPEN };
enum { EVL_STARTED = 1, EVL_FAILED, EVL_ENDED, EVL_DIALED, EVL_OPENED };
struct liveReq {
	unsigned op, id;
	int arg;
	unsigned flags;
};
struct liveEv {
	unsigned magic, kind, id;
	int a, b;
};
#define MAXLIVE 1024 // processes started and not yet reaped (nsjail.liveMaxProcs)
static struct {
	unsigned id;
	int pid;
} live[MAXLIVE];
static int nlive;

// liveSend sends one event, with fd (>= 0) as SCM_RIGHTS. A supervisor
// that is gone loses it; the loop then sees EOF.
static void liveSend(int st, unsigned kind, unsigned id, int a, int b, int fd) {
	struct liveEv ev = {LIVE_MAGIC, kind, id, a, b};
	struct {
		unsigned long len;
		int level, type;
		int fd;
		int pad;
	} __attribute__((aligned(8))) cm = {sizeof(unsigned long) + 3 * sizeof(int), 1 /* SOL_SOCKET */, 1 /* SCM_RIGHTS */, fd, 0};
	struct iov iov = {&ev, sizeof ev};
	struct msg m = {0, 0, &iov, 1, fd >= 0 ? &cm : 0, fd >= 0 ? cm.len : 0, 0};
	long r;
	do
		r = SYS(__NR_sendmsg, st, &m, 0x4000 /* MSG_NOSIGNAL */);
	while (r == -4 || r == -11 /* EAGAIN: a full socket; the supervisor reads */);
}

static void __attribute__((noreturn)) liveFatal(int st, long err, const char *what) {
	status(st, EV_FAILED, 0, "reaper", err, what);
	quit(1);
}

// liveRecv receives one request and its fds (up to three, close-on-exec):
// 1, 0 at EOF, or -errno. Anything but a whole request with the fds its
// op carries is -EINVAL (fds that came are closed).
static long liveRecv(int st, struct liveReq *rq, int fds[3]) {
	struct {
		unsigned long len;
		int level, type;
		int fd[3];
		int pad;
	} __attribute__((aligned(8))) cm;
	struct iov iov = {rq, sizeof *rq};
	struct msg m = {0, 0, &iov, 1, &cm, sizeof cm, 0};
	long r;
	do
		r = SYS(__NR_recvmsg, st, &m, 0x40000000 /* MSG_CMSG_CLOEXEC */);
	while (r == -4);
	if (r <= 0)
		return r;
	int n = 0;
	if (m.controllen >= sizeof(unsigned long) + 2 * sizeof(int) && cm.level == 1 && cm.type == 1)
		n = (int)((cm.len - sizeof(unsigned long) - 2 * sizeof(int)) / sizeof(int));
	if (n > 3)
		n = 3;
	for (int i = 0; i < 3; i++)
		fds[i] = i < n ? cm.fd[i] : -1;
	if (r != sizeof *rq || (m.flags & 0x8 /* MSG_CTRUNC */) || n != (rq->op == LIVE_START ? 3 : 0)) {
		for (int i = 0; i < n; i++)
			SYS(__NR_close, cm.fd[i], 0, 0);
		return -22;
	}
	return 1;
}

// liveStart starts one process (START): 0, or -errno when pid 1 cannot go
// on (the process's own failures are its FAILED event).
static long liveStart(int st, int progfd, const struct liveReq *rq, int fds[3], unsigned long mask, int chldIgnored) {
	static struct program pg;
	long r = readProgram(progfd, 1, &pg);
	if (r != 0) {
		for (int i = 0; i < 3; i++)
			SYS(__NR_close, fds[i], 0, 0);
		return r == 1 ? -32 /* EPIPE: the supervisor is gone */ : r;
	}
	int errp[2] = {-1, -1};
	long child = nlive == MAXLIVE ? -11 /* EAGAIN: the supervisor bounds its processes below this */ : SYS(__NR_pipe2, errp, O_CLOEXEC, 0);
	if (child == 0)
		child = SYS(__NR_clone, SIGCHLD, 0, 0); // a fork
	if (child == 0) {
		// The process: a session of its own, then what a waiting
		// reaper's child does.
		SYS(__NR_setsid, 0, 0, 0);
		execWaited(errp[1], fds, rq->flags & 1, &pg, mask, chldIgnored);
	}
	for (int i = 0; i < 3; i++)
		SYS(__NR_close, fds[i], 0, 0); // the process's only
	SYS(__NR_munmap, msg, mapped, 0);   // the child has its copy
	if (child < 0) {
		for (int i = 0; i < 2; i++)
			if (errp[i] >= 0)
				SYS(__NR_close, errp[i], 0, 0);
		liveSend(st, EVL_FAILED, rq->id, CHILD_EXEC, (int)-child, -1);
		return 0;
	}
	SYS(__NR_close, errp[1], 0, 0);
	// Ordering: in the table before anything can reap it.
	live[nlive].id = rq->id, live[nlive].pid = (int)child, nlive++;
	// EOF: exec'd (errp is close-on-exec); else why not.
	long e[2] = {0, 0};
	do
		r = SYS(__NR_read, errp[0], e, sizeof e);
	while (r == -4);
	SYS(__NR_close, errp[0], 0, 0);
	if (r == 0) {
		liveSend(st, EVL_STARTED, rq->id, (int)child, 0, -1);
		return 0;
	}
	sys6(__NR_wait4, child, 0, __WALL, 0, 0, 0);
	nlive--; // the last entry: ours
	if (r != sizeof e || e[0] < CHILD_EXEC || e[0] > CHILD_CHDIR)
		e[0] = CHILD_EXEC, e[1] = -5; // EIO
	liveSend(st, EVL_FAILED, rq->id, (int)e[0], (int)-e[1], -1);
	return 0;
}

// liveReap reaps every child that ended; a started process's end is its
// ENDED event, an orphan's nothing.
static void liveReap(int st) {
	int ws;
	long r;
	while ((r = sys6(__NR_wait4, -1, (long)&ws, WNOHANG | __WALL, 0, 0, 0)) > 0) {
		if ((ws & 0x7f) == 0x7f)
			continue; // a stop (not asked for)
		for (int i = 0; i < nlive; i++) {
			if (live[i].pid != r)
				continue;
			liveSend(st, EVL_ENDED, live[i].id, ws, 0, -1);
			live[i] = live[--nlive];
			break;
		}
	}
}

static void liveSignal(const struct liveReq *rq) {
	if (rq->arg <= 0 || rq->arg > 64)
		return;
	for (int i = 0; i < nlive; i++) {
		if (live[i].id != rq->id)
			continue;
		// Its group, which it leads; gone (its leader's setsid failed?
		// never: setsid cannot fail in a fresh child) the process alone.
		if (!(rq->flags & 1) || SYS(__NR_kill, -live[i].pid, rq->arg, 0) == -3 /* ESRCH */)
			SYS(__NR_kill, live[i].pid, rq->arg, 0);
		return;
	}
}

static void liveDial(int st, const struct liveReq *rq) {
	int v6 = rq->flags & 1;
	long fd = SYS(__NR_socket, v6 ? 10 /* AF_INET6 */ : 2 /* AF_INET */, 1 /* SOCK_STREAM */ | 0x800 /* SOCK_NONBLOCK */ | O_CLOEXEC, 0);
	long r = fd;
	if (fd >= 0 && (rq->arg <= 0 || rq->arg > 65535))
		r = -22;
	else if (fd >= 0) {
		unsigned char sa[28] = {0};
		unsigned port = (unsigned)rq->arg;
		sa[0] = v6 ? 10 : 2;
		sa[2] = (unsigned char)(port >> 8), sa[3] = (unsigned char)port;
		if (v6)
			sa[23] = 1; // ::1 (sin6_addr at offset 8)
		else
			sa[4] = 127, sa[7] = 1; // 127.0.0.1
		r = SYS(__NR_connect, fd, sa, v6 ? 28 : 16);
		if (r == -115 /* EINPROGRESS */)
			r = 0; // the supervisor waits for it (SO_ERROR)
	}
	liveSend(st, EVL_DIALED, rq->id, (int)-r, 0, r == 0 ? (int)fd : -1);
	if (fd >= 0)
		SYS(__NR_close, fd, 0, 0);
}

static void liveOpen(int st, const struct liveReq *rq) {
	static const char *const dirs[] = {"/workspace", "/tmp"};
	long fd = -22;
	if (rq->arg == 0 || rq->arg == 1)
		fd = sys6(__NR_openat, -100 /* AT_FDCWD */, (long)dirs[rq->arg], 010000000 /* O_PATH */ | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0, 0, 0);
	else if (rq->arg == 2) // a pty's master of the sandbox's own devpts (its slave is /dev/pts/N inside)
		fd = sys6(__NR_openat, -100, (long)"/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC | 04000 /* O_NONBLOCK */, 0, 0, 0);
	liveSend(st, EVL_OPENED, rq->id, fd < 0 ? (int)-fd : 0, 0, fd >= 0 ? (int)fd : -1);
	if (fd >= 0)
		SYS(__NR_close, fd, 0, 0);
}

struct pollfd {
	int fd;
	short events, revents;
};

static void __attribute__((noreturn)) liveLoop(int st, int progfd, unsigned long set, unsigned long mask, int chldIgnored) {
	// The signals stay blocked (the init blocked them; reaper() set the
	// mask): the signalfd takes them, SIGCHLD included.
	long sfd = sys6(__NR_signalfd4, -1, (long)&set, sizeof set, O_CLOEXEC | 04000 /* O_NONBLOCK */, 0, 0);
	if (sfd < 0)
		liveFatal(st, sfd, "airlock-reaper: signalfd");
	status(st, EV_PREPARED, 0, "", 0, "");
	for (;;) {
		struct pollfd p[2] = {{st, 1 /* POLLIN */, 0}, {(int)sfd, 1, 0}};
		long r = sys6(__NR_ppoll, (long)p, 2, 0, 0, sizeof set, 0);
		if (r == -4)
			continue;
		if (r < 0)
			liveFatal(st, r, "airlock-reaper: ppoll");
		if (p[1].revents) {
			static struct ksiginfo si[8]; // signalfd_siginfo is 128 bytes too
			while (SYS(__NR_read, sfd, si, sizeof si) > 0)
				;
			liveReap(st);
		}
		if (!p[0].revents)
			continue;
		struct liveReq rq;
		int fds[3];
		if ((r = liveRecv(st, &rq, fds)) == 0)
			quit(0); // the supervisor closed us: the namespace goes with us
		if (r < 0)
			liveFatal(st, r, "airlock-reaper: a request");
		switch (rq.op) {
		case LIVE_START:
			if ((r = liveStart(st, progfd, &rq, fds, mask, chldIgnored)) < 0)
				liveFatal(st, r, "airlock-reaper: a process's program");
			break;
		case LIVE_SIGNAL:
			liveSignal(&rq);
			break;
		case LIVE_DIAL:
			liveDial(st, &rq);
			break;
		case LIVE_OPEN:
			liveOpen(st, &rq);
			break;
		default:
			liveFatal(st, -22, "airlock-reaper: an unknown request");
		}
	}
}

static void __attribute__((noreturn)) reaper(int argc, char **argv, char **envp) {
	// MASK first; the rest as before it was added (argv[1] the status fd).
	unsigned long mask = 0;
	static struct limit deferred[MAXDEFERRED];
	int ndeferred = argc >= 2 ? parseMask(argv[1], &mask, deferred) : -1;
	if (ndeferred < 0)
		quit(126);
	argc--, argv++;
	// The process backend's reaper: its three arguments taken, the rest
	// is as for the jail's (STATUSFD moved into PPID's place).
	int proc = argc >= 7 && equal(argv[2], "p");
	long llfd = -1, ppid = 0;
	if (proc) {
		llfd = num(argv[3]), ppid = num(argv[4]);
		if (llfd < -1 || llfd > 65535 || ppid <= 0)
			quit(126);
		argv[4] = argv[1];
		argc -= 3, argv += 3;
	}
	int recycle = argc >= 4 && equal(argv[2], "r"), islive = argc == 4 && equal(argv[2], "l");
	int waits = recycle || islive || (argc == 4 && equal(argv[2], "w"));
	long fd = argc >= 4 ? num(argv[1]) : -1, tty = waits ? 0 : argc >= 5 ? num(argv[2]) : -1;
	long progfd = waits ? num(argv[3]) : -1;
	if (fd < 3 || fd > 65535 || tty < 0 || tty > 1 || (waits && (progfd < 3 || progfd > 65535 || progfd == fd)) || (recycle && argc > 4 + MAXWIPE) ||
	    (proc && (waits || llfd == fd)))
		quit(126);
	int st = (int)fd;
	// Ours are the signals we forward and SIGCHLD, taken with sigtimedwait;
	// the program's are MASK (its caller's, where the supervisor set them:
	// nsjail.Spec.SetSignals).
	unsigned long set = forwardedSigs | BIT(SIGCHLD) | (proc ? BIT(SIGEND) : 0);
	sys6(__NR_rt_sigprocmask, SIG_SETMASK, (long)&set, 0, sizeof set, 0, 0);
	if (proc) {
		// SIGEND was blocked from the init's birth (its supervisor's
		// thread), for us: not the program's.
		mask &= ~BIT(SIGEND);
		// Ordering: the parent-death signal is ours before the check
		// that the supervisor is still our parent; until then its SIGKILL
		// (the init's) covers a supervisor that dies. The subreaper bit
		// and the children list before the program exists.
		long r = SYS(__NR_prctl, PR_SET_PDEATHSIG, SIGEND, 0);
		if (r == 0 && SYS(__NR_getppid, 0, 0, 0) != ppid)
			quit(1); // the supervisor is gone: nothing to start
		if (r == 0)
			r = SYS(__NR_prctl, PR_SET_CHILD_SUBREAPER, 1, 0);
		if (r == 0)
			r = childrenFd = sys6(__NR_openat, -100 /* AT_FDCWD */, (long)"/proc/thread-self/children", O_RDONLY | O_CLOEXEC, 0, 0, 0);
		if (r >= 0 && llfd >= 0)
			r = SYS(__NR_fcntl, llfd, F_SETFD, FD_CLOEXEC);
		if (r < 0) {
			status((int)fd, EV_FAILED, 0, "reaper", r, "airlock-reaper setup (process backend)");
			quit(1);
		}
	}
	static struct ksiginfo si; // who sent what we take (fromOutside)
	// SIGCHLD as the init left it is the program's (its caller's, where
	// the supervisor set the dispositions: nsjail.Spec.SetSignals), but
	// ours must be the default: ignored, the kernel would reap the program
	// itself and send no SIGCHLD, and we would wait for it forever. The
	// child ignores it again before its exec.
	struct ksigaction dfl = {0}, old = {0};
	int chldIgnored = sys6(__NR_rt_sigaction, SIGCHLD, 0, (long)&old, sizeof old.mask, 0, 0) == 0 && old.handler == 1;
	if (chldIgnored)
		sys6(__NR_rt_sigaction, SIGCHLD, (long)&dfl, 0, sizeof dfl.mask, 0, 0);
	// Not dumpable: the program, our child with the same ids, can neither
	// ptrace us nor reach our memory or fds through /proc/1.
	long r = SYS(__NR_prctl, PR_SET_DUMPABLE, 0, 0);
	if (r < 0 || (r = SYS(__NR_fcntl, st, F_SETFD, FD_CLOEXEC)) < 0 || (waits && (r = SYS(__NR_fcntl, progfd, F_SETFD, FD_CLOEXEC)) < 0)) {
		status(st, EV_FAILED, 0, "reaper", r, "airlock-reaper setup");
		quit(1);
	}
	if (islive)
		liveLoop(st, (int)progfd, set, mask, chldIgnored);
	static struct attrs first, now;
	int canRecycle = 0;
	if (recycle) {
		// What a reset restores (the modes) or checks against. Where
		// that cannot be known (a /proc file, a call this host refuses),
		// the sandbox serves one run: after it, no "prepared" comes.
		canRecycle = openRecycling(argc, argv) == 0 && getAttrs(&first);
		for (int i = 0; i < nwipe; i++)
			canRecycle &= wipeState[i].nxattr >= 0;
	}
	// Set up: the sandbox is prepared (the supervisor's Prepare returns
	// on this report, so a failure before it is Prepare's).
	if (waits)
		status(st, EV_PREPARED, 0, "", 0, "");
	static struct program pg;
	for (;;) { // one run, or (recycling) one a turn
		int errp[2], fds[3] = {-1, -1, -1};
		// The run's streams (recycling), then its program, or EOF: a
		// sandbox discarded (the supervisor kills it anyway).
		if (recycle && (r = recvStreams(st, fds)) <= 0) {
			if (r == 0)
				quit(0);
			status(st, EV_FAILED, 0, "reaper", r, "airlock-reaper: the run's streams");
			quit(1);
		}
		if (waits) {
			r = readProgram((int)progfd, recycle, &pg);
			if (!recycle)
				SYS(__NR_close, progfd, 0, 0);
			if (r == 1)
				quit(recycle ? 0 : 1);
			if (r < 0) {
				status(st, EV_FAILED, 0, "reaper", r, "airlock-reaper: the program message");
				quit(1);
			}
		}
		if (recycle)
			dropSignals(set); // sent between runs: not this run's
		if ((r = SYS(__NR_pipe2, errp, O_CLOEXEC, 0)) < 0) {
			status(st, EV_FAILED, 0, "reaper", r, "airlock-reaper setup");
			quit(1);
		}
		long child = SYS(__NR_clone, SIGCHLD, 0, 0); // a fork
		if (child == 0) {
			// The program: a session of its own (with its terminal, a pty of
			// its own, never the caller's: --tty, as its controlling one), its
			// signal mask (MASK).
			SYS(__NR_setsid, 0, 0, 0);
			if (waits) // recycling: the run's own streams
				execWaited(errp[1], recycle ? fds : 0, 0, &pg, mask, chldIgnored);
			if (tty && (r = SYS(__NR_ioctl, 0, TIOCSCTTY, 0)) < 0)
				childFail(errp[1], CHILD_EXEC, r);
			for (int i = 0; i < ndeferred; i++)
				if ((r = sys6(__NR_prlimit64, 0, (long)deferred[i].resource, (long)&deferred[i].cur, 0, 0, 0)) < 0)
					childFail(errp[1], CHILD_SETRLIMIT, r);
			// The process backend: the program's Landlock domain, nested
			// below ours (the fd closes at the exec). The program dies with
			// us should we die before we could kill it (SIGKILL, or a
			// supervisor gone between its start and our "started").
			if (proc && (r = SYS(__NR_prctl, PR_SET_PDEATHSIG, SIGKILL, 0)) < 0)
				childFail(errp[1], CHILD_EXEC, r);
			if (proc && llfd >= 0 && (r = SYS(__NR_landlock_restrict_self, llfd, 0, 0)) < 0)
				childFail(errp[1], CHILD_LANDLOCK, r);
			sys6(__NR_rt_sigprocmask, SIG_SETMASK, (long)&mask, 0, sizeof mask, 0, 0);
			ignoreChld(chldIgnored);
			childFail(errp[1], CHILD_EXEC, SYS(__NR_execve, argv[3], argv + 4, envp));
		}
		SYS(__NR_close, errp[1], 0, 0);
		for (int i = 0; i < 3; i++)
			if (fds[i] >= 0)
				SYS(__NR_close, fds[i], 0, 0); // the run's streams are the child's only
		if (waits)
			SYS(__NR_munmap, msg, mapped, 0); // the child has its copy; pid 1 keeps no pages of it
		if (child < 0) {
			status(st, EV_FAILED, 0, "reaper", child, "fork");
			quit(1);
		}
		// EOF: the program was exec'd (errp is close-on-exec); else why not.
		long e[2] = {0, 0};
		do
			r = SYS(__NR_read, errp[0], e, sizeof e);
		while (r == -4 /* EINTR */);
		SYS(__NR_close, errp[0], 0, 0);
		int ws = 0, started = r == 0;
		if (!started) {
			sys6(__NR_wait4, child, 0, __WALL, 0, 0, 0);
			if (r != sizeof e || e[0] < CHILD_EXEC || e[0] > CHILD_CHDIR + proc)
				e[0] = CHILD_EXEC, e[1] = -5; // EIO
			// The waiting reaper's reports carry no message: the supervisor
			// names the errno, as for the init's own reports.
			status(st, EV_FAILED, 0, childStage[e[0]], e[1], waits || e[0] != CHILD_EXEC ? "" : argv[3]);
			if (!recycle)
				quit(1);
			// Recycling: nothing ran (the child failed before its exec);
			// the same reset all the same, and the sandbox serves on.
		} else {
			status(st, EV_STARTED, 0, "", 0, "");
			int ended = 0;
			while (!ended) {
				while (!ended && (r = sys6(__NR_wait4, -1, (long)&ws, WNOHANG | __WALL, 0, 0, 0)) > 0)
					ended = r == child && (ws & 0x7f) != 0x7f; // else an orphan, or a stop
				if (ended)
					break;
				r = sys6(__NR_rt_sigtimedwait, (long)&set, (long)&si, 0, sizeof set, 0, 0);
				if (proc && r == SIGEND)
					break; // the supervisor's kill, or its death
				// The process backend's reaper has no pid namespace: every
				// sender has a pid, and what reaches it comes from outside
				// the program's Landlock domain (its signal scope keeps the
				// program's own away), so all of it is passed on.
				if (r > 0 && r != SIGCHLD && (proc || fromOutside(&si)) && SYS(__NR_kill, -child, r, 0) == -3 /* ESRCH */)
					SYS(__NR_kill, child, r, 0);
			}
			if (proc)
				endAll(st, child, &ws, &ended); // before "ended": nothing outlives the run
			if (!recycle) {
				status(st, EV_ENDED, (unsigned)ws, "", 0, ""); // lost only if the supervisor is gone
				quit((ws & 0x7f) == 0 ? (ws >> 8) & 0xff : 128 + (ws & 0x7f));
			}
		}
		// Recycling. Ordering: every process of the run is gone (killed,
		// then reaped: a zombie's writes are done) before "ended", so
		// the run's streams are at their EOF when the supervisor reads
		// it, and before the reset, so nothing writes into what is being
		// emptied. "ended" goes before the reset: the run is over, and
		// the supervisor's limits (timeout, CPU) no longer apply to it.
		// Signals that arrived for the run since are dropped.
		SYS(__NR_kill, -1, SIGKILL, 0);
		while ((r = sys6(__NR_wait4, -1, 0, __WALL, 0, 0, 0)) != -10 /* ECHILD */)
			if (r < 0 && r != -4)
				break;
		if (started)
			status(st, EV_ENDED, (unsigned)ws, "", 0, "");
		dropSignals(set);
		int ok = canRecycle && r == -10 && noIPC() && getAttrs(&now) && sameAttrs(&first, &now);
		for (int i = 0; ok && i < nwipe; i++)
			ok = wipe(i);
		if (!ok)
			quit(1); // the supervisor sees EOF: the sandbox goes
		status(st, EV_PREPARED, 0, "", 0, "");
	}
}

#ifdef AIRLOCK_EMBEDDED
// Embedded (AIRLOCK_EMBEDDED: this directory's Go package compiles this
// file into every cgo binary that links nsjail; doc.go): only the reaper, run from a
// constructor, which glibc calls with argc, argv and envp before Go's
// runtime starts. In any other process it returns at once, having done
// nothing.
__attribute__((constructor)) static void embeddedReaper(int argc, char **argv, char **envp) {
	if (argc >= 1 && equal(argv[0], "airlock-reaper"))
		reaper(argc, argv, envp);
}
#else
void start(long *sp) {
	int argc = (int)sp[0];
	char **argv = (char **)(sp + 1), **envp = argv + argc + 1;
	if (argc >= 1 && equal(argv[0], "airlock-reaper"))
		reaper(argc, argv, envp);
	if (argc != 10)
		quit(126); // no report fd to speak on: the supervisor sees the exit
	long flags = num(argv[1]), uid = num(argv[2]), gid = num(argv[3]), cgfd = num(argv[6]);
	long rfd = num(argv[7]);
	inuid = num(argv[4]), ingid = num(argv[5]);
	if (rfd < 3 || rfd > 65535)
		quit(126);
	reportfd = (int)rfd;
	if (flags <= 0 || uid < 0 || gid < 0 || inuid < 0 || ingid < 0 || inuid > 65533 || ingid > 65533 || cgfd < -1 || cgfd > 65535 || (flags & ~(long)(CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP)) != 0)
		fail(STEP_ARGS, -22 /* EINVAL */);
	// Neither the report socket nor the cgroup directory reaches the init,
	// nor any fd past them: one the supervisor's own caller leaked to it
	// (Go passes on every fd not marked close-on-exec).
	SYS(__NR_fcntl, reportfd, F_SETFD, FD_CLOEXEC);
	if (cgfd >= 0)
		SYS(__NR_fcntl, cgfd, F_SETFD, FD_CLOEXEC);
	int last = reportfd > cgfd ? reportfd : (int)cgfd;
	if (SYS(__NR_close_range, last + 1, ~0U, 0) < 0) {
		struct rlimit nofile;
		if (sys6(__NR_prlimit64, 0, RLIMIT_NOFILE, 0, (long)&nofile, 0, 0) < 0 || nofile.rlim_cur > (1 << 20))
			nofile.rlim_cur = 1 << 20;
		for (unsigned long fd = last + 1; fd < nofile.rlim_cur; fd++)
			SYS(__NR_close, fd, 0, 0);
	}

	int syncp[2], errp[2];
	long r;
	if ((r = SYS(__NR_pipe2, syncp, O_CLOEXEC, 0)) < 0 || (r = SYS(__NR_pipe2, errp, O_CLOEXEC, 0)) < 0)
		fail(STEP_CLONE, r);

	naff = SYS(__NR_sched_getaffinity, 0, sizeof affinity, affinity);
	int pidfd = -1;
	long pid;
	if (cgfd >= 0) {
		// Born in its cgroup: not even its own setup escapes the limits.
		struct clone_args3 ca = {0};
		ca.flags = (__u64)flags | CLONE_PIDFD | CLONE_INTO_CGROUP;
		ca.pidfd = (__u64)(unsigned long)&pidfd;
		ca.exit_signal = SIGCHLD;
		ca.cgroup = (__u64)cgfd;
		pid = SYS(__NR_clone3, &ca, sizeof ca, 0);
	} else {
		// clone(flags, stack, parent_tid, ...): with CLONE_PIDFD the pidfd
		// is stored at parent_tid, on both architectures.
		pid = SYS(__NR_clone, flags | CLONE_PIDFD | SIGCHLD, 0, &pidfd);
	}
	if (pid < 0)
		fail(STEP_CLONE, pid);
	if (pid == 0) {
		SYS(__NR_close, syncp[1], 0, 0);
		SYS(__NR_close, errp[0], 0, 0);
		child(syncp[0], errp[1], argv[8], argv + 9, envp);
	}
	// The child first runs on this CPU, which is free once we wait for
	// it below; left to the scheduler it is often queued behind the
	// supervisor's busy thread on the other CPU while this one idles (a
	// new task is placed when it is cloned, and an idle CPU does not take
	// over a task that was just queued elsewhere): on a 2-CPU machine
	// that was up to 0.9 ms of a cold start. It is a hint; the child
	// restores the affinity (child(): the same mask) before its exec.
	pinToThisCPU(pid);
	// The helper keeps nothing of the sandbox: not its stdio, channels or
	// tasks files (the init has its own copies; a pipe whose reader died
	// must break for the supervisor), nor the cgroup directory. Those are
	// fds 0 to the highest argument fd; the pipes were made after them.
	// (syncp[0] stays open here until the child is done with it: a write
	// to a pipe without a reader would kill us with SIGPIPE.)
	SYS(__NR_close, errp[1], 0, 0);
	for (int fd = 0; fd <= last; fd++)
		if (fd != reportfd)
			SYS(__NR_close, fd, 0, 0);

	// The maps, as the parent namespace's owner: root of the sandbox is
	// the one host id (setgroups denied first, as an unprivileged writer
	// must and as Go does).
	int step = STEP_UID_MAP;
	if ((r = writeProc(pid, "uid_map", 0, inuid, uid)) == 0) {
		step = STEP_SETGROUPS;
		if ((r = writeProc(pid, "setgroups", "deny", 0, 0)) == 0) {
			step = STEP_GID_MAP;
			r = writeProc(pid, "gid_map", 0, ingid, gid);
		}
	}
	if (r < 0) {
		// The init is blocked in its read: it goes, then we report.
		SYS(__NR_close, syncp[1], 0, 0);
		sys6(__NR_wait4, pid, 0, __WALL, 0, 0, 0);
		fail(step, r);
	}
	// The child's two steps (see child): maps written; then, once it
	// acks that it dies with us, go on to the exec. Then EOF on errp: the
	// exec happened (errp is close-on-exec); else why it did not.
	__s32 e[2];
	int acked = 0;
	if ((r = SYS(__NR_write, syncp[1], "x", 1)) != 1)
		goto failed;
	for (;;) {
		do
			r = SYS(__NR_read, errp[0], e, sizeof e);
		while (r == -4);
		if (r != sizeof e || e[0] != STEP_OK || acked)
			break;
		acked = 1;
		if ((r = SYS(__NR_write, syncp[1], "x", 1)) != 1)
			goto failed;
	}
	if (r == 0 && acked)
		goto exec;
failed:
	SYS(__NR_close, syncp[1], 0, 0); // a child still waiting sees EOF
	sys6(__NR_wait4, pid, 0, __WALL, 0, 0, 0);
	if (r == sizeof e && e[0] != STEP_OK)
		fail(e[0], -(long)e[1]);
	fail(STEP_SYNC, r < 0 ? r : -5 /* EIO */);
exec:
	SYS(__NR_close, syncp[0], 0, 0);
	SYS(__NR_close, syncp[1], 0, 0);
	SYS(__NR_close, errp[0], 0, 0);
	report(STEP_OK, 0, (int)pid, pidfd);
	SYS(__NR_close, reportfd, 0, 0);
	SYS(__NR_close, pidfd, 0, 0);

	// Wait, and end as the init ended. The rusage of our wait4 (Go's) then
	// covers the init's, since we reaped it.
	int st = 0;
	do
		r = sys6(__NR_wait4, pid, (long)&st, __WALL, 0, 0, 0);
	while (r == -4);
	if (r < 0)
		quit(126);
	if ((st & 0x7f) == 0)
		quit((st >> 8) & 0xff);
	int sig = st & 0x7f;
	// Killed by sig: die by it too, without a core file.
	struct rlimit no = {0, 0};
	sys6(__NR_prlimit64, 0, RLIMIT_CORE, (long)&no, 0, 0, 0);
	unsigned long none = 0;
	sys6(__NR_rt_sigprocmask, SIG_SETMASK, (long)&none, 0, sizeof none, 0, 0);
	SYS(__NR_kill, SYS(__NR_getpid, 0, 0, 0), sig, 0);
	quit(128 + sig);
}
#endif
#endif
