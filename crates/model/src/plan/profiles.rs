//! The layer profiles of a plan, one per measured tensor-parallel degree
//! (rows hold one rank's shard at that degree), and each row's costs at a
//! configuration's degree and micro-batch size: measured, interpolated
//! between micro-batch sizes as `pipeline` does, or scaled by FLOPs from
//! the nearest measured degree with a warning; with `--seq`, each file
//! first scaled to that sequence length by FLOPs ([`crate::sequence`]).
use std::path::PathBuf;

use anyhow::bail;

use crate::pipeline::stages::{LayerCost, MeasuredProfile};
use crate::sequence::SequenceTarget;

/// One degree's profile.
#[derive(Debug, Clone)]
pub struct AtDegree {
    pub tp: u64,
    pub profile: MeasuredProfile,
    /// Per row, the all-reduces of its output each forward (and backward)
    /// makes across the tensor-parallel group.
    pub tp_allreduces: Vec<u64>,
}

/// Every degree measured, sorted by degree; the same rows in each.
#[derive(Debug, Clone)]
pub struct DegreeProfiles {
    pub degrees: Vec<AtDegree>,
    /// One per file scaled to another sequence length (or whose length is
    /// unknown), in the order given.
    pub warnings: Vec<String>,
    /// Bytes per element of rows without `dtype_bytes` (`--dtype-bytes`).
    pub dtype_bytes: u64,
}

/// A row's costs at one configuration, and what was assumed to get them.
pub struct Costs {
    pub layers: Vec<LayerCost>,
    pub tp_allreduces: Vec<u64>,
    /// Per row, bytes per element as read: its `dtype_bytes`, else
    /// `--dtype-bytes` (Korthikanti's activations take it for the blocks').
    pub element_bytes: Vec<u64>,
    pub warnings: Vec<String>,
}

impl DegreeProfiles {
    /// Reads each `--profile` file; a file's rows are at one degree (its
    /// `tp` column, else 1), and no two files at the same degree. With a
    /// `sequence` (`--seq`), each file's rows are scaled from the length
    /// its header names to that one ([`crate::sequence`]).
    pub fn read(
        paths: &[PathBuf],
        dtype_bytes: u64,
        sequence: Option<SequenceTarget>,
    ) -> anyhow::Result<DegreeProfiles> {
        if paths.is_empty() {
            bail!("--profile FILE is needed: a layer profile (scripts/profile_layers.py writes one; `collbench-analyze profile --config` estimates one)");
        }
        let mut degrees: Vec<AtDegree> = Vec::new();
        let mut warnings = Vec::new();
        for path in paths {
            let mut profile = MeasuredProfile::read(path, dtype_bytes)?;
            if let Some(target) = sequence {
                warnings.extend(
                    profile
                        .scale_to_sequence(target)
                        .map_err(anyhow::Error::msg)?,
                );
            }
            let file = path.display();
            let rows = &profile.at[0].1.layers;
            let mut tps: Vec<u64> = rows.iter().map(|l| l.tp.unwrap_or(1)).collect();
            tps.sort_unstable();
            tps.dedup();
            let tp = match tps[..] {
                [tp] => tp,
                _ => bail!(
                    "--profile {file}: rows at tensor-parallel degrees {tps:?}; give one file per degree"
                ),
            };
            if let Some(other) = degrees.iter().find(|d| d.tp == tp) {
                bail!(
                    "--profile {file}: a second profile at tp {tp} (the first is {}); give one file per degree",
                    other.profile.path.display()
                );
            }
            let tp_allreduces = rows.iter().map(|l| l.tp_allreduces.unwrap_or(0)).collect();
            degrees.push(AtDegree {
                tp,
                profile,
                tp_allreduces,
            });
        }
        degrees.sort_by_key(|d| d.tp);
        let names = |d: &AtDegree| -> Vec<String> {
            d.profile.at[0]
                .1
                .layers
                .iter()
                .map(|l| l.name.clone())
                .collect()
        };
        let first = names(&degrees[0]);
        for d in &degrees[1..] {
            if names(d) != first || d.tp_allreduces != degrees[0].tp_allreduces {
                bail!(
                    "--profile {}: its rows (names or tp_allreduces) differ from those of {}: every degree's profile lists the same layers in the same order",
                    d.profile.path.display(),
                    degrees[0].profile.path.display()
                );
            }
        }
        Ok(DegreeProfiles {
            degrees,
            warnings,
            dtype_bytes,
        })
    }

    pub fn layer_count(&self) -> usize {
        self.degrees[0].tp_allreduces.len()
    }

    /// Every row's tp_allreduces (the same at every degree).
    pub fn tp_allreduces(&self) -> &[u64] {
        &self.degrees[0].tp_allreduces
    }

    /// Per row of degree `d`, bytes per element as read: a row's gradient
    /// bytes are its parameters × its `dtype_bytes` (else `--dtype-bytes`).
    fn element_bytes(&self, d: &AtDegree) -> Vec<u64> {
        d.profile.at[0]
            .1
            .layers
            .iter()
            .map(|l| match l.grad_bytes.checked_div(l.params) {
                Some(e) if e > 0 => e,
                _ => self.dtype_bytes,
            })
            .collect()
    }

    /// The bytes per element of the transformer blocks' rows (those
    /// between the first and last that make 2 tensor-parallel all-reduces,
    /// else every row), each once, in increasing order.
    pub fn block_element_bytes(&self) -> Vec<u64> {
        let rows = crate::profile::blocks(self.tp_allreduces());
        let mut sizes: Vec<u64> = self
            .degrees
            .iter()
            .flat_map(|d| self.element_bytes(d)[rows.clone()].to_vec())
            .collect();
        sizes.sort_unstable();
        sizes.dedup();
        sizes
    }

    /// Micro-batch sizes measured (those of the first degree).
    pub fn microbatch_sizes(&self) -> Vec<u64> {
        self.degrees[0].profile.sizes()
    }

    /// The degrees measured.
    pub fn tps(&self) -> Vec<u64> {
        self.degrees.iter().map(|d| d.tp).collect()
    }

    /// Each row at degree `tp` and micro-batch size `b`.
    pub fn costs(&self, tp: u64, b: u64) -> Costs {
        let mut warnings = Vec::new();
        let (exact, nearest) = match self.degrees.iter().find(|d| d.tp == tp) {
            Some(d) => (true, d),
            None => {
                // The nearest degree in ratio (a tie goes to the larger).
                let distance = |d: &&AtDegree| ((d.tp as f64) / (tp as f64)).ln().abs();
                let nearest = self
                    .degrees
                    .iter()
                    .min_by(|a, b| distance(a).total_cmp(&distance(b)).then(b.tp.cmp(&a.tp)))
                    .expect("at least one profile");
                (false, nearest)
            }
        };
        let (mut layers, warning) = nearest.profile.costs_at(b);
        warnings.extend(warning);
        if !exact {
            let from = nearest.tp;
            let ratio = from as f64 / tp as f64;
            for l in &mut layers {
                l.fwd_s *= ratio;
                l.bwd_s *= ratio;
                l.params = (l.params as f64 * ratio).round() as u64;
                l.param_bytes = (l.param_bytes as f64 * ratio).round() as u64;
            }
            warnings.push(format!(
                "tp {tp}: no profile at this degree; {} (tp {from}) scaled by FLOPs ({from}/{tp} of its times and parameters, activations as measured): GEMM efficiency at the smaller shapes is not modelled, and small models have run ~10x slower at tp 8 than at dp 8 on the same GPUs: measure the rank-local shard at tp {tp}",
                nearest.profile.path.display()
            ));
        }
        Costs {
            layers,
            tp_allreduces: nearest.tp_allreduces.clone(),
            element_bytes: self.element_bytes(nearest),
            warnings,
        }
    }
}
