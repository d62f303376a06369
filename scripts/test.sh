#!/usr/bin/env bash
# Runs every test: installs what is missing, builds the plain and the ASan+UBSan builds, runs
# the unit, contract and integration suites in both, and checks formatting.
#   scripts/test.sh            everything
#   HAWK_SKIP_ASAN=1 scripts/test.sh   plain build only (quicker, local use)
set -euo pipefail
cd "$(dirname "$0")/.."

presets=(default)
[[ "${HAWK_SKIP_ASAN:-0}" == 1 ]] || presets+=(asan)
scripts/setup.sh "${presets[@]}"

for preset in "${presets[@]}"; do
  echo "== ctest ($preset)"
  ctest --preset "$preset" -j 2 --timeout 600
done

if command -v clang-format >/dev/null; then
  echo "== clang-format"
  git ls-files -- 'agent/*.cc' 'agent/*.h' 'tests/*.cc' 'tests/*.h' 'bench/*.cc' |
    xargs clang-format --dry-run --Werror
fi
echo "all tests passed"
