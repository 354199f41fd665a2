//! Inputs cannot make the analysis lie: a time that is not finite, positive
//! and physical after unit conversion is refused in every format, naming the
//! file, the row and the value, by every subcommand that reads it; so is a
//! histogram that claims more than its field holds, counts past 2^53 or
//! holds 0 ns, read in bounded memory.
use std::path::{Path, PathBuf};

use crate::util::{data_dir, run, scratch};

/// Writes `name` in `dir`: the fixture `from` with its first `old` replaced.
fn altered(dir: &Path, name: &str, from: &str, old: &str, new: &str) -> PathBuf {
    let text = std::fs::read_to_string(data_dir().join(from)).unwrap();
    assert!(text.contains(old), "{from} holds {old:?}");
    let path = dir.join(name);
    std::fs::write(&path, text.replacen(old, new, 1)).unwrap();
    path
}

fn profile() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../model/tests/data/synthetic-profile.csv")
        .to_string_lossy()
        .into_owned()
}

/// Every subcommand that reads `file` fails with `want` in its one line.
fn refused_everywhere(file: &Path, want: &str) {
    let f = file.to_str().unwrap();
    let out = file.with_extension("out.json");
    let out = out.to_str().unwrap();
    let svg = file.with_extension("svg");
    let svg = svg.to_str().unwrap();
    let profile = profile();
    let commands: Vec<Vec<&str>> = vec![
        vec!["import", f, "-o", out],
        vec!["table", f],
        vec!["fit", f],
        vec!["compare", f, "collbench-a.json"],
        vec!["plot", f, "-o", svg],
        vec!["ddp", "--profile", &profile, "--comm", f],
    ];
    for args in commands {
        let line = run(&args).fails().to_string();
        assert!(line.contains(want), "{args:?}: {line} lacks {want:?}");
    }
    assert!(!Path::new(out).exists() && !Path::new(svg).exists());
}

#[test]
fn course_csv_times_that_overflow_or_underflow_are_refused() {
    let dir = scratch("hostile-course");
    let first = "nccl,2,64,256,2.815194e-05,8.353e-07";
    for (name, row, want) in [
        (
            "huge.csv",
            "nccl,2,64,256,1e308,8.353e-07",
            ":2: average_time \"1e308\" s = inf µs: not a measured time",
        ),
        (
            "tiny.csv",
            "nccl,2,64,256,1e-320,8.353e-07",
            ":2: average_time \"1e-320\" s = 9.99988867e-315 µs: not a measured time",
        ),
        (
            "spread.csv",
            "nccl,2,64,256,2.8e-05,1e308",
            ":2: stdev_time \"1e308\" s = inf µs: not a time",
        ),
    ] {
        let file = altered(&dir, name, "course.csv", first, row);
        refused_everywhere(&file, &format!("{}{want}", file.display()));
    }
}

#[test]
fn nccl_tests_log_times_of_zero_or_beyond_days_are_refused() {
    let dir = scratch("hostile-log");
    let row = "    36.82   28.48   49.84       0    37.04";
    for (name, time) in [
        ("zero.log", "0.00"),
        ("huge.log", "1e+300"),
        ("inf.log", "inf"),
        ("nan.log", "nan"),
        ("overflow.log", "1e309"),
    ] {
        let new = row.replacen("36.82", time, 1);
        let file = altered(&dir, name, "nccl-2.19-all_reduce.log", row, &new);
        let want = format!(
            "{}:40: out-of-place time {time:?}: not a measured time",
            file.display()
        );
        refused_everywhere(&file, &want);
    }
}

#[test]
fn nccl_tests_json_negative_times_are_refused_not_dropped() {
    let dir = scratch("hostile-json");
    let file = altered(
        &dir,
        "negative.json",
        "nccl-json-v1-all_reduce.json",
        "\"time\":7.945215",
        "\"time\":-7.9",
    );
    let want = format!(
        "{}: results[0]: out_of_place time -7.9: not a measured time",
        file.display()
    );
    refused_everywhere(&file, &want);
}

#[test]
fn nccl_tests_json_non_finite_times_are_refused_not_left_out() {
    let dir = scratch("hostile-json-nan");
    for (name, time) in [("nan.json", "\"nan\""), ("inf.json", "\"inf\"")] {
        let file = altered(
            &dir,
            name,
            "nccl-json-v1-all_reduce.json",
            "\"time\":7.945215",
            &format!("\"time\":{time}"),
        );
        let want = format!(
            "{}: results[0]: out_of_place time {}: not a measured time",
            file.display(),
            if name == "nan.json" { "NaN" } else { "inf" }
        );
        refused_everywhere(&file, &want);
    }
}

#[test]
fn collbench_reports_with_negative_or_zero_times_are_refused() {
    let dir = scratch("hostile-report");
    for (name, mean) in [("negative.json", "-12.7"), ("zero.json", "0.0")] {
        let file = altered(
            &dir,
            name,
            "collbench-a.json",
            "\"mean\": 12.711666666666668",
            &format!("\"mean\": {mean}"),
        );
        let want = format!(
            "{}: results[0] (all_reduce out 1024 bytes): time_us.mean {}: not a measured time",
            file.display(),
            mean.trim_end_matches(".0")
        );
        refused_everywhere(&file, &want);
    }
}

#[test]
fn devices_fifos_folders_and_oversized_files_are_not_read() {
    let dir = scratch("hostile-special");
    let fifo = dir.join("fifo");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let huge = dir.join("huge.log");
    // Sparse: 1 GiB and a byte, at no cost on disk.
    std::fs::File::create(&huge)
        .unwrap()
        .set_len((1 << 30) + 1)
        .unwrap();
    let cases = [
        (
            "/dev/zero".to_string(),
            "/dev/zero: is a character device, not a regular file (inputs are regular files)"
                .to_string(),
        ),
        (
            fifo.display().to_string(),
            format!(
                "{}: is a FIFO (named pipe), not a regular file",
                fifo.display()
            ),
        ),
        (
            dir.display().to_string(),
            format!("{}: is a folder, not a regular file", dir.display()),
        ),
        (
            huge.display().to_string(),
            format!(
                "{}: 1073741825 bytes is over the limit of 1073741824 bytes on inputs",
                huge.display()
            ),
        ),
    ];
    for (file, want) in &cases {
        for args in [
            vec!["table", file],
            vec!["import", file, "-o", "never.json"],
        ] {
            let line = run(&args).fails().to_string();
            assert!(line.contains(want.as_str()), "{args:?}: {line}");
        }
    }
}

/// The first row's `iteration_max` histogram of collbench-histograms.json.
const FIRST_HISTOGRAM: &str = "HISTEwAAAFgAAAAAAAAAAwAAAAAAAAABAAAAAAAAP/8/8AAAAAAAAOcPAg8CCg8EFBEUERIRFBEMEQwRCBEMEQoRDBEEAg8EEQgRBBECAg8CJQQCEQIRAhEEDwYTAiMEEQITAhECOQKHAQLLCgKHDgKjBAKBCgLfBAKfBQK7AgI=";

/// The V2 encoding of `(value_ns, count)` pairs, as the report holds it.
fn v2_bytes(counts: &[(u64, u64)]) -> Vec<u8> {
    use hdrhistogram::serialization::{Serializer, V2Serializer};
    let mut h = hdrhistogram::Histogram::<u64>::new(3).unwrap();
    for &(value, count) in counts {
        h.record_n(value, count).unwrap();
    }
    let mut bytes = Vec::new();
    V2Serializer::new().serialize(&h, &mut bytes).unwrap();
    bytes
}

/// collbench-histograms.json with its first row's histogram made of `bytes`.
fn with_histogram(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    use base64::Engine;
    let text = base64::engine::general_purpose::STANDARD.encode(bytes);
    altered(
        dir,
        name,
        "collbench-histograms.json",
        FIRST_HISTOGRAM,
        &text,
    )
}

#[test]
fn hostile_histograms_are_refused_with_file_and_row_in_bounded_memory() {
    let dir = scratch("hostile-histogram");
    let mut claims_2gb = v2_bytes(&[(1000, 1)]);
    claims_2gb[4..8].copy_from_slice(&0x7fff_ffffu32.to_be_bytes());
    let cases = [
        (
            "claims.json",
            claims_2gb,
            "not a histogram (base64 of HdrHistogram V2): its header claims a 2147483647-byte payload but",
        ),
        (
            "overflow.json",
            v2_bytes(&[(1000, 1 << 53), (2000, 1)]),
            "not a histogram (base64 of HdrHistogram V2): its counts sum past 9007199254740992 (2^53) values",
        ),
        (
            "zero.json",
            v2_bytes(&[(0, 5)]),
            "holds a time of 0 ns (iteration times are positive)",
        ),
    ];
    for (name, bytes, want) in cases {
        let file = with_histogram(&dir, name, &bytes);
        let want = format!(
            "{}: results[0] (all_reduce out 8 bytes): histograms.iteration_max: {want}",
            file.display()
        );
        refused_everywhere(&file, &want);
        // Under a 1 GB address-space limit the 2 GB claim is never allocated.
        let limited = std::process::Command::new("sh")
            .arg("-c")
            .arg("ulimit -v 1000000; exec \"$0\" \"$@\"")
            .arg(env!("CARGO_BIN_EXE_collbench-analyze"))
            .args(["table", "--stat", "p99", file.to_str().unwrap()])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&limited.stderr);
        assert_eq!(limited.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(&want), "{stderr}");
    }
}

#[test]
fn a_zero_minimum_is_refused_not_shown_as_infinite_bandwidth() {
    let dir = scratch("hostile-min");
    let file = altered(
        &dir,
        "min0.json",
        "collbench-histograms.json",
        "\"min\":1.012",
        "\"min\":0.0",
    );
    let want = format!(
        "{}: results[0] (all_reduce out 8 bytes): time_us.min 0: not a measured time",
        file.display()
    );
    refused_everywhere(&file, &want);
    let line = run(&["table", "--stat", "min", file.to_str().unwrap()])
        .fails()
        .to_string();
    assert!(line.contains(&want), "{line}");
}

#[test]
fn a_line_longer_than_a_mebibyte_is_refused_before_it_is_held() {
    let dir = scratch("hostile-line");
    let one_line = dir.join("one-line.log");
    // Sparse: 1 GiB of zero bytes and no line end, at no cost on disk.
    std::fs::File::create(&one_line)
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    let want = format!(
        "{}: line 1 is longer than 1048576 bytes: not a line of nccl-tests output",
        one_line.display()
    );
    for command in ["table", "import"] {
        // Under a 512 MB address-space limit: the line is never held whole.
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg("ulimit -v 512000; exec \"$0\" \"$@\"")
            .arg(env!("CARGO_BIN_EXE_collbench-analyze"))
            .args([command, one_line.to_str().unwrap()])
            .args(if command == "import" {
                &["-o", "never.json"][..]
            } else {
                &[][..]
            })
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{command}: {stderr}");
        assert!(stderr.contains(&want), "{command}: {stderr}");
    }
}

#[test]
fn a_profile_of_fifty_thousand_layers_is_swept_in_seconds() {
    let dir = scratch("hostile-layers");
    let profile = dir.join("layers.csv");
    let mut text = String::from("name,params,grad_time_s\n");
    for i in 0..50_000u64 {
        text.push_str(&format!("l{i},{},0.00001\n", 1000 + (i * 7919) % 200_000));
    }
    std::fs::write(&profile, text).unwrap();
    // Walking every step cost the layers' square: over ten minutes at this
    // size in a debug build; now seconds. The limit only catches that
    // regression (a hang guard, not a speed claim), with room for a loaded
    // 2-core machine running the other tests at once.
    let out = std::process::Command::new("timeout")
        .arg("300")
        .arg(env!("CARGO_BIN_EXE_collbench-analyze"))
        .args(["ddp", "--profile", profile.to_str().unwrap()])
        .args(["--comm", "nccl-2.19-all_reduce.log"])
        .current_dir(data_dir())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let note = "steps (walking every step of 50000 layers would cost their square)";
    assert!(
        stdout.contains("note: the step curve stops at cap") && stdout.contains(note),
        "{stdout}"
    );
}

#[test]
fn negative_numbers_are_refused_by_the_flag_they_were_given_to() {
    let profile = profile();
    let cases: [(Vec<&str>, &str); 4] = [
        (
            vec!["table", "nccl-2.19-all_reduce.log", "--world-size", "-1"],
            "invalid value '-1' for '--world-size <N>'",
        ),
        (
            vec![
                "ddp",
                "--profile",
                &profile,
                "--comm",
                "nccl-2.19-all_reduce.log",
                "--caps",
                "-5",
            ],
            "invalid value '-5' for '--caps <LO:HI|LIST>'",
        ),
        (
            vec!["fit", "course.csv", "-b", "-5"],
            "invalid value '-5' for '--min-bytes <SIZE>'",
        ),
        (
            vec!["import", "course.csv", "-o", "x.json", "--world-size", "-2"],
            "invalid value '-2' for '--world-size <N>'",
        ),
    ];
    for (args, want) in cases {
        let line = run(&args).fails().to_string();
        assert!(line.contains(want), "{args:?}: {line}");
    }
}

#[test]
fn arguments_that_are_not_utf8_are_paths_or_one_line_naming_the_flag() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let dir = scratch("hostile-utf8");
    let svg = dir.join(OsStr::from_bytes(b"plot\xff.svg"));
    let analyze = |args: &[&OsStr]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_collbench-analyze"))
            .args(args)
            .current_dir(data_dir())
            .output()
            .unwrap()
    };
    let out = analyze(&[
        OsStr::new("plot"),
        OsStr::new("course.csv"),
        OsStr::new("-o"),
        svg.as_os_str(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(svg.is_file());
    let out = analyze(&[
        OsStr::new("table"),
        OsStr::new("course.csv"),
        OsStr::new("--stat"),
        OsStr::from_bytes(b"p\xff"),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(
        stderr.trim_end(),
        "error: --stat: \"p\\xFF\" is not UTF-8 (values are text; only file paths may hold other bytes)"
    );
}

/// Issue 34, item 21: time flags have an upper bound, refused by the flag
/// (not a 300-digit step, nor an error blaming the profile).
#[test]
fn times_past_an_hour_are_refused_by_their_flag() {
    let profile = crate::util::ddp_data("synthetic-profile-fwd.csv");
    for value in ["1e300", "1e308", "3601"] {
        let line = run(&[
            "zero",
            "--profile",
            &profile,
            "--world-size",
            "4",
            "--optimizer-step-s",
            value,
        ])
        .fails()
        .to_string();
        assert!(
            line.contains(&format!(
                "invalid value '{value}' for '--optimizer-step-s <SECONDS>': \"{value}\" is not a time from 0 to 3600 seconds"
            )),
            "{line}"
        );
    }
}

/// Issue 34, item 21: `fit --holdout` on too few sizes says how many sizes
/// were given and how many it needs, not the half each fold fits on.
#[test]
fn a_holdout_on_too_few_sizes_counts_the_sizes_given() {
    let dir = scratch("hostile-holdout-few");
    let course = dir.join("four-sizes.csv");
    std::fs::write(
        &course,
        "backend,world_size,total_elements,total_bytes,average_time,stdev_time\n\
         nccl,2,64,256,2.8e-05,8e-07\n\
         nccl,2,256,1024,2.9e-05,1e-06\n\
         nccl,2,1024,4096,3.0e-05,1e-06\n\
         nccl,2,4096,16384,3.2e-05,5e-07\n",
    )
    .unwrap();
    let line = run(&["fit", course.to_str().unwrap(), "--holdout"])
        .fails()
        .to_string();
    assert!(
        line.contains("--holdout fits 1 segment(s) on each half of the 4 distinct message sizes and tests it on the other, and a fit needs at least 3: give at least 6 sizes, or leave --holdout out"),
        "{line}"
    );
}

/// Two ranks' Kineto traces of one all-reduce of `elements` `dtype`
/// elements that took `dur` µs.
fn one_call_traces(dir: &Path, name: &str, elements: u64, dtype: &str, dur: f64) -> Vec<String> {
    (0..2)
        .map(|rank| {
            let trace = serde_json::json!({
                "distributedInfo": {"rank": rank, "world_size": 2},
                "traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "record_param_comms",
                    "ts": 5.0, "dur": dur,
                    "args": {"Collective name": "allreduce", "In msg nelems": elements,
                             "Out msg nelems": elements, "In split size": "[]",
                             "Out split size": "[]", "dtype": dtype,
                             "Process Group Name": "0", "Process Group Ranks": "[0, 1]",
                             "Rank": rank, "Seq": 1}}]
            });
            let path = dir.join(format!("{name}_rank{rank}.json"));
            std::fs::write(&path, trace.to_string()).unwrap();
            path.display().to_string()
        })
        .collect()
}

#[test]
fn a_trace_of_instant_or_impossibly_large_calls_is_warned() {
    let dir = scratch("hostile-trace-calls");
    let instant = one_call_traces(&dir, "instant", 1000, "Float", 0.0);
    let out = run(&["trace", &instant[0], &instant[1]]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains(
            "warning: 2 call(s) recorded with a duration of 0 us (the profiler saw no time pass)"
        ),
        "{}",
        out.stdout
    );
    let huge = one_call_traces(&dir, "huge", u64::MAX, "Double", 5.0);
    let out = run(&["trace", &huge[0], &huge[1]]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout
            .contains("warning: 2 call(s) whose size is past 2^64 bytes (elements × element size)"),
        "{}",
        out.stdout
    );
}

#[test]
fn traces_of_two_world_sizes_are_refused() {
    let dir = scratch("hostile-trace-worlds");
    let files = one_call_traces(&dir, "mixed", 1000, "Float", 5.0);
    let text = std::fs::read_to_string(&files[1]).unwrap();
    std::fs::write(
        &files[1],
        text.replace("\"world_size\":2", "\"world_size\":4"),
    )
    .unwrap();
    let out = run(&["trace", &files[0], &files[1]]);
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert_eq!(
        out.stderr.trim(),
        format!(
            "error: {} is of a world of 4 ranks but {} of 2: give the traces of one job (accepted: files whose world sizes agree)",
            files[1], files[0]
        )
    );
}
