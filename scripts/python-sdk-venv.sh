#!/usr/bin/env bash
# Makes, once, the Python venv in which test/clients/python-sdk.test.ts runs the MCP Python SDKs
# of test/clients/requirements.txt (from PyPI, through pip's own configuration), and prints its
# path. The venv sits in node_modules/.cache, named by the Python version and a digest of the
# requirements, so a run with it already made installs nothing, and another Python or another
# pin makes another venv. It counts as made once pip has succeeded (the file .installed): a run
# that was interrupted before is made again from scratch. .ci/run calls it before the tests; the
# test calls it too (a no-op when CI made it). Needs Python 3.10 or later (PYTHON=… picks another).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
requirements="$root/test/clients/requirements.txt"
python=${PYTHON:-python3}

if ! command -v "$python" >/dev/null 2>&1; then
  echo "python-sdk-venv: '$python' not found; the Python client test needs Python 3.10 or later (set PYTHON=…)" >&2
  exit 1
fi
key=$("$python" - "$requirements" <<'PY'
import hashlib, sys
if sys.version_info < (3, 10):
    sys.exit(f"python-sdk-venv: Python {sys.version.split()[0]} is too old; mcp needs 3.10 or later")
with open(sys.argv[1], "rb") as f:
    digest = hashlib.sha256(f.read()).hexdigest()[:12]
print(f"py{sys.version_info.major}.{sys.version_info.minor}-{digest}")
PY
)
venv="$root/node_modules/.cache/tasklatch-python-sdk/$key"
if [ -f "$venv/.installed" ]; then
  echo "$venv"
  exit 0
fi

rm -rf "$venv"
mkdir -p "$(dirname "$venv")"
"$python" -m venv "$venv" >&2
# One retry per index, not five with backoff: an index this machine cannot reach (a mirror
# beside it answers) costs seconds, not minutes.
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --retries "${PIP_RETRIES:-1}" -r "$requirements" >&2
cp "$requirements" "$venv/.installed"
echo "$venv"
