//! The report format against a golden file: it reads, writes back
//! byte-identical, and files of another version are refused with a clear error.
use schema::{Report, SchemaError};
use std::path::Path;

fn data(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

#[test]
fn golden_report_round_trips_byte_identical() {
    let path = data("report-v1.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let report = Report::read(&path).unwrap();
    assert_eq!(report.environment.world_size, 2);
    assert_eq!(report.results.len(), 2);
    assert_eq!(report.to_json(), text);
}

#[test]
fn reports_written_before_the_histograms_still_read() {
    let report = Report::read(&data("report-v1-before-histograms.json")).unwrap();
    let r = &report.results[0];
    assert_eq!(
        (&r.histograms, &r.cycle, &r.measured_at),
        (&None, &None, &None)
    );
    assert_eq!(
        (report.config.cycles, report.run.cycles_completed),
        (None, None)
    );
    // Nor the iteration count per row, nor `-n auto`'s fields.
    assert_eq!((r.iters, r.rse_pct, r.stop), (None, None, None));
    assert_eq!(report.config.auto_iters, None);
}

/// `--nccl-estimate`'s fields: the row's `nccl_estimate_us` and the
/// launch's `nccl_estimate` and `allocator` read and write back as they are.
#[test]
fn nccl_estimate_and_allocator_fields_read_and_write_back() {
    let text = std::fs::read_to_string(data("report-v1.json"))
        .unwrap()
        .replacen(
            "\"measured_at\": \"2026-11-22T10:00:04.512Z\"",
            "\"measured_at\": \"2026-11-22T10:00:04.512Z\",\n      \"nccl_estimate_us\": 12.5",
            1,
        );
    assert!(text.contains("nccl_estimate_us"));
    let mut report = Report::from_json(&text, Path::new("estimate.json")).unwrap();
    assert_eq!(report.results[0].nccl_estimate_us, Some(12.5));
    assert_eq!(report.results[1].nccl_estimate_us, None);
    assert_eq!(report.to_json(), text);
    report.config.launch = Some(schema::Launch {
        gpus_per_process: 1,
        graph_launches: 0,
        registration: schema::Registration::None,
        allocator: Some(schema::BufferAllocator::CuMemAlloc),
        nccl_estimate: true,
        calls: "ncclAllReduce".to_string(),
    });
    let written = report.to_json();
    assert!(
        written.contains("\"allocator\": \"cuMemAlloc\""),
        "{written}"
    );
    assert!(written.contains("\"nccl_estimate\": true"), "{written}");
    let back = Report::from_json(&written, Path::new("estimate.json")).unwrap();
    assert_eq!(back.config.launch, report.config.launch);
}

#[test]
fn auto_iteration_fields_read_and_write_back() {
    let text = std::fs::read_to_string(data("report-v1.json"))
        .unwrap()
        .replacen(
            "\"iters\": 2,",
            "\"iters\": null,",
            1,
        )
        .replacen(
            "\"blocking\": false\n  },",
            "\"blocking\": false,\n    \"auto_iters\": {\n      \"target_rse_pct\": 1.0,\n      \"time_budget_s\": 0.5,\n      \"min_iters\": 20,\n      \"max_iters\": 10000\n    }\n  },",
            1,
        )
        .replacen(
            "\"measured_at\": \"2026-11-22T10:00:04.512Z\"",
            "\"measured_at\": \"2026-11-22T10:00:04.512Z\",\n      \"iters\": 2,\n      \"rse_pct\": 33.3,\n      \"stop\": \"budget\"",
            1,
        );
    let report = Report::from_json(&text, Path::new("auto.json")).unwrap();
    let auto = report.config.auto_iters.unwrap();
    assert_eq!(report.config.iters, None);
    assert_eq!(
        (
            auto.target_rse_pct,
            auto.time_budget_s,
            auto.min_iters,
            auto.max_iters
        ),
        (1.0, 0.5, 20, 10000)
    );
    let r = &report.results[0];
    assert_eq!(
        (r.iters, r.rse_pct, r.stop),
        (Some(2), Some(33.3), Some(schema::Stop::Budget))
    );
    assert_eq!(report.to_json(), text);
    // An unknown reason is refused, naming the field's accepted values.
    let bad = text.replacen("\"budget\"", "\"tired\"", 1);
    let err = Report::from_json(&bad, Path::new("bad.json")).unwrap_err();
    assert!(err.to_string().contains("tired"), "{err}");
}

#[test]
fn the_golden_histograms_decode_to_the_samples_beside_them() {
    let report = Report::read(&data("report-v1.json")).unwrap();
    let r = &report.results[0];
    let h = r.histograms.as_ref().unwrap();
    let maxima = schema::histogram::Distribution::decode(&h.iteration_max).unwrap();
    let all = schema::histogram::Distribution::decode(&h.all_ranks).unwrap();
    assert_eq!((maxima.count(), all.count()), (2, 4));
    // Within the 0.05 % of a bucket's middle: 4 000 ns sits in a 2 ns bucket.
    let close = |got: f64, want: f64| (got - want).abs() <= 5e-4 * want;
    assert!(close(maxima.min_us(), 2.0) && close(maxima.max_us(), 4.0));
    assert!(close(all.min_us(), 1.0) && close(all.percentile_us(50.0), 2.0));
}

#[test]
fn host_broadcast_report_round_trips_byte_identical() {
    let path = data("report-v1-host-broadcast.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let report = Report::read(&path).unwrap();
    assert_eq!(report.config.benchmark, schema::Benchmark::HostBroadcast);
    assert!(report.results.is_empty());
    let rows = report.deliveries.as_deref().unwrap();
    assert_eq!(rows.len(), 2);
    let pipelined = &rows[1];
    assert_eq!(pipelined.strategy, schema::DeliveryStrategy::Pipelined);
    assert_eq!(
        (pipelined.chunk_bytes, pipelined.chunks),
        (Some(8 << 20), Some(4))
    );
    assert!(pipelined.peer_access[0].direct);
    assert_eq!(pipelined.over_host_copy(), 1.25);
    assert_eq!(report.to_json(), text);
    // The recorded links are the ones its topology gives.
    let topology = report.environment.topology.as_deref().unwrap();
    let computed = schema::ceiling_from_topology(topology, 2, 1).unwrap();
    let recorded = report.environment.link_ceiling.clone().unwrap();
    assert_eq!(
        schema::LinkCeiling {
            busbw_gbps: None,
            bound: None,
            ..recorded
        },
        computed
    );
    assert_eq!(topology[0].gpus[0].pcie_gen, Some(5));
}

#[test]
fn reports_of_collectives_have_no_deliveries_and_do_not_write_one() {
    for name in ["report-v1.json", "report-v1-before-histograms.json"] {
        let path = data(name);
        let report = Report::read(&path).unwrap();
        assert_eq!(report.deliveries, None, "{name}");
        assert!(!report.to_json().contains("deliveries"), "{name}");
    }
}

#[test]
fn other_schema_versions_are_refused() {
    let text = std::fs::read_to_string(data("report-v1.json"))
        .unwrap()
        .replacen("\"schema_version\": 1", "\"schema_version\": 2", 1);
    let err = Report::from_json(&text, Path::new("new.json")).unwrap_err();
    assert!(matches!(err, SchemaError::Version { .. }));
    assert_eq!(
        err.to_string(),
        "new.json: schema_version 2 is not supported (this build reads version 1)"
    );
    let err = Report::from_json("{}", Path::new("x.json")).unwrap_err();
    assert!(
        err.to_string().contains("schema_version (missing)"),
        "{err}"
    );
}

#[test]
fn unreadable_files_name_the_path() {
    let err = Report::read(Path::new("no/such/report.json")).unwrap_err();
    assert!(
        err.to_string().starts_with("no/such/report.json: "),
        "{err}"
    );
    let err = Report::from_json("not json", Path::new("bad.json")).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("bad.json: not a collbench report"),
        "{err}"
    );
}

#[test]
fn atomic_write_replaces_and_leaves_no_temp_file() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("schema-roundtrip");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let report = Report::read(&data("report-v1.json")).unwrap();
    let out = dir.join("r.json");
    report.write_atomic(&out).unwrap();
    report.write_atomic(&out).unwrap();
    assert_eq!(Report::read(&out).unwrap(), report);
    assert!(schema::io::refuse_existing(&out, false).is_err());
    assert!(schema::io::refuse_existing(&out, true).is_ok());
    let names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("r.json")]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A run in groups (`--group-stride 2` on 4 ranks, MPI): the layout and
/// each row's groups read and write back; reports without them read with
/// none and write none.
#[test]
fn group_fields_read_and_write_back_and_older_reports_have_none() {
    let report = Report::read(&data("report-v1-groups.json")).unwrap();
    let layout = report.config.groups.as_ref().unwrap();
    assert_eq!(
        (layout.size, layout.stride, layout.count()),
        (2, Some(2), 2)
    );
    assert_eq!(layout.members, vec![vec![0, 2], vec![1, 3]]);
    for row in &report.results {
        let groups = row.groups.as_ref().unwrap();
        assert_eq!(groups.len(), 2);
        let slowest = &groups[row.slowest_group.unwrap() as usize];
        assert_eq!(row.time_us, slowest.time_us);
        assert!(groups.iter().all(|g| g.wrong_elements == Some(0)));
    }
    let again: Report = serde_json::from_str(&report.to_json()).unwrap();
    assert_eq!(again, report);

    let older = Report::read(&data("report-v1.json")).unwrap();
    assert_eq!(older.config.groups, None);
    assert!(older
        .results
        .iter()
        .all(|r| r.groups.is_none() && r.slowest_group.is_none()));
    assert!(!older.to_json().contains("groups"));
}

/// A replay's report (2 ranks, 8 calls of hand-written Kineto traces, 2
/// timed repetitions): its section reads and writes back; whole-world and
/// host-broadcast reports have none.
#[test]
fn replay_section_reads_and_writes_back() {
    let report = Report::read(&data("report-v1-replay.json")).unwrap();
    assert_eq!(report.config.benchmark, schema::Benchmark::Replay);
    assert!(report.results.is_empty());
    let replay = report.replay.as_ref().unwrap();
    assert_eq!((replay.iterations, replay.warmup), (2, 1));
    assert_eq!(replay.groups[0].ranks, vec![0, 1]);
    assert_eq!(replay.calls.len(), 8);
    for call in &replay.calls {
        assert_eq!(call.ranks.len(), 2);
        for (k, max) in call.iteration_max_us.iter().enumerate() {
            let slowest = call.ranks.iter().map(|r| r.times_us[k]).fold(0.0, f64::max);
            assert_eq!(*max, slowest);
        }
    }
    let again = Report::from_json(&report.to_json(), std::path::Path::new("again")).unwrap();
    assert_eq!(again, report);
    let golden = Report::read(&data("report-v1.json")).unwrap();
    assert!(golden.replay.is_none() && !golden.to_json().contains("\"replay\""));
}

/// Acceptance's fields: each row's `slowest`, `config.thresholds` and the
/// run's `verdict` and `stragglers` write and read back as they are; the
/// golden report, written before them, reads with none.
#[test]
fn acceptance_fields_read_and_write_back() {
    let mut report = Report::read(&data("report-v1.json")).unwrap();
    assert!(report.results.iter().all(|r| r.slowest.is_none()));
    assert_eq!(
        (
            &report.config.thresholds,
            &report.run.verdict,
            &report.run.stragglers
        ),
        (&None, &None, &None)
    );
    report.results[0].slowest = Some(schema::Slowest {
        rank: 1,
        host: "node17".to_string(),
        over_median: 1.9,
    });
    report.config.thresholds = Some(schema::Thresholds {
        min_busbw: vec![schema::SizeThreshold {
            from_bytes: 1 << 20,
            min_busbw_gbps: 20.0,
        }],
        ceiling_fraction: Some(0.8),
        ceiling_busbw_gbps: Some(45.0),
    });
    report.run.verdict = Some(schema::Verdict::of(
        2,
        vec![schema::ShortRow {
            bytes: 1 << 20,
            placement: schema::Placement::Out,
            busbw_gbps: 10.0,
            required_gbps: 36.0,
        }],
    ));
    report.run.stragglers = Some(vec![schema::Straggler {
        host: "node17".to_string(),
        ranks: vec![1],
        slowest_rows: 2,
        rows: 2,
        from_bytes: 1 << 20,
        min_over_median: 1.9,
        max_over_median: 1.9,
    }]);
    let written = report.to_json();
    for key in [
        "\"slowest\": {",
        "\"over_median\": 1.9",
        "\"thresholds\": {",
        "\"ceiling_busbw_gbps\": 45.0",
        "\"verdict\": {",
        "\"passed\": false",
        "\"stragglers\": [",
    ] {
        assert!(written.contains(key), "{key} in {written}");
    }
    let back = Report::from_json(&written, Path::new("acceptance.json")).unwrap();
    assert_eq!(back, report);
    assert_eq!(back.to_json(), written);
    assert_eq!(
        back.run.verdict.unwrap().describe(),
        "busbw below the threshold at 1 of 2 rows: 1 MiB out-of-place 10.000 < 36.000 GB/s"
    );
}
