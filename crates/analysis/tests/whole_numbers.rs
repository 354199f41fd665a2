//! Every whole-number flag of `collbench-analyze` refuses a negative number,
//! a non-number and a number out of its range alike: one line naming the
//! flag and the value, and the whole numbers it accepts.
use crate::util::run;

/// `argv` fails in one line naming `flag` and `value`, saying `accepted`.
fn refused(argv: &[&str], flag: &str, value: &str, accepted: &str) {
    let line = run(argv).fails().to_string();
    assert_eq!(
        line,
        format!(
            "error: invalid value '{value}' for '{flag}': expected a whole number {accepted} (see --help)"
        ),
        "{argv:?}"
    );
}

const U32: &str = "from 1 to 4294967295";

#[test]
fn a_non_number_is_refused_with_the_range_accepted() {
    refused(
        &[
            "ddp",
            "--profile",
            "p",
            "--comm",
            "c",
            "--world-size",
            "abc",
        ],
        "--world-size <N>",
        "abc",
        U32,
    );
    refused(
        &["fsdp", "--profile", "p", "--dtype-bytes", "4.5"],
        "--dtype-bytes <BYTES>",
        "4.5",
        "from 1 to 16",
    );
}

#[test]
fn a_negative_number_is_refused_as_any_other_bad_number() {
    refused(
        &[
            "pipeline",
            "--profile",
            "p",
            "--microbatches",
            "4",
            "--stages",
            "-1",
        ],
        "--stages <P>",
        "-1",
        "from 1 to 1024",
    );
    refused(
        &["table", "x.json", "--world-size", "-4"],
        "--world-size <N>",
        "-4",
        U32,
    );
    // A count that may also be a word says so beside the range.
    refused(
        &["fsdp", "--profile", "p", "--limit-all-gathers", "-2"],
        "--limit-all-gathers <N|none>",
        "-2",
        "from 1 to 4294967295, or none",
    );
}

#[test]
fn zero_and_numbers_past_the_bound_are_refused_with_the_bound() {
    refused(
        &["fsdp", "--profile", "p", "--unit-layers", "2,0"],
        "--unit-layers <N>",
        "0",
        "of 1 or more",
    );
    refused(
        &[
            "pipeline",
            "--profile",
            "p",
            "--stages",
            "2",
            "--microbatches",
            "4,70000",
        ],
        "--microbatches <M>",
        "70000",
        "from 1 to 65536",
    );
    refused(
        &[
            "predict",
            "x.json",
            "--collective",
            "all_reduce",
            "--world-size",
            "4294967296",
        ],
        "--world-size <N>",
        "4294967296",
        U32,
    );
    refused(
        &["zero", "--profile", "p", "--state-dtype-bytes", "17"],
        "--state-dtype-bytes <BYTES>",
        "17",
        "from 1 to 16",
    );
}
