//! `collbench host-broadcast`: a host buffer delivered to every GPU this
//! process drives by several strategies, every byte checked, beside one
//! pinned host-to-GPU copy and one GPU-to-GPU copy measured in the same run.
pub mod devices;
pub mod measure;
mod nccl_broadcast;
pub mod pattern;
pub mod plan;
pub mod report;
pub mod run;
pub mod schedule;
pub mod strategies;
pub mod table;
