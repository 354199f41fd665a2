//! Nothing clobbered, nothing lost: an existing output is replaced only with
//! `--force`, one a live run is writing (holding its lock) never, outputs that
//! are devices, FIFOs or links to them are refused whatever `--force` says, an
//! output that is one of the inputs is refused, and a write that fails keeps
//! the old file.
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::{data_dir, run, scratch};

fn profile() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../model/tests/data/synthetic-profile.csv")
}

fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs");
    assert!(status.success());
}

fn is_fifo(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::symlink_metadata(path)
        .unwrap()
        .file_type()
        .is_fifo()
}

/// The command lines that write `out`, one per output flag.
fn writers(out: &str, profile: &str) -> Vec<(&'static str, Vec<String>)> {
    let owned = |args: &[&str]| args.iter().map(|a| a.to_string()).collect();
    let ddp = |flag| {
        let comm = "nccl-2.19-all_reduce.log";
        let args = [
            "ddp",
            "--profile",
            profile,
            "--comm",
            comm,
            flag,
            out,
            "--force",
        ];
        (flag, owned(&args))
    };
    let plan = |flag| {
        let args = [
            "plan",
            "--profile",
            profile,
            "--gpus",
            "1",
            "--gpus-per-node",
            "1",
            "--global-batch",
            "1",
            flag,
            out,
            "--force",
        ];
        (flag, owned(&args))
    };
    vec![
        plan("--plot"),
        plan("--timeline"),
        (
            "--out",
            owned(&["import", "nccl-2.19-all_reduce.log", "-o", out, "--force"]),
        ),
        (
            "--out",
            owned(&["plot", "course.csv", "-o", out, "--force"]),
        ),
        (
            "--plot",
            owned(&["fit", "course.csv", "--plot", out, "--force"]),
        ),
        (
            "--plot",
            owned(&[
                "soak",
                "collbench-soak-4cycles.json",
                "--plot",
                out,
                "--force",
            ]),
        ),
        ddp("--plot"),
        ddp("--timeline"),
        (
            "--timeline",
            owned(&[
                "fsdp",
                "--profile",
                profile,
                "--comm",
                "nccl-2.19-all_reduce.log",
                "--strategy",
                "no-shard",
                "--timeline",
                out,
                "--force",
            ]),
        ),
        (
            "--out",
            owned(&["report", "collbench-a.json", "-o", out, "--force"]),
        ),
        (
            "--diagram",
            crate::pipeline::args(&["--microbatches", "8", "--diagram", out, "--force"]),
        ),
        (
            "--plot",
            owned(&[
                "zero",
                "--profile",
                profile,
                "--comm",
                "nccl-2.19-all_reduce.log",
                "--stage",
                "0",
                "--plot",
                out,
                "--force",
            ]),
        ),
    ]
}

/// The writers' command lines without their `--force`.
fn without_force(args: &[String]) -> Vec<&str> {
    args.iter()
        .map(String::as_str)
        .filter(|a| *a != "--force")
        .collect()
}

#[test]
fn every_output_replaces_an_existing_file_only_with_force() {
    let dir = scratch("safety-force");
    let out = dir.join("existing");
    let out_text = out.to_str().unwrap();
    let profile = profile();
    for (flag, args) in writers(out_text, profile.to_str().unwrap()) {
        std::fs::write(&out, "kept").unwrap();
        let line = run(&without_force(&args)).fails().to_string();
        assert!(
            line.contains(&format!("{flag} {out_text}: already exists (pass --force")),
            "{args:?}: {line}"
        );
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "kept", "{args:?}");
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run(&args).ok();
        assert_ne!(std::fs::read_to_string(&out).unwrap(), "kept", "{args:?}");
    }
}

#[test]
fn force_where_nothing_is_written_is_refused_naming_what_would_be() {
    let profile = crate::util::ddp_data("synthetic-profile.csv");
    let comm = crate::util::ddp_data("synthetic-comm.json");
    let pipeline = crate::pipeline::args(&["--microbatches", "8"]);
    let pipeline: Vec<&str> = pipeline.iter().map(String::as_str).collect();
    for (args, writes) in [
        (vec!["table", "course.csv"], "writes no file"),
        (
            vec![
                "predict",
                "course.csv",
                "--collective",
                "all_reduce",
                "--world-size",
                "2",
            ],
            "writes no file",
        ),
        (
            vec!["fit", "course.csv"],
            "writes a file only with --plot, not given here",
        ),
        (
            vec!["soak", "collbench-soak-4cycles.json"],
            "writes a file only with --plot, not given here",
        ),
        (
            vec!["ddp", "--profile", &profile, "--comm", &comm],
            "writes a file only with --plot or --timeline, not given here",
        ),
        (
            vec!["fsdp", "--profile", &profile, "--all-gather", &comm],
            "writes a file only with --plot or --timeline, not given here",
        ),
        (
            vec!["zero", "--profile", &profile, "--comm", &comm],
            "writes a file only with --plot or --timeline, not given here",
        ),
        (
            pipeline.clone(),
            "writes a file only with --diagram or --plot, not given here",
        ),
    ] {
        let args = [&args[..], &["--force"]].concat();
        let line = run(&args).fails().to_string();
        assert_eq!(
            line,
            format!("error: --force: this command {writes}; drop it"),
            "{args:?}"
        );
    }
}

#[test]
fn a_file_a_live_run_is_writing_is_never_replaced_even_with_force() {
    let dir = scratch("safety-held");
    let out = dir.join("soak.json");
    let out_text = out.to_str().unwrap();
    // Held as collbench holds its --out and --csv while it runs.
    let mut held = schema::io::HeldOutput::reserve(&out, false).unwrap();
    held.publish(b"the run's rows").unwrap();
    let profile = profile();
    for (flag, args) in writers(out_text, profile.to_str().unwrap()) {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let line = run(&args).fails().to_string();
        assert!(
            line.contains(&format!("{flag} {out_text}: another run is writing it now")),
            "{args:?}: {line}"
        );
    }
    assert_eq!(std::fs::read(&out).unwrap(), b"the run's rows");
    drop(held);
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    assert_eq!(left.len(), 1, "no temporary files: {left:?}");
}

#[test]
fn force_never_replaces_a_fifo_or_a_link_to_a_device() {
    let dir = scratch("safety-special");
    let fifo = dir.join("fifo");
    mkfifo(&fifo);
    let link = dir.join("stdout-link");
    std::os::unix::fs::symlink("/dev/null", &link).unwrap();
    let profile = profile();
    for target in [&fifo, &link] {
        let out = target.to_str().unwrap();
        for (flag, args) in writers(out, profile.to_str().unwrap()) {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let line = run(&args).fails().to_string();
            assert!(
                line.contains(&format!("{flag} {out}: is a "))
                    && line.contains("not a regular file"),
                "{args:?}: {line}"
            );
        }
    }
    assert!(is_fifo(&fifo), "the FIFO is still a FIFO");
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    assert_eq!(left.len(), 2, "no temporary files");
}

#[test]
fn an_output_that_is_an_input_is_refused() {
    let dir = scratch("safety-same");
    let log = dir.join("run.log");
    std::fs::copy(data_dir().join("nccl-2.19-all_reduce.log"), &log).unwrap();
    let original = std::fs::read(&log).unwrap();
    let log_text = log.to_str().unwrap();
    // The same file spelt another way.
    let other = dir.join(".").join("run.log");
    let other_text = other.to_str().unwrap();
    let profile = profile();
    for args in [
        vec!["import", log_text, "-o", other_text, "--force"],
        vec!["plot", log_text, "-o", other_text, "--force"],
        vec!["fit", log_text, "--plot", other_text, "--force"],
        vec!["report", log_text, "-o", other_text, "--force"],
        vec![
            "ddp",
            "--profile",
            profile.to_str().unwrap(),
            "--comm",
            log_text,
            "--plot",
            other_text,
            "--force",
        ],
    ] {
        let line = run(&args).fails().to_string();
        assert!(line.contains("is also an input"), "{args:?}: {line}");
    }
    assert_eq!(std::fs::read(&log).unwrap(), original);
}

#[test]
fn an_output_in_a_missing_folder_is_refused_before_any_work() {
    let line = run(&["plot", "course.csv", "-o", "no/such/folder/p.svg"])
        .fails()
        .to_string();
    assert!(
        line.contains("--out no/such/folder/p.svg: the folder no/such/folder does not exist"),
        "{line}"
    );
}

#[test]
fn a_failed_plot_keeps_the_previous_file_and_leaves_no_temporary_file() {
    let dir = scratch("safety-full");
    let out = dir.join("p.svg");
    std::fs::write(&out, "previous good plot").unwrap();
    // A file size limit makes the write fail as a full disk would: with
    // SIGXFSZ ignored, writing past it is an EFBIG error.
    let status = Command::new("sh")
        .arg("-c")
        .arg("trap '' XFSZ; ulimit -f 1; exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_collbench-analyze"))
        .args(["plot", "course.csv", "-o", out.to_str().unwrap(), "--force"])
        .current_dir(data_dir())
        .output()
        .unwrap();
    assert_eq!(status.status.code(), Some(2), "{status:?}");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "previous good plot");
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    assert_eq!(left.len(), 1, "no temporary file left: {left:?}");
}

/// Each command's `-h` describes `--force` by its own outputs only; a
/// command that writes no file does not offer it (given, it is refused as
/// above).
#[test]
fn each_command_s_force_help_names_its_own_outputs() {
    let outputs = ["--out", "--plot", "--timeline", "--diagram"];
    for (command, own) in [
        ("import", &["--out"][..]),
        ("plot", &["--out"]),
        ("report", &["--out"]),
        ("fit", &["--plot"]),
        ("soak", &["--plot"]),
        ("ddp", &["--plot", "--timeline"]),
        ("fsdp", &["--plot", "--timeline"]),
        ("zero", &["--plot", "--timeline"]),
        ("pipeline", &["--diagram", "--plot"]),
        ("table", &[]),
        ("compare", &[]),
        ("predict", &[]),
        ("generate", &[]),
    ] {
        let help = run(&[command, "-h"]).ok().to_string();
        let mut lines = help.lines();
        let Some(at) = lines.position(|l| l.trim_start().starts_with("--force")) else {
            assert!(own.is_empty(), "{command}: no --force in its help:\n{help}");
            continue;
        };
        // Its text beside it, or under it when the names are long.
        let beside = help.lines().nth(at).unwrap().trim_start()["--force".len()..].trim();
        let line = if beside.is_empty() {
            lines.next().unwrap_or("").trim()
        } else {
            beside
        };
        assert!(!own.is_empty(), "{command} writes nothing: {line}");
        let said = line
            .split_once(". Without it")
            .expect("`WHAT. Without it …`")
            .0;
        for flag in outputs {
            assert_eq!(
                said.contains(flag),
                own.contains(&flag),
                "{command}: {line}"
            );
        }
    }
}

/// `--force` works before the command's name as after it.
#[test]
fn force_is_read_on_either_side_of_the_command_name() {
    let dir = scratch("safety-force-position");
    let out = dir.join("p.svg");
    let out_text = out.to_str().unwrap();
    let plot = ["plot", "course.csv", "-o", out_text];
    run(&plot).ok();
    run(&[&["--force"][..], &plot].concat()).ok();
    run(&[&plot[..], &["--force"]].concat()).ok();
    let line = run(&plot).fails().to_string();
    assert!(line.contains("already exists (pass --force"), "{line}");
}

#[test]
fn a_picture_named_as_another_image_format_is_refused_before_any_work() {
    let dir = scratch("safety-raster");
    for (args, flag) in [
        (vec!["plot", "course.csv", "-o"], "--out"),
        (vec!["fit", "course.csv", "--plot"], "--plot"),
    ] {
        let png = dir.join("picture.PNG");
        let png = png.to_str().unwrap();
        let line = run(&[&args[..], &[png]].concat()).fails().to_string();
        assert_eq!(
            line,
            format!(
                "error: {flag} {png}: pictures are drawn as SVG only, not .png; name the file .svg"
            )
        );
        assert!(!dir.join("picture.PNG").exists());
    }
    // The report is HTML, and no output goes to standard output.
    let pdf = dir.join("report.pdf");
    let pdf = pdf.to_str().unwrap();
    assert_eq!(
        run(&["report", "course.csv", "-o", pdf])
            .fails()
            .to_string(),
        format!("error: --out {pdf}: the report is an HTML page, not .pdf; name the file .html")
    );
    assert_eq!(
        run(&["plot", "course.csv", "-o", "-"]).fails().to_string(),
        "error: --out -: the output goes to a file, not to standard output; name a file"
    );
    // Report and import outputs are not pictures: their names are theirs.
    let json = dir.join("r.png.json");
    run(&["import", "course.csv", "-o", json.to_str().unwrap()]).ok();
}
