//! Loading the real NCCL named by `COLLBENCH_TEST_NCCL_LIBRARY` (CI pip-installs
//! the `nvidia-nccl-cu12` wheel for it): the core symbols, raw calls that need no
//! GPU, and finding the wheel's layout inside a Python site-packages directory.
//!
//! Without the variable these tests print a note and pass, except under CI
//! (`CI` set), where they fail rather than skip silently.

use nccl_sys::{ncclResult_t, ncclUniqueId, open, site_package_dirs, Candidate, SearchEnv};

mod common;

use common::real_library;

#[test]
fn loads_and_reports_a_plausible_version() {
    let Some(path) = real_library() else { return };
    let lib = open(&[Candidate::Override(path.clone())]).unwrap();
    assert_eq!(lib.source(), &Candidate::Override(path));
    let mut code = 0;
    // SAFETY: a required symbol, writing one int.
    let status = unsafe { lib.ncclGetVersion(&mut code) };
    assert_eq!(status, ncclResult_t::ncclSuccess);
    eprintln!("ncclGetVersion -> {code}");
    assert!(
        (21800..30000).contains(&code),
        "implausible NCCL version code {code}"
    );
}

#[test]
fn unique_id_needs_no_gpu() {
    let Some(path) = real_library() else { return };
    let lib = open(&[Candidate::Override(path)]).unwrap();
    let mut id = ncclUniqueId::default();
    // SAFETY: a required symbol, filling the struct.
    let status = unsafe { lib.ncclGetUniqueId(&mut id) };
    assert_eq!(status, ncclResult_t::ncclSuccess);
    assert!(id.internal.iter().any(|&b| b != 0), "the id is all zeros");
}

#[test]
fn the_wheel_is_found_in_a_venv_site_packages() {
    let Some(path) = real_library() else { return };
    let path = std::fs::canonicalize(path).unwrap();
    let venv = std::env::temp_dir().join(format!("nccl-sys-venv-{}", std::process::id()));
    let site = venv.join("lib/python3.99/site-packages");
    let lib_dir = site.join("nvidia/nccl/lib");
    std::fs::create_dir_all(&lib_dir).unwrap();
    std::os::unix::fs::symlink(&path, lib_dir.join("libnccl.so.2")).unwrap();

    let env = SearchEnv {
        virtual_env: Some(venv.clone()),
        ..SearchEnv::default()
    };
    let sites = site_package_dirs(&env);
    let found = nccl_sys::candidates(&env, &sites);
    let wheel = Candidate::Wheel(lib_dir.join("libnccl.so.2"));
    assert_eq!(sites, vec![site]);
    assert_eq!(found.last(), Some(&wheel));
    let result = open(std::slice::from_ref(&wheel));
    std::fs::remove_dir_all(&venv).unwrap();
    assert_eq!(result.unwrap().source(), &wheel);
}
