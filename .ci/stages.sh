# The stages of .ci/run (sourced by it; bash): every stage runs whatever became of the ones
# before it, and `finish` fails the script at the end, naming each stage that failed.  A
# failing pytest must not hide the stages after it (set -e would stop at the first one).

CI_FAILED=()

# record NAME RC: note how a stage ended (for commands that must run in this shell, such as
# the README's, which activate a venv for the stages after them)
record() {
  local name=$1 rc=$2
  if [ "$rc" -eq 0 ]; then
    echo "CI: passed: $name" >&2
  else
    echo "CI: FAILED (exit $rc): $name" >&2
    CI_FAILED+=("$name (exit $rc)")
  fi
  return 0
}

# stage NAME CMD [ARGS...]: run one stage and record it
stage() {
  local name=$1
  shift
  echo "CI: --- $name" >&2
  "$@"
  record "$name" $?
}

# finish: 0 when every stage passed; else list the failed ones and return 1
finish() {
  if [ "${#CI_FAILED[@]}" -eq 0 ]; then
    echo "CI: every stage passed" >&2
    return 0
  fi
  echo "CI: ${#CI_FAILED[@]} stage(s) failed:" >&2
  printf 'CI:   - %s\n' "${CI_FAILED[@]}" >&2
  return 1
}
