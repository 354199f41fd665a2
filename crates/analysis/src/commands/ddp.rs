//! `ddp`: the PyTorch DDP bucket-size model (crate `model`, which fits the
//! all-reduce times with crate `fit`), fed by any communication input
//! `import` reads.
use anyhow::Result;

use analysis::ImportOptions;

use crate::ddp_args::DdpArgs;

pub fn run(args: &DdpArgs, force: bool) -> Result<()> {
    let options = ImportOptions {
        world_size: args.world_size,
        ..ImportOptions::default()
    };
    let reports = analysis::load::load_any(&args.comm, &options)?;
    if reports
        .iter()
        .any(|r| r.config.benchmark == schema::Benchmark::HostBroadcast)
    {
        return Err(super::host_broadcast_refused("ddp", &args.comm));
    }
    let options = model::DdpOptions {
        force,
        ..args.options()
    };
    model::run(&options, reports)
}
