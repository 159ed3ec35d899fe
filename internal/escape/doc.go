// Package escape holds airlock's black-box escape suite: one probe per
// threat of notes/threats.md, run inside a sandbox, judged from the host.
// The package has no code; the probes are in testdata/probes and the
// harness and verdicts in the tests.
package escape
