package jailinit

// buildToken pairs an airlock binary with an init built apart from it
// (cmd/airlock-init, see nsjail.Spec.InitPath). scripts/build sets one random
// value in both with
//
//	-ldflags "-X github.com/airlock-sandbox/airlock/internal/jailinit.buildToken=..."
//
// and the init refuses a parent whose token differs from its own: a
// stale init left beside a newer airlock fails the run (setup_error)
// instead of building sandboxes with old code. Binaries built without it
// ("") pair only with each other; the default init, the calling binary
// re-executed, always matches.
var buildToken string

// BuildToken returns the token this binary was built with ("" if none).
func BuildToken() string { return buildToken }
