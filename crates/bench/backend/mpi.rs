//! The MPI backend: host buffers and MPI collectives, timed per iteration with
//! a monotonic clock. It is what runs without GPUs (and in CI), and the
//! equivalent of PyTorch's CPU process groups.
use mpi::collective::SystemOperation;
use mpi::datatype::Equivalence;
use mpi::traits::*;
use schema::{Collective, DataType, DeviceInfo, Placement, ReduceOp, Timing};
use std::time::Instant;

use super::{with_element_type, Backend};
use crate::check::{CheckSpec, Element};
use crate::plan::{Case, Plan};
use crate::world::World;

/// Host send and receive buffers sized for the largest case, reused by all.
pub struct MpiBackend<'w> {
    world: &'w World,
    dtype: DataType,
    op: Option<ReduceOp>,
    root: u32,
    // u64 storage keeps every element type aligned; views are cast from it.
    send: Vec<u64>,
    recv: Vec<u64>,
}

impl<'w> MpiBackend<'w> {
    pub fn new(world: &'w World, plan: &Plan) -> anyhow::Result<MpiBackend<'w>> {
        let bytes = plan.max_buffer_count() * plan.dtype.size_bytes();
        check_host_memory(2 * bytes * u64::from(world.local_size), world.local_size)?;
        let words = usize::try_from(bytes.div_ceil(8))?;
        let allocate = || -> anyhow::Result<Vec<u64>> {
            let mut buffer = Vec::new();
            buffer.try_reserve_exact(words).map_err(|_| {
                crate::failure::Failure::Environment.error(format!(
                    "cannot allocate {} of host memory for -e/--max-bytes",
                    schema::units::format_bytes(bytes)
                ))
            })?;
            // Touch every page now, so first-touch faults never land in a timed loop.
            buffer.resize(words, 0);
            Ok(buffer)
        };
        Ok(MpiBackend {
            world,
            dtype: plan.dtype,
            op: plan.op,
            root: plan.root.unwrap_or(0),
            send: allocate()?,
            recv: allocate()?,
        })
    }

    /// One iteration: every collective call of the case, in order.
    fn iterate(&mut self, case: &Case, placement: Placement) {
        match case.collective {
            Collective::Broadcast => {
                // Broadcast moves bytes: no arithmetic, so any dtype travels as u8.
                let elt = self.dtype.size_bytes() as usize;
                let send: &[u8] = bytemuck::cast_slice(&self.send);
                let recv: &mut [u8] = bytemuck::cast_slice_mut(&mut self.recv);
                broadcast(self.world, self.root, case, elt, placement, send, recv);
            }
            _ => {
                let op = system_op(self.op.expect("all-reduce has an op"));
                let (world, send, recv) = (self.world, &self.send, &mut self.recv);
                match self.dtype {
                    DataType::F32 => all_reduce::<f32>(world, op, case, placement, send, recv),
                    DataType::F64 => all_reduce::<f64>(world, op, case, placement, send, recv),
                    DataType::I32 => all_reduce::<i32>(world, op, case, placement, send, recv),
                    DataType::I64 => all_reduce::<i64>(world, op, case, placement, send, recv),
                    DataType::U8 => all_reduce::<u8>(world, op, case, placement, send, recv),
                    DataType::I8 => all_reduce::<i8>(world, op, case, placement, send, recv),
                    other => {
                        unreachable!("{other} reductions are refused by the plan for --backend mpi")
                    }
                }
            }
        }
    }
}

/// Refuses buffers that would not fit in this node's available memory, where
/// allocating them would end in the kernel's OOM killer instead of an error.
fn check_host_memory(needed: u64, local_ranks: u32) -> anyhow::Result<()> {
    let available = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find_map(|line| line.strip_prefix("MemAvailable:"))
                .and_then(|rest| {
                    rest.trim()
                        .trim_end_matches("kB")
                        .trim()
                        .parse::<u64>()
                        .ok()
                })
                .map(|kib| kib * 1024)
        });
    match available {
        Some(available) if needed > available => Err(crate::failure::Failure::Environment.error(format!(
            "-e/--max-bytes needs {} of host memory on this node (send and receive buffers for {local_ranks} rank{}), but {} is available: lower -e/--max-bytes",
            schema::units::format_bytes(needed),
            if local_ranks == 1 { "" } else { "s" },
            schema::units::format_bytes(available)
        ))),
        _ => Ok(()),
    }
}

fn system_op(op: ReduceOp) -> SystemOperation {
    match op {
        ReduceOp::Sum => SystemOperation::sum(),
        ReduceOp::Prod => SystemOperation::product(),
        ReduceOp::Max => SystemOperation::max(),
        ReduceOp::Min => SystemOperation::min(),
        ReduceOp::Avg | ReduceOp::MulSum => unreachable!("refused by the plan for --backend mpi"),
    }
}

/// The element ranges `[start, end)` of each call of one iteration.
fn call_ranges(case: &Case) -> impl Iterator<Item = (usize, usize)> + '_ {
    case.call_counts().scan(0usize, |start, count| {
        let range = (*start, *start + count as usize);
        *start = range.1;
        Some(range)
    })
}

fn all_reduce<T: Equivalence + bytemuck::Pod>(
    world: &World,
    op: SystemOperation,
    case: &Case,
    placement: Placement,
    send: &[u64],
    recv: &mut [u64],
) {
    let send: &[T] = bytemuck::cast_slice(send);
    let recv: &mut [T] = bytemuck::cast_slice_mut(recv);
    for (start, end) in call_ranges(case) {
        match placement {
            Placement::Out => {
                world
                    .comm()
                    .all_reduce_into(&send[start..end], &mut recv[start..end], op)
            }
            Placement::In => {
                mpi_inplace::all_reduce_in_place(world.comm(), &mut recv[start..end], op)
            }
        }
    }
}

/// Out-of-place broadcast is NCCL's: the root's send buffer lands in every
/// rank's receive buffer, the root's included, so the root copies locally
/// before MPI_Bcast (which has only one buffer).
fn broadcast(
    world: &World,
    root: u32,
    case: &Case,
    elt: usize,
    placement: Placement,
    send: &[u8],
    recv: &mut [u8],
) {
    let root_process = world.comm().process_at_rank(root as i32);
    for (start, end) in call_ranges(case) {
        let (start, end) = (start * elt, end * elt);
        if placement == Placement::Out && world.rank == root {
            recv[start..end].copy_from_slice(&send[start..end]);
        }
        root_process.broadcast_into(&mut recv[start..end]);
    }
}

impl Backend for MpiBackend<'_> {
    fn warm_up(&mut self, case: &Case, placement: Placement, iters: u32) -> anyhow::Result<()> {
        for _ in 0..iters {
            self.iterate(case, placement);
        }
        Ok(())
    }

    fn synchronize(&mut self) -> anyhow::Result<()> {
        // MPI's blocking collectives have completed when they return.
        Ok(())
    }

    fn time(
        &mut self,
        case: &Case,
        placement: Placement,
        timing: Timing,
        samples_us: &mut [f64],
    ) -> anyhow::Result<f64> {
        let start = Instant::now();
        match timing {
            Timing::Events => {
                let mut previous = start;
                for sample in samples_us.iter_mut() {
                    self.iterate(case, placement);
                    let now = Instant::now();
                    *sample = now.duration_since(previous).as_secs_f64() * 1e6;
                    previous = now;
                }
            }
            Timing::Wall => {
                for _ in 0..samples_us.len() {
                    self.iterate(case, placement);
                }
            }
        }
        Ok(start.elapsed().as_secs_f64() * 1e6)
    }

    fn check(
        &mut self,
        case: &Case,
        placement: Placement,
        spec: &CheckSpec,
    ) -> anyhow::Result<u64> {
        let count = case.count as usize;
        with_element_type!(self.dtype, T => {
            prepare_check::<T>(spec, placement, &mut self.send, &mut self.recv, count);
            self.iterate(case, placement);
            Ok(spec.count_wrong(&bytemuck::cast_slice::<u64, T>(&self.recv)[..count]))
        })
    }

    fn device(&self) -> Option<DeviceInfo> {
        None
    }
}

/// Fills the buffers a check reads: the input where the collective takes it
/// from, and a sentinel everywhere the result must be written.
pub fn prepare_check<T: Element>(
    spec: &CheckSpec,
    placement: Placement,
    send: &mut [u64],
    recv: &mut [u64],
    count: usize,
) {
    let send: &mut [T] = &mut bytemuck::cast_slice_mut(send)[..count];
    let recv: &mut [T] = &mut bytemuck::cast_slice_mut(recv)[..count];
    recv.fill(T::from_small(251));
    let input_holder = spec.collective != Collective::Broadcast || spec.rank == spec.root;
    if input_holder {
        match placement {
            Placement::Out => spec.fill_input(send),
            Placement::In => spec.fill_input(recv),
        }
    }
}
