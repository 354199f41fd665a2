#!/usr/bin/env bash
# The test command: installs what is missing, then checks formatting and lints
# and runs every test of every crate (no GPU needed; GPU tests are #[ignore]
# and run by scripts/gpu-smoke.sh). .ci/run calls this and nothing else.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/setup.sh
collbench_install_packages
collbench_require_cargo

# The real NCCL library, from PyPI, so the loader is tested against it.
venv=target/nccl-venv
if [ ! -x "$venv/bin/python" ] || ! ls "$venv"/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2 >/dev/null 2>&1; then
    echo "installing the nvidia-nccl-cu12 wheel into $venv (about 470 MB)"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check nvidia-nccl-cu12
fi
COLLBENCH_TEST_NCCL_LIBRARY=$(realpath "$(ls "$venv"/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2)")
export COLLBENCH_TEST_NCCL_LIBRARY

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy"
cargo clippy --workspace --all-targets --quiet -- -D warnings
echo "== cargo test"
cargo test --workspace
echo "== python scripts"
if compgen -G "scripts/*.py" >/dev/null; then
    python3 -m py_compile scripts/*.py
fi
if [ -d scripts/pytests ]; then
    python3 -m unittest discover -s scripts/pytests
fi
bash scripts/slurm-test.sh  # sbatch/ on a real Slurm on this machine, 1 node then 4 (root; COLLBENCH_SKIP_SLURM_TEST=1 skips)
