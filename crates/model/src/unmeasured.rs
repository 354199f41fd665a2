//! The curve of a collective at a world size no curve file measured, as the caller predicts it (collbench-analyze's scale model), for `fsdp`, `zero` and `pipeline`.
use serde::Serialize;

use schema::Collective;

use crate::comm::{CommModel, SizeRange};
use crate::shard::CurveFile;

/// A predicted curve: the model timing its calls and what to say of it.
pub struct PredictedCurve {
    pub model: Box<dyn CommModel>,
    /// The sizes predicted and their range.
    pub sizes: usize,
    pub range: SizeRange,
    pub about: Predicted,
}

/// What the output says of a predicted curve.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Predicted {
    /// The group as the prediction shaped it: `64 ranks on 8 nodes`.
    pub group: String,
    /// The algorithm and protocol NCCL is taken to pick, per size range:
    /// `tree/LL to 64 KiB, ring/LL128 to 2 MiB, ring/Simple above`.
    pub picks: String,
    /// Said with the warnings: the group, that it was not measured, the
    /// layouts that were.
    pub warning: String,
}

/// Predicts the curves the files given do not hold.
pub trait UnmeasuredCurves {
    /// The curve of `collective` at `world_size` ranks from `file`, which
    /// holds no curve of it at that size: `None` where no prediction is
    /// offered (the missing curve is refused as the file's error says),
    /// `Some(Err)` one line naming the group and what to measure.
    fn predict(
        &self,
        file: &CurveFile,
        collective: Collective,
        world_size: u32,
    ) -> Option<Result<PredictedCurve, String>>;
}

/// Predicts nothing: every curve must be measured.
pub struct MeasuredOnly;

impl UnmeasuredCurves for MeasuredOnly {
    fn predict(
        &self,
        _: &CurveFile,
        _: Collective,
        _: u32,
    ) -> Option<Result<PredictedCurve, String>> {
        None
    }
}

/// Whether `file` holds `collective` at `world_size` (any backend): else
/// its curve there is one to predict.
pub fn holds(file: &CurveFile, collective: Collective, world_size: u32) -> bool {
    file.reports.iter().any(|r| {
        r.environment.world_size == world_size
            && r.results.iter().any(|c| c.collective == collective)
    })
}
