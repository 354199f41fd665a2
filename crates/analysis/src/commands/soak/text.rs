//! The text of `soak`: the run's title, a small table per cycle, the
//! whole-run table and the slow cycles, one line per size.
use analysis::render::{self, or_dash, Align, Table};
use analysis::soak::{Cycle, Measurement, SlowCycle, Soak};
use analysis::stat::{iterations_needed, percentile_is_max};
use schema::Report;

use super::super::{ranks, Input};

/// Every table and line of one run.
pub fn text(input: &Input, soak: &Soak) -> String {
    let mut out = format!("{}\n", title(input, soak));
    let both_placements = input.report.config.placements.len() > 1;
    for cycle in &soak.cycles {
        out.push('\n');
        out.push_str(&cycle_heading(cycle, soak));
        out.push('\n');
        let time = format!("{} (us)", soak.stat);
        let mut table = Table::new(&[
            ("placement", Align::Left),
            ("size", Align::Right),
            (time.as_str(), Align::Right),
            ("busbw (GB/s)", Align::Right),
        ]);
        for row in &cycle.rows {
            table.push(vec![
                row.measurement.placement.to_string(),
                row.measurement.size(),
                render::time_us(row.time_us),
                bandwidth(row.busbw_gbps),
            ]);
        }
        out.push_str(&table.text());
    }
    out.push('\n');
    out.push_str(&whole_run(soak));
    out.push('\n');
    out.push_str(&slow_lines(soak, both_placements));
    out
}

/// `soak.json: collbench 0.1.0, mpi, 2 ranks, all_reduce f32, timing
/// host_clock, 4 of 4 cycles, complete, times are the mean of each size's
/// iterations`.
fn title(input: &Input, soak: &Soak) -> String {
    let r: &Report = &input.report;
    let tool = match &r.tool.version {
        Some(v) => format!("{} {v}", r.tool.name),
        None => r.tool.name.clone(),
    };
    let shown = soak.cycles.len();
    let cycles = match soak.cycles_asked {
        Some(0) => format!("{shown} cycles (run until stopped)"),
        Some(asked) => format!("{shown} of {asked} cycles"),
        None => format!("{shown} cycles"),
    };
    let what = match r.results.first() {
        Some(first) => format!("{} {}, ", first.collective, first.dtype),
        None => String::new(),
    };
    format!(
        "{}: {tool}, {}, {}, {what}timing {}, {cycles}, {}, times are the {} of each size's iterations",
        input.label,
        r.config.backend,
        ranks(r.environment.world_size),
        r.config.timing,
        r.run.status,
        soak.stat
    )
}

/// `cycle 2, started 2026-11-24T03:45:53.412Z (+0.41 s)`, and whether the
/// run stopped during it.
fn cycle_heading(cycle: &Cycle, soak: &Soak) -> String {
    let started = match (&cycle.started_at, cycle.started_s) {
        (Some(at), Some(s)) => format!(", started {at} ({})", elapsed(s)),
        (Some(at), None) => format!(", started {at}"),
        _ => String::new(),
    };
    let incomplete = if cycle.complete {
        String::new()
    } else {
        let full = soak.cycles.iter().map(|c| c.rows.len()).max().unwrap_or(0);
        format!(
            ": incomplete, {} of {full} measurements (the run stopped during it)",
            cycle.rows.len()
        )
    };
    format!("cycle {}{started}{incomplete}", cycle.cycle)
}

/// Time since the run started: `+0.41 s`, `+12.5 min`, `+3.25 h`.
fn elapsed(seconds: f64) -> String {
    if seconds < 120.0 {
        format!("+{seconds:.2} s")
    } else if seconds < 7200.0 {
        format!("+{:.1} min", seconds / 60.0)
    } else {
        format!("+{:.2} h", seconds / 3600.0)
    }
}

/// GB/s as `table` shows them (two decimals), or three significant digits
/// below 1, so that a small size's bandwidth and its changes are not `0.00`.
fn bandwidth(gbps: f64) -> String {
    if gbps > 0.0 && gbps < 1.0 {
        let decimals = (2.0 - gbps.log10().floor()) as usize;
        format!("{gbps:.decimals$}")
    } else {
        render::gbps(gbps)
    }
}

/// The whole-run table: every cycle's iterations merged per measurement.
fn whole_run(soak: &Soak) -> String {
    let mut out = format!(
        "whole run: {} cycles, each measurement's iterations of every cycle merged\n",
        soak.cycles.len()
    );
    let mut table = Table::new(&[
        ("placement", Align::Left),
        ("size", Align::Right),
        ("cycles", Align::Right),
        ("iters", Align::Right),
        ("p50 (us)", Align::Right),
        ("p99 (us)", Align::Right),
        ("max (us)", Align::Right),
        ("busbw min (GB/s)", Align::Right),
        ("busbw median (GB/s)", Align::Right),
        ("busbw max (GB/s)", Align::Right),
    ]);
    let mut withheld = false;
    let mut unkept = false;
    for w in &soak.whole_run {
        let p99 = w
            .p99_us
            .filter(|_| !w.iterations.is_some_and(|n| percentile_is_max(99.0, n)));
        withheld |= w.p99_us.is_some() && p99.is_none();
        unkept |= w.iterations.is_none();
        table.push(vec![
            w.measurement.placement.to_string(),
            w.measurement.size(),
            w.cycles.to_string(),
            or_dash(w.iterations, |n| n.to_string()),
            or_dash(w.p50_us, render::time_us),
            or_dash(p99, render::time_us),
            or_dash(w.max_us, render::time_us),
            bandwidth(w.busbw_min_gbps),
            bandwidth(w.busbw_median_gbps),
            bandwidth(w.busbw_max_gbps),
        ]);
    }
    out.push_str(&table.text());
    if withheld {
        out.push_str(&format!(
            "p99 shown from {} iterations on: with fewer it is the slowest iteration (max)\n",
            iterations_needed(99.0)
        ));
    }
    if unkept {
        out.push_str("-: no per-iteration times kept (timing wall), so no whole-run percentiles\n");
    }
    out
}

/// One line per measurement with slow cycles, naming each cycle and when
/// it ran; or one line saying there were none.
fn slow_lines(soak: &Soak, both_placements: bool) -> String {
    let threshold = format!("{:.0} %", soak.slow_below_median * 100.0);
    if soak.slow.is_empty() {
        return format!(
            "no slow cycle: every size's busbw stayed within {threshold} of its median over cycles\n"
        );
    }
    let mut out =
        format!("slow cycles: busbw more than {threshold} below the size's median over cycles\n");
    let mut groups: Vec<(Measurement, Vec<&SlowCycle>)> = Vec::new();
    for slow in &soak.slow {
        match groups.iter_mut().find(|g| g.0 == slow.measurement) {
            Some(group) => group.1.push(slow),
            None => groups.push((slow.measurement, vec![slow])),
        }
    }
    for (m, cycles) in groups {
        let name = if both_placements {
            format!("{} {}", m.size(), m.placement.long_name())
        } else {
            m.size()
        };
        let median = cycles[0].median_busbw_gbps;
        let shown = worst(&cycles, SLOW_SHOWN);
        let mut each: Vec<String> = shown
            .iter()
            .map(|s| {
                let at = match (&s.measured_at, s.elapsed_s) {
                    (Some(at), Some(e)) => format!(" at {at} ({})", elapsed(e)),
                    (Some(at), None) => format!(" at {at}"),
                    _ => String::new(),
                };
                format!(
                    "cycle {}{at}: {} GB/s ({:.0} % below)",
                    s.cycle,
                    bandwidth(s.busbw_gbps),
                    s.below_median * 100.0
                )
            })
            .collect();
        if cycles.len() > shown.len() {
            each.push(format!(
                "and {} more, less slow (--json lists every one)",
                cycles.len() - shown.len()
            ));
        }
        let measured = soak
            .whole_run
            .iter()
            .find(|w| w.measurement == m)
            .map_or(0, |w| w.cycles);
        out.push_str(&format!(
            "{name} (median {} GB/s, {} of {measured} cycles slow): {}\n",
            bandwidth(median),
            cycles.len(),
            each.join("; ")
        ));
    }
    out
}

/// Slow cycles named per size in the text; a run of hours may have
/// hundreds.
const SLOW_SHOWN: usize = 10;

/// The `n` slowest of `cycles` (lowest busbw against the median), in cycle
/// order.
fn worst<'a>(cycles: &[&'a SlowCycle], n: usize) -> Vec<&'a SlowCycle> {
    let mut worst = cycles.to_vec();
    worst.sort_by(|a, b| b.below_median.total_cmp(&a.below_median));
    worst.truncate(n);
    worst.sort_by_key(|s| s.cycle);
    worst
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_bandwidths_keep_three_digits() {
        assert_eq!(bandwidth(0.0033502), "0.00335");
        assert_eq!(bandwidth(0.42), "0.420");
        assert_eq!(bandwidth(3.456), "3.46");
        assert_eq!(bandwidth(0.0), "0.00");
        assert_eq!(bandwidth(1234.5), "1234.5");
    }

    #[test]
    fn elapsed_times_pick_a_unit() {
        assert_eq!(elapsed(0.414), "+0.41 s");
        assert_eq!(elapsed(750.0), "+12.5 min");
        assert_eq!(elapsed(11_700.0), "+3.25 h");
    }
}
