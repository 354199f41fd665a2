//! `ddp`: the PyTorch DDP bucket-size model (crate `ddp`), fed by any
//! communication input `import` reads and by the piecewise α–β fit of `fit`.
use anyhow::Result;

use analysis::fit::{fit_points, PiecewiseFit, Segments};
use analysis::ImportOptions;
use ddp::{CommModel, DdpArgs};

/// The fitted all-reduce model, answering in seconds.
struct FittedComm(PiecewiseFit);

impl CommModel for FittedComm {
    fn time_s(&self, bytes: u64) -> f64 {
        self.0.predict_us(bytes as f64) * 1e-6
    }

    fn describe(&self) -> Option<String> {
        let segments: Vec<String> = self
            .0
            .segments
            .iter()
            .map(|s| {
                format!(
                    "{}-{} B: alpha {:.2} us, {:.2} GB/s",
                    s.min_bytes, s.max_bytes, s.alpha_us, s.algbw_gbps
                )
            })
            .collect();
        Some(format!(
            "piecewise alpha-beta fit ({})",
            segments.join("; ")
        ))
    }
}

fn fit_comm(points: &[(u64, f64)]) -> Result<Box<dyn CommModel>> {
    Ok(Box::new(FittedComm(fit_points(points, Segments::Auto)?)))
}

pub fn run(args: &DdpArgs) -> Result<()> {
    let options = ImportOptions {
        world_size: args.world_size,
        ..ImportOptions::default()
    };
    let reports = analysis::load::load_any(&args.comm, &options)?;
    ddp::run(args, reports, &fit_comm)
}
