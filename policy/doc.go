// Package policy holds airlock's declarative sandbox policy and its error
// classes.
//
// # Policy
//
// A Policy says what a sandbox may do: its wall-clock and CPU limits,
// memory, tasks, file size and descriptors, network mode, extra mounts,
// working directory and environment. Zero values mean the defaults of
// Default (30 s, 512 MiB, 256 tasks, no network, 1 MiB of output per
// stream). Parse reads a JSON or YAML policy and rejects unknown fields,
// naming the field (and, for JSON, the line and column) of a mistake.
//
// # Errors
//
// Every error airlock returns belongs to one class, tested with errors.Is:
// ErrInvalid (fix the request, do not retry), ErrUnsupported (this host
// cannot enforce the policy: do not retry here), ErrUnavailable (transient,
// a retry may help). Details travel in *InvalidError, *UnsupportedError and
// *SetupError. Program outcomes (exit codes, signals, timeouts, output
// overflow) are results, never errors.
//
// # Fail closed
//
// A policy that asks for a control the host cannot enforce is refused with
// an *UnsupportedError that names the control and the fix, unless
// BestEffort is set; what was enforced is always reported in the result.
package policy
