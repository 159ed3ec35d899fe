// Package early starts the sandbox's init of an `airlock run` while Go
// initializes the CLI's packages, about a millisecond before main: the
// spawn helper's clone into the namespaces, the init's exec and its Go
// runtime's start then run on the other core while the CLI starts its
// own runtime, parses its flags and makes its Executor. The CLI hands
// the launch to executor.Adopt (nsjail.Started says what was started,
// nsjail.Adopt checks that the run fits it); a launch that does not fit
// is killed, and the run goes on as without it.
//
// It launches only what the CLI would launch for the request anyway, so
// that a launch is seldom wasted: `airlock run` whose flags before the
// program are among launchNeutral (they set limits, mounts and the
// program's environment, which the init gets later with its spec), or
// `airlock exec` with those, --lang and its code given with -c, with
// the CLI's own stdin, stdout and stderr, the default policy's ids and
// no network, on a host whose cgroups are not v2 only (there a cold
// init is born in its cgroup, which does not exist yet at this point),
// with airlock-init and airlock-spawn beside the binary, from a build
// with a build token. Anything else, --json, --tty, --net, --uid,
// --gid, --policy, --preset, --backend, --max-output and --help among
// it, starts nothing here.
//
// Nothing untrusted runs before the CLI sends the init its spec: the
// init waits for it, in its namespaces, as a launched one does. If the
// CLI exits without using it (a flag's value refused, an error before
// the run), the helper's parent-death signal kills it, and the init dies
// with the helper: the signal is bound to the thread that forked the
// helper, which is Go's main thread here (package initialization runs
// there) and never exits before the process.
//
// This package imports only what Go initializes before it anyway (os,
// syscall, time, and internal/launchabi and internal/prefault, which
// have no initializer), so that it is initialized as early as possible:
// Go initializes packages in the order of their import paths, each once
// its imports are. Once it has launched, it populates the CLI's heap
// window (internal/prefault), which the launch no longer waits for.
package early
