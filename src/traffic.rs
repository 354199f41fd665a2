//! The traffic matrix of an all-to-all-v (`alltoallv`): read from a file
//! (`--matrix`, cell [i][j] the bytes rank i sends to rank j) or generated
//! from an imbalance (`--imbalance`, 0 uniform to 1 distance-weighted),
//! then scaled to each swept size so that the busiest rank's larger side
//! (what it sends or what it receives) is that size, as nccl-tests'
//! alltoallv sizes its rows.
use std::path::{Path, PathBuf};

use crate::failure::Failure;

/// The largest cell a matrix file may hold: 1 TiB between two ranks.
pub const MAX_CELL_BYTES: u64 = 1 << 40;

/// The most ranks a matrix file may describe (its rows and columns): 16 M
/// cells, 128 MiB held by every rank.
pub const MAX_MATRIX_RANKS: usize = 1 << 12;

/// Where the split among peers comes from, as asked on the command line.
#[derive(Clone, PartialEq)]
pub enum TrafficRequest {
    /// `--matrix FILE`: its cells, row-major, `ranks` × `ranks` bytes.
    File {
        path: PathBuf,
        ranks: usize,
        cells: Vec<u64>,
    },
    /// `--imbalance X` (0 without either flag: every peer the same).
    Imbalance(f64),
}

/// A file's cells by a digest, not one by one: the plan's fingerprint,
/// which every rank compares, is made from its `Debug` text.
impl std::fmt::Debug for TrafficRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TrafficRequest::File { path, ranks, cells } => {
                let digest = cells.iter().fold(0xcbf2_9ce4_8422_2325u64, |hash, &cell| {
                    (hash ^ cell).wrapping_mul(0x0000_0100_0000_01b3)
                });
                f.debug_struct("File")
                    .field("path", path)
                    .field("ranks", ranks)
                    .field("cells_digest", &format_args!("{digest:016x}"))
                    .finish()
            }
            TrafficRequest::Imbalance(spread) => f.debug_tuple("Imbalance").field(spread).finish(),
        }
    }
}

/// The split for a known number of ranks: relative weights, row-major,
/// cell [i][j] what rank i sends rank j.
#[derive(Debug, Clone, PartialEq)]
pub struct Traffic {
    pub ranks: u32,
    weights: Vec<f64>,
    /// The largest row or column sum of `weights`.
    busiest: f64,
}

impl TrafficRequest {
    /// The split over `ranks` ranks; a file must have one row and column
    /// per rank (of each group with `in_groups`).
    pub fn for_ranks(&self, ranks: u32, in_groups: bool) -> anyhow::Result<Traffic> {
        let n = ranks as usize;
        let weights = match self {
            TrafficRequest::File {
                path,
                ranks: file_ranks,
                cells,
            } => {
                if *file_ranks != n {
                    return Err(usage(format!(
                        "--matrix {}: a {file_ranks}×{file_ranks} matrix, but the run has {n} ranks{}: give one row and one column per rank",
                        path.display(),
                        if in_groups { " in each group" } else { "" }
                    )));
                }
                cells.iter().map(|&c| c as f64).collect()
            }
            TrafficRequest::Imbalance(spread) => generated(n, *spread),
        };
        Ok(Traffic::from_weights(ranks, weights))
    }
}

/// The generated split: `spread` 0 sends every peer the same, 1 weighs
/// each peer by 1 / (1 + d), d its distance around the ring of ranks (the
/// rank itself, then its neighbours, get the most), and values between
/// blend the two. Every row sums to `n`, so each rank sends as much as in
/// the uniform split; only how it is spread among peers changes.
pub fn generated(n: usize, spread: f64) -> Vec<f64> {
    let distance = |i: usize, j: usize| {
        let d = i.abs_diff(j);
        d.min(n - d) as f64
    };
    let mut weights = Vec::with_capacity(n * n);
    for i in 0..n {
        let near: Vec<f64> = (0..n).map(|j| 1.0 / (1.0 + distance(i, j))).collect();
        let total: f64 = near.iter().sum();
        weights.extend(
            near.iter()
                .map(|w| (1.0 - spread) + spread * w * n as f64 / total),
        );
    }
    weights
}

impl Traffic {
    fn from_weights(ranks: u32, weights: Vec<f64>) -> Traffic {
        let busiest = busiest_side(ranks as usize, &weights);
        Traffic {
            ranks,
            weights,
            busiest,
        }
    }

    /// Elements each rank sends each peer, row-major, when the busiest
    /// rank's larger side is scaled to `target` elements (each cell rounded
    /// down to whole elements, so that side may come out a little short).
    pub fn counts(&self, target: u64) -> Vec<u64> {
        if self.busiest <= 0.0 {
            return vec![0; self.weights.len()];
        }
        let scale = target as f64 / self.busiest;
        self.weights
            .iter()
            .map(|w| (w * scale).floor() as u64)
            .collect()
    }
}

/// The largest row or column sum of an `n` × `n` row-major matrix.
pub fn busiest_side<T: Copy + Into<f64>>(n: usize, cells: &[T]) -> f64 {
    (0..n)
        .map(|i| {
            let sent: f64 = (0..n).map(|j| cells[i * n + j].into()).sum();
            let received: f64 = (0..n).map(|j| cells[j * n + i].into()).sum();
            sent.max(received)
        })
        .fold(0.0, f64::max)
}

/// [`busiest_side`] of whole counts, exactly.
pub fn busiest_count(n: usize, counts: &[u64]) -> u64 {
    (0..n)
        .map(|i| {
            let sent: u64 = (0..n).map(|j| counts[i * n + j]).sum();
            let received: u64 = (0..n).map(|j| counts[j * n + i]).sum();
            sent.max(received)
        })
        .max()
        .unwrap_or(0)
}

/// Reads a matrix file: one row per line, cells separated by spaces, tabs
/// or commas, each a whole number of bytes from 0 to [`MAX_CELL_BYTES`];
/// blank lines and lines starting with `#` are skipped. Every problem is
/// one line naming the file, and the line and cell where it is.
pub fn read_matrix(path: &Path) -> anyhow::Result<TrafficRequest> {
    let shown = path.display();
    let text = std::fs::read_to_string(path)
        .map_err(|e| usage(format!("--matrix {shown}: cannot read it: {e}")))?;
    let mut rows: Vec<(usize, Vec<u64>)> = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let line_no = number + 1;
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if rows.len() == MAX_MATRIX_RANKS {
            return Err(usage(format!(
                "--matrix {shown}: more than {MAX_MATRIX_RANKS} rows (one per rank)"
            )));
        }
        let cells = line
            .split(|c: char| c.is_whitespace() || c == ',')
            .filter(|cell| !cell.is_empty())
            .enumerate()
            .map(|(column, cell)| {
                let at = format!("line {line_no}, cell {}", column + 1);
                match cell.parse::<u64>() {
                    Ok(bytes) if bytes <= MAX_CELL_BYTES => Ok(bytes),
                    Ok(_) => Err(usage(format!(
                        "--matrix {shown}: {at}: {cell} bytes is more than the most one rank may send another ({MAX_CELL_BYTES}, 1 TiB)"
                    ))),
                    Err(_) => Err(usage(format!(
                        "--matrix {shown}: {at}: {cell:?} is not a whole number of bytes (cells are bytes from 0 to {MAX_CELL_BYTES})"
                    ))),
                }
            })
            .collect::<anyhow::Result<Vec<u64>>>()?;
        rows.push((line_no, cells));
    }
    let n = rows.len();
    if n == 0 {
        return Err(usage(format!(
            "--matrix {shown}: no rows (one line per rank, cell j the bytes it sends rank j)"
        )));
    }
    if let Some((line_no, cells)) = rows.iter().find(|(_, cells)| cells.len() != n) {
        return Err(usage(format!(
            "--matrix {shown}: not square: line {line_no} has {} cell{}, but there are {n} rows",
            cells.len(),
            if cells.len() == 1 { "" } else { "s" }
        )));
    }
    let cells: Vec<u64> = rows.into_iter().flat_map(|(_, cells)| cells).collect();
    if cells.iter().all(|&c| c == 0) {
        return Err(usage(format!(
            "--matrix {shown}: every cell is 0, so nothing would move"
        )));
    }
    Ok(TrafficRequest::File {
        path: path.to_path_buf(),
        ranks: n,
        cells,
    })
}

/// `--imbalance X`: a spread from 0 to 1.
pub fn imbalance(spread: f64) -> anyhow::Result<TrafficRequest> {
    if !(spread.is_finite() && (0.0..=1.0).contains(&spread)) {
        return Err(usage(format!(
            "--imbalance {spread}: accepted values are 0 (every peer the same) to 1 (weighted by ring distance), e.g. 0.5"
        )));
    }
    Ok(TrafficRequest::Imbalance(spread))
}

fn usage(message: String) -> anyhow::Error {
    Failure::Usage.error(message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(name: &str, text: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("collbench-traffic-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn a_zero_imbalance_is_uniform_and_one_favours_near_ranks() {
        let uniform = generated(4, 0.0);
        assert!(uniform.iter().all(|&w| w == 1.0));
        let near = generated(4, 1.0);
        // Rank 0: itself 1, neighbours 1/2, the opposite rank 1/3.
        let total = 1.0 + 0.5 + 1.0 / 3.0 + 0.5;
        assert!((near[0] - 4.0 / total).abs() < 1e-12);
        assert!((near[2] - 4.0 / 3.0 / total).abs() < 1e-12);
        assert!(near[0] > near[1] && near[1] > near[2]);
        // Every row sums to n whatever the spread.
        for spread in [0.0, 0.3, 1.0] {
            let w = generated(5, spread);
            for row in w.chunks(5) {
                assert!((row.iter().sum::<f64>() - 5.0).abs() < 1e-9);
            }
        }
    }

    #[test]
    fn counts_scale_the_busiest_side_to_the_size() {
        let request = TrafficRequest::File {
            path: PathBuf::from("m"),
            ranks: 2,
            cells: vec![10, 30, 20, 0],
        };
        let traffic = request.for_ranks(2, false).unwrap();
        // Row sums 40 and 20, column sums 30 and 30: the busiest side is 40.
        assert_eq!(traffic.counts(40), [10, 30, 20, 0]);
        assert_eq!(traffic.counts(80), [20, 60, 40, 0]);
        // Rounded down to whole elements.
        assert_eq!(traffic.counts(6), [1, 4, 3, 0]);
        assert_eq!(busiest_count(2, &traffic.counts(6)), 5);
        let wrong = request.for_ranks(3, true).unwrap_err().to_string();
        assert!(wrong.contains("a 2×2 matrix, but the run has 3 ranks in each group"));
    }

    #[test]
    fn matrix_files_are_read_or_refused_in_one_line() {
        let good = write("good.txt", "# bytes\n0, 100 200\n\n300\t0 5\n1 2 3\n");
        match read_matrix(&good).unwrap() {
            TrafficRequest::File { ranks, cells, .. } => {
                assert_eq!(ranks, 3);
                assert_eq!(cells, [0, 100, 200, 300, 0, 5, 1, 2, 3]);
            }
            other => panic!("{other:?}"),
        }
        let cases = [
            (
                "ragged.txt",
                "1 2\n3\n",
                "not square: line 2 has 1 cell, but there are 2 rows",
            ),
            (
                "wide.txt",
                "1 2 3\n4 5 6\n",
                "not square: line 1 has 3 cells, but there are 2 rows",
            ),
            (
                "negative.txt",
                "1 -2\n3 4\n",
                "line 1, cell 2: \"-2\" is not a whole number of bytes",
            ),
            (
                "garbage.txt",
                "1 2\nx 4\n",
                "line 2, cell 1: \"x\" is not a whole number of bytes",
            ),
            (
                "fraction.txt",
                "1.5\n",
                "\"1.5\" is not a whole number of bytes",
            ),
            (
                "huge.txt",
                "1 2\n3 99999999999999\n",
                "99999999999999 bytes is more than the most one rank may send another",
            ),
            ("empty.txt", "# nothing\n\n", "no rows"),
            ("zeros.txt", "0 0\n0 0\n", "every cell is 0"),
        ];
        for (name, text, needle) in cases {
            let message = read_matrix(&write(name, text)).unwrap_err().to_string();
            assert!(message.contains(needle), "{name}: {message}");
            assert!(
                message.starts_with("--matrix ") && !message.contains('\n'),
                "{message}"
            );
        }
        let missing = read_matrix(Path::new("no/such/matrix.txt"))
            .unwrap_err()
            .to_string();
        assert!(
            missing.contains("--matrix no/such/matrix.txt: cannot read it"),
            "{missing}"
        );
    }

    #[test]
    fn imbalance_is_a_spread_from_zero_to_one() {
        assert!(imbalance(0.5).is_ok());
        for bad in [-0.1, 1.5, f64::NAN] {
            let message = imbalance(bad).unwrap_err().to_string();
            assert!(message.contains("accepted values are 0"), "{message}");
        }
    }
}
