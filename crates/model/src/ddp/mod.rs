//! The DDP bucket-size model behind `collbench-analyze ddp`: from a layer
//! profile (parameters and gradient compute time per layer) and measured
//! all-reduce times, predict PyTorch DDP's backward time for each bucket
//! cap, the best cap b*, and how well that matches measured DDP runs.
//!
//! Guide: [`DdpOptions`] say what to analyse (the flags of
//! `collbench-analyze ddp`, which owns the command line); [`run_to`] does
//! everything and writes the output; [`analyze`] returns the result as an
//! [`Analysis`] instead, and [`analyze_with_timeline`] adds one backward
//! pass's timeline for a picture. The pieces are public for tests and
//! reuse: the backward-pass schedule on
//! the engine ([`timeline`]), the sweep ([`sweep`]), its step function
//! ([`steps`]) and the comparison with measurements ([`measured`]).
mod extrapolation;
pub mod measured;
mod options;
mod output;
mod pass_view;
mod plot;
pub mod steps;
pub mod sweep;
pub mod timeline;

use std::io::Write;

use anyhow::Context;
use serde::Serialize;

pub use measured::Comparison;
pub use options::DdpOptions;
pub use output::render_text;
pub use plot::render_svg;
pub use sweep::{Best, CurvePoint, NearBest};

use crate::caps;
use crate::comm::{self, SizeRange};
use crate::options::FirstBucket;
use crate::profile::{read_profile_csv_at, Profile};
use crate::view::TimelineView;
use crate::DdpError;
use crate::{course, fitted, matching};
use options::{Plan, ProfileSource, TimelineAt};
use pass_view::Chosen;

/// Everything `ddp` computes; `--json` prints it as is.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Analysis {
    /// The profile file(s).
    pub profile: String,
    /// The `--comm` file.
    pub comm: String,
    pub world_size: u32,
    /// `interp` or `alpha-beta`.
    pub comm_model: String,
    /// `mean`, `median` or `min`: which statistic of the all-reduce times.
    pub comm_stat: String,
    /// `out` or `in`: which all-reduce placement's times were used.
    pub comm_placement: String,
    /// Distinct all-reduce sizes measured.
    pub comm_sizes: usize,
    /// The smallest and largest of them: buckets outside are extrapolated.
    pub comm_measured: SizeRange,
    pub comm_description: Option<String>,
    /// The first bucket's cap; null when it is the same as the cap.
    pub first_bucket_bytes: Option<u64>,
    pub compute_slowdown: f64,
    /// All-reduces run this many times slower while compute runs.
    pub comm_slowdown: f64,
    /// Speed of DDP's passes over the gradients (GB/s); null: not modelled.
    pub grad_copy_gbps: Option<f64>,
    /// Gradients are bucket views: no copy back after the all-reduces.
    pub grad_as_bucket_view: bool,
    /// Backward compute time without communication (sum of the layers).
    pub compute_s: f64,
    pub total_grad_bytes: u64,
    pub total_params: u64,
    /// Number of layers in the profile.
    pub layers: usize,
    /// The micro-batch size the profile's rows were measured at (null:
    /// the profile has no `microbatch` column).
    pub profile_microbatch: Option<u64>,
    pub curve: Vec<CurvePoint>,
    pub best: Best,
    /// b* as the value to pass as DDP's `bucket_cap_mb` (MiB; PyTorch
    /// truncates it to exactly `best.cap_bytes` bytes).
    pub best_bucket_cap_mb: String,
    /// Every cap from this one to `best_same_buckets_max_bytes` forms b*'s
    /// buckets (so predicts its time)...
    pub best_same_buckets_min_bytes: u64,
    /// ...up to this one.
    pub best_same_buckets_max_bytes: u64,
    /// The prediction as a step function over the swept range: each step a
    /// range of caps forming the same buckets.
    pub steps: Vec<steps::Step>,
    /// What DDP does when `bucket_cap_mb` is not given: 25 MiB caps and a
    /// 1 MiB first bucket.
    pub pytorch_default: CurvePoint,
    pub near_best: NearBest,
    /// Present with `--measured`.
    pub measured: Option<Comparison>,
    /// Where the prediction leaves the data (extrapolated caps), one
    /// sentence each.
    pub warnings: Vec<String>,
    /// Rows ignored, values merged, assumptions made.
    pub notes: Vec<String>,
}

/// A whole `ddp` run for a library caller: reads the profile (and
/// `--measured`), builds the communication model from `comm_reports` (the
/// caller has read `options.comm` into reports: our JSON, imported
/// nccl-tests output or course CSV), sweeps the caps, writes the text table
/// or `--json` to `out` and writes `--plot`. (`collbench-analyze ddp` calls
/// [`analyze_with_timeline`] and prints itself, for `--csv` and
/// `--timeline`.)
pub fn run_to(
    options: &DdpOptions,
    comm_reports: Vec<schema::Report>,
    out: &mut dyn Write,
) -> anyhow::Result<()> {
    let plan = Plan::from_options(options)?;
    let (analysis, _) = analyze_plan(&plan, &comm_reports)?;
    if let Some(path) = &plan.plot {
        let svg = render_svg(&analysis)?;
        // The message already holds the I/O error; keep it out of the chain
        // so `{:#}` does not print it twice.
        schema::io::write_output(path, svg.as_bytes(), plan.force)
            .map_err(|e| anyhow::anyhow!("--plot {e}"))?;
    }
    let text = if plan.json {
        let mut json = serde_json::to_string_pretty(&analysis)?;
        json.push('\n');
        json
    } else {
        render_text(&analysis)
    };
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .context("writing the ddp output")?;
    Ok(())
}

/// Reads the inputs, builds the model and computes the sweep (and the
/// comparison with `--measured`), without printing anything.
pub fn analyze(options: &DdpOptions, comm_reports: &[schema::Report]) -> anyhow::Result<Analysis> {
    Ok(analyze_plan(&Plan::from_options(options)?, comm_reports)?.0)
}

/// Checks the options alone (flags, not files), so that a bad command line
/// is refused before any input is read.
pub fn check(options: &DdpOptions) -> anyhow::Result<()> {
    Plan::from_options(options)?;
    Ok(())
}

/// As [`analyze`], with the timeline of one backward pass when
/// `options.timeline` asks for it: at b*, or at `options.timeline_cap`.
pub fn analyze_with_timeline(
    options: &DdpOptions,
    comm_reports: &[schema::Report],
) -> anyhow::Result<(Analysis, Option<TimelineView>)> {
    analyze_plan(&Plan::from_options(options)?, comm_reports)
}

fn analyze_plan(
    plan: &Plan,
    comm_reports: &[schema::Report],
) -> anyhow::Result<(Analysis, Option<TimelineView>)> {
    let profile = read_profile(plan)?;
    let points = comm::select_points_by(
        comm_reports,
        plan.world_size,
        plan.backend,
        plan.stat,
        &plan.comm,
    )?;
    let model = fitted::model_of(&points, plan.comm_model).with_context(|| {
        format!(
            "{}: fitting α–β to the all-reduce times of world size {}",
            plan.comm.display(),
            points.world_size
        )
    })?;
    let predictor =
        sweep::Predictor::new(&profile, model.as_ref(), plan.first_bucket, plan.slowdown)
            .with_comm_slowdown(plan.comm_slowdown)
            .with_grad_copy(plan.grad_copy)
            .with_measured_range(points.range());
    let largest = profile
        .layers
        .iter()
        .map(|l| l.grad_bytes)
        .max()
        .unwrap_or(1);
    let caps = caps::caps(plan.caps.as_ref(), profile.total_grad_bytes(), largest);
    let curve = predictor.sweep(&caps);
    check_finite(&curve, &plan.comm, points.world_size)?;
    let best = sweep::best(&curve).context("no caps to sweep")?;
    let near_best = sweep::near_best(curve.iter().map(|p| (p.cap_bytes, p.time_s)))
        .context("no caps to sweep")?;

    let mut notes = profile.notes.clone();
    notes.extend(
        points
            .notes
            .iter()
            .map(|n| format!("{}: {n}", plan.comm.display())),
    );
    let measured = match &plan.measured {
        None => None,
        Some(path) => {
            let (measured, measured_notes) = measured::read_measured(path)?;
            notes.extend(measured_notes);
            Some(measured::compare(
                path,
                &measured,
                &predictor,
                best.cap_bytes,
            ))
        }
    };
    let (lo, hi) = (caps[0], caps[caps.len() - 1]);
    // Up to a cap holding everything in one bucket, past which nothing changes.
    let hi = hi.max(profile.total_grad_bytes());
    let steps = steps::steps(&predictor, lo, hi);
    if steps.len() == steps::step_limit(profile.layers.len()) {
        if let Some(last) = steps.last().filter(|s| s.max_cap_bytes < hi) {
            notes.push(format!(
                "the step curve stops at cap {} bytes after {} steps (walking every step of {} layers would cost their square); the sweep's caps cover the rest",
                last.max_cap_bytes,
                steps.len(),
                profile.layers.len()
            ));
        }
    }
    let best_step = Some(steps::step_at(&predictor, best.cap_bytes, lo, hi));
    let pytorch_default = predictor
        .with_first_bucket(FirstBucket::Bytes(caps::PYTORCH_DEFAULT_FIRST_BUCKET_BYTES))
        .predict(caps::PYTORCH_DEFAULT_CAP_MB * caps::MIB);
    let mut warnings = extrapolation::warnings(
        &curve,
        &best,
        measured.as_ref(),
        points.range(),
        &plan.comm.display().to_string(),
    );
    warnings.extend(profile.header.estimate_warning("the profile"));
    if plan.grad_copy.is_none() {
        if let Some(gbps) = profile.header.copy_gbps {
            warnings.push(format!(
                "DDP's passes over the gradients (into its buckets and back) are not timed (no --grad-copy-gbps): they take no time here, though the profile's header measured them at {gbps} GB/s: pass --grad-copy-gbps {gbps}"
            ));
        }
    }
    warnings.extend(crate::provenance::mismatch_warnings(
        &plan.profile_label(),
        profile.header.device.as_deref(),
        &[crate::provenance::CurveOrigin::of(
            "--comm",
            &plan.comm,
            comm_reports,
        )],
    ));
    let timeline = match plan.timeline {
        None => None,
        Some(at) => {
            let (cap, chosen) = match at {
                TimelineAt::Best => (best.cap_bytes, Chosen::Best),
                TimelineAt::Cap(cap) => (cap, Chosen::Given),
            };
            let point = predictor.predict(cap);
            check_finite(std::slice::from_ref(&point), &plan.comm, points.world_size)
                .context("--timeline-cap")?;
            if chosen == Chosen::Given && point.extrapolated {
                warnings.push(format!(
                    "--timeline-cap {cap}: {} of its {} buckets lie outside the all-reduce sizes measured in {} ({} .. {} bytes), so the picture's all-reduce times are extrapolated",
                    point.buckets_above_measured + point.buckets_below_measured,
                    point.buckets,
                    plan.comm.display(),
                    points.range().min_bytes,
                    points.range().max_bytes
                ));
            }
            let pass = predictor
                .run_pass(cap)
                .map_err(|e| anyhow::anyhow!("--timeline: {e}"))?;
            let ready_names: Vec<&str> = profile
                .layers
                .iter()
                .rev()
                .map(|l| l.name.as_str())
                .collect();
            Some(pass_view::view(
                &pass,
                &ready_names,
                &point,
                chosen,
                points.world_size,
            ))
        }
    };
    let analysis = Analysis {
        profile: plan.profile_label(),
        comm: plan.comm.display().to_string(),
        world_size: points.world_size,
        comm_model: plan.comm_model.as_str().to_string(),
        comm_stat: points.stat.as_str().to_string(),
        comm_placement: points.placement.as_str().to_string(),
        comm_sizes: points.points.len(),
        comm_measured: points.range(),
        comm_description: model.describe(),
        first_bucket_bytes: match plan.first_bucket {
            FirstBucket::Same => None,
            FirstBucket::Bytes(b) => Some(b),
        },
        compute_slowdown: plan.slowdown,
        comm_slowdown: plan.comm_slowdown,
        grad_copy_gbps: plan.grad_copy.map(|c| c.bytes_per_s / 1e9),
        grad_as_bucket_view: plan.grad_copy.is_some_and(|c| c.bucket_view),
        compute_s: profile.compute_s(),
        total_grad_bytes: profile.total_grad_bytes(),
        total_params: profile.total_params(),
        layers: profile.layers.len(),
        profile_microbatch: microbatch_of(&profile),
        curve,
        best_bucket_cap_mb: caps::bytes_to_mb(best.cap_bytes),
        best_same_buckets_min_bytes: best_step.map_or(best.cap_bytes, |s| s.min_cap_bytes),
        best_same_buckets_max_bytes: best_step.map_or(best.cap_bytes, |s| s.max_cap_bytes),
        steps,
        best,
        pytorch_default,
        near_best,
        measured,
        warnings,
        notes,
    };
    Ok((analysis, timeline))
}

/// The one micro-batch size the profile's rows give, if they give one.
fn microbatch_of(profile: &Profile) -> Option<u64> {
    let mut sizes = profile.layers.iter().filter_map(|l| l.microbatch);
    let first = sizes.next()?;
    sizes.all(|m| m == first).then_some(first)
}

/// Refuses a curve with a time that is not finite: a model answering NaN or
/// infinity would otherwise crown a meaningless b*.
fn check_finite(
    curve: &[CurvePoint],
    comm: &std::path::Path,
    world_size: u32,
) -> anyhow::Result<()> {
    match curve.iter().find(|p| !p.time_s.is_finite()) {
        Some(bad) => anyhow::bail!(
            "{}: the communication model gives no finite, non-negative time at cap {} bytes (world size {})",
            comm.display(),
            bad.cap_bytes,
            world_size
        ),
        None => Ok(()),
    }
}

/// Reads the profile the plan names.
fn read_profile(plan: &Plan) -> Result<Profile, DdpError> {
    match &plan.profile {
        ProfileSource::Csv(path) => {
            read_profile_csv_at(path, plan.dtype_bytes, plan.microbatch, "--microbatch")
        }
        ProfileSource::Course {
            sizes,
            times,
            stat,
            missing,
            aliases,
        } => {
            let size_rows = course::read_sizes(sizes)?;
            let time_rows = course::read_times(times, *stat)?;
            matching::join(
                &size_rows,
                &time_rows,
                aliases,
                *missing,
                plan.dtype_bytes,
                sizes,
                times,
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CommModel, Layer};

    #[test]
    fn a_communication_model_without_finite_times_is_an_error_not_a_panic() {
        struct Broken;
        impl CommModel for Broken {
            fn time_s(&self, _: u64) -> f64 {
                f64::NAN
            }
        }
        let profile = Profile {
            layers: (0..4)
                .map(|i| Layer {
                    name: format!("layer_{i}"),
                    params: 1 << 18,
                    grad_bytes: 1 << 20,
                    grad_time_s: 1e-3,
                    ..Layer::default()
                })
                .collect(),
            notes: Vec::new(),
            header: Default::default(),
        };
        let predictor = sweep::Predictor::new(&profile, &Broken, FirstBucket::Same, 1.0);
        let curve = predictor.sweep(&[1 << 20, 4 << 20]);
        let err = check_finite(&curve, std::path::Path::new("c.json"), 2)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("c.json: the communication model gives no finite, non-negative time"),
            "{err}"
        );
    }
}
