//go:build !airlock_slim

package main

import (
	"errors"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/policy"
)

// The full airlock (airlock-daemon, or a plain go build) runs everything
// itself: see daemon_slim.go for the CLI that does not.

func delegated(string) bool { return false }

func needsDaemon(*executor.Executor, policy.Policy) (control, why string) { return "", "" }

func handsOverInput() bool { return false }

func daemonExec(string, []string, string, string) error {
	return &policy.SetupError{Stage: "airlock-daemon", Err: errors.New("BUG(airlock): this build runs everything itself")}
}
