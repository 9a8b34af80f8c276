#!/bin/sh
# Runs a command (tsx, vitest…) on Node.js 24, the runtime the functions have on Lambda
# (serverless.yml: provider.runtime nodejs24.x), whatever Node runs npm itself.
#
# The binary comes from the npm registry with `npm install`: package.json's optionalDependencies name
# the node-<os>-<cpu> package of each platform the registry carries Node 24 for (linux x64 and arm64:
# 24.21.0; macOS x64: 24.18.1, the newest 24 there), npm installs only the one matching this machine
# and links its binary as node_modules/.bin/node. That directory leads PATH here (as it does in any
# npm script), so the command (`#!/usr/bin/env node`) and everything it starts, by process.execPath or
# by the name `node` or `npm`, runs on it: tsx and the script, serverless offline and the handlers in
# its worker threads, vitest's workers, `npm start` inside the tests.
#
# A platform without such a package (macOS on Apple silicon: the registry has no Node 24 for it) runs
# the command on the system Node, with a one-line warning.
root=$(cd "$(dirname "$0")/.." && pwd)
bin="$root/node_modules/.bin"
version=$("$bin/node" --version 2>/dev/null) || version=''
case "$version" in
  v24.*) ;;
  *)
    if [ -e "$bin/node" ]; then
      # Installed but not Node 24 or not runnable here (a musl Linux with the glibc build, say): the
      # npm scripts' PATH would still find it first, so stop rather than fail later in a stranger way.
      echo "[switchboard] $bin/node is not a Node.js 24 that runs on this $(uname -s) $(uname -m) (it says: ${version:-nothing}); run npm ci, or remove node_modules/node-*-*/ to use the system Node.js" >&2
      exit 1
    fi
    echo "[switchboard] warning: no Node.js 24 from the npm registry for this $(uname -s) $(uname -m); running on the system Node.js $(node --version 2>/dev/null || echo '(none found)'), not the nodejs24.x the functions run on in Lambda" >&2
    ;;
esac
PATH="$bin:$PATH"
export PATH
exec "$@"
