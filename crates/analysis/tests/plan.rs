//! `plan` and `profile --config` as a user runs them: the guide's example
//! (an estimated GPT 6.7B on 64 GPUs under 80 GB, from synthetic curves at
//! 8 and 16 ranks and the scale model for the rest) with its JSON keys,
//! the estimate and prediction warnings, the timeline; and every refusal
//! in one line naming its flag.
use crate::util::{ddp_data, run, scratch};

/// The example's flags, run in `tests/data`.
fn example(extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = vec!["plan".into()];
    for tp in [1, 2, 4, 8] {
        args.push("--profile".into());
        args.push(ddp_data(&format!("plan/profiles/gpt-6.7b-tp{tp}.csv")));
    }
    for (flag, prefix) in [
        ("--comm", "all_reduce"),
        ("--all-gather", "all_gather"),
        ("--reduce-scatter", "reduce_scatter"),
    ] {
        for layout in ["2r1n", "4r1n", "8r1n", "16r2n"] {
            args.push(flag.into());
            args.push(ddp_data(&format!("plan/{prefix}-{layout}.json")));
        }
    }
    for layout in ["2r1n", "2r2n"] {
        args.push("--sendrecv".into());
        args.push(ddp_data(&format!("plan/sendrecv-{layout}.json")));
    }
    for a in [
        "--gpus",
        "64",
        "--gpus-per-node",
        "8",
        "--global-batch",
        "256",
        "--microbatch",
        "1,2",
        "--seq",
        "2048",
        "--hidden",
        "4096",
        "--heads",
        "32",
        "--recompute",
        "none,full",
        "--zero",
        "0,1",
        "--memory-limit",
        "80GB",
    ] {
        args.push(a.into());
    }
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

fn run_strings(args: &[String]) -> crate::util::Run {
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    run(&refs)
}

#[test]
fn the_guide_example_picks_the_fastest_configuration_that_fits_80_gb() {
    let json = run_strings(&example(&["--json"])).json();
    let configs = json["configs"].as_array().expect("configs");
    assert!(configs.len() > 100, "{}", configs.len());
    for key in [
        "tp",
        "pp",
        "dp",
        "microbatch",
        "schedule",
        "recompute",
        "zero",
        "step_ms",
        "bubble_fraction",
        "exposed_comm_ms",
        "memory",
    ] {
        assert!(
            configs[0].get(key).is_some(),
            "{key} missing: {}",
            configs[0]
        );
    }
    for key in [
        "params_bytes",
        "grads_bytes",
        "optimizer_bytes",
        "activations_bytes",
        "peak_bytes",
    ] {
        assert!(configs[0]["memory"][key].is_u64(), "{key}");
    }
    for group in ["tp", "pp", "dp"] {
        assert!(configs[0]["exposed_comm_ms"][group].is_f64(), "{group}");
    }
    let best = &json["best"];
    let limit = 80_000_000_000u64;
    assert!(best["memory"]["peak_bytes"].as_u64().unwrap() <= limit);
    // Everything faster than the best is over the limit.
    let best_ms = best["step_ms"].as_f64().unwrap();
    for c in configs {
        if c["step_ms"].as_f64().unwrap() < best_ms {
            assert!(c["memory"]["peak_bytes"].as_u64().unwrap() > limit, "{c}");
        }
    }
    // DDP (zero 0) at tp 1 pp 1 needs 16 bytes a parameter: over 80 GB.
    let ddp = configs
        .iter()
        .find(|c| c["tp"] == 1 && c["pp"] == 1 && c["zero"] == 0 && c["recompute"] == "none")
        .expect("tp 1 pp 1");
    assert_eq!(ddp["fits_memory_limit"], false, "{ddp}");
    let warnings = json["warnings"].to_string();
    assert!(warnings.contains("is an estimate"), "{warnings}");
    assert!(
        warnings.contains("not measured, so predicted by the scale model"),
        "{warnings}"
    );
    let curves = json["curves"].as_array().unwrap();
    assert!(curves
        .iter()
        .any(|c| c["predicted"] == true && c["source"].as_str().unwrap().contains("NCCL's pick")));
    assert!(curves.iter().any(|c| c["predicted"] == false));
}

#[test]
fn the_text_names_the_best_and_its_curves_and_the_timeline_is_drawn() {
    let dir = scratch("plan-timeline");
    let svg = dir.join("best.svg");
    let out = run_strings(&example(&[
        "--top",
        "5",
        "--timeline",
        svg.to_str().unwrap(),
    ]));
    let text = out.ok();
    assert!(text.contains("best: tp "), "{text}");
    assert!(text.contains("... "), "{text}");
    assert!(
        text.lines().filter(|l| l.starts_with("curve: ")).count() >= 2,
        "{text}"
    );
    let picture = std::fs::read_to_string(&svg).unwrap();
    assert!(
        picture.contains("stage 0")
            || picture.contains("data-parallel")
            || picture.contains("all-reduce")
    );
    assert!(
        out.stderr
            .contains("--memory-limit 80GB read as 80000000000 bytes"),
        "{}",
        out.stderr
    );
}

#[test]
fn zero_0_to_3_lists_zero_3_rows_at_one_stage_and_skips_it_with_pipeline_stages() {
    let mut args = example(&["--json"]);
    let at = args.iter().position(|a| a == "--zero").unwrap();
    args[at + 1] = "0,1,2,3".into();
    let json = run_strings(&args).json();
    let configs = json["configs"].as_array().expect("configs");
    let zero3: Vec<_> = configs.iter().filter(|c| c["zero"] == 3).collect();
    assert!(!zero3.is_empty(), "no ZeRO-3 row");
    for c in &zero3 {
        assert_eq!(c["pp"], 1, "{c}");
        assert_eq!(c["bubble_fraction"], 0.0, "{c}");
        assert!(c["step_ms"].as_f64().unwrap() > 0.0, "{c}");
        // The peak holds more than the sharded model states: the gathered
        // units and the gradients waiting for their reduce-scatter.
        let m = &c["memory"];
        let states: u64 = ["params_bytes", "grads_bytes", "optimizer_bytes"]
            .iter()
            .map(|k| m[*k].as_u64().unwrap())
            .sum();
        assert!(m["peak_bytes"].as_u64().unwrap() > states, "{c}");
    }
    let notes = json["notes"].to_string();
    assert!(
        notes.contains("skipped: ZeRO-3 with pipeline stages (DeepSpeed runs ZeRO-3 without pipeline parallelism)"),
        "{notes}"
    );
    assert!(
        notes.contains("ZeRO-3 rows are `zero --stage 3`'s step"),
        "{notes}"
    );
    // The text table lists them in its zero column.
    args.retain(|a| a != "--json");
    args.extend(["--top".to_string(), "100000".to_string()]);
    let out = run_strings(&args);
    let text = out.ok();
    let rows: Vec<Vec<&str>> = text
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|w| w.len() > 7 && w[0].parse::<u32>().is_ok() && w[7] == "3")
        .collect();
    assert_eq!(rows.len(), zero3.len(), "{text}");
    assert!(rows.iter().all(|w| w[1] == "1"), "{text}");
}

#[test]
fn plan_refusals_name_their_flag_in_one_line() {
    let tp1 = ddp_data("plan/profiles/gpt-6.7b-tp1.csv");
    for (extra, needle) in [
        (vec!["--tp", "16"], "--tp 16"),
        (vec!["--zero", "5"], "--zero"),
        (vec!["--split", "3,0"], "--split"),
        (vec!["--seq", "2048"], "--hidden"),
        (
            vec!["--tp-comm-overlap"],
            "--tp-comm-overlap needs --sequence-parallel",
        ),
        (vec!["--tp-overlap-fraction", "0.5"], "--tp-comm-overlap"),
        (
            vec![
                "--sequence-parallel",
                "--tp-comm-overlap",
                "--tp-overlap-fraction",
                "2",
            ],
            "--tp-overlap-fraction 2",
        ),
        (
            vec!["--shared-compute-slowdown", "0.5"],
            "--shared-compute-slowdown",
        ),
    ] {
        let mut args: Vec<String> = vec![
            "plan",
            "--profile",
            tp1.as_str(),
            "--gpus",
            "8",
            "--gpus-per-node",
            "8",
            "--global-batch",
            "8",
        ]
        .into_iter()
        .map(String::from)
        .collect();
        args.extend(extra.iter().map(|s| s.to_string()));
        let out = run_strings(&args);
        let line = out.fails().to_string();
        assert!(line.contains(needle), "{needle}: {line}");
    }
    // A group with neither a curve nor files to predict it from.
    let out = run(&[
        "plan",
        "--profile",
        &tp1,
        "--gpus",
        "8",
        "--gpus-per-node",
        "8",
        "--global-batch",
        "8",
        "--tp",
        "1",
        "--pp",
        "1",
    ]);
    let line = out.fails().to_string();
    assert!(
        line.contains("all_reduce over 8 ranks on 1 node") && line.contains("--comm"),
        "{line}"
    );
}

#[test]
fn profile_config_estimates_a_profile_and_refuses_bad_configs_in_one_line() {
    let dir = scratch("profile-config");
    let config = ddp_data("plan/gpt-6.7b.json");
    let missing = ddp_data("plan/missing.json");
    let out_csv = dir.join("p.csv");
    let out = out_csv.to_str().unwrap();
    run(&[
        "profile",
        "--config",
        &config,
        "--seq",
        "2048",
        "--tp",
        "2",
        "--gpu-tflops",
        "989",
        "-o",
        out,
    ])
    .ok();
    let text = std::fs::read_to_string(&out_csv).unwrap();
    assert!(text.starts_with("# estimate: not a measurement"), "{text}");
    assert_eq!(text.lines().filter(|l| l.starts_with("block_")).count(), 32);
    // The same file again is refused without --force.
    let again = run(&[
        "profile",
        "--config",
        &config,
        "--seq",
        "2048",
        "--gpu-tflops",
        "989",
        "-o",
        out,
    ]);
    assert!(again.fails().contains("--out"), "{}", again.stderr);
    let bad = dir.join("bad.json");
    std::fs::write(&bad, "{\"hidden_size\": 10}").unwrap();
    let missing_flag = format!("--config {missing}");
    for (config, extra, needle) in [
        (
            bad.to_str().unwrap(),
            vec![],
            "no num_attention_heads or n_head field",
        ),
        (config.as_str(), vec!["--tp", "3"], "--tp 3 does not divide"),
        (
            config.as_str(),
            vec!["--efficiency", "1.5"],
            "--efficiency 1.5",
        ),
        (missing.as_str(), vec![], missing_flag.as_str()),
    ] {
        let out2 = dir.join("q.csv");
        let mut args = vec![
            "profile",
            "--config",
            config,
            "--seq",
            "512",
            "--gpu-tflops",
            "100",
            "-o",
            out2.to_str().unwrap(),
        ];
        args.extend(extra);
        let line = run(&args).fails().to_string();
        assert!(line.contains(needle), "{needle}: {line}");
    }
}

/// `--backend` picks the reports a group nobody measured is predicted from:
/// an all-reduce curve of another backend among the files is left out
/// there too, instead of stopping the scale model.
#[test]
fn backend_picks_the_reports_the_scale_model_calibrates_on() {
    let dir = scratch("plan-backend");
    // The 8-rank curve again, as if measured over MPI on 2 nodes of 4.
    let mut mpi: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(ddp_data("plan/all_reduce-16r2n.json")).unwrap(),
    )
    .unwrap();
    mpi["config"]["backend"] = "mpi".into();
    mpi["environment"]["world_size"] = 8.into();
    let mpi_path = dir.join("all_reduce-mpi.json");
    std::fs::write(&mpi_path, mpi.to_string()).unwrap();
    let args = |backend: Option<&str>| {
        let mut a: Vec<String> = vec![
            "plan".into(),
            "--profile".into(),
            ddp_data("plan/profiles/gpt-6.7b-tp1.csv"),
        ];
        for f in ["all_reduce-8r1n.json", "all_reduce-16r2n.json"] {
            a.push("--comm".into());
            a.push(ddp_data(&format!("plan/{f}")));
        }
        a.push("--comm".into());
        a.push(mpi_path.to_str().unwrap().into());
        for x in [
            "--gpus",
            "32",
            "--gpus-per-node",
            "8",
            "--global-batch",
            "64",
            "--tp",
            "1",
            "--pp",
            "1",
        ] {
            a.push(x.into());
        }
        if let Some(b) = backend {
            a.push("--backend".into());
            a.push(b.into());
        }
        a
    };
    // dp 32 over 4 nodes was measured by nobody: predicted from nccl alone.
    let json_args: Vec<String> = args(Some("nccl"))
        .into_iter()
        .chain(["--json".to_string()])
        .collect();
    let json = run_strings(&json_args).json();
    assert_eq!(json["configs"].as_array().unwrap().len(), 1, "{json}");
    assert!(json["curves"][0]["predicted"] == true, "{json}");
    // Without it the two backends cannot calibrate one model.
    let line = run_strings(&args(None)).fails().to_string();
    assert!(line.contains("more than one backend"), "{line}");
}

#[test]
fn plan_forward_only_steps_report_the_total_and_refuse_what_needs_a_backward() {
    // The example without recompute or ZeRO, which need a backward.
    let forward = |extra: &[&str]| -> Vec<String> {
        example(extra)
            .into_iter()
            .map(|a| match a.as_str() {
                "none,full" => "none".to_string(),
                "0,1" => "0".to_string(),
                _ => a,
            })
            .collect()
    };
    let json = run_strings(&forward(&["--forward-only", "--steps", "10", "--json"])).json();
    assert_eq!(json["steps"].as_u64(), Some(10));
    assert_eq!(json["forward_only"].as_bool(), Some(true));
    let best = &json["best"];
    let (total, step) = (
        best["total_ms"].as_f64().unwrap(),
        best["step_ms"].as_f64().unwrap(),
    );
    assert!(
        (total - 10.0 * step).abs() <= 1e-9 * total,
        "{total} {step}"
    );
    assert_eq!(best["memory"]["grads_bytes"].as_u64(), Some(0));
    assert_eq!(best["memory"]["optimizer_bytes"].as_u64(), Some(0));
    // List flags add up: the example's none,full and a --recompute none
    // given after it search none,full,none, and the line says so.
    let line = run_strings(&example(&["--forward-only", "--recompute", "none"]))
        .fails()
        .to_string();
    assert!(
        line.contains("--forward-only with --recompute none,full,none (the search's list: every --recompute adds to it)")
            && line.contains("leave full out")
            && !line.contains("give --recompute none"),
        "{line}"
    );
    let line = run_strings(&forward(&["--steps", "0"])).fails().to_string();
    assert!(line.contains("--steps") && line.contains("1 to"), "{line}");
}

/// A profile of an embedding, two blocks and a head measured at sequence
/// 128 (hidden 64, blocks of 4h² + 2·h·128 parameters: from 128 to 512
/// their FLOPs grow 8-fold, the other rows' 4-fold), written in `dir`.
pub(crate) fn profile_at_128(dir: &std::path::Path, header: &str) -> String {
    let mut text = String::from(header);
    text += "name,params,grad_time_s,fwd_time_s,activation_bytes,output_bytes,microbatch,tp,tp_allreduces\n";
    text += "embedding,8192,0.0005,0.00025,1024,16384,2,1,1\n";
    for i in 0..2 {
        text += &format!("block_{i},32768,0.004,0.002,600000,16384,2,1,2\n");
    }
    text += "head,8192,0.001,0.0005,4096,2048,2,1,0\n";
    let path = dir.join("s128.csv");
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

pub(crate) const HEADER_128: &str = "# model: tiny (gpt2; layers 2, hidden 64, heads 4, vocab 128, tied head), 82000 parameters\n# input: batch 2 x sequence 128, fp32, random tokens (seed 0)\n";

#[test]
fn plan_scales_a_profile_at_another_sequence_length_with_a_warning() {
    let dir = scratch("plan-sequence");
    let profile = profile_at_128(&dir, HEADER_128);
    let at = |seq: &str| {
        run(&[
            "plan",
            "--profile",
            &profile,
            "--gpus",
            "1",
            "--gpus-per-node",
            "1",
            "--global-batch",
            "2",
            "--seq",
            seq,
            "--hidden",
            "64",
            "--heads",
            "4",
            "--json",
        ])
        .json()
    };
    let (own, long) = (at("128"), at("512"));
    let step = |j: &serde_json::Value| j["best"]["step_ms"].as_f64().unwrap();
    // Blocks 2 × 6 ms × 8, other rows 2.25 ms × 4.
    assert!(crate::util::close(step(&own), 14.25, 1e-9), "{own}");
    assert!(crate::util::close(step(&long), 105.0, 1e-9), "{long}");
    let warnings = |j: &serde_json::Value| j["warnings"].to_string();
    assert!(!warnings(&own).contains("scaled to --seq"), "{own}");
    let said = warnings(&long);
    assert!(
        said.contains("measured at sequence 128, scaled to --seq 512")
            && said.contains("×8.0000")
            && said.contains("GEMM efficiency at other shapes is not modelled"),
        "{said}"
    );
    // A profile whose header names no length: as measured, said so.
    let bare = profile_at_128(&dir, "");
    let out = run_strings(&small_plan(&bare, &["--json"])).json();
    assert!(crate::util::close(step(&out), 14.25, 1e-9), "{out}");
    assert!(
        warnings(&out).contains("its times are taken as measured at --seq 512"),
        "{out}"
    );
}

/// The small profile's plan on one GPU at --seq 512, with `extra` flags.
fn small_plan(profile: &str, extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = [
        "plan",
        "--profile",
        profile,
        "--gpus",
        "1",
        "--gpus-per-node",
        "1",
        "--global-batch",
        "2",
        "--seq",
        "512",
        "--hidden",
        "64",
        "--heads",
        "4",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

#[test]
fn plan_refuses_a_header_whose_sequence_length_seq_cannot_take_in_one_line() {
    let dir = scratch("plan-sequence-none");
    for (header, value) in [
        ("# input: batch 2 x sequence 0, fp32\n", "\"0\""),
        (
            "# input: batch 2 x sequence 99999999999, fp32\n",
            "\"99999999999\"",
        ),
    ] {
        let profile = profile_at_128(&dir, header);
        let line = run_strings(&small_plan(&profile, &[])).fails().to_string();
        for needle in [
            "--seq 512",
            profile.as_str(),
            &format!("sequence {value}"),
            "1 to 16777216",
        ] {
            assert!(line.contains(needle), "{needle:?} in {line}");
        }
    }
}

/// Output that cannot be written (a full disk) is one error line naming
/// stdout, not the bare system error.
#[cfg(target_os = "linux")]
#[test]
fn plan_output_to_a_full_disk_is_one_line_naming_stdout() {
    let dir = scratch("plan-full");
    let profile = profile_at_128(&dir, HEADER_128);
    for extra in [&[][..], &["--json"][..]] {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_collbench-analyze"))
            .args(small_plan(&profile, extra))
            .stdout(std::fs::File::create("/dev/full").expect("/dev/full"))
            .output()
            .expect("the binary runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error")).collect();
        assert_eq!(errors.len(), 1, "{stderr}");
        assert!(
            errors[0].starts_with("error: writing the output to stdout: "),
            "{stderr}"
        );
    }
}

/// `profile --config` reads only a regular file: a FIFO (which blocked
/// the read until killed) and a device are refused at once, naming
/// --config; bytes that are not UTF-8 say which.
#[cfg(unix)]
#[test]
fn profile_config_refuses_a_fifo_a_device_and_binary_in_one_line() {
    use std::time::{Duration, Instant};
    let dir = scratch("profile-config-kinds");
    let fifo = dir.join("config.fifo");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs")
        .success());
    let binary = dir.join("binary.json");
    std::fs::write(&binary, [b'{', 0xff, 0xfe, b'}']).unwrap();
    let out = dir.join("p.csv");
    for (config, said) in [
        (
            fifo.to_str().unwrap(),
            "is a FIFO (named pipe), not a regular file",
        ),
        ("/dev/zero", "is a character device, not a regular file"),
        (binary.to_str().unwrap(), "byte 1 is not UTF-8 text"),
    ] {
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_collbench-analyze"))
            .args([
                "profile",
                "--config",
                config,
                "--seq",
                "128",
                "--gpu-tflops",
                "100",
                "-o",
            ])
            .arg(&out)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("the binary runs");
        let started = Instant::now();
        while child.try_wait().unwrap().is_none() {
            if started.elapsed() > Duration::from_secs(30) {
                child.kill().unwrap();
                child.wait().unwrap();
                panic!("profile --config {config} still running after 30 s");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let output = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(
            stderr.starts_with(&format!("error: --config {config}: {said}")),
            "{stderr}"
        );
        assert!(!out.exists());
    }
}

/// A curve file given to the flag of another collective is refused in one
/// line naming the flag, what the file holds and where that goes (it was
/// passed over for every group, which were then predicted or skipped).
#[test]
fn plan_refuses_a_curve_file_of_another_collective_naming_where_it_goes() {
    let dir = scratch("plan-wrong-curve");
    let profile = profile_at_128(&dir, HEADER_128);
    let sendrecv = ddp_data("plan/sendrecv-2r1n.json");
    let all_reduce = ddp_data("plan/all_reduce-2r1n.json");
    for (flag, file, said) in [
        (
            "--comm",
            &sendrecv,
            "no all_reduce results (it holds sendrecv); --comm takes all_reduce curves (sendrecv goes to --sendrecv)",
        ),
        (
            "--sendrecv",
            &all_reduce,
            "no sendrecv results (it holds all_reduce); --sendrecv takes sendrecv curves (all_reduce goes to --comm)",
        ),
        (
            "--all-gather",
            &all_reduce,
            "no all_gather results (it holds all_reduce)",
        ),
    ] {
        let line = run_strings(&small_plan(&profile, &[flag, file]))
            .fails()
            .to_string();
        assert!(
            line.starts_with(&format!("error: {flag} {file}: {said}")),
            "{line}"
        );
    }
}

/// `--timeline` where nothing fits `--memory-limit` has no best to draw:
/// one line naming the flag, with the least peak (the table it stops is
/// where the user would have read it) and what to do.
#[test]
fn plan_timeline_with_nothing_under_the_limit_says_the_least_peak() {
    let dir = scratch("plan-timeline-none-fits");
    let profile = profile_at_128(&dir, HEADER_128);
    let svg = dir.join("t.svg");
    let svg = svg.to_str().unwrap();
    let line = run_strings(&small_plan(
        &profile,
        &["--memory-limit", "1B", "--timeline", svg],
    ))
    .fails()
    .to_string();
    assert!(
        line.starts_with(&format!(
            "error: --timeline {svg}: no configuration fits --memory-limit 1 B: the least peak is "
        )) && line.contains("raise --memory-limit"),
        "{line}"
    );
    assert!(!dir.join("t.svg").exists());
}

/// One GPT 6.7B profile at tp 1 on 8 GPUs of one node, global batch 16,
/// with `extra` flags.
fn gpt_on_8(extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = vec![
        "plan".into(),
        "--profile".into(),
        ddp_data("plan/profiles/gpt-6.7b-tp1.csv"),
        "--comm".into(),
        ddp_data("plan/all_reduce-8r1n.json"),
        "--sendrecv".into(),
        ddp_data("plan/sendrecv-2r1n.json"),
    ];
    for a in [
        "--gpus",
        "8",
        "--gpus-per-node",
        "8",
        "--global-batch",
        "16",
        "--tp",
        "1",
    ]
    .iter()
    .chain(extra)
    {
        args.push(a.to_string());
    }
    args
}

#[test]
fn plan_refuses_memory_past_8_eib_naming_the_shape_flags() {
    let args = gpt_on_8(&[
        "--seq", "16777216", "--hidden", "16777216", "--heads", "65536", "--json",
    ]);
    let line = run_strings(&args).fails().to_string();
    assert!(
        line.contains("8 EiB or more")
            && line.contains("--seq 16777216 --hidden 16777216 --heads 65536")
            && line.contains("--microbatch 1")
            && !line.contains('\n'),
        "{line}"
    );
}

#[test]
fn plan_names_the_flags_behind_too_many_forwards() {
    let line = run_strings(&gpt_on_8(&["--forward-only", "--steps", "1048576"]))
        .fails()
        .to_string();
    // pp 1: 16 / (dp 8 × 1) = 2 micro-batches × 1048576 steps.
    assert!(
        line.contains("2 micro-batches (--global-batch 16 / (dp 8 × --microbatch 1)) × pp 1 × --steps 1048576 = 2097152 forwards to simulate, more than 1048576 (2^20): give fewer --steps or a larger --microbatch"),
        "{line}"
    );
    assert!(!line.contains('\n'), "{line}");
}

#[test]
fn plan_prints_slow_rates_in_significant_digits_and_one_gpu_singular() {
    let text = run_strings(&gpt_on_8(&[
        "--seq", "16777216", "--hidden", "4096", "--heads", "32",
    ]))
    .ok()
    .to_string();
    let best = text.lines().find(|l| l.starts_with("best:")).unwrap();
    assert!(
        best.contains(" 0.00000803 samples/s") && !best.contains(" 0.0 samples/s"),
        "{best}"
    );
    let one = gpt_on_8(&["--pp", "1"])
        .into_iter()
        .map(|a| if a == "8" { "1".to_string() } else { a })
        .collect::<Vec<_>>();
    let text = run_strings(&one).ok().to_string();
    assert!(text.starts_with("plan: 1 GPU (1 per node)"), "{text}");
}
