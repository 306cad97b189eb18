#!/usr/bin/env bash
# Installs the MCP servers the tt-adapter-tools-mcp tests start (idempotent):
# - the npm packages @modelcontextprotocol/server-everything and server-filesystem, exactly as
#   locked in npm/package-lock.json (npm ci), into target/mcp-servers (or $TT_MCP_SERVERS_DIR,
#   or the first argument; the tests look in the same place);
# - the Python `mcp` SDK, pinned, for py_server.py.
# Needs node (>= 18) with npm, and python3 (>= 3.10) with pip.
set -euo pipefail

PYTHON_MCP_VERSION=2.3.0

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../../.." && pwd)"
dir="${1:-${TT_MCP_SERVERS_DIR:-$root/target/mcp-servers}}"

for tool in node npm python3; do
    command -v "$tool" >/dev/null || { echo "install.sh: $tool is missing" >&2; exit 1; }
done

mkdir -p "$dir"
if cmp -s "$here/npm/package-lock.json" "$dir/package-lock.json" \
    && [ -f "$dir/node_modules/@modelcontextprotocol/server-everything/dist/index.js" ] \
    && [ -f "$dir/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js" ]; then
    echo "install.sh: npm servers already in $dir"
else
    cp "$here/npm/package.json" "$here/npm/package-lock.json" "$dir/"
    npm ci --prefix "$dir" --no-audit --no-fund --ignore-scripts
fi

if python3 -c "import importlib.metadata as m, sys; sys.exit(m.version('mcp') != '$PYTHON_MCP_VERSION')" 2>/dev/null; then
    echo "install.sh: python mcp $PYTHON_MCP_VERSION already installed"
else
    flags=(--quiet)
    # Debian's python refuses a pip install outside a virtualenv without this flag (PEP 668).
    if python3 -m pip install --help 2>/dev/null | grep -q -- --break-system-packages; then
        flags+=(--break-system-packages)
    fi
    [ "$(id -u)" = 0 ] || flags+=(--user)
    python3 -m pip install "${flags[@]}" "mcp==$PYTHON_MCP_VERSION"
fi
echo "install.sh: MCP test servers ready in $dir"
