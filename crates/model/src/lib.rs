//! The training-step models behind `collbench-analyze ddp`, `fsdp`, `zero`,
//! `pipeline` and `plan`, all schedules on one timeline engine ([`engine`])
//! fed by a layer profile and measured collective curves.
//!
//! The crate root holds what every model shares: the engine, the layer
//! profile and its readers ([`read_profile_csv`], [`course`],
//! [`matching`]) and its scaling to another sequence length
//! ([`sequence`]), the collective curves ([`CommModel`], [`comm::Interp`],
//! [`fitted`]: the piecewise α–β fit of crate `fit`), gradient buckets
//! ([`buckets`], [`caps`]), the flag values ([`parse_cap`] and friends) and the
//! timeline picture ([`view`]). Each model is a room of its own beside the
//! others: [`ddp`] (PyTorch DDP's bucket size), [`shard`] (FSDP and
//! ZeRO), [`pipeline`] (GPipe, 1F1B, interleaved) and [`plan`] (tensor ×
//! pipeline × data parallelism, on the pipeline's schedule). The README
//! explains the models and what they ignore.
#![forbid(unsafe_code)]

pub mod buckets;
pub mod caps;
pub mod comm;
pub mod course;
mod csv;
pub mod ddp;
pub mod engine;
mod error;
pub mod estimate;
pub mod fitted;
pub mod matching;
mod options;
pub mod pipeline;
pub mod plan;
mod profile;
pub mod provenance;
pub mod sequence;
pub mod shard;
mod suggest;
pub mod unmeasured;
pub mod view;

pub use comm::{CommModel, CommPoints, SizeRange};
pub use error::DdpError;
pub use options::{
    parse_alias, parse_cap, parse_caps, parse_first_bucket, parse_gbps, parse_slowdown, Alias,
    CapSpec, CommModelKind, CommStat, FirstBucket, MissingTime, TimeStat,
};
pub use profile::{
    read_profile_csv, read_profile_csv_at, HeaderMeasurements, Layer, Profile, MAX_SYNC_WAIT_S,
};
