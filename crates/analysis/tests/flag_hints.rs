//! Errors about an input file name the flag that gave it (`--profile
//! p.csv: …`) in every model command, and suggest an import flag
//! (`--lenient`, `--world-size`, …) only where the command has it, else
//! through `collbench-analyze import`.
use crate::util::{ddp_data, run};

/// `pipeline` on the synthetic profile with `sendrecv` as its curve.
fn pipeline(sendrecv: &str) -> Vec<String> {
    let profile = ddp_data("synthetic-pipeline-profile.csv");
    [
        "pipeline",
        "--profile",
        &profile,
        "--stages",
        "2",
        "--microbatches",
        "4",
        "--sendrecv",
        sendrecv,
    ]
    .map(String::from)
    .to_vec()
}

/// `ddp` on the synthetic profile with `comm` as its curve, then `extra`.
fn ddp(comm: &str, extra: &[&str]) -> crate::util::Run {
    let profile = ddp_data("synthetic-profile.csv");
    let argv = [&["ddp", "--profile", &profile, "--comm", comm][..], extra].concat();
    run(&argv)
}

const LENIENT_HERE: &str = "(pass --lenient to skip unreadable lines)";
const LENIENT_VIA_IMPORT: &str =
    "(import the file first (`collbench-analyze import --lenient FILE -o REPORT.json`) to skip unreadable lines)";

#[test]
fn a_model_commands_unreadable_curve_names_its_flag_and_no_lenient_flag_of_its_own() {
    let profile = ddp_data("synthetic-profile.csv");
    // A log cut off mid-row where a curve belongs.
    let cut = "bad-truncated.log";
    let pipeline = pipeline(cut);
    let cases: [(Vec<&str>, &str); 4] = [
        (vec!["ddp", "--profile", &profile, "--comm", cut], "--comm"),
        (
            vec!["fsdp", "--profile", &profile, "--all-gather", cut],
            "--all-gather",
        ),
        (
            vec!["zero", "--stage", "0", "--profile", &profile, "--comm", cut],
            "--comm",
        ),
        (pipeline.iter().map(String::as_str).collect(), "--sendrecv"),
    ];
    for (args, flag) in cases {
        let line = run(&args).fails().to_string();
        assert!(
            line.starts_with(&format!("error: {flag} {cut}:24: expected 13 cells")),
            "{line}"
        );
        assert!(line.ends_with(LENIENT_VIA_IMPORT), "{line}");
        assert!(!line.contains("pass --lenient"), "{line}");
    }
    // Nor do predict and soak have --lenient; table does.
    for args in [
        &[
            "predict",
            "bad-truncated.log",
            "--collective",
            "all_reduce",
            "--world-size",
            "8",
        ][..],
        &["soak", "bad-truncated.log"],
    ] {
        let line = run(args).fails().to_string();
        assert!(line.ends_with(LENIENT_VIA_IMPORT), "{line}");
    }
    let line = run(&["table", "bad-truncated.log"]).fails().to_string();
    assert!(line.ends_with(LENIENT_HERE), "{line}");
    // What the suggested import gives, ddp reads.
    let dir = crate::util::scratch("flag-hints-import");
    let report = dir.join("skipped.json");
    let report = report.to_str().unwrap();
    run(&["import", "bad-truncated.log", "--lenient", "-o", report]).ok();
    assert!(ddp(report, &["--caps", "1:8"]).ok().contains("b* ="));
}

#[test]
fn a_world_size_is_suggested_as_a_flag_only_where_there_is_one() {
    // No `# Rank` lines: ddp has --world-size, pipeline has none.
    let line = ddp("nccl-headerless.log", &[]).fails().to_string();
    assert!(
        line.starts_with("error: --comm nccl-headerless.log:3: world size unknown")
            && line.contains("; pass --world-size N; its busbw/algbw ratio suggests 4"),
        "{line}"
    );
    let argv = pipeline("nccl-headerless.log");
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let line = run(&argv).fails().to_string();
    assert!(
        line.contains("; import the file first (`collbench-analyze import --world-size N FILE -o REPORT.json`)")
            && !line.contains("pass --world-size"),
        "{line}"
    );
}

#[test]
fn every_model_command_names_the_flag_of_a_bad_profile() {
    let comm = ddp_data("synthetic-comm.json");
    let all_gather = ddp_data("synthetic-all-gather.json");
    // A collbench report where the layer profile belongs.
    let wrong = "collbench-a.json";
    for args in [
        vec!["ddp", "--profile", wrong, "--comm", &comm],
        vec!["fsdp", "--profile", wrong, "--all-gather", &all_gather],
        vec!["zero", "--stage", "0", "--profile", wrong, "--comm", &comm],
        vec![
            "pipeline",
            "--profile",
            wrong,
            "--stages",
            "2",
            "--microbatches",
            "4",
        ],
    ] {
        let line = run(&args).fails().to_string();
        assert!(
            line.starts_with("error: --profile collbench-a.json: JSON (a report, or nccl-tests -J output?), not the CSV table this flag reads"),
            "{args:?}: {line}"
        );
    }
    // The other way round: a layer profile where timings belong.
    let profile = ddp_data("synthetic-profile.csv");
    let line = ddp(&profile, &[]).fails().to_string();
    assert_eq!(
        line,
        format!("error: --comm {profile}: a layer profile (name,params,grad_time_s,...), not collective timings: give it to --profile of ddp, fsdp, zero, pipeline or plan")
    );
    let line = run(&["ddp", "--profile", "no-such-profile.csv", "--comm", &comm])
        .fails()
        .to_string();
    assert!(
        line.starts_with("error: --profile no-such-profile.csv: "),
        "{line}"
    );
    // ddp's own checks of its curve name --comm, as fsdp's name theirs.
    let line = ddp(&comm, &["--world-size", "3"]).fails().to_string();
    assert_eq!(
        line,
        format!("error: --comm {comm}: no all_reduce results for --world-size 3 (world sizes present: 4)")
    );
}

#[test]
fn a_curve_log_is_read_as_the_collective_it_tells_not_as_the_flag_expects() {
    // nccl-tests 2.11 wrote no "Collective test starting" line; its rows
    // tell all_reduce. Given as the all-gather curve, it is refused, not
    // read as all_gather.
    let log = crate::util::data_dir()
        .join("nccl-2.11-all_reduce.log")
        .display()
        .to_string();
    let profile = ddp_data("synthetic-profile.csv");
    let line = run(&[
        "fsdp",
        "--profile",
        &profile,
        "--all-gather",
        &log,
        "--reduce-scatter",
        &log,
    ])
    .fails()
    .to_string();
    assert!(
        line.contains(&format!(
            "--all-gather {log}: no all_gather results (it holds all_reduce"
        )),
        "{line}"
    );
    // As the all-reduce curve it is what it says, and the note that told
    // its collective reaches stderr, naming the flag.
    let out = ddp(&log, &["--caps", "1:8"]);
    out.ok();
    assert!(
        out.stderr.contains(&format!(
            "note: --comm {log}:16: collective all_reduce told by the rows"
        )),
        "{}",
        out.stderr
    );
    // A course CSV never says its collective: the flag's, with a note.
    let course = crate::util::data_dir()
        .join("course.csv")
        .display()
        .to_string();
    let out = ddp(
        &course,
        &["--caps", "1:8", "--backend", "nccl", "--world-size", "2"],
    );
    out.ok();
    assert!(
        out.stderr.contains(&format!(
            "note: --comm {course}: rows taken as all_reduce, as the flag naming the file expects"
        )),
        "{}",
        out.stderr
    );
    // Unless its file name names another collective: then it is read as
    // that one, and the flag that wanted something else refuses it.
    let named = crate::util::scratch("flag-hints-named").join("all_gather.csv");
    std::fs::copy(crate::util::data_dir().join("course.csv"), &named).unwrap();
    let named = named.display().to_string();
    let mut argv = pipeline(&named);
    argv.extend(["--backend".to_string(), "nccl".to_string()]);
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let line = run(&argv).fails().to_string();
    assert!(
        line.contains(&format!(
            "--sendrecv {named}: no sendrecv results (it holds all_gather"
        )),
        "{line}"
    );
}

#[test]
fn an_expected_file_that_is_not_a_regular_file_is_refused_before_it_is_read() {
    let log = crate::util::data_dir()
        .join("nccl-2.19-all_reduce.log")
        .display()
        .to_string();
    let line = run(&["table", &log, "--expected", "/dev/zero"])
        .fails()
        .to_string();
    assert_eq!(
        line,
        "error: --expected /dev/zero: is a character device, not a regular file (inputs are regular files)"
    );
}

#[test]
fn a_bus_factor_mismatch_suggests_the_import_flags_only_where_the_command_has_them() {
    // An all-gather log relabelled all_reduce: its busbw/algbw is not
    // all_reduce's factor.
    let gather = std::fs::read_to_string(
        crate::util::data_dir().join("nccl-2.19-all_gather-iter-timestamps.log"),
    )
    .unwrap();
    let dir = crate::util::scratch("bus-factor-mismatch");
    let log = dir.join("mismatch.log");
    std::fs::write(
        &log,
        gather
            .replace("all_gather_perf", "all_reduce_perf")
            .replace(" none ", " sum "),
    )
    .unwrap();
    let log = log.display().to_string();
    let table = run(&["table", &log]);
    table.ok();
    assert!(
        table
            .stderr
            .contains("has factor 1.000: check --collective and --world-size"),
        "{}",
        table.stderr
    );
    // predict's --collective and --world-size say what to predict, not
    // what the file is.
    let predict = run(&[
        "predict",
        &log,
        "--collective",
        "all_reduce",
        "--world-size",
        "2",
    ]);
    predict.ok();
    assert!(
        predict.stderr.contains("has factor 1.000: check the collective and world size it was read as; to set them, import the file first (`collbench-analyze import --collective C --world-size N FILE -o REPORT.json`)"),
        "{}",
        predict.stderr
    );
}

#[test]
fn a_course_csv_is_taken_at_its_file_name_only_where_a_whole_word_names_it() {
    let dir = crate::util::scratch("course-names");
    let course = crate::util::data_dir().join("course.csv");
    // `table` without --collective reads all_gather.csv as all-gather.
    let gather = dir.join("all_gather.csv");
    std::fs::copy(&course, &gather).unwrap();
    let out = run(&["table", gather.to_str().unwrap()]);
    assert!(out.ok().contains("all_gather"), "{}", out.stdout);
    assert!(
        out.stderr
            .contains("rows taken as all_gather, as the file name says"),
        "{}",
        out.stderr
    );
    // A name that only holds a collective's letters is no name: the
    // flag's collective stands.
    let reduced = dir.join("comm-reduced-precision.csv");
    std::fs::copy(&course, &reduced).unwrap();
    let out = ddp(
        reduced.to_str().unwrap(),
        &["--caps", "1:8", "--backend", "nccl", "--world-size", "2"],
    );
    out.ok();
    assert!(
        out.stderr
            .contains("rows taken as all_reduce, as the flag naming the file expects"),
        "{}",
        out.stderr
    );
}

/// A value starting with `-` and a digit that is no number (`-5G`) is read
/// by clap as a flag; the error names the flag it was given to and what
/// that flag accepts, as `--flag=-5G` would.
#[test]
fn a_dash_value_that_is_no_number_is_refused_by_the_flag_it_follows() {
    let profile = ddp_data("synthetic-pipeline-profile.csv");
    for (flag, value, accepted) in [
        ("--memory-limit", "-5G", "is not a byte size"),
        ("--seq", "-1k", "expected a whole number from 1 to"),
        ("--split", "-3,2", "layers per part"),
    ] {
        let argv = [
            "pipeline",
            "--profile",
            &profile,
            "--stages",
            "2",
            "--microbatches",
            "4",
            flag,
            value,
        ];
        let line = run(&argv).fails().to_string();
        assert!(
            line.contains(&format!("invalid value '{value}' for '{flag} <"))
                && line.contains(accepted),
            "{line}"
        );
    }
    // After a switch it is a stray argument, as clap says.
    let argv = [
        "pipeline",
        "--profile",
        &profile,
        "--stages",
        "2",
        "--microbatches",
        "4",
        "--json",
        "-5G",
    ];
    let line = run(&argv).fails().to_string();
    assert!(line.contains("unexpected argument '-5'"), "{line}");
}
