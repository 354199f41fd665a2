//! Picking all-reduce points out of reports: the world size, the placement,
//! averaged repeats and the rows left out.
use std::path::Path;

use schema::Placement;

use crate::util::{exact_report, report, row, AlphaBeta};

#[test]
fn world_size_is_the_one_given_or_the_only_one() {
    let m = AlphaBeta {
        alpha_s: 1e-5,
        bytes_per_s: 1e9,
    };
    let origin = Path::new("comm.json");
    let both = [exact_report(2, m), exact_report(4, m)];
    let err = model::comm::select_points(&both, None, None, origin)
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "comm.json: all_reduce results for world sizes 2, 4: choose one with --world-size"
    );
    let err = model::comm::select_points(&both, Some(8), None, origin)
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "comm.json: no all_reduce results for --world-size 8 (world sizes present: 2, 4)"
    );
    assert_eq!(
        model::comm::select_points(&both, Some(4), None, origin)
            .unwrap()
            .world_size,
        4
    );
    assert_eq!(
        model::comm::select_points(&both[..1], None, None, origin)
            .unwrap()
            .world_size,
        2
    );
    let err = model::comm::select_points(&[], None, None, origin)
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("comm.json: no all_reduce results"), "{err}");
}

#[test]
fn out_of_place_preferred_duplicates_averaged_empty_rows_dropped_bad_times_refused() {
    let mut chunked = row(4096, 1.0, Placement::Out);
    chunked.chunk_bytes = Some(1024);
    let rep = report(
        2,
        vec![
            row(1024, 10.0, Placement::Out),
            row(1024, 999.0, Placement::In),
            row(2048, 20.0, Placement::Out),
            row(2048, 30.0, Placement::Out),
            row(0, 5.0, Placement::Out),
            chunked,
        ],
    );
    let p = model::comm::select_points(&[rep], None, None, Path::new("c")).unwrap();
    assert_eq!(p.placement, Placement::Out);
    assert_eq!(p.points, [(1024, 10.0), (2048, 25.0)]);
    let notes = p.notes.join(" | ");
    for want in [
        "1 in-place rows ignored",
        "1 chunked",
        "averaged",
        "0 B (5 µs)",
    ] {
        assert!(notes.contains(want), "{want}: {notes}");
    }
    for bad in [0.0, -1.0, f64::INFINITY] {
        let rep = report(
            2,
            vec![
                row(1024, 10.0, Placement::Out),
                row(8192, bad, Placement::Out),
            ],
        );
        let err = model::comm::select_points(&[rep], None, None, Path::new("c"))
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("c: the all_reduce of 8192 bytes has mean time"),
            "{err}"
        );
    }
    let in_only = report(
        2,
        vec![row(8, 1.0, Placement::In), row(16, 2.0, Placement::In)],
    );
    let p = model::comm::select_points(&[in_only], None, None, Path::new("c")).unwrap();
    assert_eq!(p.placement, Placement::In);
    let one = report(2, vec![row(8, 1.0, Placement::Out)]);
    let err = model::comm::select_points(&[one], None, None, Path::new("c"))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("1 usable all_reduce size(s) for world size 2"),
        "{err}"
    );
}

#[test]
fn chunked_rows_alone_are_named_as_such_not_as_missing() {
    let chunked = |total: u64, chunk: u64| {
        let mut r = row(total, 1.0, Placement::Out);
        r.chunk_bytes = Some(chunk);
        r
    };
    let rep = report(2, vec![chunked(4096, 1024), chunked(4096, 2048)]);
    let err = model::comm::select_points(std::slice::from_ref(&rep), None, None, Path::new("c"))
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("c: a chunked all_reduce report (`collbench chunked-all-reduce`)")
            && err.ends_with(
                "measure them with `collbench all-reduce` or nccl-tests' all_reduce_perf"
            ),
        "{err}"
    );
    let err = model::comm::select_collective_points(
        &[rep],
        schema::Collective::AllGather,
        None,
        None,
        model::CommStat::Mean,
        Path::new("c"),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("(it holds chunked all_reduce;"), "{err}");
}

#[test]
fn backends_are_never_averaged_together() {
    let m = AlphaBeta {
        alpha_s: 1e-5,
        bytes_per_s: 1e9,
    };
    let origin = Path::new("course.csv");
    let nccl = exact_report(2, m);
    let mut gloo = exact_report(
        2,
        AlphaBeta {
            alpha_s: 1e-3,
            bytes_per_s: 1e8,
        },
    );
    gloo.config.backend = schema::Backend::Gloo;
    let both = [nccl, gloo];
    let err = model::comm::select_points(&both, None, None, origin)
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "course.csv: results of backends nccl, gloo: choose one with --backend"
    );
    let err = model::comm::select_points(&both, None, Some(schema::Backend::Mpi), origin)
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "course.csv: no results for --backend mpi (backends present: nccl, gloo)"
    );
    let gloo_points =
        model::comm::select_points(&both, None, Some(schema::Backend::Gloo), origin).unwrap();
    let nccl_points =
        model::comm::select_points(&both, None, Some(schema::Backend::Nccl), origin).unwrap();
    // The same sizes, each backend's own times: gloo's are the slower ones.
    assert_eq!(gloo_points.points.len(), nccl_points.points.len());
    assert!(gloo_points
        .points
        .iter()
        .zip(&nccl_points.points)
        .all(|(g, n)| g.0 == n.0 && g.1 > n.1));
}

#[test]
fn stat_picks_the_mean_median_or_min_and_names_what_is_missing() {
    use model::ddp::analyze;
    use model::CommStat;
    let stats = |mean: f64| schema::TimeStats {
        mean,
        min: Some(mean / 4.0),
        p50: Some(mean / 2.0),
        ..schema::TimeStats::mean_only(mean)
    };
    let rows = [1u64 << 10, 1 << 15, 1 << 20]
        .iter()
        .map(|&b| {
            let mut r = row(b, b as f64, Placement::Out);
            r.time_us = stats(b as f64);
            r
        })
        .collect();
    let rep = report(4, rows);
    let pick = |stat| {
        model::comm::select_points_by(std::slice::from_ref(&rep), None, None, stat, Path::new("c"))
            .unwrap()
            .points
    };
    assert_eq!(
        pick(CommStat::Mean),
        [(1024, 1024.0), (1 << 15, 32768.0), (1 << 20, 1048576.0)]
    );
    assert_eq!(
        pick(CommStat::Median),
        [(1024, 512.0), (1 << 15, 16384.0), (1 << 20, 524288.0)]
    );
    assert_eq!(
        pick(CommStat::Min),
        [(1024, 256.0), (1 << 15, 8192.0), (1 << 20, 262144.0)]
    );

    let profile = crate::util::data("profile.csv");
    let a = model::ddp::DdpOptions {
        stat: CommStat::Median,
        ..crate::util::options(&profile, "ar.json")
    };
    let analysis = analyze(&a, std::slice::from_ref(&rep)).unwrap();
    assert_eq!(analysis.comm_stat, "median");
    // Mean-only rows (an imported log) have no median: said, with the flag.
    let m = AlphaBeta {
        alpha_s: 1e-5,
        bytes_per_s: 1e9,
    };
    let err = analyze(&a, &[exact_report(4, m)]).unwrap_err().to_string();
    assert_eq!(
        err,
        "ar.json: --stat median: the all_reduce of 1024 bytes has no median time (imported logs and the course CSV give the mean only); use --stat mean"
    );
}
