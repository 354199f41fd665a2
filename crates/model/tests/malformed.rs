//! Every malformed input: a one-line error naming the file, the line and the
//! value, never a panic.
use std::path::Path;

use model::{course, matching, read_profile_csv, MissingTime, TimeStat};

use crate::util::{data, write};

/// Every malformed file gives one line naming the file, the line and the
/// offending value.
#[test]
fn malformed_inputs_give_one_line_errors_naming_file_line_and_value() {
    type Reader = fn(&str) -> Result<(), String>;
    let profile: Reader = |p| {
        read_profile_csv(Path::new(p), 4)
            .map(drop)
            .map_err(|e| e.to_string())
    };
    let sizes: Reader = |p| {
        course::read_sizes(Path::new(p))
            .map(drop)
            .map_err(|e| e.to_string())
    };
    let times: Reader = |p| {
        course::read_times(Path::new(p), TimeStat::Mean)
            .map(drop)
            .map_err(|e| e.to_string())
    };
    let measured: Reader = |p| {
        model::ddp::measured::read_measured(Path::new(p))
            .map(drop)
            .map_err(|e| e.to_string())
    };
    let header = "name,params,grad_time_s\n";
    let cases: &[(Reader, &str, String, &str)] = &[
        (
            profile,
            "p1.csv",
            format!("{header}a,12x,0.1\n"),
            ":2: params \"12x\"",
        ),
        (
            profile,
            "p2.csv",
            format!("{header}a,1,-0.1\n"),
            ":2: grad_time_s \"-0.1\"",
        ),
        (
            profile,
            "p3.csv",
            format!("{header}a,1,nan\n"),
            ":2: grad_time_s \"nan\"",
        ),
        (
            profile,
            "p4.csv",
            format!("#c\n{header}a,1\n"),
            ":3: 2 fields where the header has 3",
        ),
        (
            profile,
            "p5.csv",
            "name,grad_time_s\na,1\n".into(),
            ":1: no column \"params\"",
        ),
        (profile, "p6.csv", String::new(), ": empty file"),
        (
            profile,
            "p7.csv",
            header.into(),
            ": a header but no data rows",
        ),
        (
            profile,
            "p8.csv",
            format!("{header}a,0,0.1\n"),
            ": every layer has zero parameters",
        ),
        (
            profile,
            "p9.csv",
            "name,params,grad_time_s,dtype_bytes\na,1,0.1,0\n".into(),
            ":2: dtype_bytes \"0\"",
        ),
        (
            profile,
            "p10.csv",
            format!("{header},1,0.1\n"),
            ":2: empty layer name",
        ),
        (
            profile,
            "p11.csv",
            format!("{header}\"a,1,0.1\n"),
            ":2: unterminated quoted field",
        ),
        (
            profile,
            "p12.csv",
            format!("{header}a,99999999999999999999,0.1\n"),
            ":2: params \"99999999999999999999\"",
        ),
        (
            profile,
            "p13.csv",
            format!("{header}a,18446744073709551615,0.1\n"),
            ":2: 18446744073709551615 parameters of 4 bytes overflow",
        ),
        (
            profile,
            "p14.csv",
            format!("{header}a,2305843009213693952,0.1\nb,2305843009213693952,0.1\n"),
            ":3: \"b\": the gradient bytes of the layers up to this one add up to more than 2^64",
        ),
        (
            profile,
            "p15.csv",
            format!("{header}a,1,0.1\nb,1,1e308\n"),
            ":3: grad_time_s \"1e308\" is not a number of seconds from 0 to 1e6",
        ),
        (
            sizes,
            "s1.csv",
            ",Name,Params\n0,Block 0,abc\n".into(),
            ":2: No. Params \"abc\"",
        ),
        (
            sizes,
            "s2.csv",
            ",Name\n0,Block 0\n".into(),
            ":1: no column \"No. Params\"",
        ),
        (
            times,
            "t1.csv",
            "Name,min,max,mean,std,median\nblock_0 grad,1,1,x,1,1\n".into(),
            ":2: \"block_0 grad\": mean \"x\"",
        ),
        (
            times,
            "t2.csv",
            "Name,min,max\nblock_0 grad,1,1\n".into(),
            ":1: no column \"mean\"",
        ),
        (
            times,
            "t3.csv",
            "Name,min,max,mean,std,median\nforward,1,1,1,0,1\n".into(),
            ": no `<layer> grad` rows",
        ),
        (
            times,
            "t4.csv",
            "Name,min,max,mean,std,median\nb0 grad,1,1,1,0,1\nB_0 grad,1,1,1,0,1\n".into(),
            ":3: \"B_0 grad\" names the same layer as \"b0 grad\" on line 2",
        ),
        (
            measured,
            "m1.csv",
            "bucket_bytes,time_s\n1024,0\n".into(),
            ":2: time_s \"0\" is not positive",
        ),
        (
            measured,
            "m7.csv",
            "bucket_bytes,time_s\n1024,1e308\n".into(),
            ":2: time_s \"1e308\" is not a number of seconds from 0 to 1e6",
        ),
        (
            times,
            "t5.csv",
            "Name,min,max,mean,std,median\nblock_0 grad,1,1,1e308,1,1\n".into(),
            ":2: \"block_0 grad\": mean \"1e308\"",
        ),
        (
            measured,
            "m2.csv",
            "bucket_bytes,time_s\nlots,1\n".into(),
            ":2: bucket_bytes \"lots\"",
        ),
        (
            measured,
            "m3.csv",
            "bucket_bytes\n1\n".into(),
            ":1: no column \"time_s\"",
        ),
        (
            measured,
            "m4.csv",
            "bucket_bytes,time_s,buckets\n1,1,-2\n".into(),
            ":2: buckets \"-2\"",
        ),
        (
            measured,
            "m5.csv",
            "bucket_bytes,time_s,time_sd_s,iterations\n1,1,0.1,0\n".into(),
            ":2: time_sd_s 0.1 with iterations 0",
        ),
        (
            measured,
            "m6.csv",
            "bucket_bytes,time_s,time_sd_s,iterations\n1,1,x,4\n".into(),
            ":2: time_sd_s \"x\"",
        ),
    ];
    for (reader, name, text, want) in cases {
        let path = write("malformed", name, text);
        let result = if name.starts_with('t') && want.contains("names the same layer") {
            // Duplicates are found when joining.
            let sizes = course::read_sizes(Path::new(&data("course-sizes.csv"))).unwrap();
            let t = course::read_times(Path::new(&path), TimeStat::Mean).unwrap();
            matching::join(
                &sizes,
                &t,
                &[],
                MissingTime::Zero,
                4,
                Path::new("s"),
                Path::new(&path),
            )
            .map(drop)
            .map_err(|e| e.to_string())
        } else {
            reader(&path)
        };
        let err = result.expect_err(name);
        assert!(err.starts_with(&path), "{name}: {err}");
        assert!(err.contains(want), "{name}: {err:?} lacks {want:?}");
        assert!(!err.contains('\n'), "{name}: {err:?}");
    }
    let missing = profile("no/such/file.csv").unwrap_err();
    assert!(missing.starts_with("no/such/file.csv: "), "{missing}");
}

/// A profile header missing a required column, holding one no profile has
/// (a misspelt optional column would be ignored unseen), holding one twice
/// (the second would be ignored unseen), or that is no header at all (a
/// data row first) lists every column accepted, in one line.
#[test]
fn a_bad_profile_header_lists_the_columns_accepted() {
    let accepted = "accepted columns: name, params, grad_time_s (required); dtype_bytes, \
        fwd_time_s, activation_bytes, output_bytes, microbatch, bwd_transient_bytes, \
        param_tensors, tp, tp_allreduces (optional)";
    for (name, text, problem) in [
        (
            "h1.csv",
            "# profile\nname,params,grad_time\na,1,0.1\n",
            "no column \"grad_time_s\" in the header \"name,params,grad_time\"",
        ),
        (
            "h2.csv",
            "name,params,grad_time_s,fwd_time\na,1,0.1,0.2\n",
            "unknown column \"fwd_time\" in the header \"name,params,grad_time_s,fwd_time\"",
        ),
        (
            "h3.csv",
            "emb,10,0.1\nhead,5,0.2\n",
            "no column \"name\" in the header \"emb,10,0.1\"",
        ),
        (
            "h5.csv",
            "name,params,grad_time_s,microbatch,MICROBATCH\na,1,0.1,4,8\n",
            "column \"MICROBATCH\" twice (fields 4 and 5) in the header \"name,params,grad_time_s,microbatch,MICROBATCH\"",
        ),
    ] {
        let path = write("malformed", name, text);
        let err = read_profile_csv(Path::new(&path), 4)
            .unwrap_err()
            .to_string();
        let line = if name == "h1.csv" { 2 } else { 1 };
        assert_eq!(err, format!("{path}:{line}: {problem}; {accepted}"));
    }
    // However long the header, the list of columns stays whole.
    let long = format!("name,params,grad_time_s,{}\n", "x".repeat(5000));
    let path = write("malformed", "h4.csv", &long);
    let err = read_profile_csv(Path::new(&path), 4)
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with(&format!("{path}:1: unknown column \"xxx"))
            && err.ends_with(accepted)
            && err.len() < path.len() + 330,
        "{err}"
    );
}

/// Sizes that add up past 2^64 bytes name the sizes row where they do (the
/// sum once wrapped to zero: "every layer has zero parameters").
#[test]
fn course_sizes_that_overflow_name_the_sizes_row() {
    let sizes = write(
        "malformed",
        "s3.csv",
        ",Name,No. Params\n0,a,2305843009213693952\n1,b,2305843009213693952\n",
    );
    let times = write("malformed", "t6.csv", "Name,mean\na grad,0.1\nb grad,0.1\n");
    let s = course::read_sizes(Path::new(&sizes)).unwrap();
    let t = course::read_times(Path::new(&times), TimeStat::Mean).unwrap();
    let err = matching::join(
        &s,
        &t,
        &[],
        MissingTime::Error,
        4,
        Path::new(&sizes),
        Path::new(&times),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.starts_with(&format!("{sizes}:3: \"b\": the gradient bytes")),
        "{err}"
    );
}

/// What is not a regular file is refused before it is read (a FIFO would
/// block, a device never end), and a hostile one-line file gives a short
/// error, not the line.
#[test]
fn devices_folders_and_huge_lines_are_refused_in_a_short_line() {
    let read = |p: &str| read_profile_csv(Path::new(p), 4).unwrap_err().to_string();
    assert_eq!(
        read("/dev/zero"),
        "/dev/zero: is a character device, not a regular file (inputs are regular files)"
    );
    let folder = data("");
    assert!(read(&folder).ends_with("is a folder, not a regular file (inputs are regular files)"));
    let long = write("malformed", "one-long-line.csv", &"x".repeat(1_000_000));
    let err = read(&long);
    assert!(err.len() < 500, "{} bytes", err.len());
    assert!(
        err.contains(&format!("in the header \"{}…\";", "x".repeat(47))),
        "{err}"
    );
    let binary = write("malformed", "binary.csv", "");
    std::fs::write(&binary, [b'n', 0xff, 0xfe, b'\n']).unwrap(); // not UTF-8
    assert_eq!(
        read(&binary),
        format!("{binary}: byte 1 is not UTF-8 text (accepted: a CSV table)")
    );
}
