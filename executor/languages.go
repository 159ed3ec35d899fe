package executor

import (
	"os"
	"slices"
	"sort"
)

// Language says how to run a source file of one language in the sandbox.
// Every language receives its input the same way: the code is the file
// /workspace/<File>; argv follows it on the command line; stdin is the
// request's Stdin; a JSON input is the file /workspace/input.json, whose
// path is also in $AIRLOCK_INPUT.
type Language struct {
	// Name is the request's name for it, e.g. "python".
	Name string `json:"name"`
	// Aliases are other accepted names, e.g. "python3", "py".
	Aliases []string `json:"aliases,omitempty"`
	// Interpreter is the program, looked up in /usr/local/bin, /usr/bin
	// and /bin (what the sandbox sees); "" when not installed.
	Interpreter string `json:"interpreter"`
	// Flags go between the interpreter and the source file.
	Flags []string `json:"flags,omitempty"`
	// File is the source file's name in /workspace.
	File string `json:"file"`
}

// languages is the table: names, interpreters, flags, file names. Python
// runs isolated (-I: no user site directory, no PYTHON* variables).
var languages = []Language{
	{Name: "python", Aliases: []string{"python3", "py"}, Interpreter: "python3", Flags: []string{"-I"}, File: "main.py"},
	{Name: "node", Aliases: []string{"javascript", "js", "nodejs"}, Interpreter: "node", File: "main.js"},
	{Name: "bash", Interpreter: "bash", File: "main.sh"},
	{Name: "sh", Aliases: []string{"shell"}, Interpreter: "sh", File: "main.sh"},
	{Name: "ruby", Aliases: []string{"rb"}, Interpreter: "ruby", File: "main.rb"},
	{Name: "perl", Aliases: []string{"pl"}, Interpreter: "perl", File: "main.pl"},
	{Name: "php", Interpreter: "php", File: "main.php"},
	{Name: "lua", Interpreter: "lua", File: "main.lua"},
}

// detectLanguages returns the table's languages whose interpreter is
// installed where the sandbox sees programs, with the full path.
func detectLanguages() map[string]Language {
	out := map[string]Language{}
	for _, l := range languages {
		for _, dir := range []string{"/usr/local/bin", "/usr/bin", "/bin"} {
			p := dir + "/" + l.Interpreter
			if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
				l.Interpreter = p
				out[l.Name] = l
				for _, a := range l.Aliases {
					out[a] = l
				}
				break
			}
		}
	}
	return out
}

// command is the argv that runs l's source file, in the workspace at
// root as the program sees it, with the given arguments.
func (l Language) command(root string, argv []string) []string {
	return slices.Concat([]string{l.Interpreter}, l.Flags, []string{root + "/" + l.File}, argv)
}

// names lists the installed languages' canonical names, sorted.
func names(m map[string]Language) []string {
	var out []string
	for k, l := range m {
		if k == l.Name {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}
