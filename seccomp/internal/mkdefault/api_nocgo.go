//go:build !cgo

package main

import "errors"

// setAPI: a build without cgo has no libseccomp (main refuses to run).
func setAPI(uint) error { return errors.New("this build has no libseccomp: run it with cgo") }
