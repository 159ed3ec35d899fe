# airlock's code-interpreter driver for bash: one persistent shell, each
# cell one line of base64 on stdin, run in this shell (its variables,
# functions and working directory persist), then a message on fd 1:
# "\x1e" + JSON + "\n". Written for airlock.
__airlock_n=0
while IFS= read -r __airlock_line; do
  __airlock_n=$((__airlock_n + 1))
  printf '\036{"type":"number_of_executions","execution_count":%d}\n' "$__airlock_n"
  __airlock_code=$(printf '%s' "$__airlock_line" | base64 -d)
  eval "$__airlock_code" </dev/null
  __airlock_rc=$?
  if [ "$__airlock_rc" -ne 0 ]; then
    printf '\036{"type":"error","name":"ExitCode","value":"exit status %d","traceback":"the cell exited with status %d"}\n' "$__airlock_rc" "$__airlock_rc"
  fi
  printf '\036{"type":"end_of_execution"}\n'
done
