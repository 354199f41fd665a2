//! `collbench-analyze fsdp` and `zero` end to end: the JSON fields users
//! read, the timeline and comparison SVGs, curves checked for collective and
//! world size, and bad flags refused in one line.

use crate::util::{ddp_data, run, scratch};

#[test]
fn fsdp_compares_strategies_in_json_and_draws_the_timeline() {
    let dir = scratch("fsdp-json");
    let timeline = dir.join("step.svg");
    let plot = dir.join("plot.svg");
    let out = run(&[
        "fsdp",
        "--profile",
        &ddp_data("synthetic-profile-fwd.csv"),
        "--all-gather",
        &ddp_data("synthetic-all-gather.json"),
        "--reduce-scatter",
        &ddp_data("synthetic-reduce-scatter.json"),
        "--comm",
        &ddp_data("synthetic-comm.json"),
        "--strategy",
        "full,grad-op,no-shard",
        "--backward-prefetch",
        "pre,none",
        "--memory-limit",
        "2G",
        "--json",
        "--timeline",
        timeline.to_str().unwrap(),
        "--plot",
        plot.to_str().unwrap(),
    ]);
    let json = out.json();
    let configs = json["configs"].as_array().unwrap();
    // full × 2 prefetch settings, grad-op, no-shard.
    assert_eq!(configs.len(), 4);
    for c in configs {
        assert!(c["step_ms"].as_f64().unwrap() > 0.0);
        assert!(c["exposed_comm_ms"].as_f64().unwrap() >= 0.0);
        assert!(c["strategy"].as_str().unwrap().starts_with("fsdp-"));
        for key in [
            "params_bytes",
            "grads_bytes",
            "optimizer_bytes",
            "activations_bytes",
            "peak_bytes",
            "model_states_bytes",
            "grad_buckets_bytes",
            "optimizer_temp_bytes",
            "backward_transient_peak_bytes",
        ] {
            assert!(c["memory"][key].as_u64().is_some(), "{key}");
        }
        assert!(c["collectives"][0]["bytes_per_rank"].as_f64().unwrap() > 0.0);
    }
    // No prefetch in backward is never faster than BACKWARD_PRE.
    assert!(configs[1]["step_ms"].as_f64() >= configs[0]["step_ms"].as_f64());
    assert_eq!(json["memory_limit_bytes"].as_u64(), Some(2 << 30));
    let svg = std::fs::read_to_string(&timeline).unwrap();
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let texts: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text())
        .map(str::trim)
        .collect();
    for lane in ["compute", "communication", "all_gather", "reduce_scatter"] {
        assert!(texts.contains(&lane), "{lane} in {texts:?}");
    }
    let blocks = doc.descendants().filter(|n| n.has_tag_name("rect")).count();
    assert!(blocks > 50, "{blocks} rectangles");
    let plot = std::fs::read_to_string(&plot).unwrap();
    assert!(
        plot.contains("fsdp-no-shard"),
        "the plot names every configuration"
    );
}

#[test]
fn zero_reads_an_imported_log_and_names_a_wrong_collective_or_world() {
    // The all-gather log is 2 ranks: a job of 2 reads it, ZeRO-3 needs a
    // reduce-scatter curve too.
    let profile = ddp_data("synthetic-profile-fwd.csv");
    let line = run(&[
        "zero",
        "--profile",
        &profile,
        "--stage",
        "3",
        "--all-gather",
        "nccl-2.19-all_gather-iter-timestamps.log",
    ])
    .fails()
    .to_string();
    assert!(
        line.contains(
            "zero-3 needs --reduce-scatter FILE: measured reduce_scatter times at world size 2"
        ),
        "{line}"
    );
    // An all-reduce log given as the all-gather curve.
    let line = run(&[
        "zero",
        "--profile",
        &profile,
        "--stage",
        "3",
        "--all-gather",
        "nccl-2.19-all_reduce.log",
        "--reduce-scatter",
        "nccl-2.19-all_reduce.log",
    ])
    .fails()
    .to_string();
    assert!(
        line.contains(
            "--all-gather nccl-2.19-all_reduce.log: no all_gather results (it holds all_reduce"
        ),
        "{line}"
    );
    // The right collective at another world size.
    let line = run(&[
        "zero",
        "--profile",
        &profile,
        "--stage",
        "3",
        "--world-size",
        "8",
        "--all-gather",
        "nccl-2.19-all_gather-iter-timestamps.log",
        "--reduce-scatter",
        "nccl-2.19-all_reduce.log",
    ])
    .fails()
    .to_string();
    assert!(
        line.contains("--all-gather nccl-2.19-all_gather-iter-timestamps.log: no all_gather results for --world-size 8 (world sizes present: 2)"),
        "{line}"
    );
}

#[test]
fn bad_sharding_flags_are_refused_in_one_line() {
    let profile = ddp_data("synthetic-profile-fwd.csv");
    let comm = ddp_data("synthetic-comm.json");
    for (flag, value) in [
        ("--stage", "4"),
        ("--limit-all-gathers", "0"),
        ("--memory-limit", "0"),
        ("--unit-layers", "0"),
        ("--optimizer", "lion"),
        ("--backward-prefetch", "early"),
        ("--optimizer-step-s", "-1"),
        ("--sync-wait-s", "-0.5"),
        ("--sync-wait-s", "11"),
        ("--optimizer-impl", "for-loop"),
        ("--grad-as-bucket-view=yes", ""),
    ] {
        let mut argv = vec!["zero", "--profile", &profile, "--comm", &comm, flag];
        if !value.is_empty() {
            argv.push(value);
        }
        let line = run(&argv).fails().to_string();
        assert!(
            line.contains(flag.split('=').next().unwrap()),
            "{flag}: {line}"
        );
    }
    let line = run(&[
        "zero",
        "--profile",
        &profile,
        "--comm",
        &comm,
        "--optimizer-impl",
        "for-loop",
    ])
    .fails()
    .to_string();
    assert!(
        line.contains("for-loop") && line.contains("foreach, fused"),
        "{line}"
    );
    // A DDP flag on fsdp, whose strategies have no DDP buckets.
    let line = run(&[
        "fsdp",
        "--profile",
        &profile,
        "--comm",
        &comm,
        "--grad-as-bucket-view",
    ])
    .fails()
    .to_string();
    assert!(line.contains("--grad-as-bucket-view"), "{line}");
    let line = run(&[
        "fsdp",
        "--profile",
        &profile,
        "--comm",
        &comm,
        "--strategy",
        "half",
    ])
    .fails()
    .to_string();
    assert!(line.contains("full, grad-op, hybrid, no-shard"), "{line}");
    // The timeline may not overwrite an input.
    let line = run(&[
        "fsdp",
        "--profile",
        &profile,
        "--comm",
        &comm,
        "--strategy",
        "no-shard",
        "--timeline",
        &comm,
        "--force",
    ])
    .fails()
    .to_string();
    assert!(
        line.contains("--timeline") && line.contains("also an input"),
        "{line}"
    );
}

#[test]
fn named_unit_starts_and_the_micro_batch_are_honoured_or_named() {
    let profile = ddp_data("synthetic-profile-fwd.csv");
    let args = |extra: &[&str]| -> Vec<String> {
        [
            "fsdp",
            "--profile",
            &profile,
            "--all-gather",
            &ddp_data("synthetic-all-gather.json"),
            "--reduce-scatter",
            &ddp_data("synthetic-reduce-scatter.json"),
        ]
        .iter()
        .map(|s| s.to_string())
        .chain(extra.iter().map(|s| s.to_string()))
        .collect()
    };
    let argv = args(&[
        "--unit-starts",
        "block_0.attn,ln_f",
        "--microbatch",
        "4",
        "--json",
    ]);
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let json = run(&argv).json();
    // embedding | block_0.attn .. block_11.mlp | ln_f, lm_head
    assert_eq!(json["configs"][0]["units"].as_u64(), Some(3));
    assert!(json["configs"][0]["unit_layers"].is_null());
    let argv = args(&["--unit-starts", "block_99"]);
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let line = run(&argv).fails().to_string();
    assert!(
        line.contains("--unit-starts: no profile row is named \"block_99\""),
        "{line}"
    );
    let argv = args(&["--microbatch", "8"]);
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let line = run(&argv).fails().to_string();
    assert!(
        line.contains("--microbatch 8: no rows at this micro-batch size (sizes present: 4)"),
        "{line}"
    );
}

#[test]
fn ddp_buckets_and_the_step_s_temporaries_follow_their_flags() {
    let profile = ddp_data("synthetic-profile-fwd.csv");
    let comm = ddp_data("synthetic-comm.json");
    let memory = |extra: &[&str]| {
        let mut argv = vec![
            "zero",
            "--profile",
            &profile,
            "--comm",
            &comm,
            "--stage",
            "0",
            "--json",
        ];
        argv.extend_from_slice(extra);
        run(&argv).json()["configs"][0]["memory"].clone()
    };
    // PyTorch's defaults: buckets as large as the gradients, foreach Adam's
    // one fp32 copy of every parameter (DDP steps them all).
    let m = memory(&[]);
    let grads = m["grads_bytes"].as_u64().unwrap();
    assert_eq!(m["grad_buckets_bytes"].as_u64(), Some(grads));
    assert_eq!(m["optimizer_temp_bytes"].as_u64(), Some(grads));
    let view = memory(&["--grad-as-bucket-view", "--optimizer-impl", "fused"]);
    assert_eq!(view["grad_buckets_bytes"].as_u64(), Some(0));
    assert_eq!(view["optimizer_temp_bytes"].as_u64(), Some(0));
    assert_eq!(view["model_states_bytes"], m["model_states_bytes"]);
    assert_eq!(
        m["after_step_bytes"].as_u64().unwrap() - view["after_step_bytes"].as_u64().unwrap(),
        grads
    );
    // On a stage without DDP buckets the flag changes nothing, and says so.
    let argv = [
        "zero",
        "--profile",
        &profile,
        "--reduce-scatter",
        &ddp_data("synthetic-reduce-scatter.json"),
        "--all-gather",
        &ddp_data("synthetic-all-gather.json"),
        "--stage",
        "2",
        "--grad-as-bucket-view",
        "--json",
    ];
    let json = run(&argv).json();
    assert_eq!(
        json["configs"][0]["memory"]["grad_buckets_bytes"].as_u64(),
        Some(0)
    );
    let warned = json["warnings"].as_array().unwrap().iter().any(|w| {
        w.as_str()
            .unwrap()
            .starts_with("--grad-as-bucket-view changes nothing")
    });
    assert!(warned, "{}", json["warnings"]);
}

#[test]
fn a_profile_without_backward_transients_is_a_note_in_the_text() {
    let text = run(&[
        "zero",
        "--profile",
        &ddp_data("synthetic-profile-fwd.csv"),
        "--comm",
        &ddp_data("synthetic-comm.json"),
        "--stage",
        "0",
    ])
    .ok()
    .to_string();
    assert!(
        text.lines().any(|l| l
            == "note: peak without backward transients: the profile has no bwd_transient_bytes, so each peak is a lower bound (14-31 % low on the H100 runs of results/2026-11-25-h100vm-1n1g-shard-memory; scripts/profile_layers.py measures them on a GPU)"),
        "{text}"
    );
    assert!(
        text.contains("step temporaries / backward transient / activations"),
        "{text}"
    );
}

#[test]
fn a_flag_of_the_other_sharded_command_says_whose_it_is() {
    let profile = ddp_data("synthetic-profile-fwd.csv");
    for (argv, want) in [
        (
            vec!["fsdp", "--profile", &profile, "--broadcast", "bc.json"],
            "error: unexpected argument '--broadcast' found: --broadcast is a flag of `zero` \
             and `trace`, which `fsdp` has no use for (see --help)",
        ),
        (
            vec!["zero", "--profile", &profile, "--hybrid-group", "2"],
            "error: unexpected argument '--hybrid-group' found: --hybrid-group is `fsdp`'s flag \
             (Ranks each copy is sharded over in HYBRID_SHARD (all-gather and reduce-scatter \
             curves at this size, --comm at world-size / N), which `zero` has no use for \
             (see --help)",
        ),
        (
            // clap's tip of a similar flag (--unit-layers) is left out: it
            // would contradict the owner named.
            vec!["zero", "--profile", &profile, "--root-layers", "x"],
            "error: unexpected argument '--root-layers' found: --root-layers is `fsdp`'s flag \
             (Layer names of the root unit, `fully_shard(model)` or FSDP1's outer wrap), \
             which `zero` has no use for (see --help)",
        ),
        (
            vec!["--force", "fsdp", "--profile", &profile, "--bucket-cap=50"],
            "error: unexpected argument '--bucket-cap' found: --bucket-cap is a flag of `zero` \
             and `plan`, which `fsdp` has no use for (see --help)",
        ),
        (
            vec!["fsdp", "--profile", &profile, "--grad-as-bucket-view"],
            "error: unexpected argument '--grad-as-bucket-view' found: --grad-as-bucket-view \
             is a flag of `ddp` and `zero`, which `fsdp` has no use for (see --help)",
        ),
    ] {
        assert_eq!(run(&argv).fails(), want);
    }
    // A flag no command has gets clap's words alone.
    let line = run(&["fsdp", "--profile", &profile, "--nonsense"])
        .fails()
        .to_string();
    assert_eq!(
        line,
        "error: unexpected argument '--nonsense' found (see --help)"
    );
}

/// Issue 34, item 2: a curve file no configuration compared reads is a
/// note, and the comparison runs.
#[test]
fn a_curve_file_no_compared_configuration_reads_is_noted() {
    let profile = ddp_data("synthetic-profile-fwd.csv");
    let (comm, ag, rs) = (
        ddp_data("synthetic-comm.json"),
        ddp_data("synthetic-all-gather.json"),
        ddp_data("synthetic-reduce-scatter.json"),
    );
    let curves = [
        "--profile",
        &profile,
        "--comm",
        &comm,
        "--all-gather",
        &ag,
        "--reduce-scatter",
        &rs,
        "--optimizer-step-s",
        "0.01",
    ];
    let zero_reads =
        "stage 0 all-reduces gradients, and stage 1 with --zero-grads all-reduce; it changes nothing here";
    for (settings, compared) in [
        (&["zero", "--stage", "2,3"][..], "zero-2, zero-3"),
        (
            &["zero", "--stage", "1", "--zero-grads", "reduce-scatter"],
            "zero-1",
        ),
    ] {
        let out = run(&[settings, &curves].concat());
        let text = out.ok();
        assert!(
            text.contains(&format!("note: --comm {comm} is read by none of the configurations compared ({compared}): {zero_reads}")),
            "{text}"
        );
        assert!(text.contains("fastest"), "{text}");
    }
    let json = run(&[
        &["fsdp", "--strategy", "full,grad-op", "--json"][..],
        &curves,
    ]
    .concat())
    .json();
    let notes: Vec<&str> = json["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert!(
        notes.iter().any(|n| n.starts_with(&format!("--comm {comm} is read by none of the configurations compared (fsdp-full, fsdp-grad-op): ddp and no-shard all-reduce gradients"))),
        "{notes:?}"
    );
    assert_eq!(json["curves"].as_array().unwrap().len(), 2);
    // Compared with a stage that all-reduces, the file is read.
    let json = run(&[&["zero", "--stage", "0,2,3", "--json"][..], &curves].concat()).json();
    assert_eq!(json["curves"].as_array().unwrap().len(), 3);
}

/// Issue 34, item 3: `zero` and `fsdp` without curves print the memory
/// columns and say that step times need curves; drawing is refused before
/// the run.
#[test]
fn without_curves_memory_is_shown_and_step_times_ask_for_curves() {
    let profile = ddp_data("synthetic-profile-fwd.csv");
    let text = run(&[
        "zero",
        "--profile",
        &profile,
        "--stage",
        "0,1,2,3",
        "--world-size",
        "8",
        "--memory-limit",
        "2G",
    ])
    .ok()
    .to_string();
    assert!(text.contains("fits within 2 GiB:"), "{text}");
    assert!(
        text.contains(
            "note: no curves given: memory alone is shown; step times need the measured curves"
        ),
        "{text}"
    );
    assert!(!text.contains("fastest"), "{text}");
    let csv = run(&["fsdp", "--profile", &profile, "--world-size", "8", "--csv"])
        .ok()
        .to_string();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let row: Vec<&str> = csv.lines().nth(1).unwrap().split(',').collect();
    let cell = |name: &str| row[header.iter().position(|h| *h == name).unwrap()];
    assert_eq!(cell("step_ms"), "", "{csv}");
    assert_ne!(cell("peak_bytes"), "", "{csv}");
    assert_eq!(cell("is_fastest"), "false", "{csv}");
    let line = run(&[
        "fsdp",
        "--profile",
        &profile,
        "--world-size",
        "8",
        "--timeline",
        "t.svg",
    ])
    .fails()
    .to_string();
    assert!(
        line.starts_with("error: --timeline draws step times, which need curves"),
        "{line}"
    );
}

/// Issue 34, item 13: `--timeline-strategy` names the configuration drawn;
/// `zero --timeline-stage` likewise.
#[test]
fn the_timeline_draws_the_configuration_named() {
    let dir = scratch("shard-timeline-named");
    let svg = dir.join("step.svg");
    let profile = ddp_data("synthetic-profile-fwd.csv");
    let (comm, ag, rs) = (
        ddp_data("synthetic-comm.json"),
        ddp_data("synthetic-all-gather.json"),
        ddp_data("synthetic-reduce-scatter.json"),
    );
    let base = [
        "--profile",
        &profile,
        "--comm",
        &comm,
        "--all-gather",
        &ag,
        "--reduce-scatter",
        &rs,
        "--force",
    ];
    run(&[
        &[
            "fsdp",
            "--strategy",
            "ddp,full,grad-op",
            "--timeline-strategy",
            "full",
            "--timeline",
            svg.to_str().unwrap(),
        ][..],
        &base,
    ]
    .concat())
    .ok();
    let texts = crate::util::svg_texts(&svg);
    assert!(
        texts.iter().any(|t| t.starts_with("fsdp-full")),
        "{texts:?}"
    );
    run(&[
        &[
            "zero",
            "--stage",
            "0,3",
            "--timeline-stage",
            "3",
            "--timeline",
            svg.to_str().unwrap(),
        ][..],
        &base,
    ]
    .concat())
    .ok();
    let texts = crate::util::svg_texts(&svg);
    assert!(texts.iter().any(|t| t.starts_with("zero-3")), "{texts:?}");
    let line = run(&[
        &[
            "fsdp",
            "--strategy",
            "ddp",
            "--timeline-strategy",
            "full",
            "--timeline",
            svg.to_str().unwrap(),
        ][..],
        &base,
    ]
    .concat())
    .fails()
    .to_string();
    assert_eq!(
        line,
        "error: --timeline-strategy full: not among the configurations compared (ddp); draw one of them"
    );
}

/// `fsdp --strategy STRATEGIES --hybrid-group GROUP` on the synthetic
/// profile, then `extra`.
fn hybrid(strategies: &str, group: &str, extra: &[&str]) -> crate::util::Run {
    let profile = ddp_data("synthetic-profile-fwd.csv");
    let argv = [
        &[
            "fsdp",
            "--profile",
            &profile,
            "--strategy",
            strategies,
            "--hybrid-group",
            group,
        ][..],
        extra,
    ]
    .concat();
    run(&argv)
}

#[test]
fn a_log_without_a_world_size_is_read_at_the_size_hybrid_shard_uses_it_at() {
    // nccl-headerless.log records no world size. HYBRID_SHARD all-gathers
    // and reduce-scatters within its group of 2 and all-reduces across the
    // 4 groups; before, the log was taken at the job's 8 ranks and refused
    // for lacking "--world-size 2", a size never given.
    let comm = ddp_data("synthetic-comm.json");
    let json = hybrid(
        "hybrid",
        "2",
        &[
            "--world-size",
            "8",
            "--all-gather",
            "nccl-headerless.log",
            "--reduce-scatter",
            "nccl-headerless.log",
            "--comm",
            &comm,
            "--json",
        ],
    )
    .json();
    let sizes: Vec<(&str, u64)> = json["curves"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["flag"].as_str().unwrap(),
                c["world_size"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        sizes,
        [("--all-gather", 2), ("--reduce-scatter", 2), ("--comm", 4)]
    );
    // --comm at --world-size / --hybrid-group: 8 / 4 = 2.
    let json = hybrid(
        "hybrid",
        "4",
        &[
            "--world-size",
            "8",
            "--all-gather",
            &ddp_data("synthetic-all-gather.json"),
            "--reduce-scatter",
            &ddp_data("synthetic-reduce-scatter.json"),
            "--comm",
            "nccl-headerless.log",
            "--json",
        ],
    )
    .json();
    let comm_curve = json["curves"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["flag"] == "--comm")
        .unwrap();
    assert_eq!(comm_curve["world_size"], 2);
}

#[test]
fn hybrid_shards_errors_name_the_sizes_given() {
    let headerless = [
        "--all-gather",
        "nccl-headerless.log",
        "--reduce-scatter",
        "nccl-headerless.log",
    ];
    // FULL_SHARD reads the log at the job's 8 ranks; HYBRID_SHARD's group
    // of 2 is then missing from it, said in the flag that set it.
    let line = hybrid(
        "full,hybrid",
        "2",
        &[&["--world-size", "8"][..], &headerless].concat(),
    )
    .fails()
    .to_string();
    assert_eq!(
        line,
        "error: --all-gather nccl-headerless.log: no all_gather results for --hybrid-group 2 ranks (world sizes present: 8)"
    );
    // Without --world-size the curves cannot tell the job's size.
    let line = hybrid("hybrid", "2", &headerless).fails().to_string();
    assert_eq!(
        line,
        "error: --strategy hybrid needs --world-size N, the job's ranks: its curves are at --hybrid-group 2 ranks and at world size / 2, so the curve files do not tell it"
    );
    // A missing all-reduce across groups names both flags.
    let line = hybrid(
        "hybrid",
        "4",
        &[
            "--world-size",
            "16",
            "--all-gather",
            &ddp_data("synthetic-all-gather.json"),
            "--reduce-scatter",
            &ddp_data("synthetic-reduce-scatter.json"),
        ],
    )
    .fails()
    .to_string();
    assert_eq!(
        line,
        "error: fsdp-hybrid needs --comm FILE: measured all_reduce times at --world-size 16 / --hybrid-group 4 = 4 ranks (a collbench report or anything `import` reads)"
    );
}

#[test]
fn fsdp_compares_ddp_in_the_same_table_as_zero_s_stage_0_gives_it() {
    let profile = ddp_data("synthetic-profile-fwd.csv");
    let comm = ddp_data("synthetic-comm.json");
    let fsdp = run(&[
        "fsdp",
        "--profile",
        &profile,
        "--all-gather",
        &ddp_data("synthetic-all-gather.json"),
        "--reduce-scatter",
        &ddp_data("synthetic-reduce-scatter.json"),
        "--comm",
        &comm,
        "--strategy",
        "ddp,full",
        "--json",
    ])
    .json();
    let names: Vec<&str> = fsdp["configs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["strategy"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["ddp", "fsdp-full"]);
    // The same DDP as `zero --stage 0`: one model, two doors.
    let zero = run(&[
        "zero",
        "--profile",
        &profile,
        "--comm",
        &comm,
        "--stage",
        "0",
        "--json",
    ])
    .json();
    assert_eq!(fsdp["configs"][0]["step_ms"], zero["configs"][0]["step_ms"]);
    assert_eq!(fsdp["configs"][0]["memory"], zero["configs"][0]["memory"]);
    // DDP needs the all-reduce curve.
    let line = run(&[
        "fsdp",
        "--profile",
        &profile,
        "--all-gather",
        &ddp_data("synthetic-all-gather.json"),
        "--reduce-scatter",
        &ddp_data("synthetic-reduce-scatter.json"),
        "--strategy",
        "ddp,full",
    ])
    .fails()
    .to_string();
    assert!(line.contains("--comm"), "{line}");
}

#[test]
fn memory_limit_in_gb_is_decimal_in_gib_or_a_bare_g_binary_and_a_note_says_which() {
    let limit = |text: &str| {
        let out = run(&[
            "fsdp",
            "--profile",
            &ddp_data("synthetic-profile-fwd.csv"),
            "--all-gather",
            &ddp_data("synthetic-all-gather.json"),
            "--reduce-scatter",
            &ddp_data("synthetic-reduce-scatter.json"),
            "--strategy",
            "full",
            "--memory-limit",
            text,
            "--json",
        ]);
        let bytes = out.json()["memory_limit_bytes"].as_u64();
        (bytes, out.stderr)
    };
    let (bytes, stderr) = limit("80GB");
    assert_eq!(bytes, Some(80_000_000_000));
    assert!(
        stderr.contains(
            "note: --memory-limit 80GB read as 80000000000 bytes (74.5 GiB): GB is 10^9 bytes (GiB, or G alone, 2^30)"
        ),
        "{stderr}"
    );
    let (bytes, stderr) = limit("80GiB");
    assert_eq!(bytes, Some(80 << 30));
    assert!(
        stderr.contains(
            "note: --memory-limit 80GiB read as 85899345920 bytes (80 GiB): GiB is 2^30 bytes"
        ),
        "{stderr}"
    );
    let (bytes, stderr) = limit("80G");
    assert_eq!(bytes, Some(80 << 30));
    assert!(
        stderr.contains("note: --memory-limit 80G read as 85899345920 bytes (80 GiB): G alone is GiB, 2^30 bytes (GB would be 10^9)"),
        "{stderr}"
    );
    let (bytes, stderr) = limit("85899345920");
    assert_eq!(bytes, Some(80 << 30));
    assert!(!stderr.contains("--memory-limit"), "{stderr}");
}

/// One layer of 1,048,576 fp32 parameters: FULL_SHARD all-gathers and
/// reduce-scatters it whole, calls of 4 MiB, a size the scale model
/// predicts at exactly (a power of two).
fn one_layer_profile(dir: &std::path::Path) -> String {
    let path = dir.join("one-layer.csv");
    std::fs::write(
        &path,
        "name,params,grad_time_s,fwd_time_s\nblock,1048576,0.001,0.0005\n",
    )
    .unwrap();
    path.display().to_string()
}

#[test]
fn a_world_size_nobody_measured_is_predicted_as_predict_does_with_a_warning() {
    let dir = scratch("fsdp-predicted");
    let profile = one_layer_profile(&dir);
    let gather = ["8r1n", "16r2n"].map(|l| ddp_data(&format!("plan/all_gather-{l}.json")));
    let scatter = ["8r1n", "16r2n"].map(|l| ddp_data(&format!("plan/reduce_scatter-{l}.json")));
    let mut args = vec!["fsdp", "--profile", &profile, "--world-size", "64"];
    for (flag, files) in [("--all-gather", &gather), ("--reduce-scatter", &scatter)] {
        for file in files {
            args.extend([flag, file.as_str()]);
        }
    }
    let out = run(&[&args[..], &["--json"]].concat());
    let json = out.json();
    // The warning names the group and the layouts measured.
    let warnings = json["warnings"].to_string();
    assert!(
        warnings.contains("all_gather at 64 ranks on 8 nodes of 8 GPUs was not measured (measured: 16 ranks on 2 nodes, 8 ranks on 1 node)"),
        "{warnings}"
    );
    assert!(
        warnings.contains("reduce_scatter at 64 ranks"),
        "{warnings}"
    );
    let curve = &json["curves"][0];
    assert_eq!(curve["world_size"], 64, "{curve}");
    let picks = curve["predicted"]["picks"].as_str().unwrap();
    assert!(
        picks.starts_with("ring/") && picks.ends_with(" above"),
        "{picks}"
    );
    // Each all-gather's time is predict's at its size, same inputs.
    let gathers = &json["configs"][0]["collectives"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["collective"] == "all_gather")
        .unwrap()
        .clone();
    let calls = gathers["calls"].as_u64().unwrap();
    let each = gathers["bytes"].as_u64().unwrap() / calls;
    assert_eq!(each, 4 << 20, "{gathers}");
    let each_us = gathers["busy_ms"].as_f64().unwrap() * 1e3 / calls as f64;
    let size = each.to_string();
    let predicted = run(&[
        "predict",
        &gather[0],
        &gather[1],
        "--collective",
        "all_gather",
        "--world-size",
        "64",
        "--gpus-per-node",
        "8",
        "--sizes",
        &size,
        "--json",
    ])
    .json();
    let expected = predicted["predictions"][0]["predicted_us"]
        .as_f64()
        .unwrap();
    assert!(
        (each_us - expected).abs() <= 1e-9 * expected,
        "fsdp {each_us} us, predict {expected} us"
    );
    // The text's curve line names NCCL's pick.
    let text = run(&args).ok().to_string();
    let line = text
        .lines()
        .find(|l| l.starts_with("curve     --all-gather"))
        .unwrap();
    assert!(
        line.contains("at world size 64 (64 ranks on 8 nodes of 8 GPUs) not measured, predicted by the scale model; NCCL's pick: ring/"),
        "{line}"
    );
}

#[test]
fn a_world_size_the_scale_model_cannot_predict_is_refused_naming_what_to_measure() {
    let dir = scratch("zero-unpredictable");
    let profile = one_layer_profile(&dir);
    // One node only: nothing tells the inter-node terms of 8 nodes.
    let gather = ["2r1n", "8r1n"].map(|l| ddp_data(&format!("plan/all_gather-{l}.json")));
    let scatter = ddp_data("plan/reduce_scatter-8r1n.json");
    let line = run(&[
        "zero",
        "--profile",
        &profile,
        "--stage",
        "3",
        "--world-size",
        "64",
        "--gpus-per-node",
        "8",
        "--all-gather",
        &gather[0],
        "--all-gather",
        &gather[1],
        "--reduce-scatter",
        &scatter,
    ])
    .fails()
    .to_string();
    assert!(
        line.contains("all_gather at 64 ranks on 8 nodes of 8 GPUs was not measured (measured: 2 ranks on 1 node, 8 ranks on 1 node), and the scale model cannot predict it: no multi-node report"),
        "{line}"
    );
    assert!(line.contains("measure at least 2 nodes"), "{line}");
    assert_eq!(line.trim_end().lines().count(), 1, "{line}");
}
