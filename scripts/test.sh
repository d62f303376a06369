#!/usr/bin/env bash
# Runs every test: installs what is missing, prepares the HAProxy versions (Debian 12's 2.6, and
# 3.0, 3.2 and 3.4 from Debian's newer suites: scripts/haproxy-versions.sh), builds the plain and
# the ASan+UBSan builds, runs the unit, contract, integration and e2e suites (the plain build on
# every HAProxy version, the ASan build on 2.6), and checks formatting.
#   scripts/test.sh            everything
#   HAWK_SKIP_ASAN=1 scripts/test.sh   plain build only (quicker, local use)
set -euo pipefail
cd "$(dirname "$0")/.."

presets=(default)
[[ "${HAWK_SKIP_ASAN:-0}" == 1 ]] || presets+=(asan)
# First: the build reads the versions' manifest to register one run per version.
scripts/haproxy-versions.sh
HAWK_TEST_TOOLS=1 scripts/setup.sh "${presets[@]}"

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
