//! One entry point that loads any supported input as collbench reports.
//!
//! One entry point for every input the analysis reads: the format is told by
//! content (not by file name), and the result is always collbench reports.
use std::path::Path;

use schema::{Collective, DataType, Report};

use crate::import;
pub use crate::import::merge_runs;
use crate::import::strip_launcher_prefix;
use crate::input::Lines;
use crate::ImportError;

/// What an imported source cannot say for itself.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ImportOptions {
    /// Ranks of an nccl-tests log without `# Using devices` lines (or JSON
    /// without `devices`). The log's own device lines win over this.
    pub world_size: Option<u32>,
    /// The collective of an nccl-tests log without a `# Collective test
    /// starting` line (or JSON whose `args` do not name the binary), and of the
    /// course CSV. Without it a log's collective is inferred (a binary named
    /// in it, its rows, its file name, else `all_reduce`), the CSV's is
    /// `all_reduce`.
    pub collective: Option<Collective>,
    /// `collective` is only what the caller expects (a model command's curve
    /// flag), not an order: an nccl-tests log that tells its collective
    /// (a binary named in it, its rows, its file name) is read as what it
    /// says, so that the caller can refuse the wrong one; `collective` is
    /// taken, with a note, only where the log cannot tell.
    pub collective_expected: bool,
    /// The element type of the course CSV (default: told by bytes/elements).
    pub dtype: Option<DataType>,
    /// Nodes of a run whose input records no hosts (an nccl-tests log
    /// without `# Rank` lines, nccl-tests JSON without devices, the course
    /// CSV): recorded in its report, with a note. The input's own hosts win.
    pub nodes: Option<u32>,
    /// Ranks per node of such a run: its nodes are its world size over this.
    pub gpus_per_node: Option<u32>,
    /// Skip lines that cannot be read (and count them) instead of failing.
    pub lenient: bool,
    /// Which of these options the caller's command line has as flags, so
    /// that errors and notes suggest only those.
    pub offered: Offered,
}

/// Which import flags (`--world-size`, `--collective`, `--dtype`,
/// `--lenient`) a command line has. An error or note suggests one as
/// `pass --world-size N` where it is offered, and otherwise through
/// `collbench-analyze import`, which has them all.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Offered {
    pub world_size: bool,
    pub collective: bool,
    pub dtype: bool,
    pub lenient: bool,
}

impl Offered {
    /// Every import flag (`import`, `table`, `fit`, `compare`, `plot`, `report`).
    pub const ALL: Offered = Offered {
        world_size: true,
        collective: true,
        dtype: true,
        lenient: true,
    };
}

/// How a message suggests `flag` (with its value: `--world-size N`):
/// `pass --world-size N` where the command line has it, else through
/// `collbench-analyze import`.
pub(crate) fn suggest(offered: bool, flag: &str) -> String {
    if offered {
        format!("pass {flag}")
    } else {
        format!("import the file first (`collbench-analyze import {flag} FILE -o REPORT.json`)")
    }
}

/// The kinds of input [`load_any`] recognises.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceFormat {
    /// A collbench JSON report.
    Report,
    /// nccl-tests standard output (any generation).
    NcclTestsStdout,
    /// nccl-tests `-J` JSON, versions 1 to 3.
    NcclTestsJson,
    /// `backend,world_size,total_elements,total_bytes,average_time,stdev_time`.
    CourseCsv,
    /// collbench's own live table (its stdout).
    CollbenchStdout,
}

impl SourceFormat {
    /// How the format is named in messages.
    pub fn describe(self) -> &'static str {
        match self {
            SourceFormat::Report => "collbench report",
            SourceFormat::NcclTestsStdout => "nccl-tests output",
            SourceFormat::NcclTestsJson => "nccl-tests JSON",
            SourceFormat::CourseCsv => "course CSV",
            SourceFormat::CollbenchStdout => "collbench output",
        }
    }
}

/// What one input held, with what the reader had to say about it.
#[derive(Debug, Clone, PartialEq)]
pub struct Loaded {
    pub format: SourceFormat,
    /// One report per run; consecutive tests of one run are merged.
    pub reports: Vec<Report>,
    /// Things a user should know (assumptions made, data left out), one line each.
    pub notes: Vec<String>,
    /// Lines skipped with `lenient`.
    pub skipped_lines: usize,
}

/// The most lines other than launcher lines (module messages, a job
/// script's echoes) that a log's header may follow, and that are read past
/// a first line that is not a `#` line looking for the table's header.
pub(crate) const PEEK_LINES: usize = 200;

/// The most launcher lines (a shell trace, `srun -l`-labelled lines, see
/// [`import::Preamble`]) that a log's header may follow: `srun
/// --cpu-bind=verbose` prints one per task, so this is a job of a million
/// tasks. The format is told from at most these lines (held until it is),
/// and a file that runs on past them without a header fails at its first
/// line without being read further.
pub(crate) const LAUNCHER_LINES: usize = 1 << 20;

/// Reads any supported input into reports. See [`load`] for the details and
/// the notes.
pub fn load_any(path: &Path, opts: &ImportOptions) -> Result<Vec<Report>, ImportError> {
    load(path, opts).map(|loaded| loaded.reports)
}

/// Reads `path` and imports it by its content. Only a regular file of at most
/// [`schema::io::MAX_INPUT_BYTES`] is read; the text formats are parsed line
/// by line as they are read, JSON as a whole.
pub fn load(path: &Path, opts: &ImportOptions) -> Result<Loaded, ImportError> {
    let mut lines = Lines::open(path)?;
    if lines.starts_like_json() {
        return load_bytes(&lines.rest()?, path, opts);
    }
    // The first lines up to one with content tell the format.
    let mut start = Vec::new();
    for (number, line) in lines.by_ref() {
        let content = !line.trim_start_matches('\u{feff}').trim().is_empty();
        start.push((number, line));
        if content {
            break;
        }
    }
    if let Some(first) = start.first_mut() {
        if let Some(rest) = first.1.strip_prefix('\u{feff}') {
            first.1 = rest.to_string();
        }
    }
    // A layer profile may open with `#` lines of its own: its first row
    // tells it.
    if start
        .last()
        .is_some_and(|(_, l)| l.trim_start().starts_with('#'))
    {
        for (number, line) in lines.by_ref().take(PEEK_LINES) {
            let row = !line.trim().is_empty() && !line.trim_start().starts_with('#');
            start.push((number, line));
            if row {
                break;
            }
        }
    }
    if starts_as_layer_profile(start.iter().map(|(_, l)| l.as_str())) {
        return Err(not_timings(path));
    }
    let first = start
        .iter()
        .map(|(_, l)| l.trim_start())
        .find(|l| !l.is_empty())
        .unwrap_or("")
        .to_string();
    let first = first.as_str();
    let text_format = if first.is_empty() || first.starts_with('{') || first.starts_with('[') {
        None
    } else if looks_like_csv_header(first)
        // … unless an nccl-tests header follows within a job's preamble:
        // a job's output whose first line has commas.
        && !read_ahead(&mut start, &mut lines, import::is_header_line)
    {
        Some(SourceFormat::CourseCsv)
    } else {
        // A job's output may open with lines of its script before the
        // table: the first `#` line tells whose table it is.
        if !is_comment(first) {
            read_ahead(&mut start, &mut lines, is_comment);
        }
        let table = start.iter().find(|(_, l)| is_comment(l));
        Some(match table {
            Some((_, l)) if import::collbench_stdout::is_header(l) => SourceFormat::CollbenchStdout,
            _ => SourceFormat::NcclTestsStdout,
        })
    };
    let loaded = match text_format {
        None => {
            let mut text = String::new();
            for (_, line) in start.into_iter().chain(lines.by_ref()) {
                text.push_str(&line);
                text.push('\n');
            }
            if let Some(error) = lines.error() {
                return Err(error);
            }
            return load_bytes(text.as_bytes(), path, opts);
        }
        Some(format) => {
            let all = start.into_iter().chain(lines.by_ref());
            let parsed = match format {
                SourceFormat::CourseCsv => import::csv::parse_lines(all, path, opts),
                SourceFormat::CollbenchStdout => {
                    import::collbench_stdout::parse_lines(all, path, opts)
                }
                _ => import::stdout::parse_lines(all, path, opts),
            };
            // A read error explains a parse error it caused.
            if let Some(error) = lines.error() {
                return Err(error);
            }
            parsed?
        }
    };
    finish(loaded, path, opts)
}

/// Whether a line (launcher prefix and all) is a `#` line.
fn is_comment(line: &str) -> bool {
    strip_launcher_prefix(line).trim_start().starts_with('#')
}

/// Reads lines into `start` up to the first one `wanted` (then `true`), or
/// past a job's preamble (see [`import::Preamble`]) or the end (then
/// `false`).
fn read_ahead(
    start: &mut Vec<(usize, String)>,
    lines: &mut Lines,
    wanted: impl Fn(&str) -> bool,
) -> bool {
    let mut preamble = import::Preamble::default();
    for (number, line) in lines.by_ref() {
        let found = wanted(&line);
        let within = found || preamble.admit(&line);
        start.push((number, line));
        if found || !within {
            return found;
        }
    }
    false
}

/// The first line of `text` that is `wanted`, looked for as far as a job's
/// preamble goes (see [`import::Preamble`]).
fn find_within_preamble(text: &str, wanted: impl Fn(&str) -> bool) -> Option<&str> {
    let mut preamble = import::Preamble::default();
    for line in text.lines() {
        if wanted(line) {
            return Some(line);
        }
        if !preamble.admit(line) {
            return None;
        }
    }
    None
}

/// Imports the content of a file; `origin` names it in errors and notes.
/// Bytes that are not UTF-8 are replaced, so they fail as unreadable lines.
pub fn load_bytes(
    bytes: &[u8],
    origin: &Path,
    opts: &ImportOptions,
) -> Result<Loaded, ImportError> {
    let text = String::from_utf8_lossy(bytes);
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let format = detect(text, origin)?;
    let loaded = match format {
        SourceFormat::Report => Loaded {
            format,
            reports: vec![Report::from_json(text, origin)?],
            notes: Vec::new(),
            skipped_lines: 0,
        },
        SourceFormat::NcclTestsJson => import::json::parse(text, origin, opts)?,
        SourceFormat::CourseCsv => import::csv::parse(text, origin, opts)?,
        SourceFormat::NcclTestsStdout => import::stdout::parse(text, origin, opts)?,
        SourceFormat::CollbenchStdout => {
            import::collbench_stdout::parse_lines(import::numbered(text), origin, opts)?
        }
    };
    finish(loaded, origin, opts)
}

/// Checks what an importer returned, gives the runs that record no hosts
/// the nodes `--nodes`/`--gpus-per-node` say, and merges the runs of one
/// machine.
fn finish(mut loaded: Loaded, origin: &Path, opts: &ImportOptions) -> Result<Loaded, ImportError> {
    set_nodes(&mut loaded, origin, opts)?;
    let measured =
        |r: &Report| !r.results.is_empty() || r.deliveries.as_ref().is_some_and(|d| !d.is_empty());
    if !loaded.reports.iter().any(measured) {
        let replay = loaded
            .reports
            .iter()
            .any(|r| r.config.benchmark == schema::Benchmark::Replay);
        let why = if replay {
            "a replay report (`collbench replay`): its calls are in its `replay` section, not rows of sizes this command reads".to_string()
        } else {
            format!("no measurements found in this {}", loaded.format.describe())
        };
        return Err(ImportError::file(origin, why));
    }
    // Every format's importer checks its rows as it reads them; this checks
    // collbench reports, and anything an importer let through.
    for report in &loaded.reports {
        import::check_report(report).map_err(|m| ImportError::file(origin, m))?;
    }
    loaded.reports = import::merge_runs(std::mem::take(&mut loaded.reports));
    Ok(loaded)
}

/// Sets the node count of each report that records none (no `nodes`, no
/// rank's host) from `opts`, with a note that it came from the flag; one
/// that records its hosts keeps them, with a note where the flag differs.
fn set_nodes(loaded: &mut Loaded, origin: &Path, opts: &ImportOptions) -> Result<(), ImportError> {
    let (flag, value) = match (opts.nodes, opts.gpus_per_node) {
        (Some(k), _) => ("--nodes", k),
        (None, Some(g)) => ("--gpus-per-node", g),
        (None, None) => return Ok(()),
    };
    let mut said = Vec::new();
    for report in &mut loaded.reports {
        let env = &mut report.environment;
        let world = env.world_size;
        let nodes = match opts.nodes {
            Some(k) => k,
            None if world.is_multiple_of(value) => world / value,
            None => {
                return Err(ImportError::file(
                    origin,
                    format!("{flag} {value}: does not divide the run's {world} ranks (accepted: a divisor of {world})"),
                ))
            }
        };
        if nodes > world {
            return Err(ImportError::file(
                origin,
                format!("{flag} {value}: {nodes} nodes for the run's {world} ranks (accepted: 1 to {world} nodes)"),
            ));
        }
        let note = match recorded_nodes(env) {
            Some(recorded) if recorded == nodes => continue,
            Some(recorded) => format!(
                "{}: the input records {recorded} node(s); {flag} {value} is ignored for it",
                origin.display()
            ),
            None => {
                env.nodes = Some(nodes);
                format!(
                    "{}: {nodes} node(s) of {world} ranks from {flag} {value} (the input records no hosts)",
                    origin.display()
                )
            }
        };
        if !said.contains(&note) {
            said.push(note);
        }
    }
    loaded.notes.extend(said);
    Ok(())
}

/// The nodes an environment records: `nodes`, else its ranks' distinct
/// hosts when every rank names one.
fn recorded_nodes(env: &schema::Environment) -> Option<u32> {
    if let Some(n) = env.nodes.filter(|&n| n > 0) {
        return Some(n);
    }
    let mut hosts: Vec<&str> = env.ranks.iter().map(|r| r.host.as_str()).collect();
    if hosts.is_empty() || hosts.iter().any(|h| h.is_empty()) {
        return None;
    }
    hosts.sort_unstable();
    hosts.dedup();
    Some(hosts.len() as u32)
}

/// Tells the format from the first meaningful character or line.
fn detect(text: &str, origin: &Path) -> Result<SourceFormat, ImportError> {
    let trimmed = text.trim_start();
    if trimmed.is_empty() {
        return Err(ImportError::file(
            origin,
            "empty file (expected a collbench report, nccl-tests output or JSON, or the course CSV)",
        ));
    }
    if trimmed.starts_with('{') || trimmed.starts_with('[') {
        // Only the keys that tell the format, without a tree of the rest
        // (which costs many times the text's size).
        let invalid = |e: serde_json::Error| {
            ImportError::file(
                origin,
                format!("looks like JSON but is not valid JSON: {e}"),
            )
        };
        let parsed = if trimmed.starts_with('{') {
            serde_json::from_str::<Keys>(trimmed)
        } else {
            // An array is neither format, but is checked as JSON first.
            serde_json::from_str::<serde::de::IgnoredAny>(trimmed).map(|_| Keys::default())
        };
        let keys = match parsed {
            Ok(keys) => keys,
            // Not JSON but a job's output whose first line is a
            // launcher's `[host]` warning or a JSON line of the job's
            // (`{"job": 4711}`): the nccl-tests importer reads it, or
            // says why not where the header is past a preamble's bounds.
            Err(_) if trimmed.lines().any(import::is_header_line) => {
                return Ok(SourceFormat::NcclTestsStdout)
            }
            Err(e) => return Err(invalid(e)),
        };
        return if keys.schema_version.0 {
            Ok(SourceFormat::Report)
        } else if keys.results.0 && keys.version.0 {
            Ok(SourceFormat::NcclTestsJson)
        } else {
            Err(ImportError::file(
                origin,
                "JSON that is neither a collbench report (no \"schema_version\") nor nccl-tests -J output (no \"version\" and \"results\")",
            ))
        };
    }
    if starts_as_layer_profile(trimmed.lines().take(PEEK_LINES)) {
        return Err(not_timings(origin));
    }
    let first_line = trimmed.lines().next().unwrap_or_default();
    // A first line with commas and an nccl-tests header within a job's
    // preamble after it is a job's output, not the course CSV.
    if looks_like_csv_header(first_line)
        && find_within_preamble(trimmed, import::is_header_line).is_none()
    {
        return Ok(SourceFormat::CourseCsv);
    }
    let table = find_within_preamble(trimmed, is_comment);
    if table.is_some_and(import::collbench_stdout::is_header) {
        return Ok(SourceFormat::CollbenchStdout);
    }
    Ok(SourceFormat::NcclTestsStdout)
}

/// Whether the first `lines` of a file are a layer profile's (the models'
/// `--profile`): the comment collbench's profilers open it with, or, past
/// its `#` lines, its CSV header. Under its `#` lines it would otherwise
/// pass for collbench's own output.
fn starts_as_layer_profile<'a>(lines: impl IntoIterator<Item = &'a str>) -> bool {
    let mut content = lines.into_iter().map(str::trim).filter(|l| !l.is_empty());
    let Some(first) = content.next() else {
        return false;
    };
    if first.starts_with("# collbench layer profile") {
        return true;
    }
    let header = std::iter::once(first)
        .chain(content)
        .find(|l| !l.starts_with('#'))
        .unwrap_or_default();
    import::csv::line_fields(header).starts_with(&["name".into(), "params".into()])
}

/// The error for a layer profile given where timings are read.
fn not_timings(origin: &Path) -> ImportError {
    ImportError::file(
        origin,
        "a layer profile (name,params,grad_time_s,...), not collective timings: give it to --profile of ddp, fsdp, zero, pipeline or plan",
    )
}

/// Which of the keys that tell a JSON format an object has.
#[derive(Default, serde::Deserialize)]
struct Keys {
    #[serde(default)]
    schema_version: Present,
    #[serde(default)]
    version: Present,
    #[serde(default)]
    results: Present,
}

/// Whether a key is there, whatever its value (null included); the value
/// is skipped, not kept.
#[derive(Default)]
struct Present(bool);

impl<'de> serde::Deserialize<'de> for Present {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Present, D::Error> {
        serde::de::IgnoredAny::deserialize(deserializer).map(|_| Present(true))
    }
}

/// Comma-separated column names (`backend,world_size,…`, or pandas' leading
/// empty index column), not prose that happens to hold a comma.
fn looks_like_csv_header(line: &str) -> bool {
    let fields = import::csv::line_fields(line);
    fields.len() >= 2
        && fields.iter().all(|f| {
            f.chars().all(|c| {
                c.is_ascii_alphanumeric() || matches!(c, '_' | ' ' | '-' | '.' | ',' | '(' | ')')
            })
        })
        && fields
            .iter()
            .any(|f| f.chars().any(|c| c.is_ascii_alphabetic()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn format_of(text: &str) -> Result<SourceFormat, ImportError> {
        detect(text, Path::new("x"))
    }

    #[test]
    fn detects_formats_by_content() {
        assert_eq!(
            format_of("{\"schema_version\": 1}").unwrap(),
            SourceFormat::Report
        );
        assert_eq!(
            format_of("{\"version\": 1, \"results\": []}").unwrap(),
            SourceFormat::NcclTestsJson
        );
        assert_eq!(
            format_of("backend,world_size\n").unwrap(),
            SourceFormat::CourseCsv
        );
        assert_eq!(
            format_of(",backend,world_size\n").unwrap(),
            SourceFormat::CourseCsv
        );
        assert_eq!(
            format_of("backend,world_size,\"note, free\"\n").unwrap(),
            SourceFormat::CourseCsv
        );
        assert_eq!(
            format_of("+ srun ./all_reduce_perf\n# collbench 0.1.0 all_reduce  backend: mpi\n")
                .unwrap(),
            SourceFormat::CollbenchStdout
        );
        assert_eq!(
            format_of("# nThread 1 nGpus 1\n").unwrap(),
            SourceFormat::NcclTestsStdout
        );
        assert_eq!(
            format_of("Hello, world: not a table\n").unwrap(),
            SourceFormat::NcclTestsStdout
        );
        assert!(format_of("  \n")
            .unwrap_err()
            .to_string()
            .contains("empty file"));
        assert!(format_of("{\"a\": 1}")
            .unwrap_err()
            .to_string()
            .contains("neither"));
        assert!(format_of("[1, 2]")
            .unwrap_err()
            .to_string()
            .contains("neither"));
        // A launcher's `[host]` line is no JSON, and is not called a report.
        assert!(format_of("[1622510346.876958] [g0185:144167:0] UCX WARN\n")
            .unwrap_err()
            .to_string()
            .contains("not valid JSON"));
        // … unless an nccl-tests header follows: a job's output.
        assert_eq!(
            format_of("[1622510346.876958] [g0185:144167:0] UCX WARN\n0: # nThread 1 nGpus 1\n")
                .unwrap(),
            SourceFormat::NcclTestsStdout
        );
        // A job's JSON line before the log, as a `[host]` line.
        assert_eq!(
            format_of("{\"job\": 4711, \"nodes\": 2}\n# nThread 1 nGpus 1\n").unwrap(),
            SourceFormat::NcclTestsStdout
        );
        assert!(format_of("{\"job\": 4711}\n{\"job\": 4712}\n")
            .unwrap_err()
            .to_string()
            .contains("not valid JSON: trailing characters"));
        assert_eq!(
            format_of("Loading gcc, cuda and nccl\n# nThread 1 nGpus 1\n").unwrap(),
            SourceFormat::NcclTestsStdout
        );
        assert_eq!(
            format_of("backend,world_size\n# Using devices\n").unwrap(),
            SourceFormat::CourseCsv
        );
    }
}
