package executor_test

import (
	"context"
	"fmt"
	"log"

	"github.com/airlock-sandbox/airlock/executor"
)

// The README's library example: run Python code with a JSON input under
// the default policy. The marked lines are README.md's main, less its
// nsjail.Init() (TestMain calls it here); internal/doctest checks that
// the two are the same.
func Example_readme() {
	// README.md begins
	ex, err := executor.New(executor.Config{})
	if err != nil {
		log.Fatal(err) // errors.Is(err, executor.ErrUnsupported): this host cannot; the message names the fix
	}
	defer ex.Close()
	res, err := ex.Execute(context.Background(), executor.Request{
		Language: "python",
		Code:     `import json, os; print(json.load(open(os.environ["AIRLOCK_INPUT"]))["n"] * 2)`,
		Input:    []byte(`{"n": 21}`),
	})
	if err != nil {
		log.Fatal(err) // no trusted outcome; errors.Is(err, executor.ErrUnavailable): a retry may help
	}
	fmt.Println(res.Status, res.Stdout) // ok 42; a timeout or a kill is a Result too
	// README.md ends

	// Output: ok 42
}
