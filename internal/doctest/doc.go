// Package doctest holds tests of airlock's documentation, so that it
// cannot rot unnoticed: every relative link in README.md and docs/*.md
// resolves to a file (and a #anchor to a heading), each docs/ file opens
// with a summary, the README's quick-start shell blocks run against a
// freshly built airlock and print what they say, and the README's library
// snippet is the body of executor's Example_readme, which compiles and
// runs with the executor tests.
//
// # Writing a tested block
//
// A fenced sh block in README.md preceded by the line <!-- doctest -->
// is run by bash -e -o pipefail in an empty directory, with the airlock,
// airlock-init and airlock-spawn of $AIRLOCK_TEST_BINDIR first on PATH.
// Lines starting with "#>" are its expected standard output, in order
// ("..." in one matches any text); standard error is not compared. A
// command expected to fail says so: cmd || echo "exit $?". Every sh
// block of the Quick start section must be marked.
//
// The tests read the source tree next to this file; a pass that cannot
// read it (the rootless pass, when the checkout is private) skips them,
// and the root pass runs them.
package doctest
