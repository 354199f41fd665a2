//! `report`'s page where a reader could be misled: numbers that are no
//! link's (one rank), a run shown twice, stored bandwidths that disagree
//! with their own bytes and times, the host-broadcast answer, the layout
//! (folded lists, boxes that hold their text), notes and flags, fits worse
//! than the mean, and a page interrupted while written.
use std::path::Path;

use crate::util::{data_dir, run, scratch};

/// Writes the page of `inputs` (with `extra` flags) into `dir`; returns
/// the page and stderr.
fn page_of(dir: &Path, inputs: &[&str], extra: &[&str]) -> (String, String) {
    let out = dir.join("report.html");
    let _ = std::fs::remove_file(&out);
    let mut args = vec!["report", "-o", out.to_str().unwrap()];
    args.extend_from_slice(extra);
    args.extend_from_slice(inputs);
    let done = run(&args);
    done.ok();
    (std::fs::read_to_string(&out).unwrap(), done.stderr)
}

/// `collbench-a.json` as JSON, changed by `edit`, written as `dir/name`.
fn variant(dir: &Path, name: &str, edit: impl FnOnce(&mut serde_json::Value)) -> String {
    let text = std::fs::read_to_string(data_dir().join("collbench-a.json")).unwrap();
    let mut report: serde_json::Value = serde_json::from_str(&text).unwrap();
    edit(&mut report);
    let path = dir.join(name);
    std::fs::write(&path, report.to_string()).unwrap();
    path.to_string_lossy().into_owned()
}

/// A one-rank broadcast: in place it copies nothing, so its "busbw" is the
/// size over a no-op's time.
fn one_rank_broadcast(dir: &Path) -> String {
    variant(dir, "one-rank.json", |r| {
        let env = &mut r["environment"];
        env["world_size"] = 1.into();
        env["ranks"].as_array_mut().unwrap().truncate(1);
        env["env"] = serde_json::json!({});
        for row in r["results"].as_array_mut().unwrap() {
            row["collective"] = "broadcast".into();
            row["op"] = serde_json::Value::Null;
            row["root"] = 0.into();
            row["per_rank"].as_array_mut().unwrap().truncate(1);
            row["samples_us"].as_array_mut().unwrap().truncate(1);
            // As a no-op timed: 8 MiB in 2.3 ns, 3 642 272 GB/s.
            if row["placement"] == "in" {
                row["time_us"]["mean"] = 0.0023.into();
            }
            let algbw =
                row["bytes"].as_f64().unwrap() / row["time_us"]["mean"].as_f64().unwrap() / 1e3;
            row["algbw_gbps"] = algbw.into();
            row["busbw_gbps"] = algbw.into();
        }
    })
}

/// The summary table's row of the run labelled `label`.
fn summary_row<'a>(page: &'a str, label: &str) -> &'a str {
    let summary = &page[page.find("<section id=\"summary\">").unwrap()..];
    let summary = &summary[..summary.find("</section>").unwrap()];
    let at = summary
        .find(&format!(">{label}</a>"))
        .unwrap_or_else(|| panic!("no summary row of {label}"));
    let row = &summary[at..];
    &row[..row.find("</tr>").unwrap()]
}

#[test]
fn the_summary_shows_a_dash_not_a_bus_bandwidth_for_a_one_rank_run() {
    let dir = scratch("trust-one-rank");
    let one = one_rank_broadcast(&dir);
    let (page, _) = page_of(&dir, &[&one, "collbench-a.json"], &[]);
    let row = summary_row(&page, &one);
    assert!(
        row.contains("— (1 rank: no link crossed)"),
        "the one-rank run's peak: {row}"
    );
    // No number of the no-op's size over its time anywhere in the row.
    assert!(!row.contains("GB/s") && !row.contains("3642"), "{row}");
    // A run of two ranks keeps its peak.
    let two = summary_row(&page, "collbench-a.json");
    assert!(two.contains(">2.82<"), "{two}");
}

#[test]
fn the_same_run_given_twice_is_shown_twice_with_a_warning() {
    let dir = scratch("trust-twice");
    let copy = dir.join("copy-of-a.json");
    std::fs::copy(data_dir().join("collbench-a.json"), &copy).unwrap();
    let out = dir.join("report.html");
    let done = run(&[
        "report",
        "-o",
        out.to_str().unwrap(),
        "collbench-a.json",
        copy.to_str().unwrap(),
        "collbench-b.json",
    ]);
    assert!(
        done.ok().contains("3 run(s), 0 picture(s), 1 warning(s)"),
        "{}",
        done.stdout
    );
    assert!(
        done.stderr.contains(&format!(
            "note: {} is the same run as collbench-a.json",
            copy.display()
        )),
        "{}",
        done.stderr
    );
    let page = std::fs::read_to_string(&out).unwrap();
    let second = &page[page.find("<section id=\"run-2\">").unwrap()..];
    let second = &second[..second.find("</section>").unwrap()];
    assert!(
        second.contains("the same run as collbench-a.json, shown above"),
        "{second}"
    );
    // The other run is not taken for it.
    let third = &page[page.find("<section id=\"run-3\">").unwrap()..];
    assert!(!third[..third.find("</section>").unwrap()].contains("the same run"));
}

#[test]
fn stored_bandwidths_are_checked_against_their_bytes_and_times() {
    let dir = scratch("trust-bandwidths");
    let edited = variant(&dir, "edited.json", |r| {
        let row = &mut r["results"][2];
        let busbw = row["busbw_gbps"].as_f64().unwrap();
        row["busbw_gbps"] = (busbw * 10.0).into();
    });
    let (page, _) = page_of(&dir, &[&edited], &[]);
    assert!(
        page.contains(
            "1 row(s) whose stored algbw or busbw disagree with their size, time and rank count"
        ),
        "no warning"
    );
    let notes: Vec<&str> = page
        .split("<tr class=\"note\">")
        .skip(1)
        .map(|n| &n[..n.find("</tr>").unwrap()])
        .filter(|n| n.contains("stored bandwidths disagree"))
        .collect();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(notes[0].contains("busbw"), "{}", notes[0]);
    assert!(!notes[0].contains("algbw"), "algbw agrees: {}", notes[0]);
    // Every fixture's stored bandwidths agree with its bytes and times.
    let (page, _) = page_of(&dir, &[data_dir().to_str().unwrap()], &[]);
    assert!(!page.contains("stored bandwidths disagree"));
}

/// The two-node host-broadcast fixture with a second size, 4 MiB, each
/// strategy there 3.5 times as long (the relay then fastest on rank 0).
fn host_broadcast_two_sizes(dir: &Path) -> String {
    let text =
        std::fs::read_to_string(data_dir().join("collbench-host-broadcast-2nodes.json")).unwrap();
    let mut report: serde_json::Value = serde_json::from_str(&text).unwrap();
    let rows = report["deliveries"].as_array_mut().unwrap();
    let mut more = rows.clone();
    for row in &mut more {
        row["bytes"] = (4u64 << 20).into();
        for stat in ["mean", "min", "p50", "p95", "p99", "max"] {
            if let Some(t) = row["time_us"][stat].as_f64() {
                row["time_us"][stat] = (t * 3.5).into();
            }
        }
    }
    rows.extend(more);
    let path = dir.join("host-broadcast.json");
    std::fs::write(&path, report.to_string()).unwrap();
    path.to_string_lossy().into_owned()
}

#[test]
fn the_host_broadcast_question_is_answered_side_by_side_with_a_plot_of_time_against_size() {
    let dir = scratch("trust-host-broadcast");
    let file = host_broadcast_two_sizes(&dir);
    let (page, _) = page_of(&dir, &[&file], &[]);
    let section = &page[page.find("<section id=\"run-1\">").unwrap()..];
    let answer = section
        .find("Which strategy delivers a host buffer to every GPU fastest")
        .expect("the question");
    let body = &section[answer..];
    // First the strategies side by side, as `table` prints them.
    let table = run(&["table", &file]).ok().to_string();
    let by_strategy = &table[table.find("time by strategy:").unwrap()..];
    let header: Vec<&str> = by_strategy
        .lines()
        .nth(1)
        .unwrap()
        .split("  ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect();
    let first_table = &body[..body.find("</table>").unwrap()];
    for column in &header {
        assert!(
            first_table.contains(&format!(">{column}</th>")),
            "no {column} in the side-by-side table"
        );
    }
    assert!(first_table.contains(">fastest</th>"));
    // Then the picture: one line per strategy over both sizes.
    let figure = &body[body.find("<figure class=\"plot\">").expect("a plot")..];
    let figure = &figure[..figure.find("</figure>").unwrap()];
    for words in ["time per delivery", "direct", "relay", "pipelined", "4 MiB"] {
        assert!(figure.contains(words), "the plot has no {words}");
    }
    // Every row is there too, folded under the answer.
    let rows = &body[body
        .find("<details><summary>every row (16)")
        .expect("folded rows")..];
    assert!(rows.contains(">x copy</th>"));
    // Nothing in the summary reads as a bus bandwidth.
    assert!(summary_row(&page, &file).contains("host-broadcast"));
}

#[test]
fn the_skipped_file_list_is_folded_and_notes_name_their_input_and_flags_report_takes() {
    let dir = scratch("trust-layout");
    let data = data_dir();
    let (page, folder_stderr) = page_of(&dir, &[data.to_str().unwrap()], &[]);
    let stderr = folder_stderr.clone();
    // tests/data's files that are no run: 8, and the 28 of trace/ (PyTorch traces).
    assert!(
        page.contains("<details><summary>36 file(s) skipped"),
        "the skipped list is not folded"
    );
    assert!(!page.contains("<details open>"));
    // Every note on stderr names its file.
    for note in stderr.lines().filter(|l| l.starts_with("note:")) {
        assert!(note.contains(data.to_str().unwrap()), "{note}");
    }
    // A note that suggests a flag names one `report` takes.
    let help = run(&["report", "--help"]).ok().to_string();
    let shared = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../results/2026-11-25-h100vm-1n1g-gpu-smoke-2/shared/shared-2-all-reduce.json");
    let (_, stderr) = page_of(&dir, &[shared.to_str().unwrap()], &[]);
    let both = format!("{folder_stderr}\n{stderr}");
    let suggested: Vec<&str> = both
        .split(|c: char| c.is_whitespace() || matches!(c, '(' | ')' | ',' | ';'))
        .filter(|w| w.starts_with("--") && w.len() > 2)
        .collect();
    for flag in ["--link-gbps", "--collective", "--dtype", "--world-size"] {
        assert!(suggested.contains(&flag), "no note suggests {flag}: {both}");
    }
    for flag in suggested {
        let flag = flag.trim_end_matches(['.', ':']);
        assert!(
            help.contains(&format!("{flag} ")),
            "report suggests {flag} but takes no such flag"
        );
    }
    // And taking it gives the ceiling the note said was missing.
    let (page, stderr) = page_of(&dir, &[shared.to_str().unwrap()], &["--link-gbps", "450"]);
    assert!(!stderr.contains("no link ceiling"), "{stderr}");
    assert!(page.contains(">of ceiling</th>"), "no ceiling column");
}

#[test]
fn a_fit_worse_than_the_points_mean_is_not_drawn_as_a_fitted_model() {
    let dir = scratch("trust-negative-r2");
    // Times that fall as sizes grow: no α–β line follows them.
    let falling = variant(&dir, "falling.json", |r| {
        let rows: Vec<serde_json::Value> = r["results"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|row| row["placement"] == "out")
            .zip([1000.0, 100.0, 10.0, 1.0])
            .map(|(row, t): (&serde_json::Value, f64)| {
                let mut row = row.clone();
                row["time_us"] = serde_json::json!({"mean": t, "min": null, "p50": null, "p95": null, "p99": null, "max": null, "stddev": null});
                for drop in ["iteration_max_us", "samples_us", "skew_us", "slowest_rank"] {
                    row[drop] = serde_json::Value::Null;
                }
                row["per_rank"] = serde_json::json!([]);
                let algbw = row["bytes"].as_f64().unwrap() / t / 1e3;
                row["algbw_gbps"] = algbw.into();
                row["busbw_gbps"] = algbw.into();
                row
            })
            .collect();
        r["results"] = rows.into();
        r["config"]["placements"] = serde_json::json!(["out"]);
    });
    let (page, stderr) = page_of(&dir, &[&falling], &[]);
    assert!(
        stderr.contains(&format!(
            "note: {falling}: out-of-place: model not drawn: its fit has r² = -"
        )),
        "{stderr}"
    );
    assert!(
        page.contains("r² = -4.01 &lt; 0, worse than the points&#39; mean: its model is not drawn")
    );
    assert!(!page.contains("fitted α–β model"), "a model is drawn");
    // `plot --fit` alike.
    let svg = dir.join("falling.svg");
    let done = run(&["plot", "--fit", &falling, "-o", svg.to_str().unwrap()]);
    done.ok();
    assert!(!std::fs::read_to_string(&svg)
        .unwrap()
        .contains("fitted α–β model"));
}

/// Whether `dir` holds a temporary file of `name` (`.NAME.*.tmp`).
fn temporary_of(dir: &Path, name: &str) -> Option<String> {
    std::fs::read_dir(dir).unwrap().flatten().find_map(|e| {
        let n = e.file_name().to_string_lossy().into_owned();
        (n.starts_with(&format!(".{name}.")) && n.ends_with(".tmp")).then_some(n)
    })
}

#[test]
fn a_signal_while_the_page_is_written_leaves_the_page_whole_or_absent_and_no_temporary_file() {
    use std::process::{Command, Stdio};
    let dir = scratch("trust-signal");
    // A big picture, embedded many times: a page of some 15 MB, so that
    // the signal comes while it is written.
    let mut rows = Vec::new();
    let text = std::fs::read_to_string(data_dir().join("collbench-a.json")).unwrap();
    let mut report: serde_json::Value = serde_json::from_str(&text).unwrap();
    let base = report["results"][0].clone();
    for i in 1..=8000u64 {
        let mut row = base.clone();
        row["bytes"] = (1024 * i).into();
        row["count"] = (256 * i).into();
        let t = 10.0 + i as f64 * 0.01;
        row["time_us"]["mean"] = t.into();
        row["algbw_gbps"] = ((1024 * i) as f64 / t / 1e3).into();
        row["busbw_gbps"] = row["algbw_gbps"].clone();
        row["iteration_max_us"] = serde_json::Value::Null;
        row["samples_us"] = serde_json::Value::Null;
        rows.push(row);
    }
    report["results"] = rows.into();
    let big = dir.join("big.json");
    std::fs::write(&big, report.to_string()).unwrap();
    let svg = dir.join("big.svg");
    run(&["plot", big.to_str().unwrap(), "-o", svg.to_str().unwrap()]).ok();
    let svg = svg.to_str().unwrap().to_string();
    for (signal, code) in [("TERM", 143), ("INT", 130), ("HUP", 129)] {
        let page = dir.join("report.html");
        let _ = std::fs::remove_file(&page);
        let mut args = vec![
            "report".to_string(),
            "-o".into(),
            page.display().to_string(),
        ];
        args.extend(std::iter::repeat_n(svg.clone(), 20));
        let mut child = Command::new(env!("CARGO_BIN_EXE_collbench-analyze"))
            .args(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The moment the temporary page appears, the signal.
        let started = std::time::Instant::now();
        while temporary_of(&dir, "report.html").is_none() {
            assert!(
                started.elapsed().as_secs() < 300,
                "no temporary page within 5 minutes"
            );
            if child.try_wait().unwrap().is_some() {
                panic!("the page was written before its temporary file was seen");
            }
        }
        let sent = Command::new("kill")
            .args([format!("-{signal}"), child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
        let output = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(
            temporary_of(&dir, "report.html"),
            None,
            "SIG{signal} left a temporary file: {stderr}"
        );
        match output.status.code() {
            Some(c) if c == code => {
                // The signal may come after the page was renamed into
                // place and before the process ended: then it is whole.
                if page.exists() {
                    assert!(
                        std::fs::read_to_string(&page)
                            .unwrap()
                            .ends_with("</html>\n"),
                        "SIG{signal}: a partial page beside the error"
                    );
                }
                assert!(
                    stderr.contains(&format!("error: stopped by SIG{signal}; outputs not yet written are left as they were")),
                    "{stderr}"
                );
            }
            // The signal came as the page was renamed into place: whole.
            Some(0) => assert!(std::fs::read_to_string(&page)
                .unwrap()
                .ends_with("</html>\n")),
            other => panic!("SIG{signal}: exit {other:?}: {stderr}"),
        }
    }
}
