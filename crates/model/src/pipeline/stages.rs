//! What each layer costs at the micro-batch size in use, from a profile
//! measured at one or more sizes (interpolated between them, scaled from
//! one with a warning; scaled to another sequence length by
//! [`crate::sequence`]), and the split of layers into stages: a given
//! `--split`, or the split balanced by time under a memory limit.
use std::ops::Range;
use std::path::{Path, PathBuf};

use crate::csv::read_table;
use crate::profile::{read_profile_csv_at, Profile};
use crate::sequence::SequenceTarget;
use crate::DdpError;

/// One layer at the micro-batch size in use.
#[derive(Debug, Clone, PartialEq)]
pub struct LayerCost {
    pub name: String,
    pub params: u64,
    /// Parameters × bytes per element (gradients are as large).
    pub param_bytes: u64,
    pub fwd_s: f64,
    pub bwd_s: f64,
    /// Saved for backward, per micro-batch.
    pub activation_bytes: u64,
    /// Its output: what crosses a stage boundary after it.
    pub output_bytes: u64,
}

/// The profile at every micro-batch size it was measured at.
#[derive(Debug, Clone)]
pub struct MeasuredProfile {
    pub path: PathBuf,
    /// (micro-batch size, the rows measured at it), sorted by size; one
    /// entry of size None when the file has no `microbatch` column.
    pub at: Vec<(Option<u64>, Profile)>,
}

impl MeasuredProfile {
    /// Reads every micro-batch size's rows of `path`; the sizes must name
    /// the same layers in the same order.
    pub fn read(path: &Path, dtype_bytes: u64) -> Result<MeasuredProfile, DdpError> {
        let table = read_table(path)?;
        let mut sizes: Vec<u64> = match table.column(&["microbatch"]) {
            None => Vec::new(),
            Some(col) => table
                .rows
                .iter()
                .filter_map(|r| r.get(col).parse::<u64>().ok())
                .collect(),
        };
        sizes.sort_unstable();
        sizes.dedup();
        // A row without a size among rows with one would be dropped unseen.
        if let (Some(col), false) = (table.column(&["microbatch"]), sizes.is_empty()) {
            if let Some(row) = table.rows.iter().find(|r| r.get(col).is_empty()) {
                return Err(table.error(
                    row,
                    "no microbatch value, while other rows give one: every row needs its size",
                ));
            }
        }
        let at = if sizes.is_empty() {
            vec![(None, read_profile_csv_at(path, dtype_bytes, None, "")?)]
        } else {
            sizes
                .iter()
                .map(|&b| {
                    Ok((
                        Some(b),
                        read_profile_csv_at(path, dtype_bytes, Some(b), "")?,
                    ))
                })
                .collect::<Result<Vec<_>, DdpError>>()?
        };
        let names = |p: &Profile| p.layers.iter().map(|l| l.name.clone()).collect::<Vec<_>>();
        let first = names(&at[0].1);
        if let Some((size, _)) = at.iter().find(|(_, p)| names(p) != first) {
            return Err(DdpError::file(
                path,
                format!(
                    "the rows at micro-batch size {} do not name the same layers in the same order as those at size {}",
                    size.unwrap_or(0),
                    at[0].0.unwrap_or(0)
                ),
            ));
        }
        Ok(MeasuredProfile {
            path: path.to_path_buf(),
            at,
        })
    }

    pub fn layer_count(&self) -> usize {
        self.at[0].1.layers.len()
    }

    /// Its rows at every size scaled from the sequence length they were
    /// measured at to `target`'s ([`crate::sequence`]): the warning to
    /// print (none when measured at the target: the rows untouched), or a
    /// one-line error naming the file.
    pub fn scale_to_sequence(&mut self, target: SequenceTarget) -> Result<Option<String>, String> {
        let file = self.path.display().to_string();
        let mut sizes: Vec<&mut Profile> = self.at.iter_mut().map(|(_, p)| p).collect();
        crate::sequence::scale_to(&mut sizes, target, &file)
    }

    /// The sizes measured (empty: the file does not say).
    pub fn sizes(&self) -> Vec<u64> {
        self.at.iter().filter_map(|(s, _)| *s).collect()
    }

    /// Every layer at micro-batch size `b`, and a warning where the numbers
    /// are scaled or extrapolated rather than measured or interpolated.
    pub fn costs_at(&self, b: u64) -> (Vec<LayerCost>, Option<String>) {
        let file = self.path.display();
        let sizes = self.sizes();
        // Weights of the measured sizes whose rows make up size b.
        let (weights, warning): (Vec<(usize, f64)>, Option<String>) = match sizes[..] {
            [] => (
                vec![(0, 1.0)],
                Some(format!(
                    "{file} has no microbatch column: its times are taken as measured at micro-batch size {b}"
                )),
            ),
            [only] => (
                vec![(0, b as f64 / only as f64)],
                (b != only).then(|| {
                    format!(
                        "{file} was measured at micro-batch size {only} only: times and bytes at size {b} are scaled by {b}/{only}, so no per-micro-batch fixed cost is seen (profile several sizes)"
                    )
                }),
            ),
            _ => {
                // The two measured sizes around b (or the nearest two).
                let upper = sizes.partition_point(|&s| s < b).clamp(1, sizes.len() - 1);
                let (lo, hi) = (sizes[upper - 1] as f64, sizes[upper] as f64);
                let x = (b as f64 - lo) / (hi - lo);
                let outside = b < sizes[0] || b > sizes[sizes.len() - 1];
                (
                    vec![(upper - 1, 1.0 - x), (upper, x)],
                    outside.then(|| {
                        format!(
                            "micro-batch size {b} lies outside the sizes {file} measured ({} .. {}): its times are extrapolated linearly",
                            sizes[0],
                            sizes[sizes.len() - 1]
                        )
                    }),
                )
            }
        };
        let layers = (0..self.layer_count())
            .map(|i| {
                let mix = |f: &dyn Fn(&crate::profile::Layer) -> f64| {
                    weights
                        .iter()
                        .map(|&(k, w)| w * f(&self.at[k].1.layers[i]))
                        .sum::<f64>()
                        .max(0.0)
                };
                let layer = &self.at[0].1.layers[i];
                LayerCost {
                    name: layer.name.clone(),
                    params: layer.params,
                    param_bytes: layer.grad_bytes,
                    fwd_s: mix(&|l| l.fwd_time_s.unwrap_or(0.0)),
                    bwd_s: mix(&|l| l.grad_time_s),
                    activation_bytes: mix(&|l| l.activation_bytes.unwrap_or(0) as f64).round()
                        as u64,
                    output_bytes: mix(&|l| l.output_bytes.unwrap_or(0) as f64).round() as u64,
                }
            })
            .collect();
        (layers, warning)
    }

    /// Whether every row of every size has `column` (by the reader's
    /// `Option`s).
    pub fn has(&self, column: fn(&crate::profile::Layer) -> bool) -> bool {
        self.at.iter().all(|(_, p)| p.layers.iter().all(column))
    }
}

/// `--split 6,2,2,2`: layers per part, in order, into ranges; `parts` is
/// the number of model chunks (stages × chunks per stage).
pub fn given_split(
    counts: &[usize],
    parts: usize,
    layers: usize,
) -> Result<Vec<Range<usize>>, String> {
    let text = counts
        .iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(",");
    if counts.len() != parts {
        return Err(format!(
            "--split {text}: {} parts, but the pipeline has {parts} (stages × chunks)",
            counts.len()
        ));
    }
    if counts.contains(&0) {
        return Err(format!(
            "--split {text}: every part holds at least one layer"
        ));
    }
    // Checked: counts near usize::MAX would overflow the sum.
    let total = counts.iter().try_fold(0usize, |sum, &n| sum.checked_add(n));
    match total {
        Some(total) if total == layers => {}
        Some(total) => {
            return Err(format!(
                "--split {text}: {total} layers, but the profile has {layers}"
            ))
        }
        None => {
            return Err(format!(
                "--split {text}: the parts add up to more layers than can be counted, but the profile has {layers}"
            ))
        }
    }
    let mut start = 0;
    Ok(counts
        .iter()
        .map(|&n| {
            start += n;
            start - n..start
        })
        .collect())
}

/// The split of `costs` into `parts` contiguous ranges whose largest
/// forward + backward time is smallest, each range passing `fits` (its
/// part index and layers); None when no split passes.
pub fn balanced_split(
    costs: &[LayerCost],
    parts: usize,
    fits: impl Fn(usize, Range<usize>) -> bool,
) -> Option<Vec<Range<usize>>> {
    let n = costs.len();
    if parts == 0 || parts > n {
        return None;
    }
    let mut prefix = vec![0.0; n + 1];
    for (i, c) in costs.iter().enumerate() {
        prefix[i + 1] = prefix[i] + c.fwd_s + c.bwd_s;
    }
    // best[k][j]: the smallest largest-part time of layers 0..j in k parts.
    let mut best = vec![vec![f64::INFINITY; n + 1]; parts + 1];
    let mut cut = vec![vec![0usize; n + 1]; parts + 1];
    best[0][0] = 0.0;
    for k in 1..=parts {
        for j in k..=n {
            for i in (k - 1)..j {
                if !best[k - 1][i].is_finite() || !fits(k - 1, i..j) {
                    continue;
                }
                let worst = best[k - 1][i].max(prefix[j] - prefix[i]);
                if worst < best[k][j] {
                    best[k][j] = worst;
                    cut[k][j] = i;
                }
            }
        }
    }
    if !best[parts][n].is_finite() {
        return None;
    }
    let mut ranges = Vec::with_capacity(parts);
    let mut j = n;
    for k in (1..=parts).rev() {
        let i = cut[k][j];
        ranges.push(i..j);
        j = i;
    }
    ranges.reverse();
    Some(ranges)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cost(t: f64) -> LayerCost {
        LayerCost {
            name: String::new(),
            params: 1,
            param_bytes: 4,
            fwd_s: t,
            bwd_s: 2.0 * t,
            activation_bytes: 10,
            output_bytes: 1,
        }
    }

    #[test]
    fn the_balanced_split_minimises_the_slowest_part() {
        let costs: Vec<LayerCost> = [4.0, 1.0, 1.0, 1.0, 1.0, 4.0].map(cost).to_vec();
        let split = balanced_split(&costs, 3, |_, _| true).unwrap();
        assert_eq!(split, vec![0..1, 1..5, 5..6]);
        // A limit of 3 layers per part forces another split.
        let split = balanced_split(&costs, 2, |_, r| r.len() <= 3).unwrap();
        assert_eq!(split, vec![0..3, 3..6]);
        assert_eq!(balanced_split(&costs, 2, |_, r| r.len() <= 2), None);
        assert_eq!(balanced_split(&costs, 7, |_, _| true), None);
    }

    #[test]
    fn a_given_split_is_checked_against_the_stages_and_layers() {
        assert_eq!(given_split(&[2, 1], 2, 3).unwrap(), vec![0..2, 2..3]);
        for (counts, parts, needle) in [
            (vec![2, 1], 3, "2 parts, but the pipeline has 3"),
            (vec![3, 0], 2, "at least one layer"),
            (vec![2, 2], 2, "4 layers, but the profile has 3"),
        ] {
            let err = given_split(&counts, parts, 3).unwrap_err();
            assert!(err.contains(needle), "{err}");
        }
    }
}
