//! What a line of nccl-tests output is, when it is not a table row.
//!
//! What one line of nccl-tests output is, apart from table rows: launcher
//! prefixes to strip, NCCL's own log lines, nccl-tests' failure lines, and
//! the `# Rank` device lines.
use schema::{DeviceInfo, RankInfo};

/// `text`'s lines numbered from 1, as the line-by-line parsers take them.
pub(crate) fn numbered(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines().enumerate().map(|(i, line)| (i + 1, line))
}

/// The task label `srun --label` puts before a line (`3: `, ` 12: `, or `3:`
/// alone on an empty line): the task's digits and the rest after the colon.
pub(crate) fn srun_task(line: &str) -> Option<(&str, &str)> {
    let trimmed = line.trim_start();
    let digits = trimmed.bytes().take_while(u8::is_ascii_digit).count();
    let rest = &trimmed[digits..];
    (digits > 0 && (rest == ":" || rest.starts_with(": ")))
        .then(|| (&trimmed[..digits], &rest[1..]))
}

/// The tag `mpirun --tag-output` puts before a line (`[1,0]<stdout>:`,
/// `[1,3]<stderr>:`): what its brackets hold (the job and the rank) and
/// the rest after the tag.
pub(crate) fn mpirun_tag(line: &str) -> Option<(&str, &str)> {
    let trimmed = line.trim_start();
    if !trimmed.starts_with('[') {
        return None;
    }
    let end = trimmed.find(">:")?;
    let close = trimmed[..end].find("]<std")?;
    Some((&trimmed[1..close], &trimmed[end + 2..]))
}

/// Removes `srun --label` (`3: `) and `mpirun --tag-output` (`[1,0]<stdout>:`)
/// prefixes.
pub(crate) fn strip_launcher_prefix(line: &str) -> &str {
    match printer(line) {
        Some((_, rest)) => rest,
        None => line,
    }
}

/// Who printed a line, as its launcher labels it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Printer {
    /// An `srun --label` task, by its number (`3` of `3: `).
    Task(String),
    /// An `mpirun --tag-output` rank, by its tag's job and rank (`1,3` of
    /// `[1,3]<stdout>:`; its stdout and stderr are one printer).
    Rank(String),
}

/// The launcher label of `line` and the rest after it; `None` for a line
/// without one.
pub(crate) fn printer(line: &str) -> Option<(Printer, &str)> {
    if let Some((task, rest)) = srun_task(line) {
        return Some((Printer::Task(task.to_string()), rest));
    }
    mpirun_tag(line).map(|(tag, rest)| (Printer::Rank(tag.to_string()), rest))
}

impl Printer {
    /// The task's or rank's number.
    pub fn number(&self) -> &str {
        match self {
            Printer::Task(task) => task,
            Printer::Rank(tag) => tag.rsplit(',').next().unwrap_or(tag),
        }
    }

    /// `task`, `rank`.
    pub fn noun(&self) -> &'static str {
        match self {
            Printer::Task(_) => "task",
            Printer::Rank(_) => "rank",
        }
    }

    /// What the launcher puts before a line: `label`, `tag`.
    pub fn mark(&self) -> &'static str {
        match self {
            Printer::Task(_) => "label",
            Printer::Rank(_) => "tag",
        }
    }

    /// `srun`, `mpirun`.
    pub fn launcher(&self) -> &'static str {
        match self {
            Printer::Task(_) => "srun",
            Printer::Rank(_) => "mpirun",
        }
    }

    /// `task 3`, `rank 3`.
    pub fn short(&self) -> String {
        format!("{} {}", self.noun(), self.number())
    }

    /// `srun task 3`, `mpirun rank 3`.
    pub fn who(&self) -> String {
        format!("{} {}", self.launcher(), self.short())
    }

    /// The label as printed: `` `3: ` ``, `` `[1,3]<stdout>:` ``.
    pub fn label(&self) -> String {
        match self {
            Printer::Task(task) => format!("`{task}: `"),
            Printer::Rank(tag) => format!("`[{tag}]<stdout>:`"),
        }
    }

    /// A command that prints this printer's lines of `file`, labels
    /// removed.
    pub fn sed(&self, file: &str) -> String {
        match self {
            Printer::Task(task) => format!("sed -n 's/^ *{task}: //p' {file}"),
            Printer::Rank(tag) => format!("sed -n 's/^ *\\[{tag}\\]<std[a-z]*>://p' {file}"),
        }
    }
}

/// NCCL's own logging (`NCCL_DEBUG`), which interleaves with the table.
pub(crate) fn is_nccl_log(text: &str) -> bool {
    [
        "NCCL INFO",
        "NCCL WARN",
        "NCCL TRACE",
        "NCCL ABORT",
        "NCCL version",
    ]
    .iter()
    .any(|m| text.contains(m))
}

/// nccl-tests' own failure lines (`host: Test NCCL failure common.cu:…`).
pub(crate) fn is_test_failure(text: &str) -> bool {
    [
        "Test NCCL failure",
        "Test CUDA failure",
        "Test failure",
        "Test timeout",
    ]
    .iter()
    .any(|m| text.contains(m))
}

/// `Rank 0 Group 0 Pid 1946 on host device 0 [0000:0f:00] NVIDIA A100` (2.13.4+)
/// or `Rank 0 Pid 112424 on host device 0 [0x00] A100` (older).
pub(crate) fn parse_rank(tokens: &[&str]) -> Option<RankInfo> {
    let mut it = tokens.iter().copied().peekable();
    (it.next()? == "Rank").then_some(())?;
    let rank = it.next()?.parse().ok()?;
    if it.peek() == Some(&"Group") {
        it.next();
        it.next()?;
    }
    (it.next()? == "Pid").then_some(())?;
    let pid = it.next()?.parse().ok();
    (it.next()? == "on").then_some(())?;
    let host = it.next()?.to_string();
    (it.next()? == "device").then_some(())?;
    let ordinal = it.next()?.parse().ok()?;
    let bus = it
        .peek()
        .and_then(|t| t.strip_prefix('[')?.strip_suffix(']'))
        .map(str::to_string);
    if bus.is_some() {
        it.next();
    }
    let name = it.collect::<Vec<_>>().join(" ");
    Some(RankInfo {
        rank,
        local_rank: None,
        host,
        pid,
        device: Some(DeviceInfo {
            ordinal,
            name,
            pci_bus_id: bus,
            uuid: None,
            memory_bytes: None,
        }),
        nccl_library: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_launcher_prefixes() {
        assert_eq!(strip_launcher_prefix("0: # nThread 1"), " # nThread 1");
        assert_eq!(strip_launcher_prefix(" 12: x"), " x");
        assert_eq!(strip_launcher_prefix("[1,0]<stdout>:#  Rank"), "#  Rank");
        assert_eq!(strip_launcher_prefix("   8   2  float"), "   8   2  float");
    }

    #[test]
    fn tells_mpirun_rank_tags() {
        let (rank, rest) = printer("[1,3]<stderr>:# nThread 1").unwrap();
        assert_eq!(
            (rank.clone(), rest),
            (Printer::Rank("1,3".into()), "# nThread 1")
        );
        assert_eq!(rank.who(), "mpirun rank 3");
        assert_eq!(
            rank.sed("job.out"),
            r"sed -n 's/^ *\[1,3\]<std[a-z]*>://p' job.out"
        );
        assert_eq!(printer("[1,3]<stdout>:x").unwrap().0, rank);
        assert_ne!(printer("[1,0]<stdout>:x").unwrap().0, rank);
        assert_eq!(printer(" 12: x").unwrap().0.who(), "srun task 12");
        assert_eq!(mpirun_tag("[node-a01] hugepages: <std>: x"), None);
        assert_eq!(
            mpirun_tag("[1622510346.876958] [g0185:144167:0] UCX WARN"),
            None
        );
    }

    #[test]
    fn tells_srun_task_labels() {
        assert_eq!(srun_task("0: # nThread 1"), Some(("0", " # nThread 1")));
        assert_eq!(srun_task(" 12: x"), Some(("12", " x")));
        assert_eq!(srun_task("4:"), Some(("4", "")));
        assert_eq!(srun_task("12:34:56 started"), None);
        assert_eq!(srun_task("   8   2  float"), None);
        assert_eq!(srun_task("+ srun -l ./all_reduce_perf"), None);
    }

    #[test]
    fn reads_device_lines_of_both_generations() {
        let new = "Rank  0 Group  0 Pid   1946 on inst-gpu-master device  0 [0000:0f:00] NVIDIA A100-SXM4-40GB";
        let rank = parse_rank(&new.split_whitespace().collect::<Vec<_>>()).unwrap();
        assert_eq!(
            (rank.rank, rank.pid, rank.host.as_str()),
            (0, Some(1946), "inst-gpu-master")
        );
        let device = rank.device.unwrap();
        assert_eq!(device.name, "NVIDIA A100-SXM4-40GB");
        assert_eq!(device.pci_bus_id.as_deref(), Some("0000:0f:00"));
        let old = "Rank  3 Pid 112424 on localhost device  3 [0x1b] A100-SXM4-40GB";
        let rank = parse_rank(&old.split_whitespace().collect::<Vec<_>>()).unwrap();
        assert_eq!((rank.rank, rank.device.unwrap().ordinal), (3, 3));
    }
}
