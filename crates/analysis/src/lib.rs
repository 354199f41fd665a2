//! The library behind `collbench-analyze`.
//!
//! The library behind `collbench-analyze`: loading every supported input into
//! [`schema::Report`]s, grouping results into series, the piecewise α–β fit,
//! report comparison, text tables and SVG plots.
//!
//! Guide: [`load::load_any`] reads a collbench report, nccl-tests stdout,
//! nccl-tests `-J` JSON or the course CSV (detected by content);
//! [`series::group_series`] turns reports into (bytes, µs) points per
//! (backend, collective, dtype, world size, placement); [`fit::fit_points`]
//! fits them; [`compare::compare`] matches two reports size by size;
//! [`plot::render_svg`] draws them. [`stat::Stat`] picks which summary of
//! each size's iterations is used; [`spread`] says when the mean misleads
//! and how uncertain a statistic is. [`percentile`] reads any percentile
//! back from a report's histograms; [`soak::Soak`] lays a soak run
//! (`collbench -N`) out over its cycles and flags the slow ones.
//! [`html::escape`] and [`render::Table::html`] put text and tables on the
//! `report` page; [`plot::embed::embed_svg`] admits only SVG that these
//! plots drew.
#![forbid(unsafe_code)]

pub mod compare;
mod error;
pub mod html;
/// The piecewise α–β fit, which lives in its own crate (crate `model` uses it too);
/// re-exported so that `analysis::fit` names it.
pub use fit;
mod import;
mod input;
pub mod load;
pub mod percentile;
pub mod plot;
pub mod render;
pub mod scale;
pub mod series;
pub mod soak;
pub mod spread;
pub mod stat;
mod timestamp;

pub use error::ImportError;
pub use load::{load_any, merge_runs, ImportOptions, Loaded, Offered, SourceFormat};

#[cfg(test)]
mod fuzz_tests;
