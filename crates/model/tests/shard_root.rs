//! FSDP's root unit (`--root-layers`): gathered before the first forward,
//! kept or resharded after forward, reduced after the whole backward; the
//! units around it never span its rows. Timelines by hand, call counts and
//! errors through `shard::analyze`.
use model::shard::schedule::{every_n_outside, outside_root, RootUnit};
use model::shard::{analyze, BackwardPrefetch, CommStreams, Strategy};

use schema::Collective;

use crate::shard::{
    config, curves, curves_of, gather_scatter_at_4, layers, options, profile, run, Constant,
};

fn root(rows: &[usize], reshards_after_forward: bool) -> RootUnit {
    RootUnit {
        rows: rows.to_vec(),
        reshards_after_forward,
    }
}

#[test]
fn units_are_cut_at_root_rows() {
    let r = root(&[0, 3, 5], false);
    assert_eq!(every_n_outside(6, 2, &r), [1..3, 4..5]);
    assert_eq!(every_n_outside(6, 1, &r), [1..2, 2..3, 4..5]);
    assert_eq!(outside_root(&[0..4, 4..6], &r), [1..3, 4..5]);
    // Every row in the root: no unit inside it.
    assert!(every_n_outside(2, 1, &root(&[0, 1], false)).is_empty());
    // No root: every_n as it was.
    assert_eq!(
        every_n_outside(5, 2, &RootUnit::default()),
        [0..2, 2..4, 4..5]
    );
}

/// emb, l1, l2, head (forward 1 s, backward 2 s, 1000 fp32 parameters
/// each) with emb and head in the root unit, 2 ranks, every call 0.5 s on
/// one communication stream, FULL_SHARD, `prefetch` in backward.
fn root_around_two_units(
    reshards_after_forward: bool,
    prefetch: BackwardPrefetch,
) -> model::shard::Prediction {
    let ls = layers(4, 1000, 4, 4, 1.0, 2.0);
    let cs = curves(2, || Box::new(Constant(0.5)));
    let mut c = config(Strategy::Full, 4, 2);
    c.root = root(&[0, 3], reshards_after_forward);
    c.units = every_n_outside(4, 1, &c.root);
    c.backward_prefetch = prefetch;
    run(&ls, &c, &cs, 8)
}

#[test]
fn the_root_is_gathered_first_and_reduced_last() {
    // Kept gathered: AG root 0–0.5, F emb 0.5–1.5, AG l1 1.5–2, F l1 2–3,
    // AG l2 3–3.5, F l2 3.5–4.5, F head 4.5–5.5 (the root still gathered).
    // Backward: AG l2' 5.5–6, B head 5.5–7.5, B l2 7.5–9.5, AG l1' (pre)
    // 7.5–8, RS l2 9.5–10, B l1 9.5–11.5, RS l1 11.5–12, B emb 11.5–13.5,
    // RS root 13.5–14.
    let kept = root_around_two_units(false, BackwardPrefetch::Pre);
    assert_eq!(kept.forward_ms, 5500.0);
    assert_eq!(kept.step_ms, 14000.0);
    assert_eq!(kept.units, 3, "two units and the root");
    let calls = |p: &model::shard::Prediction, name: &str| {
        p.collectives
            .iter()
            .find(|c| c.collective == name)
            .map_or(0, |c| c.calls)
    };
    assert_eq!(calls(&kept, "all_gather"), 5, "root once, each unit twice");
    assert_eq!(calls(&kept, "reduce_scatter"), 3);
    // The root's all-gather carries both its rows: 8000 of 24000 bytes.
    let gathered: u64 = kept
        .collectives
        .iter()
        .filter(|c| c.collective == "all_gather")
        .map(|c| c.bytes)
        .sum();
    assert_eq!(gathered, 8000 + 2 * (4000 + 4000));
    // Resharded after forward: AG root' 5.5–6 before AG l2' 6–6.5; B head
    // 6–8, B l2 8–10, AG l1' 8–8.5, RS l2 10–10.5, B l1 10–12, RS l1
    // 12–12.5, B emb 12–14, RS root 14–14.5.
    let resharded = root_around_two_units(true, BackwardPrefetch::Pre);
    assert_eq!(resharded.step_ms, 14500.0);
    assert_eq!(calls(&resharded, "all_gather"), 6);
    // Gathered buffers: the root (8000) stays while backward prefetches a
    // unit beside the current one (4000 each).
    assert_eq!(kept.memory.gathered_peak_bytes, 16000);
    assert_eq!(resharded.memory.gathered_peak_bytes, 16000);
    // Without prefetch one unit at a time, beside the root.
    let unprefetched = root_around_two_units(false, BackwardPrefetch::None);
    assert_eq!(unprefetched.memory.gathered_peak_bytes, 12000);
    // Each rank keeps half of each unit, the root's as one unit.
    assert_eq!(kept.memory.params_bytes, 4000 + 2000 + 2000);
}

#[test]
fn free_communication_leaves_the_compute_time_with_a_root() {
    let ls = layers(4, 1000, 4, 4, 1.0, 2.0);
    let cs = curves(2, || Box::new(Constant(0.0)));
    for reshards in [false, true] {
        let mut c = config(Strategy::Full, 4, 2);
        c.root = root(&[0, 3], reshards);
        c.units = every_n_outside(4, 1, &c.root);
        let p = run(&ls, &c, &cs, 8);
        assert_eq!(p.step_ms, 12000.0, "{p:?}");
        assert_eq!(p.exposed_comm_ms, 0.0);
    }
}

#[test]
fn analyze_takes_root_layers_by_name_and_refuses_unknown_ones() {
    let inputs = gather_scatter_at_4();
    let path = profile();
    let mut o = options(&path, vec![Strategy::Full]);
    o.comm_streams = CommStreams::Blocking;
    o.root_layers = vec!["head".into(), "emb".into()];
    let (a, timeline) = analyze(&o, &inputs).unwrap();
    assert_eq!(a.root_layers, ["emb", "head"], "registration order");
    assert!(!a.reshard_root);
    assert!(
        a.notes.iter().any(|n| n
            == "the root unit holds emb,head: gathered before the first forward, kept gathered from forward to the end of backward, reduced after the whole backward"),
        "{:?}",
        a.notes
    );
    let p = &a.configs[0];
    assert_eq!(p.units, 3);
    let calls: usize = p.collectives.iter().map(|c| c.calls).sum();
    assert_eq!(calls, 5 + 3);
    // Blocking: the root's gather opens the step, its reduction closes it.
    let comm: Vec<&str> = timeline
        .blocks
        .iter()
        .filter(|b| b.kind == "all_gather" || b.kind == "reduce_scatter")
        .map(|b| b.label.as_str())
        .collect();
    assert_eq!(comm.first(), Some(&"AG root"));
    assert_eq!(comm.last(), Some(&"RS root"));
    o.reshard_root = true;
    let (a, _) = analyze(&o, &inputs).unwrap();
    assert!(a.reshard_root);
    let calls: usize = a.configs[0].collectives.iter().map(|c| c.calls).sum();
    assert_eq!(calls, 6 + 3);

    o.root_layers = vec!["lm_head".into()];
    let err = analyze(&o, &inputs).unwrap_err().to_string();
    assert_eq!(
        err,
        "--root-layers: no profile row is named \"lm_head\" (rows: emb,block_0,block_1,head)"
    );
    o.root_layers = vec!["block_1".into()];
    o.unit_starts = vec!["block_1".into()];
    let err = analyze(&o, &inputs).unwrap_err().to_string();
    assert!(
        err.starts_with("--root-layers \"block_1\" is also in --unit-starts"),
        "{err}"
    );
    // Without a root, --reshard-root is said to change nothing.
    let mut o = options(&path, vec![Strategy::Full]);
    o.reshard_root = true;
    let (a, _) = analyze(&o, &inputs).unwrap();
    assert!(
        a.warnings
            .iter()
            .any(|w| w.starts_with("--reshard-root changes nothing")),
        "{:?}",
        a.warnings
    );
}

/// --reshard-root where a strategy never frees gathered parameters after
/// forward (SHARD_GRAD_OP) or gathers none (NO_SHARD) is said to change
/// nothing there, and NO_SHARD's root is not said to be gathered.
#[test]
fn reshard_root_is_said_to_change_nothing_in_grad_op_and_no_shard() {
    let inputs = curves_of(
        &[
            Collective::AllGather,
            Collective::ReduceScatter,
            Collective::AllReduce,
        ],
        |_| 4,
    );
    let path = profile();
    let mut o = options(
        &path,
        vec![Strategy::Full, Strategy::GradOp, Strategy::NoShard],
    );
    o.root_layers = vec!["emb".into(), "head".into()];
    o.reshard_root = true;
    let (a, _) = analyze(&o, &inputs).unwrap();
    assert!(
        a.warnings.iter().any(|w| w
            == "--reshard-root changes nothing in fsdp-grad-op, fsdp-no-shard: grad-op keeps parameters gathered from forward to the end of backward, no-shard never gathers them"),
        "{:?}",
        a.warnings
    );
    // The warning is true: grad-op gathers the root once either way.
    let gathers = |a: &model::shard::ShardAnalysis, strategy: &str| -> usize {
        a.configs
            .iter()
            .find(|p| p.strategy == strategy)
            .map(|p| {
                p.collectives
                    .iter()
                    .filter(|c| c.collective == "all_gather")
                    .map(|c| c.calls)
                    .sum()
            })
            .unwrap_or(0)
    };
    let resharded = gathers(&a, "fsdp-grad-op");
    o.reshard_root = false;
    let (kept, _) = analyze(&o, &inputs).unwrap();
    assert_eq!(gathers(&kept, "fsdp-grad-op"), resharded);
    assert_eq!(gathers(&kept, "fsdp-full") + 1, gathers(&a, "fsdp-full"));
    assert!(!kept
        .warnings
        .iter()
        .any(|w| w.starts_with("--reshard-root")));
    // Only NO_SHARD: the root is reduced as one, never gathered.
    let inputs = curves_of(&[Collective::AllReduce], |_| 4);
    let mut o = options(&path, vec![Strategy::NoShard]);
    o.root_layers = vec!["emb".into(), "head".into()];
    let (a, _) = analyze(&o, &inputs).unwrap();
    assert!(
        a.notes.iter().any(|n| n
            == "the root unit holds emb,head: reduced after the whole backward (no-shard gathers no parameters)"),
        "{:?}",
        a.notes
    );
}

#[test]
fn ambiguous_or_empty_roots_and_one_rank_groups_are_said() {
    let inputs = gather_scatter_at_4();
    let path = crate::util::write(
        "shard_root",
        "twice.csv",
        "name,params,grad_time_s,fwd_time_s\n\
         emb,1000,0.002,0.001\n\
         blk,2000,0.004,0.002\n\
         blk,2000,0.004,0.002\n\
         head,0,0.001,0.0005\n",
    );
    let mut o = options(&path, vec![Strategy::Full]);
    o.root_layers = vec!["blk".into()];
    let err = analyze(&o, &inputs).unwrap_err().to_string();
    assert!(
        err.starts_with("--root-layers: 2 profile rows are named \"blk\""),
        "{err}"
    );
    o.root_layers.clear();
    o.unit_starts = vec!["blk".into()];
    let err = analyze(&o, &inputs).unwrap_err().to_string();
    assert!(
        err.starts_with("--unit-starts: 2 profile rows are named \"blk\""),
        "{err}"
    );
    // A root of rows without parameters gathers nothing: none is made.
    let mut o = options(&path, vec![Strategy::Full]);
    o.root_layers = vec!["head".into()];
    let (a, _) = analyze(&o, &inputs).unwrap();
    assert!(a.root_layers.is_empty());
    assert_eq!(a.configs[0].units, 4, "every row a unit, as without a root");
    assert!(
        a.warnings
            .iter()
            .any(|w| w.starts_with("--root-layers head: these rows hold no parameters")),
        "{:?}",
        a.warnings
    );
    // fsdp without --root-layers says the root is not modelled.
    let (a, _) = analyze(&options(&path, vec![Strategy::Full]), &inputs).unwrap();
    assert!(
        a.notes.iter().any(|n| n.starts_with("no root unit:")),
        "{:?}",
        a.notes
    );
    // HYBRID_SHARD in groups of one rank shards nothing.
    let mut o = options(&path, vec![Strategy::Hybrid]);
    o.world_size = Some(4);
    o.hybrid_group = Some(1);
    let err = analyze(&o, &inputs).unwrap_err().to_string();
    assert!(
        err.starts_with("--hybrid-group 1: groups of one rank shard nothing"),
        "{err}"
    );
}

#[test]
fn rows_of_several_unit_sizes_say_their_size() {
    let inputs = gather_scatter_at_4();
    let path = profile();
    let mut o = options(&path, vec![Strategy::Full]);
    o.root_layers = vec!["emb".into(), "head".into()];
    o.unit_layers = vec![1, 2];
    let (a, _) = analyze(&o, &inputs).unwrap();
    let text = model::shard::render_text(&a);
    let header = text.lines().find(|l| l.starts_with("strategy")).unwrap();
    assert!(header.contains("units/layers"), "{text}");
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("fsdp-full"))
        .collect();
    // Two blocks as two units of one, or one of two, each beside the root.
    assert!(rows[0].contains(" 3/1 "), "{text}");
    assert!(rows[1].contains(" 2/2 "), "{text}");
    // One size: the count alone.
    o.unit_layers = vec![1];
    let (a, _) = analyze(&o, &inputs).unwrap();
    let text = model::shard::render_text(&a);
    assert!(!text.contains("units/layers"), "{text}");
}

#[test]
fn header_measurements_left_out_are_warned_with_the_flag_that_takes_them() {
    let inputs = gather_scatter_at_4();
    let path = crate::util::write(
        "shard_root",
        "measured-header.csv",
        "# gradient copy: 1000 bytes in 1e-06 s, 1 GB/s (every rank at once)\n\
         # sync wait: 0.002 s per blocking call (x)\n\
         name,params,grad_time_s,fwd_time_s\n\
         emb,1000,0.002,0.001\n\
         blk,2000,0.004,0.002\n",
    );
    let mut o = options(&path, vec![Strategy::Full]);
    o.comm_streams = CommStreams::Blocking;
    let (a, _) = analyze(&o, &inputs).unwrap();
    let warned =
        |a: &model::shard::ShardAnalysis, what: &str| a.warnings.iter().any(|w| w.contains(what));
    assert!(
        warned(
            &a,
            "the profile's header measured them at 1 GB/s: pass --copy-gbps 1"
        ),
        "{:?}",
        a.warnings
    );
    assert!(warned(&a, "pass --sync-wait-s 0.002"), "{:?}", a.warnings);
    // Given, nothing is said.
    o.copy_gbps = Some(1.0);
    o.sync_wait_s = Some(0.002);
    let (a, _) = analyze(&o, &inputs).unwrap();
    assert!(!warned(&a, "header measured"), "{:?}", a.warnings);
    // Collectives that do not block: the wait is a note on where it applies.
    let mut o = options(&path, vec![Strategy::Full]);
    o.copy_gbps = Some(1.0);
    let (a, _) = analyze(&o, &inputs).unwrap();
    assert!(
        a.notes
            .iter()
            .any(|n| n.contains("pass --comm-streams blocking --sync-wait-s 0.002")),
        "{:?}",
        a.notes
    );
}

#[test]
fn flags_of_units_with_ddp_alone_and_no_curves_at_all_are_said() {
    let path = profile();
    let mut o = options(&path, vec![Strategy::Ddp]);
    o.root_layers = vec!["emb".into()];
    o.unit_layers = vec![2];
    let all_reduce = crate::shard::curves_of(&[schema::Collective::AllReduce], |_| 4);
    let (a, _) = analyze(&o, &all_reduce).unwrap();
    for flag in ["--root-layers", "--unit-layers"] {
        assert!(
            a.warnings
                .iter()
                .any(|w| w.starts_with(&format!("{flag} changes nothing here"))),
            "{flag}: {:?}",
            a.warnings
        );
    }
    // No curve at all and no --world-size: the error names what the
    // configurations read.
    let none = crate::shard::curves_of(&[], |_| 4);
    let o = options(&path, vec![Strategy::Ddp, Strategy::Full]);
    let err = analyze(&o, &none).unwrap_err().to_string();
    assert!(
        err.ends_with("step times need the curves the configurations compared read: --all-gather, --reduce-scatter, --comm (measured files)"),
        "{err}"
    );
}
