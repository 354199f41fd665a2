//! Measured DDP times (`bucket_bytes,time_s`, what scripts/ddp_bucket_sweep.py
//! writes) and their comparison with the prediction: error per cap, MAPE,
//! the measured best and near-best range, and whether the predicted b* falls
//! in it.
use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use super::sweep::{near_within, Best, NearBest, Predictor, NEAR_BEST};
use crate::csv::{parse_count, parse_seconds, read_table};
use crate::DdpError;

/// One measured cap.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MeasuredPoint {
    pub bucket_bytes: u64,
    pub time_s: f64,
    /// Buckets DDP reported, when the file has a `buckets` column.
    pub buckets: Option<u64>,
    /// Standard error of `time_s`, `time_sd_s / sqrt(iterations)`, when the
    /// file has both columns (scripts/ddp_bucket_sweep.py writes them).
    pub std_error_s: Option<f64>,
    /// Standard deviation of one pass (`time_sd_s`; pooled over repeated
    /// rows), when the file gives it.
    pub time_sd_s: Option<f64>,
}

/// Per cap: sum of times, count, buckets, sum of squared standard errors
/// and sum of squared deviations (each None once a row lacks one).
type CapSums = (f64, usize, Option<u64>, Option<f64>, Option<f64>);

/// Reads the measured CSV (extra columns are ignored). A cap listed more than
/// once gets the mean of its times.
pub fn read_measured(path: &Path) -> Result<(Vec<MeasuredPoint>, Vec<String>), DdpError> {
    let table = read_table(path)?;
    let bytes_col = table.require(&["bucket_bytes"])?;
    let time_col = table.require(&["time_s"])?;
    let buckets_col = table.column(&["buckets"]);
    let sd_col = table.column(&["time_sd_s"]);
    let spread_cols = sd_col.zip(table.column(&["iterations"]));
    table.require_rows()?;
    let mut by_cap: BTreeMap<u64, CapSums> = BTreeMap::new();
    for row in &table.rows {
        let text = row.get(bytes_col);
        let bytes = parse_count("bucket_bytes", text)
            .ok()
            .or_else(|| schema::units::parse_bytes(text).ok())
            .filter(|&b| b > 0)
            .ok_or_else(|| {
                table.error(
                    row,
                    format!("bucket_bytes {text:?} is not a positive byte count"),
                )
            })?;
        let time = parse_seconds("time_s", row.get(time_col))
            .and_then(|t| {
                if t > 0.0 {
                    Ok(t)
                } else {
                    Err(format!("time_s {:?} is not positive", row.get(time_col)))
                }
            })
            .map_err(|m| table.error(row, m))?;
        let buckets = match buckets_col.map(|c| row.get(c)) {
            None | Some("") => None,
            Some(t) => Some(parse_count("buckets", t).map_err(|m| table.error(row, m))?),
        };
        let std_error = match spread_cols.map(|(sd, n)| (row.get(sd), row.get(n))) {
            None | Some(("", _)) | Some((_, "")) => None,
            Some((sd, n)) => {
                let sd = parse_seconds("time_sd_s", sd).map_err(|m| table.error(row, m))?;
                let n = parse_count("iterations", n).map_err(|m| table.error(row, m))?;
                if sd < 0.0 || n == 0 {
                    return Err(table.error(
                        row,
                        format!("time_sd_s {sd} with iterations {n}: need a spread of at least 0 over at least one iteration"),
                    ));
                }
                Some(sd / (n as f64).sqrt())
            }
        };
        let sd = match sd_col.map(|c| row.get(c)) {
            None | Some("") => None,
            Some(t) => match parse_seconds("time_sd_s", t) {
                Ok(sd) if sd >= 0.0 => Some(sd),
                Ok(sd) => return Err(table.error(row, format!("time_sd_s {sd} is negative"))),
                Err(m) => return Err(table.error(row, m)),
            },
        };
        let entry = by_cap
            .entry(bytes)
            .or_insert((0.0, 0, buckets, Some(0.0), Some(0.0)));
        entry.0 += time;
        entry.1 += 1;
        entry.3 = entry.3.zip(std_error).map(|(sum, se)| sum + se * se);
        entry.4 = entry.4.zip(sd).map(|(sum, sd)| sum + sd * sd);
    }
    let repeated = by_cap.values().filter(|e| e.1 > 1).count();
    let notes = if repeated > 0 {
        vec![format!(
            "{}: {repeated} caps appear more than once; their times are averaged",
            path.display()
        )]
    } else {
        Vec::new()
    };
    let points = by_cap
        .into_iter()
        .map(
            |(bucket_bytes, (sum, n, buckets, squares, deviations))| MeasuredPoint {
                bucket_bytes,
                time_s: sum / n as f64,
                buckets,
                // The mean of n independent means.
                std_error_s: squares.map(|s| s.sqrt() / n as f64),
                time_sd_s: deviations.map(|s| (s / n as f64).sqrt()),
            },
        )
        .collect();
    Ok((points, notes))
}

/// A measured cap next to its prediction.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ComparedPoint {
    pub bucket_bytes: u64,
    pub time_s: f64,
    pub predicted_time_s: f64,
    /// (predicted − measured) / measured, in percent.
    pub error_pct: f64,
    pub buckets: Option<u64>,
    pub predicted_buckets: usize,
    pub std_error_s: Option<f64>,
    pub time_sd_s: Option<f64>,
    /// The prediction uses all-reduce times outside the measured sizes.
    pub extrapolated: bool,
}

/// The near-best check again, allowing for the measurements' noise: a cap
/// counts as near best when its time exceeds the best's by at most 1 % plus
/// twice the standard error of the difference. Present when every measured
/// cap has a standard error.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct WithinNoise {
    pub near_best: NearBest,
    pub predicted_best_in_near_best: bool,
    pub same_buckets_as_predicted_best: Option<u64>,
    pub predicted_best_of_measured_caps_is_near_best: bool,
}

/// The compute slowdown that would minimise the MAPE, and that MAPE.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SlowdownFit {
    pub compute_slowdown: f64,
    pub mape_pct: f64,
}

/// The prediction against the measurements.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub file: String,
    pub points: Vec<ComparedPoint>,
    /// Mean absolute percentage error over the measured caps.
    pub mape_pct: f64,
    /// The measured best cap.
    pub best: Best,
    /// Measured caps within 1 % of the measured best.
    pub near_best: NearBest,
    /// Whether the predicted b* (from the sweep) is a measured cap within 1 %
    /// of the measured best, lies between two neighbouring measured caps
    /// that both are, or forms exactly the same buckets as one of them (caps
    /// between two bucket boundaries are one and the same DDP configuration).
    pub predicted_best_in_near_best: bool,
    /// That measured cap, when b* itself is outside the range.
    pub same_buckets_as_predicted_best: Option<u64>,
    /// Among the measured caps only, the one the model predicts fastest (of
    /// caps tied there, as caps forming the same buckets are, a near-best
    /// one if any)...
    pub predicted_best_of_measured_caps: u64,
    /// ...and whether it is measured within 1 % of the measured best.
    pub predicted_best_of_measured_caps_is_near_best: bool,
    /// Diagnostic: the compute slowdown (1 to 4, steps of 0.01) fitting these
    /// measurements best, with the communication slowdown given. Not used
    /// unless passed as --compute-slowdown.
    pub fitted: SlowdownFit,
    /// The same checks allowing for noise, when the file gives the spread.
    pub within_noise: Option<WithinNoise>,
}

fn mape(points: &[ComparedPoint]) -> f64 {
    points.iter().map(|p| p.error_pct.abs()).sum::<f64>() / points.len() as f64
}

fn compare_points(measured: &[MeasuredPoint], predictor: &Predictor<'_>) -> Vec<ComparedPoint> {
    measured
        .iter()
        .map(|m| {
            let p = predictor.predict(m.bucket_bytes);
            ComparedPoint {
                bucket_bytes: m.bucket_bytes,
                time_s: m.time_s,
                predicted_time_s: p.time_s,
                error_pct: (p.time_s - m.time_s) / m.time_s * 100.0,
                buckets: m.buckets,
                predicted_buckets: p.buckets,
                std_error_s: m.std_error_s,
                time_sd_s: m.time_sd_s,
                extrapolated: p.extrapolated,
            }
        })
        .collect()
}

/// Compares `measured` (non-empty) with `predictor`, whose sweep chose
/// `predicted_best`.
pub fn compare(
    file: &Path,
    measured: &[MeasuredPoint],
    predictor: &Predictor<'_>,
    predicted_best: u64,
) -> Comparison {
    let mut points = compare_points(measured, predictor);
    points.sort_by_key(|p| p.bucket_bytes);
    let measured_best = points
        .iter()
        .min_by(|a, b| a.time_s.total_cmp(&b.time_s))
        .map(|p| Best {
            cap_bytes: p.bucket_bytes,
            time_s: p.time_s,
            extrapolated: false,
        })
        .expect("measured points are not empty");
    let near_limit = measured_best.time_s * (1.0 + NEAR_BEST);
    let is_near = |p: &ComparedPoint| p.time_s <= near_limit;
    let measured_near = near_range(&points, is_near).expect("the best is near best");
    let strict = Checks::new(&points, is_near, predictor, predicted_best);
    let mut fitted = SlowdownFit {
        compute_slowdown: 1.0,
        mape_pct: f64::INFINITY,
    };
    for step in 0..=300 {
        let f = 1.0 + f64::from(step) / 100.0;
        let m = mape(&compare_points(measured, &predictor.with_slowdown(f)));
        if m < fitted.mape_pct {
            fitted = SlowdownFit {
                compute_slowdown: f,
                mape_pct: m,
            };
        }
    }
    Comparison {
        file: file.display().to_string(),
        mape_pct: mape(&points),
        best: measured_best,
        near_best: measured_near,
        predicted_best_in_near_best: strict.best_inside,
        same_buckets_as_predicted_best: strict.same_buckets,
        predicted_best_of_measured_caps: strict.pick,
        predicted_best_of_measured_caps_is_near_best: strict.pick_near,
        fitted,
        within_noise: within_noise(&points, measured_best, predictor, predicted_best),
        points,
    }
}

/// The smallest and largest measured cap `is_near` accepts.
fn near_range(
    points: &[ComparedPoint],
    is_near: impl Fn(&ComparedPoint) -> bool,
) -> Option<NearBest> {
    near_within(points.iter().map(|p| (p.bucket_bytes, is_near(p))))
}

/// Where the model's choices fall against one notion of "near best".
struct Checks {
    /// b* is a near-best measured cap, lies between two neighbouring measured
    /// caps that are both near best, or forms the same buckets as a near-best
    /// measured cap.
    best_inside: bool,
    /// That cap, in the last case.
    same_buckets: Option<u64>,
    /// The measured cap the model predicts fastest (of caps tied there, as
    /// caps forming the same buckets are, a near-best one if any)...
    pick: u64,
    /// ...and whether it is near best.
    pick_near: bool,
}

impl Checks {
    /// `points` sorted by cap, not empty.
    fn new(
        points: &[ComparedPoint],
        is_near: impl Fn(&ComparedPoint) -> bool,
        predictor: &Predictor<'_>,
        predicted_best: u64,
    ) -> Checks {
        let below = points.iter().rfind(|p| p.bucket_bytes <= predicted_best);
        let above = points.iter().find(|p| p.bucket_bytes >= predicted_best);
        let bracketed = matches!((below, above), (Some(b), Some(a)) if is_near(b) && is_near(a));
        let same_buckets = if bracketed {
            None
        } else {
            let buckets = predictor.buckets(predicted_best);
            points
                .iter()
                .filter(|p| is_near(p))
                .map(|p| p.bucket_bytes)
                .find(|&cap| predictor.buckets(cap) == buckets)
        };
        let fastest = points
            .iter()
            .map(|p| p.predicted_time_s)
            .min_by(f64::total_cmp)
            .expect("measured points are not empty");
        let tied = points.iter().filter(|p| p.predicted_time_s == fastest);
        let pick = tied
            .clone()
            .find(|p| is_near(p))
            .or_else(|| tied.clone().next())
            .expect("the fastest is among the points");
        Checks {
            best_inside: bracketed || same_buckets.is_some(),
            same_buckets,
            pick: pick.bucket_bytes,
            pick_near: is_near(pick),
        }
    }
}

/// The near-best checks with 1 % plus two standard errors of the difference
/// from the measured best; None unless every point has a standard error.
fn within_noise(
    points: &[ComparedPoint],
    best: Best,
    predictor: &Predictor<'_>,
    predicted_best: u64,
) -> Option<WithinNoise> {
    if points.iter().any(|p| p.std_error_s.is_none()) {
        return None;
    }
    let best_error = points
        .iter()
        .find(|p| p.bucket_bytes == best.cap_bytes)?
        .std_error_s?;
    let is_near = |p: &ComparedPoint| {
        let se = p.std_error_s.unwrap_or(0.0);
        p.time_s - best.time_s <= best.time_s * NEAR_BEST + 2.0 * se.hypot(best_error)
    };
    let near = near_range(points, is_near)?;
    let checks = Checks::new(points, is_near, predictor, predicted_best);
    Some(WithinNoise {
        near_best: near,
        predicted_best_in_near_best: checks.best_inside,
        same_buckets_as_predicted_best: checks.same_buckets,
        predicted_best_of_measured_caps_is_near_best: checks.pick_near,
    })
}
