//! Acceptance on the benchmark's side: `--min-busbw`, `--min-busbw-file`
//! and `--expect-ceiling` read into [`Thresholds`], each row checked as it
//! comes, and at the end the verdict and the stragglers (schema's rule)
//! recorded; plus the test-only delay of one rank.
use std::path::Path;
use std::time::Duration;

use schema::{CaseResult, ShortRow, SizeThreshold, StragglerTally, Thresholds, Verdict};

use crate::cli::AcceptanceArgs;
use crate::failure::Failure;

/// The thresholds the flags ask for (`None` without any); the ceiling's
/// GB/s is filled once the run's links are known ([`with_ceiling`]).
pub fn thresholds(args: &AcceptanceArgs) -> anyhow::Result<Option<Thresholds>> {
    let min_busbw = match (&args.min_busbw, &args.min_busbw_file) {
        (Some(_), Some(_)) => {
            return Err(usage(
                "--min-busbw and --min-busbw-file: give the thresholds one way, not both",
            ))
        }
        (Some(spec), None) => parse_spec(spec)?,
        (None, Some(file)) => read_file(file)?,
        (None, None) => Vec::new(),
    };
    if let Some(f) = args.expect_ceiling {
        if !(f > 0.0 && f <= 1.0) {
            return Err(usage(format!(
                "--expect-ceiling {f}: must be a fraction of the link ceiling, above 0 and at most 1 (e.g. 0.8)"
            )));
        }
    }
    if min_busbw.is_empty() && args.expect_ceiling.is_none() {
        return Ok(None);
    }
    Ok(Some(Thresholds {
        min_busbw,
        ceiling_fraction: args.expect_ceiling,
        ceiling_busbw_gbps: None,
    }))
}

/// `GBPS` (every size) or `SIZE=GBPS,SIZE=GBPS,…` (each from its size up).
fn parse_spec(spec: &str) -> anyhow::Result<Vec<SizeThreshold>> {
    let flag = "--min-busbw";
    if !spec.contains('=') {
        let gbps = parse_gbps(flag, spec.trim())?;
        return Ok(vec![SizeThreshold {
            from_bytes: 0,
            min_busbw_gbps: gbps,
        }]);
    }
    let steps = spec
        .split(',')
        .map(|entry| {
            let (size, gbps) = entry.split_once('=').ok_or_else(|| {
                usage(format!(
                    "{flag} {spec:?}: entry {entry:?} is not SIZE=GBPS (accepted: one GBPS for every size, or SIZE=GBPS,… such as 1M=20,256M=90)"
                ))
            })?;
            step(flag, size.trim(), gbps.trim())
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    ordered(flag, steps)
}

/// A file of `SIZE GBPS` lines (or `SIZE=GBPS`, `SIZE,GBPS`); `#` starts
/// a comment, blank lines are skipped.
fn read_file(path: &Path) -> anyhow::Result<Vec<SizeThreshold>> {
    use std::io::Read;

    let flag = format!("--min-busbw-file {}", path.display());
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|file| {
            file.take(MAX_THRESHOLDS_FILE_BYTES + 1)
                .read_to_end(&mut bytes)
        })
        .map_err(|e| usage(format!("{flag}: {e}")))?;
    if bytes.len() as u64 > MAX_THRESHOLDS_FILE_BYTES {
        return Err(usage(format!(
            "{flag}: more than {MAX_THRESHOLDS_FILE_BYTES} bytes (accepted: a text file of SIZE GBPS lines, e.g. 1M 20)"
        )));
    }
    let text = String::from_utf8(bytes).map_err(|e| {
        usage(format!(
            "{flag}: not text (a byte that is not UTF-8 at offset {}; accepted: a text file of SIZE GBPS lines, e.g. 1M 20)",
            e.utf8_error().valid_up_to()
        ))
    })?;
    let mut steps = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let fields: Vec<&str> = line
            .split(|c: char| c == '=' || c == ',' || c.is_whitespace())
            .filter(|f| !f.is_empty())
            .collect();
        let at = format!("{flag}:{}", number + 1);
        match fields[..] {
            [size, gbps] => steps.push(step(&at, size, gbps)?),
            _ => {
                return Err(usage(format!(
                    "{at}: {} is not a line of SIZE GBPS (e.g. 1M 20)",
                    quoted_start(line)
                )))
            }
        }
    }
    if steps.is_empty() {
        return Err(usage(format!(
            "{flag}: no thresholds in the file (expected lines of SIZE GBPS, e.g. 1M 20)"
        )));
    }
    ordered(&flag, steps)
}

/// The largest thresholds file read: a few lines of `SIZE GBPS` are
/// some bytes, so anything near this is not one.
pub const MAX_THRESHOLDS_FILE_BYTES: u64 = 1 << 20;

/// A line quoted for an error, its first 40 characters at most.
fn quoted_start(line: &str) -> String {
    const SHOWN: usize = 40;
    match line.char_indices().nth(SHOWN) {
        Some((end, _)) => format!("{:?}… ({} bytes)", &line[..end], line.len()),
        None => format!("{line:?}"),
    }
}

fn step(flag: &str, size: &str, gbps: &str) -> anyhow::Result<SizeThreshold> {
    let from_bytes = schema::units::parse_bytes(size)
        .map_err(|e| usage(format!("{flag}: size {size:?}: {e}")))?;
    Ok(SizeThreshold {
        from_bytes,
        min_busbw_gbps: parse_gbps(flag, gbps)?,
    })
}

fn parse_gbps(flag: &str, text: &str) -> anyhow::Result<f64> {
    match text.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(usage(format!(
            "{flag}: {text:?} is not a bus bandwidth (accepted: a number of GB/s, 0 or more, such as 40 or 12.5)"
        ))),
    }
}

/// The steps in increasing size; a size given twice is refused.
fn ordered(flag: &str, mut steps: Vec<SizeThreshold>) -> anyhow::Result<Vec<SizeThreshold>> {
    steps.sort_by_key(|s| s.from_bytes);
    if let Some(pair) = steps
        .windows(2)
        .find(|w| w[0].from_bytes == w[1].from_bytes)
    {
        return Err(usage(format!(
            "{flag}: size {} has two thresholds ({} and {} GB/s); give each size once",
            pair[0].from_bytes, pair[0].min_busbw_gbps, pair[1].min_busbw_gbps
        )));
    }
    Ok(steps)
}

/// `thresholds` with the run's links' busbw ceiling (`environment.link_ceiling`)
/// filled in; an error naming `--expect-ceiling` when it needs one and
/// the run has none.
pub fn with_ceiling(
    mut thresholds: Thresholds,
    ceiling: Option<&schema::LinkCeiling>,
) -> anyhow::Result<Thresholds> {
    let Some(fraction) = thresholds.ceiling_fraction else {
        return Ok(thresholds);
    };
    match ceiling.and_then(|c| c.busbw_gbps) {
        Some(gbps) => {
            thresholds.ceiling_busbw_gbps = Some(gbps);
            Ok(thresholds)
        }
        None => Err(usage(format!(
            "--expect-ceiling {fraction}: this run has no link ceiling to take a fraction of (see the note above on why); give --min-busbw GBPS instead"
        ))),
    }
}

/// Refuses, once the sweep's sizes are known, thresholds that check
/// nothing: steps from a size above every call of the sweep would pass a
/// run no row of which was held to them. `call_sizes` are the sweep's call
/// sizes (a chunk's, when chunked).
pub fn check_sweep(thresholds: &Thresholds, call_sizes: &[u64]) -> anyhow::Result<()> {
    let any_checked = thresholds.ceiling_fraction.is_some()
        || call_sizes
            .iter()
            .any(|&bytes| thresholds.required_gbps(bytes).is_some());
    if let (false, Some(first), Some(&largest)) = (
        any_checked,
        thresholds.min_busbw.first(),
        call_sizes.iter().max(),
    ) {
        return Err(usage(format!(
            "--min-busbw: the thresholds start at {} but this sweep's largest size is {}: no row would be checked (accepted: a first threshold's size of at most {}; or raise -e/--max-bytes)",
            schema::units::format_bytes(first.from_bytes),
            schema::units::format_bytes(largest),
            schema::units::format_bytes(largest)
        )));
    }
    Ok(())
}

/// Rank 0's running account of the rows: those checked against a
/// threshold, those short of it, and the stragglers' tally.
#[derive(Debug, Default)]
pub struct Tracker {
    thresholds: Option<Thresholds>,
    checked: u32,
    short: Vec<ShortRow>,
    stragglers: StragglerTally,
}

impl Tracker {
    pub fn new(thresholds: Option<Thresholds>) -> Tracker {
        Tracker {
            thresholds,
            ..Tracker::default()
        }
    }

    /// Counts one row (its `slowest` already set).
    pub fn add(&mut self, row: &CaseResult) {
        if let Some(slow) = &row.slowest {
            self.stragglers.add(row.call_bytes(), slow);
        }
        if let Some(thresholds) = &self.thresholds {
            if thresholds.required_gbps(row.call_bytes()).is_some() {
                self.checked += 1;
            }
            self.short.extend(thresholds.check(row));
        }
    }

    /// The verdict (with thresholds) and the stragglers, once the run is over.
    pub fn finish(&mut self) -> (Option<Verdict>, Vec<schema::Straggler>) {
        let verdict = self
            .thresholds
            .as_ref()
            .map(|_| Verdict::of(self.checked, std::mem::take(&mut self.short)));
        (verdict, std::mem::take(&mut self.stragglers).finish())
    }
}

/// The environment variable of the test-only delay.
pub const TEST_DELAY_VARIABLE: &str = "COLLBENCH_TEST_DELAY";

/// TEST ONLY, never for measurements: `COLLBENCH_TEST_DELAY=R:US` makes
/// rank R, and `COLLBENCH_TEST_DELAY=HOST:US` every rank on host HOST
/// (a node of a Slurm job, whatever ranks it gets in a run over part of
/// the nodes), wait US µs after each timed collective returns, inside its
/// own timed interval, so that the tests can slow one rank or node on
/// purpose and see it found. Read from the environment, not a flag, so it
/// is in no `--help`; the MPI backend alone honours it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestDelay {
    pub who: Delayed,
    pub delay: Duration,
}

/// Whom the test-only delay slows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delayed {
    Rank(u32),
    Host(String),
}

impl TestDelay {
    /// The delay `COLLBENCH_TEST_DELAY` asks for, if set.
    pub fn from_env() -> anyhow::Result<Option<TestDelay>> {
        match std::env::var(TEST_DELAY_VARIABLE) {
            Ok(text) => TestDelay::parse(&text).map(Some),
            Err(std::env::VarError::NotPresent) => Ok(None),
            Err(std::env::VarError::NotUnicode(_)) => Err(usage(format!(
                "{TEST_DELAY_VARIABLE}: not UTF-8 (accepted: RANK:MICROSECONDS or HOST:MICROSECONDS, e.g. 3:2000)"
            ))),
        }
    }

    fn parse(text: &str) -> anyhow::Result<TestDelay> {
        let parsed = text.rsplit_once(':').and_then(|(who, us)| {
            let who = who.trim();
            Some(TestDelay {
                who: match who.parse() {
                    Ok(rank) => Delayed::Rank(rank),
                    Err(_) if !who.is_empty() => Delayed::Host(who.to_string()),
                    Err(_) => return None,
                },
                delay: Duration::from_micros(us.trim().parse().ok()?),
            })
        });
        parsed.ok_or_else(|| {
            usage(format!(
                "{TEST_DELAY_VARIABLE}={text:?}: expected RANK:MICROSECONDS or HOST:MICROSECONDS, e.g. 3:2000 (a test-only delay)"
            ))
        })
    }

    /// Whether it slows world rank `rank` on `host`.
    pub fn slows(&self, rank: u32, host: &str) -> bool {
        match &self.who {
            Delayed::Rank(r) => *r == rank,
            Delayed::Host(h) => h == host,
        }
    }
}

fn usage(message: impl std::fmt::Display) -> anyhow::Error {
    Failure::Usage.error(message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(min: Option<&str>, ceiling: Option<f64>) -> AcceptanceArgs {
        AcceptanceArgs {
            min_busbw: min.map(str::to_string),
            min_busbw_file: None,
            expect_ceiling: ceiling,
        }
    }

    #[test]
    fn one_value_or_steps_by_size() {
        let one = thresholds(&args(Some("12.5"), None)).unwrap().unwrap();
        assert_eq!(one.required_gbps(8), Some(12.5));
        let steps = thresholds(&args(Some("256M=90, 1M=20"), None))
            .unwrap()
            .unwrap();
        assert_eq!(steps.min_busbw[0].from_bytes, 1 << 20);
        assert_eq!(steps.required_gbps(1 << 19), None);
        assert_eq!(steps.required_gbps(300 << 20), Some(90.0));
        assert!(thresholds(&args(None, None)).unwrap().is_none());
    }

    #[test]
    fn bad_thresholds_are_one_line_naming_the_flag() {
        for (spec, expected) in [
            ("fast", "--min-busbw: \"fast\" is not a bus bandwidth"),
            ("1M=20,2Q=3", "--min-busbw: size \"2Q\""),
            ("1M=20,1M=30", "size 1048576 has two thresholds"),
            ("1M=-3", "\"-3\" is not a bus bandwidth"),
            ("1M=20,5", "entry \"5\" is not SIZE=GBPS"),
        ] {
            let err = thresholds(&args(Some(spec), None)).unwrap_err().to_string();
            assert!(err.contains(expected), "{spec}: {err}");
        }
        let err = thresholds(&args(None, Some(1.5))).unwrap_err().to_string();
        assert!(
            err.starts_with("--expect-ceiling 1.5: must be a fraction"),
            "{err}"
        );
    }

    #[test]
    fn a_thresholds_file_has_one_size_and_value_a_line() {
        let dir = std::env::temp_dir().join(format!("collbench-thresholds-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = |name: &str, text: &str| {
            let path = dir.join(name);
            std::fs::write(&path, text).unwrap();
            AcceptanceArgs {
                min_busbw: None,
                min_busbw_file: Some(path),
                expect_ceiling: None,
            }
        };
        let good = file(
            "good.txt",
            "# size GB/s\n\n256M 90 # large\n1M=20\n4K,1.5\n",
        );
        let t = thresholds(&good).unwrap().unwrap();
        let steps: Vec<(u64, f64)> = t
            .min_busbw
            .iter()
            .map(|s| (s.from_bytes, s.min_busbw_gbps))
            .collect();
        assert_eq!(steps, [(4096, 1.5), (1 << 20, 20.0), (256 << 20, 90.0)]);
        let err = thresholds(&file("bad.txt", "1M 20\n2M 30 40\n"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("bad.txt:2: \"2M 30 40\" is not a line of SIZE GBPS"),
            "{err}"
        );
        let long = format!("{}\n", "\0".repeat(100_000));
        let err = thresholds(&file("zeros.txt", &long))
            .unwrap_err()
            .to_string();
        assert!(err.len() < 300, "{} bytes: {}", err.len(), &err[..300]);
        assert!(
            err.contains("zeros.txt:1: \"\\0\\0") && err.contains("… (100000 bytes) is not a line"),
            "{err}"
        );
        let path = dir.join("big.txt");
        std::fs::write(&path, "1M 20\n".repeat(200_000)).unwrap();
        let big = AcceptanceArgs {
            min_busbw: None,
            min_busbw_file: Some(path),
            expect_ceiling: None,
        };
        let err = thresholds(&big).unwrap_err().to_string();
        assert!(err.ends_with("big.txt: more than 1048576 bytes (accepted: a text file of SIZE GBPS lines, e.g. 1M 20)"), "{err}");
        let path = dir.join("binary.txt");
        std::fs::write(&path, b"1M 20\n\xff\xfe").unwrap();
        let binary = AcceptanceArgs {
            min_busbw: None,
            min_busbw_file: Some(path),
            expect_ceiling: None,
        };
        let err = thresholds(&binary).unwrap_err().to_string();
        assert!(
            err.ends_with("binary.txt: not text (a byte that is not UTF-8 at offset 6; accepted: a text file of SIZE GBPS lines, e.g. 1M 20)"),
            "{err}"
        );
        let err = thresholds(&file("empty.txt", "# nothing\n"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("no thresholds in the file"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_ceiling_fraction_needs_a_ceiling() {
        let t = thresholds(&args(None, Some(0.8))).unwrap().unwrap();
        let err = with_ceiling(t.clone(), None).unwrap_err().to_string();
        assert!(err.contains("no link ceiling"), "{err}");
        let links = schema::LinkCeiling {
            busbw_gbps: Some(40.0),
            bound: Some(schema::Tier::IntraNode),
            collective: Some(schema::Collective::AllReduce),
            gpus_per_node: 8,
            nodes: 1,
            intra_node_gbps: Some(40.0),
            intra_node_basis: None,
            inter_node_gbps: None,
            inter_node_basis: None,
            node_nic_gbps: None,
        };
        let filled = with_ceiling(t, Some(&links)).unwrap();
        assert_eq!(filled.ceiling_busbw_gbps, Some(40.0));
        assert_eq!(filled.required_gbps(8), Some(32.0));
    }

    #[test]
    fn thresholds_above_every_size_of_the_sweep_are_refused() {
        let steps = thresholds(&args(Some("1G=5"), None)).unwrap().unwrap();
        let err = check_sweep(&steps, &[1024, 4096]).unwrap_err().to_string();
        assert_eq!(
            err,
            "--min-busbw: the thresholds start at 1 GiB but this sweep's largest size is 4 KiB: no row would be checked (accepted: a first threshold's size of at most 4 KiB; or raise -e/--max-bytes)"
        );
        assert!(check_sweep(&steps, &[1 << 30]).is_ok());
        let ceiling = thresholds(&args(None, Some(0.8))).unwrap().unwrap();
        assert!(check_sweep(&ceiling, &[1024]).is_ok());
        let both = thresholds(&args(Some("1G=5"), Some(0.8))).unwrap().unwrap();
        assert!(check_sweep(&both, &[1024]).is_ok());
    }

    #[test]
    fn the_test_delay_reads_rank_and_microseconds() {
        let d = TestDelay::parse("3:2000").unwrap();
        assert_eq!(
            (&d.who, d.delay),
            (&Delayed::Rank(3), Duration::from_micros(2000))
        );
        assert!(d.slows(3, "any") && !d.slows(2, "any"));
        let h = TestDelay::parse("node2:50").unwrap();
        assert!(h.slows(0, "node2") && !h.slows(0, "node1"));
        for bad in ["3", ":5", "3:x"] {
            let err = TestDelay::parse(bad).unwrap_err().to_string();
            assert!(
                err.contains("expected RANK:MICROSECONDS or HOST:MICROSECONDS"),
                "{err}"
            );
        }
    }
}
