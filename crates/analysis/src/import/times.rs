//! What a measured time may be, in every input format: finite, positive and
//! within physical bounds after conversion to µs. A time outside them is no
//! measurement (an infinite time cannot even be written back as JSON, and a
//! time of 1e-320 s gives an infinite bandwidth), so it is refused with the
//! file, the row and the value, never tabulated, fitted or dropped silently.
use schema::histogram::Distribution;
use schema::{CaseResult, Delivery, Report, TimeStats};

/// The shortest time accepted: 1 ns. No collective completes faster, and
/// nccl-tests prints times in µs with two decimals.
pub(crate) const MIN_TIME_US: f64 = 1e-3;
/// The longest time accepted: 1e12 µs, about 11.6 days.
pub(crate) const MAX_TIME_US: f64 = 1e12;

/// Checks a mean (or single) time in µs; `what` names the field and the value
/// as written, with its conversion when it was not in µs
/// (`average_time "1e308" s = inf µs`).
pub(crate) fn check_time_us(what: &str, time_us: f64) -> Result<(), String> {
    if time_us.is_finite() && (MIN_TIME_US..=MAX_TIME_US).contains(&time_us) {
        Ok(())
    } else {
        Err(format!(
            "{what}: not a measured time (accepted: {MIN_TIME_US:e} µs = 1 ns to {MAX_TIME_US:e} µs ≈ 11.6 days)"
        ))
    }
}

/// Checks a statistic that may be zero (a spread, a minimum of a rounded
/// sample): finite, not negative, at most [`MAX_TIME_US`].
pub(crate) fn check_spread_us(what: &str, value_us: f64) -> Result<(), String> {
    if value_us.is_finite() && (0.0..=MAX_TIME_US).contains(&value_us) {
        Ok(())
    } else {
        Err(format!("{what}: not a time from 0 to {MAX_TIME_US:e} µs"))
    }
}

/// Checks every time and bandwidth of one result: each statistic that is a
/// time (any of them can be `--stat`) is a measured time, each spread a
/// finite non-negative number, each histogram readable and free of 0 ns.
pub(crate) fn check_result(r: &CaseResult) -> Result<(), String> {
    let t = &r.time_us;
    let times = [
        ("time_us.mean", Some(t.mean)),
        ("time_us.min", t.min),
        ("time_us.p50", t.p50),
        ("time_us.p95", t.p95),
        ("time_us.p99", t.p99),
        ("time_us.max", t.max),
    ];
    for (name, value) in times {
        if let Some(v) = value {
            check_time_us(&format!("{name} {v}"), v)?;
        }
    }
    let spreads = [
        ("time_us.stddev", t.stddev),
        ("wall_time_us", r.wall_time_us),
        ("skew_us", r.skew_us),
    ];
    for (name, value) in spreads {
        if let Some(v) = value {
            check_spread_us(&format!("{name} {v}"), v)?;
        }
    }
    for (name, value) in [("algbw_gbps", r.algbw_gbps), ("busbw_gbps", r.busbw_gbps)] {
        if !(value.is_finite() && value >= 0.0) {
            return Err(format!(
                "{name} {value} is not a finite, non-negative bandwidth"
            ));
        }
    }
    let samples = r.iteration_max_us.iter().flatten();
    let samples = samples.chain(r.samples_us.iter().flatten().flatten());
    let per_rank = r
        .per_rank
        .iter()
        .flat_map(|s| [Some(s.mean_us), s.min_us, s.p50_us, s.max_us])
        .flatten();
    if let Some(bad) = samples
        .copied()
        .chain(per_rank)
        .find(|v| !(v.is_finite() && (MIN_TIME_US..=MAX_TIME_US).contains(v)))
    {
        return Err(format!(
            "a per-iteration or per-rank time is {bad:e} µs: not a measured time (accepted: {MIN_TIME_US:e} µs = 1 ns to {MAX_TIME_US:e} µs)"
        ));
    }
    if let Some(h) = &r.histograms {
        for (name, text) in [
            ("histograms.iteration_max", &h.iteration_max),
            ("histograms.all_ranks", &h.all_ranks),
        ] {
            let d = Distribution::decode(text).map_err(|e| format!("{name}: {e}"))?;
            if d.count() > 0 && d.min_us() <= 0.0 {
                return Err(format!(
                    "{name}: holds a time of 0 ns (iteration times are positive)"
                ));
            }
        }
    }
    Ok(())
}

/// Checks every result of `report` (and every host-broadcast row), naming
/// the first bad one by its index, and the report against itself.
pub(crate) fn check_report(report: &Report) -> Result<(), String> {
    super::consistency::check_consistency(report)?;
    for (i, r) in report.results.iter().enumerate() {
        check_result(r).map_err(|m| {
            format!(
                "results[{i}] ({} {} {} bytes): {m}",
                r.collective, r.placement, r.bytes
            )
        })?;
    }
    for (i, d) in report.deliveries.iter().flatten().enumerate() {
        check_delivery(d).map_err(|m| {
            format!(
                "deliveries[{i}] ({} {} {} bytes): {m}",
                d.strategy, d.host_memory, d.bytes
            )
        })?;
    }
    Ok(())
}

/// Checks every time and bandwidth of one host-broadcast row.
fn check_delivery(d: &Delivery) -> Result<(), String> {
    if d.gpus == 0 {
        return Err("gpus 0: a delivery reaches at least one GPU".to_string());
    }
    let mut stats: Vec<(&str, &TimeStats)> = vec![
        ("time_us", &d.time_us),
        ("host_to_gpu.time_us", &d.host_to_gpu.time_us),
    ];
    stats.extend(
        d.gpu_to_gpu
            .as_ref()
            .map(|r| ("gpu_to_gpu.time_us", &r.time_us)),
    );
    for (name, t) in stats {
        check_time_us(&format!("{name}.mean {}", t.mean), t.mean)?;
        for v in [t.min, t.p50, t.p95, t.p99, t.max, t.stddev]
            .into_iter()
            .flatten()
        {
            check_spread_us(&format!("{name} {v}"), v)?;
        }
    }
    if let Some(&bad) = d
        .iteration_us
        .iter()
        .find(|v| !(v.is_finite() && (0.0..=MAX_TIME_US).contains(*v)))
    {
        return Err(format!(
            "iteration_us {bad:e}: not a time from 0 to {MAX_TIME_US:e} µs"
        ));
    }
    let bandwidths = [d.delivered_gbps, d.host_to_gpu.gbps]
        .into_iter()
        .chain(d.gpu_to_gpu.map(|r| r.gbps));
    if let Some(bad) = bandwidths
        .into_iter()
        .find(|v| !(v.is_finite() && *v >= 0.0))
    {
        return Err(format!(
            "{bad} GB/s is not a finite, non-negative bandwidth"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds() {
        assert!(check_time_us("t", 1.0).is_ok());
        assert!(check_time_us("t", MIN_TIME_US).is_ok());
        assert!(check_time_us("t", MAX_TIME_US).is_ok());
        for bad in [0.0, -1.0, 1e-314, 1e13, f64::INFINITY, f64::NAN] {
            let err = check_time_us("average_time \"x\" s", bad).unwrap_err();
            assert!(
                err.starts_with("average_time \"x\" s: not a measured"),
                "{err}"
            );
        }
        assert!(check_spread_us("sd", 0.0).is_ok());
        assert!(check_spread_us("sd", -0.5).is_err());
    }
}
