package main

// sandboxUsage is airlock sandbox's usage, in every build (help lists it;
// sandbox.go, the client, is the full build's, sandbox_slim.go the slim
// CLI's).
const sandboxUsage = `usage: airlock sandbox COMMAND [flags] [ARGS]

Live sandboxes of a running airlock serve (docs/sandboxes.md):
  create [flags]                       make one; prints its id
  exec [-t] [-i] [-d] [-e K=V] [-w DIR] ID -- PROGRAM [ARGS...]
                                       run a process in it (exit code as airlock run's;
                                       -d prints the pid and leaves it running)
  ps ID                                its processes
  ls                                   your open sandboxes
  logs [-f] ID PID                     a process's output (-f: follow to its end)
  kill [-s SIGNAL] ID [PID]            signal a process (default TERM); without PID, the sandbox: as rm
  rm ID...                             kill everything in it and remove it
  cp SRC DST                           copy a file in or out: ID:PATH names one in /workspace

Every command takes --server unix:PATH|http://HOST:PORT (default $AIRLOCK_SERVER,
else the default socket of airlock serve) and --token-file FILE (default
$AIRLOCK_TOKEN).`
