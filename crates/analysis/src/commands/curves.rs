//! The input files of the model commands (`ddp`, `fsdp`, `zero`,
//! `pipeline`): curve files read any way `import` reads them, and every
//! error about an input file naming the flag that gave it.
use std::path::{Path, PathBuf};

use anyhow::Result;

use analysis::{ImportOptions, Offered};
use model::shard::CurveFile;
use model::DdpError;
use schema::{Collective, Report};

/// Reads the curve files of one model command.
pub struct CurveReader {
    command: &'static str,
    options: ImportOptions,
}

impl CurveReader {
    /// For `command`, which has no `--world-size` flag (`pipeline`): its
    /// errors suggest no import flag but through `collbench-analyze import`.
    pub fn new(command: &'static str) -> CurveReader {
        CurveReader {
            command,
            options: ImportOptions::default(),
        }
    }

    /// For `command`, whose `--world-size` flag (given or not) is also the
    /// world size of a curve file that does not say it.
    pub fn with_world_size(command: &'static str, world_size: Option<u32>) -> CurveReader {
        let offered = Offered {
            world_size: true,
            ..Offered::default()
        };
        CurveReader {
            command,
            options: ImportOptions {
                world_size,
                offered,
                ..ImportOptions::default()
            },
        }
    }

    /// This reader, taking a curve file that does not say its world size
    /// at `world_size` instead (HYBRID_SHARD's curves are at its group's
    /// size and at world size / group, not the job's).
    pub fn at_world_size(&self, world_size: Option<u32>) -> CurveReader {
        CurveReader {
            command: self.command,
            options: ImportOptions {
                world_size,
                ..self.options.clone()
            },
        }
    }

    /// Reads the curve file `flag` names; errors and the importer's notes
    /// (on stderr) name the flag. A log is read as the collective it tells
    /// (a binary named in it, its rows, its file name), so that the model
    /// refuses the wrong one; what the file cannot say (the course CSV's
    /// collective, an unnamed log's) is the flag's, with a note.
    pub fn reports(&self, flag: &str, collective: Collective, path: &Path) -> Result<Vec<Report>> {
        let options = ImportOptions {
            collective: Some(collective),
            collective_expected: true,
            ..self.options.clone()
        };
        super::load_flagged(self.command, flag, path, &options)
    }

    /// [`Self::reports`] of an optional curve file, kept with its flag.
    pub fn file(
        &self,
        flag: &'static str,
        collective: Collective,
        path: Option<&PathBuf>,
    ) -> Result<Option<CurveFile>> {
        path.map(|p| {
            Ok(CurveFile {
                flag,
                path: p.clone(),
                reports: self.reports(flag, collective, p)?,
            })
        })
        .transpose()
    }

    /// [`Self::file`] of a flag given several times: their reports as one
    /// curve file (the sizes a model calibrates a group nobody measured
    /// on), named by their paths joined with `, `.
    pub fn files(
        &self,
        flag: &'static str,
        collective: Collective,
        paths: &[PathBuf],
    ) -> Result<Option<CurveFile>> {
        let mut reports = Vec::new();
        for path in paths {
            reports.extend(self.reports(flag, collective, path)?);
        }
        Ok((!paths.is_empty()).then(|| CurveFile {
            flag,
            path: PathBuf::from(
                paths
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
            ),
            reports,
        }))
    }
}

/// Names the flag in an error of crate `model` about one of a command's
/// `inputs` (flag, file), as the curve files' errors do: `--profile
/// p.csv:3: …`. Any other error (one that names its flag already, or no
/// file) is returned as it is.
pub fn name_input(error: anyhow::Error, inputs: &[(&'static str, &PathBuf)]) -> anyhow::Error {
    // Only an error that is the model's own, not one it wrapped in context.
    let path = match error
        .chain()
        .next()
        .and_then(|e| e.downcast_ref::<DdpError>())
    {
        Some(
            DdpError::Io { path, .. } | DdpError::Line { path, .. } | DdpError::File { path, .. },
        ) => path,
        _ => return error,
    };
    let flags: Vec<&str> = inputs
        .iter()
        .filter(|(_, p)| *p == path)
        .map(|(flag, _)| *flag)
        .collect();
    if flags.is_empty() {
        return error;
    }
    // One path under several flags: the error cannot tell which read it.
    anyhow::anyhow!("{} {error}", flags.join(" or "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_error_about_an_input_names_its_flag_and_no_other_error_changes() {
        let profile = PathBuf::from("p.csv");
        let measured = PathBuf::from("m.csv");
        let inputs = [("--profile", &profile), ("--measured", &measured)];
        let line = DdpError::Line {
            path: profile.clone(),
            line: 3,
            message: "params \"x\" is not a whole number".into(),
        };
        assert_eq!(
            name_input(line.into(), &inputs).to_string(),
            "--profile p.csv:3: params \"x\" is not a whole number"
        );
        let io = DdpError::Io {
            path: measured.clone(),
            error: std::io::Error::from(std::io::ErrorKind::NotFound),
        };
        assert!(name_input(io.into(), &inputs)
            .to_string()
            .starts_with("--measured m.csv: "));
        // One file given to two flags: either may be the one.
        let both = [("--profile", &profile), ("--measured", &profile)];
        let line = DdpError::File {
            path: profile.clone(),
            message: "empty".into(),
        };
        assert_eq!(
            name_input(line.into(), &both).to_string(),
            "--profile or --measured p.csv: empty"
        );
        // A file that is no input, an error without a file, and the
        // model's error under context stay as they are.
        let other = DdpError::File {
            path: "o.csv".into(),
            message: "empty".into(),
        };
        assert_eq!(
            name_input(other.into(), &inputs).to_string(),
            "o.csv: empty"
        );
        let invalid = DdpError::Invalid("--caps: no cap".into());
        assert_eq!(
            name_input(invalid.into(), &inputs).to_string(),
            "--caps: no cap"
        );
        let wrapped = anyhow::Error::from(DdpError::File {
            path: profile.clone(),
            message: "empty".into(),
        })
        .context("p.csv: reading");
        assert_eq!(
            format!("{:#}", name_input(wrapped, &inputs)),
            "p.csv: reading: p.csv: empty"
        );
    }
}
