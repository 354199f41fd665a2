//! The search of `plan`: every configuration of the lists given (or every
//! one that fits), each checked, built on the pipeline schedule with its
//! tensor- and data-parallel collectives, run on the engine, and kept as
//! a few numbers (no timeline is kept but the best's). Each configuration
//! is checked and prepared in order on the caller's thread (where the
//! caches and warnings are), then run on the engine on every core, and
//! the results are taken back in the same order: the output is the same
//! on any number of threads.
use std::cell::RefCell;
use std::collections::HashMap;
use std::ops::Range;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use anyhow::bail;
use schema::units::format_bytes;
use schema::Collective;

use crate::comm::CommModel;
use crate::engine::Span;
use crate::pipeline::schedule::{self, Blocking, GradSync, Kind, Step, StepInputs, Work};
use crate::pipeline::stages::{balanced_split, given_split, LayerCost};
use crate::sequence::SequenceTarget;
use crate::shard::config::state_bytes_per_param;
use crate::view::TimelineView;

use super::curves::{Group, GroupCurves};
use super::layout::Layout;
use super::memory::{block_activation_bytes, selective_share, Memory, Recompute};
use super::profiles::{Costs, DegreeProfiles};
use super::split::{blocks, megatron};
use super::zero3::{self, Zero3};
use super::{
    ConfigResult, CurveLine, DpOverlap, Exposed, PlanAnalysis, PlanOptions, Skips, SplitChoice,
};

/// Most configurations one search predicts.
const MAX_CONFIGS: usize = 1_000_000;

/// Most forwards (micro-batches × parts × steps) one configuration runs
/// on the engine.
const MAX_FORWARDS: usize = 1 << 20;

/// One point of the search.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Config {
    tp: u32,
    pp: u32,
    dp: u32,
    microbatch: u64,
    kind: Kind,
    recompute: Recompute,
    zero: u8,
}

/// Each row's costs at a degree and micro-batch size, made once per pair
/// however many configurations share it.
struct Rows<'a> {
    profiles: &'a DegreeProfiles,
    cache: RefCell<HashMap<(u64, u64), Rc<Costs>>>,
    /// The rows prepared so far (recompute and collectives applied).
    prepared: RefCell<HashMap<RowsKey, Arc<PreparedRows>>>,
    /// Each (tp, pp, dp)'s groups: tensor-parallel, data-parallel, and
    /// the pair of neighbouring stages (each an O(GPUs) walk of the ranks).
    groups: RefCell<HashMap<(u32, u32, u32), [Group; 3]>>,
}

impl Rows<'_> {
    /// The tensor-parallel, data-parallel and stage-pair groups of `layout`.
    fn groups(&self, layout: &Layout) -> [Group; 3] {
        let key = (layout.tp, layout.pp, layout.dp);
        if let Some(g) = self.groups.borrow().get(&key) {
            return *g;
        }
        let g = [layout.tp_group(), layout.dp_group(), layout.pp_pair()];
        self.groups.borrow_mut().insert(key, g);
        g
    }
}

impl Rows<'_> {
    /// The costs at (tp, micro-batch size), and whether they were made now
    /// (their warnings not yet said).
    fn at(&self, tp: u64, microbatch: u64) -> (Rc<Costs>, bool) {
        if let Some(costs) = self.cache.borrow().get(&(tp, microbatch)) {
            return (costs.clone(), false);
        }
        let costs = Rc::new(self.profiles.costs(tp, microbatch));
        self.cache
            .borrow_mut()
            .insert((tp, microbatch), costs.clone());
        (costs, true)
    }
}

/// A group's curve could be neither found nor predicted: the
/// configurations that need it are skipped with this sentence.
#[derive(Debug)]
struct NoCurve(String);

impl std::fmt::Display for NoCurve {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NoCurve {}

/// The curves asked for so far, each asked once.
struct Curves<'a> {
    source: &'a dyn GroupCurves,
    cache: RefCell<HashMap<(Collective, Group), Arc<super::GroupCurve>>>,
}

impl Curves<'_> {
    fn get(&self, collective: Collective, group: Group) -> anyhow::Result<Arc<super::GroupCurve>> {
        if let Some(c) = self.cache.borrow().get(&(collective, group)) {
            return Ok(c.clone());
        }
        let curve = Arc::new(
            self.source
                .curve(collective, group)
                .map_err(|e| anyhow::Error::new(NoCurve(e)))?,
        );
        self.cache
            .borrow_mut()
            .insert((collective, group), curve.clone());
        Ok(curve)
    }
}

/// The sentence for a search where nothing fits `--memory-limit`
/// (`limit`), naming the least peak any configuration reached.
pub fn nothing_fits(limit: u64, least_peak: u64) -> String {
    format!(
        "no configuration fits --memory-limit {}: the least peak is {}",
        format_bytes(limit),
        format_bytes(least_peak)
    )
}

/// Searches the configurations of `options`, timing collectives with
/// `curves`, on as many threads as the machine has cores; returns the
/// analysis and the best configuration's timeline.
pub fn analyze(
    options: &PlanOptions,
    curves: &dyn GroupCurves,
) -> anyhow::Result<(PlanAnalysis, Option<TimelineView>)> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    analyze_on(options, curves, cores)
}

/// [`analyze`] on `threads` threads (1: all on the caller's); the result
/// is the same on any number.
pub fn analyze_on(
    options: &PlanOptions,
    curves: &dyn GroupCurves,
    threads: usize,
) -> anyhow::Result<(PlanAnalysis, Option<TimelineView>)> {
    check(options)?;
    let sequence = options.dims.map(|d| SequenceTarget {
        seq: d.seq,
        hidden: Some(d.hidden),
    });
    let profiles = DegreeProfiles::read(&options.profiles, options.dtype_bytes, sequence)?;
    let curves = Curves {
        source: curves,
        cache: RefCell::new(HashMap::new()),
    };
    let mut skips = Skips::default();
    let mut warnings: Vec<String> = profiles
        .degrees
        .iter()
        .filter_map(|d| {
            d.profile.at[0]
                .1
                .header
                .estimate_warning(&d.profile.path.display().to_string())
        })
        .chain(profiles.warnings.iter().cloned())
        .collect();
    let mut notes: Vec<String> = Vec::new();
    let configs = enumerate(options, &profiles, &mut skips)?;
    let rows = Rows {
        profiles: &profiles,
        cache: RefCell::new(HashMap::new()),
        prepared: RefCell::new(HashMap::new()),
        groups: RefCell::new(HashMap::new()),
    };
    // Checked and prepared in order, up to the first error (as a serial
    // search would stop there), then run on every thread.
    let mut jobs: Vec<Result<Job, String>> = Vec::with_capacity(configs.len());
    let mut ended = None;
    for config in &configs {
        match job(options, &rows, &curves, config, &mut warnings) {
            Ok(checked) => jobs.push(checked),
            Err(e) if e.downcast_ref::<NoCurve>().is_some() => jobs.push(Err(e.to_string())),
            Err(e) => {
                ended = Some(e);
                break;
            }
        }
    }
    let outcomes = run_all(options, &jobs, threads);
    let mut results = Vec::with_capacity(configs.len());
    for (checked, outcome) in jobs.into_iter().zip(outcomes) {
        let job = match checked {
            Ok(job) => job,
            Err(reason) => {
                skips.add(reason);
                continue;
            }
        };
        match outcome {
            Some(Ok(Ok(result))) => {
                saturated(options, &result)?;
                results.push((job.config, result));
            }
            Some(Ok(Err(reason))) => skips.add(reason),
            Some(Err(e)) if e.downcast_ref::<NoCurve>().is_some() => skips.add(e.to_string()),
            Some(Err(e)) => return Err(e),
            None => unreachable!("every job is run"),
        }
    }
    if let Some(e) = ended {
        return Err(e);
    }
    notes.extend(skips.notes());
    if results.is_empty() {
        bail!(
            "no configuration of {} could be planned: {}",
            super::output::gpus(options.gpus),
            if notes.is_empty() {
                "none was searched".to_string()
            } else {
                notes.join("; ")
            }
        );
    }
    results.sort_by(|a, b| a.1.step_ms.total_cmp(&b.1.step_ms));
    let best_at = results
        .iter()
        .find(|(_, r)| r.fits_memory_limit != Some(false))
        .map(|(c, _)| *c);
    let best = best_at.and_then(|at| {
        results
            .iter()
            .find(|(c, _)| *c == at)
            .map(|(_, r)| r.clone())
    });
    if let (Some(limit), None) = (options.memory_limit, &best) {
        let least = results.iter().map(|(_, r)| r.memory.peak_bytes).min();
        warnings.push(nothing_fits(limit, least.unwrap_or(0)));
    }
    // Only the best's timeline is drawn: its run again, with the picture.
    let timeline = match &best_at {
        Some(config) => match job(options, &rows, &curves, config, &mut Vec::new())? {
            Ok(job) => simulate(options, &job, true)?
                .ok()
                .and_then(|(_, view)| view),
            Err(_) => None,
        },
        None => None,
    };
    if options.dims.is_none() {
        notes.push("no --seq/--hidden/--heads: the blocks' activations are the profile's (Korthikanti's formulas need the shape)".to_string());
    } else {
        let sizes = profiles.block_element_bytes();
        let listed = sizes
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(" and ");
        notes.push(format!(
            "the transformer blocks' activations are Korthikanti et al.'s per --seq/--hidden/--heads, at {listed} byte{} an element (e, the block rows' dtype_bytes, else --dtype-bytes {}; dropout masks 1 byte): s·b·h·(16e + 2) + a·s²·b·(2e + 1) a block without parallelism; other rows' as profiled (× --seq / the profile's sequence where they differ)",
            if sizes == [1] { "" } else { "s" },
            options.dtype_bytes
        ));
    }
    if options.forward_only {
        notes.push("forward only: no backward, gradient reduction or optimizer; memory is the parameters and the activations of the micro-batch running (nothing saved for a backward)".to_string());
    }
    if options.steps > 1 {
        notes.push(format!(
            "{} steps back to back with no flush between them; step ms and exposed ms are the run's / {}{}",
            options.steps,
            options.steps,
            if options.forward_only {
                ""
            } else {
                " (dp: the last step's tail; earlier steps' reductions delay the next step and count in the step time)"
            }
        ));
    }
    notes.push("ranks are ordered as Megatron-LM orders them: tensor-parallel ranks adjacent inside a node, then data-parallel, then pipeline stages".to_string());
    let k = options.shared_compute_slowdown;
    if k != 1.0 {
        notes.push(format!(
            "--shared-compute-slowdown {k}: ranks share one machine's compute; at tp·dp > 1 a stage's tensor- and data-parallel peers compute with it, so every forward and backward is {k} times slower; at tp·dp = 1 a stage computes {k} times slower while another stage computes{}",
            if results.iter().any(|(c, _)| c.tp == 1 && c.pp == 1 && c.dp == 1) {
                "; at tp 1 × pp 1 × dp 1 one rank shares with none, and K has no effect"
            } else {
                ""
            }
        ));
    }
    if results.iter().any(|(c, _)| c.zero == 3) {
        notes.push(format!(
            "ZeRO-3 rows are `zero --stage 3`'s step (one unit per row, backward prefetch before each unit's gradients, at most 2 gathered units alive, one communication stream) with the tensor-parallel collectives inside each row's compute: every micro-batch gathers the parameters again for its forward and backward and reduce-scatters its gradients, as DeepSpeed accumulates; their dp ms is every wait for those collectives, and their peak counts the gathered units and the gradients waiting for their reduce-scatter{}",
            if options.steps > 1 {
                "; steps run one after another (each step's first all-gathers wait for the optimizer step before them)"
            } else {
                ""
            }
        ));
    }
    let mut best_pairs: Vec<(Collective, Group)> = Vec::new();
    if let Some(b) = &best {
        let layout = Layout {
            tp: b.tp,
            pp: b.pp,
            dp: b.dp,
            gpus_per_node: options.gpus_per_node,
        };
        let sharded = [Collective::ReduceScatter, Collective::AllGather];
        if b.tp > 1 {
            let kinds: &[Collective] = if b.sequence_parallel {
                &sharded
            } else {
                &[Collective::AllReduce]
            };
            best_pairs.extend(kinds.iter().map(|&c| (c, layout.tp_group())));
        }
        if b.dp > 1 {
            let kinds: &[Collective] = if b.zero > 0 {
                &sharded
            } else {
                &[Collective::AllReduce]
            };
            best_pairs.extend(kinds.iter().map(|&c| (c, layout.dp_group())));
        }
        if b.pp > 1 {
            best_pairs.push((Collective::SendRecv, layout.pp_pair()));
        }
    }
    let mut used: Vec<CurveLine> = curves
        .cache
        .borrow()
        .iter()
        .map(|((c, g), curve)| CurveLine {
            collective: c.as_str().to_string(),
            group: *g,
            source: curve.source.clone(),
            predicted: curve.predicted,
            detail: curve.detail.clone(),
            best_uses: best_pairs.contains(&(*c, *g)),
        })
        .collect();
    used.sort_by(|a, b| (&a.collective, a.group).cmp(&(&b.collective, b.group)));
    // In the curves' order (the cache's own order differs run to run).
    let mut asked: Vec<_> = curves.cache.borrow().clone().into_iter().collect();
    asked.sort_by(|a, b| (a.0 .0.as_str(), a.0 .1).cmp(&(b.0 .0.as_str(), b.0 .1)));
    for (_, curve) in &asked {
        if let Some(w) = curve.warning.as_ref().filter(|w| !warnings.contains(w)) {
            warnings.push(w.clone());
        }
    }
    let predicted: Vec<String> = used
        .iter()
        .filter(|c| c.predicted)
        .map(|c| format!("{} over {}", c.collective, c.group))
        .collect();
    if !predicted.is_empty() {
        warnings.push(format!(
            "{} group curve{} not measured, so predicted by the scale model from the files given (each curve's line says which algorithm and protocol; `--json` has every term and its input; `collbench-analyze predict` gives the intervals): {}",
            predicted.len(),
            if predicted.len() == 1 { " was" } else { "s were" },
            predicted.join(", ")
        ));
    }
    let analysis = PlanAnalysis {
        profiles: options
            .profiles
            .iter()
            .map(|p| p.display().to_string())
            .collect(),
        profiled_tp: profiles.tps(),
        layers: profiles.layer_count(),
        gpus: options.gpus,
        gpus_per_node: options.gpus_per_node,
        global_batch: options.global_batch,
        steps: options.steps,
        forward_only: options.forward_only,
        dp_overlap: options.dp_overlap.as_str().to_string(),
        memory_limit_bytes: options.memory_limit,
        configs: results.into_iter().map(|(_, r)| r).collect(),
        best,
        skipped: skips.total(),
        curves: used,
        warnings,
        notes,
    };
    Ok((analysis, timeline))
}

/// Refuses a configuration whose memory per GPU reaches 8 EiB (2^63
/// bytes), where the sums saturate and a total could print smaller than
/// its parts, as `pipeline` does: one line naming what made it.
fn saturated(options: &PlanOptions, r: &ConfigResult) -> anyhow::Result<()> {
    let m = &r.memory;
    let limit = i64::MAX as u64;
    if m.peak_bytes < limit && m.activations_bytes < limit {
        return Ok(());
    }
    let cause = match options.dims {
        Some(d) if m.activations_bytes >= limit => format!(
            "its activations grow with s·b·h and a·s²·b: check --seq {} --hidden {} --heads {} and --microbatch {}",
            d.seq, d.hidden, d.heads, r.microbatch
        ),
        Some(d) => format!(
            "check --seq {} --hidden {} --heads {}, --microbatch {} and the --profile's byte columns (params, dtype_bytes)",
            d.seq, d.hidden, d.heads, r.microbatch
        ),
        None => format!(
            "check --microbatch {} and the --profile's byte columns (activation_bytes, params, dtype_bytes)",
            r.microbatch
        ),
    };
    bail!(
        "tp {} × pp {} × dp {}, micro-batch {} × {}: memory per GPU comes to 8 EiB or more, past any device; {cause}",
        r.tp,
        r.pp,
        r.dp,
        r.microbatch,
        r.microbatches
    )
}

/// The checks of the options alone, each naming its flag.
fn check(options: &PlanOptions) -> anyhow::Result<()> {
    let (n, g) = (options.gpus, options.gpus_per_node);
    if n == 0 {
        bail!("--gpus 0: give the number of GPUs, 1 or more");
    }
    if g == 0 || n % g != 0 && n > g {
        bail!("--gpus-per-node {g}: give GPUs per node, 1 or more, that divide --gpus {n} (or --gpus no more than one node)");
    }
    if options.global_batch == 0 {
        bail!("--global-batch 0: give samples per step, 1 or more");
    }
    if let Some(&tp) = options.tp.iter().find(|&&t| t == 0 || t > g) {
        bail!(
            "--tp {tp}: tensor-parallel groups stay inside a node, so --tp takes 1 to --gpus-per-node {g}"
        );
    }
    for (flag, list) in [("--pp", &options.pp), ("--dp", &options.dp)] {
        if list.contains(&0) {
            bail!("{flag} 0: give degrees of 1 or more");
        }
    }
    if options.microbatch.contains(&0) {
        bail!("--microbatch 0: give samples per micro-batch, 1 or more");
    }
    if let Some(z) = options.zero.iter().find(|&&z| z > 3) {
        bail!("--zero {z}: ZeRO stages are 0, 1, 2 and 3");
    }
    if options.schedules.contains(&Kind::Interleaved) && options.chunks < 2 {
        bail!("--schedule interleaved needs --chunks V of 2 or more (model chunks per stage)");
    }
    let overhead = options.microbatch_overhead_s;
    if !(overhead.is_finite() && (0.0..=3600.0).contains(&overhead)) {
        bail!("--microbatch-overhead-s {overhead} is not a time from 0 to 3600 seconds");
    }
    let shared = options.shared_compute_slowdown;
    if !(1.0..=crate::options::MAX_SLOWDOWN).contains(&shared) {
        bail!("--shared-compute-slowdown {shared} is not a factor from 1 to 1000 (1 = ranks do not share compute, 1.5 = a rank computes 50 % slower while another computes)");
    }
    if options.bucket_cap == 0 || options.first_bucket == 0 {
        bail!("--bucket-cap: give a cap of 1 byte or more");
    }
    if let Some(d) = options.dims {
        if d.seq == 0 || d.hidden == 0 || d.heads == 0 || d.hidden % d.heads != 0 {
            bail!(
                "--seq {} --hidden {} --heads {}: give lengths of 1 or more, with the hidden size a multiple of the heads",
                d.seq,
                d.hidden,
                d.heads
            );
        }
    }
    if options.steps == 0 {
        bail!("--steps 0: give the steps to run back to back, 1 or more");
    }
    if options.forward_only {
        // List flags add up over repeats: name the whole list searched.
        if let Some(r) = options.recompute.iter().find(|&&r| r != Recompute::None) {
            let list: Vec<&str> = options.recompute.iter().map(|r| r.as_str()).collect();
            bail!(
                "--forward-only with --recompute {} (the search's list: every --recompute adds to it): nothing is recomputed without a backward; leave {} out, keeping none alone",
                list.join(","),
                r.as_str()
            );
        }
        if let Some(z) = options.zero.iter().find(|&&z| z != 0) {
            let list: Vec<String> = options.zero.iter().map(u8::to_string).collect();
            bail!(
                "--forward-only with --zero {} (the search's list: every --zero adds to it): a forward-only run has no gradients or optimizer state to shard; leave {z} out, keeping 0 alone",
                list.join(",")
            );
        }
    }
    if let Some(f) = options.tp_comm_overlap {
        if !(f > 0.0 && f <= 1.0) {
            bail!("--tp-overlap-fraction {f}: give the share of each row's compute that hides its tensor-parallel collectives, above 0 and at most 1");
        }
        if !options.sequence_parallel {
            bail!("--tp-comm-overlap needs --sequence-parallel: Megatron and Transformer Engine overlap only sequence parallelism's all-gathers and reduce-scatters with the GEMMs");
        }
    }
    if options.recompute.contains(&Recompute::Selective) && options.dims.is_none() {
        bail!("--recompute selective needs --seq, --hidden and --heads: the attention core it recomputes is sized from them");
    }
    Ok(())
}

/// The values of a list flag: the list, else every value `all` gives.
fn values<T: Copy>(given: &[T], all: impl FnOnce() -> Vec<T>) -> Vec<T> {
    if given.is_empty() {
        all()
    } else {
        given.to_vec()
    }
}

/// Every configuration to predict; those that cannot be are counted in
/// `skips` with their reason.
fn enumerate(
    options: &PlanOptions,
    profiles: &DegreeProfiles,
    skips: &mut Skips,
) -> anyhow::Result<Vec<Config>> {
    let (n, g) = (options.gpus, options.gpus_per_node);
    let divisors = |x: u32| (1..=x).filter(|d| x.is_multiple_of(*d)).collect::<Vec<_>>();
    let tps = values(&options.tp, || {
        divisors(g.min(n))
            .into_iter()
            .filter(|t| t.is_power_of_two())
            .collect()
    });
    let pps = values(&options.pp, || divisors(n));
    let microbatches = values(&options.microbatch, || {
        let sizes = profiles.microbatch_sizes();
        if sizes.is_empty() {
            vec![1]
        } else {
            sizes
        }
    });
    let schedules = values(&options.schedules, || vec![Kind::OneFOneB]);
    let recomputes = values(&options.recompute, || vec![Recompute::None]);
    let zeros = values(&options.zero, || vec![0]);
    let total = tps.len()
        * pps.len()
        * options.dp.len().max(1)
        * microbatches.len()
        * schedules.len()
        * recomputes.len()
        * zeros.len();
    if total > MAX_CONFIGS {
        bail!("the search has {total} configurations, more than {MAX_CONFIGS}: give fewer values to --tp, --pp, --dp, --microbatch, --schedule, --recompute or --zero");
    }
    let mut out = Vec::new();
    for &tp in &tps {
        for &pp in &pps {
            let dps = if options.dp.is_empty() {
                match n.checked_div(tp.saturating_mul(pp)) {
                    Some(dp)
                        if dp > 0
                            && u64::from(tp) * u64::from(pp) * u64::from(dp) == u64::from(n) =>
                    {
                        vec![dp]
                    }
                    _ => {
                        skips.add(format!("tp × pp does not divide --gpus {n}"));
                        continue;
                    }
                }
            } else {
                options.dp.clone()
            };
            for dp in dps {
                if u64::from(tp) * u64::from(pp) * u64::from(dp) != u64::from(n) {
                    skips.add(format!("tp × pp × dp is not --gpus {n}"));
                    continue;
                }
                if let Some(d) = options.dims.filter(|d| d.heads % u64::from(tp) != 0) {
                    skips.add(format!(
                        "tp does not divide the {} attention heads",
                        d.heads
                    ));
                    continue;
                }
                for &microbatch in &microbatches {
                    if !options
                        .global_batch
                        .is_multiple_of(u64::from(dp) * microbatch)
                    {
                        skips.add(format!(
                            "dp × micro-batch does not divide --global-batch {}",
                            options.global_batch
                        ));
                        continue;
                    }
                    for &kind in &schedules {
                        for &recompute in &recomputes {
                            for &zero in &zeros {
                                out.push(Config {
                                    tp,
                                    pp,
                                    dp,
                                    microbatch,
                                    kind,
                                    recompute,
                                    zero,
                                });
                            }
                        }
                    }
                }
            }
        }
    }
    Ok(out)
}

/// A configuration's rows, ready for the schedule.
struct Prepared {
    rows: Arc<PreparedRows>,
    parts: Vec<Range<usize>>,
}

/// The rows at a (tp, micro-batch size, recompute): costs with recompute
/// applied and the tensor-parallel collectives; shared by every
/// configuration with those three.
struct PreparedRows {
    layers: Vec<LayerCost>,
    blocking: Vec<Blocking>,
}

/// What the rows of a configuration depend on: tp, micro-batch size,
/// recompute.
type RowsKey = (u32, u64, Recompute);

/// A configuration ready to run on the engine: its rows, split and
/// curves, made on the search's thread and run on any.
struct Job {
    config: Config,
    /// Micro-batches per step.
    microbatches: usize,
    chunks: usize,
    prepared: Prepared,
    sendrecv: Option<Arc<super::GroupCurve>>,
    /// The data-parallel gradient collective (all-reduce, or
    /// reduce-scatter under ZeRO), and ZeRO's parameter all-gather.
    reduce: Option<Arc<super::GroupCurve>>,
    gather: Option<Arc<super::GroupCurve>>,
}

/// What running a configuration gives: its result, or Ok(Err(reason))
/// when it cannot be predicted (counted as skipped).
type Outcome<T> = anyhow::Result<Result<T, String>>;

/// Runs every job on `threads` threads, each taking the next job not yet
/// taken; the outcomes in the jobs' order (None where a job was a skip).
fn run_all(
    options: &PlanOptions,
    jobs: &[Result<Job, String>],
    threads: usize,
) -> Vec<Option<Outcome<ConfigResult>>> {
    let next = AtomicUsize::new(0);
    // Each thread its own schedules (the engine's are not shared).
    let work = || {
        let mut done = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(checked) = jobs.get(i) else {
                return done;
            };
            if let Ok(job) = checked {
                let outcome = simulate(options, job, false).map(|r| r.map(|(result, _)| result));
                done.push((i, outcome));
            }
        }
    };
    let mut outcomes: Vec<Option<Outcome<ConfigResult>>> = jobs.iter().map(|_| None).collect();
    let threads = threads.clamp(1, jobs.len().max(1));
    let done: Vec<Vec<_>> = if threads == 1 {
        vec![work()]
    } else {
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..threads).map(|_| scope.spawn(work)).collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
                })
                .collect()
        })
    };
    for (i, outcome) in done.into_iter().flatten() {
        outcomes[i] = Some(outcome);
    }
    outcomes
}

/// Checks configuration `c` and prepares its rows, split and curves:
/// Ok(Err(reason)) when it cannot be predicted (counted as skipped).
fn job(
    options: &PlanOptions,
    rows: &Rows<'_>,
    curves: &Curves<'_>,
    c: &Config,
    warnings: &mut Vec<String>,
) -> Outcome<Job> {
    let m = (options.global_batch / (u64::from(c.dp) * c.microbatch)) as usize;
    let chunks = if c.kind == Kind::Interleaved {
        options.chunks
    } else {
        1
    };
    let pp = c.pp as usize;
    if c.kind == Kind::Interleaved && (pp < 2 || !m.is_multiple_of(pp)) {
        return Ok(Err(
            "interleaved needs 2 or more stages and micro-batches a multiple of them".to_string(),
        ));
    }
    if c.zero == 3 && pp > 1 {
        return Ok(Err(
            "ZeRO-3 with pipeline stages (DeepSpeed runs ZeRO-3 without pipeline parallelism)"
                .to_string(),
        ));
    }
    if c.zero == 3 && c.kind != Kind::OneFOneB {
        return Ok(Err(format!(
            "ZeRO-3 with --schedule {} (its gradient accumulation runs each micro-batch's forward and backward in turn: 1f1b at one stage)",
            c.kind.as_str()
        )));
    }
    if c.zero == 2 && pp > 1 {
        return Ok(Err(
            "ZeRO-2 with pipeline stages (DeepSpeed runs ZeRO-2 without pipeline parallelism)"
                .to_string(),
        ));
    }
    if c.tp > 1 && rows.profiles.tp_allreduces().iter().all(|&k| k == 0) {
        return Ok(Err("tp > 1 with a profile none of whose rows makes a tensor-parallel all-reduce (no tp_allreduces column): its communication would be free; give the column (2 for a Megatron block)".to_string()));
    }
    if c.zero > 0 && c.dp == 1 {
        return Ok(Err("ZeRO at dp 1 (the same as --zero 0)".to_string()));
    }
    let steps = options.steps.max(1);
    let forwards = m.saturating_mul(pp * chunks).saturating_mul(steps);
    if forwards > MAX_FORWARDS {
        let chunked = if chunks > 1 {
            format!(" × --chunks {chunks}")
        } else {
            String::new()
        };
        return Ok(Err(format!(
            "{m} micro-batches (--global-batch {} / (dp {} × --microbatch {})) × pp {pp}{chunked} × --steps {steps} = {forwards} forwards to simulate, more than {MAX_FORWARDS} (2^20): give fewer --steps or a larger --microbatch",
            options.global_batch, c.dp, c.microbatch
        )));
    }
    let prepared = match prepare(options, rows, curves, c, chunks, warnings)? {
        Ok(p) => p,
        Err(reason) => return Ok(Err(reason)),
    };
    let layout = Layout {
        tp: c.tp,
        pp: c.pp,
        dp: c.dp,
        gpus_per_node: options.gpus_per_node,
    };
    let [_, dp_group, pp_pair] = rows.groups(&layout);
    let sendrecv = if pp > 1 {
        Some(curves.get(Collective::SendRecv, pp_pair)?)
    } else {
        None
    };
    let (reduce, gather) = match (c.dp, c.zero) {
        // Forward-only: nothing to reduce.
        _ if options.forward_only => (None, None),
        (1, _) => (None, None),
        (_, 0) => (Some(curves.get(Collective::AllReduce, dp_group)?), None),
        _ => (
            Some(curves.get(Collective::ReduceScatter, dp_group)?),
            Some(curves.get(Collective::AllGather, dp_group)?),
        ),
    };
    Ok(Ok(Job {
        config: *c,
        microbatches: m,
        chunks,
        prepared,
        sendrecv,
        reduce,
        gather,
    }))
}

/// Predicts one prepared configuration on the engine, with the timeline
/// when `picture`.
fn simulate(
    options: &PlanOptions,
    job: &Job,
    picture: bool,
) -> Outcome<(ConfigResult, Option<TimelineView>)> {
    let (c, m, chunks, prepared) = (&job.config, job.microbatches, job.chunks, &job.prepared);
    let (sendrecv, reduce, gather) = (&job.sendrecv, &job.reduce, &job.gather);
    if c.zero == 3 {
        let (Some(gather), Some(reduce)) = (gather, reduce) else {
            bail!("ZeRO-3 at dp {}: no data-parallel curves", c.dp);
        };
        let z = Zero3 {
            tp: c.tp,
            dp: c.dp,
            microbatch: c.microbatch,
            microbatches: m,
            schedule: c.kind.as_str(),
            recompute: c.recompute.as_str(),
            layers: &prepared.rows.layers,
            blocking: &prepared.rows.blocking,
            gather,
            reduce,
        };
        return zero3::simulate(options, &z, picture).map(Ok);
    }
    let pp = c.pp as usize;
    let steps = options.steps.max(1);
    let grad_sync = match options.dp_overlap {
        DpOverlap::Buckets => GradSync::Buckets {
            first_cap: options.first_bucket,
            cap: options.bucket_cap,
        },
        DpOverlap::None => GradSync::AfterBackward,
    };
    let inputs = StepInputs {
        kind: c.kind,
        stages: pp,
        chunks,
        microbatches: m,
        layers: &prepared.rows.layers,
        parts: &prepared.parts,
        sendrecv: sendrecv.as_ref().map(|s| s.model.as_ref()),
        all_reduce: reduce.as_ref().map(|r| r.model.as_ref()),
        overhead_s: options.microbatch_overhead_s,
        grad_sync,
        blocking: &prepared.rows.blocking,
        param_gather: gather.as_ref().map(|g| g.model.as_ref()),
        forward_only: options.forward_only,
        steps,
    };
    let mut step = schedule::build(&inputs).map_err(anyhow::Error::msg)?;
    let interference = share_compute(&mut step, c, options.shared_compute_slowdown);
    let (spans, total_s, per_stage) =
        schedule::run_with(&step, pp, interference).map_err(anyhow::Error::msg)?;
    if !(total_s > 0.0 && total_s.is_finite()) {
        bail!(
            "{}: the step takes {total_s} s: the profile's times add up to nothing",
            options.profiles[0].display()
        );
    }
    // Per step: the run's totals over its steps.
    let n = steps as f64;
    let step_s = total_s / n;
    let compute_end = last_compute_end(&step, &spans);
    let state = state_bytes_per_param(
        options.optimizer,
        options.dtype_bytes,
        options.state_dtype_bytes,
    );
    let mut worst = (0, Memory::default());
    for (s, run) in per_stage.iter().enumerate() {
        let mine = (0..chunks).flat_map(|k| prepared.parts[k * pp + s].clone());
        let (params, param_bytes) = mine.fold((0u64, 0u64), |(p, b), i| {
            let l = &prepared.rows.layers[i];
            (p.saturating_add(l.params), b.saturating_add(l.param_bytes))
        });
        let memory = if options.forward_only {
            Memory::forward_only(param_bytes, run.peak_activation_bytes)
        } else {
            Memory::of(
                params,
                param_bytes,
                state,
                c.zero,
                u64::from(c.dp),
                run.peak_activation_bytes,
            )
        };
        if s == 0 || memory.peak_bytes > worst.1.peak_bytes {
            worst = (s, memory);
        }
    }
    let busy: f64 = per_stage.iter().map(|r| r.busy_s + r.blocking_s).sum();
    // Every row's calls, each micro-batch (counted from the rows, as
    // ZeRO-3 does: a call compute hides entirely has no task).
    let tp_collectives = prepared
        .rows
        .blocking
        .iter()
        .map(|b| b.fwd_calls + if options.forward_only { 0 } else { b.bwd_calls })
        .sum::<u64>()
        * m as u64;
    let mut result = ConfigResult {
        tp: c.tp,
        pp: c.pp,
        dp: c.dp,
        microbatch: c.microbatch,
        microbatches: m,
        schedule: c.kind.as_str().to_string(),
        chunks,
        recompute: c.recompute.as_str().to_string(),
        zero: c.zero,
        sequence_parallel: options.sequence_parallel && c.tp > 1,
        total_ms: total_s * 1e3,
        step_ms: step_s * 1e3,
        throughput: options.global_batch as f64 / step_s,
        // Idle compute until the last compute ends: the data-parallel tail
        // after it is dp's exposed time, not a pipeline bubble.
        bubble_fraction: if compute_end > 0.0 {
            (1.0 - busy / (pp as f64 * compute_end)).max(0.0)
        } else {
            0.0
        },
        exposed_comm_ms: Exposed {
            tp: per_stage.iter().map(|r| r.blocking_s).fold(0.0, f64::max) / n * 1e3,
            // Set below, from a second run with the sends free.
            pp: 0.0,
            dp: (total_s - compute_end).max(0.0) / n * 1e3,
        },
        tp_collectives,
        tp_hidden_ms: options.tp_comm_overlap.map(|_| {
            (0..pp)
                .map(|s| {
                    let mine = (0..chunks).flat_map(|k| prepared.parts[k * pp + s].clone());
                    mine.map(|i| {
                        let b = &prepared.rows.blocking[i];
                        b.fwd_hidden_s
                            + if options.forward_only {
                                0.0
                            } else {
                                b.bwd_hidden_s
                            }
                    })
                    .sum::<f64>()
                })
                .fold(0.0, f64::max)
                * m as f64
                * 1e3
        }),
        split: prepared.parts.iter().map(|r| r.len()).collect(),
        worst_stage: worst.0,
        memory: worst.1,
        fits_memory_limit: options.memory_limit.map(|l| worst.1.peak_bytes <= l),
    };
    let view = picture.then(|| {
        let steps = if steps > 1 {
            format!(", {steps} steps back to back")
        } else {
            String::new()
        };
        let title = format!(
            "tp {} × pp {} × dp {}, {} micro-batches of {}, {}{steps}: {:.3} ms",
            c.tp,
            c.pp,
            c.dp,
            m,
            c.microbatch,
            c.kind.as_str(),
            total_s * 1e3
        );
        crate::pipeline::diagram(&step, &spans, chunks > 1, title)
    });
    // pp's exposed time: the step again with its sends free (the same
    // schedule, its sends' times set to 0, as building it without a
    // send/receive curve would make it).
    if sendrecv.is_some() {
        let sends: Vec<usize> = step
            .work
            .iter()
            .enumerate()
            .filter(|(_, w)| matches!(w, Work::Send { .. }))
            .map(|(i, _)| i)
            .collect();
        for i in sends {
            step.schedule.set_work_s(i, 0.0);
        }
        let free_s = step
            .schedule
            .run(interference)
            .map_err(|e| anyhow::Error::msg(e.to_string()))?
            .iter()
            .map(|s| s.end_s)
            .fold(0.0, f64::max);
        result.exposed_comm_ms.pp = (total_s - free_s).max(0.0) / n * 1e3;
    }
    Ok(Ok((result, view)))
}

/// Ranks sharing compute (`--shared-compute-slowdown K`) in a built step,
/// whose lanes are one rank per stage: at tp·dp > 1 the rank's tensor-
/// and data-parallel peers compute in lockstep with it, so every compute
/// task is made K times longer and the step runs unhindered; at tp·dp = 1
/// the engine slows a stage's compute by K while another stage's computes
/// (the interference returned). K = 1 leaves the step as built.
fn share_compute(step: &mut Step, c: &Config, k: f64) -> crate::engine::Interference {
    let none = crate::engine::Interference::NONE;
    if k == 1.0 {
        return none;
    }
    if c.tp == 1 && c.dp == 1 {
        return crate::engine::Interference {
            shared_compute: k,
            ..none
        };
    }
    for (i, work) in step.work.iter().enumerate() {
        if matches!(work, Work::Compute { .. }) {
            let work_s = step.schedule.tasks()[i].work_s * k;
            step.schedule.set_work_s(i, work_s);
        }
    }
    none
}

/// When the last compute (or collective blocking it) of any stage ends.
fn last_compute_end(step: &Step, spans: &[Span]) -> f64 {
    step.work
        .iter()
        .zip(spans)
        .filter(|(w, _)| matches!(w, Work::Compute { .. } | Work::Blocking { .. }))
        .map(|(_, s)| s.end_s)
        .fold(0.0, f64::max)
}

/// The rows of configuration `c`: costs at its degree and micro-batch
/// size with recompute applied, its tensor-parallel collectives, and the
/// split into parts; Ok(Err(reason)) when the split cannot be made.
fn prepare(
    options: &PlanOptions,
    rows: &Rows<'_>,
    curves: &Curves<'_>,
    c: &Config,
    chunks: usize,
    warnings: &mut Vec<String>,
) -> anyhow::Result<Result<Prepared, String>> {
    let (costs, fresh) = rows.at(u64::from(c.tp), c.microbatch);
    if fresh {
        for w in &costs.warnings {
            if !warnings.contains(w) {
                warnings.push(w.clone());
            }
        }
    }
    let key = (c.tp, c.microbatch, c.recompute);
    let cached = rows.prepared.borrow().get(&key).cloned();
    let prepared = match cached {
        Some(r) => r,
        None => {
            let r = Arc::new(prepare_rows(options, rows, curves, c, &costs)?);
            rows.prepared.borrow_mut().insert(key, r.clone());
            r
        }
    };
    let n = prepared.layers.len();
    let block_rows = blocks(&costs.tp_allreduces);
    let parts_count = c.pp as usize * chunks;
    let parts = match &options.split {
        SplitChoice::Megatron => megatron(n, block_rows, parts_count),
        SplitChoice::Given(counts) => given_split(counts, parts_count, n),
        SplitChoice::Balanced => balanced_split(&prepared.layers, parts_count, |_, _| true)
            .ok_or_else(|| format!("{n} rows cannot be split into {parts_count} parts")),
    };
    Ok(parts.map(|parts| Prepared {
        rows: prepared,
        parts,
    }))
}

/// The rows of configuration `c` at its (tp, micro-batch size,
/// recompute): `costs` with recompute applied and its tensor-parallel
/// collectives timed.
fn prepare_rows(
    options: &PlanOptions,
    rows: &Rows<'_>,
    curves: &Curves<'_>,
    c: &Config,
    costs: &Costs,
) -> anyhow::Result<PreparedRows> {
    let mut layers = costs.layers.clone();
    let n = layers.len();
    let block_rows = blocks(&costs.tp_allreduces);
    let sp = options.sequence_parallel && c.tp > 1;
    let t = u64::from(c.tp);
    for (i, l) in layers.iter_mut().enumerate() {
        if !block_rows.contains(&i) {
            continue;
        }
        match c.recompute {
            Recompute::None => {}
            Recompute::Full => l.bwd_s += l.fwd_s,
            Recompute::Selective => {
                if let Some(d) = options.dims {
                    l.bwd_s += l.fwd_s * selective_share(d);
                }
            }
        }
        l.activation_bytes = match (options.dims, c.recompute) {
            (Some(d), r) => {
                block_activation_bytes(d, c.microbatch, t, sp, r, costs.element_bytes[i])
            }
            (None, Recompute::Full) => {
                if sp {
                    l.output_bytes / t
                } else {
                    l.output_bytes
                }
            }
            (None, _) => l.activation_bytes,
        };
    }
    let mut blocking = vec![Blocking::default(); n];
    if c.tp > 1 {
        // The same group whatever pp and dp are: tp adjacent ranks.
        let [group, _, _] = rows.groups(&Layout {
            tp: c.tp,
            pp: c.pp,
            dp: c.dp,
            gpus_per_node: options.gpus_per_node,
        });
        let (first, second) = if sp {
            (
                curves.get(Collective::ReduceScatter, group)?,
                Some(curves.get(Collective::AllGather, group)?),
            )
        } else {
            (curves.get(Collective::AllReduce, group)?, None)
        };
        for (i, (l, &k)) in layers.iter().zip(&costs.tp_allreduces).enumerate() {
            if k == 0 {
                continue;
            }
            if l.output_bytes == 0 {
                bail!(
                    "--profile: row {:?} makes {k} tensor-parallel all-reduces but has no output_bytes (their size)",
                    l.name
                );
            }
            let time = |model: &dyn CommModel| {
                schedule::time_of(model, l.output_bytes, "tensor-parallel")
                    .map_err(anyhow::Error::msg)
            };
            let each = time(first.model.as_ref())?
                + match &second {
                    Some(s) => time(s.model.as_ref())?,
                    None => 0.0,
                };
            // Sequence parallelism: each all-reduce is a reduce-scatter
            // and an all-gather, two calls.
            let calls = if sp { 2 * k } else { k };
            let again = u64::from(c.recompute == Recompute::Full && block_rows.contains(&i));
            let blocks = Blocking {
                fwd_s: each * k as f64,
                bwd_s: each * (k * (1 + again)) as f64,
                fwd_calls: calls,
                bwd_calls: calls * (1 + again),
                ..Blocking::default()
            };
            // The one place the overlap applies: the pipeline schedule and
            // ZeRO-3's rows both take these times.
            blocking[i] = match options.tp_comm_overlap {
                Some(fraction) => blocks.overlapped(l.fwd_s, l.bwd_s, fraction),
                None => blocks,
            };
        }
    }
    Ok(PreparedRows { layers, blocking })
}
