//! `collbench-analyze ddp` end to end for what it shares with the other
//! models: the rows of one micro-batch size from a profile holding several.
use crate::util::{ddp_data, run, scratch};

#[test]
fn a_micro_batch_size_picks_its_rows_as_a_file_of_them_alone_would() {
    // Twelve layers at micro-batch sizes 1, 4 and 16.
    let several = ddp_data("synthetic-pipeline-profile.csv");
    let text = std::fs::read_to_string(&several).unwrap();
    let dir = scratch("ddp-microbatch");
    let alone = dir.join("profile-at-16.csv");
    let rows: String = text
        .lines()
        .filter(|l| l.starts_with("name,") || l.ends_with(",16"))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&alone, rows).unwrap();
    let comm = ddp_data("synthetic-comm.json");
    let ddp = |profile: &str, extra: &[&str]| {
        let mut argv = vec!["ddp", "--profile", profile, "--comm", &comm, "--json"];
        argv.extend_from_slice(extra);
        run(&argv)
    };
    let mut picked = ddp(&several, &["--microbatch", "16"]).json();
    let mut by_itself = ddp(alone.to_str().unwrap(), &[]).json();
    assert_eq!(picked["layers"], 12);
    assert_eq!(picked["profile_microbatch"], 16);
    assert_eq!(by_itself["profile_microbatch"], 16);
    // Every number the same; only the profile's name differs.
    picked["profile"] = serde_json::Value::Null;
    by_itself["profile"] = serde_json::Value::Null;
    assert_eq!(picked, by_itself);
    // Another size gives another answer.
    let at_1 = ddp(&several, &["--microbatch", "1"]).json();
    assert_ne!(at_1["compute_s"], picked["compute_s"]);

    let line = ddp(&several, &[]).fails().to_string();
    assert!(
        line.ends_with("rows at micro-batch sizes 1, 4, 16: choose one with --microbatch"),
        "{line}"
    );
    let line = ddp(&several, &["--microbatch", "8"]).fails().to_string();
    assert!(
        line.contains("--microbatch 8: no rows at this micro-batch size (sizes present: 1, 4, 16)"),
        "{line}"
    );
    let line = ddp(&several, &["--microbatch", "0"]).fails().to_string();
    assert!(line.contains("--microbatch"), "{line}");
    let line = run(&[
        "ddp",
        "--sizes",
        &ddp_data("course-sizes.csv"),
        "--times",
        &ddp_data("course-times.csv"),
        "--comm",
        &comm,
        "--microbatch",
        "4",
    ])
    .fails()
    .to_string();
    assert!(line.contains("--microbatch"), "{line}");
}
