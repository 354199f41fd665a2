//! nccl-tests logs inside a job's output file: a shell trace and launcher
//! lines before the header, `srun -l` task labels, other tasks' lines
//! (every scenario about labels also with `mpirun --tag-output` rank tags).
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::util::{data_dir, run, scratch};

/// The committed 8-rank, 2-node all_reduce log the job outputs are made of.
const PLAIN: &str = "nccl-2.19-all_reduce.log";

/// A `set -x` trace and launcher lines, as a job script opens its output.
const TRACE: &str = "+ export NCCL_DEBUG=WARN\n+ NCCL_DEBUG=WARN\n+ export NCCL_IB_HCA=mlx5\n+ NCCL_IB_HCA=mlx5\nsrun: job 4711 queued and waiting for resources\nsrun: job 4711 has been allocated resources\n";

/// How a launcher marks which task or rank printed a line, and how the
/// messages about such lines name it: `srun -l` labels, `mpirun
/// --tag-output` tags. Every scenario about labels runs for both.
struct Style {
    /// `srun`, `mpirun`.
    launcher: &'static str,
    /// `task`, `rank`.
    noun: &'static str,
    /// `label`, `tag`.
    mark: &'static str,
    /// The command the job script runs nccl-tests with, as its trace echoes it.
    command: &'static str,
    /// What task or rank `n`'s output lines start with (`0: `, `[1,0]<stdout>:`).
    out: fn(u32) -> String,
    /// What its logging lines start with (`mpirun` tags stderr apart).
    err: fn(u32) -> String,
    /// The command that prints task or rank `n`'s lines of `file`, their
    /// marks removed, as the messages give it.
    sed: fn(u32, &str) -> String,
}

const SRUN: Style = Style {
    launcher: "srun",
    noun: "task",
    mark: "label",
    command: "srun -l --cpu-bind=verbose",
    out: |n| format!("{n}: "),
    err: |n| format!("{n}: "),
    sed: |n, file| format!("sed -n 's/^ *{n}: //p' {file}"),
};

const MPIRUN: Style = Style {
    launcher: "mpirun",
    noun: "rank",
    mark: "tag",
    command: "mpirun --tag-output --report-bindings",
    out: |n| format!("[1,{n}]<stdout>:"),
    err: |n| format!("[1,{n}]<stderr>:"),
    sed: |n, file| format!("sed -n 's/^ *\\[1,{n}\\]<std[a-z]*>://p' {file}"),
};

const STYLES: [Style; 2] = [SRUN, MPIRUN];

impl Style {
    /// `srun task`, `mpirun rank`.
    fn who(&self) -> String {
        format!("{} {}", self.launcher, self.noun)
    }

    /// Task or rank `n`'s output mark as the messages quote it: `` `0: ` ``.
    fn quoted(&self, n: u32) -> String {
        format!("`{}`", (self.out)(n))
    }

    /// Every line of `text` as task or rank `n` prints it.
    fn print(&self, n: u32, text: &str) -> String {
        text.lines()
            .map(|l| format!("{}{l}\n", (self.out)(n)))
            .collect()
    }
}

/// The plain log as `srun -l` (or `mpirun --tag-output`) prints it: every
/// line marked with the task that printed it (NCCL's lines from node-a02
/// by task 4), after a shell trace, with task 4's CPU-binding lines before
/// the header and among the rows, and task 0's MPI summary after the table.
fn job_output(style: &Style, plain: &str) -> String {
    let (out, err) = (style.out, style.err);
    let mut text = String::from(TRACE);
    text.push_str(&format!(
        "+ {} ./build/all_reduce_perf -b 8 -e 8G -f 2 -g 1\n",
        style.command
    ));
    for task in [0, 4] {
        text.push_str(&format!(
            "{}cpu-bind=MASK - node-a0{}, task  {task}  0 [{}]: mask 0xff set\n",
            err(task),
            task / 4 + 1,
            41021 + task
        ));
    }
    for (i, line) in plain.lines().enumerate() {
        match line.starts_with("node-a02") {
            true => text.push_str(&format!("{}{line}\n", err(4))),
            false => text.push_str(&format!("{}{line}\n", out(0))),
        }
        if i == 30 {
            text.push_str(&format!(
                "{}cpu-bind=MASK - node-a02, task  5  1 [41026]: mask 0xff00 set\n",
                err(4)
            ));
        }
    }
    text.push_str(&style.print(
        0,
        "\nMPI network summary: 0 timeouts\ncounter      samples   min   max\nrx_paused          8   621  1158\n",
    ));
    text
}

/// `lines` lines a module system prints: not a launcher's.
fn modules(lines: usize) -> String {
    "Loading module nccl/2.19\n".repeat(lines)
}

/// Imports `path` without flags: (stderr, report JSON) or the one error line.
fn import(dir: &Path, path: &Path) -> Result<(String, Value), String> {
    import_with(dir, path, &[])
}

/// Imports `path` with `flags`: (stderr, report JSON) or the one error line.
fn import_with(dir: &Path, path: &Path, flags: &[&str]) -> Result<(String, Value), String> {
    let out = dir.join(format!(
        "{}.json",
        path.file_name().unwrap().to_string_lossy()
    ));
    let mut args = vec![
        "import",
        path.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(flags);
    let result = run(&args);
    if result.code != 0 {
        return Err(result.fails().to_string());
    }
    let report = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    Ok((result.stderr, report))
}

/// A fresh scratch folder `name` and the plain log: (the folder, the
/// log's path, its text, its report).
fn plain_log(name: &str) -> (PathBuf, PathBuf, String, Value) {
    let dir = scratch(name);
    let path = data_dir().join(PLAIN);
    let text = std::fs::read_to_string(&path).unwrap();
    let (_, report) = import(&dir, &path).unwrap();
    (dir, path, text, report)
}

/// The error of a file that is no input at all, quoting the first line of
/// `text`, the file's.
fn not_an_input(path: &Path, text: &str) -> String {
    format!(
        "error: {}:1: not an input collbench-analyze reads (a collbench report, nccl-tests output or -J JSON, or the course CSV): {:?}",
        path.display(),
        text.lines().next().unwrap()
    )
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn a_labelled_job_output_reads_as_the_log_it_holds() {
    for style in STYLES {
        let who = style.who();
        let (dir, plain_path, plain, expected) =
            plain_log(&format!("job-output-labelled-{}", style.launcher));
        let job = write(&dir, "slurm-4711.out", &job_output(&style, &plain));
        let (notes, report) = import(&dir, &job).unwrap();
        // The same report: sizes, times, ranks and hosts, status, everything.
        assert_eq!(report, expected, "{who}");
        assert_eq!(report["environment"]["world_size"], 8, "{who}");
        assert_eq!(report["environment"]["nodes"], 2, "{who}");
        assert_eq!(report["results"].as_array().unwrap().len(), 62, "{who}");
        // Nothing skipped silently: one note counts what was left out.
        let job_name = job.display().to_string();
        // The trace, the echoed launch line, two binding lines, three NCCL lines.
        let header_line = TRACE.lines().count() + 1 + 2 + 3 + 1;
        let skipped = format!(
            "note: {job_name}:{header_line}: read the lines of {who} 0, whose nccl-tests header is at line {header_line}, with their {} {}s removed; skipped 8 line(s) before it that are not nccl-tests output (the first at line 1), 1 line(s) of other {who}s (the first at line 41), 3 line(s) after it that are not nccl-tests output (the first at line 71)",
            style.quoted(0),
            style.mark
        );
        assert_eq!(
            notes
                .lines()
                .filter(|l| l.contains(&who))
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
        assert_eq!(fit_job.ok(), fit_plain.ok(), "{who}");
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

        // Two tables one after the other from one task: two runs, as
        // without labels.
        let job = write(&dir, "two-runs.out", &style.print(0, &plain).repeat(2));
        let reports = crate::util::import(&dir, "two-runs.json", &[job.to_str().unwrap()]);
        assert_eq!(reports, [expected.clone(), expected], "{who}");
    }
}

#[test]
fn a_shell_trace_before_an_unlabelled_log_is_skipped_and_counted() {
    let (dir, _, plain, expected) = plain_log("job-output-trace");
    let job = write(&dir, "trace.out", &format!("{TRACE}{plain}"));
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
        let job = write(&dir, name, &format!("{first}{}", job_output(&SRUN, &plain)));
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
    // preamble (see the next test).
    let job = write(&dir, "long.out", &format!("{}{plain}", modules(200)));
    assert_eq!(import(&dir, &job).unwrap().1, expected);
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
    let (dir, _, plain, expected) = plain_log("job-output-many-tasks");
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
    assert_eq!(line, not_an_input(&job, TRACE));
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
    let plain = std::fs::read_to_string(data_dir().join(PLAIN)).unwrap();
    for style in STYLES {
        let dir = scratch(&format!("job-output-refused-{}", style.launcher));
        let labelled = job_output(&style, &plain);
        let (who, noun, mark) = (style.who(), style.noun, style.mark);
        let (ours, other, label) = ((style.out)(0), (style.out)(1), style.quoted(0));

        // Labels on some lines only: the rows after 1 KiB lost theirs.
        let cut = labelled.find(&format!("{ours}        2048 ")).unwrap();
        let (head, tail) = labelled.split_at(cut);
        let mixed = format!("{head}{}", tail.replace(&format!("{ours}  "), "  "));
        let job = write(&dir, "mixed.out", &mixed);
        let line = import(&dir, &job).unwrap_err();
        assert!(
            line.starts_with(&format!("error: {}:", job.display()))
                && line.contains(&format!(": an nccl-tests line without the {who} {mark} {label} that the nccl-tests header at line 13 has: {mark}s on some lines only")),
            "{line}"
        );
        // … and the other way round: an unlabelled header, labelled rows.
        let unlabelled_header = plain.replacen("        2048 ", &format!("{ours}        2048 "), 1);
        let job = write(&dir, "mixed-2.out", &unlabelled_header);
        let line = import(&dir, &job).unwrap_err();
        assert!(
            line.contains(&format!(": an nccl-tests line with {who} {mark} {label} where the nccl-tests header at line 4 has none")),
            "{line}"
        );

        // Two tasks print tables (two runs of one task each), one after
        // the other or interleaved line by line: refused at the second
        // task's header, with the command that splits out its log.
        let single = |task: u32| {
            format!(
                "# nThread 1 nGpus 1 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n\
#  Rank  0 Group  0 Pid {} on node-a0{} device  0 [0000:19:00] NVIDIA H100 80GB HBM3\n\
#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong\n",
                5000 + task,
                task + 1
            )
        };
        let one_after_the_other = format!(
            "{TRACE}{}{}",
            style.print(0, &single(0)),
            style.print(1, &single(1))
        );
        let interleaved: String = plain
            .lines()
            .map(|l| format!("{ours}{l}\n{other}{l}\n"))
            .collect();
        // (file, its text, task 1's log, where the headers are, how task 1's starts)
        for (name, text, task_1s_log, first_header, second_header, quoted) in [
            (
                "two.out",
                one_after_the_other,
                single(1),
                7,
                10,
                "# nThread 1 nGpus 1 ",
            ),
            (
                "interleaved.out",
                interleaved,
                plain.clone(),
                7,
                8,
                "# nccl-tests version 2.19.6 ",
            ),
        ] {
            let job = write(&dir, name, &text);
            let name = job.display().to_string();
            let line = import(&dir, &job).unwrap_err();
            let sed = (style.sed)(1, &name);
            let expected = format!(
                "error: {name}:{second_header}: {who}s 0 and 1 both print an nccl-tests header ({noun} 0's at line {first_header}): several runs' tables in one output, which are not taken apart; split it by {noun} {mark} first (`{sed}` for {noun} 1) and read each part: \"{other}{quoted}"
            );
            assert!(line.starts_with(&expected), "{line}");
            // The command given splits out task 1's log as it printed it.
            let split = std::process::Command::new("sh")
                .args(["-c", &sed])
                .output()
                .unwrap();
            assert_eq!(
                String::from_utf8(split.stdout).unwrap(),
                task_1s_log,
                "{sed}"
            );
        }

        // A preamble and no nccl-tests output at all: the error it always was.
        let job = write(
            &dir,
            "no-log.out",
            &format!(
                "{TRACE}+ {} hostname\n{}{}",
                style.command,
                style.print(0, "node-a01"),
                style.print(1, "node-a02")
            ),
        );
        let line = import(&dir, &job).unwrap_err();
        assert_eq!(line, not_an_input(&job, TRACE));
    }

    // Rows without a header do not forgive the lines before them.
    let dir = scratch("job-output-refused");
    let rows: String = plain
        .lines()
        .filter(|l| l.starts_with("        ") && !l.trim().is_empty())
        .map(|l| format!("{l}\n"))
        .collect();
    let job = write(&dir, "headerless.out", &format!("{TRACE}{rows}"));
    let line = import(&dir, &job).unwrap_err();
    assert_eq!(line, not_an_input(&job, TRACE));
}

/// The 1-based number of the first line of `text` that `wanted`.
fn line_of(text: &str, wanted: impl Fn(&str) -> bool) -> usize {
    text.lines().position(wanted).unwrap() + 1
}

#[test]
fn another_tasks_rows_under_a_header_are_refused_in_one_line() {
    let plain = std::fs::read_to_string(data_dir().join(PLAIN)).unwrap();
    for style in STYLES {
        let dir = scratch(&format!("job-output-other-tasks-rows-{}", style.launcher));
        let labelled = job_output(&style, &plain);
        let (who, noun, mark) = (style.who(), style.noun, style.mark);
        let (ours, other) = ((style.out)(0), (style.out)(1));
        // Task 0's table rows, without their label.
        let row = |l: &str| {
            l.strip_prefix(&ours)
                .filter(|row| row.starts_with(' ') && row.trim_end().ends_with("       0"))
                .map(str::to_string)
        };

        // Rows labelled by task 1 under task 0's header, not dropped (nor
        // with --lenient): one row; every row (not "no measurements"); each
        // row again after task 0's (two runs' rows, task 1's header lost).
        let one = labelled.replacen(
            &format!("{ours}         512 "),
            &format!("{other}         512 "),
            1,
        );
        let rewrite_rows = |rewrite: &dyn Fn(&str, &str) -> String| -> String {
            labelled
                .lines()
                .map(|l| match row(l) {
                    Some(row) => rewrite(l, &row),
                    None => format!("{l}\n"),
                })
                .collect()
        };
        let every = rewrite_rows(&|_, row| format!("{other}{row}\n"));
        let again = rewrite_rows(&|l, row| format!("{l}\n{other}{row}\n"));
        for (name, text) in [
            ("one-row.out", one),
            ("all-rows.out", every),
            ("rows.out", again),
        ] {
            let job = write(&dir, name, &text);
            let name = job.display();
            let row_line = line_of(&text, |l| l.starts_with(&other));
            // The row as far as its type.
            let (quoted, _) = text
                .lines()
                .nth(row_line - 1)
                .unwrap()
                .split_once("float")
                .unwrap();
            let expected = format!(
                "error: {name}:{row_line}: an nccl-tests row printed by {who} 1 under the header of {noun} 0 (line 13): a table is one {noun}'s, so this is another run's line or a mislabelled one; split it by {noun} {mark} first (`{}` for {noun} 1) and read each part: \"{quoted}",
                (style.sed)(1, &name.to_string())
            );
            for flags in [&[][..], &["--lenient"]] {
                let line = import_with(&dir, &job, flags).unwrap_err();
                assert!(line.starts_with(&expected), "{flags:?}: {line}");
            }
        }

        // Task 1 printing nccl-tests' footer: an nccl-tests line, refused too.
        let footer = labelled.replacen(
            &format!("{ours}# Out of bounds"),
            &format!("{other}# Out of bounds"),
            1,
        );
        let job = write(&dir, "footer.out", &footer);
        let line = import(&dir, &job).unwrap_err();
        assert!(
            line.contains(&format!(
                ": an nccl-tests line printed by {who} 1 under the header of {noun} 0 (line 13): "
            )),
            "{line}"
        );
    }
}

#[test]
fn a_header_past_a_preambles_bounds_is_said_where_it_is() {
    let (dir, _, plain, expected) = plain_log("job-output-past-preamble");

    // 201 lines that are not a launcher's, then the log; and the same
    // after a first line that would pass for JSON.
    for (name, first, header_line) in [
        ("too-long.out", "", 205),
        (
            "ucx-too-long.out",
            "[1700000000.000001] [node-a01:41021:0] UCX WARN\n",
            206,
        ),
        ("json-too-long.out", "{\"job\": 4711}\n", 206),
    ] {
        let job = write(&dir, name, &format!("{first}{}{plain}", modules(201)));
        let line = import(&dir, &job).unwrap_err();
        assert_eq!(
            line,
            format!(
                "error: {}:1: no nccl-tests header within a job output's preamble (at most 1048576 launcher lines and 200 others); the first is at line {header_line}: remove the lines before it, or pass --lenient to skip them as unreadable lines",
                job.display()
            ),
            "{name}"
        );
        // … which --lenient does.
        let (notes, report) = import_with(&dir, &job, &["--lenient"]).unwrap();
        assert_eq!(report, expected, "{name}");
        assert!(
            notes.contains(&format!(
                "{}: skipped {} unreadable line(s), the first at line 1",
                job.display(),
                header_line - 4
            )),
            "{name}: {notes}"
        );
    }
    // Where a command has no --lenient (predict), `import` is suggested.
    let job = dir.join("too-long.out");
    let predict = run(&[
        "predict",
        job.to_str().unwrap(),
        "--collective",
        "all_reduce",
        "--world-size",
        "8",
    ]);
    assert!(
        predict.fails().ends_with(
            "the first is at line 205: remove the lines before it, or import the file first (`collbench-analyze import --lenient FILE -o REPORT.json`) to skip them as unreadable lines"
        ),
        "{}",
        predict.stderr
    );

    // No header anywhere after the bounds: the first line's error, as before.
    let job = write(&dir, "no-header.out", &format!("{}done\n", modules(201)));
    let line = import(&dir, &job).unwrap_err();
    assert_eq!(line, not_an_input(&job, &modules(1)));
}

#[test]
fn a_json_line_before_a_log_is_a_preamble_line() {
    let (dir, _, plain, expected) = plain_log("job-output-json-first");
    let first = "{\"job\": 4711, \"nodes\": 2}\n";
    for (name, log, header_line) in [
        ("plain.out", plain.clone(), 5),
        ("labelled.out", job_output(&SRUN, &plain), 14),
        ("tagged.out", job_output(&MPIRUN, &plain), 14),
    ] {
        let job = write(&dir, name, &format!("{first}{log}"));
        let (notes, report) = import(&dir, &job).unwrap();
        assert_eq!(report, expected, "{name}");
        assert!(
            notes.contains(&format!("{}:{header_line}: ", job.display()))
                && notes.contains(
                    "line(s) before it that are not nccl-tests output (the first at line 1)"
                ),
            "{name}: {notes}"
        );
    }
    // JSON followed by what is not a log stays invalid JSON.
    let job = write(&dir, "two-objects.json", &format!("{first}{first}"));
    let line = import(&dir, &job).unwrap_err();
    assert!(
        line.contains("looks like JSON but is not valid JSON: trailing characters"),
        "{line}"
    );
}
