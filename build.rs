//! Build provenance only: the git commit and dirty flag, the rustc version,
//! the profile and the enabled features, exposed to the binary through env!()
//! so every report names the exact build that produced it.
use std::process::Command;

fn main() {
    let git = |args: &[&str]| -> Option<String> {
        let output = Command::new("git").args(args).output().ok()?;
        output
            .status
            .success()
            .then(|| String::from_utf8_lossy(&output.stdout).trim().to_string())
    };
    let commit = git(&["rev-parse", "HEAD"]).unwrap_or_default();
    let dirty = match git(&["status", "--porcelain", "--untracked-files=no"]) {
        Some(status) => (!status.is_empty()).to_string(),
        None => String::new(),
    };
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_string());
    let rustc_version = Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    let mut features: Vec<String> = std::env::vars()
        .filter_map(|(key, _)| key.strip_prefix("CARGO_FEATURE_").map(|f| f.to_lowercase()))
        .collect();
    features.sort();

    println!("cargo:rustc-env=COLLBENCH_GIT_COMMIT={commit}");
    println!("cargo:rustc-env=COLLBENCH_GIT_DIRTY={dirty}");
    println!("cargo:rustc-env=COLLBENCH_RUSTC={rustc_version}");
    println!(
        "cargo:rustc-env=COLLBENCH_PROFILE={}",
        std::env::var("PROFILE").unwrap_or_default()
    );
    println!("cargo:rustc-env=COLLBENCH_FEATURES={}", features.join(","));
    // Re-run when HEAD moves, the index changes, or a source file is edited,
    // so the dirty flag stays true to the tree that was compiled.
    for path in [
        ".git/HEAD",
        ".git/index",
        "crates",
        "Cargo.toml",
        "Cargo.lock",
    ] {
        if std::path::Path::new(path).exists() {
            println!("cargo:rerun-if-changed={path}");
        }
    }
    if let Some(head_ref) = std::fs::read_to_string(".git/HEAD")
        .ok()
        .and_then(|head| head.strip_prefix("ref: ").map(|r| r.trim().to_string()))
    {
        println!("cargo:rerun-if-changed=.git/{head_ref}");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
