#!/usr/bin/env bash
# Backdrop set-up and entry points. Two commands cover a fresh machine:
#   bash backdrop.sh serve   install, build the demo workspace, start the dashboard on 127.0.0.1:8501
#                            (serve --team: every interface, sign-in required; see README "Serve a team")
#   bash backdrop.sh test    install (with test tools and the browser), lint, type check, run the whole test suite
#   bash backdrop.sh check   the release gate: `python -m analytics check ARGS` (exit 0 pass, 1 a rule fails, 2 bad input)
# Both are idempotent: a second run reuses the virtual environment, the asset cache and the workspace.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VENV="$ROOT/.venv"
PY="$VENV/bin/python"
PORT="${BACKDROP_PORT:-8501}"
export BACKDROP_WORKSPACE="${BACKDROP_WORKSPACE:-$ROOT/workspace}"

log() { printf '\033[1m[backdrop]\033[0m %s\n' "$*" >&2; }

pick_python() {
  # torch 2.14.1 / torchvision 0.29.1 wheels are for CPython 3.11
  for candidate in python3.11 python3; do
    if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
      echo "$candidate"; return
    fi
  done
  log "Python 3.11 is required (torch==2.14.1 wheels); install it and re-run."; exit 1
}

install_python_packages() {
  local requirements="$1" stamp="$VENV/.installed-$(basename "$1")"
  if [ ! -x "$PY" ]; then
    log "creating virtual environment in .venv"
    "$(pick_python)" -m venv "$VENV"
    "$PY" -m pip install --quiet --upgrade pip
  fi
  local digest
  digest="$(cat "$ROOT/requirements.txt" "$requirements" | sha256sum | cut -d' ' -f1)"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$digest" ]; then
    log "python packages up to date ($(basename "$requirements"))"
    return
  fi
  log "installing python packages from $(basename "$requirements") (first time: a few minutes)"
  "$PY" -m pip install --quiet -r "$requirements"
  echo "$digest" > "$stamp"
}

install_browser() {
  if [ -x /usr/bin/chromium ]; then return; fi
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    log "installing Debian chromium for the browser tests"
    apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    log "no /usr/bin/chromium and no root apt-get: browser tests will be skipped (install Debian's chromium to run them)"
  fi
}

case "${1:-}" in
  serve)
    # serve [--team] [--data-root DIR]... [--port N] [--dry-run]: `python -m analytics serve` (the same as
    # `backdrop serve` of an installed wheel) after installing and building the demo workspace. Solo mode
    # listens on 127.0.0.1 only, without sign-in; team mode (--team or BACKDROP_TEAM=1) on every interface,
    # sign-in on every page, and it refuses to start without an enabled admin account. --data-root
    # (repeatable) is a folder whose files paths typed in the browser may name (BACKDROP_DATA_ROOTS).
    # --dry-run prints the streamlit command instead of running it (no install, no demo build).
    # --smoke (CI's check of this command, .ci/run): everything serve does, then, once the server answers,
    # Home is opened in headless chromium and must show the demo's runs; then the server stops
    # (tools/smoke.py). It installs the test tools too, for Playwright and chromium.
    dry_run=0 smoke=0 options=()
    for option in "${@:2}"; do
      case "$option" in
        --dry-run) dry_run=1; options+=("$option") ;;
        --smoke) smoke=1 ;;
        *) options+=("$option") ;;
      esac
    done
    if [ "$smoke" = 1 ]; then
      install_python_packages "$ROOT/requirements-dev.txt"
      install_browser
    elif [ "$dry_run" = 0 ]; then
      install_python_packages "$ROOT/requirements.txt"
    fi
    serve=("$PY" -m analytics serve --workspace "$BACKDROP_WORKSPACE" --port "$PORT" ${options[@]+"${options[@]}"})
    # the checks (team mode's admin, the data roots) come before the slow demo build
    "${serve[@]}" --dry-run >/dev/null
    [ "$dry_run" = 1 ] && exec "${serve[@]}"
    log "building the demo workspace in $BACKDROP_WORKSPACE (idempotent)"
    "$PY" -m analytics demo --workspace "$BACKDROP_WORKSPACE"
    [ "$smoke" = 1 ] && exec "$PY" "$ROOT/tools/smoke.py" "$BACKDROP_WORKSPACE" "$PORT" -- "${serve[@]}"
    exec "${serve[@]}"
    ;;
  test)
    install_python_packages "$ROOT/requirements-dev.txt"
    install_browser
    log "fetching demo assets (used by the integration tests)"
    if ! "$PY" -m analytics fetch-assets; then
      [ "${BACKDROP_REQUIRE_ASSETS:-0}" = 1 ] && { log "demo assets unavailable and BACKDROP_REQUIRE_ASSETS=1: stopping"; exit 1; }
      log "assets unavailable: tests that need them are skipped"
    fi
    if [ "${BACKDROP_REQUIRE_ASSETS:-0}" = 1 ] && [ ! -d "$ROOT/../shared/reference" ]; then
      log "BACKDROP_REQUIRE_ASSETS=1 but ../shared/reference (the real reference data) is missing: stopping"; exit 1
    fi
    cd "$ROOT"
    log "ruff check (the lint rules in pyproject.toml)"
    "$PY" -m ruff check .
    log "type check (mypy against tools/mypy-baseline.txt, which may only shrink)"
    "$PY" tools/typecheck.py
    # Test files in parallel (pytest-xdist, whole files per worker so module fixtures are built once):
    # one worker a core, at most 4 (each may hold a dashboard server and a browser: about 3 GB);
    # BACKDROP_TEST_WORKERS=0 runs them in this process, one after another.
    workers="${BACKDROP_TEST_WORKERS:-$(nproc 2>/dev/null || echo 1)}"
    [ "$workers" -gt 4 ] && workers=4
    [ "$workers" -le 1 ] && exec "$PY" -m pytest -q "${@:2}"
    # The cores shared out: torch's OpenMP threads spin while they wait, so two workers each on every
    # core (and their servers) mostly wait on each other. Servers and jobs they start inherit this.
    threads=$(( $(nproc 2>/dev/null || echo 1) / workers )); [ "$threads" -lt 1 ] && threads=1
    export OMP_NUM_THREADS="${OMP_NUM_THREADS:-$threads}" MKL_NUM_THREADS="${MKL_NUM_THREADS:-$threads}"
    export NUMBA_NUM_THREADS="${NUMBA_NUM_THREADS:-$threads}" OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-$threads}"
    exec "$PY" -m pytest -q -n "$workers" --dist loadfile "${@:2}"
    ;;
  check)
    # check --model M --policy FILE [--baseline B] [...]: `backdrop check` from this checkout; everything after `check` goes to the CLI
    # unchanged, and so does its exit status (0 every rule holds, 1 a rule fails or has nothing to measure, 2 bad input).
    install_python_packages "$ROOT/requirements.txt"
    exec "$PY" -m analytics check "${@:2}"
    ;;
  *)
    echo "usage: bash backdrop.sh serve [--team] [--data-root DIR]... [--dry-run] [--smoke] | test [pytest args] | check [check args]" >&2
    exit 64
    ;;
esac
