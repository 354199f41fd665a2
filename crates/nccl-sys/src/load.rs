//! Loading `libnccl` once, checking its core symbols, and the error that names every place tried.

use crate::bindings::Nccl;
use crate::discover::{candidates, site_package_dirs, Candidate, SearchEnv, OVERRIDE_VAR};
use std::fmt;
use std::ops::Deref;
use std::path::PathBuf;
use std::sync::OnceLock;

/// The functions every loaded library must have. All exist since NCCL 2.13
/// (`ncclGetLastError` is the newest); the optional ones, such as
/// `ncclMemAlloc` (2.19), are checked by whoever calls them.
pub const REQUIRED_SYMBOLS: [&str; 17] = [
    "ncclGetVersion",
    "ncclGetUniqueId",
    "ncclCommInitRank",
    "ncclCommDestroy",
    "ncclCommAbort",
    "ncclCommGetAsyncError",
    "ncclAllReduce",
    "ncclBroadcast",
    "ncclReduce",
    "ncclAllGather",
    "ncclReduceScatter",
    "ncclSend",
    "ncclRecv",
    "ncclGroupStart",
    "ncclGroupEnd",
    "ncclGetErrorString",
    "ncclGetLastError",
];

/// A loaded NCCL with every symbol in [`REQUIRED_SYMBOLS`]; it dereferences to
/// the generated [`Nccl`] function table. It lives for the rest of the process.
pub struct Library {
    api: Nccl,
    source: Candidate,
}

impl Library {
    /// Where it was loaded from.
    pub fn source(&self) -> &Candidate {
        &self.source
    }

    /// The file it was loaded from: the path given, or, for a name the
    /// dynamic linker resolved, the `libnccl*` file this process has mapped
    /// (Linux's `/proc/self/maps`). None when that cannot be read.
    pub fn file(&self) -> Option<PathBuf> {
        let given = self.source.dlopen_name();
        if given.is_absolute() {
            return Some(std::fs::canonicalize(given).unwrap_or_else(|_| given.to_path_buf()));
        }
        let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
        crate::mapped::file_in_maps(&maps, "libnccl")
    }
}

impl Deref for Library {
    type Target = Nccl;
    fn deref(&self) -> &Nccl {
        &self.api
    }
}

impl fmt::Debug for Library {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Library")
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

/// Why one candidate was not used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reason {
    /// A path that does not exist (checked before `dlopen`).
    NotFound,
    /// `dlopen` failed; the dynamic linker's message.
    Open(String),
    /// It loaded but lacks these required symbols: too old, or not NCCL.
    MissingSymbols(Vec<&'static str>),
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::NotFound => write!(f, "no such file"),
            Reason::Open(message) => write!(f, "{message}"),
            Reason::MissingSymbols(names) => {
                const SHOWN: usize = 3;
                let plural = if names.len() == 1 { "" } else { "s" };
                write!(f, "lacks required symbol{plural} ")?;
                write!(
                    f,
                    "{}",
                    names
                        .iter()
                        .take(SHOWN)
                        .copied()
                        .collect::<Vec<_>>()
                        .join(", ")
                )?;
                if names.len() > SHOWN {
                    write!(f, " and {} more", names.len() - SHOWN)?;
                }
                write!(f, ", so it is an NCCL older than 2.13 or not NCCL")
            }
        }
    }
}

/// One candidate and why it failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attempt {
    pub candidate: Candidate,
    pub reason: Reason,
}

/// No usable NCCL: every place tried, in order, with its reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadError {
    pub attempts: Vec<Attempt>,
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot load NCCL; tried ")?;
        for (i, attempt) in self.attempts.iter().enumerate() {
            let sep = if i == 0 { "" } else { "; " };
            write!(f, "{sep}{} ({})", attempt.candidate, attempt.reason)?;
        }
        write!(
            f,
            "; set {OVERRIDE_VAR}=/path/to/libnccl.so.2 to choose the library"
        )
    }
}

impl std::error::Error for LoadError {}

impl LoadError {
    /// The failure in a few words, for a status line: the first library
    /// found but unusable and why, else that none was found
    /// (`libnccl.so.2 not found`). The error itself names every place tried.
    pub fn brief(&self) -> String {
        if let Some(unusable) = self.attempts.iter().find(|a| !a.reason.is_not_found()) {
            return format!(
                "{}: {}",
                unusable.candidate.dlopen_name().display(),
                unusable.reason
            );
        }
        match self.attempts.as_slice() {
            [Attempt {
                candidate: candidate @ Candidate::Override(_),
                ..
            }] => format!("{candidate} not found"),
            _ => "libnccl.so.2 not found".to_string(),
        }
    }
}

impl Reason {
    /// Nothing is at that path or name: no file, or the dynamic linker found
    /// none (a library found but lacking one of its own dependencies is not
    /// this: that message names the dependency).
    pub fn is_not_found(&self) -> bool {
        match self {
            Reason::NotFound => true,
            Reason::Open(message) => message.starts_with("cannot open shared object file"),
            Reason::MissingSymbols(_) => false,
        }
    }
}

/// The process's NCCL: found and loaded on the first call (see
/// [`SearchEnv`](crate::SearchEnv) for the search order), the same library or
/// the same error on every later call. Never unloaded.
pub fn library() -> Result<&'static Library, LoadError> {
    static LIBRARY: OnceLock<Result<&'static Library, LoadError>> = OnceLock::new();
    LIBRARY
        .get_or_init(|| {
            let env = SearchEnv::from_process();
            // With an override the site-packages scan would be wasted.
            let sites = if env.override_path.is_some() {
                Vec::new()
            } else {
                site_package_dirs(&env)
            };
            open(&candidates(&env, &sites))
        })
        .clone()
}

/// Tries `candidates` in order and returns the first that loads and has every
/// [`REQUIRED_SYMBOLS`] entry. Nothing opened here is ever unloaded, the rejected
/// libraries included (they may be an old NCCL whose unloading crashes). Use
/// [`library`] in programs; this is for tests and tools that name a file.
pub fn open(candidates: &[Candidate]) -> Result<&'static Library, LoadError> {
    let mut attempts = Vec::new();
    for candidate in candidates {
        match try_one(candidate) {
            Ok(library) => return Ok(library),
            Err(reason) => attempts.push(Attempt {
                candidate: candidate.clone(),
                reason,
            }),
        }
    }
    Err(LoadError { attempts })
}

fn try_one(candidate: &Candidate) -> Result<&'static Library, Reason> {
    let name = candidate.dlopen_name();
    if let Candidate::Wheel(path) = candidate {
        if !path.is_file() {
            return Err(Reason::NotFound);
        }
    }
    // SAFETY: dlopen runs the library's initialisers. We only open what the
    // user named or what sits where NCCL is installed, and trust it as a
    // native dependency; nothing of it is called before the symbol check.
    let api = unsafe { Nccl::new(name) }.map_err(|e| Reason::Open(open_message(name, &e)))?;
    let missing = missing_required(&api);
    if !missing.is_empty() {
        std::mem::forget(api); // never dlclose; see `open`
        return Err(Reason::MissingSymbols(missing));
    }
    let source = candidate.clone();
    Ok(Box::leak(Box::new(Library { api, source })))
}

/// The dynamic linker's message (libloading keeps it in the error's source)
/// without its leading "`name`: ", which the error already shows.
fn open_message(name: &std::path::Path, error: &libloading::Error) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(inner) = source {
        text = inner.to_string();
        source = inner.source();
    }
    let prefix = format!("{}: ", name.display());
    text.strip_prefix(&prefix)
        .unwrap_or(&text)
        .trim()
        .to_string()
}

/// The [`REQUIRED_SYMBOLS`] that `api` lacks, in that order.
fn missing_required(api: &Nccl) -> Vec<&'static str> {
    let present = [
        api.ncclGetVersion.is_ok(),
        api.ncclGetUniqueId.is_ok(),
        api.ncclCommInitRank.is_ok(),
        api.ncclCommDestroy.is_ok(),
        api.ncclCommAbort.is_ok(),
        api.ncclCommGetAsyncError.is_ok(),
        api.ncclAllReduce.is_ok(),
        api.ncclBroadcast.is_ok(),
        api.ncclReduce.is_ok(),
        api.ncclAllGather.is_ok(),
        api.ncclReduceScatter.is_ok(),
        api.ncclSend.is_ok(),
        api.ncclRecv.is_ok(),
        api.ncclGroupStart.is_ok(),
        api.ncclGroupEnd.is_ok(),
        api.ncclGetErrorString.is_ok(),
        api.ncclGetLastError.is_ok(),
    ];
    REQUIRED_SYMBOLS
        .iter()
        .zip(present)
        .filter(|(_, ok)| !ok)
        .map(|(name, _)| *name)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn a_library_without_nccl_symbols_is_rejected_naming_them() {
        // libm is on every glibc system and is certainly not NCCL.
        let err = open(&[Candidate::Override(PathBuf::from("libm.so.6"))]).unwrap_err();
        assert_eq!(err.attempts.len(), 1);
        assert_eq!(
            err.attempts[0].reason,
            Reason::MissingSymbols(REQUIRED_SYMBOLS.to_vec())
        );
        assert_eq!(
            err.to_string(),
            "cannot load NCCL; tried COLLBENCH_NCCL_LIBRARY=libm.so.6 (lacks required symbols \
             ncclGetVersion, ncclGetUniqueId, ncclCommInitRank and 14 more, so it is an NCCL \
             older than 2.13 or not NCCL); set COLLBENCH_NCCL_LIBRARY=/path/to/libnccl.so.2 to \
             choose the library"
        );
    }

    #[test]
    fn the_brief_form_says_not_found_or_names_the_unusable_library() {
        let missing = std::env::temp_dir().join("nccl-sys-no-such-dir/libnccl.so.2");
        let absent = [
            Candidate::Soname("libnccl-collbench-test-absent.so.2"),
            Candidate::Wheel(missing.clone()),
        ];
        let err = open(&absent).unwrap_err();
        assert!(err.attempts.iter().all(|a| a.reason.is_not_found()));
        assert_eq!(err.brief(), "libnccl.so.2 not found");
        let err = open(&[Candidate::Override(missing.clone())]).unwrap_err();
        assert_eq!(
            err.brief(),
            format!("COLLBENCH_NCCL_LIBRARY={} not found", missing.display())
        );
        let with_libm = [absent[0].clone(), Candidate::Soname("libm.so.6")];
        let err = open(&with_libm).unwrap_err();
        assert!(
            err.brief()
                .starts_with("libm.so.6: lacks required symbols ncclGetVersion"),
            "{}",
            err.brief()
        );
    }

    #[test]
    fn one_missing_symbol_is_named_alone() {
        let reason = Reason::MissingSymbols(vec!["ncclGetLastError"]);
        assert_eq!(
            reason.to_string(),
            "lacks required symbol ncclGetLastError, so it is an NCCL older than 2.13 or not NCCL"
        );
    }

    #[test]
    fn every_failed_place_is_named_with_its_reason() {
        let missing = std::env::temp_dir().join("nccl-sys-no-such-dir/libnccl.so.2");
        let tried = [
            Candidate::Soname("libnccl-collbench-test-absent.so.2"),
            Candidate::Wheel(missing.clone()),
        ];
        let err = open(&tried).unwrap_err();
        assert_eq!(err.attempts.len(), 2);
        let Reason::Open(message) = &err.attempts[0].reason else {
            panic!(
                "expected a dlopen failure, got {:?}",
                err.attempts[0].reason
            );
        };
        assert!(message.contains("No such file"), "{message}");
        assert_eq!(err.attempts[1].reason, Reason::NotFound);
        let text = err.to_string();
        assert!(text.starts_with(
            "cannot load NCCL; tried libnccl-collbench-test-absent.so.2 (dynamic linker search) ("
        ));
        assert!(
            text.contains(&format!("; {} (no such file); ", missing.display())),
            "{text}"
        );
        assert!(text
            .ends_with("set COLLBENCH_NCCL_LIBRARY=/path/to/libnccl.so.2 to choose the library"));
        assert!(!text.contains('\n'));
    }

    #[test]
    fn a_bad_override_path_is_the_error() {
        let path = std::env::temp_dir().join("nccl-sys-absent/libnccl.so.2");
        let err = open(&[Candidate::Override(path.clone())]).unwrap_err();
        let text = err.to_string();
        let expected = format!("tried COLLBENCH_NCCL_LIBRARY={} (", path.display());
        assert!(text.contains(&expected), "{text}");
        assert!(text.contains("cannot open shared object file"), "{text}");
    }
}
