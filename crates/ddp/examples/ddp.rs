//! The `ddp` model as a stand-alone program, for trying the crate before it is
//! mounted as `collbench-analyze ddp` (which also reads nccl-tests logs and the
//! course CSV, and fits α–β its own way). Here `--comm` must be a collbench
//! JSON report, and α–β is a least-squares fit of relative error.
//!
//!     cargo run -p ddp --example ddp -- --profile P.csv --comm REPORT.json
use std::process::ExitCode;

use clap::Parser;
use ddp::{CommModel, DdpArgs};

#[derive(Parser)]
#[command(
    name = "ddp",
    about = "Predict PyTorch DDP backward time against bucket cap"
)]
struct Cli {
    #[command(flatten)]
    args: DdpArgs,
}

/// t = α + x / bandwidth.
struct AlphaBeta {
    alpha_s: f64,
    seconds_per_byte: f64,
}

impl CommModel for AlphaBeta {
    fn time_s(&self, bytes: u64) -> f64 {
        self.alpha_s + self.seconds_per_byte * bytes as f64
    }

    fn describe(&self) -> Option<String> {
        Some(format!(
            "α = {:.1} µs, bandwidth {:.2} GB/s",
            self.alpha_s * 1e6,
            1e-9 / self.seconds_per_byte
        ))
    }
}

/// Minimises Σ ((t_i − α − β x_i) / t_i)², so small messages count as much
/// as large ones. Points are (bytes, µs).
fn fit(points: &[(u64, f64)]) -> anyhow::Result<Box<dyn CommModel>> {
    let (mut s_w, mut s_x, mut s_y, mut s_xx, mut s_xy) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for &(bytes, us) in points {
        let (x, y) = (bytes as f64, us * 1e-6);
        let w = 1.0 / (y * y);
        s_w += w;
        s_x += w * x;
        s_y += w * y;
        s_xx += w * x * x;
        s_xy += w * x * y;
    }
    let det = s_w * s_xx - s_x * s_x;
    anyhow::ensure!(det > 0.0, "all-reduce sizes do not vary; cannot fit α–β");
    let beta = (s_w * s_xy - s_x * s_y) / det;
    let alpha = (s_y - beta * s_x) / s_w;
    anyhow::ensure!(beta > 0.0, "all-reduce time does not grow with size");
    Ok(Box::new(AlphaBeta {
        alpha_s: alpha,
        seconds_per_byte: beta,
    }))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = schema::Report::read(&cli.args.comm)
        .map_err(anyhow::Error::from)
        .and_then(|report| ddp::run(&cli.args, vec![report], &fit));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
