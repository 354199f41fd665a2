//! Fuzzing of the importers with proptest.
//!
//! Fuzzing of the importers with proptest: arbitrary bytes, and the
//! hand-written fixtures with random damage, must give reports or an error,
//! never a panic. `PROPTEST_CASES=100000 cargo test -p analysis fuzz` runs
//! a long session; the default is proptest's 256 cases per property.
use std::path::Path;

use proptest::prelude::*;

use crate::import::{collbench_stdout, csv, json, numbered, stdout};
use crate::load::load_bytes;
use crate::ImportOptions;

const STDOUT: &str = include_str!("../tests/data/nccl-2.19-all_reduce.log");
const OLD: &str = include_str!("../tests/data/nccl-2.11-all_reduce.log");
const SRUN: &str = include_str!("../tests/data/nccl-2.13-broadcast-srun.log");
const ITER: &str = include_str!("../tests/data/nccl-2.19-all_gather-iter-timestamps.log");
const JSON: &str = include_str!("../tests/data/nccl-json-v3-all_reduce-iter.json");
const CSV: &str = include_str!("../tests/data/course.csv");
const COLLBENCH: &str = include_str!("../tests/data/collbench-stdout-mpi-4rank.out");

fn options(lenient: bool) -> ImportOptions {
    ImportOptions {
        world_size: Some(4),
        collective: Some(schema::Collective::AllReduce),
        dtype: None,
        nodes: None,
        gpus_per_node: None,
        lenient,
        collective_expected: false,
        offered: crate::Offered::ALL,
    }
}

/// Runs every importer on `text`; only a panic fails.
fn import_all(text: &str, lenient: bool) {
    let origin = Path::new("fuzz");
    let opts = options(lenient);
    let _ = stdout::parse(text, origin, &opts);
    // Without flags, the collective and world size are inferred.
    let bare = ImportOptions {
        lenient,
        ..ImportOptions::default()
    };
    let _ = stdout::parse(text, origin, &bare);
    let _ = collbench_stdout::parse_lines(numbered(text), origin, &opts);
    let _ = json::parse(text, origin, &opts);
    let _ = csv::parse(text, origin, &opts);
    let _ = load_bytes(text.as_bytes(), origin, &opts);
}

/// A fixture with `edits` applied: (position, kind, byte) replace, insert
/// or delete a byte, or cut the text there.
fn damage(text: &str, edits: &[(usize, u8, u8)]) -> Vec<u8> {
    let mut bytes = text.as_bytes().to_vec();
    for &(at, kind, byte) in edits {
        if bytes.is_empty() {
            break;
        }
        let at = at % bytes.len();
        match kind % 4 {
            0 => bytes[at] = byte,
            1 => bytes.insert(at, byte),
            2 => {
                bytes.remove(at);
            }
            _ => bytes.truncate(at),
        }
    }
    bytes
}

fn edits() -> impl Strategy<Value = Vec<(usize, u8, u8)>> {
    proptest::collection::vec((any::<usize>(), any::<u8>(), any::<u8>()), 1..8)
}

proptest! {
    #[test]
    fn fuzz_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..4096), lenient: bool) {
        let text = String::from_utf8_lossy(&bytes);
        import_all(&text, lenient);
        let _ = load_bytes(&bytes, Path::new("fuzz"), &options(lenient));
    }

    #[test]
    fn fuzz_arbitrary_lines(lines in proptest::collection::vec("[ #:0-9a-zA-Z.,/%+-]{0,80}", 0..40), lenient: bool) {
        import_all(&lines.join("\n"), lenient);
    }

    #[test]
    fn fuzz_damaged_nccl_tests_output(which in 0usize..4, edits in edits(), lenient: bool) {
        let fixture = [STDOUT, OLD, SRUN, ITER][which];
        let bytes = damage(fixture, &edits);
        import_all(&String::from_utf8_lossy(&bytes), lenient);
    }

    #[test]
    fn fuzz_damaged_collbench_stdout(edits in edits(), lenient: bool) {
        let bytes = damage(COLLBENCH, &edits);
        import_all(&String::from_utf8_lossy(&bytes), lenient);
    }

    #[test]
    fn fuzz_damaged_nccl_tests_json(edits in edits(), lenient: bool) {
        let bytes = damage(JSON, &edits);
        import_all(&String::from_utf8_lossy(&bytes), lenient);
    }

    #[test]
    fn fuzz_damaged_course_csv(edits in edits(), lenient: bool) {
        let bytes = damage(CSV, &edits);
        import_all(&String::from_utf8_lossy(&bytes), lenient);
    }
}

#[test]
fn lenient_import_survives_any_single_line_damage() {
    // Every line of the fixture replaced by junk in turn: strict mode names
    // the line, lenient mode skips exactly it.
    let lines: Vec<&str> = STDOUT.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        if !line.trim_start().starts_with(|c: char| c.is_ascii_digit()) {
            continue;
        }
        let mut damaged = lines.clone();
        damaged[i] = "12 bytes of junk";
        let text = damaged.join("\n");
        let err = stdout::parse(&text, Path::new("f.log"), &options(false)).unwrap_err();
        assert!(
            err.to_string().contains(&format!("f.log:{}:", i + 1)),
            "{err}"
        );
        let loaded = stdout::parse(&text, Path::new("f.log"), &options(true)).unwrap();
        assert_eq!(loaded.skipped_lines, 1);
    }
}
