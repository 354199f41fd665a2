//! The layer profile the models run on, and the reader of our profile CSV
//! `name,params,grad_time_s[,dtype_bytes]` with the optional columns
//! `fwd_time_s`, `activation_bytes`, `output_bytes`, `microbatch`,
//! `bwd_transient_bytes`, `param_tensors`, `tp` and `tp_allreduces` (what
//! scripts/profile_layers.py writes; one format for DDP, the sharded
//! strategies, pipelines and 3-D plans). The course's two-file
//! format is read by [`crate::course`].
use std::ops::Range;
use std::path::Path;

use crate::csv::{parse_count, parse_seconds, read_table, Columns};
use crate::DdpError;

/// The longest wait `--sync-wait-s` takes, in seconds: far beyond any
/// drift between ranks that still train (a profile header's measured wait
/// past it is none).
pub const MAX_SYNC_WAIT_S: f64 = 10.0;

/// A group of parameters whose gradients become ready together (a layer, a
/// block, or a single parameter: the model does not care which), and the
/// backward compute time it takes. The optional columns are `None` where
/// the file does not give them.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Layer {
    pub name: String,
    pub params: u64,
    /// params × bytes per element: what DDP all-reduces for this layer.
    pub grad_bytes: u64,
    /// Backward compute time from the previous layer's gradients being ready
    /// (in backward order) to this layer's, in seconds.
    pub grad_time_s: f64,
    /// Forward compute time of the layer, in seconds.
    pub fwd_time_s: Option<f64>,
    /// Bytes the layer saves for backward, per micro-batch.
    pub activation_bytes: Option<u64>,
    /// Bytes of the layer's output (what would cross a stage boundary).
    pub output_bytes: Option<u64>,
    /// The micro-batch size the row was measured at.
    pub microbatch: Option<u64>,
    /// The most memory the layer's backward (its `grad_time_s` interval)
    /// holds above the higher of its levels at start and end: the loss's
    /// gradient, autograd's buffers (measured on a GPU only).
    pub bwd_transient_bytes: Option<u64>,
    /// How many parameter tensors the row's parameters are (what a
    /// framework issuing one collective per tensor issues for the row).
    pub param_tensors: Option<u64>,
    /// The tensor-parallel degree the row was measured at (its `params`
    /// are one rank's shard at that degree).
    pub tp: Option<u64>,
    /// All-reduces of the row's output its forward makes across the
    /// tensor-parallel group (2 for a Megatron transformer block, 1 for a
    /// vocabulary-parallel embedding, 0 otherwise); its backward as many.
    pub tp_allreduces: Option<u64>,
}

/// The transformer blocks among rows whose forwards make `tp_allreduces`
/// tensor-parallel all-reduces each: rows from the first to the last that
/// makes 2 (a Megatron block); every row when none does (a profile
/// without `tp_allreduces`).
pub fn blocks(tp_allreduces: &[u64]) -> Range<usize> {
    let first = tp_allreduces.iter().position(|&k| k == 2);
    let last = tp_allreduces.iter().rposition(|&k| k == 2);
    match (first, last) {
        (Some(a), Some(b)) => a..b + 1,
        _ => 0..tp_allreduces.len(),
    }
}

/// Layers in parameter registration (forward) order, and what reading them
/// left out or assumed.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    pub layers: Vec<Layer>,
    /// Rows ignored or completed by assumption, one sentence each.
    pub notes: Vec<String>,
    /// What its `#` header measured beside the rows (none for the course's
    /// files).
    pub header: HeaderMeasurements,
}

impl Profile {
    /// Bytes of all gradients (at most `u64::MAX`: a validated profile's
    /// total fits).
    pub fn total_grad_bytes(&self) -> u64 {
        self.layers
            .iter()
            .fold(0, |sum, l| sum.saturating_add(l.grad_bytes))
    }

    /// Total parameters (at most `u64::MAX`, as the bytes).
    pub fn total_params(&self) -> u64 {
        self.layers
            .iter()
            .fold(0, |sum, l| sum.saturating_add(l.params))
    }

    /// Backward compute time with no communication, in seconds.
    pub fn compute_s(&self) -> f64 {
        self.layers.iter().map(|l| l.grad_time_s).sum()
    }

    /// Fails when there is nothing to all-reduce, or when the parameters,
    /// their bytes or the compute times do not add up to a number (naming
    /// the row of `origin` where the sum overflows; `lines[i]` is layer i's).
    pub(crate) fn validate(self, origin: &Path, lines: &[usize]) -> Result<Profile, DdpError> {
        let (mut params, mut bytes, mut compute_s) = (0u64, 0u64, 0.0f64);
        for (i, layer) in self.layers.iter().enumerate() {
            let line = lines.get(i).copied().unwrap_or(0);
            let overflow = |what: &str| {
                DdpError::line(
                    origin,
                    line,
                    format!(
                        "{:?}: the {what} of the layers up to this one add up to more than 2^64",
                        layer.name
                    ),
                )
            };
            params = params
                .checked_add(layer.params)
                .ok_or_else(|| overflow("parameters"))?;
            bytes = bytes
                .checked_add(layer.grad_bytes)
                .ok_or_else(|| overflow("gradient bytes"))?;
            compute_s += layer.grad_time_s;
            if !compute_s.is_finite() {
                return Err(overflow("compute times"));
            }
        }
        if bytes == 0 {
            return Err(DdpError::file(
                origin,
                "every layer has zero parameters: nothing to all-reduce",
            ));
        }
        Ok(self)
    }
}

/// The columns of the profile CSV, in the order scripts/profile_layers.py
/// writes them.
pub(crate) const PROFILE_COLUMNS: Columns = Columns {
    required: &["name", "params", "grad_time_s"],
    optional: &[
        "dtype_bytes",
        "fwd_time_s",
        "activation_bytes",
        "output_bytes",
        "microbatch",
        "bwd_transient_bytes",
        "param_tensors",
        "tp",
        "tp_allreduces",
    ],
};

/// Gradient bytes of `params` elements of `dtype_bytes` each.
pub(crate) fn grad_bytes(params: u64, dtype_bytes: u64) -> Result<u64, String> {
    params
        .checked_mul(dtype_bytes)
        .ok_or_else(|| format!("{params} parameters of {dtype_bytes} bytes overflow"))
}

/// Reads our profile CSV. Rows without a `dtype_bytes` value use
/// `default_dtype_bytes`. A file holding rows at several micro-batch sizes
/// is refused: [`read_profile_csv_at`] picks one.
pub fn read_profile_csv(path: &Path, default_dtype_bytes: u64) -> Result<Profile, DdpError> {
    read_profile_csv_at(path, default_dtype_bytes, None, "")
}

/// As [`read_profile_csv`], keeping the rows measured at micro-batch size
/// `microbatch` (`flag` names the option that chose it in errors). Without
/// one, a file with rows at several sizes is an error listing them.
pub fn read_profile_csv_at(
    path: &Path,
    default_dtype_bytes: u64,
    microbatch: Option<u64>,
    flag: &str,
) -> Result<Profile, DdpError> {
    let table = read_table(path)?;
    table.check_header(&PROFILE_COLUMNS)?;
    let name_col = table.require(&["name"])?;
    let params_col = table.require(&["params"])?;
    let time_col = table.require(&["grad_time_s"])?;
    let dtype_col = table.column(&["dtype_bytes"]);
    let fwd_col = table.column(&["fwd_time_s"]);
    let activation_col = table.column(&["activation_bytes"]);
    let output_col = table.column(&["output_bytes"]);
    let microbatch_col = table.column(&["microbatch"]);
    let transient_col = table.column(&["bwd_transient_bytes"]);
    let tensors_col = table.column(&["param_tensors"]);
    let tp_col = table.column(&["tp"]);
    let tp_allreduces_col = table.column(&["tp_allreduces"]);
    table.require_rows()?;
    let mut layers = Vec::with_capacity(table.rows.len());
    let mut lines = Vec::with_capacity(table.rows.len());
    let mut sizes = std::collections::BTreeSet::new();
    let mut unsized_line: Option<usize> = None;
    for row in &table.rows {
        let name = row.get(name_col);
        if name.is_empty() {
            return Err(table.error(row, "empty layer name"));
        }
        let params = parse_count("params", row.get(params_col)).map_err(|m| table.error(row, m))?;
        let grad_time_s =
            parse_seconds("grad_time_s", row.get(time_col)).map_err(|m| table.error(row, m))?;
        let dtype_bytes = match optional(row, dtype_col) {
            None => default_dtype_bytes,
            Some(text) => match parse_count("dtype_bytes", text) {
                Ok(n) if (1..=16).contains(&n) => n,
                _ => {
                    return Err(table.error(
                        row,
                        format!("dtype_bytes {text:?} is not a whole number from 1 to 16"),
                    ))
                }
            },
        };
        let count = |column: &str, col: Option<usize>| {
            optional(row, col)
                .map(|text| parse_count(column, text).map_err(|m| table.error(row, m)))
                .transpose()
        };
        let fwd_time_s = optional(row, fwd_col)
            .map(|text| parse_seconds("fwd_time_s", text).map_err(|m| table.error(row, m)))
            .transpose()?;
        let activation_bytes = count("activation_bytes", activation_col)?;
        let output_bytes = count("output_bytes", output_col)?;
        let row_microbatch = count("microbatch", microbatch_col)?;
        let bwd_transient_bytes = count("bwd_transient_bytes", transient_col)?;
        let param_tensors = count("param_tensors", tensors_col)?;
        let tp = count("tp", tp_col)?;
        if tp == Some(0) {
            return Err(table.error(row, "tp \"0\" is not a tensor-parallel degree of 1 or more"));
        }
        let tp_allreduces = count("tp_allreduces", tp_allreduces_col)?;
        if let Some(t) = param_tensors.filter(|&t| (t == 0) != (params == 0) || t > params) {
            return Err(table.error(
                row,
                format!("param_tensors \"{t}\" does not fit {params} parameters: each tensor holds at least one, and parameters are in at least one tensor"),
            ));
        }
        if row_microbatch == Some(0) {
            return Err(table.error(
                row,
                "microbatch \"0\" is not a micro-batch size of 1 or more",
            ));
        }
        match row_microbatch {
            Some(size) => {
                sizes.insert(size);
            }
            None => unsized_line = unsized_line.or(Some(row.line)),
        }
        if microbatch.is_some() && row_microbatch != microbatch {
            continue;
        }
        let grad_bytes = grad_bytes(params, dtype_bytes).map_err(|m| table.error(row, m))?;
        lines.push(row.line);
        layers.push(Layer {
            name: name.to_string(),
            params,
            grad_bytes,
            grad_time_s,
            fwd_time_s,
            activation_bytes,
            output_bytes,
            microbatch: row_microbatch,
            bwd_transient_bytes,
            param_tensors,
            tp,
            tp_allreduces,
        });
    }
    // A row without a size among rows with one would be kept or dropped by
    // --microbatch silently: which size was it measured at?
    if let (Some(line), false) = (unsized_line, sizes.is_empty()) {
        return Err(DdpError::line(
            path,
            line,
            "no microbatch value, while other rows give one: give every row its micro-batch size, or none",
        ));
    }
    let list = || {
        sizes
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    match microbatch {
        Some(m) if layers.is_empty() => {
            return Err(DdpError::file(
                path,
                format!(
                    "{flag} {m}: no rows at this micro-batch size (sizes present: {})",
                    if sizes.is_empty() {
                        "none: no microbatch column".to_string()
                    } else {
                        list()
                    }
                ),
            ))
        }
        None if sizes.len() > 1 => {
            let choose = if flag.is_empty() {
                "keep one size's rows".to_string()
            } else {
                format!("choose one with {flag}")
            };
            return Err(DdpError::file(
                path,
                format!("rows at micro-batch sizes {}: {choose}", list()),
            ));
        }
        _ => {}
    }
    Profile {
        layers,
        notes: Vec::new(),
        header: header_measurements(&table.comments),
    }
    .validate(path, &lines)
}

/// What scripts/profile_layers.py measured beside the rows and wrote in the
/// profile's `#` header, for the flags that take it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HeaderMeasurements {
    /// `# gradient copy: … N GB/s …`: the framework's copies (`--copy-gbps`,
    /// ddp's `--grad-copy-gbps`).
    pub copy_gbps: Option<f64>,
    /// `# sync wait: S s per blocking call …` (`--sync-wait-s`).
    pub sync_wait_s: Option<f64>,
    /// `# device: cuda (NVIDIA H100 80GB HBM3); …`: where the rows were
    /// measured (the part before the first `;`).
    pub device: Option<String>,
    /// `# estimate: …`: the rows are estimated (`collbench-analyze profile
    /// --config`), not measured.
    pub estimate: bool,
    /// The sequence length the rows were measured (or estimated) at:
    /// `# input: batch B x sequence S, …` (scripts/profile_layers.py) or
    /// `# estimate: …, sequence S, …` or `# pipeline_train.py profile: …,
    /// seq S, …`; none where absent or not a length.
    pub sequence: Option<u64>,
    /// Where a header line names a sequence length that is not one from 1
    /// to 2^24 (`sequence 0`, `sequence many`), what it gives (for
    /// `--seq`'s error); none where a length was read or no line names one.
    pub unreadable_sequence: Option<String>,
    /// The model's hidden size: `# model: … hidden H, …`, the estimate's
    /// `hidden H` or pipeline_train.py's `width H`; none where absent or
    /// not a size.
    pub hidden: Option<u64>,
    /// As `unreadable_sequence`, for the hidden size (`hidden 0`).
    pub unreadable_hidden: Option<String>,
}

impl HeaderMeasurements {
    /// The warning every model prints beside numbers from an estimated
    /// profile (`file` names it); None for a measured one.
    pub fn estimate_warning(&self, file: &str) -> Option<String> {
        self.estimate.then(|| {
            format!("{file} is an estimate from a model's shape and a GPU's FLOPs (collbench-analyze profile --config), not a measurement: the times below are only as good as its --gpu-tflops and --efficiency")
        })
    }
}

/// The measurements in a profile's `#` header lines (`comments`, without
/// their `#`); none where a line is absent or holds no number its flag
/// accepts.
fn header_measurements(comments: &[String]) -> HeaderMeasurements {
    let mut found = HeaderMeasurements {
        device: crate::provenance::profile_device(comments),
        ..HeaderMeasurements::default()
    };
    for comment in comments {
        let line = comment.trim_start();
        if line.starts_with("estimate:") {
            found.estimate = true;
            length_in(
                &mut found.sequence,
                &mut found.unreadable_sequence,
                line,
                ", sequence ",
            );
            length_in(
                &mut found.hidden,
                &mut found.unreadable_hidden,
                line,
                "hidden ",
            );
        } else if line.starts_with("input:") {
            length_in(
                &mut found.sequence,
                &mut found.unreadable_sequence,
                line,
                "sequence ",
            );
        } else if line.starts_with("pipeline_train.py profile:") {
            // `8 layers, width 256, seq 64, torch …`: the width is the
            // transformer's hidden size.
            length_in(
                &mut found.sequence,
                &mut found.unreadable_sequence,
                line,
                " seq ",
            );
            length_in(
                &mut found.hidden,
                &mut found.unreadable_hidden,
                line,
                " width ",
            );
        } else if line.starts_with("model:") {
            length_in(
                &mut found.hidden,
                &mut found.unreadable_hidden,
                line,
                "hidden ",
            );
        } else if let Some(rest) = comment.strip_prefix("gradient copy:") {
            // `21288960 bytes in 0.0026464 s, 8.044 GB/s (every rank …`
            found.copy_gbps = rest
                .split_once(" GB/s")
                .and_then(|(before, _)| before.rsplit([' ', ',']).next())
                .and_then(|n| n.parse::<f64>().ok())
                // What --copy-gbps accepts; anything else is no measurement.
                .filter(|g| (1e-3..=1e6).contains(g));
        } else if let Some(rest) = comment.strip_prefix("sync wait:") {
            found.sync_wait_s = rest
                .split_once(" s per blocking call")
                .and_then(|(n, _)| n.trim().parse::<f64>().ok())
                // Negative (noise) is kept, to be said as none; past what
                // --sync-wait-s accepts is no measurement.
                .filter(|w| w.is_finite() && *w <= MAX_SYNC_WAIT_S);
        }
    }
    if found.sequence.is_some() {
        found.unreadable_sequence = None;
    }
    if found.hidden.is_some() {
        found.unreadable_hidden = None;
    }
    found
}

/// Reads the length (a sequence length or hidden size) after `key` in
/// the header line `line` into `value` (the first line naming one wins),
/// or what stands there into `unreadable` when it is not a length.
fn length_in(value: &mut Option<u64>, unreadable: &mut Option<String>, line: &str, key: &str) {
    match length_after(line, key) {
        Some(n) => *value = value.or(Some(n)),
        None => *unreadable = unreadable.take().or_else(|| text_after(line, key)),
    }
}

/// The text after the first occurrence of `key` in `text`, up to the next
/// `,`, `;` or `)` (trimmed); none where `key` does not occur.
fn text_after(text: &str, key: &str) -> Option<String> {
    let (_, rest) = text.split_once(key)?;
    let end = rest.find([',', ';', ')']).unwrap_or(rest.len());
    Some(rest[..end].trim().to_string())
}

/// The largest sequence length or hidden size a header may name (what
/// `--seq` and `--hidden` accept).
pub(crate) const MAX_LENGTH: u64 = 1 << 24;

/// The first whole number from 1 to [`MAX_LENGTH`] right after an occurrence of `key` in `text` (`sequence 128,`
/// gives 128); none where no occurrence is followed by one.
fn length_after(text: &str, key: &str) -> Option<u64> {
    text.match_indices(key).find_map(|(at, _)| {
        let rest = &text[at + key.len()..];
        let end = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        // `sequence 128,` or at the end; not `sequence 12abc`.
        let ends_cleanly = rest[end..]
            .chars()
            .next()
            .is_none_or(|c| ", ;)".contains(c));
        rest[..end]
            .parse::<u64>()
            .ok()
            .filter(|&n| (1..=MAX_LENGTH).contains(&n) && ends_cleanly)
    })
}

/// The field of `row` in column `col`, unless the column is absent or the
/// field empty.
fn optional(row: &crate::csv::Row, col: Option<usize>) -> Option<&str> {
    col.map(|c| row.get(c)).filter(|text| !text.is_empty())
}
