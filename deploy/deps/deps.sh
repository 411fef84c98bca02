#!/usr/bin/env bash
# What `make run` and `make test` need from the machine, installed when it is missing, so that
# a fresh clone needs only those two commands (and .ci/run only calls them):
#   run:  PostgreSQL's server binaries (initdb, postgres), unless DATABASE_URL names a database
#   test: those, Node.js and npm, the TypeScript SDK suite's npm packages (npm ci in
#         testdata/tsclients, pinned by its package-lock.json), and Chromium (the page tests)
# System packages come from apt-get, as root or through sudo (which may ask for a password);
# where that cannot work (not root and no sudo, no apt-get, no network) it stops with the exact
# command to run. When everything is there it costs a few file tests and no process.
#
# Usage: deploy/deps/deps.sh run|test
# GATEWAY_DEPS=install (default) | check (stop with the commands instead of installing) |
#   skip (install nothing, only say what the tests will skip)
# GATEWAY_DEPS_ROOT: a root for the fixed install paths below (its tests use a fake one).
set -u

mode=${1:-test}
policy=${GATEWAY_DEPS:-install}
root=${GATEWAY_DEPS_ROOT:-}
tsdir=testdata/tsclients
here=${0%/*}
[ "$here" = "$0" ] && here=.
cd "$here/../.." || exit 1 # the repository root, whoever calls

case $mode in run | test) ;; *) echo "usage: $0 run|test" >&2; exit 2 ;; esac
case $policy in install | check | skip) ;; *) echo "deps: GATEWAY_DEPS=$policy: want install, check or skip" >&2; exit 2 ;; esac

say() { printf 'deps: %s\n' "$*"; }

# The same places the code looks: pgcluster's binDir, the page tests' chromium().
have_postgres() {
	local f
	for f in "$root"/usr/lib/postgresql/*/bin/initdb; do
		[ -x "$f" ] && return 0
	done
	command -v initdb >/dev/null 2>&1
}
have_node() { command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; }
# npm writes node_modules/.package-lock.json at the end of an install; a package-lock.json
# newer than it (a pull that moved a pin) asks for npm ci again.
have_tspkgs() {
	[ -f "$tsdir/node_modules/.package-lock.json" ] && ! [ "$tsdir/package-lock.json" -nt "$tsdir/node_modules/.package-lock.json" ]
}
have_chromium() {
	[ -x "$root/usr/lib/chromium/chromium" ] && return 0
	command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || command -v google-chrome >/dev/null 2>&1
}

# What is missing: labels and the apt packages that bring them.
labels=() pkgs=()
# make run with DATABASE_URL uses that database and starts no local server.
if [ "$mode" = test ] || [ -z "${DATABASE_URL:-}" ]; then
	have_postgres || { labels+=("PostgreSQL server"); pkgs+=(postgresql); }
fi
tspkgs_missing=""
if [ "$mode" = test ]; then
	have_node || { labels+=("Node.js and npm"); pkgs+=(nodejs npm); }
	have_tspkgs || tspkgs_missing=1
	have_chromium || { labels+=("Chromium"); pkgs+=(chromium); }
fi
[ ${#pkgs[@]} -eq 0 ] && [ -z "$tspkgs_missing" ] && exit 0

npm_cmd="(cd $tsdir && npm ci)"
if [ "$policy" = skip ]; then
	[ ${#labels[@]} -gt 0 ] && say "GATEWAY_DEPS=skip: missing ${labels[*]}; the tests that need them skip or fail"
	[ -n "$tspkgs_missing" ] && say "GATEWAY_DEPS=skip: the TypeScript SDK suite will be SKIPPED ($npm_cmd installs its packages)"
	exit 0
fi

# How to reach the package manager, or why not. sudo is asked only here, not on the fast path.
sudo=""
why=""
if [ ${#pkgs[@]} -gt 0 ]; then
	if ! command -v apt-get >/dev/null 2>&1; then
		why="there is no apt-get here: install ${labels[*]} with the system's package manager (e.g. dnf install postgresql-server nodejs npm chromium; brew install postgresql node chromium)"
	elif [ "$(id -u)" != 0 ]; then
		if command -v sudo >/dev/null 2>&1; then
			sudo="sudo "
		else
			why="not root and no sudo: as root, run: apt-get update && apt-get install -y ${pkgs[*]}"
		fi
	fi
fi
apt_cmd="${sudo}apt-get update && ${sudo}apt-get install -y ${pkgs[*]}"
if [ "$policy" = check ] || [ -n "$why" ]; then
	[ ${#labels[@]} -gt 0 ] && say "missing ${labels[*]}; ${why:-run: $apt_cmd}"
	if [ -n "$tspkgs_missing" ]; then
		if [ ${#labels[@]} -gt 0 ]; then say "then the TypeScript SDK suite's npm packages: $npm_cmd"; else say "missing the TypeScript SDK suite's npm packages; run: $npm_cmd"; fi
	fi
	exit 1
fi

log="${TMPDIR:-/tmp}/gateway-deps.$$.log"
trap 'rm -f "$log"' EXIT
# step LABEL COMMAND-TO-PRINT COMMAND...: one line, the command's output in a log shown only
# when it fails, with the command to run by hand.
step() {
	local label=$1 shown=$2 start=$SECONDS
	shift 2
	printf 'deps: %s (%s) ... ' "$label" "$shown"
	if "$@" >"$log" 2>&1; then
		printf 'done in %ds\n' $((SECONDS - start))
		return 0
	fi
	printf 'FAILED\n'
	tail -n 15 "$log" | sed 's/^/    /'
	return 1
}
fail() { say "$*"; exit 1; }

if [ ${#pkgs[@]} -gt 0 ]; then
	[ -n "$sudo" ] && say "installing ${labels[*]} through sudo (it may ask for your password)"
	step "updating the package lists" "${sudo}apt-get update" ${sudo}env DEBIAN_FRONTEND=noninteractive apt-get update -q ||
		fail "could not update the package lists (no network?); run: $apt_cmd"
	have_postgres || { step "installing PostgreSQL server" "${sudo}apt-get install -y postgresql" ${sudo}env DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql && have_postgres; } ||
		fail "PostgreSQL server not installed; run: ${sudo}apt-get install -y postgresql"
	if [ "$mode" = test ]; then
		have_node || { step "installing Node.js and npm" "${sudo}apt-get install -y nodejs npm" ${sudo}env DEBIAN_FRONTEND=noninteractive apt-get install -y -q nodejs npm && have_node; } ||
			fail "Node.js and npm not installed; run: ${sudo}apt-get install -y nodejs npm"
		have_chromium || { step "installing Chromium" "${sudo}apt-get install -y chromium" ${sudo}env DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium && have_chromium; } ||
			fail "Chromium not installed; run: ${sudo}apt-get install -y chromium"
	fi
fi
if [ -n "$tspkgs_missing" ]; then
	v=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null)
	[ "${v:-0}" -ge 20 ] 2>/dev/null || say "WARNING: Node $(node --version 2>/dev/null) is older than v20, which the TypeScript SDK suite is tested on"
	step "installing the TypeScript SDK suite's npm packages" "npm ci in $tsdir" \
		bash -c 'cd "$1" && npm ci --no-audit --no-fund' - "$tsdir" ||
		fail "npm ci failed (no network?); run: $npm_cmd"
fi
exit 0
