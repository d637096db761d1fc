#!/usr/bin/env bash
# Fails when a build log holds a compiler warning in the project's own code (Sources, Tools, Tests),
# so a new warning cannot land unnoticed. Warnings in dependencies (under .build) are not ours.
# Usage: scripts/check-warnings.sh BUILD_LOG
set -euo pipefail
log="${1:?usage: $0 BUILD_LOG}"
ours="$(grep -E '^/[^ ]+\.(swift|c|h):[0-9]+:[0-9]+: warning:' "$log" | grep -v '/\.build' | sort -u || true)"
if [ -n "$ours" ]; then
  echo "The build printed warnings in the project's own code; fix them:"
  echo "$ours"
  exit 1
fi
