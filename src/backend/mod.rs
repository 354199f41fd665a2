//! The backends that move bytes: each runs a case's collective on its own
//! buffers, times it, and checks its results. The run loop in `run.rs` is the
//! same for both.
use schema::{DeviceInfo, Placement, Timing};

use crate::check::CheckSpec;
use crate::plan::Case;

pub mod mpi;
pub mod nccl;

/// What one timed batch took on this rank, µs (of one replay, with CUDA
/// graphs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BatchTime {
    /// Host wall time from the first launch to completion of the last.
    pub wall_us: f64,
    /// `Timing::Wall` only: host time from the first launch until the last
    /// returned, read before the wait for completion (nccl-tests'
    /// `cputime`). Where the calls block (MPI) it is the completion time.
    pub enqueued_us: Option<f64>,
}

impl BatchTime {
    /// A batch timed per iteration: its wall time alone.
    pub fn wall_only(wall_us: f64) -> BatchTime {
        BatchTime {
            wall_us,
            enqueued_us: None,
        }
    }
}

/// A way of running the planned collectives on this rank.
pub trait Backend {
    /// Runs `iters` untimed iterations of `case`.
    fn warm_up(&mut self, case: &Case, placement: Placement, iters: u32) -> anyhow::Result<()>;

    /// Returns once every collective this rank issued has completed.
    fn synchronize(&mut self) -> anyhow::Result<()>;

    /// Runs `samples_us.len() / local_ranks()` back-to-back iterations. With
    /// `Timing::Events` or `Timing::HostClock` it writes each iteration's
    /// duration in µs into `samples_us`, each local rank's iterations
    /// together; with `Timing::Wall` it leaves them alone.
    fn time(
        &mut self,
        case: &Case,
        placement: Placement,
        timing: Timing,
        samples_us: &mut [f64],
    ) -> anyhow::Result<BatchTime>;

    /// Fills inputs from `spec`, runs the collective once and returns how many
    /// elements of this process's results are wrong (`spec.rank` is its
    /// first rank).
    fn check(&mut self, case: &Case, placement: Placement, spec: &CheckSpec)
        -> anyhow::Result<u64>;

    /// Moves on to `plan`'s element type and operation (`-d all`, `-o
    /// all`): the buffers were allocated for the variant that needs the
    /// most bytes ([`crate::run`]), and rotate within `plan`'s largest
    /// footprint, as a run of that type alone would.
    fn set_variant(&mut self, plan: &crate::plan::Plan);

    /// The GPUs this process drives, in rank order (none on host memory).
    fn devices(&self) -> Vec<DeviceInfo>;

    /// How many ranks this process is: one per GPU it drives (`-g`), one
    /// on host memory. `time` fills `samples_us` rank-major, each rank's
    /// iterations together.
    fn local_ranks(&self) -> usize {
        1
    }

    /// NCCL's own estimate of one iteration of `case`, µs, made without
    /// launching anything (`--nccl-estimate`; NCCL only). Every rank makes
    /// it at the same point.
    fn nccl_estimate(
        &mut self,
        _case: &Case,
        _placement: Placement,
    ) -> anyhow::Result<Option<f64>> {
        Ok(None)
    }

    /// How the work of `case` is launched, for the report (NCCL only).
    fn launch(&self, _case: &Case) -> Option<schema::Launch> {
        None
    }

    /// Abandons collectives still in flight (after a timeout), so the
    /// process can exit instead of hanging. A no-op where nothing can hang
    /// asynchronously.
    fn abort(&mut self) {}
}

/// Calls `$body` with `$t` bound to the Rust type of `$dtype`.
macro_rules! with_element_type {
    ($dtype:expr, $t:ident => $body:expr) => {
        match $dtype {
            schema::DataType::F32 => {
                type $t = f32;
                $body
            }
            schema::DataType::F64 => {
                type $t = f64;
                $body
            }
            schema::DataType::F16 => {
                type $t = half::f16;
                $body
            }
            schema::DataType::Bf16 => {
                type $t = half::bf16;
                $body
            }
            schema::DataType::I32 => {
                type $t = i32;
                $body
            }
            schema::DataType::I64 => {
                type $t = i64;
                $body
            }
            schema::DataType::U8 => {
                type $t = u8;
                $body
            }
            schema::DataType::I8 => {
                type $t = i8;
                $body
            }
            schema::DataType::F8E4M3 => {
                type $t = $crate::f8::F8E4M3;
                $body
            }
            schema::DataType::F8E5M2 => {
                type $t = $crate::f8::F8E5M2;
                $body
            }
            other => unreachable!("{other} is refused by the plan"),
        }
    };
}
pub(crate) use with_element_type;
