#!/usr/bin/env bash
# Installs the MCP servers the tt-adapter-tools-mcp tests start (idempotent):
# - the npm packages @modelcontextprotocol/server-everything and server-filesystem, pinned,
#   into target/mcp-servers (or $TT_MCP_SERVERS_DIR, or the first argument);
# - the Python `mcp` SDK, pinned, for tests/servers/py_server.py.
# Needs node (>= 20) with npm, and python3 with pip.
set -euo pipefail

EVERYTHING_VERSION=2026.8.31
FILESYSTEM_VERSION=2026.8.31
PYTHON_MCP_VERSION=2.3.0

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../../.." && pwd)"
dir="${1:-${TT_MCP_SERVERS_DIR:-$root/target/mcp-servers}}"
mkdir -p "$dir"

for tool in node npm python3; do
    command -v "$tool" >/dev/null || { echo "install.sh: $tool is missing" >&2; exit 1; }
done

want_everything="$dir/node_modules/@modelcontextprotocol/server-everything/package.json"
want_filesystem="$dir/node_modules/@modelcontextprotocol/server-filesystem/package.json"
installed() { [ -f "$1" ] && grep -q "\"version\": \"$2\"" "$1"; }
if installed "$want_everything" "$EVERYTHING_VERSION" && installed "$want_filesystem" "$FILESYSTEM_VERSION"; then
    echo "install.sh: npm servers already in $dir"
else
    [ -f "$dir/package.json" ] || echo '{"private": true}' >"$dir/package.json"
    npm install --prefix "$dir" --no-audit --no-fund --save-exact \
        "@modelcontextprotocol/server-everything@$EVERYTHING_VERSION" \
        "@modelcontextprotocol/server-filesystem@$FILESYSTEM_VERSION"
fi

if python3 -c "import importlib.metadata as m, sys; sys.exit(m.version('mcp') != '$PYTHON_MCP_VERSION')" 2>/dev/null; then
    echo "install.sh: python mcp $PYTHON_MCP_VERSION already installed"
else
    # Debian's python refuses a system-wide pip install without this flag (PEP 668).
    flag=""
    if python3 -m pip install --help 2>/dev/null | grep -q -- --break-system-packages; then
        flag="--break-system-packages"
    fi
    python3 -m pip install --quiet $flag "mcp==$PYTHON_MCP_VERSION"
fi
echo "install.sh: MCP test servers ready in $dir"
