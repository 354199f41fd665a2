//! nccl-tests logs inside a job's output file: a shell trace and launcher
//! lines before the header, `srun -l` task labels, other tasks' lines.
use std::path::Path;

use serde_json::Value;

use crate::util::{data_dir, run, scratch};

/// The committed 8-rank, 2-node all_reduce log the job outputs are made of.
const PLAIN: &str = "nccl-2.19-all_reduce.log";

/// A `set -x` trace and launcher lines, as a job script opens its output.
const TRACE: &str = "+ export NCCL_DEBUG=WARN\n+ NCCL_DEBUG=WARN\n+ export NCCL_IB_HCA=mlx5\n+ NCCL_IB_HCA=mlx5\nsrun: job 4711 queued and waiting for resources\nsrun: job 4711 has been allocated resources\n";

/// The plain log as `srun -l` prints it: every line labelled with the task
/// that printed it (NCCL's lines from node-a02 by task 4), after a shell
/// trace, with task 4's CPU-binding lines before the header and among the
/// rows, and task 0's MPI summary after the table.
fn job_output(plain: &str) -> String {
    let mut text = String::from(TRACE);
    text.push_str("+ srun -l --cpu-bind=verbose ./build/all_reduce_perf -b 8 -e 8G -f 2 -g 1\n");
    for task in [0, 4] {
        text.push_str(&format!(
            "{task}: cpu-bind=MASK - node-a0{}, task  {task}  0 [{}]: mask 0xff set\n",
            task / 4 + 1,
            41021 + task
        ));
    }
    for (i, line) in plain.lines().enumerate() {
        let task = if line.starts_with("node-a02") { 4 } else { 0 };
        text.push_str(&format!("{task}: {line}\n"));
        if i == 30 {
            text.push_str("4: cpu-bind=MASK - node-a02, task  5  1 [41026]: mask 0xff00 set\n");
        }
    }
    text.push_str("0: \n0: MPI network summary: 0 timeouts\n0: counter      samples   min   max\n0: rx_paused          8   621  1158\n");
    text
}

/// Imports `path` without flags: (stderr, report JSON) or the one error line.
fn import(dir: &Path, path: &Path) -> Result<(String, Value), String> {
    let out = dir.join(format!(
        "{}.json",
        path.file_name().unwrap().to_string_lossy()
    ));
    let result = run(&[
        "import",
        path.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    if result.code != 0 {
        return Err(result.fails().to_string());
    }
    let report = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    Ok((result.stderr, report))
}

fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn a_labelled_job_output_reads_as_the_log_it_holds() {
    let dir = scratch("job-output-labelled");
    let plain_path = data_dir().join(PLAIN);
    let plain = std::fs::read_to_string(&plain_path).unwrap();
    let job = write(&dir, "slurm-4711.out", &job_output(&plain));
    let (_, expected) = import(&dir, &plain_path).unwrap();
    let (notes, report) = import(&dir, &job).unwrap();
    // The same report: sizes, times, ranks and hosts, status, everything.
    assert_eq!(report, expected);
    assert_eq!(report["environment"]["world_size"], 8);
    assert_eq!(report["environment"]["nodes"], 2);
    assert_eq!(report["results"].as_array().unwrap().len(), 62);
    // Nothing skipped silently: one note counts what was left out.
    let job_name = job.display().to_string();
    // The trace, the echoed srun line, two binding lines, three NCCL lines.
    let header_line = TRACE.lines().count() + 1 + 2 + 3 + 1;
    let skipped = format!(
        "note: {job_name}:{header_line}: read the lines of srun task 0, whose nccl-tests header is at line {header_line}, with their `0: ` labels removed; skipped 8 line(s) before it that are not nccl-tests output (the first at line 1), 1 line(s) of other srun tasks (the first at line 41), 3 line(s) after it that are not nccl-tests output (the first at line 71)"
    );
    assert_eq!(
        notes
            .lines()
            .filter(|l| l.contains("srun task"))
            .collect::<Vec<_>>(),
        [skipped.as_str()],
        "{notes}"
    );
    // Task 5's NCCL WARN line is read, as any rank's.
    assert!(
        notes.contains("NCCL WARN line(s), the first: node-a02:41026:41161 [1] NCCL WARN"),
        "{notes}"
    );

    // fit and predict see the same measurements and node count.
    let fit_plain = run(&["fit", plain_path.to_str().unwrap()]);
    let fit_job = run(&["fit", job.to_str().unwrap()]);
    assert_eq!(fit_job.ok(), fit_plain.ok());
    let predict = run(&[
        "predict",
        "--collective",
        "all_reduce",
        "--world-size",
        "8",
        "--sizes",
        "1M",
        job.to_str().unwrap(),
    ]);
    assert!(
        predict.ok().contains(&format!(
            "the fitted curve of {job_name} (8 ranks, 2 nodes)"
        )),
        "{}",
        predict.stdout
    );
}

#[test]
fn a_shell_trace_before_an_unlabelled_log_is_skipped_and_counted() {
    let dir = scratch("job-output-trace");
    let plain_path = data_dir().join(PLAIN);
    let plain = std::fs::read_to_string(&plain_path).unwrap();
    let job = write(&dir, "trace.out", &format!("{TRACE}{plain}"));
    let (_, expected) = import(&dir, &plain_path).unwrap();
    let (notes, report) = import(&dir, &job).unwrap();
    assert_eq!(report, expected);
    // The NCCL INFO lines before the header are NCCL's, read as before.
    assert!(
        notes.contains(&format!(
            "note: {}:10: the nccl-tests header is at line 10; skipped 6 line(s) before it that are not nccl-tests output (the first at line 1)",
            job.display()
        )),
        "{notes}"
    );
    // A first line that would pass for JSON (a launcher's `[host]`
    // warning) or for the course CSV's header (it has commas): the header
    // after it tells an nccl-tests log.
    for (name, first) in [
        (
            "ucx.out",
            "[1700000000.000001] [node-a01:41021:0] UCX WARN transport not available\n",
        ),
        ("commas.out", "Loading gcc, cuda and nccl\n"),
    ] {
        let job = write(&dir, name, &format!("{first}{}", job_output(&plain)));
        let (notes, report) = import(&dir, &job).unwrap();
        assert_eq!(report, expected, "{name}");
        assert!(
            notes.contains(
                "skipped 9 line(s) before it that are not nccl-tests output (the first at line 1)"
            ),
            "{name}: {notes}"
        );
    }
    // At most 200 lines that are not a launcher's: more are no job's
    // preamble, and fail as they always did.
    let modules = |lines: usize| "Loading module nccl/2.19\n".repeat(lines);
    let job = write(&dir, "long.out", &format!("{}{plain}", modules(200)));
    assert_eq!(import(&dir, &job).unwrap().1, expected);
    let job = write(&dir, "too-long.out", &format!("{}{plain}", modules(201)));
    let line = import(&dir, &job).unwrap_err();
    assert!(
        line.ends_with(":1: not an input collbench-analyze reads (a collbench report, nccl-tests output or -J JSON, or the course CSV): \"Loading module nccl/2.19\""),
        "{line}"
    );
    // Only before the header: a stray line inside the table still fails.
    let stray = plain.replacen(
        "        2048 ",
        "srun: error: node-a02: task 5: Killed\n        2048 ",
        1,
    );
    let job = write(&dir, "stray.out", &format!("{TRACE}{stray}"));
    let line = import(&dir, &job).unwrap_err();
    assert!(
        line.contains("not an nccl-tests table row, # line or NCCL log line: \"srun: error: node-a02: task 5: Killed\""),
        "{line}"
    );
}

/// `srun --cpu-bind=verbose` of `tasks` tasks, 4 a node: each task's
/// binding line, with `-l` labelled with the first task of its node.
fn cpu_bind_lines(tasks: u32, labelled: bool) -> String {
    (0..tasks)
        .map(|task| {
            let label = if labelled {
                format!("{:>4}: ", task / 4 * 4)
            } else {
                String::new()
            };
            format!(
                "{label}cpu-bind=MASK - node-{:04}, task {task:>4} {:>2} [{}]: mask 0x{:x} set\n",
                task / 4,
                task % 4,
                10_000 + task,
                0xffu64 << (task % 4 * 8)
            )
        })
        .collect()
}

#[test]
fn a_preamble_of_thousands_of_tasks_is_skipped_and_counted() {
    let dir = scratch("job-output-many-tasks");
    let plain_path = data_dir().join(PLAIN);
    let plain = std::fs::read_to_string(&plain_path).unwrap();
    let (_, expected) = import(&dir, &plain_path).unwrap();
    // A shell trace, an environment dump, Slurm's and a launcher's
    // messages, then one binding line per task of a 5000-task job, before
    // the labelled log: over 5000 lines, none of them nccl-tests output.
    let env: String = (0..300)
        .map(|i| format!("MODULE_VAR_{i}=value{i}\n"))
        .collect();
    let preamble = format!(
        "{TRACE}{env}[node-0000] hugepages not available\n+ srun -l --cpu-bind=verbose ./build/all_reduce_perf -b 8 -e 8G -f 2 -g 1\n{}",
        cpu_bind_lines(5000, true)
    );
    let labelled: String = plain.lines().map(|l| format!("   0: {l}\n")).collect();
    let job = write(&dir, "slurm-5000.out", &format!("{preamble}{labelled}"));
    let (notes, report) = import(&dir, &job).unwrap();
    assert_eq!(report, expected);
    // Every preamble line but the echoed srun line (it names the binary)
    // is counted; the three NCCL lines before the header are read.
    let header_line = preamble.lines().count() + 4;
    let counted = preamble.lines().count() - 1;
    assert!(
        notes.contains(&format!(
            "{}:{header_line}: read the lines of srun task 0, whose nccl-tests header is at line {header_line}, with their `0: ` labels removed; skipped {counted} line(s) before it that are not nccl-tests output (the first at line 1)",
            job.display()
        )),
        "{notes}"
    );
    // Without `-l`: srun's binding lines unlabelled, as the log.
    let unlabelled = format!("{TRACE}{env}{}{plain}", cpu_bind_lines(5000, false));
    let job = write(&dir, "unlabelled-5000.out", &unlabelled);
    assert_eq!(import(&dir, &job).unwrap().1, expected);

    // The same preamble before no nccl-tests header: the first line's
    // error, as for any file that is not an input.
    let job = write(
        &dir,
        "no-header.out",
        &format!("{preamble}{}", "   0: done\n"),
    );
    let line = import(&dir, &job).unwrap_err();
    assert_eq!(
        line,
        format!(
            "error: {}:1: not an input collbench-analyze reads (a collbench report, nccl-tests output or -J JSON, or the course CSV): \"+ export NCCL_DEBUG=WARN\"",
            job.display()
        )
    );
    // A log cut before the line nccl-tests opens its output with (`#
    // nThread`, `# nccl-tests version`, `# Collective test starting`):
    // its `# Rank` lines forgive no preamble.
    let cut: String = labelled
        .lines()
        .filter(|l| {
            ![
                "# nThread",
                "# nccl-tests version",
                "# Collective test starting",
            ]
            .iter()
            .any(|h| l.contains(h))
        })
        .map(|l| format!("{l}\n"))
        .collect();
    let job = write(&dir, "cut.out", &format!("{preamble}{cut}"));
    let line = import(&dir, &job).unwrap_err();
    assert!(
        line.starts_with(&format!("error: {}:1: ", job.display()))
            && line.ends_with(": \"+ export NCCL_DEBUG=WARN\""),
        "{line}"
    );
}

#[test]
fn job_outputs_that_are_not_one_tasks_log_are_refused_in_one_line() {
    let dir = scratch("job-output-refused");
    let plain = std::fs::read_to_string(data_dir().join(PLAIN)).unwrap();
    let labelled = job_output(&plain);

    // Labels on some lines only: the rows after 1 KiB lost theirs.
    let cut = labelled.find("0:         2048 ").unwrap();
    let (head, tail) = labelled.split_at(cut);
    let mixed = format!("{head}{}", tail.replace("0:   ", "  "));
    let job = write(&dir, "mixed.out", &mixed);
    let line = import(&dir, &job).unwrap_err();
    assert!(
        line.starts_with(&format!("error: {}:", job.display()))
            && line.contains(": an nccl-tests line without the srun task label `0: ` that the nccl-tests header at line 13 has: labels on some lines only"),
        "{line}"
    );
    // … and the other way round: an unlabelled header, labelled rows.
    let unlabelled_header = plain.replacen("        2048 ", "0:         2048 ", 1);
    let job = write(&dir, "mixed-2.out", &unlabelled_header);
    let line = import(&dir, &job).unwrap_err();
    assert!(
        line.contains(": an nccl-tests line with srun task label `0: ` where the nccl-tests header at line 4 has none"),
        "{line}"
    );

    // Two tasks print tables: srun -l of two single-rank runs.
    let single = |task: u32| {
        format!(
            "{task}: # nThread 1 nGpus 1 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n\
{task}: #  Rank  0 Group  0 Pid {} on node-a0{} device  0 [0000:19:00] NVIDIA H100 80GB HBM3\n\
{task}: #       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong\n",
            5000 + task,
            task + 1
        )
    };
    let two = format!("{TRACE}{}{}", single(0), single(1));
    let job = write(&dir, "two.out", &two);
    let line = import(&dir, &job).unwrap_err();
    let name = job.display();
    let expected = format!(
        "error: {name}:10: srun tasks 0 and 1 both print an nccl-tests header (task 0's at line 7): several runs' tables in one output, which are not taken apart; split it by task label first (`sed -n 's/^ *1: //p' {name}` for task 1) and read each part: \"1: # nThread 1 nGpus 1 "
    );
    assert!(line.starts_with(&expected), "{line}");

    // A preamble and no nccl-tests output at all: the error it always was.
    let job = write(
        &dir,
        "no-log.out",
        &format!("{TRACE}+ srun -l hostname\n0: node-a01\n1: node-a02\n"),
    );
    let line = import(&dir, &job).unwrap_err();
    assert_eq!(
        line,
        format!(
            "error: {}:1: not an input collbench-analyze reads (a collbench report, nccl-tests output or -J JSON, or the course CSV): \"+ export NCCL_DEBUG=WARN\"",
            job.display()
        )
    );
    // Rows without a header do not forgive the lines before them.
    let rows: String = plain
        .lines()
        .filter(|l| l.starts_with("        ") && !l.trim().is_empty())
        .map(|l| format!("{l}\n"))
        .collect();
    let job = write(&dir, "headerless.out", &format!("{TRACE}{rows}"));
    let line = import(&dir, &job).unwrap_err();
    assert!(
        line.ends_with(":1: not an input collbench-analyze reads (a collbench report, nccl-tests output or -J JSON, or the course CSV): \"+ export NCCL_DEBUG=WARN\""),
        "{line}"
    );
}
