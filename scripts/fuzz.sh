#!/usr/bin/env bash
# Runs every fuzz target under libFuzzer (clang 14, ASan + UBSan) for a while each, starting from
# its seed corpus; what it finds grows build/fuzz/corpus/<target>, crashes go to build/fuzz/.
#   scripts/fuzz.sh [seconds per target, default 60]
#   HAWK_FUZZ_TARGETS="wire_fuzz json_fuzz" scripts/fuzz.sh 600   some targets only
# The same targets replay their seeds in every ctest run (tests/fuzz/CMakeLists.txt): copy an
# input that failed into tests/fuzz/corpus/ once it is fixed.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
scripts/setup.sh fuzz

declare -A seeds=(
  [framer_fuzz]="tests/fixtures tests/fuzz/corpus/framer"
  [cli_reply_fuzz]=tests/fixtures
  [http_request_fuzz]=tests/fuzz/corpus/http_request
  [json_fuzz]=tests/fuzz/corpus/json
  [line_replies_fuzz]="tests/fixtures/haproxy-3.2 tests/fixtures/haproxy-3.4 tests/fuzz/corpus/line_replies"
  [wire_fuzz]="tests/fuzz/corpus/json tests/fuzz/corpus/wire"
  [confined_dir_fuzz]=tests/fuzz/corpus/confined_dir
)
status=0
targets=("${!seeds[@]}")
[[ -n "${HAWK_FUZZ_TARGETS:-}" ]] && read -r -a targets <<<"$HAWK_FUZZ_TARGETS"
for target in "${targets[@]}"; do
  corpus=build/fuzz/corpus/$target
  mkdir -p "$corpus"
  echo "== $target (${seconds} s)"
  if ! build/fuzz/tests/fuzz/$target -max_total_time="$seconds" -print_final_stats=1 \
      -artifact_prefix="build/fuzz/$target-" "$corpus" ${seeds[$target]} \
      >"build/fuzz/$target.log" 2>&1; then
    status=1
    echo "$target FAILED: see build/fuzz/$target.log"
  fi
  grep -E '^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)|^#[0-9]+ *DONE' \
    "build/fuzz/$target.log" || true
done
exit $status
