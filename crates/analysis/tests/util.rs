//! Helpers of the CLI tests.
//!
//! Helpers of the CLI tests: running the binary in the fixture folder (so
//! messages name files as a user typed them), scratch folders, JSON access.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// What one run of the binary did.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// Asserts success and returns stdout.
    pub fn ok(&self) -> &str {
        assert_eq!(
            self.code, 0,
            "stderr: {}\nstdout: {}",
            self.stderr, self.stdout
        );
        &self.stdout
    }

    /// Asserts a usage/input error: status 2, one line on stderr, no panic.
    pub fn fails(&self) -> &str {
        assert_eq!(
            self.code, 2,
            "stdout: {}\nstderr: {}",
            self.stdout, self.stderr
        );
        assert!(!self.stderr.contains("panicked"), "{}", self.stderr);
        let errors: Vec<&str> = self
            .stderr
            .lines()
            .filter(|l| l.starts_with("error"))
            .collect();
        assert_eq!(errors.len(), 1, "{}", self.stderr);
        errors[0]
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(self.ok()).expect("stdout is JSON")
    }
}

pub fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

/// The path of a fixture of the model crate's tests.
pub fn ddp_data(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../model/tests/data")
        .join(name)
        .display()
        .to_string()
}

/// Runs `collbench-analyze ARGS` in `tests/data`.
pub fn run(args: &[&str]) -> Run {
    let output = Command::new(env!("CARGO_BIN_EXE_collbench-analyze"))
        .args(args)
        .current_dir(data_dir())
        .output()
        .expect("the binary runs");
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// An empty scratch folder of this name for one test.
pub fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch folder");
    dir
}

/// Imports `args` into `dir/name` and returns the report(s) written.
pub fn import(dir: &Path, name: &str, args: &[&str]) -> Vec<serde_json::Value> {
    let out = dir.join(name);
    let out_text = out.to_string_lossy().into_owned();
    let mut all = vec!["import", "-o", &out_text];
    all.extend_from_slice(args);
    let run = run(&all);
    run.ok()
        .lines()
        .map(|line| {
            let path = line
                .strip_prefix("wrote ")
                .and_then(|l| l.split(": ").next())
                .expect("a `wrote PATH: …` line");
            let text = std::fs::read_to_string(path).expect("written report");
            serde_json::from_str(&text).expect("report JSON")
        })
        .collect()
}

/// The results of a report with this placement, in order.
pub fn results<'a>(report: &'a serde_json::Value, placement: &str) -> Vec<&'a serde_json::Value> {
    report["results"]
        .as_array()
        .expect("results")
        .iter()
        .filter(|r| r["placement"] == placement)
        .collect()
}

pub fn close(a: f64, b: f64, tolerance: f64) -> bool {
    ((a - b) / b).abs() <= tolerance
}

/// The texts of an SVG document.
pub fn svg_texts(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    let doc = roxmltree::Document::parse(&text).expect("well-formed SVG");
    doc.descendants()
        .filter(|n| n.tag_name().name() == "text")
        .map(|n| n.text().unwrap_or_default().trim().to_string())
        .collect()
}

/// `collbench-a.json` made a run of 2 nodes × 8 GPUs of `collective`, with
/// a link ceiling as reports recorded it when the inter-node tier was each
/// GPU's share of its node's NICs (3200 Gb/s over 8 GPUs: 50 GB/s, then
/// every collective's ceiling; the schema crate's fixture); written into
/// `dir`.
pub fn two_nodes_of_eight(dir: &std::path::Path, collective: &str) -> String {
    let text = std::fs::read_to_string(data_dir().join("collbench-a.json")).unwrap();
    let mut report: serde_json::Value = serde_json::from_str(&text).unwrap();
    let env = &mut report["environment"];
    env["world_size"] = 16.into();
    env["nodes"] = 2.into();
    let old_ceiling = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../schema/tests/data/link-ceiling-per-gpu-share.json");
    env["link_ceiling"] =
        serde_json::from_str(&std::fs::read_to_string(old_ceiling).unwrap()).unwrap();
    for row in report["results"].as_array_mut().unwrap() {
        row["collective"] = collective.into();
    }
    let path = dir.join(format!("{collective}-2x8.json"));
    std::fs::write(&path, report.to_string()).unwrap();
    path.to_string_lossy().into_owned()
}
