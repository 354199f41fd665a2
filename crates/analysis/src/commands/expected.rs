//! What a result should have been: the links' busbw ceiling, a prediction or a reference's curve.
//!
//! The extra columns of `table`: `of ceiling` (measured busbw over the
//! bus-bandwidth ceiling of the row's collective over the run's links:
//! recorded in the report, computed from its recorded topology, or from
//! `--link-gbps`/`--nic-gbps`), and
//! `expected (us)` with `measured/expected` (from `predict --json` output
//! given as `--expected`, or a reference report's fitted curve given as
//! `--reference`, evaluated by the one prediction rule of crate `fit`).
use std::path::Path;

use anyhow::{anyhow, bail, Result};
use serde::Deserialize;

use analysis::fit::{fit_points, PiecewiseFit, Segments};
use analysis::render::{self, Align};
use analysis::series::{group_series_by, SeriesKey};
use analysis::stat::Stat;
use schema::{CaseResult, Collective, LinkCeiling, Report};

use super::Input;

/// The nodes a report ran on: as recorded, else its distinct hosts when
/// every rank names one.
pub fn recorded_nodes(report: &Report) -> Option<u32> {
    let env = &report.environment;
    if let Some(n) = env.nodes.filter(|&n| n > 0) {
        return Some(n);
    }
    let mut hosts: Vec<&str> = env
        .ranks
        .iter()
        .map(|r| r.host.as_str())
        .filter(|h| !h.is_empty())
        .collect();
    if hosts.is_empty() || env.ranks.len() != env.world_size as usize {
        return None;
    }
    hosts.sort_unstable();
    hosts.dedup();
    Some(hosts.len() as u32)
}

/// The rates given on the command line.
#[derive(Debug, Clone, Copy, Default)]
pub struct GivenRates {
    pub link_gbps: Option<f64>,
    pub nic_gbit_per_s: Option<f64>,
}

/// The links of one report, whose ceiling each row's collective has: the
/// given rates when any, else those recorded, else those of its recorded
/// topology; `None` when nothing says.
pub fn ceiling_of(input: &Input, given: GivenRates) -> Result<Option<LinkCeiling>> {
    let report = &input.report;
    let world = report.environment.world_size;
    let layout = || -> Result<(u32, u32)> {
        let nodes = recorded_nodes(report).ok_or_else(|| {
            anyhow!(
                "--link-gbps/--nic-gbps: {}: its node count is unknown (no hosts recorded)",
                input.label
            )
        })?;
        Ok((world / nodes.max(1), nodes))
    };
    if given.link_gbps.is_some() || given.nic_gbit_per_s.is_some() {
        let (per_node, nodes) = layout()?;
        return schema::ceiling_from_rates(given.link_gbps, given.nic_gbit_per_s, per_node, nodes)
            .map(Some)
            .map_err(|e| anyhow!("--link-gbps/--nic-gbps: {}: {e}", input.label));
    }
    if let Some(recorded) = &report.environment.link_ceiling {
        return Ok(Some(recorded.clone()));
    }
    let Some(topology) = &report.environment.topology else {
        return Ok(None);
    };
    let Ok((per_node, nodes)) = layout() else {
        return Ok(None);
    };
    match schema::ceiling_from_topology(topology, per_node, nodes) {
        Ok(c) => Ok(Some(c)),
        Err(e) => {
            eprintln!("note: {}: no link ceiling: {e}", input.label);
            Ok(None)
        }
    }
}

/// One row of `predict --json`.
#[derive(Debug, Deserialize)]
pub struct PredictionRow {
    collective: Collective,
    world_size: u32,
    bytes: u64,
    predicted_us: f64,
}

#[derive(Debug, Deserialize)]
struct PredictionFile {
    predictions: Vec<PredictionRow>,
}

/// Where expected times come from, and the flag and file that gave them.
pub struct Expected {
    /// `--expected p.json`, `--reference r.json`.
    source: String,
    times: Times,
}

/// The expected times themselves.
enum Times {
    /// `predict --json` rows.
    Predictions(Vec<PredictionRow>),
    /// A reference report's fitted series.
    Reference(Vec<(SeriesKey, PiecewiseFit)>),
}

/// Refuses two `--expected` rows of one collective, world size and size
/// with different times: which one a measurement is held against would
/// depend on their order. Repeats of the same time are kept.
fn refuse_conflicts(path: &Path, rows: &[PredictionRow]) -> Result<()> {
    let mut sorted: Vec<&PredictionRow> = rows.iter().collect();
    sorted.sort_by_key(|p| (p.collective, p.world_size, p.bytes));
    for pair in sorted.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        let same = (a.collective, a.world_size, a.bytes) == (b.collective, b.world_size, b.bytes);
        if same && a.predicted_us != b.predicted_us {
            bail!(
                "--expected {}: {} at world size {} and {} B is predicted twice, as {} and {} us; keep one row per collective, world size and size",
                path.display(),
                a.collective.as_str(),
                a.world_size,
                a.bytes,
                a.predicted_us,
                b.predicted_us
            );
        }
    }
    Ok(())
}

/// The largest `--expected` file read, 64 MiB (`predict --json` output is
/// kilobytes).
const MAX_PREDICTIONS_BYTES: u64 = 64 << 20;

/// Most series or prediction groups a no-match note lists before it counts the rest.
const HOLDINGS_NAMED: usize = 6;

impl Expected {
    /// Reads `--expected FILE` (predict --json output).
    pub fn predictions(path: &Path) -> Result<Expected> {
        let bytes = schema::io::read_input(path, MAX_PREDICTIONS_BYTES)
            .map_err(|e| anyhow!("--expected {e}"))?;
        let text = String::from_utf8(bytes).map_err(|e| {
            anyhow!(
                "--expected {}: byte {} is not UTF-8 text (accepted: `collbench-analyze predict --json` output)",
                path.display(),
                e.utf8_error().valid_up_to()
            )
        })?;
        let file: PredictionFile = serde_json::from_str(&text).map_err(|e| {
            anyhow!(
                "--expected {}: not `collbench-analyze predict --json` output ({e}); accepted: {{\"predictions\": [{{\"collective\", \"world_size\", \"bytes\", \"predicted_us\", …}}]}}",
                path.display()
            )
        })?;
        if let Some(bad) = file
            .predictions
            .iter()
            .find(|p| !(p.predicted_us.is_finite() && p.predicted_us > 0.0))
        {
            bail!(
                "--expected {}: predicted_us {} at {} B is not a positive time",
                path.display(),
                bad.predicted_us,
                bad.bytes
            );
        }
        refuse_conflicts(path, &file.predictions)?;
        Ok(Expected {
            source: format!("--expected {}", path.display()),
            times: Times::Predictions(file.predictions),
        })
    }

    /// Fits every series of the `--reference` file's reports, each point
    /// `stat` of its iterations.
    pub fn reference(reports: &[Report], file: &Path, stat: Stat) -> Result<Expected> {
        let source = format!("--reference {}", file.display());
        let mut fits = Vec::new();
        let series =
            group_series_by(reports, stat).map_err(|e| anyhow!("{source}: --stat {stat}: {e}"))?;
        for series in series {
            match fit_points(&series.points, Segments::Auto) {
                Ok(fit) => fits.push((series.key, fit)),
                Err(e) => eprintln!("note: {source}: {} not fitted: {e}", series.key.describe()),
            }
        }
        if fits.is_empty() {
            bail!(
                "{source}: no series could be fitted (accepted: a report with at least 3 sizes per series)"
            );
        }
        Ok(Expected {
            source,
            times: Times::Reference(fits),
        })
    }

    /// The expected time of `r` in a report of `report`'s world size.
    fn time_us(&self, report: &Report, r: &CaseResult) -> Option<f64> {
        let key = SeriesKey::of(report, r);
        self.time_us_of(&key, r.bytes)
    }

    /// The expected time of a size of a series (its backend aside).
    pub fn time_us_of(&self, key: &SeriesKey, bytes: u64) -> Option<f64> {
        match &self.times {
            Times::Predictions(rows) => rows
                .iter()
                .find(|p| {
                    p.collective == key.collective
                        && p.world_size == key.ranks()
                        && p.bytes == bytes
                })
                .map(|p| p.predicted_us),
            Times::Reference(fits) => fits
                .iter()
                .find(|(k, _)| same_series(k, key))
                .map(|(_, fit)| fit.predict_us(bytes as f64)),
        }
    }

    /// Prints one note on stderr when rows were shown but none of them
    /// (series and size) has an expected time, so that an empty `expected
    /// (us)` column says why: what matches, and what the file holds. `shown`
    /// names the output (`the table`).
    pub fn note_when_unmatched(
        &self,
        shown: &str,
        rows: impl IntoIterator<Item = (SeriesKey, u64)>,
    ) {
        let mut rows = rows.into_iter().peekable();
        if rows.peek().is_none() || rows.any(|(key, bytes)| self.time_us_of(&key, bytes).is_some())
        {
            return;
        }
        let (what, matched_by, held) = match &self.times {
            Times::Predictions(rows) => (
                "prediction",
                "collective, world size and size",
                prediction_groups(rows),
            ),
            Times::Reference(fits) => {
                let mut held: Vec<String> = Vec::new();
                for (key, _) in fits {
                    let name = format!(
                        "{} {} {} {}",
                        key.collective,
                        key.dtype,
                        super::ranks(key.ranks()),
                        key.placement.long_name()
                    );
                    if !held.contains(&name) {
                        held.push(name);
                    }
                }
                (
                    "fitted series",
                    "collective, dtype, placement and world size",
                    held,
                )
            }
        };
        let listed = match held.len().checked_sub(HOLDINGS_NAMED) {
            Some(more) if more > 0 => {
                format!("{} and {more} more", held[..HOLDINGS_NAMED].join(", "))
            }
            _ => held.join(", "),
        };
        eprintln!(
            "note: {}: no {what} matches a row of {shown} (same {matched_by}), so expected (us) is empty; it holds {listed}",
            self.source
        );
    }
}

/// Whether two series are the same but for their backend.
fn same_series(a: &SeriesKey, b: &SeriesKey) -> bool {
    // A run in groups is held against the curve of its group's size.
    let series = |k: &SeriesKey| (k.collective, k.dtype, k.placement, k.ranks());
    series(a) == series(b)
}

/// `all_reduce at 8 ranks: 2 sizes, 1 MiB to 8 GiB`, per collective and
/// world size of the predictions, in order of first appearance.
fn prediction_groups(rows: &[PredictionRow]) -> Vec<String> {
    let mut groups: Vec<((Collective, u32), Vec<u64>)> = Vec::new();
    for row in rows {
        let group = (row.collective, row.world_size);
        match groups.iter_mut().find(|(g, _)| *g == group) {
            Some((_, sizes)) => sizes.push(row.bytes),
            None => groups.push((group, vec![row.bytes])),
        }
    }
    groups
        .into_iter()
        .map(|((collective, world_size), mut sizes)| {
            sizes.sort_unstable();
            sizes.dedup();
            let span = match (sizes.first(), sizes.last()) {
                (Some(a), Some(b)) if a != b => format!(
                    "{} sizes, {} to {}",
                    sizes.len(),
                    render::size(*a),
                    render::size(*b)
                ),
                (Some(a), _) => format!("1 size, {}", render::size(*a)),
                _ => "no size".to_string(),
            };
            format!("{collective} at {}: {span}", super::ranks(world_size))
        })
        .collect()
}

/// The extra columns of one report's table.
pub struct Extra<'a> {
    /// The run's links: each row's ceiling is its collective's over them.
    pub ceiling: Option<LinkCeiling>,
    pub expected: Option<&'a Expected>,
}

impl Extra<'_> {
    pub fn columns(&self) -> Vec<(String, Align)> {
        let mut columns = Vec::new();
        if self.ceiling.is_some() {
            columns.push(("of ceiling".to_string(), Align::Right));
        }
        if self.expected.is_some() {
            columns.push(("expected (us)".to_string(), Align::Right));
            columns.push(("measured/expected".to_string(), Align::Right));
        }
        columns
    }

    /// The busbw ceiling of `r`'s collective, GB/s; `None` without links
    /// or where that collective has none across nodes.
    pub fn ceiling_gbps(&self, r: &CaseResult) -> Option<f64> {
        let links = self.ceiling.as_ref()?;
        links.busbw_ceiling(r.collective).ok().map(|(gbps, _)| gbps)
    }

    /// The machine-readable fields of [`Extra::values`]: the ceiling's
    /// (when any input has one) and the expected time's (when asked).
    pub fn fields(with_ceiling: bool, with_expected: bool) -> Vec<String> {
        let mut names = Vec::new();
        if with_ceiling {
            names.extend(["ceiling_busbw_gbps", "of_ceiling"].map(String::from));
        }
        if with_expected {
            names.extend(["expected_us", "measured_over_expected"].map(String::from));
        }
        names
    }

    /// One row's values of [`Extra::fields`], given its measured time and
    /// busbw; `None` where this row has no ceiling or the size no expected
    /// time.
    pub fn values(
        &self,
        report: &Report,
        r: &CaseResult,
        (time_us, busbw_gbps): (f64, f64),
        with_ceiling: bool,
    ) -> Vec<Option<f64>> {
        let mut values = Vec::new();
        if with_ceiling {
            let ceiling = self.ceiling_gbps(r);
            values.push(ceiling);
            values.push(ceiling.map(|c| busbw_gbps / c));
        }
        if let Some(expected) = self.expected {
            let e = expected.time_us(report, r);
            values.push(e);
            values.push(e.map(|e| time_us / e));
        }
        values
    }

    pub fn cells(
        &self,
        report: &Report,
        r: &CaseResult,
        time_us: f64,
        busbw_gbps: f64,
    ) -> Vec<String> {
        let mut cells = Vec::new();
        if self.ceiling.is_some() {
            cells.push(render::or_dash(self.ceiling_gbps(r), |c| {
                format!("{:.2}", busbw_gbps / c)
            }));
        }
        if let Some(expected) = self.expected {
            let e = expected.time_us(report, r);
            cells.push(render::or_dash(e, render::time_us));
            cells.push(render::or_dash(e, |e| render::ratio(time_us / e)));
        }
        cells
    }

    /// Lines under the table: each collective's ceiling, the links it was
    /// computed from, why a collective has none, and the rows above theirs.
    pub fn notes(&self, report: &Report, stat: Stat) -> Vec<String> {
        let Some(links) = &self.ceiling else {
            return Vec::new();
        };
        let (ceilings, without) = describe_ceilings(links, report);
        let mut notes = vec![if ceilings.is_empty() {
            format!(
                "of ceiling: no collective of this report has one; {}",
                describe_links(links)
            )
        } else {
            format!(
                "of ceiling: busbw over {}; {}. NVLS, SHARP and on 2 nodes NCCL's tree all-reduce can exceed it; small sizes never approach it",
                ceilings.join(", "),
                describe_links(links)
            )
        }];
        notes.extend(
            without
                .into_iter()
                .map(|reason| format!("of ceiling: {reason}; its rows show -")),
        );
        let above = report
            .results
            .iter()
            .filter(|r| {
                let busbw = stat
                    .bandwidths_of(r)
                    .unwrap_or((r.algbw_gbps, r.busbw_gbps))
                    .1;
                self.ceiling_gbps(r).is_some_and(|c| busbw > c * 1.02)
            })
            .count();
        if above > 0 {
            notes.push(format!(
                "warning: {above} row(s) above the ceiling: NVLS, SHARP or NCCL's tree on 2 nodes at work, or the link rates are wrong"
            ));
        }
        notes
    }
}

/// The collectives of a report's rows, each once, in order.
fn collectives_of(report: &Report) -> Vec<Collective> {
    let mut collectives: Vec<Collective> = Vec::new();
    for r in &report.results {
        if !collectives.contains(&r.collective) {
            collectives.push(r.collective);
        }
    }
    collectives
}

/// Each of the report's collectives' ceiling over `links` in words
/// (`400.00 GB/s for all_reduce (inter-node bound)`), and why the others
/// have none, once per collective.
pub fn describe_ceilings(links: &LinkCeiling, report: &Report) -> (Vec<String>, Vec<String>) {
    let mut ceilings = Vec::new();
    let mut without = Vec::new();
    for collective in collectives_of(report) {
        match links.busbw_ceiling(collective) {
            Ok((gbps, tier)) => ceilings.push(format!(
                "{} GB/s for {collective} ({} bound)",
                render::gbps(gbps),
                tier.describe()
            )),
            Err(reason) if !without.contains(&reason) => without.push(reason),
            Err(_) => {}
        }
    }
    (ceilings, without)
}

/// The links behind a ceiling in words: the layout, each GPU's link within
/// a node and one node's NICs in total, with what each came from.
pub fn describe_links(links: &LinkCeiling) -> String {
    let tier = |gbps: Option<f64>, basis: &Option<String>, what: &str| match (gbps, basis) {
        (Some(g), Some(b)) => format!("{} GB/s {what} ({b})", render::gbps(g)),
        _ => "-".to_string(),
    };
    let older = if links.node_nic_gbps.is_none() && links.inter_node_gbps.is_some() {
        format!(
            "; an older report's per-GPU share × {} GPU(s)",
            links.gpus_per_node
        )
    } else {
        String::new()
    };
    format!(
        "{} GPU(s) per node × {} node(s); intra-node {}; inter-node {}",
        links.gpus_per_node,
        links.nodes,
        tier(links.intra_node_gbps, &links.intra_node_basis, "per GPU"),
        tier(
            links.node_nic_total_gbps(),
            &links
                .inter_node_basis
                .as_ref()
                .map(|b| format!("{b}{older}")),
            "per node, its NICs in total"
        ),
    )
}
