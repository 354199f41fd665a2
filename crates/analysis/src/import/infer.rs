//! Which collective an nccl-tests table measured when its log has no
//! `# Collective test starting` line (before nccl-tests 2.16.7): a binary
//! named in the log, the shape of the rows, the file name, else all_reduce.
use std::path::Path;

use schema::Collective;

use super::collective_from_binary;

/// A token of `text` that names an nccl-tests binary (`all_reduce_perf`,
/// `./build/all_gather_perf_mpi`), with its collective.
pub(crate) fn binary_on_line(text: &str) -> Option<(String, Collective)> {
    text.split(|c: char| c.is_whitespace() || c == '"' || c == '\'' || c == '=')
        .filter(|token| {
            let base = token.rsplit(['/', '\\']).next().unwrap_or(token);
            base.ends_with("_perf") || base.ends_with("_perf_mpi")
        })
        .find_map(|token| {
            collective_from_binary(token)
                .ok()
                .map(|c| (token.to_string(), c))
        })
}

/// Spellings of each collective that file names use, longest first so that
/// `allreduce` is not read as `reduce`.
const FILE_NAMES: &[(&str, Collective)] = &[
    ("reducescatter", Collective::ReduceScatter),
    ("hypercube", Collective::Hypercube),
    ("allreduce", Collective::AllReduce),
    ("allgather", Collective::AllGather),
    ("alltoallv", Collective::AllToAllV),
    ("alltoall", Collective::AllToAll),
    ("broadcast", Collective::Broadcast),
    ("sendrecv", Collective::SendRecv),
    ("scatter", Collective::Scatter),
    ("gather", Collective::Gather),
    ("reduce", Collective::Reduce),
    ("bcast", Collective::Broadcast),
];

/// The one collective a file name spells in whole words (`all_reduce.csv`,
/// `results-AllGather-8.csv`, `reduce_scatter`), words split at any
/// character that is not a letter or digit and joined up to three at a
/// time (`all_to_all`); `None` when it names none or several. Stricter
/// than [`from_file_name`]: `reduced` or `gathered` name nothing, so a
/// course CSV is taken at its file name's word only where it means it.
pub(crate) fn from_file_name_words(path: &Path) -> Option<Collective> {
    let stem = path.file_stem()?.to_string_lossy().to_ascii_lowercase();
    let words: Vec<&str> = stem
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let named = |text: &str| FILE_NAMES.iter().find(|(n, _)| *n == text).map(|(_, c)| *c);
    let mut found: Vec<Collective> = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let hit = (1..=3)
            .rev()
            .filter(|k| i + k <= words.len())
            .find_map(|k| named(&words[i..i + k].concat()).map(|c| (k, c)));
        match hit {
            Some((k, collective)) => {
                if !found.contains(&collective) {
                    found.push(collective);
                }
                i += k;
            }
            None => i += 1,
        }
    }
    match found.as_slice() {
        [one] => Some(*one),
        _ => None,
    }
}

/// The one collective a file name spells (`all_reduce_perf.log`,
/// `AllReduce-8gpu.txt`); `None` when it names none or several.
pub(crate) fn from_file_name(path: &Path) -> Option<Collective> {
    let stem = path.file_stem()?.to_string_lossy().to_ascii_lowercase();
    let squeezed: String = stem
        .chars()
        .filter(|c| !matches!(c, '_' | '-' | ' ' | '.'))
        .collect();
    let mut taken = vec![false; squeezed.len()];
    let mut found: Vec<Collective> = Vec::new();
    for (name, collective) in FILE_NAMES {
        for (at, _) in squeezed.match_indices(name) {
            let span = at..at + name.len();
            if taken[span.clone()].iter().any(|t| *t) {
                continue;
            }
            taken[span].iter_mut().for_each(|t| *t = true);
            if !found.contains(collective) {
                found.push(*collective);
            }
        }
    }
    match found.as_slice() {
        [one] => Some(*one),
        _ => None,
    }
}

/// What a table's rows say about their collective.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Shape {
    /// `Some(reduces)` when the table has a `redop` column: whether its
    /// cell names an operator. Tables before 2.13 print the column only
    /// for collectives that reduce, so its absence says they do not.
    pub op: Option<bool>,
    /// As `op`, for the `root` column.
    pub root: Option<bool>,
    /// busbw / algbw of the row with the largest algbw (from 1 GB/s, where
    /// two printed decimals tell it), and the world size, when known.
    pub bus_ratio: Option<(f64, u32)>,
}

impl Shape {
    /// Whether `collective` could have printed these rows.
    fn fits(&self, collective: Collective) -> bool {
        let op = self.op.unwrap_or(false) == collective.reduces();
        let root = self.root.unwrap_or(false) == collective.rooted();
        let factor = self.bus_ratio.is_none_or(|(ratio, world)| {
            match collective.bus_factor(world) {
                // One rank: busbw is 0 for the collectives that move data.
                0.0 => ratio.abs() < 0.01,
                f => (ratio / f - 1.0).abs() <= 0.03,
            }
        });
        op && root && factor
    }

    /// The collectives these rows fit, in schema order. All-to-all-v is
    /// never one: nccl-tests added it (2.19) after the `# Collective test
    /// starting` line (2.16.7), so a log without that line predates it.
    pub fn candidates(&self) -> Vec<Collective> {
        Collective::ALL
            .iter()
            .copied()
            .filter(|c| *c != Collective::AllToAllV && self.fits(*c))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_name_a_collective_only_in_whole_words() {
        let of = |name: &str| from_file_name_words(Path::new(name));
        assert_eq!(of("all_reduce.csv"), Some(Collective::AllReduce));
        assert_eq!(of("results-AllGather-8.csv"), Some(Collective::AllGather));
        assert_eq!(of("reduce_scatter.csv"), Some(Collective::ReduceScatter));
        assert_eq!(of("all_to_all.csv"), Some(Collective::AllToAll));
        assert_eq!(
            of("gathered-allreduce-runs.csv"),
            Some(Collective::AllReduce)
        );
        // A word that merely holds one, or two collectives, name none.
        assert_eq!(of("comm-reduced-precision.csv"), None);
        assert_eq!(of("broadcasting.csv"), None);
        assert_eq!(of("allreduce_vs_allgather.csv"), None);
        assert_eq!(of("course.csv"), None);
    }

    #[test]
    fn binaries_named_on_command_lines() {
        let line = "+ srun --mpi=pmix ./build/all_gather_perf_mpi -b 8 -e 1G -f 2 -g 1";
        assert_eq!(
            binary_on_line(line),
            Some((
                "./build/all_gather_perf_mpi".to_string(),
                Collective::AllGather
            ))
        );
        assert_eq!(
            binary_on_line("cmd=\"/opt/nccl-tests/build/sendrecv_perf -g 8\""),
            Some((
                "/opt/nccl-tests/build/sendrecv_perf".to_string(),
                Collective::SendRecv
            ))
        );
        assert_eq!(binary_on_line("running the perf tests now"), None);
        assert_eq!(
            binary_on_line("hypercube_perf -b 8"),
            Some(("hypercube_perf".to_string(), Collective::Hypercube))
        );
        assert_eq!(binary_on_line("bisection_perf -b 8"), None);
    }

    #[test]
    fn collectives_spelled_in_file_names() {
        let of = |name: &str| from_file_name(Path::new(name));
        assert_eq!(of("all_reduce_perf.log"), Some(Collective::AllReduce));
        assert_eq!(of("logs/AllReduce-8xH100.txt"), Some(Collective::AllReduce));
        assert_eq!(of("reduce_scatter.out"), Some(Collective::ReduceScatter));
        assert_eq!(of("nccl-bcast-2n.log"), Some(Collective::Broadcast));
        assert_eq!(of("reduce.log"), Some(Collective::Reduce));
        assert_eq!(of("gather-16.log"), Some(Collective::Gather));
        assert_eq!(of("slurm-1234.out"), None);
        assert_eq!(of("allreduce_vs_allgather.log"), None);
    }

    #[test]
    fn rows_tell_the_collective_when_their_columns_and_factor_do() {
        // sum, root -1, busbw/algbw 1.75 on 8 ranks: only all_reduce.
        let shape = Shape {
            op: Some(true),
            root: Some(false),
            bus_ratio: Some((1.75, 8)),
        };
        assert_eq!(shape.candidates(), [Collective::AllReduce]);
        // Without the ratio, reduce_scatter fits too.
        let shape = Shape {
            bus_ratio: None,
            ..shape
        };
        assert_eq!(
            shape.candidates(),
            [Collective::AllReduce, Collective::ReduceScatter]
        );
        // none, root 0, factor 1: broadcast.
        let shape = Shape {
            op: Some(false),
            root: Some(true),
            bus_ratio: Some((1.0, 4)),
        };
        assert_eq!(shape.candidates(), [Collective::Broadcast]);
        // none, -1, (n-1)/n: all_gather or alltoall.
        let shape = Shape {
            op: Some(false),
            root: Some(false),
            bus_ratio: Some((0.75, 4)),
        };
        assert_eq!(
            shape.candidates(),
            [Collective::AllGather, Collective::AllToAll]
        );
    }
}
