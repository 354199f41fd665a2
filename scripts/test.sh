#!/usr/bin/env bash
# The test command: installs what is missing, then checks formatting and lints
# and runs every test of every crate (no GPU needed; GPU tests are #[ignore]
# and run by scripts/gpu-smoke.sh). .ci/run calls this and nothing else.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/setup.sh
# chromium draws collbench-analyze report's page in its browser test;
# man-db and groff-base render the generated man pages (`man -l`).
COLLBENCH_APT_PACKAGES="$COLLBENCH_APT_PACKAGES chromium man-db groff-base"
collbench_install_packages
collbench_require_cargo

# Real NCCL libraries from PyPI, so the loader and everything that depends
# on NCCL's version are tested against them: the newest release, and 2.18.3,
# older than ncclMemAlloc and registration (2.19), windows (2.27) and NCCL's
# own all-to-all (2.28.3), as clusters on older images run.
nccl_wheel() { # venv, pip requirement; prints the library's path
    local venv=$1 requirement=$2
    if [ ! -x "$venv/bin/python" ] || ! ls "$venv"/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2 >/dev/null 2>&1; then
        echo "installing $requirement into $venv (200 to 500 MB)" >&2
        python3 -m venv "$venv"
        "$venv/bin/pip" install --quiet --disable-pip-version-check "$requirement" >&2
    fi
    realpath "$(ls "$venv"/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2)"
}
newest_nccl=$(nccl_wheel target/nccl-venv nvidia-nccl-cu12)
old_nccl=$(nccl_wheel target/nccl-venv-2.18 nvidia-nccl-cu12==2.18.3)
export COLLBENCH_TEST_NCCL_LIBRARY=$newest_nccl
export COLLBENCH_TEST_NCCL_LIBRARIES=$newest_nccl:$old_nccl

# The browser that draws collbench-analyze report's page in its test
# (installed above): the test fails if it cannot run it.
COLLBENCH_TEST_CHROMIUM=$(command -v chromium) || { echo "chromium not found: the report page's browser test needs it (apt-get install chromium)" >&2; exit 3; }
export COLLBENCH_TEST_CHROMIUM

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy"
cargo clippy --workspace --all-targets --quiet -- -D warnings
echo "== cargo test"
cargo test --workspace
echo "== the NCCL crates against NCCL 2.18.3"
COLLBENCH_TEST_NCCL_LIBRARY=$old_nccl cargo test -p nccl-sys -p nccl
echo "== python scripts"
if compgen -G "scripts/*.py" >/dev/null; then
    python3 -m py_compile scripts/*.py
fi
if [ -d scripts/pytests ]; then
    python3 -m unittest discover -s scripts/pytests
fi
bash scripts/slurm-test.sh  # sbatch/ on a real Slurm on this machine, 1 node then 4 (root; COLLBENCH_SKIP_SLURM_TEST=1 skips)
