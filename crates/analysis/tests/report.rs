//! `report`: the one page that shows every run, read back as text: the
//! summary and the sections in order, the `table` columns, the pictures,
//! warnings beside their rows, what was skipped, inputs escaped, and the
//! refusals (an existing page, a picture collbench-analyze did not draw, a
//! named file that is not a run).
use std::path::Path;

use crate::util::{data_dir, run, scratch, two_nodes_of_eight};

/// Writes the page of `inputs` into `dir` and returns it.
fn page(dir: &Path, inputs: &[&str]) -> String {
    let out = dir.join("report.html");
    let out_text = out.to_str().unwrap();
    let mut args = vec!["report", "-o", out_text];
    args.extend_from_slice(inputs);
    let stdout = run(&args).ok().to_string();
    assert!(
        stdout.starts_with(&format!("wrote {out_text}: ")),
        "{stdout}"
    );
    std::fs::read_to_string(&out).unwrap()
}

/// The HTML of the section anchored `id`.
fn section<'a>(page: &'a str, id: &str) -> &'a str {
    let start = page
        .find(&format!("<section id=\"{id}\">"))
        .unwrap_or_else(|| panic!("no section {id}"));
    let end = page[start..].find("</section>").unwrap() + start;
    &page[start..end]
}

/// The header cells of the first table after `marker` in `html`.
fn headers_after(html: &str, marker: &str) -> Vec<String> {
    let from = html.find(marker).unwrap_or_else(|| panic!("no {marker}"));
    let table = &html[from..];
    let head = &table[table.find("<thead>").unwrap()..table.find("</thead>").unwrap()];
    head.split("<th class=\"")
        .skip(1)
        .map(|cell| {
            let text = &cell[cell.find('>').unwrap() + 1..];
            text[..text.find("</th>").unwrap()].to_string()
        })
        .collect()
}

/// No address a viewer would load from outside the page.
fn assert_self_contained(page: &str) {
    for attribute in ["src=", "href="] {
        for (i, _) in page.match_indices(attribute) {
            let value = page[i + attribute.len()..].trim_start_matches(['"', '\'']);
            assert!(
                !value.starts_with("http://") && !value.starts_with("https://"),
                "loads {}",
                &page[i..(i + 60).min(page.len())]
            );
        }
    }
    assert!(!page.contains("<script"), "a script in the page");
    assert!(!page.contains("<link"), "a linked resource in the page");
    assert!(page.contains("Content-Security-Policy\" content=\"default-src 'none'"));
}

#[test]
fn one_page_shows_each_run_in_order_with_its_tables_pictures_fits_and_warnings() {
    let dir = scratch("report-runs");
    let page = page(
        &dir,
        &[
            "collbench-a.json",
            "collbench-stdout-mpi-4rank.out",
            "mpi-4rank-oversubscribed.json",
            "collbench-soak-4cycles.json",
            "collbench-host-broadcast-2nodes.json",
        ],
    );
    assert_self_contained(&page);
    // The summary first, linking every run's section, in the order given.
    let summary = section(&page, "summary");
    let names = [
        "collbench-a.json",
        "collbench-stdout-mpi-4rank.out",
        "mpi-4rank-oversubscribed.json",
        "collbench-soak-4cycles.json",
        "collbench-host-broadcast-2nodes.json",
    ];
    let mut last = 0;
    for (i, name) in names.iter().enumerate() {
        let link = format!("<a href=\"#run-{}\">{name}</a>", i + 1);
        let at = summary.find(&link).unwrap_or_else(|| panic!("{link}"));
        assert!(at > last, "{name} out of order");
        last = at;
        assert!(
            page.find(&format!("<section id=\"run-{}\">", i + 1))
                .unwrap()
                > page.find("</section>").unwrap()
        );
    }
    assert_eq!(
        headers_after(summary, "<table>"),
        [
            "run",
            "collective",
            "ranks",
            "status",
            "peak busbw (GB/s)",
            "at size",
            "warnings"
        ]
    );
    // collbench-a.json peaks at 1 MiB out-of-place, 2.82 GB/s, no warnings.
    assert!(summary.contains(
        "<td class=\"r\">2</td><td class=\"l\">complete</td><td class=\"r\">2.82</td><td class=\"r\">1 MiB</td><td class=\"r\">0</td>"
    ), "{summary}");

    // The results table has `table`'s columns, and a warning column.
    let a = section(&page, "run-1");
    let table_header = run(&["table", "collbench-a.json"])
        .ok()
        .lines()
        .nth(1)
        .unwrap()
        .to_string();
    let expected: Vec<String> = table_header
        .split("  ")
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(String::from)
        .collect();
    assert_eq!(headers_after(a, "<h3>Results</h3>"), expected);
    assert!(
        a.contains("<td class=\"r\">383.5</td>"),
        "the mean of 1 MiB in-place"
    );
    // Its environment: tool, hosts, MPI library.
    assert!(a.contains("<td class=\"l\">laptop</td>"));
    assert!(a.contains("Open MPI"));
    // busbw and time against size, each with its fitted model.
    assert_eq!(a.matches("<figure class=\"plot\">").count(), 2);
    assert!(a.contains("bus bandwidth vs message size"));
    assert!(a.contains("time vs message size"));
    assert_eq!(a.matches("fitted α–β model").count(), 2);
    assert!(a.contains("<h3>Fits"));
    assert!(
        !a.contains("class=\"warnings\""),
        "collbench-a.json has no warning"
    );

    // A partial run says so at its top, before anything else.
    let partial = section(&page, "run-2");
    let status = partial
        .find("<p class=\"status\">Status: partial")
        .expect("status");
    assert!(status < partial.find("<h3>Environment").unwrap());

    // The noisy MPI run: each warning at the top, and beside its row.
    let noisy = section(&page, "run-3");
    assert!(noisy.contains("a few slow iterations decide the mean at 8 B"));
    assert!(noisy.contains("missed by more than 10 %"));
    let rows: Vec<&str> = noisy.split("<tr").collect();
    let row = |size: &str| {
        let i = rows
            .iter()
            .position(|r| r.contains(&format!("<td class=\"r\">{size}</td>")))
            .unwrap_or_else(|| panic!("the {size} row"));
        (rows[i], rows[i + 1])
    };
    let (row_32, under_32) = row("32 B");
    assert!(row_32.starts_with(" class=\"warn\">"), "{row_32}");
    assert!(under_32.starts_with(" class=\"note\"><td colspan=\"16\">⚠ mean +5469 % over the median, slowest iteration 548x the median; the fit misses it by -98.0 %</td>"), "{under_32}");
    let (_, under_8k) = row("8 KiB");
    assert!(
        under_8k.contains("the fit misses it by -36.2 %"),
        "{under_8k}"
    );
    assert!(
        !under_8k.contains("mean +"),
        "8 KiB's mean is typical: {under_8k}"
    );
    let (row_128k, _) = row("128 KiB");
    assert!(
        !row_128k.contains("warn"),
        "128 KiB is fitted and typical: {row_128k}"
    );
    assert!(noisy.contains("<span class=\"warn\">  missed by more than 10 %"));
    let box_start = noisy.find("<div class=\"warnings\">").unwrap();
    let warnings = &noisy[box_start..box_start + noisy[box_start..].find("</div>").unwrap()];
    let count = warnings.matches("<li>").count();
    assert_eq!(
        count, 2,
        "the mean's outliers and the fit's misses: {warnings}"
    );
    assert!(
        noisy.contains(&format!("<strong>{count} warning(s)</strong>")),
        "{count}"
    );
    assert!(summary.contains(&format!("<td class=\"r\">{count}</td></tr>")));

    // The soak run: its cycles over time, and soak's own text.
    let soak = section(&page, "run-4");
    assert!(soak.contains("<h3>Soak: the cycles over time</h3>"));
    assert_eq!(soak.matches("<figure class=\"plot\">").count(), 3);
    assert!(soak.contains("over time"));
    assert!(soak.contains("cycle 1"));

    // The host broadcast: its strategies side by side, their times
    // against size, every row folded (report_trust.rs tests them).
    let deliveries = section(&page, "run-5");
    assert!(deliveries.contains("Which strategy delivers a host buffer to every GPU fastest"));
    assert_eq!(deliveries.matches("<figure class=\"plot\">").count(), 1);
}

#[test]
fn a_folder_is_searched_in_order_and_what_is_not_a_run_is_listed_with_its_reason() {
    let dir = scratch("report-folder");
    let data = data_dir();
    let page = page(&dir, &[data.to_str().unwrap()]);
    assert_self_contained(&page);
    // Sections follow the file names.
    let labels: Vec<&str> = page
        .split("<section id=\"run-")
        .skip(1)
        .map(|s| {
            let h2 = &s[s.find("<h2>").unwrap() + 4..];
            &h2[..h2.find("</h2>").unwrap()]
        })
        .collect();
    // (Several runs of one file keep the file's order.)
    let files: Vec<&str> = labels
        .iter()
        .map(|l| l.split(" [").next().unwrap())
        .collect();
    let mut sorted = files.clone();
    sorted.sort();
    assert_eq!(files, sorted);
    assert!(labels.len() >= 20, "{labels:?}");
    // Each file that is not a run is listed with the error `table` gives.
    let skipped = section(&page, "summary");
    for bad in [
        "bad-empty.log",
        "bad-truncated.log",
        "bad-schema-version.json",
        "nccl-headerless.log",
    ] {
        let error = run(&["table", bad]).fails().to_string();
        let reason = error.strip_prefix("error: ").unwrap().replacen(bad, "", 1);
        let shown = format!("{}{}", data.join(bad).display(), reason);
        let escaped = analysis::html::escape(&shown);
        assert!(skipped.contains(&escaped), "{bad}: {escaped}");
    }
}

#[test]
fn a_page_inside_the_folder_it_shows_is_not_read_back() {
    let dir = scratch("report-inside");
    std::fs::copy(data_dir().join("collbench-a.json"), dir.join("a.json")).unwrap();
    let out = dir.join("report.html");
    let args = ["report", dir.to_str().unwrap(), "-o", out.to_str().unwrap()];
    assert!(run(&args)
        .ok()
        .contains("1 run(s), 0 picture(s), 0 warning(s), 0 file(s) skipped"));
    // An existing page is replaced only with --force.
    let line = run(&args).fails().to_string();
    assert!(
        line.contains("--out") && line.contains("already exists (pass --force"),
        "{line}"
    );
    let mut forced = args.to_vec();
    forced.push("--force");
    assert!(run(&forced).ok().contains("0 file(s) skipped"));
}

#[test]
fn a_run_in_an_input_folder_is_never_the_page() {
    let dir = scratch("report-over-a-run");
    let run_file = dir.join("r.json");
    std::fs::copy(data_dir().join("collbench-a.json"), &run_file).unwrap();
    std::fs::copy(data_dir().join("collbench-a.json"), dir.join("s.json")).unwrap();
    let before = std::fs::read(&run_file).unwrap();
    let line = run(&[
        "--force",
        "report",
        dir.to_str().unwrap(),
        "-o",
        run_file.to_str().unwrap(),
    ])
    .fails()
    .to_string();
    assert!(
        line.contains("--out") && line.contains("is also an input (found in"),
        "{line}"
    );
    assert_eq!(std::fs::read(&run_file).unwrap(), before, "the run is kept");
}

#[test]
fn a_run_too_long_for_a_page_keeps_its_summary_and_says_what_is_left_out() {
    let dir = scratch("report-long");
    // A soak run of 4 cycles, repeated as later cycles past 20 000 rows.
    let text = std::fs::read_to_string(data_dir().join("collbench-soak-4cycles.json")).unwrap();
    let mut report: serde_json::Value = serde_json::from_str(&text).unwrap();
    let results = report["results"].as_array().unwrap().clone();
    let mut long = Vec::new();
    for repeat in 0.. {
        if long.len() > 20_000 {
            break;
        }
        for r in &results {
            let mut r = r.clone();
            r["cycle"] = (r["cycle"].as_u64().unwrap() + 4 * repeat).into();
            long.push(r);
        }
    }
    let rows = long.len();
    let cycles = 1 + long
        .iter()
        .map(|r| r["cycle"].as_u64().unwrap())
        .max()
        .unwrap();
    report["config"]["cycles"] = cycles.into();
    report["run"]["cycles_completed"] = cycles.into();
    report["results"] = serde_json::Value::Array(long);
    let input = dir.join("long.json");
    std::fs::write(&input, serde_json::to_string(&report).unwrap()).unwrap();
    let html = page(&dir, &[input.to_str().unwrap()]);
    let run1 = section(&html, "run-1");
    assert!(
        run1.contains(&format!("the table shows the first 2000 of {rows} rows")),
        "table cap"
    );
    assert!(
        run1.contains(&format!(
            "pictures left out: {rows} rows are more than a page can draw"
        )),
        "picture cap"
    );
    assert!(!run1.contains("<svg"), "no picture drawn");
    assert!(html.len() < 8 << 20, "{} bytes", html.len());
}

#[test]
fn text_from_inputs_is_shown_as_text() {
    let dir = scratch("report-escape");
    let text = std::fs::read_to_string(data_dir().join("collbench-a.json")).unwrap();
    let hostile = text.replace("\"laptop\"", "\"<script>alert(1)</script>\"");
    assert_ne!(hostile, text);
    let input = dir.join("<i>run.json");
    std::fs::write(&input, hostile).unwrap();
    let out = dir.join("report.html");
    run(&[
        "report",
        input.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ])
    .ok();
    let page = std::fs::read_to_string(out).unwrap();
    assert_self_contained(&page);
    assert!(page.contains("<td class=\"l\">&lt;script&gt;alert(1)&lt;/script&gt;</td>"));
    assert!(page.contains("&lt;i&gt;run.json"));
    assert!(!page.contains("<i>run"));
}

#[test]
fn pictures_are_embedded_only_when_collbench_analyze_drew_them() {
    let dir = scratch("report-svg");
    let drawn = dir.join("course.svg");
    run(&["plot", "course.csv", "-o", drawn.to_str().unwrap()]).ok();
    // A script and a link slipped into a drawn picture are dropped.
    let svg = std::fs::read_to_string(&drawn).unwrap();
    let tampered = svg.replacen(
        "<rect ",
        "<script>alert(1)</script><rect onload=\"alert(2)\" ",
        1,
    );
    let tampered_path = dir.join("tampered.svg");
    std::fs::write(&tampered_path, tampered).unwrap();
    let page = page(
        &dir,
        &[
            "collbench-a.json",
            drawn.to_str().unwrap(),
            tampered_path.to_str().unwrap(),
        ],
    );
    assert_self_contained(&page);
    assert!(!page.contains("alert"));
    assert!(page.contains("<a href=\"#picture-1\">"));
    let tampered_section = section(&page, "picture-2");
    assert!(tampered_section
        .contains("Left out of this picture: &lt;script&gt; element, onload event handler."));
    assert!(section(&page, "picture-1").contains("nccl 2 ranks"));
    assert!(!section(&page, "picture-1").contains("Left out"));

    // Anything else is refused in one line naming the file.
    let foreign = dir.join("foreign.svg");
    std::fs::write(
        &foreign,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"10\" height=\"10\" viewBox=\"0 0 10 10\"><foreignObject/></svg>",
    )
    .unwrap();
    let out = dir.join("other.html");
    let line = run(&[
        "report",
        foreign.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ])
    .fails()
    .to_string();
    assert!(
        line.contains(&format!(
            "{}: not an SVG drawn by collbench-analyze: it holds <foreignObject>",
            foreign.display()
        )),
        "{line}"
    );
    assert!(!out.exists());
    // Found in a folder, it is skipped and listed instead.
    let page = page_of_folder(&dir);
    assert!(page.contains("foreign.svg: not an SVG drawn by collbench-analyze"));
}

fn page_of_folder(dir: &Path) -> String {
    let out = dir.join("folder.html");
    run(&[
        "report",
        dir.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--force",
    ])
    .ok();
    std::fs::read_to_string(out).unwrap()
}

#[test]
fn a_named_file_that_is_not_a_run_is_an_error() {
    let dir = scratch("report-bad");
    let out = dir.join("r.html");
    for (bad, says) in [
        (
            "bad-truncated.log",
            "bad-truncated.log:24: expected 13 cells",
        ),
        ("no-such-file.json", "no-such-file.json: cannot be read"),
    ] {
        let line = run(&[
            "report",
            "collbench-a.json",
            bad,
            "-o",
            out.to_str().unwrap(),
        ])
        .fails()
        .to_string();
        assert!(line.contains(says), "{line}");
        assert!(!out.exists());
    }
    let empty = dir.join("empty");
    std::fs::create_dir(&empty).unwrap();
    let line = run(&[
        "report",
        empty.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ])
    .fails()
    .to_string();
    assert!(line.contains("no run found in"), "{line}");
}

#[test]
fn the_readme_example_says_what_the_readme_shows() {
    let dir = scratch("report-readme");
    let out = dir.join("report.html");
    let out_text = out.to_str().unwrap();
    let stdout = run(&[
        "report",
        "collbench-a.json",
        "mpi-4rank-oversubscribed.json",
        "collbench-soak-4cycles.json",
        "-o",
        out_text,
    ])
    .ok()
    .to_string();
    assert_eq!(
        stdout,
        format!("wrote {out_text}: 3 run(s), 0 picture(s), 7 warning(s), 0 file(s) skipped\n")
    );
}

/// collbench's stdout logs in a folder: the collectives' table is shown;
/// collbench host-broadcast's table, which no command reads from stdout,
/// is skipped with that reason on stderr and in the page (and named, it is
/// the error `table` and `import` give); hidden entries passed over are
/// counted on stderr. Nothing is left out silently.
#[test]
fn stdout_logs_in_a_folder_are_shown_or_skipped_with_their_reason() {
    let dir = scratch("report-stdout-logs");
    let logs = dir.join("logs");
    std::fs::create_dir(&logs).unwrap();
    // The host-broadcast table as collbench prints it (its own printer, run
    // on the schema's host-broadcast example report).
    let broadcast = "collbench-stdout-host-broadcast.out";
    for name in ["collbench-stdout-mpi-4rank.out", broadcast] {
        std::fs::copy(data_dir().join(name), logs.join(name)).unwrap();
    }
    std::fs::copy(data_dir().join("collbench-a.json"), logs.join(".old.json")).unwrap();
    let out = dir.join("r.html");
    let done = run(&[
        "report",
        logs.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    let said = done.ok();
    assert!(said.contains(": 1 run(s), 0 picture(s), "), "{said}");
    assert!(said.ends_with(" 1 file(s) skipped\n"), "{said}");
    let why = "1: collbench host-broadcast's table, which is not read from stdout (accepted: that run's --out report, or collbench's all-reduce, broadcast and chunked all-reduce tables)";
    let skipped = format!("{}:{why}", logs.join(broadcast).display());
    assert!(
        done.stderr.contains(&format!("note: skipped {skipped}")),
        "{}",
        done.stderr
    );
    let hidden = format!(
        "note: passed over 1 hidden entry of the folders (names starting with \".\"), the first {}: name a file to show it",
        logs.join(".old.json").display()
    );
    assert!(done.stderr.contains(&hidden), "{}", done.stderr);
    let page = std::fs::read_to_string(&out).unwrap();
    assert!(
        page.contains(&analysis::html::escape(&skipped)),
        "{skipped}"
    );
    let named = format!("error: {broadcast}:{why}");
    assert!(run(&["table", broadcast]).fails().starts_with(&named));
    let report = dir.join("hb.json");
    let import = ["import", broadcast, "-o", report.to_str().unwrap()];
    assert!(run(&import).fails().starts_with(&named));
    assert!(!report.exists());
}

/// The environment's link ceiling is each collective's over the recorded
/// links, not the one value an older report recorded for all of them.
#[test]
fn the_link_ceiling_is_the_runs_collectives() {
    let dir = scratch("report-link-ceiling");
    let alltoall = two_nodes_of_eight(&dir, "alltoall");
    let sendrecv = two_nodes_of_eight(&dir, "sendrecv");
    let page = page(&dir, &[&alltoall, &sendrecv]);
    let links = "8 GPU(s) per node × 2 node(s); intra-node 450.00 GB/s per GPU";
    assert!(
        section(&page, "run-1").contains(&format!(
            "<td class=\"l\">busbw at most 93.75 GB/s for alltoall (inter-node bound); {links}"
        )),
        "{page}"
    );
    let sendrecv = section(&page, "run-2");
    assert!(
        sendrecv.contains(&format!("<td class=\"l\">{links}")),
        "{sendrecv}"
    );
    assert!(
        sendrecv.contains("; sendrecv has no ceiling across nodes: one flow leaves each node"),
        "{sendrecv}"
    );
    assert!(!page.contains(" 50.00 GB/s"), "{page}");
}
