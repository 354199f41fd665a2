//! The vocabulary shared by `collbench` and `collbench-analyze`: the versioned
//! JSON report, the facts about each collective (bus-bandwidth factors), the
//! summary statistics, and unit helpers.
//!
//! Guide: [`Report`] is one run; [`CaseResult`] is one (size, placement) row;
//! [`Delivery`] is one row of a host-broadcast run;
//! [`Collective::bus_factor`] turns algbw into busbw; [`Summary`] computes the
//! statistics the report carries; [`units`] parses and prints byte sizes and
//! bandwidths; [`histogram`] holds distributions of iteration times in
//! constant memory. [`Report::read`] refuses a file of another `schema_version`.
#![forbid(unsafe_code)]

mod acceptance;
mod ceiling;
mod collective;
mod delivery;
mod error;
mod groups;
pub mod histogram;
pub mod io;
mod kinds;
mod replay;
mod report;
mod stats;
pub mod text;
mod topology;
pub mod units;

pub use acceptance::{
    slowest, stragglers, ShortRow, SizeThreshold, Slowest, Straggler, StragglerTally, Thresholds,
    Verdict, STRAGGLER_FROM_BYTES, STRAGGLER_OVER_MEDIAN, STRAGGLER_SHARE,
};
pub use ceiling::{
    ceiling_from_rates, ceiling_from_topology, inter_node_share, pcie_lane_gbps, LinkCeiling, Tier,
};
pub use collective::{Expected, Layout};
pub use delivery::{Delivery, LinkReference, PeerAccess};
pub use error::SchemaError;
pub use groups::{GroupLayout, GroupResult};
pub use kinds::{
    Average, Backend, Benchmark, Collective, DataType, DeliveryStrategy, HostMemory, Placement,
    ReduceOp, RunStatus, Stop, Timing,
};
pub use replay::{Replay, ReplayCall, ReplayGroup, ReplayRankCall, SkippedOp};
pub use report::{
    AutoIters, BufferAllocator, CaseResult, Config, DeviceInfo, Environment, Histograms, Launch,
    NcclTestsFlags, RankInfo, RankStats, Registration, Report, RunInfo, TimeStats, Tool,
    TrafficSplit, TypesAndOps,
};
pub use stats::{nearest_rank, Summary};
pub use topology::{GpuTopology, Nic, NodeTopology};

/// The version written into every report and required of every report read.
pub const SCHEMA_VERSION: u32 = 1;
