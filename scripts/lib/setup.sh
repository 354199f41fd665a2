# shellcheck shell=bash
# Shared by scripts/*.sh: installs what building and testing collbench needs
# on Debian/Ubuntu (as root with apt; otherwise it says what to install), and
# sets Open MPI up for running as root and with more ranks than cores.

# Debian packages: Open MPI to build and launch, libclang for mpi-sys's
# bindgen, MPICH only so the tests can launch with a foreign mpirun,
# python3-venv for the NCCL wheel the tests load, procps for the kill(1)
# the fault tests signal ranks with. scripts/test.sh adds what only the
# tests need.
COLLBENCH_APT_PACKAGES="libopenmpi-dev openmpi-bin libclang-dev pkg-config mpich python3-venv procps"

collbench_missing_packages() {
    local missing="" pkg
    for pkg in $COLLBENCH_APT_PACKAGES; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing="$missing $pkg"
    done
    echo "$missing"
}

collbench_install_packages() {
    local missing
    missing=$(collbench_missing_packages)
    [ -z "$missing" ] && return 0
    if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
        echo "collbench needs these packages:$missing" >&2
        echo "install them with: sudo apt-get install -y --no-install-recommends$missing" >&2
        exit 3
    fi
    echo "installing:$missing"
    apt-get update -qq
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
}

collbench_require_cargo() {
    if ! command -v cargo >/dev/null; then
        [ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
    fi
    command -v cargo >/dev/null || { echo "cargo not found: install Rust with rustup (https://rustup.rs)" >&2; exit 3; }
}

# Open MPI refuses root and more ranks than cores unless told otherwise.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
