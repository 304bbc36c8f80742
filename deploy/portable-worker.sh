#!/usr/bin/env bash
# deploy/portable-worker.sh: builds a grind-worker that runs on any x86-64 Linux with glibc
# 2.17 or newer (CentOS 7, Debian 8, Ubuntu 14.04 and everything since), for the spare
# machines `grind workers up` puts workers on:
#
#   bash deploy/portable-worker.sh          # writes target/portable/grind-worker
#
# How: `cargo zigbuild` links against glibc 2.17's symbol versions with zig as the C
# toolchain and linker. Both come from registries: zig from its PyPI package (`ziglang`,
# into a private virtualenv), cargo-zigbuild from crates.io. No system package, no extra
# rustup target (the host's x86_64-unknown-linux-gnu is the target). The result is checked:
# no GLIBC_ symbol version above the floor (objdump -T), and it runs (--version).
# `grind workers up` copies target/portable/grind-worker when it is there.
#
# GRIND_GLIBC_FLOOR=2.28 picks another floor. A first build compiles every dependency in
# release mode (several minutes on 2 cores); later ones only the workspace crates.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
FLOOR=${GRIND_GLIBC_FLOOR:-2.17}
TARGET=x86_64-unknown-linux-gnu
OUT=${CARGO_TARGET_DIR:-$ROOT/target}/portable
VENV=${GRIND_ZIG_VENV:-$HOME/.cache/grind-zig}
ZIG_VERSION=0.15.2 # ziglang on PyPI (zig 0.15: what cargo-zigbuild 0.24 documents)

if [[ $(uname -m) != x86_64 ]]; then
    echo "portable-worker: builds for x86-64 only, on an x86-64 machine (this is $(uname -m))" >&2
    exit 2
fi
# zig: on PATH, else from PyPI into a private virtualenv (cargo-zigbuild runs `python3 -m
# ziglang` when no zig is on PATH; the virtualenv's python3 comes first on PATH below).
if ! command -v zig >/dev/null; then
    if [[ ! -x $VENV/bin/python3 ]] || ! "$VENV/bin/python3" -m ziglang version >/dev/null 2>&1; then
        python3 -m venv "$VENV"
        "$VENV/bin/python3" -m pip install --quiet "ziglang==$ZIG_VERSION"
    fi
    export PATH=$VENV/bin:$PATH
fi
if ! command -v cargo-zigbuild >/dev/null; then
    cargo install --locked cargo-zigbuild
fi
started=$SECONDS
GRIND_GLIBC_FLOOR=$FLOOR cargo zigbuild --locked --release -p grind-worker --target "$TARGET.$FLOOR"
built=${CARGO_TARGET_DIR:-$ROOT/target}/$TARGET/release/grind-worker
mkdir -p "$OUT"
cp "$built" "$OUT/grind-worker.new"
mv -f "$OUT/grind-worker.new" "$OUT/grind-worker"

# The symbol check: every GLIBC_ version the binary needs is at most the floor.
newest=$(objdump -T "$OUT/grind-worker" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -n 1)
if [[ -z $newest ]]; then
    echo "portable-worker: objdump -T found no GLIBC_ symbol versions in $OUT/grind-worker" >&2
    exit 1
fi
if [[ $(printf '%s\n%s\n' "$newest" "$FLOOR" | sort -V | tail -n 1) != "$FLOOR" ]]; then
    echo "portable-worker: $OUT/grind-worker needs GLIBC_$newest, above the floor $FLOOR:" >&2
    objdump -T "$OUT/grind-worker" | grep "GLIBC_$newest" | head -n 5 >&2
    exit 1
fi
version=$("$OUT/grind-worker" --version)
if [[ $version != *"glibc >= $FLOOR"* ]]; then
    echo "portable-worker: --version does not name the floor: $version" >&2
    exit 1
fi
echo "portable-worker: $OUT/grind-worker ($version; newest symbol version GLIBC_$newest; built in $((SECONDS - started)) s)"
