//! The flags of `collbench-analyze ddp` (clap derive), mirrored one to one
//! by the clap-free [`model::ddp::DdpOptions`] they become: the `model` crate checks
//! those and runs the model; only this binary knows the command line.
use std::path::PathBuf;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::Args;

use model::ddp::DdpOptions;
use model::{
    parse_alias, parse_cap, parse_caps, parse_first_bucket, parse_gbps, Alias, CapSpec,
    CommModelKind, CommStat, FirstBucket, MissingTime, TimeStat,
};

use crate::cli::MachineOutput;
use crate::model_args::{DtypeArg, SlowdownArgs};
use crate::whole_number::whole;

/// Flags of `collbench-analyze ddp`: predict PyTorch DDP's backward time
/// against the bucket cap from a layer profile and measured all-reduce times.
#[derive(Debug, Clone, Args)]
// Its CSV has more rows than its text table, which joins caps.
#[command(mut_arg("csv", |csv| csv.help(DDP_CSV_HELP)))]
pub struct DdpArgs {
    /// Layer profile CSV `name,params,grad_time_s[,dtype_bytes]` (other
    /// columns of the one profile format, such as `microbatch`, allowed), one
    /// row per layer in parameter registration (forward) order; `#` lines
    /// are comments
    // Which of --profile and --sizes with --times is given is checked in
    // the plan, whose errors say which file is missing (clap's would list
    // the alternatives as all required).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["sizes", "times"])]
    pub profile: Option<PathBuf>,

    #[command(flatten)]
    pub rows: MicrobatchArg,

    /// Course-format layer sizes `,Name,No. Params` (registration order); needs --times
    #[arg(long, value_name = "FILE")]
    pub sizes: Option<PathBuf>,

    /// Course-format layer times `Name,min,max,mean,std,median` in seconds,
    /// rows named `<layer> grad`; needs --sizes
    #[arg(long, value_name = "FILE")]
    pub times: Option<PathBuf>,

    /// All-reduce measurements: a collbench report, or anything
    /// `collbench-analyze import` reads (nccl-tests log or JSON, course CSV)
    #[arg(long, value_name = "FILE")]
    pub comm: PathBuf,

    /// World size whose all-reduce times to use [default: the only one present]
    #[arg(long, value_name = "N", value_parser = whole(1u32, u32::MAX))]
    pub world_size: Option<u32>,

    #[command(flatten)]
    pub curves: CurveArgs,

    /// Column of the --times file to use [default: mean]
    #[arg(
        long,
        value_name = "STAT",
        conflicts_with = "profile",
        value_parser = one_of(&TimeStat::ALL, TimeStat::as_str)
    )]
    pub time_stat: Option<TimeStat>,

    #[command(flatten)]
    pub dtype: DtypeArg,

    /// Caps to sweep. A bare number is MiB, as DDP's bucket_cap_mb (25 =
    /// 25 MiB, 0.5 = 512 KiB); a unit says otherwise (512K, 25MiB, 1G,
    /// 4096B). `LO:HI`: the round caps between (1, 1.5, 2, 2.5, 3, 4, 5, 6,
    /// 7.5 × 10^k MiB), `LO:HI:N`: N log-spaced caps, or a list `10,25,50`
    /// [default: the round caps from 1 MiB to one bucket for the whole model]
    #[arg(long, value_name = "LO:HI|LIST", value_parser = parse_caps)]
    pub caps: Option<CapSpec>,

    /// Cap of the first bucket to fill (the gradients ready first): `same` as
    /// the cap (PyTorch when bucket_cap_mb is set) or a size (1M: PyTorch's
    /// default when it is not, and older releases always; a bare number is bytes here)
    #[arg(
        long,
        value_name = "SIZE|same",
        default_value = "same",
        value_parser = parse_first_bucket
    )]
    pub first_bucket_bytes: FirstBucket,

    /// What to do with a course sizes row that has no time row:
    /// `error` lists the unmatched rows, `zero` takes its time as zero
    /// [default: error]
    #[arg(
        long,
        value_name = "WHAT",
        conflicts_with = "profile",
        value_parser = one_of(&MissingTime::ALL, MissingTime::as_str)
    )]
    pub missing_time: Option<MissingTime>,

    /// Treat layer NAME as OTHER when matching --sizes rows to --times rows
    /// (repeatable), e.g. --alias 'LayerNorm final=ln_f'
    #[arg(
        long = "alias",
        value_name = "NAME=OTHER",
        value_parser = parse_alias,
        conflicts_with = "profile"
    )]
    pub aliases: Vec<Alias>,

    #[command(flatten)]
    pub slowdown: SlowdownArgs,

    /// Speed of DDP's own passes over the gradients, in GB/s (1e9 B/s): each
    /// gradient is scaled into its bucket when ready, and copied back after
    /// the all-reduces (the `gradient copy` line of a profile's header;
    /// default: these passes cost nothing)
    #[arg(long, value_name = "GBPS", value_parser = parse_gbps, allow_negative_numbers = true)]
    pub grad_copy_gbps: Option<f64>,

    /// The DDP runs use gradient_as_bucket_view=True: no copy back after the
    /// all-reduces (needs --grad-copy-gbps)
    #[arg(long)]
    pub grad_as_bucket_view: bool,

    /// Measured DDP times `bucket_bytes,time_s` to compare against
    /// (what scripts/ddp_bucket_sweep.py writes)
    #[arg(long, value_name = "FILE.csv")]
    pub measured: Option<PathBuf>,

    #[command(flatten)]
    pub output: MachineOutput,

    /// Write an SVG plot of predicted (and measured) time against cap
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,

    /// Write an SVG timeline of one backward pass at b* (or at
    /// --timeline-cap): compute and all-reduce lanes, each layer's backward
    /// and each bucket's all-reduce a labelled block
    #[arg(long, value_name = "FILE.svg")]
    pub timeline: Option<PathBuf>,

    /// Draw the --timeline pass at this cap instead of b*, as --caps reads a
    /// cap (a bare number is MiB: 25 is PyTorch's default bucket_cap_mb)
    #[arg(long, value_name = "SIZE", requires = "timeline", value_parser = parse_cap)]
    pub timeline_cap: Option<u64>,
}

/// `ddp --csv`, in place of the [`MachineOutput`] help the other commands share.
const DDP_CSV_HELP: &str = "Print CSV: a header row, then a row per cap swept, numbers \
    unrounded (the text table joins caps that form the same buckets into one `A .. B` row; \
    the CSV keeps each cap)";

/// `--microbatch`, for every model reading the one profile format (`ddp`,
/// `fsdp`, `zero`): which rows of a profile measured at several sizes.
#[derive(Debug, Clone, clap::Args)]
pub struct MicrobatchArg {
    /// Use the profile rows measured at this micro-batch size (needed when
    /// the file holds several)
    #[arg(long, value_name = "N", value_parser = parse_samples)]
    pub microbatch: Option<u64>,
}

/// A number of samples (`--microbatch`, and `pipeline`'s
/// `--microbatch-size` and `--global-batch`): a whole number, at least 1.
pub(crate) fn parse_samples(text: &str) -> Result<u64, String> {
    whole(1u64, u64::MAX)(text).map_err(|_| {
        format!(
            "{text:?} is not a number of samples (accepted: a whole number of samples, at least 1)"
        )
    })
}

impl DdpArgs {
    /// The options the `model` crate takes: the same values, without clap.
    pub fn options(&self) -> DdpOptions {
        DdpOptions {
            profile: self.profile.clone(),
            microbatch: self.rows.microbatch,
            sizes: self.sizes.clone(),
            times: self.times.clone(),
            comm: self.comm.clone(),
            world_size: self.world_size,
            backend: self.curves.backend,
            comm_model: self.curves.comm_model,
            stat: self.curves.stat,
            time_stat: self.time_stat,
            dtype_bytes: self.dtype.dtype_bytes,
            caps: self.caps.clone(),
            first_bucket_bytes: self.first_bucket_bytes,
            missing_time: self.missing_time,
            aliases: self.aliases.clone(),
            compute_slowdown: self.slowdown.compute_slowdown,
            comm_slowdown: self.slowdown.comm_slowdown,
            grad_copy_gbps: self.grad_copy_gbps,
            grad_as_bucket_view: self.grad_as_bucket_view,
            measured: self.measured.clone(),
            json: self.output.json,
            plot: self.plot.clone(),
            timeline: self.timeline.is_some(),
            timeline_cap: self.timeline_cap,
            // `commands::ddp` writes --plot and --timeline itself, under
            // the command line's global --force.
            force: false,
        }
    }

    /// The input files and the flags naming them.
    pub fn inputs(&self) -> Vec<(&'static str, &PathBuf)> {
        given([
            ("--comm", Some(&self.comm)),
            ("--profile", self.profile.as_ref()),
            ("--sizes", self.sizes.as_ref()),
            ("--times", self.times.as_ref()),
            ("--measured", self.measured.as_ref()),
        ])
    }
}

/// The input files a model was given, each with the flag that named it.
pub(crate) fn given<'a>(
    files: impl IntoIterator<Item = (&'static str, Option<&'a PathBuf>)>,
) -> Vec<(&'static str, &'a PathBuf)> {
    files
        .into_iter()
        .filter_map(|(flag, path)| path.map(|p| (flag, p)))
        .collect()
}

/// How the measured curves are read, for every model that reads them
/// (`ddp`, `fsdp`, `zero`, `pipeline`): whose times, the model between
/// sizes and the statistic of each size.
#[derive(Debug, Clone, clap::Args)]
pub struct CurveArgs {
    /// Backend whose times to use, e.g. nccl or gloo [default: the only one present]
    #[arg(long, value_name = "NAME", value_parser = parse_backend)]
    pub backend: Option<schema::Backend>,

    /// interp: piecewise linear in log-log between measured sizes, α–β beyond
    /// them; alpha-beta: the α–β fit everywhere
    #[arg(
        long,
        value_name = "MODEL",
        default_value = "interp",
        value_parser = one_of(&CommModelKind::ALL, CommModelKind::as_str)
    )]
    pub comm_model: CommModelKind,

    /// Statistic of each size's iteration times the model uses: mean,
    /// median or min (median and min need collbench reports; imported logs
    /// and the course CSV give the mean only)
    #[arg(
        long,
        value_name = "STAT",
        default_value = "mean",
        value_parser = one_of(&CommStat::ALL, CommStat::as_str)
    )]
    pub stat: CommStat,
}

pub(crate) fn parse_backend(text: &str) -> Result<schema::Backend, String> {
    text.parse().map_err(|e: schema::SchemaError| e.to_string())
}

/// A flag whose value is one of a clap-free enum's `all` values, spelled as
/// `name` spells them; clap lists the spellings in `--help` and in errors.
pub(crate) fn one_of<T: Copy + Send + Sync + 'static>(
    all: &'static [T],
    name: fn(T) -> &'static str,
) -> impl TypedValueParser<Value = T> {
    PossibleValuesParser::new(all.iter().map(|&v| name(v))).try_map(move |text| {
        all.iter()
            .copied()
            .find(|&v| name(v) == text)
            .ok_or("not one of the possible values")
    })
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};

    use super::*;
    use crate::cli::{Cli, Command};

    /// Parses `collbench-analyze ddp ARGV…`, giving clap's error as text.
    fn parse(argv: &[&str]) -> Result<DdpArgs, String> {
        let full = ["collbench-analyze", "ddp"].iter().chain(argv);
        match Cli::try_parse_from(full) {
            Ok(Cli {
                command: Command::Ddp(args),
                ..
            }) => Ok(args),
            Ok(other) => panic!("not ddp: {other:?}"),
            Err(e) => Err(e.to_string()),
        }
    }

    fn args(argv: &[&str]) -> DdpArgs {
        parse(argv).unwrap_or_else(|e| panic!("{argv:?}: {e}"))
    }

    #[test]
    fn flags_default_as_the_options() {
        let a = args(&["--profile", "p.csv", "--comm", "c.json"]).options();
        let expected = DdpOptions {
            profile: Some("p.csv".into()),
            comm: "c.json".into(),
            ..DdpOptions::default()
        };
        assert_eq!(a, expected);
    }

    #[test]
    fn every_flag_reaches_its_option() {
        let a = args(&[
            "--sizes",
            "s.csv",
            "--times",
            "t.csv",
            "--comm",
            "c",
            "--alias",
            "A=b",
            "--alias",
            "C=d",
            "--time-stat",
            "median",
            "--missing-time",
            "zero",
            "--first-bucket-bytes",
            "1M",
            "--caps",
            "1M:1G:8",
            "--world-size",
            "4",
            "--backend",
            "gloo",
            "--comm-model",
            "alpha-beta",
            "--stat",
            "min",
            "--json",
            "--plot",
            "x.svg",
            "--timeline",
            "t.svg",
            "--timeline-cap",
            "25",
            "--measured",
            "m.csv",
            "--compute-slowdown",
            "1.2",
            "--comm-slowdown",
            "1.5",
            "--grad-copy-gbps",
            "9.5",
            "--grad-as-bucket-view",
            "--dtype-bytes",
            "2",
        ]);
        let expected = DdpOptions {
            profile: None,
            microbatch: None,
            sizes: Some("s.csv".into()),
            times: Some("t.csv".into()),
            comm: "c".into(),
            world_size: Some(4),
            backend: Some(schema::Backend::Gloo),
            comm_model: CommModelKind::AlphaBeta,
            stat: CommStat::Min,
            time_stat: Some(TimeStat::Median),
            dtype_bytes: 2,
            caps: Some(parse_caps("1M:1G:8").unwrap()),
            first_bucket_bytes: FirstBucket::Bytes(1 << 20),
            missing_time: Some(MissingTime::Zero),
            aliases: vec![parse_alias("A=b").unwrap(), parse_alias("C=d").unwrap()],
            compute_slowdown: 1.2,
            comm_slowdown: 1.5,
            grad_copy_gbps: Some(9.5),
            grad_as_bucket_view: true,
            measured: Some("m.csv".into()),
            json: true,
            plot: Some("x.svg".into()),
            timeline: true,
            timeline_cap: Some(25 << 20),
            force: false,
        };
        assert_eq!(a.options(), expected);
        // --microbatch goes with --profile (the model refuses it with the
        // course pair, which has no microbatch column).
        let a = args(&["--profile", "p.csv", "--comm", "c", "--microbatch", "8"]);
        assert_eq!(a.options().microbatch, Some(8));
    }

    #[test]
    fn bad_and_conflicting_flags_are_refused() {
        // A missing profile (or half the course pair) is the plan's to
        // refuse, naming what is missing.
        for (given, said) in [
            (
                &["--comm", "c"][..],
                "give the layer profile: --profile FILE",
            ),
            (
                &["--sizes", "s", "--comm", "c"],
                "--sizes needs --times FILE",
            ),
            (
                &["--times", "t", "--comm", "c"],
                "--times needs --sizes FILE",
            ),
        ] {
            let err = model::ddp::check(&args(given).options()).unwrap_err();
            assert!(err.to_string().starts_with(said), "{given:?}: {err}");
        }
        for bad in [
            &[
                "--profile",
                "p",
                "--sizes",
                "s",
                "--times",
                "t",
                "--comm",
                "c",
            ][..],
            &["--profile", "p", "--comm", "c", "--time-stat", "mean"],
            &["--profile", "p", "--comm", "c", "--alias", "a=b"],
            &["--profile", "p", "--comm", "c", "--caps", "4G:1M"],
            &["--profile", "p", "--comm", "c", "--compute-slowdown", "0.5"],
            &["--profile", "p", "--comm", "c", "--comm-slowdown", "0.9"],
            &["--profile", "p", "--comm", "c", "--comm-slowdown", "inf"],
            &["--profile", "p", "--comm", "c", "--dtype-bytes", "0"],
            &["--profile", "p", "--comm", "c", "--grad-copy-gbps", "0"],
            &["--profile", "p", "--comm", "c", "--grad-copy-gbps", "nan"],
            &["--profile", "p", "--comm", "c", "--world-size", "0"],
            &["--profile", "p", "--comm", "c", "--stat", "p99"],
            &["--profile", "p", "--comm", "c", "--comm-model", "cubic"],
            &["--profile", "p"],
            &["--profile", "p", "--comm", "c", "--microbatch", "0"],
            &["--profile", "p", "--comm", "c", "--timeline-cap", "25"],
            &["--profile", "p", "--comm", "c", "--json", "--csv"],
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
        let err = parse(&["--profile", "p", "--comm", "c", "--stat", "p99"]).unwrap_err();
        assert!(
            err.contains("[possible values: mean, median, min]"),
            "{err}"
        );
    }

    #[test]
    fn a_bad_micro_batch_size_says_what_is_accepted() {
        for bad in ["1.5", "-1", "0", "eight"] {
            let err = parse(&["--profile", "p", "--comm", "c", "--microbatch", bad]).unwrap_err();
            assert!(
                err.contains(&format!("'{bad}' for '--microbatch <N>'"))
                    && err.contains("(accepted: a whole number of samples, at least 1)"),
                "{err}"
            );
        }
        let a = args(&["--profile", "p", "--comm", "c", "--microbatch", "1"]);
        assert_eq!(a.rows.microbatch, Some(1));
    }

    #[test]
    fn ddp_csv_help_says_a_row_per_cap_and_the_others_keep_theirs() {
        let mut cli = Cli::command();
        let csv_help = |cli: &mut clap::Command, name: &str| {
            let sub = cli.find_subcommand_mut(name).expect("the subcommand");
            sub.build();
            let csv = sub
                .get_arguments()
                .find(|a| a.get_id() == "csv")
                .expect("--csv");
            csv.get_help().expect("--csv has help").to_string()
        };
        let ddp = csv_help(&mut cli, "ddp");
        assert!(ddp.contains("a row per cap swept"), "{ddp}");
        assert!(!ddp.contains("item of the text table"), "{ddp}");
        for other in ["fsdp", "zero", "pipeline", "predict", "soak", "table"] {
            let help = csv_help(&mut cli, other);
            assert!(
                help.contains("a row per item of the text table"),
                "{other}: {help}"
            );
        }
    }

    #[test]
    fn a_bare_cap_is_documented_as_mib_and_a_bad_one_is_named() {
        let err = parse(&["--profile", "p", "--comm", "c", "--caps", "25Q"]).unwrap_err();
        assert!(
            err.contains("--caps") && err.contains("MiB") && err.contains("512K"),
            "{err}"
        );
        let mut cli = Cli::command();
        let help = cli
            .find_subcommand_mut("ddp")
            .expect("the ddp subcommand")
            .render_long_help()
            .to_string();
        assert!(help.contains("bare number is MiB"), "{help}");
        assert!(help.contains("[default: interp]"), "{help}");
    }
}
