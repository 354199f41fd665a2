//! Integration tests of the `model` crate (one test binary; its modules are
//! below): the DDP bucket model against hand-computed answers on synthetic profiles, the
//! readers on fixtures in the real file formats, every malformed input,
//! whole runs through `run_to`, and the timeline engine's compute sharing.
mod bucket_model;
mod caps;
mod comm_points;
mod engine;
mod extrapolation;
mod malformed;
mod pipeline;
mod plan;
mod plot;
mod readers;
mod runs;
mod sequence;
mod shard;
mod shard_root;
mod timeline_view;
mod util;
