//! Importer of nccl-tests standard output, of every generation.
//!
//! nccl-tests standard output of every generation: tests are told apart by
//! their header lines, `#` lines are read for what they say about the run,
//! NCCL's own log lines and launcher prefixes are skipped, and every other
//! line must be a table row.
use std::collections::HashSet;
use std::path::Path;

use schema::{Backend, CaseResult, Collective, DataType, RankInfo, ReduceOp, Report, RunStatus};

use super::infer::{self, Shape};
use super::job_output::{self, Route, Sieve};
use super::lines::{is_nccl_log, is_test_failure, parse_rank, strip_launcher_prefix};
use super::table::{Layout, RawRow};
use super::{collective_from_binary, nccl_version_string, wall_case, FastSet, RunMeta};
use crate::load::{suggest, LAUNCHER_LINES, PEEK_LINES};
use crate::{ImportError, ImportOptions, Loaded, SourceFormat};

pub(crate) fn parse(
    text: &str,
    origin: &Path,
    opts: &ImportOptions,
) -> Result<Loaded, ImportError> {
    parse_lines(super::lines::numbered(text), origin, opts)
}

/// As [`parse`], from numbered lines (read one at a time from a file).
pub(crate) fn parse_lines<S: AsRef<str>>(
    lines: impl Iterator<Item = (usize, S)>,
    origin: &Path,
    opts: &ImportOptions,
) -> Result<Loaded, ImportError> {
    let mut parser = Parser {
        origin,
        opts,
        test: Test::default(),
        reports: Vec::new(),
        notes: Vec::new(),
        skipped: 0,
        first_skipped: None,
        nccl_version: None,
        cuda_driver: None,
        recognised: false,
        nccl_warnings: (0, None),
        sieve: Sieve::default(),
        past_preamble: None,
    };
    for (number, raw) in lines {
        parser.line(number, raw.as_ref())?;
    }
    parser.finish()
}

struct Parser<'a> {
    origin: &'a Path,
    opts: &'a ImportOptions,
    test: Test,
    reports: Vec<Report>,
    notes: Vec<String>,
    skipped: usize,
    first_skipped: Option<usize>,
    /// From NCCL's own `NCCL INFO` lines, for tests without a version line.
    nccl_version: Option<String>,
    cuda_driver: Option<String>,
    /// Whether anything so far looked like nccl-tests output.
    recognised: bool,
    /// NCCL's `NCCL WARN` lines: how many, and the first (line, text).
    nccl_warnings: (usize, Option<(usize, String)>),
    /// Which lines are the log's: the preamble before its header, srun
    /// `-l` task labels.
    sieve: Sieve,
    /// Lines past a job's preamble without an nccl-tests header: the
    /// first held line and the error the file fails with, kept while the
    /// rest is looked through for the header (see [`Parser::past_preamble`]).
    past_preamble: Option<(usize, ImportError)>,
}

/// One nccl-tests test (one binary's run, or one `-N` cycle of it).
#[derive(Debug, Clone, Default)]
struct Test {
    first_line: usize,
    version: Option<String>,
    git_commit: Option<String>,
    nccl_library: Option<String>,
    binary: Option<String>,
    settings_seen: bool,
    warmup_iters: Option<u32>,
    iters: Option<u32>,
    check_iters: Option<u32>,
    blocking: Option<bool>,
    ranks: Vec<RankInfo>,
    /// An nccl-tests binary named on a line of the log (a command echoed
    /// by the job script): its line, the name and its collective.
    binary_hint: Option<(usize, String, Collective)>,
    layout: Option<Layout>,
    rows: Vec<(usize, RawRow)>,
    /// The first row as written, for errors about the whole table.
    first_row_text: Option<String>,
    keys: FastSet<(DataType, Option<ReduceOp>, Option<u32>, u64)>,
    footer: bool,
    /// The sweep went on to a next `-N` cycle after this part of it.
    cycle_done: bool,
    failure: Option<String>,
    error: Option<String>,
}

impl Test {
    fn has_data(&self) -> bool {
        !self.rows.is_empty() || self.footer
    }

    fn has_header(&self) -> bool {
        self.version.is_some() || self.binary.is_some() || self.settings_seen
    }

    /// The same run's header, for the rows that follow a repeated size.
    fn continuation(&self, line: usize) -> Test {
        Test {
            first_line: line,
            rows: Vec::new(),
            first_row_text: None,
            keys: FastSet::default(),
            footer: false,
            cycle_done: false,
            failure: None,
            error: None,
            ..self.clone()
        }
    }
}

impl Parser<'_> {
    fn line(&mut self, number: usize, raw: &str) -> Result<(), ImportError> {
        if self.past_preamble.is_some() {
            return self.past_preamble(number, raw);
        }
        let route = self.sieve.route(self.origin, number, raw)?;
        let text = strip_launcher_prefix(raw).trim();
        if text.is_empty() {
            return Ok(());
        }
        if route == Route::Other {
            return self.other_line(number, raw, text);
        }
        if let Some(comment) = text.strip_prefix('#') {
            self.recognised = true;
            return self.comment(number, raw, comment);
        }
        // Table rows first: they are most lines, and start with a number.
        let first = text.split_whitespace().next().unwrap_or_default();
        if first.parse::<u64>().is_ok() {
            return self.row(number, raw, text);
        }
        if self.any_rank_line(number, text) {
            return Ok(());
        }
        if let Some((binary, collective)) = infer::binary_on_line(text) {
            // A command line echoed by the job: it names the next table.
            self.recognised = true;
            self.new_test_if(self.test.has_data(), number)?;
            self.test.binary_hint = Some((number, binary, collective));
            return Ok(());
        }
        if route == Route::Task {
            self.sieve.skip(number, raw);
            return Ok(());
        }
        let message = "not an nccl-tests table row, # line or NCCL log line";
        self.unreadable(number, raw, message.to_string())
    }

    /// Reads a line that any rank prints (NCCL's logging, nccl-tests'
    /// failure lines); `false` if `text` is none.
    fn any_rank_line(&mut self, number: usize, text: &str) -> bool {
        if is_nccl_log(text) {
            self.recognised = true;
            if text.contains("NCCL WARN") {
                self.nccl_warnings.0 += 1;
                self.nccl_warnings
                    .1
                    .get_or_insert_with(|| (number, text.to_string()));
            }
            self.nccl_log(text);
            return true;
        }
        if is_test_failure(text) {
            self.test.failure.get_or_insert_with(|| text.to_string());
            return true;
        }
        false
    }

    /// A line of a labelled log that is not the header's task's: read
    /// where any rank prints it, refused where it is nccl-tests output,
    /// else skipped (and counted).
    fn other_line(&mut self, number: usize, raw: &str, text: &str) -> Result<(), ImportError> {
        if self.any_rank_line(number, text) {
            return Ok(());
        }
        self.sieve.check_other(self.origin, number, raw)?;
        self.sieve.skip(number, raw);
        Ok(())
    }

    /// A line that cannot be read: an error, or skipped with `--lenient`;
    /// before the log's header or first row, held until one of them says
    /// whether it was a job's preamble (see [`Sieve::hold`]).
    fn unreadable(&mut self, number: usize, raw: &str, message: String) -> Result<(), ImportError> {
        let error = if self.opts.lenient {
            None
        } else if !self.recognised {
            let message = "not an input collbench-analyze reads (a collbench report, nccl-tests output or -J JSON, or the course CSV)";
            Some(ImportError::line(self.origin, number, raw, message))
        } else {
            Some(ImportError::unreadable(
                self.origin,
                number,
                raw,
                message,
                self.opts.offered.lenient,
            ))
        };
        if self.sieve.holding() {
            return match self.sieve.hold(number, raw, error) {
                Err(error) if self.sieve.past_bounds().is_some() => {
                    let first = self.sieve.past_bounds().unwrap_or(number);
                    self.past_preamble = Some((first, error));
                    Ok(())
                }
                released => self.skip_released(released),
            };
        }
        match error {
            Some(error) => Err(error),
            None => {
                self.skip_unreadable(number, 1);
                Ok(())
            }
        }
    }

    /// A line after the lines held before a header went past a job's
    /// preamble (without `--lenient`): the file fails at its first line,
    /// but where nccl-tests' output opens later on (see
    /// [`job_output::is_header_line`]) the error says where, found in the
    /// same one reading of the file.
    fn past_preamble(&mut self, number: usize, raw: &str) -> Result<(), ImportError> {
        if !job_output::is_header_line(raw) {
            return Ok(());
        }
        let first = self.past_preamble.as_ref().map_or(1, |(first, _)| *first);
        let lenient = suggest(self.opts.offered.lenient, "--lenient");
        Err(ImportError::at(
            self.origin,
            first,
            format!(
                "no nccl-tests header within a job output's preamble (at most {LAUNCHER_LINES} launcher lines and {PEEK_LINES} others); the first is at line {number}: remove the lines before it, or {lenient} to skip them as unreadable lines"
            ),
        ))
    }

    /// Counts `lines` unreadable lines skipped with `--lenient`, the first
    /// at `first`.
    fn skip_unreadable(&mut self, first: usize, lines: usize) {
        self.skipped += lines;
        let known = self.first_skipped.get_or_insert(first);
        *known = (*known).min(first);
    }

    /// The lines held before a row or the end without a header: the
    /// first one's error, or counted as skipped with `--lenient`.
    fn release_held(&mut self) -> Result<(), ImportError> {
        let released = self.sieve.release();
        self.skip_released(released)
    }

    /// Held lines the sieve let go of (see [`Sieve::release`]): its
    /// error, or counted as skipped with `--lenient`.
    fn skip_released(
        &mut self,
        released: Result<job_output::Skipped, ImportError>,
    ) -> Result<(), ImportError> {
        let released = released?;
        if let Some(first) = released.first {
            self.skip_unreadable(first, released.lines);
        }
        Ok(())
    }

    /// Starts a new test when `ends_current` says the current one is over.
    fn new_test_if(&mut self, ends_current: bool, number: usize) -> Result<(), ImportError> {
        if ends_current {
            let done = std::mem::take(&mut self.test);
            self.finish_test(done)?;
        }
        if self.test.first_line == 0 {
            self.test.first_line = number;
        }
        Ok(())
    }

    fn comment(&mut self, number: usize, raw: &str, body: &str) -> Result<(), ImportError> {
        let tokens: Vec<&str> = body.split_whitespace().collect();
        if job_output::is_header(&tokens) {
            let released = self.sieve.header(number, raw);
            self.skip_released(released)?;
        }
        let t = &self.test;
        match tokens.as_slice() {
            ["nccl-tests", "version", version, rest @ ..] => {
                self.new_test_if(t.has_header() || t.has_data(), number)?;
                self.test.version = Some(version.to_string());
                for token in rest {
                    if let Some(code) = token.strip_prefix("nccl-library=") {
                        self.test.nccl_library = code.parse().ok().map(nccl_version_string);
                    } else if let Some(commit) =
                        token.strip_prefix('(').and_then(|t| t.strip_suffix(')'))
                    {
                        self.test.git_commit = Some(commit.to_string());
                    }
                }
            }
            ["Collective", "test", "starting:", binary, ..] => {
                let ends = t.binary.is_some() || t.settings_seen || t.has_data();
                self.new_test_if(ends, number)?;
                self.test.binary = Some(binary.to_string());
            }
            ["Collective", "test", "concluded:", ..] => self.test.footer = true,
            ["nThread", ..] => {
                self.new_test_if(t.settings_seen || t.has_data(), number)?;
                self.settings(&tokens);
            }
            ["Blocking", "Enabled:", ..] => self.test.blocking = Some(true),
            ["Rank", ..] => {
                self.new_test_if(t.has_data(), number)?;
                match parse_rank(&tokens) {
                    Some(rank) => self.test.ranks.push(rank),
                    None => {
                        let message = "device line not understood (expected \"# Rank N [Group G] Pid P on HOST device D [BUS] NAME\")";
                        return self.unreadable(number, raw, message.to_string());
                    }
                }
            }
            ["size", "count", ..] => {
                let Some(layout) = Layout::from_header(&tokens) else {
                    let message = "column header not understood (expected size, count, type, …, then time, algbw, busbw per placement)";
                    return self.unreadable(number, raw, message.to_string());
                };
                if layout.cputime {
                    // Every imported time is read as a completion time
                    // (fits, bandwidths): an enqueue time would pass for one.
                    let message = "a table of nccl-tests run with -C 1 (--report_cputime): its time column is the host enqueue time (cputime), not the completion time collbench-analyze reads; rerun it without -C";
                    return Err(ImportError::line(self.origin, number, raw, message));
                }
                if t.has_data() {
                    let next = t.continuation(number);
                    let done = std::mem::replace(&mut self.test, next);
                    self.finish_test(done)?;
                }
                self.test.first_line = number;
                self.test.layout = Some(layout);
            }
            ["Out", "of", "bounds", "values", ":", count, status @ ..] => {
                self.test.footer = true;
                if status.first() == Some(&"FAILED") {
                    self.test.failure = Some(format!("{count} out-of-bounds values"));
                }
            }
            ["Avg", "bus", "bandwidth", ":", value, status @ ..] => {
                self.test.footer = true;
                if status.first() == Some(&"FAILED") {
                    self.test.failure.get_or_insert_with(|| {
                        format!("average bus bandwidth {value} GB/s is below NCCL_TESTS_MIN_BW")
                    });
                }
            }
            ["error:", ..] => {
                let message = body.trim().trim_start_matches("error:").trim();
                self.test.error = Some(message.to_string());
            }
            _ => {
                if let Some((binary, collective)) = infer::binary_on_line(body) {
                    self.new_test_if(t.has_data(), number)?;
                    self.test.binary_hint = Some((number, binary, collective));
                }
            }
        }
        Ok(())
    }

    /// `nThread 1 nGpus 1 minBytes … warmup iters: 5 iters: 20 [agg iters: 1] validation: 1 …`
    fn settings(&mut self, tokens: &[&str]) {
        let test = &mut self.test;
        test.settings_seen = true;
        test.blocking.get_or_insert(false);
        for (i, pair) in tokens.windows(2).enumerate() {
            let value = pair[1].parse::<u32>().ok();
            match pair[0] {
                "validation:" => test.check_iters = value,
                "iters:" => match i.checked_sub(1).map(|p| tokens[p]) {
                    Some("warmup") => test.warmup_iters = value,
                    Some("agg") => {}
                    _ => test.iters = value,
                },
                _ => {}
            }
        }
    }

    fn nccl_log(&mut self, text: &str) {
        let tokens: Vec<&str> = text.split_whitespace().collect();
        for pair in tokens.windows(3) {
            if pair[0] == "NCCL" && pair[1] == "version" {
                let version = pair[2].split('+').next().unwrap_or(pair[2]);
                self.nccl_version = Some(version.to_string());
            }
        }
        for pair in tokens.windows(2) {
            if pair[0] == "cudaDriverVersion" {
                if let Ok(code) = pair[1].parse::<u32>() {
                    self.cuda_driver = Some(format!("{}.{}", code / 1000, code % 1000 / 10));
                }
            }
        }
    }

    fn row(&mut self, number: usize, raw: &str, text: &str) -> Result<(), ImportError> {
        let layout = match self.test.layout.take() {
            Some(layout) => layout,
            None => match Layout::infer(text) {
                Ok(layout) => layout,
                Err(message) => return self.unreadable(number, raw, message),
            },
        };
        let parsed = layout.parse_row(text);
        // A layout told by a row that then failed is no evidence for the next.
        if parsed.is_ok() || !layout.inferred {
            self.test.layout = Some(layout);
        }
        let row = match parsed {
            Ok(row) => row,
            Err(message) => return self.unreadable(number, raw, message),
        };
        self.release_held()?;
        let key = (row.dtype, row.op, row.root, row.bytes);
        let went_back = self
            .test
            .rows
            .last()
            .is_some_and(|(_, last)| row.bytes < last.bytes);
        if went_back && self.test.keys.contains(&key) {
            // The sweep started over: the next `-N` cycle. (Equal sizes in a
            // row are kept together: nccl-tests prints small sizes that round
            // to the same count more than once.)
            let next = self.test.continuation(number);
            let mut done = std::mem::replace(&mut self.test, next);
            done.cycle_done = true;
            self.finish_test(done)?;
        }
        if self.test.first_line == 0 {
            self.test.first_line = number;
        }
        self.recognised = true;
        self.test.keys.insert(key);
        self.test.rows.push((number, row));
        self.test
            .first_row_text
            .get_or_insert_with(|| raw.trim().to_string());
        Ok(())
    }

    fn finish(mut self) -> Result<Loaded, ImportError> {
        if let Some((_, error)) = self.past_preamble.take() {
            return Err(error);
        }
        self.release_held()?;
        let last = std::mem::take(&mut self.test);
        self.finish_test(last)?;
        self.notes.extend(self.sieve.note(self.origin));
        if let (count, Some((line, text))) = &self.nccl_warnings {
            // NCCL's warnings (a port error, a fallback) can explain the
            // numbers: they are said, not dropped with NCCL's other logging.
            self.notes.push(format!(
                "{}:{line}: the log holds {count} NCCL WARN line(s), the first: {}",
                self.origin.display(),
                crate::error::cut(text)
            ));
        }
        if self.skipped > 0 {
            self.notes.push(format!(
                "{}: skipped {} unreadable line(s), the first at line {}",
                self.origin.display(),
                self.skipped,
                self.first_skipped.unwrap_or(0)
            ));
        }
        Ok(Loaded {
            format: SourceFormat::NcclTestsStdout,
            reports: self.reports,
            notes: self.notes,
            skipped_lines: self.skipped,
        })
    }

    /// Turns a finished test into a report, now that all of it is known.
    fn finish_test(&mut self, test: Test) -> Result<(), ImportError> {
        let Some((first_row_line, _)) = test.rows.first() else {
            if test.has_header() {
                self.notes.push(format!(
                    "{}:{}: test {} has no results (it stopped before its first size)",
                    self.origin.display(),
                    test.first_line,
                    test.binary.as_deref().unwrap_or("(unnamed)")
                ));
            }
            return Ok(());
        };
        let context = (
            *first_row_line,
            test.first_row_text.clone().unwrap_or_default(),
        );
        let known_world = test
            .ranks
            .iter()
            .map(|r| r.rank + 1)
            .max()
            .or(self.opts.world_size);
        let collective = self.collective(&test, known_world, &context)?;
        let world_size = self.world_size(&test, collective, &context)?;
        let mut meta = RunMeta::new("nccl-tests", Backend::Nccl, world_size);
        meta.tool.version = test.version.clone();
        meta.tool.git_commit = test.git_commit.clone();
        meta.run.argv = test.binary.iter().cloned().collect();
        meta.run.status = if test.failure.is_some() {
            RunStatus::Failed
        } else if test.footer || test.cycle_done {
            RunStatus::Complete
        } else {
            RunStatus::Partial
        };
        meta.run.error = match (&test.failure, &test.error) {
            (Some(f), Some(e)) => Some(format!("{f}; {e}")),
            (f, e) => f.clone().or(e.clone()),
        };
        meta.warmup_iters = test.warmup_iters;
        meta.iters = test.iters;
        meta.check_iters = test.check_iters;
        meta.blocking = test.blocking;
        let env = &mut meta.environment;
        env.nccl_version = test.nccl_library.clone().or(self.nccl_version.clone());
        env.cuda_driver_version = self.cuda_driver.clone();
        if !test.ranks.is_empty() {
            let hosts: HashSet<&str> = test.ranks.iter().map(|r| r.host.as_str()).collect();
            env.nodes = Some(hosts.len() as u32);
        }
        env.ranks = test.ranks.clone();
        let test = self.one_row_per_size(test);
        let results = self.cases(&test, collective, world_size);
        if let Some(report) = meta.into_report(results) {
            self.reports.push(report);
        }
        Ok(())
    }

    /// `test` with one row per size: a size printed more than once in a
    /// row (nccl-tests before 2.13 prints every requested size, and `-b 1`
    /// rounds several to 0 elements: all-gather and reduce-scatter up to
    /// five times) keeps the repeat of median time, and a note says so,
    /// with the times of all of them.
    fn one_row_per_size(&mut self, mut test: Test) -> Test {
        let same_size = |a: &RawRow, b: &RawRow| {
            (a.dtype, a.op, a.root, a.bytes) == (b.dtype, b.op, b.root, b.bytes)
        };
        if !test.rows.windows(2).any(|w| same_size(&w[0].1, &w[1].1)) {
            return test;
        }
        let rows = std::mem::take(&mut test.rows);
        let mut kept: Vec<(usize, RawRow)> = Vec::with_capacity(rows.len());
        let mut repeats: Vec<Repeat> = Vec::new();
        let mut start = 0;
        while start < rows.len() {
            let end = start
                + rows[start..]
                    .iter()
                    .take_while(|(_, r)| same_size(r, &rows[start].1))
                    .count();
            let group = &rows[start..end];
            if group.len() == 1 {
                kept.push(group[0].clone());
            } else {
                let repeat = Repeat::of(group);
                kept.push(group[repeat.kept].clone());
                repeats.push(repeat);
            }
            start = end;
        }
        test.rows = kept;
        let shown: Vec<String> = repeats.iter().take(3).map(Repeat::describe).collect();
        let more = match repeats.len() {
            n if n > 3 => format!(" and {} more", n - 3),
            _ => String::new(),
        };
        self.notes.push(format!(
            "{}:{}: {} size(s) printed more than once in a row ({}{more}), as nccl-tests does where requested sizes round to the same element count (before 2.13, -b below one element per rank prints 0 B several times); kept one row per size: the repeat of median time",
            self.origin.display(),
            repeats[0].first_line,
            repeats.len(),
            shown.join("; "),
        ));
        test
    }

    fn cases(&mut self, test: &Test, collective: Collective, world_size: u32) -> Vec<CaseResult> {
        let factor = collective.bus_factor(world_size);
        let mut results = Vec::with_capacity(test.rows.len() * 2);
        let mut missing_time = 0;
        let mut mismatch: Option<(usize, f64)> = None;
        for (number, row) in &test.rows {
            for cells in row.cells.iter().flatten() {
                let Some(time_us) = cells.time_us else {
                    missing_time += 1;
                    continue;
                };
                let mut case = wall_case(
                    collective,
                    cells.placement,
                    row.dtype,
                    row.bytes,
                    row.count,
                    time_us,
                    world_size,
                );
                case.op = row.op;
                case.root = row.root;
                case.wrong_elements = cells.wrong;
                case.time_us.min = cells.iter_min;
                case.time_us.max = cells.iter_max;
                case.time_us.p99 = cells.iter_p99;
                if let (Some(alg), Some(bus)) = (cells.algbw, cells.busbw) {
                    // Printed with two decimals: only large values tell the factor.
                    if alg >= 1.0 && ((bus / alg) / factor - 1.0).abs() > 0.03 {
                        mismatch.get_or_insert((*number, bus / alg));
                    }
                }
                results.push(case);
            }
        }
        let origin = self.origin.display();
        if missing_time > 0 {
            self.notes.push(format!(
                "{origin}: {missing_time} measurement(s) with time N/A left out"
            ));
        }
        if let Some((number, ratio)) = mismatch {
            let offered = self.opts.offered;
            let check = if offered.collective && offered.world_size {
                "check --collective and --world-size".to_string()
            } else {
                format!(
                    "check the collective and world size it was read as; to set them, {}",
                    suggest(false, "--collective C --world-size N")
                )
            };
            self.notes.push(format!(
                "{origin}:{number}: the log's busbw/algbw is {ratio:.3} but {collective} on {world_size} ranks has factor {factor:.3}: {check}"
            ));
        }
        results
    }

    /// The table's collective: the log's `# Collective test starting`
    /// line, else `--collective`, else a binary named in the log, the rows'
    /// columns and bus factor when they fit one collective, the file name,
    /// and all_reduce when the rows allow it. Each guess is a note.
    fn collective(
        &mut self,
        test: &Test,
        world: Option<u32>,
        row: &(usize, String),
    ) -> Result<Collective, ImportError> {
        let from_flag = self.opts.collective;
        let expected = self.opts.collective_expected;
        let Some(binary) = &test.binary else {
            if let Some(collective) = from_flag.filter(|_| !expected) {
                return Ok(collective);
            }
            return self.guess_collective(test, world, row, from_flag.filter(|_| expected));
        };
        let collective = collective_from_binary(binary)
            .map_err(|message| ImportError::line(self.origin, test.first_line, binary, message))?;
        if from_flag.is_some_and(|c| c != collective) && !expected {
            self.notes.push(format!(
                "{}:{}: the log names {binary}; --collective is ignored for it",
                self.origin.display(),
                test.first_line
            ));
        }
        Ok(collective)
    }

    /// The collective of a log that names no binary: a binary hinted at,
    /// the rows, the file name, then `expected` (the caller's, when it only
    /// expects one) or all_reduce, each with a note.
    fn guess_collective(
        &mut self,
        test: &Test,
        world: Option<u32>,
        row: &(usize, String),
        expected: Option<Collective>,
    ) -> Result<Collective, ImportError> {
        let origin = self.origin.display().to_string();
        let no_line = "the log has no \"# Collective test starting\" line";
        let pass = suggest(self.opts.offered.collective, "--collective NAME");
        if let Some((line, binary, collective)) = &test.binary_hint {
            self.notes.push(format!(
                "{origin}:{line}: collective {collective} from {binary} named there ({no_line}; {pass} otherwise)"
            ));
            return Ok(*collective);
        }
        let shape = shape_of(test, world);
        let candidates = shape.candidates();
        if let [only] = candidates.as_slice() {
            self.notes.push(format!(
                "{origin}:{}: collective {only} told by the rows' redop, root and busbw/algbw ({no_line}; {pass} otherwise)",
                row.0
            ));
            return Ok(*only);
        }
        let by_name = infer::from_file_name(self.origin)
            .filter(|c| candidates.is_empty() || candidates.contains(c));
        if let Some(collective) = by_name {
            self.notes.push(format!(
                "{origin}: collective {collective} from the file name ({no_line} and names no binary; {pass} otherwise)"
            ));
            return Ok(collective);
        }
        if let Some(collective) =
            expected.filter(|c| candidates.is_empty() || candidates.contains(c))
        {
            self.notes.push(format!(
                "{origin}: collective {collective} taken as the flag naming the file expects ({no_line}, names no binary, and neither the rows nor the file name tell)"
            ));
            return Ok(collective);
        }
        if candidates.is_empty() || candidates.contains(&Collective::AllReduce) {
            self.notes.push(format!(
                "{origin}: collective all_reduce assumed ({no_line}, names no binary, and neither the rows nor the file name tell; {pass} otherwise)"
            ));
            return Ok(Collective::AllReduce);
        }
        let fits: Vec<&str> = candidates.iter().map(|c| c.as_str()).collect();
        Err(ImportError::line(
            self.origin,
            row.0,
            &row.1,
            format!(
                "cannot tell which collective this table measured ({no_line}; its rows fit {}); {pass} (accepted: {})",
                fits.join(" or "),
                Collective::accepted()
            ),
        ))
    }

    fn world_size(
        &mut self,
        test: &Test,
        collective: Collective,
        row: &(usize, String),
    ) -> Result<u32, ImportError> {
        if let Some(max_rank) = test.ranks.iter().map(|r| r.rank).max() {
            let world = max_rank + 1;
            if self.opts.world_size.is_some_and(|w| w != world) {
                self.notes.push(format!(
                    "{}: the log's device lines list {world} ranks; --world-size is ignored for it",
                    self.origin.display()
                ));
            }
            return Ok(world);
        }
        self.opts.world_size.ok_or_else(|| {
            let hint = suggested_world_size(test, collective)
                .map(|n| format!("; its busbw/algbw ratio suggests {n}"))
                .unwrap_or_default();
            let pass = suggest(self.opts.offered.world_size, "--world-size N");
            ImportError::line(
                self.origin,
                row.0,
                &row.1,
                format!(
                    "world size unknown: the log has no \"# Rank …\" device lines; {pass}{hint}"
                ),
            )
        })
    }
}

/// One size printed several times in a row, and the repeat kept.
struct Repeat {
    bytes: u64,
    first_line: usize,
    last_line: usize,
    count: usize,
    /// Index of the kept row in the group.
    kept: usize,
    kept_line: usize,
    /// The times of every repeat, the first placement printed, in µs.
    times: Vec<f64>,
}

impl Repeat {
    /// The group's repeat of median time (the lower of the two middle
    /// ones), by the first placement the rows print a time for.
    fn of(group: &[(usize, RawRow)]) -> Repeat {
        let time = |row: &RawRow| row.cells.iter().flatten().find_map(|c| c.time_us);
        let mut order: Vec<usize> = (0..group.len()).collect();
        order.sort_by(|&a, &b| {
            let (x, y) = (time(&group[a].1), time(&group[b].1));
            x.unwrap_or(f64::INFINITY)
                .total_cmp(&y.unwrap_or(f64::INFINITY))
        });
        let kept = order[(group.len() - 1) / 2];
        Repeat {
            bytes: group[0].1.bytes,
            first_line: group[0].0,
            last_line: group[group.len() - 1].0,
            count: group.len(),
            kept,
            kept_line: group[kept].0,
            times: group.iter().filter_map(|(_, r)| time(r)).collect(),
        }
    }

    /// `0 B 5 times at lines 15-19 (0.29 to 0.35 us), line 16 kept`.
    fn describe(&self) -> String {
        let range = match (
            self.times.iter().copied().reduce(f64::min),
            self.times.iter().copied().reduce(f64::max),
        ) {
            (Some(lo), Some(hi)) => format!(" ({lo} to {hi} us)"),
            _ => String::new(),
        };
        format!(
            "{} B {} times at lines {}-{}{range}, line {} kept",
            self.bytes, self.count, self.first_line, self.last_line, self.kept_line
        )
    }
}

/// What the rows of `test` say about their collective.
fn shape_of(test: &Test, world: Option<u32>) -> Shape {
    let first = test.rows.first().map(|(_, row)| row);
    let layout = test.layout.as_ref();
    let column = |present: bool, value: bool| present.then_some(value);
    Shape {
        op: first.and_then(|r| column(layout.is_some_and(Layout::has_redop), r.op.is_some())),
        root: first.and_then(|r| column(layout.is_some_and(Layout::has_root), r.root.is_some())),
        bus_ratio: world.zip(printed_bus_ratio(test)).map(|(w, r)| (r, w)),
    }
}

/// busbw / algbw of the row with the largest printed algbw, from 1 GB/s
/// (printed with two decimals, smaller values do not tell the factor).
fn printed_bus_ratio(test: &Test) -> Option<f64> {
    let (alg, bus) = test
        .rows
        .iter()
        .flat_map(|(_, row)| row.cells.iter().flatten())
        .filter_map(|c| Some((c.algbw?, c.busbw?)))
        .max_by(|a, b| a.0.total_cmp(&b.0))?;
    (alg >= 1.0).then(|| bus / alg)
}

/// Inverts the bus factor on the row with the largest printed algbw.
fn suggested_world_size(test: &Test, collective: Collective) -> Option<u32> {
    let ratio = printed_bus_ratio(test)?;
    let n = match collective.bus_factor(4) {
        f if f > 1.0 => 2.0 / (2.0 - ratio),
        f if f < 1.0 => 1.0 / (1.0 - ratio),
        _ => return None,
    };
    (n.is_finite() && (1.0..100_000.0).contains(&n)).then(|| n.round() as u32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use schema::Placement;

    fn import(text: &str, opts: &ImportOptions) -> Result<Loaded, ImportError> {
        parse(text, Path::new("t.log"), opts)
    }

    fn placements(report: &Report) -> Vec<Placement> {
        report.results.iter().map(|r| r.placement).collect()
    }

    /// nccl-tests' own `-C 1` table: the time columns are labelled
    /// `cputime`, and its enqueue times are never imported as completion
    /// times; the same log with `time` is read.
    #[test]
    fn an_nccl_tests_cputime_table_is_refused_in_one_line() {
        let log = |time: &str| {
            format!(
                "# nccl-tests version 2.19.6 nccl-headers=22703 nccl-library=22703\n\
# Collective test starting: all_reduce_perf\n\
#\n\
#                                                              out-of-place                       in-place\n\
#       size         count      type   redop    root {time:>8}   algbw   busbw  #wrong {time:>8}   algbw   busbw  #wrong\n\
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)\n\
     1048576        262144     float     sum      -1    12.31   20.05   35.08       0    11.90   20.20   35.36       0\n"
            )
        };
        let opts = ImportOptions {
            world_size: Some(8),
            ..Default::default()
        };
        let err = import(&log("cputime"), &opts).unwrap_err().to_string();
        assert!(err.starts_with("t.log:5: "), "{err}");
        assert!(err.contains("-C 1 (--report_cputime)"), "{err}");
        assert!(err.contains("not the completion time"), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        let loaded = import(&log("time"), &opts).unwrap();
        assert_eq!(loaded.reports[0].results[0].time_us.mean, 12.31);
    }

    #[test]
    fn headerless_rows_need_a_world_size_and_a_collective_only_when_ambiguous() {
        let row = "     1048576        262144     float     sum      -1    52.31   20.05   35.08       0    51.90   20.20   35.36       0\n";
        // The flags are suggested as flags where the caller has them, else
        // through `collbench-analyze import`.
        let flags = ImportOptions {
            offered: crate::Offered::ALL,
            ..Default::default()
        };
        // sum and root -1: all_reduce (the default) or reduce_scatter.
        let err = import(row, &flags).unwrap_err().to_string();
        assert!(
            err.contains("; pass --world-size N; its busbw/algbw ratio suggests 8"),
            "{err}"
        );
        let err = import(row, &ImportOptions::default())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("; import the file first (`collbench-analyze import --world-size N FILE -o REPORT.json`); its busbw/algbw ratio suggests 8"),
            "{err}"
        );
        // none and root 0: broadcast, gather or scatter, not all_reduce.
        let rooted = "        1024           256     float    none       0    11.20    0.09    0.09       0    11.37    0.09    0.09       0\n";
        let err = import(rooted, &flags).unwrap_err().to_string();
        assert!(
            err.contains("its rows fit broadcast or gather or scatter); pass --collective"),
            "{err}"
        );
        let err = import(rooted, &ImportOptions::default())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("its rows fit broadcast or gather or scatter); import the file first (`collbench-analyze import --collective NAME FILE -o REPORT.json`) (accepted: "),
            "{err}"
        );
        let opts = ImportOptions {
            collective: Some(Collective::AllReduce),
            ..flags
        };
        let err = import(row, &opts).unwrap_err().to_string();
        assert!(
            err.contains("pass --world-size") && err.contains("suggests 8"),
            "{err}"
        );
        let opts = ImportOptions {
            world_size: Some(8),
            ..opts
        };
        let loaded = import(row, &opts).unwrap();
        let report = &loaded.reports[0];
        assert_eq!(placements(report), vec![Placement::Out, Placement::In]);
        assert_eq!(report.run.status, RunStatus::Partial);
        assert!((report.results[0].busbw_gbps - 35.08).abs() < 0.01);
    }

    #[test]
    fn a_size_printed_twice_in_a_row_keeps_one_row_and_says_so() {
        // all_reduce before 2.13 with -b 1: 1 and 2 bytes both print 0 B.
        let opts = ImportOptions {
            collective: Some(Collective::AllReduce),
            world_size: Some(8),
            ..Default::default()
        };
        let row = |size: u64, time: f64| {
            format!("{size:>12}  {:>12}     float     sum  {time:>7.2}    0.00    0.00  0e+00  {time:>7.2}    0.00    0.00  0e+00\n", size / 4)
        };
        let text = [row(0, 0.40), row(0, 0.30), row(4, 10.0), row(8, 10.1)].concat();
        let loaded = import(&text, &opts).unwrap();
        assert_eq!(loaded.reports.len(), 1);
        let out: Vec<(u64, f64)> = loaded.reports[0]
            .results
            .iter()
            .filter(|r| r.placement == Placement::Out)
            .map(|r| (r.bytes, r.time_us.mean))
            .collect();
        // Of two, the lower of the middle two: the faster.
        assert_eq!(out, [(0, 0.30), (4, 10.0), (8, 10.1)]);
        let note = loaded.notes.join("\n");
        assert!(
            note.contains("t.log:1: 1 size(s) printed more than once in a row (0 B 2 times at lines 1-2 (0.3 to 0.4 us), line 2 kept)"),
            "{note}"
        );
    }

    #[test]
    fn repeated_sizes_start_a_new_report() {
        let opts = ImportOptions {
            collective: Some(Collective::Broadcast),
            world_size: Some(2),
            ..Default::default()
        };
        let row = |size: u64| {
            format!("{size:>12}  {:>12}     float    none       0    10.00    0.00    0.00       0    10.00    0.00    0.00       0\n", size / 4)
        };
        let text = [row(8), row(16), row(8), row(16)].concat();
        let loaded = import(&text, &opts).unwrap();
        assert_eq!(loaded.reports.len(), 2);
        assert_eq!(loaded.reports[1].results[0].root, Some(0));
    }
}
