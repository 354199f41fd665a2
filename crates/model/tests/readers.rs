//! The readers on hand-written fixtures in the real formats: our profile CSV,
//! the course pair joined by name, and the measured CSV.
use std::path::Path;

use model::{course, matching, read_profile_csv, MissingTime, TimeStat};

use crate::util::{data, write};

#[test]
fn reads_our_profile_csv() {
    let p = read_profile_csv(Path::new(&data("profile.csv")), 4).unwrap();
    let names: Vec<&str> = p.layers.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["embedding", "block_0", "block_1", "head"]);
    let bytes: Vec<u64> = p.layers.iter().map(|l| l.grad_bytes).collect();
    assert_eq!(bytes, [4000, 500, 1000, 0]);
    assert!((p.compute_s() - 0.011).abs() < 1e-15);
    assert_eq!(p.total_params(), 1500);
}

#[test]
fn reads_the_course_pair_with_aliases() {
    let sizes = course::read_sizes(Path::new(&data("course-sizes.csv"))).unwrap();
    assert_eq!(sizes.len(), 8);
    assert_eq!(
        (sizes[2].name.as_str(), sizes[2].params),
        ("Block 0", 7_087_872)
    );
    let times = course::read_times(Path::new(&data("course-times.csv")), TimeStat::Mean).unwrap();
    assert_eq!(times.layers.len(), 8);
    let other: Vec<&str> = times.other.iter().map(|o| o.0.as_str()).collect();
    assert_eq!(other, ["forward", "backward", "step"]);
    let aliases = [
        model::parse_alias("Token embedding=wte").unwrap(),
        model::parse_alias("wpe=Position embedding").unwrap(),
        model::parse_alias("LayerNorm final=ln_f").unwrap(),
    ];
    let p = matching::join(
        &sizes,
        &times,
        &aliases,
        MissingTime::Error,
        4,
        Path::new("s.csv"),
        Path::new("t.csv"),
    )
    .unwrap();
    let got: Vec<(&str, f64)> = p
        .layers
        .iter()
        .map(|l| (l.name.as_str(), l.grad_time_s))
        .collect();
    assert_eq!(
        got,
        [
            ("Token embedding", 0.003),
            ("Position embedding", 0.00002),
            ("Block 0", 0.0044),
            ("Block 1", 0.0042),
            ("Block 2", 0.0043),
            ("Block 3", 0.0042),
            ("LayerNorm final", 0.00012),
            ("LM head", 0.0055),
        ]
    );
    assert_eq!(p.layers[7].grad_bytes, 38_597_376 * 4);
    assert_eq!(p.notes.len(), 1);
    assert!(p.notes[0].contains("forward = 0.0127 s, backward = 0.027 s, step = 0.0205 s"));

    let median =
        course::read_times(Path::new(&data("course-times.csv")), TimeStat::Median).unwrap();
    assert_eq!(median.layers[0].time_s, 0.0054);
}

#[test]
fn unmatched_course_rows_are_listed_on_both_sides() {
    let sizes = course::read_sizes(Path::new(&data("course-sizes.csv"))).unwrap();
    let times = course::read_times(Path::new(&data("course-times.csv")), TimeStat::Mean).unwrap();
    let join = |missing| {
        matching::join(
            &sizes,
            &times,
            &[],
            missing,
            4,
            Path::new("s.csv"),
            Path::new("t.csv"),
        )
    };
    let err = join(MissingTime::Error).unwrap_err().to_string();
    assert_eq!(
        err,
        "s.csv and t.csv do not match: sizes rows without a time: \"Token embedding\" (line 2), \
         \"Position embedding\" (line 3), \"LayerNorm final\" (line 8); times rows without a size: \
         \"ln_f grad\" (line 5), \"wpe grad\" (line 10), \"wte grad\" (line 11); names alike in meaning \
         may be joined with --alias 'Token embedding=wte' --alias 'Position embedding=wpe' \
         --alias 'LayerNorm final=ln_f', or pass --missing-time zero"
    );
    let p = join(MissingTime::Zero).unwrap();
    assert_eq!(p.layers.len(), 8);
    assert_eq!(p.layers[0].grad_time_s, 0.0);
    let notes = p.notes.join("\n");
    assert!(notes.contains("taken as zero time"), "{notes}");
    assert!(notes.contains("\"wte grad\" (line 11, 0.003 s)"), "{notes}");
}

#[test]
fn aliases_must_name_a_row_and_names_must_be_unique() {
    let sizes = course::read_sizes(Path::new(&data("course-sizes.csv"))).unwrap();
    let times = course::read_times(Path::new(&data("course-times.csv")), TimeStat::Mean).unwrap();
    let join = |aliases: &[model::Alias]| {
        matching::join(
            &sizes,
            &times,
            aliases,
            MissingTime::Zero,
            4,
            Path::new("s.csv"),
            Path::new("t.csv"),
        )
        .unwrap_err()
        .to_string()
    };
    assert_eq!(
        join(&[model::parse_alias("Decoder=lm_head").unwrap()]),
        "--alias 'Decoder=lm_head': no row of s.csv or t.csv is named \"Decoder\""
    );
    // An alias applies to both files, so here it makes two times rows
    // (block_1 and block_0) the same layer.
    assert_eq!(
        join(&[model::parse_alias("Block 1=block_0").unwrap()]),
        "t.csv:9: \"block_0 grad\" names the same layer as \"block_1 grad\" on line 8"
    );
    let mut twice = sizes.clone();
    twice[3].name = "block-0".into();
    let err = matching::join(
        &twice,
        &times,
        &[],
        MissingTime::Zero,
        4,
        Path::new("s.csv"),
        Path::new("t.csv"),
    )
    .unwrap_err()
    .to_string();
    assert_eq!(err, "s.csv:5: \"block-0\" names the same layer as line 4");
}

#[test]
fn reads_measured_points_averaging_repeats() {
    let path = data("measured.csv");
    let (points, notes) = model::ddp::measured::read_measured(Path::new(&path)).unwrap();
    let got: Vec<(u64, f64, Option<u64>)> = points
        .iter()
        .map(|p| (p.bucket_bytes, p.time_s, p.buckets))
        .collect();
    assert_eq!(got.len(), 3);
    assert_eq!(got[0], (1 << 20, 0.031, Some(8)));
    assert_eq!(got[1].0, 25 << 20);
    assert!((got[1].1 - 0.0295).abs() < 1e-15);
    assert_eq!(got[2], (100 << 20, 0.033, Some(2)));
    assert!(
        notes[0].contains("1 caps appear more than once"),
        "{notes:?}"
    );
}

#[test]
fn measured_spread_gives_each_cap_a_standard_error() {
    let path = write(
        "measured_spread",
        "m.csv",
        "# a comment\nbucket_bytes,time_s,time_sd_s,iterations\n\
         1048576,1.0,0.04,16\n2097152,2.0,0.3,9\n2097152,4.0,0.4,16\n",
    );
    let (points, _) = model::ddp::measured::read_measured(Path::new(&path)).unwrap();
    // 0.04 / √16 = 0.01.
    assert!((points[0].std_error_s.unwrap() - 0.01).abs() < 1e-15);
    // Two rows of one cap: the mean of means 3.0, and
    // √(0.1² + 0.1²) / 2 for its error.
    assert_eq!(points[1].time_s, 3.0);
    let expect = (0.1f64 * 0.1 + 0.1 * 0.1).sqrt() / 2.0;
    assert!((points[1].std_error_s.unwrap() - expect).abs() < 1e-15);
    // Without the columns, no error is claimed.
    let (points, _) =
        model::ddp::measured::read_measured(Path::new(&data("measured.csv"))).unwrap();
    assert!(points.iter().all(|p| p.std_error_s.is_none()));
}

/// clap stays in the command-line module: the readers and the model take
/// plain values, so a program may call them without a command line. Only
/// `lib.rs` and `plan.rs` (which turns the flags into a plan) see `cli`.
#[test]
fn only_the_cli_module_knows_clap() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut checked = 0;
    let mut files: Vec<std::path::PathBuf> = Vec::new();
    let mut folders = vec![src];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).expect("listing src/") {
            let path = entry.expect("reading src/").path();
            if path.is_dir() {
                folders.push(path);
            } else {
                files.push(path);
            }
        }
    }
    for path in files {
        let text = std::fs::read_to_string(&path).expect("reading a source file");
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        checked += 1;
        if name != "cli.rs" {
            assert!(
                !text.contains("clap::") && !text.contains("use clap"),
                "{name} uses clap; keep it in cli.rs"
            );
        }
        if !["cli.rs", "lib.rs", "plan.rs"].contains(&name) {
            assert!(
                !text.contains("crate::cli"),
                "{name} uses the cli module's types; take plain values from crate::options"
            );
        }
    }
    assert!(checked > 10, "only {checked} source files found");
}

#[test]
fn reads_the_optional_columns_and_picks_one_micro_batch() {
    let text =
        "name,params,grad_time_s,dtype_bytes,fwd_time_s,activation_bytes,output_bytes,microbatch\n\
                emb,100,0.002,2,0.001,4096,2048,4\n\
                block,50,0.004,,0.002,8192,2048,4\n\
                emb,100,0.003,2,0.0015,8192,4096,8\n\
                block,50,0.007,,0.003,16384,4096,8\n";
    let path = write("optional_columns", "profile.csv", text);
    let p = model::read_profile_csv_at(Path::new(&path), 4, Some(8), "--microbatch").unwrap();
    assert_eq!(p.layers.len(), 2);
    assert_eq!(p.layers[0].fwd_time_s, Some(0.0015));
    assert_eq!(p.layers[1].activation_bytes, Some(16384));
    assert_eq!(p.layers[1].output_bytes, Some(4096));
    assert_eq!(p.layers[1].microbatch, Some(8));
    assert_eq!(p.layers[0].grad_bytes, 200);
    assert_eq!(p.layers[1].grad_bytes, 200);
    // Two sizes and no choice: one line naming both and the flag.
    let err = model::read_profile_csv_at(Path::new(&path), 4, None, "--microbatch")
        .unwrap_err()
        .to_string();
    assert!(
        err.ends_with("rows at micro-batch sizes 4, 8: choose one with --microbatch"),
        "{err}"
    );
    let err = model::read_profile_csv_at(Path::new(&path), 4, Some(16), "--microbatch")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("--microbatch 16: no rows at this micro-batch size (sizes present: 4, 8)"),
        "{err}"
    );
    // A row without a size among rows with one is refused, with or
    // without a choice: --microbatch would keep or drop it silently.
    let mixed = write(
        "optional_columns",
        "mixed.csv",
        "name,params,grad_time_s,microbatch\na,1000,0.001,4\nb,1000,0.001,\n",
    );
    for choice in [None, Some(4)] {
        let err = model::read_profile_csv_at(Path::new(&mixed), 4, choice, "--microbatch")
            .unwrap_err()
            .to_string();
        assert!(
            err.ends_with(":3: no microbatch value, while other rows give one: give every row its micro-batch size, or none"),
            "{err}"
        );
    }
    // Today's files read as before: the new fields are absent.
    let p = read_profile_csv(Path::new(&data("profile.csv")), 4).unwrap();
    assert!(p.layers.iter().all(|l| l.fwd_time_s.is_none()
        && l.microbatch.is_none()
        && l.bwd_transient_bytes.is_none()));
}

#[test]
fn reads_parameter_tensors_and_refuses_counts_that_do_not_fit_the_parameters() {
    let text =
        "name,params,grad_time_s,param_tensors\nemb,100,0.002,2\nhead,0,0.004,0\nln,4,0.001,\n";
    let path = write("param_tensors", "profile.csv", text);
    let p = read_profile_csv(Path::new(&path), 4).unwrap();
    let tensors: Vec<Option<u64>> = p.layers.iter().map(|l| l.param_tensors).collect();
    assert_eq!(tensors, [Some(2), Some(0), None]);
    for (row, why) in [
        (
            "emb,100,0.002,0",
            "param_tensors \"0\" does not fit 100 parameters",
        ),
        (
            "emb,100,0.002,101",
            "param_tensors \"101\" does not fit 100 parameters",
        ),
        (
            "emb,0,0.002,1",
            "param_tensors \"1\" does not fit 0 parameters",
        ),
    ] {
        let text = format!("name,params,grad_time_s,param_tensors\nhead,50,0.004,1\n{row}\n");
        let bad = write("param_tensors", "bad.csv", &text);
        let err = read_profile_csv(Path::new(&bad), 4)
            .unwrap_err()
            .to_string();
        assert!(err.contains(why) && err.contains("bad.csv"), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
}

#[test]
fn reads_backward_transients_per_micro_batch_and_names_a_bad_one() {
    let text = "name,params,grad_time_s,microbatch,bwd_transient_bytes\n\
                emb,100,0.002,4,\n\
                head,50,0.004,4,1024\n\
                emb,100,0.003,8,0\n\
                head,50,0.007,8,2048\n";
    let path = write("bwd_transient", "profile.csv", text);
    let at = |m| model::read_profile_csv_at(Path::new(&path), 4, Some(m), "--microbatch").unwrap();
    let transients =
        |m| -> Vec<Option<u64>> { at(m).layers.iter().map(|l| l.bwd_transient_bytes).collect() };
    assert_eq!(transients(4), [None, Some(1024)]);
    assert_eq!(transients(8), [Some(0), Some(2048)]);
    let bad = write(
        "bwd_transient",
        "bad.csv",
        "name,params,grad_time_s,bwd_transient_bytes\nhead,50,0.004,-1\n",
    );
    let err = read_profile_csv(Path::new(&bad), 4)
        .unwrap_err()
        .to_string();
    assert!(
        err.ends_with("bwd_transient_bytes \"-1\" is not a non-negative whole number"),
        "{err}"
    );
}

#[test]
fn the_profile_header_gives_its_measured_copy_speed_and_sync_wait() {
    let path = write(
        "readers",
        "header.csv",
        "# collbench layer profile written by scripts/shard_train.py\n\
         # gradient copy: 21288960 bytes in 0.0026464 s, 8.044 GB/s (every rank at once); DDP scales gradients: collbench-analyze ddp --grad-copy-gbps 8.044\n\
         # sync wait: 0.0015264 s per blocking call (steps of the plain model with 12 syncs): collbench-analyze fsdp --sync-wait-s 0.001526\n\
         name,params,grad_time_s\n\
         l0,10,0.001\n\
         # gradient copy: 1 bytes in 1 s, 99 GB/s (a comment among the rows is not the header's)\n",
    );
    let found = header_of(&path);
    assert_eq!(found.copy_gbps, Some(8.044));
    assert_eq!(found.sync_wait_s, Some(0.0015264));
    // No header, or a garbled one: nothing.
    let bare = write(
        "readers",
        "bare.csv",
        "name,params,grad_time_s\nl0,10,0.001\n",
    );
    assert_eq!(header_of(&bare), model::HeaderMeasurements::default());
    let garbled = write(
        "readers",
        "garbled.csv",
        "# gradient copy: fast, x GB/s\n# sync wait: soon s per blocking call\nname,params,grad_time_s\nl0,10,0.001\n",
    );
    assert_eq!(header_of(&garbled), model::HeaderMeasurements::default());
    // Past what the flags accept is no measurement.
    let absurd = write(
        "readers",
        "absurd.csv",
        "# gradient copy: 1 bytes in 1e-300 s, 1e300 GB/s (x)\n# sync wait: 1e300 s per blocking call\nname,params,grad_time_s\nl0,10,0.001\n",
    );
    assert_eq!(header_of(&absurd), model::HeaderMeasurements::default());
}

#[test]
fn the_profile_header_gives_its_sequence_length_and_hidden_size() {
    let measured = write(
        "readers",
        "sequence.csv",
        "# model: bert-base (bert; layers 12, hidden 768, heads 12, vocab 30522, tied head), 109514298 parameters\n\
         # input: batch 8 x sequence 128, fp32, random tokens (seed 0)\n\
         name,params,grad_time_s\n\
         l0,10,0.001\n",
    );
    let found = header_of(&measured);
    assert_eq!((found.sequence, found.hidden), (Some(128), Some(768)));
    let estimated = write(
        "readers",
        "sequence-estimate.csv",
        "# estimate: not a measurement: config.json (4 layers, hidden 512, 8 heads, MLP 2048, vocabulary 100), sequence 1024, micro-batch 2, tp 1, FLOPs at 100 TFLOP/s\n\
         name,params,grad_time_s\n\
         l0,10,0.001\n",
    );
    let found = header_of(&estimated);
    assert!(found.estimate);
    assert_eq!((found.sequence, found.hidden), (Some(1024), Some(512)));
    // Not a length: none.
    for bad in [
        "# input: batch 8 x sequence , fp32\n# model: m (hidden x)\n",
        "# input: batch 8 x sequence -5, fp32\n# model: m (hidden 0)\n",
        "# input: batch 8 x sequence 99999999999999999999999, fp32\n",
        "# input: batch 8 x sequence 16777217, fp32\n# model: m (hidden 16777217)\n",
        "# input: batch 8 x sequence 128k\n",
    ] {
        let path = write(
            "readers",
            "sequence-bad.csv",
            &format!("{bad}name,params,grad_time_s\nl0,10,0.001\n"),
        );
        let found = header_of(&path);
        assert_eq!((found.sequence, found.hidden), (None, None), "{bad}");
    }
}

/// What the `#` header of the profile at `path` measured, as read with it.
fn header_of(path: &str) -> model::HeaderMeasurements {
    read_profile_csv(Path::new(path), 4).unwrap().header
}
