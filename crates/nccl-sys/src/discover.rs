//! Where to look for `libnccl`, in order: the list-building half of discovery.
//!
//! [`candidates`] is a pure function of a [`SearchEnv`] and a list of Python
//! site-packages directories; only [`SearchEnv::from_process`] reads the
//! environment and only [`site_package_dirs`] reads the file system.
//!
//! Python's own `sys.path` is not asked for (no `python3 -c ...`): this code runs
//! inside MPI ranks, where forking a child is slow on some launchers and warned
//! about by some MPI libraries. Instead the usual prefixes are scanned: the
//! active venv and conda env, `PYTHONPATH`, the user site (`~/.local`), the
//! prefix of every `bin` directory on `PATH` (which covers the first `python3`
//! found), pyenv versions, `/usr/local` and `/usr`.

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};

/// The environment variable naming the NCCL library to load; when set (and not
/// empty) it is the only place tried.
pub const OVERRIDE_VAR: &str = "COLLBENCH_NCCL_LIBRARY";

/// The dynamic-linker names tried after the override, in order. The pip wheels
/// ship only `libnccl.so.2`; system packages add the `libnccl.so` dev symlink.
const SONAMES: [&str; 2] = ["libnccl.so.2", "libnccl.so"];

/// Where the `nvidia-nccl-cu12`/`-cu13` wheels put the library inside site-packages.
const WHEEL_LIB: &str = "nvidia/nccl/lib/libnccl.so.2";

/// One place the loader tries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Candidate {
    /// The value of `$COLLBENCH_NCCL_LIBRARY` (a path, or a bare name for the
    /// dynamic linker).
    Override(PathBuf),
    /// A bare file name resolved by the dynamic linker (`LD_LIBRARY_PATH`, the
    /// ldconfig cache, the default directories).
    Soname(&'static str),
    /// The NCCL wheel's library under one Python site-packages directory.
    Wheel(PathBuf),
}

impl Candidate {
    /// What to hand to `dlopen`.
    pub fn dlopen_name(&self) -> &Path {
        match self {
            Candidate::Override(path) | Candidate::Wheel(path) => path,
            Candidate::Soname(name) => Path::new(name),
        }
    }
}

impl fmt::Display for Candidate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Candidate::Override(path) => write!(f, "{OVERRIDE_VAR}={}", path.display()),
            Candidate::Soname(name) => write!(f, "{name} (dynamic linker search)"),
            Candidate::Wheel(path) => write!(f, "{}", path.display()),
        }
    }
}

/// The inputs of discovery, read once from the process so that tests can build
/// their own.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SearchEnv {
    /// `$COLLBENCH_NCCL_LIBRARY`, if set and not empty.
    pub override_path: Option<PathBuf>,
    /// `$VIRTUAL_ENV`.
    pub virtual_env: Option<PathBuf>,
    /// `$CONDA_PREFIX`.
    pub conda_prefix: Option<PathBuf>,
    /// `$HOME`, for `~/.local` and the default pyenv root.
    pub home: Option<PathBuf>,
    /// `$PYENV_ROOT` (defaults to `~/.pyenv`).
    pub pyenv_root: Option<PathBuf>,
    /// The entries of `$PYTHONPATH`, each searched as a site-packages directory.
    pub python_path: Vec<PathBuf>,
    /// The entries of `$PATH`; the parent of each `.../bin` is a prefix.
    pub path: Vec<PathBuf>,
    /// Prefixes searched last: `/usr/local` and `/usr` on a real process.
    pub system_prefixes: Vec<PathBuf>,
}

impl SearchEnv {
    /// Reads the variables above from this process's environment.
    pub fn from_process() -> SearchEnv {
        let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        let dir = |name: &str| var(name).map(PathBuf::from);
        let list = |name: &str| -> Vec<PathBuf> {
            var(name)
                .map(|v: OsString| std::env::split_paths(&v).collect())
                .unwrap_or_default()
        };
        SearchEnv {
            override_path: dir(OVERRIDE_VAR),
            virtual_env: dir("VIRTUAL_ENV"),
            conda_prefix: dir("CONDA_PREFIX"),
            home: dir("HOME"),
            pyenv_root: dir("PYENV_ROOT"),
            python_path: list("PYTHONPATH"),
            path: list("PATH"),
            system_prefixes: vec![PathBuf::from("/usr/local"), PathBuf::from("/usr")],
        }
    }

    /// Installation prefixes whose `lib/python3*/{site,dist}-packages` may hold
    /// the wheel, most specific first, without duplicates. `pyenv_versions` (the
    /// listed `$PYENV_ROOT/versions/*`) go just before the system prefixes.
    fn prefixes(&self, pyenv_versions: &[PathBuf]) -> Vec<PathBuf> {
        let mut out = Vec::new();
        out.extend(self.virtual_env.clone());
        out.extend(self.conda_prefix.clone());
        out.extend(self.home.as_ref().map(|home| home.join(".local")));
        for entry in &self.path {
            if entry.file_name().is_some_and(|name| name == "bin") {
                out.extend(entry.parent().map(Path::to_path_buf));
            }
        }
        out.extend(pyenv_versions.iter().cloned());
        out.extend(self.system_prefixes.iter().cloned());
        dedup(out)
    }

    fn pyenv_versions_dir(&self) -> Option<PathBuf> {
        let root = self
            .pyenv_root
            .clone()
            .or_else(|| Some(self.home.as_ref()?.join(".pyenv")));
        root.map(|root| root.join("versions"))
    }
}

/// The places to try, in order: only the override when it is set; otherwise
/// `libnccl.so.2`, `libnccl.so`, then the wheel's library under each of
/// `site_dirs` (see [`site_package_dirs`]).
pub fn candidates(env: &SearchEnv, site_dirs: &[PathBuf]) -> Vec<Candidate> {
    if let Some(path) = &env.override_path {
        return vec![Candidate::Override(path.clone())];
    }
    let sonames = SONAMES.iter().map(|name| Candidate::Soname(name));
    let wheels = site_dirs
        .iter()
        .map(|dir| Candidate::Wheel(dir.join(WHEEL_LIB)));
    sonames.chain(wheels).collect()
}

/// The Python site-packages directories that exist on this machine, in search
/// order: `$PYTHONPATH` entries, then for each prefix (venv, conda, `~/.local`,
/// `PATH`'s `bin` parents, pyenv versions, system) its `lib/python3*/site-packages`
/// and `lib/python3*/dist-packages` (Debian's `/usr/lib/python3/dist-packages` included).
pub fn site_package_dirs(env: &SearchEnv) -> Vec<PathBuf> {
    let pyenv = env
        .pyenv_versions_dir()
        .map(|versions| sorted_children(&versions, |_| true))
        .unwrap_or_default();
    let mut dirs: Vec<PathBuf> = env
        .python_path
        .iter()
        .filter(|p| p.is_dir())
        .cloned()
        .collect();
    for prefix in env.prefixes(&pyenv) {
        let lib = prefix.join("lib");
        for python in sorted_children(&lib, |name| name.starts_with("python3")) {
            for leaf in ["site-packages", "dist-packages"] {
                let dir = python.join(leaf);
                if dir.is_dir() {
                    dirs.push(dir);
                }
            }
        }
    }
    // The same directory by two spellings (`/lib` -> `/usr/lib` on merged-/usr
    // systems, via `/bin` on PATH) is searched once, under its first spelling.
    let mut seen = Vec::new();
    dirs.retain(|dir| {
        let key = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.clone());
        let new = !seen.contains(&key);
        seen.push(key);
        new
    });
    dirs
}

/// The subdirectories of `dir` whose names pass `keep`, sorted by name; none
/// when `dir` cannot be read.
fn sorted_children(dir: &Path, keep: impl Fn(&str) -> bool) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_str().is_some_and(&keep))
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    out.sort();
    out
}

/// Removes later duplicates, keeping the first occurrence's position.
fn dedup(paths: Vec<PathBuf>) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::with_capacity(paths.len());
    for path in paths {
        if !out.contains(&path) {
            out.push(path);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> SearchEnv {
        SearchEnv::default()
    }

    #[test]
    fn override_is_the_only_candidate() {
        let env = SearchEnv {
            override_path: Some("/opt/nccl/libnccl.so.2".into()),
            ..env()
        };
        let got = candidates(&env, &[PathBuf::from("/site")]);
        assert_eq!(
            got,
            vec![Candidate::Override("/opt/nccl/libnccl.so.2".into())]
        );
        assert_eq!(
            got[0].to_string(),
            "COLLBENCH_NCCL_LIBRARY=/opt/nccl/libnccl.so.2"
        );
    }

    #[test]
    fn sonames_then_wheels_in_site_order() {
        let sites = [PathBuf::from("/venv/site"), PathBuf::from("/usr/dist")];
        let got = candidates(&env(), &sites);
        assert_eq!(
            got,
            vec![
                Candidate::Soname("libnccl.so.2"),
                Candidate::Soname("libnccl.so"),
                Candidate::Wheel("/venv/site/nvidia/nccl/lib/libnccl.so.2".into()),
                Candidate::Wheel("/usr/dist/nvidia/nccl/lib/libnccl.so.2".into()),
            ]
        );
        assert_eq!(got[0].to_string(), "libnccl.so.2 (dynamic linker search)");
        assert_eq!(got[0].dlopen_name(), Path::new("libnccl.so.2"));
    }

    #[test]
    fn prefixes_are_ordered_and_deduplicated() {
        let env = SearchEnv {
            virtual_env: Some("/v".into()),
            conda_prefix: Some("/c".into()),
            home: Some("/h".into()),
            path: vec![
                "/c/bin".into(),
                "/h/.cargo/bin".into(),
                "/sbin".into(),
                "/usr/bin".into(),
            ],
            system_prefixes: vec!["/usr/local".into(), "/usr".into()],
            ..env()
        };
        let pyenv = [PathBuf::from("/h/.pyenv/versions/3.12.1")];
        let want: Vec<PathBuf> = [
            "/v",
            "/c",
            "/h/.local",
            "/h/.cargo",
            "/usr",
            "/h/.pyenv/versions/3.12.1",
            "/usr/local",
        ]
        .map(PathBuf::from)
        .into();
        assert_eq!(env.prefixes(&pyenv), want);
    }

    /// A throwaway directory tree under the system temp dir, removed on drop.
    struct TempTree(PathBuf);

    impl TempTree {
        fn new(tag: &str) -> TempTree {
            let dir = std::env::temp_dir().join(format!("nccl-sys-{tag}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            TempTree(dir)
        }
        fn mkdir(&self, rel: &str) -> PathBuf {
            let dir = self.0.join(rel);
            std::fs::create_dir_all(&dir).unwrap();
            dir
        }
    }

    impl Drop for TempTree {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn site_dirs_found_under_each_prefix() {
        let t = TempTree::new("sites");
        let venv_site = t.mkdir("venv/lib/python3.12/site-packages");
        t.mkdir("venv/lib/python2.7/site-packages"); // not Python 3: ignored
        let pyenv_site = t.mkdir("home/.pyenv/versions/3.11.7/lib/python3.11/site-packages");
        let user_site = t.mkdir("home/.local/lib/python3.11/site-packages");
        let debian = t.mkdir("usr/lib/python3/dist-packages");
        let local = t.mkdir("usr/local/lib/python3.11/dist-packages");
        std::os::unix::fs::symlink(t.0.join("usr/lib"), t.0.join("lib")).unwrap();
        let extra = t.mkdir("extra");
        let env = SearchEnv {
            virtual_env: Some(t.0.join("venv")),
            home: Some(t.0.join("home")),
            python_path: vec![extra.clone(), t.0.join("missing")],
            path: vec![t.0.join("venv/bin"), t.0.join("bin")], // `/bin` -> `/lib` = `/usr/lib`
            system_prefixes: vec![t.0.join("usr/local"), t.0.join("usr")],
            ..env()
        };
        // `<root>/lib/python3/...` comes before the pyenv and system prefixes
        // but is `/usr/lib/python3/...` under another name, so it stands for it.
        let via_bin = t.0.join("lib/python3/dist-packages");
        assert_eq!(
            site_package_dirs(&env),
            vec![extra, venv_site, user_site, via_bin, pyenv_site, local]
        );
        assert!(debian.is_dir());
    }
}
