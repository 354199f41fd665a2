//! Which lines of a job's output file are its nccl-tests log.
//!
//! A job's output file holds more than nccl-tests' lines: the job script's
//! `set -x` trace, launcher banners and warnings before the header, and with
//! `srun -l` every line labelled with the task that printed it (`0: `), other
//! tasks' lines (`4: cpu-bind=…`) and MPI's summaries among them; `mpirun
//! --tag-output` tags every line with its rank (`[1,0]<stdout>:`) alike
//! (see [`Printer`]). The first nccl-tests header line decides: lines
//! before it that are not nccl-tests output are skipped, and when it
//! carries a label, the lines of that task or rank are read (nccl-tests
//! prints from rank 0) and the others skipped, except NCCL's logging and
//! nccl-tests' failure lines, which any rank prints; another one's
//! nccl-tests output (a header, a row, a footer) is refused. Every skipped
//! line is counted in one note per file.
//!
//! Lines before the header are skipped only when they are a job's
//! [`Preamble`] (launcher lines, one per task with `srun --cpu-bind=verbose`,
//! up to [`LAUNCHER_LINES`]; at most [`PEEK_LINES`] others) and the header
//! opens nccl-tests' output as nccl-tests prints it ([`is_header_line`]):
//! other files that hold nccl-tests lines (a program's source, in a string)
//! fail at their first line as they always did.
use std::path::Path;

use super::lines::{printer, srun_task, strip_launcher_prefix, Printer};
use crate::load::{LAUNCHER_LINES, PEEK_LINES};
use crate::ImportError;

/// Whether the words of a `#` line (after the `#`) are an nccl-tests
/// header line: one that opens its output ([`opens_output`]) or the
/// `# Rank` and `# size count` lines after it.
pub(crate) fn is_header(words: &[&str]) -> bool {
    opens_output(words) || matches!(words, ["Rank", ..] | ["size", "count", ..])
}

/// The words after the `#` of a `#` line (leading blanks allowed), or
/// `None` for another line.
fn comment_words(text: &str) -> Option<Vec<&str>> {
    let body = text.trim_start().strip_prefix('#')?;
    Some(body.split_whitespace().collect())
}

/// Whether the words of a `#` line open nccl-tests' output: its first
/// line is one of these (`# nThread` in every version, the version and
/// `Collective test starting` lines before it in newer ones), and the
/// other header lines (`# Rank`, `# size count`) come after it.
fn opens_output(words: &[&str]) -> bool {
    matches!(
        words,
        ["nccl-tests", "version", ..] | ["Collective", "test", "starting:", ..] | ["nThread", ..]
    )
}

/// Whether `line` is the line nccl-tests' output opens with, as nccl-tests
/// prints it: `# nThread`, `# nccl-tests version` or `# Collective test
/// starting`, its `#` first on the line or right after an `srun -l` label
/// (`0: `) or an `mpirun --tag-output` tag. It tells a job's output that
/// opens with other lines (a launcher's `[host]` warnings, a line with
/// commas) from JSON and the course CSV, which have no line that opens
/// with `#`.
pub(crate) fn is_header_line(line: &str) -> bool {
    let text = match srun_task(line) {
        Some((_, rest)) => rest.strip_prefix(' ').unwrap_or(rest),
        None => strip_launcher_prefix(line),
    };
    text.strip_prefix('#')
        .is_some_and(|body| opens_output(&body.split_whitespace().collect::<Vec<_>>()))
}

/// Whether `line`, before a job output's nccl-tests header, is one a
/// launcher or the job script prints: blank, a shell trace (`+ `, `++ `),
/// labelled by `srun -l` (`12: `) or tagged by `mpirun --tag-output`,
/// a bracketed `[host]` warning, Slurm's own (`srun: `, `slurmstepd: `,
/// the `cpu-bind=` line `--cpu-bind=verbose` prints for every task), or a
/// `NAME=value` of an environment dump.
pub(crate) fn is_launcher_line(line: &str) -> bool {
    let text = line.trim();
    let first = text.split_whitespace().next().unwrap_or_default();
    let name = text.split('=').next().unwrap_or_default();
    text.is_empty()
        || (first.bytes().all(|b| b == b'+') && text.len() > first.len())
        || strip_launcher_prefix(line).len() != line.len()
        || (text.starts_with('[') && first.len() > 2 && first.ends_with(']'))
        || ["srun:", "salloc:", "sbatch:"].contains(&first)
        || (first.starts_with("slurmstepd") && first.ends_with(':'))
        || ["cpu-bind=", "cpu_bind=", "mem-bind=", "mem_bind="]
            .iter()
            .any(|bind| first.starts_with(bind))
        || (name.len() < text.len()
            && name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'))
}

/// The lines before a job output's nccl-tests header, counted against a
/// preamble's bounds: at most [`LAUNCHER_LINES`] launcher lines (see
/// [`is_launcher_line`]) and at most [`PEEK_LINES`] others. The lines are
/// counted, not kept, so a longer run of them is given up on without
/// reading the rest of the file.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Preamble {
    launcher: usize,
    other: usize,
}

impl Preamble {
    /// Counts `line`; `false` once the lines counted are more than a
    /// preamble's bounds.
    pub fn admit(&mut self, line: &str) -> bool {
        if is_launcher_line(line) {
            self.launcher += 1;
        } else {
            self.other += 1;
        }
        self.launcher <= LAUNCHER_LINES && self.other <= PEEK_LINES
    }
}

/// Whether the words of a `#` line are one nccl-tests prints: a header
/// line (see [`is_header`]), the table's other header lines, its footer,
/// or a bare `#`.
fn is_tests_comment(words: &[&str]) -> bool {
    is_header(words)
        || matches!(
            words,
            [] | ["Using", "devices", ..]
                | ["out-of-place", ..]
                | ["(B)", ..]
                | ["Out", "of", "bounds", "values", ..]
                | ["Avg", "bus", "bandwidth", ..]
                | ["Collective", "test", "concluded:", ..]
        )
}

/// Whether `text` (a line without its label) is a table row as
/// nccl-tests prints it: a size, an element count and at least four
/// more cells (the type, the times and bandwidths).
fn is_row(text: &str) -> bool {
    let cells: Vec<&str> = text.split_whitespace().collect();
    cells.len() >= 6 && cells[..2].iter().all(|cell| cell.parse::<u64>().is_ok())
}

/// Whether `text` (another printer's line without its label) is
/// nccl-tests output only the header's printer prints: a row or one of
/// nccl-tests' `#` lines. (NCCL's logging and nccl-tests' failure lines,
/// which any rank prints, are read before this is asked.)
fn is_tests_output(text: &str) -> bool {
    match comment_words(text) {
        Some(words) => is_tests_comment(&words),
        None => is_row(text),
    }
}

/// Whether `text` (a line without its label) is an nccl-tests header line
/// or starts like a table row.
fn is_table_line(text: &str) -> bool {
    match comment_words(text) {
        Some(words) => is_header(&words),
        None => text
            .split_whitespace()
            .next()
            .is_some_and(|first| first.parse::<u64>().is_ok()),
    }
}

/// How one line is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Route {
    /// As any line of a log without labels (and every line before the
    /// header).
    Log,
    /// A line of the task (or rank) that printed the header: read, and
    /// skipped where it is not nccl-tests output (MPI's summaries, the
    /// task's other messages).
    Task,
    /// Another task's (or rank's) line, or one without a label, in a
    /// labelled log: only NCCL's logging and nccl-tests' failure lines are
    /// read, its nccl-tests output refused.
    Other,
}

/// Skipped lines: how many, and the first one's number.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Skipped {
    pub lines: usize,
    pub first: Option<usize>,
}

impl Skipped {
    fn add(&mut self, number: usize) {
        self.lines += 1;
        self.first.get_or_insert(number);
    }

    /// `3 line(s) … (the first at line 7)`, or nothing for none.
    fn describe(&self, what: &str) -> Option<String> {
        let first = self.first?;
        Some(format!(
            "{} line(s) {what} (the first at line {first})",
            self.lines
        ))
    }
}

/// The state of the lines read so far.
#[derive(Debug, Default)]
pub(crate) struct Sieve {
    /// The first nccl-tests header line: its number and who printed it
    /// (its launcher label).
    header: Option<(usize, Option<Printer>)>,
    /// A header or a table row was read: no line is preamble any more.
    started: bool,
    /// Unreadable lines before anything started, and the error the first
    /// one is (without `--lenient`): forgiven by a header, not by a row.
    held: Skipped,
    held_error: Option<ImportError>,
    /// The held lines by kind, within a preamble's bounds.
    held_kinds: Preamble,
    /// The first held line, once the held lines went past a preamble's
    /// bounds.
    past_bounds: Option<usize>,
    preamble: Skipped,
    other_tasks: Skipped,
    not_output: Skipped,
}

impl Sieve {
    /// How the line `raw` is read; a line that mixes labelled and
    /// unlabelled nccl-tests output is refused.
    pub fn route(&self, origin: &Path, number: usize, raw: &str) -> Result<Route, ImportError> {
        let Some((header_line, header_printer)) = &self.header else {
            return Ok(Route::Log);
        };
        match (header_printer, printer(raw)) {
            (Some(ours), Some((this, _))) if this == *ours => Ok(Route::Task),
            (Some(_), _) => Ok(Route::Other),
            (None, Some((this, rest))) if is_table_line(rest) => Err(ImportError::line(
                origin,
                number,
                raw,
                format!(
                    "an nccl-tests line with {launcher} {noun} {mark} {label} where the nccl-tests header at line {header_line} has none: {mark}s on some lines only mix different runs' output (accepted: a log whose nccl-tests lines all carry one {noun}'s {mark}, or none)",
                    launcher = this.launcher(),
                    noun = this.noun(),
                    mark = this.mark(),
                    label = this.label(),
                ),
            )),
            (None, _) => Ok(Route::Log),
        }
    }

    /// Refuses an [`Route::Other`] line that is nccl-tests output (see
    /// [`is_tests_output`]): another printer's header (a second run's
    /// table) or rows, or an unlabelled header line or row.
    pub fn check_other(&self, origin: &Path, number: usize, raw: &str) -> Result<(), ImportError> {
        let Some((header_line, Some(ours))) = &self.header else {
            return Ok(());
        };
        let file = origin.display().to_string();
        let (launcher, noun, mark) = (ours.launcher(), ours.noun(), ours.mark());
        match printer(raw) {
            Some((other, rest)) => {
                if !is_tests_output(rest) {
                    return Ok(());
                }
                let (ours_n, other_n) = (ours.number(), other.number());
                let header = comment_words(rest).is_some_and(|words| is_header(&words));
                let split = format!(
                    "split it by {} {} first (`{sed}` for {short}) and read each part",
                    other.noun(),
                    other.mark(),
                    sed = other.sed(&file),
                    short = other.short(),
                );
                let message = if header && other.launcher() == launcher {
                    format!(
                        "{launcher} {noun}s {ours_n} and {other_n} both print an nccl-tests header ({}'s at line {header_line}): several runs' tables in one output, which are not taken apart; {split}",
                        ours.short()
                    )
                } else {
                    let what = if is_row(rest) { "row" } else { "line" };
                    format!(
                        "an nccl-tests {what} printed by {} under the header of {} (line {header_line}): a table is one {noun}'s, so this is another run's line or a mislabelled one; {split}",
                        other.who(),
                        ours.short(),
                    )
                };
                Err(ImportError::line(origin, number, raw, message))
            }
            None if is_table_line(raw) => Err(ImportError::line(
                origin,
                number,
                raw,
                format!(
                    "an nccl-tests line without the {launcher} {noun} {mark} {label} that the nccl-tests header at line {header_line} has: {mark}s on some lines only mix different runs' output (accepted: a log whose nccl-tests lines all carry one {noun}'s {mark}, or none)",
                    label = ours.label(),
                ),
            )),
            None => Ok(()),
        }
    }

    /// Counts a skipped [`Route::Other`] or [`Route::Task`] line.
    pub fn skip(&mut self, number: usize, raw: &str) {
        let other_task = match (&self.header, printer(raw)) {
            (Some((_, Some(ours))), Some((this, _))) => this != *ours,
            _ => false,
        };
        if other_task {
            self.other_tasks.add(number);
        } else {
            self.not_output.add(number);
        }
    }

    /// Whether unreadable lines are held: nothing has started yet.
    pub fn holding(&self) -> bool {
        !self.started
    }

    /// Holds the unreadable line `raw`, and `error`, what it is without
    /// `--lenient`, if it is the first; past a [`Preamble`]'s bounds,
    /// releases the held lines as [`Sieve::release`] does.
    pub fn hold(
        &mut self,
        number: usize,
        raw: &str,
        error: Option<ImportError>,
    ) -> Result<Skipped, ImportError> {
        if self.held.first.is_none() {
            self.held_error = error;
        }
        self.held.add(number);
        if !self.held_kinds.admit(raw) {
            self.past_bounds = self.held.first;
            return self.release();
        }
        Ok(Skipped::default())
    }

    /// The first held line, if the held lines went past a [`Preamble`]'s
    /// bounds before a header came (see [`Sieve::hold`]).
    pub fn past_bounds(&self) -> Option<usize> {
        self.past_bounds
    }

    /// An nccl-tests header line `raw`: the lines held before the first
    /// one were a preamble (if it opens the output as nccl-tests prints it,
    /// see [`is_header_line`], else they are released as by
    /// [`Sieve::release`]), and its task label (if any) says whose lines
    /// are read from now on.
    pub fn header(&mut self, number: usize, raw: &str) -> Result<Skipped, ImportError> {
        if self.header.is_none() {
            let ours = printer(raw).map(|(ours, _)| ours);
            self.header = Some((number, ours));
        }
        if self.started {
            return Ok(Skipped::default());
        }
        if !is_header_line(raw) {
            return self.release();
        }
        self.started = true;
        self.preamble = std::mem::take(&mut self.held);
        self.held_error = None;
        Ok(Skipped::default())
    }

    /// A table row, or the end of the log: lines held before it were not
    /// a preamble (no header came): the first one's error, or with
    /// `--lenient` the lines to count as skipped.
    pub fn release(&mut self) -> Result<Skipped, ImportError> {
        if self.started {
            return Ok(Skipped::default());
        }
        self.started = true;
        if let Some(error) = self.held_error.take() {
            return Err(error);
        }
        Ok(std::mem::take(&mut self.held))
    }

    /// The note on the lines skipped, once per file; `None` when none were.
    pub fn note(&self, origin: &Path) -> Option<String> {
        let (header_line, ours) = self.header.as_ref()?;
        let others = ours
            .as_ref()
            .map(|ours| format!("of other {} {}s", ours.launcher(), ours.noun()))
            .unwrap_or_default();
        let parts: Vec<String> = [
            self.preamble
                .describe("before it that are not nccl-tests output"),
            self.other_tasks.describe(&others),
            self.not_output
                .describe("after it that are not nccl-tests output"),
        ]
        .into_iter()
        .flatten()
        .collect();
        if parts.is_empty() {
            return None;
        }
        let whose = match ours {
            Some(ours) => format!(
                "read the lines of {}, whose nccl-tests header is at line {header_line}, with their {} {}s removed; skipped ",
                ours.who(),
                ours.label(),
                ours.mark(),
            ),
            None => format!("the nccl-tests header is at line {header_line}; skipped "),
        };
        Some(format!(
            "{}:{header_line}: {whose}{}",
            origin.display(),
            parts.join(", ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_lines_and_rows_are_table_lines() {
        assert!(is_table_line(" # nThread 1 nGpus 1"));
        assert!(is_table_line("#  Rank  0 Group  0 Pid 1 on h device 0"));
        assert!(is_table_line(
            "#       size         count      type   redop    root"
        ));
        assert!(is_table_line("     1024   256  float  sum  -1  9.0"));
        assert!(!is_table_line("# Using devices"));
        assert!(!is_table_line(
            "cpu-bind=MASK - node-b, task  4  0 [5123]: mask 0x3 set"
        ));
        assert!(!is_table_line("MPI summary: no timeouts"));
        assert!(is_header_line("3: # nThread 1 nGpus 1"));
        assert!(is_header_line(
            "[1,0]<stdout>:# nccl-tests version 2.19.6 nccl-headers=22703"
        ));
        assert!(is_header_line(
            "  12: # Collective test starting: all_reduce_perf"
        ));
        // Only the line nccl-tests opens its output with ends a preamble.
        assert!(!is_header_line("[1,0]<stdout>:#  Rank  0 Group  0 Pid 1"));
        assert!(!is_header_line("#       size         count      type"));
        assert!(!is_header_line("# collbench 0.1.0 all_reduce"));
        assert!(!is_header_line("\"# nThread\": 1,"));
        assert!(!is_header_line("    # nThread 1 nGpus 1\\n\\"));
    }

    #[test]
    fn a_header_forgives_the_held_lines_and_a_row_does_not() {
        let origin = Path::new("job.out");
        let error = || Some(ImportError::file(origin, "first held"));
        let mut sieve = Sieve::default();
        sieve.hold(1, "+ true", error()).unwrap();
        sieve.hold(2, "+ true", error()).unwrap();
        sieve.header(3, "0: # nThread 1").unwrap();
        assert!(!sieve.holding());
        assert_eq!(sieve.release().unwrap().lines, 0);
        assert_eq!(
            sieve.route(origin, 5, "0:  8 2 float").unwrap(),
            Route::Task
        );
        assert_eq!(sieve.route(origin, 6, "4: cpu-bind").unwrap(), Route::Other);
        sieve.skip(6, "4: cpu-bind");
        sieve.skip(7, "0: MPI summary");
        let note = sieve.note(origin).unwrap();
        assert_eq!(
            note,
            "job.out:3: read the lines of srun task 0, whose nccl-tests header is at line 3, with their `0: ` labels removed; skipped 2 line(s) before it that are not nccl-tests output (the first at line 1), 1 line(s) of other srun tasks (the first at line 6), 1 line(s) after it that are not nccl-tests output (the first at line 7)"
        );

        let mut rows_first = Sieve::default();
        rows_first.hold(1, "+ true", error()).unwrap();
        rows_first.hold(2, "+ true", None).unwrap();
        let err = rows_first.release().unwrap_err().to_string();
        assert_eq!(err, "job.out: first held");
        // A header indented (in a program's source, say) forgives nothing.
        let mut indented = Sieve::default();
        indented.hold(1, "+ true", error()).unwrap();
        let err = indented.header(2, "    # nThread 1").unwrap_err();
        assert_eq!(err.to_string(), "job.out: first held");
        let mut lenient = Sieve::default();
        lenient.hold(4, "+ true", None).unwrap();
        assert_eq!(lenient.release().unwrap().first, Some(4));
        assert!(lenient.note(origin).is_none());

        // More lines than a job's preamble: the first one's error.
        let module = "Loading module nccl";
        let mut long = Sieve::default();
        for number in 1..=PEEK_LINES {
            long.hold(number, module, error()).unwrap();
        }
        assert_eq!(long.past_bounds(), None);
        let err = long.hold(PEEK_LINES + 1, module, error()).unwrap_err();
        assert_eq!(err.to_string(), "job.out: first held");
        assert!(!long.holding());
        assert_eq!(long.past_bounds(), Some(1));
        let mut long_lenient = Sieve::default();
        for number in 1..=PEEK_LINES {
            long_lenient.hold(number, module, None).unwrap();
        }
        let released = long_lenient.hold(PEEK_LINES + 1, module, None).unwrap();
        assert_eq!((released.lines, released.first), (PEEK_LINES + 1, Some(1)));
        // Launcher lines, one per task, are held beyond those bounds.
        let mut tasks = Sieve::default();
        tasks.hold(1, module, error()).unwrap();
        for number in 2..=10_001 {
            let line = format!(
                "{}: cpu-bind=MASK - node, task {} set",
                number - 2,
                number - 2
            );
            tasks.hold(number, &line, error()).unwrap();
        }
        assert!(tasks.holding());
        assert_eq!(tasks.past_bounds(), None);
        tasks.header(10_002, "0: # nThread 1").unwrap();
        assert_eq!(tasks.preamble.lines, 10_001);
    }

    #[test]
    fn launcher_lines_are_told_from_other_lines() {
        for line in [
            "",
            "+ export NCCL_DEBUG=WARN",
            "++ hostname",
            "  12: cpu-bind=MASK - node-a01, task 12 0 [4711]: mask 0x3 set",
            "cpu-bind=MASK - node-a01, task 12 0 [4711]: mask 0x3 set",
            "3:",
            "[1,0]<stderr>:warning",
            "[1700000000.000001] [node-a01:41021:0] UCX WARN transport",
            "[node-a01] hugepages not available",
            "srun: job 4711 queued and waiting for resources",
            "slurmstepd: error: task 3 killed",
            "NCCL_IB_HCA=mlx5",
            "_ModuleTable001_=X2",
        ] {
            assert!(is_launcher_line(line), "{line:?}");
        }
        for line in [
            "//! The command-line tests.",
            "Loading gcc, cuda and nccl",
            "let x = 1;",
            "+",
            "[]",
            "x == 1",
            "    # nThread 1 nGpus 1",
        ] {
            assert!(!is_launcher_line(line), "{line:?}");
        }
        let mut preamble = Preamble::default();
        assert!((0..PEEK_LINES).all(|_| preamble.admit("Loading module nccl")));
        assert!((0..LAUNCHER_LINES).all(|_| preamble.admit("+ true")));
        let mut launched = preamble;
        assert!(!launched.admit("+ true"));
        assert!(!preamble.admit("Loading module nccl"));
    }

    #[test]
    fn labels_on_some_lines_only_are_refused() {
        let origin = Path::new("job.out");
        let mut unlabelled = Sieve::default();
        unlabelled.header(1, "# nThread 1").unwrap();
        assert_eq!(
            unlabelled.route(origin, 2, "3: NCCL INFO x").unwrap(),
            Route::Log
        );
        let err = unlabelled
            .route(origin, 3, "0:   1024  256  float")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("job.out:3: an nccl-tests line with srun task label `0: ` where the nccl-tests header at line 1 has none"), "{err}");
        let mut labelled = Sieve::default();
        labelled.header(1, "0: # nThread 1").unwrap();
        let err = labelled
            .check_other(origin, 2, "   1024  256  float")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("job.out:2: an nccl-tests line without the srun task label `0: `"),
            "{err}"
        );
        let err = labelled
            .check_other(origin, 3, "1: # nThread 1")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("job.out:3: srun tasks 0 and 1 both print an nccl-tests header (task 0's at line 1)"), "{err}");
        // Another task's row or other nccl-tests line: another run's, or
        // mislabelled; its other lines are skipped.
        let row = "1:     1024  256  float  sum  -1  11.00  0.09  0.16  0";
        let err = labelled.check_other(origin, 4, row).unwrap_err();
        assert!(err.to_string().starts_with("job.out:4: an nccl-tests row printed by srun task 1 under the header of task 0 (line 1): "), "{err}");
        let err = labelled
            .check_other(origin, 5, "1: # Using devices")
            .unwrap_err();
        assert!(err.to_string().starts_with("job.out:5: an nccl-tests line printed by srun task 1 under the header of task 0 (line 1): "), "{err}");
        for line in [
            "srun: error: x",
            "1: # checkpoint written",
            "1: rx_paused  8  621  1158",
            "1: 3 GPUs found",
        ] {
            assert!(labelled.check_other(origin, 6, line).is_ok(), "{line}");
        }
    }

    #[test]
    fn mpirun_rank_tags_are_read_as_srun_task_labels() {
        let origin = Path::new("job.out");
        let mut tagged = Sieve::default();
        tagged.header(7, "[1,0]<stdout>:# nThread 1").unwrap();
        let route = |line| tagged.route(origin, 8, line).unwrap();
        assert_eq!(route("[1,0]<stderr>:warning"), Route::Task);
        assert_eq!(route("[1,1]<stdout>:#"), Route::Other);
        assert_eq!(route("   1024  256  float"), Route::Other);
        let err = tagged
            .check_other(origin, 8, "[1,1]<stdout>:# nThread 1")
            .unwrap_err();
        assert!(err.to_string().starts_with("job.out:8: mpirun ranks 0 and 1 both print an nccl-tests header (rank 0's at line 7): several runs' tables in one output, which are not taken apart; split it by rank tag first (`sed -n 's/^ *\\[1,1\\]<std[a-z]*>://p' job.out` for rank 1)"), "{err}");
        let row = "[1,1]<stdout>:  8  2  float  sum  -1  10.9  0.00  0.00  0";
        let err = tagged.check_other(origin, 9, row).unwrap_err();
        assert!(err.to_string().starts_with("job.out:9: an nccl-tests row printed by mpirun rank 1 under the header of rank 0 (line 7): "), "{err}");
        tagged.skip(10, "[1,1]<stderr>:warning");
        assert!(tagged.note(origin).unwrap().starts_with("job.out:7: read the lines of mpirun rank 0, whose nccl-tests header is at line 7, with their `[1,0]<stdout>:` tags removed; skipped 1 line(s) of other mpirun ranks (the first at line 10)"));
        // A tagged row under an untagged header mixes runs.
        let mut untagged = Sieve::default();
        untagged.header(1, "# nThread 1").unwrap();
        let err = untagged
            .route(origin, 2, "[1,0]<stdout>:  8  2  float")
            .unwrap_err();
        assert!(err.to_string().starts_with("job.out:2: an nccl-tests line with mpirun rank tag `[1,0]<stdout>:` where the nccl-tests header at line 1 has none"), "{err}");
    }
}
