//! The `--csv` rows of the training-step models: one per cap swept by
//! `ddp`, one per configuration of `fsdp` and `zero`, one per schedule ×
//! micro-batch count of `pipeline`.
//!
//! Columns carry the `--json` field names (memory fields without their
//! `memory.` prefix); what a row holds a list of (a configuration's
//! collectives, a run's stages) stays in `--json`, summed or maximised here
//! where the text table does so.
use analysis::csv_fields;
use analysis::render::{csv_columns, CsvCell, CsvColumn};
use model::ddp::CurvePoint;
use model::pipeline::{PipelineAnalysis, PipelineRun};
use model::shard::{Prediction, ShardAnalysis};

/// `ddp --csv`: a row per cap swept (the JSON's `curve`), every cap
/// apart where the text joins caps that form the same buckets.
pub fn ddp(curve: &[CurvePoint]) -> String {
    let columns = csv_fields!(CurvePoint, |p| p;
        cap_bytes, buckets, time_s, exposed_comm_s, largest_bucket_bytes,
        buckets_above_measured, buckets_below_measured, extrapolated, same_buckets_as);
    csv_columns(&columns, curve)
}

/// One configuration of `fsdp` or `zero` and how it ranks.
struct Config<'a> {
    p: &'a Prediction,
    is_fastest: bool,
    /// Null without `--memory-limit`.
    is_fastest_within_limit: Option<bool>,
}

fn shard_columns<'a>() -> Vec<CsvColumn<Config<'a>>> {
    let mut columns = Vec::new();
    columns.extend(csv_fields!(Config<'a>, |c| c.p;
        strategy, unit_layers, units, forward_prefetch, backward_prefetch,
        limit_all_gathers, comm_streams, step_ms, forward_ms, backward_ms,
        optimizer_ms, compute_ms, copy_ms, sync_wait_ms, exposed_comm_ms, overlap_slowdown_ms));
    // The text's `MiB sent`: every collective's bytes_per_rank, summed.
    columns.push(("bytes_per_rank", |c| {
        let bytes: f64 = c.p.collectives.iter().map(|u| u.bytes_per_rank).sum();
        bytes.csv_cell()
    }));
    columns.extend(csv_fields!(Config<'a>, |c| c.p.memory;
        params_bytes, grads_bytes, optimizer_bytes, activations_bytes,
        gathered_peak_bytes, model_states_bytes, grad_buckets_bytes,
        optimizer_temp_bytes, backward_transient_peak_bytes, peak_bytes,
        after_init_bytes, before_step_bytes, after_step_bytes));
    columns.extend(csv_fields!(Config<'a>, |c| c.p; fits_memory_limit));
    columns.extend(csv_fields!(Config<'a>, |c| c; is_fastest, is_fastest_within_limit));
    columns
}

/// `fsdp --csv` and `zero --csv`: a row per configuration.
pub fn shard(a: &ShardAnalysis) -> String {
    let rows: Vec<Config> = a
        .configs
        .iter()
        .enumerate()
        .map(|(i, p)| Config {
            p,
            // Without curves no configuration is timed, so none is fastest.
            is_fastest: a.timed && i == a.fastest,
            is_fastest_within_limit: a
                .memory_limit_bytes
                .map(|_| a.fastest_within_limit == Some(i)),
        })
        .collect();
    csv_columns(&shard_columns(), &rows)
}

/// One run of `pipeline` and whether it is the best.
struct Run<'a> {
    r: &'a PipelineRun,
    is_best: bool,
}

fn pipeline_columns<'a>() -> Vec<CsvColumn<Run<'a>>> {
    let mut columns = Vec::new();
    columns.extend(csv_fields!(Run<'a>, |run| run.r;
        schedule, stages, chunks, microbatches, microbatch_size, global_batch));
    // Layers per model chunk as the text shows them: `6-2-2-2`.
    columns.push(("split", |run| {
        let parts: Vec<String> = run.r.split.iter().map(usize::to_string).collect();
        parts.join("-")
    }));
    // throughput is in samples/s.
    columns.extend(csv_fields!(Run<'a>, |run| run.r;
        split_from, steps, total_ms, step_ms, throughput, bubble_fraction, ideal_bubble_fraction,
        sendrecv_calls, sendrecv_bytes));
    // What `--memory-limit` is held against: the largest stage's peak.
    columns.push(("max_stage_peak_bytes", |run| {
        run.r
            .per_stage
            .iter()
            .map(|s| s.peak_bytes)
            .max()
            .csv_cell()
    }));
    columns.extend(csv_fields!(Run<'a>, |run| run.r; fits_memory_limit));
    columns.extend(csv_fields!(Run<'a>, |run| run; is_best));
    columns
}

/// `pipeline --csv`: a row per schedule × micro-batch count.
pub fn pipeline(a: &PipelineAnalysis) -> String {
    let rows: Vec<Run> = a
        .runs
        .iter()
        .enumerate()
        .map(|(i, r)| Run {
            r,
            is_best: i == a.best_index,
        })
        .collect();
    csv_columns(&pipeline_columns(), &rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(cap_bytes: u64, time_s: f64, same_buckets_as: Option<u64>) -> CurvePoint {
        CurvePoint {
            cap_bytes,
            buckets: 3,
            time_s,
            exposed_comm_s: time_s / 2.0,
            largest_bucket_bytes: cap_bytes,
            buckets_above_measured: 0,
            buckets_below_measured: 1,
            extrapolated: true,
            same_buckets_as,
        }
    }

    #[test]
    fn ddp_csv_has_its_header_without_rows_and_never_inf_or_nan() {
        let header = "cap_bytes,buckets,time_s,exposed_comm_s,largest_bucket_bytes,\
            buckets_above_measured,buckets_below_measured,extrapolated,same_buckets_as";
        assert_eq!(ddp(&[]), format!("{header}\n"));
        let csv = ddp(&[
            point(1 << 20, 0.25, None),
            point(2 << 20, f64::INFINITY, Some(1 << 20)),
            point(4 << 20, f64::NAN, None),
        ]);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(
            lines,
            [
                header,
                "1048576,3,0.25,0.125,1048576,0,1,true,",
                "2097152,3,,,2097152,0,1,true,1048576",
                "4194304,3,,,4194304,0,1,true,",
            ]
        );
    }
}
