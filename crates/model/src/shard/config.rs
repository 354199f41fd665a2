//! The sharded strategies and the knobs users have (as clap-free values
//! with their parsers): which strategy, FSDP's prefetch settings and
//! all-gather limit, the communication streams, the dtypes, the
//! optimizer and how its step is implemented.
use schema::Collective;

/// A data-parallel strategy: what is sharded and which collectives move it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// DDP (ZeRO stage 0): gradients all-reduced in buckets.
    Ddp,
    /// Optimizer state sharded; gradients all-reduced or reduce-scattered in
    /// buckets; parameters all-gathered or broadcast after the step.
    Zero1,
    /// ZeRO-1 with gradients reduce-scattered (and kept sharded).
    Zero2,
    /// Parameters sharded too, gathered per unit (FSDP FULL_SHARD's schedule).
    Zero3,
    /// FSDP FULL_SHARD.
    Full,
    /// FSDP SHARD_GRAD_OP: parameters stay gathered from forward to backward.
    GradOp,
    /// FSDP HYBRID_SHARD: FULL_SHARD within a group, gradients all-reduced
    /// across groups.
    Hybrid,
    /// FSDP NO_SHARD: each unit's gradients all-reduced after its backward.
    NoShard,
}

impl Strategy {
    /// `fsdp --strategy` values: FSDP's, and DDP to compare them with.
    pub const FSDP: [Strategy; 5] = [
        Strategy::Full,
        Strategy::GradOp,
        Strategy::Hybrid,
        Strategy::NoShard,
        Strategy::Ddp,
    ];
    /// `zero --stage` values 0 to 3.
    pub const ZERO: [Strategy; 4] = [
        Strategy::Ddp,
        Strategy::Zero1,
        Strategy::Zero2,
        Strategy::Zero3,
    ];

    /// The name in output (`ddp`, `zero-1`, `fsdp-full`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Strategy::Ddp => "ddp",
            Strategy::Zero1 => "zero-1",
            Strategy::Zero2 => "zero-2",
            Strategy::Zero3 => "zero-3",
            Strategy::Full => "fsdp-full",
            Strategy::GradOp => "fsdp-grad-op",
            Strategy::Hybrid => "fsdp-hybrid",
            Strategy::NoShard => "fsdp-no-shard",
        }
    }

    /// The `fsdp --strategy` spelling of a strategy.
    pub fn fsdp_flag(self) -> &'static str {
        match self {
            Strategy::Full => "full",
            Strategy::GradOp => "grad-op",
            Strategy::Hybrid => "hybrid",
            Strategy::Ddp => "ddp",
            _ => "no-shard",
        }
    }

    /// The `--stage` of a ZeRO strategy.
    pub fn zero_stage(self) -> &'static str {
        match self {
            Strategy::Ddp => "0",
            Strategy::Zero1 => "1",
            Strategy::Zero2 => "2",
            _ => "3",
        }
    }

    /// Gradients, parameters and optimizer state are sharded per unit and
    /// gathered around each unit's compute (FSDP's schedule).
    pub fn per_unit(self) -> bool {
        matches!(
            self,
            Strategy::Zero3
                | Strategy::Full
                | Strategy::GradOp
                | Strategy::Hybrid
                | Strategy::NoShard
        )
    }

    pub fn shards_optimizer(self) -> bool {
        !matches!(self, Strategy::Ddp | Strategy::NoShard)
    }

    pub fn shards_gradients(self) -> bool {
        self.shards_optimizer() && self != Strategy::Zero1
    }

    pub fn shards_parameters(self) -> bool {
        matches!(
            self,
            Strategy::Zero3 | Strategy::Full | Strategy::GradOp | Strategy::Hybrid
        )
    }

    /// Reduces gradients through PyTorch DDP's flat bucket buffers, which
    /// DDP allocates at construction, as large as the gradients: DDP, and
    /// ZeRO-1 when it all-reduces (ZeroRedundancyOptimizer over DDP).
    /// ZeRO-1 and -2 reducing by reduce-scatter follow the ZeRO paper,
    /// whose implementation reduces through constant-size buffers set by
    /// the framework, and ZeRO-3 and FSDP reduce each unit's own
    /// gradients: none of these hold a second copy of the gradients.
    pub fn reduces_in_ddp_buckets(self, grad_policy: GradPolicy) -> bool {
        match self {
            Strategy::Ddp => true,
            Strategy::Zero1 => grad_policy == GradPolicy::AllReduce,
            _ => false,
        }
    }

    /// Whether a step of this strategy issues `collective`, gradients
    /// reduced by `grads` and parameters brought back by `params` (ZeRO-1
    /// and -2); HYBRID_SHARD's all-reduce across groups counts, which one
    /// group does without.
    pub fn issues(self, collective: Collective, grads: GradPolicy, params: ParamPolicy) -> bool {
        let gathers_and_scatters = matches!(
            collective,
            Collective::AllGather | Collective::ReduceScatter
        );
        match self {
            Strategy::Ddp | Strategy::NoShard => collective == Collective::AllReduce,
            Strategy::Zero1 => {
                collective == grads.collective() || collective == params.collective()
            }
            Strategy::Zero2 => {
                collective == Collective::ReduceScatter || collective == params.collective()
            }
            Strategy::Zero3 | Strategy::Full | Strategy::GradOp => gathers_and_scatters,
            Strategy::Hybrid => gathers_and_scatters || collective == Collective::AllReduce,
        }
    }

    /// All-gathers parameters again before each unit's backward.
    pub fn regathers_for_backward(self) -> bool {
        matches!(self, Strategy::Zero3 | Strategy::Full | Strategy::Hybrid)
    }
}

/// When FSDP issues the all-gather of the next unit in backward.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackwardPrefetch {
    /// When that unit's backward is reached (after this unit's
    /// reduce-scatter is issued).
    None,
    /// BACKWARD_PRE: before this unit's gradient computation.
    Pre,
    /// BACKWARD_POST: after this unit's gradient computation, before its
    /// reduce-scatter.
    Post,
}

impl BackwardPrefetch {
    pub const ALL: [BackwardPrefetch; 3] = [
        BackwardPrefetch::None,
        BackwardPrefetch::Pre,
        BackwardPrefetch::Post,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            BackwardPrefetch::None => "none",
            BackwardPrefetch::Pre => "pre",
            BackwardPrefetch::Post => "post",
        }
    }
}

/// One communication stream for every collective (FSDP1, NCCL's one
/// stream), or all-gathers on one and reduce-scatters (and all-reduces) on
/// another, so they can run at once; or none: each collective blocks the
/// compute stream until it ends (FSDP2 on the CPU, where its streams are
/// no-ops and every all-gather and reduce-scatter is a blocking call).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommStreams {
    One,
    Separate,
    Blocking,
}

impl CommStreams {
    pub const ALL: [CommStreams; 3] = [
        CommStreams::One,
        CommStreams::Separate,
        CommStreams::Blocking,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            CommStreams::One => "one",
            CommStreams::Separate => "separate",
            CommStreams::Blocking => "blocking",
        }
    }
}

/// The optimizer, for its state bytes per parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Optimizer {
    /// Plain SGD: no state beyond the master copy under mixed precision.
    Sgd,
    /// SGD with momentum: one buffer.
    SgdMomentum,
    /// Adam or AdamW: two moments.
    Adam,
}

impl Optimizer {
    pub const ALL: [Optimizer; 3] = [Optimizer::Sgd, Optimizer::SgdMomentum, Optimizer::Adam];

    pub fn as_str(self) -> &'static str {
        match self {
            Optimizer::Sgd => "sgd",
            Optimizer::SgdMomentum => "sgd-momentum",
            Optimizer::Adam => "adam",
        }
    }

    /// State tensors per parameter.
    pub fn moments(self) -> u64 {
        match self {
            Optimizer::Sgd => 0,
            Optimizer::SgdMomentum => 1,
            Optimizer::Adam => 2,
        }
    }
}

/// How the optimizer step runs, for the temporaries it allocates (PyTorch's
/// `foreach=` and `fused=` arguments).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptimizerImpl {
    /// One multi-tensor kernel per operation over every stepped tensor
    /// (PyTorch's default on GPUs): Adam's `_foreach_sqrt` of the second
    /// moments makes one state-dtype copy of everything it steps.
    Foreach,
    /// One fused kernel: no temporaries.
    Fused,
}

impl OptimizerImpl {
    pub const ALL: [OptimizerImpl; 2] = [OptimizerImpl::Foreach, OptimizerImpl::Fused];

    pub fn as_str(self) -> &'static str {
        match self {
            OptimizerImpl::Foreach => "foreach",
            OptimizerImpl::Fused => "fused",
        }
    }
}

/// Bytes the optimizer step allocates for the duration of the step, per
/// stepped parameter: foreach Adam one state-dtype tensor (the square root
/// of the second moments, before it is divided and added to the
/// parameters); foreach SGD, with or without momentum (no weight decay, no
/// Nesterov), updates in place and allocates nothing; fused kernels
/// allocate nothing.
pub fn step_temp_bytes_per_param(
    optimizer: Optimizer,
    implementation: OptimizerImpl,
    state_bytes: u64,
) -> u64 {
    match (optimizer, implementation) {
        (Optimizer::Adam, OptimizerImpl::Foreach) => state_bytes,
        _ => 0,
    }
}

/// How ZeRO-1 reduces gradients (frameworks differ).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GradPolicy {
    ReduceScatter,
    AllReduce,
}

impl GradPolicy {
    pub const ALL: [GradPolicy; 2] = [GradPolicy::ReduceScatter, GradPolicy::AllReduce];

    pub fn as_str(self) -> &'static str {
        match self {
            GradPolicy::ReduceScatter => "reduce-scatter",
            GradPolicy::AllReduce => "all-reduce",
        }
    }

    pub fn collective(self) -> Collective {
        match self {
            GradPolicy::ReduceScatter => Collective::ReduceScatter,
            GradPolicy::AllReduce => Collective::AllReduce,
        }
    }
}

/// How ZeRO-1 and ZeRO-2 bring the updated parameters back to every rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamPolicy {
    /// All-gather in the gradient buckets (the ZeRO paper).
    AllGather,
    /// Broadcast each layer from the rank owning it (the course's sharded
    /// optimizer).
    Broadcast,
}

impl ParamPolicy {
    pub const ALL: [ParamPolicy; 2] = [ParamPolicy::AllGather, ParamPolicy::Broadcast];

    pub fn as_str(self) -> &'static str {
        match self {
            ParamPolicy::AllGather => "all-gather",
            ParamPolicy::Broadcast => "broadcast",
        }
    }

    pub fn collective(self) -> Collective {
        match self {
            ParamPolicy::AllGather => Collective::AllGather,
            ParamPolicy::Broadcast => Collective::Broadcast,
        }
    }
}

/// Bytes per element of parameters, gradients and optimizer state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dtypes {
    /// Parameters (and the gathered copies); None: each profile row's
    /// `dtype_bytes`.
    pub param: Option<u64>,
    /// Gradients; None: each profile row's `dtype_bytes`.
    pub grad: Option<u64>,
    /// Optimizer state (moments and, when parameters are narrower, the
    /// master copy).
    pub state: u64,
}

/// Optimizer state bytes per parameter: the moments, plus a master copy in
/// the state dtype when parameters are narrower (mixed precision). Adam
/// with 2-byte parameters and 4-byte state: 12, the ZeRO paper's K.
pub fn state_bytes_per_param(optimizer: Optimizer, param_bytes: u64, state_bytes: u64) -> u64 {
    let master = if param_bytes < state_bytes { 1 } else { 0 };
    (optimizer.moments() + master) * state_bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_zero_papers_k_is_twelve_for_mixed_precision_adam() {
        assert_eq!(state_bytes_per_param(Optimizer::Adam, 2, 4), 12);
        assert_eq!(state_bytes_per_param(Optimizer::Adam, 4, 4), 8);
        assert_eq!(state_bytes_per_param(Optimizer::Sgd, 4, 4), 0);
        assert_eq!(state_bytes_per_param(Optimizer::SgdMomentum, 2, 4), 8);
    }

    #[test]
    fn only_foreach_adam_allocates_a_copy_of_what_it_steps() {
        use OptimizerImpl::*;
        assert_eq!(step_temp_bytes_per_param(Optimizer::Adam, Foreach, 4), 4);
        assert_eq!(step_temp_bytes_per_param(Optimizer::Adam, Foreach, 2), 2);
        assert_eq!(step_temp_bytes_per_param(Optimizer::Adam, Fused, 4), 0);
        for sgd in [Optimizer::Sgd, Optimizer::SgdMomentum] {
            assert_eq!(step_temp_bytes_per_param(sgd, Foreach, 4), 0);
        }
    }

    #[test]
    fn ddp_buckets_belong_to_ddp_and_zero_1_over_ddp() {
        use GradPolicy::*;
        assert!(Strategy::Ddp.reduces_in_ddp_buckets(ReduceScatter));
        assert!(Strategy::Zero1.reduces_in_ddp_buckets(AllReduce));
        assert!(!Strategy::Zero1.reduces_in_ddp_buckets(ReduceScatter));
        for s in [
            Strategy::Zero2,
            Strategy::Zero3,
            Strategy::Full,
            Strategy::GradOp,
            Strategy::Hybrid,
            Strategy::NoShard,
        ] {
            assert!(!s.reduces_in_ddp_buckets(AllReduce), "{s:?}");
        }
    }

    #[test]
    fn what_each_strategy_shards() {
        use Strategy::*;
        let sharded = |s: Strategy| {
            (
                s.shards_optimizer(),
                s.shards_gradients(),
                s.shards_parameters(),
            )
        };
        assert_eq!(sharded(Ddp), (false, false, false));
        assert_eq!(sharded(NoShard), (false, false, false));
        assert_eq!(sharded(Zero1), (true, false, false));
        assert_eq!(sharded(Zero2), (true, true, false));
        assert_eq!(sharded(Zero3), (true, true, true));
        assert_eq!(sharded(Full), sharded(Zero3));
    }
}
