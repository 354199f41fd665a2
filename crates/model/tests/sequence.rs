//! A profile measured at one sequence length scaled to another
//! (`model::sequence`): transformer blocks by their FLOP ratio (linear
//! ∝ s, attention ∝ s²), other rows and bytes ∝ s, parameters kept, a
//! profile at the target untouched bit for bit, the warnings, and the
//! headers that give no length or no hidden size; then `plan` and
//! `pipeline` reading such a profile.
use std::path::Path;

use model::estimate::{profile_csv, shape_of, EstimateAt};
use model::pipeline::stages::MeasuredProfile;
use model::pipeline::{analyze as pipeline_analyze, PipelineInputs};
use model::plan::{analyze, Dims, GroupCurve, GroupCurves};
use model::sequence::{scaling, Scaling, SequenceTarget};
use schema::Collective;

use crate::util::write;

/// Hidden 64; each block's parameters 4h² + 2·h·f with f = 128 (32768 in
/// all, `params` one rank's shard at `tp`): per token 2h + f = 256, so
/// from s 128 to 512 the blocks' FLOPs grow 512·768 / (128·384) = 8.
const HIDDEN: u64 = 64;
const BLOCK_PARAMS: u64 = 4 * 64 * 64 + 2 * 64 * 128;

/// The profile's CSV: `header` lines, an embedding, two blocks (2
/// tensor-parallel all-reduces each) and a head, at micro-batch sizes 1
/// and 2.
fn profile_text(header: &str, tp: u64) -> String {
    let mut text = String::from(header);
    text += "name,params,grad_time_s,fwd_time_s,activation_bytes,output_bytes,microbatch,bwd_transient_bytes,tp,tp_allreduces\n";
    for b in [1u64, 2] {
        let t = b as f64;
        text += &format!(
            "embedding,{},0.0005,0.00025,1024,16384,{b},64,{tp},1\n",
            8192 / tp
        );
        for i in 0..2 {
            text += &format!(
                "block_{i},{},{},{},{},16384,{b},128,{tp},2\n",
                BLOCK_PARAMS / tp,
                0.002 * t,
                0.001 * t,
                300_000 * b
            );
        }
        text += &format!("head,{},0.001,0.0005,4096,2048,{b},,{tp},0\n", 8192 / tp);
    }
    text
}

const HEADER_128: &str = "# model: tiny (gpt2; layers 2, hidden 64, heads 4, vocab 128, tied head), 90000 parameters\n# input: batch 2 x sequence 128, fp32, random tokens (seed 0)\n";

fn read(path: &str) -> MeasuredProfile {
    MeasuredProfile::read(Path::new(path), 4).unwrap()
}

fn target(seq: u64, hidden: Option<u64>) -> SequenceTarget {
    SequenceTarget { seq, hidden }
}

#[test]
fn blocks_scale_by_their_flop_ratio_and_other_rows_by_the_length() {
    for tp in [1, 2] {
        let path = write(
            "sequence_ratio",
            &format!("tp{tp}.csv"),
            &profile_text(HEADER_128, tp),
        );
        let measured = read(&path);
        let mut scaled = measured.clone();
        // The hidden size from the header.
        let warning = scaled
            .scale_to_sequence(target(512, None))
            .unwrap()
            .unwrap();
        let Scaling::Scaled(scale) = scaling(&measured.at[0].1, target(512, None), &path).unwrap()
        else {
            panic!("not scaled");
        };
        assert_eq!(scale.block, 8.0);
        assert_eq!(scale.other, 4.0);
        assert_eq!(scale.ffn, 128.0);
        assert!(!scale.ffn_assumed && !scale.every_row_a_block);
        for ((_, before), (_, after)) in measured.at.iter().zip(&scaled.at) {
            for (b, a) in before.layers.iter().zip(&after.layers) {
                let time = if b.name.starts_with("block") {
                    8.0
                } else {
                    4.0
                };
                assert_eq!(a.grad_time_s, b.grad_time_s * time, "{}", b.name);
                assert_eq!(a.fwd_time_s, b.fwd_time_s.map(|t| t * time), "{}", b.name);
                assert_eq!(a.activation_bytes, b.activation_bytes.map(|x| 4 * x));
                assert_eq!(a.output_bytes, b.output_bytes.map(|x| 4 * x));
                assert_eq!(a.bwd_transient_bytes, b.bwd_transient_bytes.map(|x| 4 * x));
                assert_eq!((a.params, a.grad_bytes), (b.params, b.grad_bytes));
            }
        }
        // Hand-computed: block_0's forward at micro-batch 2 is 2 ms × 8.
        let block = &scaled.at[1].1.layers[1];
        assert!((block.fwd_time_s.unwrap() - 0.016).abs() < 1e-15);
        for needle in [
            path.as_str(),
            "measured at sequence 128, scaled to --seq 512",
            "×8.0000",
            "other rows ×4.0000",
            "hidden 64 from its header",
            "FFN 128 from its blocks' parameters",
            "GEMM efficiency at other shapes is not modelled",
        ] {
            assert!(warning.contains(needle), "{needle:?} in {warning}");
        }
    }
}

#[test]
fn hidden_from_the_flag_wins_and_small_blocks_take_an_ffn_of_4h() {
    let path = write("sequence_flag", "p.csv", &profile_text(HEADER_128, 1));
    let measured = read(&path);
    // --hidden 32: the blocks' 32768 parameters are 4·32² + 2·32·f, so f
    // = 448 and 2h + f = 512: 4 × (512 + 512) / (512 + 128) = 6.4.
    let Scaling::Scaled(scale) = scaling(&measured.at[0].1, target(512, Some(32)), &path).unwrap()
    else {
        panic!("not scaled");
    };
    assert_eq!(scale.ffn, 448.0);
    assert_eq!(scale.block, 4.0 * 1024.0 / 640.0);
    let mut scaled = measured.clone();
    let warning = scaled
        .scale_to_sequence(target(512, Some(32)))
        .unwrap()
        .unwrap();
    assert!(warning.contains("hidden 32 from --hidden"), "{warning}");
    // --hidden 128: 4h² = 65536 exceeds the blocks' parameters, so the FFN
    // is taken as 4h = 512: 4 × (768 + 512) / (768 + 128).
    let Scaling::Scaled(scale) = scaling(&measured.at[0].1, target(512, Some(128)), &path).unwrap()
    else {
        panic!("not scaled");
    };
    assert!(scale.ffn_assumed);
    assert_eq!(scale.block, 4.0 * 1280.0 / 896.0);
    let warning = measured
        .clone()
        .scale_to_sequence(target(512, Some(128)))
        .unwrap()
        .unwrap();
    assert!(warning.contains("FFN taken as 4h = 512"), "{warning}");
}

#[test]
fn a_profile_at_the_target_length_is_untouched_bit_for_bit() {
    let path = write("sequence_same", "p.csv", &profile_text(HEADER_128, 1));
    let measured = read(&path);
    let mut same = measured.clone();
    assert_eq!(same.scale_to_sequence(target(128, None)).unwrap(), None);
    assert_eq!(same.at, measured.at);
    for b in [1, 2, 3] {
        assert_eq!(same.costs_at(b), measured.costs_at(b));
    }
}

#[test]
fn a_header_without_a_length_keeps_the_rows_with_a_warning() {
    for (name, header) in [
        ("none.csv", "# model: tiny (gpt2; layers 2, hidden 64)\n"),
        ("nothing.csv", ""),
    ] {
        let path = write("sequence_unknown", name, &profile_text(header, 1));
        let measured = read(&path);
        let mut kept = measured.clone();
        let warning = kept
            .scale_to_sequence(target(512, Some(64)))
            .unwrap()
            .unwrap();
        assert_eq!(kept.at, measured.at, "{name}");
        assert!(
            warning.contains("header gives no sequence length")
                && warning.contains("taken as measured at --seq 512")
                && warning.contains(&path),
            "{warning}"
        );
    }
}

/// A header that names a sequence length --seq cannot take (0, past 2^24,
/// not a number) says the rows were measured at some length nobody can
/// read: scaling from it, or taking it as --seq, would be a guess.
#[test]
fn a_header_naming_a_length_that_is_none_is_one_line_naming_seq_the_file_and_the_value() {
    for (name, header, value) in [
        ("zero.csv", "# input: batch 2 x sequence 0, fp32\n", "\"0\""),
        (
            "bad.csv",
            "# input: batch 2 x sequence many, fp32\n# model: x (hidden 64)\n",
            "\"many\"",
        ),
        ("glued.csv", "# input: batch 2 x sequence 12abc, fp32\n", "\"12abc\""),
        (
            "huge.csv",
            "# input: batch 2 x sequence 99999999999, fp32\n",
            "\"99999999999\"",
        ),
        (
            "past.csv",
            "# estimate: not a measurement: c.json (2 layers, hidden 64, 4 heads), sequence 16777217, micro-batch 1\n",
            "\"16777217\"",
        ),
        (
            "train.csv",
            "# pipeline_train.py profile: 2 layers, width 64, seq 0, torch 2.5, 2 ranks\n",
            "\"0\"",
        ),
    ] {
        let path = write("sequence_none", name, &profile_text(header, 1));
        let err = read(&path)
            .scale_to_sequence(target(512, Some(64)))
            .unwrap_err();
        assert!(!err.contains('\n'), "{err}");
        for needle in [
            "--seq 512: ",
            path.as_str(),
            &format!("sequence {value}"),
            "not a length from 1 to 16777216",
        ] {
            assert!(err.contains(needle), "{needle:?} in {err}");
        }
    }
    // A second line naming a good length is read.
    let path = write(
        "sequence_none",
        "second.csv",
        &profile_text(
            "# input: batch 2 x sequence 0, fp32\n# estimate: c.json (hidden 64), sequence 128, micro-batch 1\n",
            1,
        ),
    );
    assert_eq!(read(&path).at[0].1.header.sequence, Some(128));
    assert!(read(&path).scale_to_sequence(target(512, Some(64))).is_ok());
}

/// scripts/pipeline_train.py writes `# pipeline_train.py profile: L
/// layers, width H, seq S, …`: the width is the hidden size.
#[test]
fn pipeline_train_py_s_header_gives_its_length_and_width() {
    let path = write(
        "sequence_train",
        "p.csv",
        &profile_text(
            "# pipeline_train.py profile: 2 layers, width 64, seq 128, torch 2.5.1+cpu, 2 ranks\n",
            1,
        ),
    );
    let measured = read(&path);
    let header = &measured.at[0].1.header;
    assert_eq!((header.sequence, header.hidden), (Some(128), Some(64)));
    let Scaling::Scaled(scale) = scaling(&measured.at[0].1, target(512, None), &path).unwrap()
    else {
        panic!("not scaled");
    };
    assert_eq!((scale.from, scale.hidden, scale.block), (128, 64, 8.0));
}

#[test]
fn bytes_scaled_past_2_64_are_one_line_naming_the_row_and_column() {
    // output_bytes 2^62 from 128 to 512 (× 4) is 2^64.
    let text = profile_text(HEADER_128, 1).replace(",16384,", &format!(",{},", 1u64 << 62));
    let path = write("sequence_bytes", "p.csv", &text);
    let err = read(&path)
        .scale_to_sequence(target(512, None))
        .unwrap_err();
    assert!(!err.contains('\n'), "{err}");
    for needle in [
        "--seq 512: ",
        path.as_str(),
        "\"embedding\"'s output_bytes 4611686018427387904 × 4.0000",
        "2^64 bytes or more",
    ] {
        assert!(err.contains(needle), "{needle:?} in {err}");
    }
    // Just under 2^64 still fits.
    let text = profile_text(HEADER_128, 1).replace(",16384,", &format!(",{},", 1u64 << 61));
    let path = write("sequence_bytes", "fits.csv", &text);
    let mut fits = read(&path);
    fits.scale_to_sequence(target(512, None)).unwrap();
    assert_eq!(fits.at[0].1.layers[0].output_bytes, Some(1u64 << 63));
}

#[test]
fn factors_below_a_hundredth_keep_four_significant_digits() {
    // From 128 to 1: blocks × 1·257 / (128·384) = 0.005229, other rows
    // × 1/128 = 0.0078125; at 4 decimals both would read 0.0052 and 0.0078.
    let path = write("sequence_small", "p.csv", &profile_text(HEADER_128, 1));
    let warning = read(&path)
        .scale_to_sequence(target(1, None))
        .unwrap()
        .unwrap();
    for needle in ["blocks ×5.229e-3", "other rows ×7.812e-3"] {
        assert!(warning.contains(needle), "{needle:?} in {warning}");
    }
}

#[test]
fn no_hidden_size_anywhere_is_one_line_naming_hidden() {
    let path = write(
        "sequence_no_hidden",
        "p.csv",
        &profile_text("# input: batch 2 x sequence 128, fp32\n", 1),
    );
    let err = read(&path)
        .scale_to_sequence(target(512, None))
        .unwrap_err();
    assert!(!err.contains('\n'), "{err}");
    assert!(
        err.starts_with("--seq 512: ") && err.contains("give --hidden H") && err.contains(&path),
        "{err}"
    );
    // At its own length nothing needs the hidden size.
    assert_eq!(
        read(&path).scale_to_sequence(target(128, None)).unwrap(),
        None
    );
}

#[test]
fn an_estimate_scaled_from_128_to_512_is_the_estimate_at_512() {
    let shape = shape_of(&serde_json::json!({
        "hidden_size": 768, "num_hidden_layers": 4, "num_attention_heads": 12,
        "intermediate_size": 3072, "vocab_size": 30522
    }))
    .unwrap();
    let at = |seq| EstimateAt {
        seq,
        microbatch: 2,
        tp: 2,
        gpu_tflops: 100.0,
        efficiency: 0.5,
    };
    let origin = "config.json (4 layers, hidden 768, 12 heads, MLP 3072, vocabulary 30522)";
    let short = write(
        "sequence_estimate",
        "s128.csv",
        &profile_csv(shape, at(128), origin).unwrap(),
    );
    let long = write(
        "sequence_estimate",
        "s512.csv",
        &profile_csv(shape, at(512), origin).unwrap(),
    );
    let mut scaled = read(&short);
    assert_eq!(scaled.at[0].1.header.sequence, Some(128));
    assert_eq!(scaled.at[0].1.header.hidden, Some(768));
    scaled
        .scale_to_sequence(target(512, None))
        .unwrap()
        .unwrap();
    let (got, _) = scaled.costs_at(2);
    let (want, _) = read(&long).costs_at(2);
    for (g, w) in got.iter().zip(&want) {
        // The blocks' parameters hold their biases and norms too: the
        // FFN found from them is a few parts in 10^4 off.
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-3 * b;
        assert!(
            close(g.fwd_s, w.fwd_s),
            "{} {} {}",
            g.name,
            g.fwd_s,
            w.fwd_s
        );
        assert!(close(g.bwd_s, w.bwd_s), "{}", g.name);
        assert_eq!(g.output_bytes, w.output_bytes, "{}", g.name);
        assert_eq!(g.params, w.params);
    }
}

/// Free collectives: a plan at tp = pp = dp = 1 needs none.
struct NoCurves;

impl GroupCurves for NoCurves {
    fn curve(
        &self,
        collective: Collective,
        group: model::plan::Group,
    ) -> Result<GroupCurve, String> {
        Err(format!("no {} curve over {group}", collective.as_str()))
    }
}

#[test]
fn plan_and_pipeline_read_the_profile_at_the_job_s_length() {
    let path = write("sequence_models", "p.csv", &profile_text(HEADER_128, 1));
    let mut o = crate::plan::options(vec![path.clone()], 1, 1, 2);
    let dims = |seq| {
        Some(Dims {
            seq,
            hidden: HIDDEN,
            heads: 4,
        })
    };
    o.dims = dims(128);
    let (at_128, _) = analyze(&o, &NoCurves).unwrap();
    o.dims = dims(512);
    let (at_512, _) = analyze(&o, &NoCurves).unwrap();
    // One micro-batch of 2: the rows' forward and backward, in ms.
    let step = |block: f64, other: f64| {
        (2.0 * (0.002 + 0.004) * block + (0.00025 + 0.0005 + 0.0005 + 0.001) * other) * 1e3
    };
    let close = |a: f64, b: f64| (a - b).abs() < 1e-9 * b;
    let got = at_128.best.as_ref().unwrap().step_ms;
    assert!(close(got, step(1.0, 1.0)), "{got}");
    let got = at_512.best.as_ref().unwrap().step_ms;
    assert!(close(got, step(8.0, 4.0)), "{got}");
    assert!(at_128
        .warnings
        .iter()
        .all(|w| !w.contains("scaled to --seq")));
    let said: Vec<_> = at_512
        .warnings
        .iter()
        .filter(|w| w.contains("measured at sequence 128, scaled to --seq 512"))
        .collect();
    assert_eq!(said.len(), 1, "{:?}", at_512.warnings);

    let mut p = crate::pipeline::options(&path);
    p.microbatch_size = Some(2);
    p.global_batch = None;
    p.microbatches = vec![1];
    p.stages = 1;
    let (as_measured, _) = pipeline_analyze(&p, &PipelineInputs::default(), Vec::new()).unwrap();
    p.sequence = Some(target(512, None));
    let (scaled, _) = pipeline_analyze(&p, &PipelineInputs::default(), Vec::new()).unwrap();
    let step_of = |a: &model::pipeline::PipelineAnalysis| a.runs[0].step_ms;
    assert!(
        close(step_of(&as_measured), step(1.0, 1.0)),
        "{}",
        step_of(&as_measured)
    );
    assert!(
        close(step_of(&scaled), step(8.0, 4.0)),
        "{}",
        step_of(&scaled)
    );
    assert!(scaled
        .warnings
        .iter()
        .any(|w| w.contains("scaled to --seq 512")));
}

#[test]
fn without_tp_allreduces_every_row_is_a_block_as_plan_takes_them_and_the_warning_says_so() {
    let path = write(
        "sequence_no_column",
        "p.csv",
        &format!(
            "{HEADER_128}name,params,grad_time_s,fwd_time_s,output_bytes\n\
             embedding,8192,0.0005,0.00025,16384\n\
             block_0,{BLOCK_PARAMS},0.004,0.002,16384\n\
             block_1,{BLOCK_PARAMS},0.004,0.002,16384\n\
             head,8192,0.001,0.0005,2048\n"
        ),
    );
    let measured = read(&path);
    let mut scaled = measured.clone();
    let warning = scaled
        .scale_to_sequence(target(512, None))
        .unwrap()
        .unwrap();
    // The median row's parameters are a block's: f = 128 as before.
    for (b, a) in measured.at[0].1.layers.iter().zip(&scaled.at[0].1.layers) {
        assert_eq!(a.grad_time_s, b.grad_time_s * 8.0, "{}", b.name);
        assert_eq!(a.output_bytes, b.output_bytes.map(|x| 4 * x));
    }
    assert!(
        warning.contains("every row taken as a transformer block")
            && warning.contains("give the tp_allreduces column"),
        "{warning}"
    );
}

/// `--hidden` other than the header's hidden size is used, and said: the
/// profile may be of another model.
#[test]
fn hidden_other_than_the_header_s_is_said_beside_the_numbers() {
    let path = write("sequence_other", "p.csv", &profile_text(HEADER_128, 1));
    // At the profile's own length: no scaling, the mismatch alone.
    let warning = read(&path)
        .scale_to_sequence(target(128, Some(32)))
        .unwrap()
        .unwrap();
    assert_eq!(
        warning,
        format!("{path}: its header gives hidden 64, not --hidden 32: the numbers take 32 (is the profile of this model?)")
    );
    // Scaled: both, in one warning.
    let warning = read(&path)
        .scale_to_sequence(target(512, Some(32)))
        .unwrap()
        .unwrap();
    assert!(
        warning.contains("scaled to --seq 512")
            && warning.contains("; and ")
            && warning.contains("header gives hidden 64, not --hidden 32"),
        "{warning}"
    );
    // The same size, or none in the header: nothing more.
    assert_eq!(
        read(&path)
            .scale_to_sequence(target(128, Some(64)))
            .unwrap(),
        None
    );
}

/// A header's hidden size that is none (`hidden 0`) is named in the error
/// asking for --hidden, not said to be absent.
#[test]
fn a_header_s_hidden_size_that_is_none_is_named_when_hidden_is_needed() {
    for (name, header, said) in [
        (
            "zero.csv",
            "# model: m (gpt2; layers 2, hidden 0, heads 4)\n# input: batch 2 x sequence 128, fp32\n",
            "its header's hidden \"0\" is not a size from 1 to 16777216",
        ),
        (
            "train.csv",
            "# pipeline_train.py profile: 2 layers, width many, seq 128, torch 2.5, 2 ranks\n",
            "its header's hidden \"many\" is not a size from 1 to 16777216",
        ),
    ] {
        let path = write("sequence_hidden_none", name, &profile_text(header, 1));
        let err = read(&path)
            .scale_to_sequence(target(512, None))
            .unwrap_err();
        assert!(!err.contains('\n'), "{err}");
        assert!(
            err.starts_with("--seq 512: ") && err.contains("give --hidden H") && err.contains(said),
            "{err}"
        );
    }
}
