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
    // so the dirty flag stays true to the tree that was compiled. Paths are
    // asked of git, which also finds a worktree's own HEAD and index.
    let git_path = |name: &str| git(&["rev-parse", "--git-path", name]);
    // The package is the workspace root: its sources and the libraries'.
    let mut watched: Vec<String> = ["src", "crates", "Cargo.toml", "Cargo.lock"]
        .iter()
        .map(|p| p.to_string())
        .collect();
    watched.extend(git_path("HEAD"));
    watched.extend(git_path("index"));
    if let Some(head_ref) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watched.extend(git_path(&head_ref));
    }
    for path in watched {
        if std::path::Path::new(&path).exists() {
            println!("cargo:rerun-if-changed={path}");
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
