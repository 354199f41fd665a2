//! The safe layer against the real NCCL named by `COLLBENCH_TEST_NCCL_LIBRARY`
//! (CI pip-installs the `nvidia-nccl-cu12` wheel for it), without a GPU; and,
//! `#[ignore]`d, one-rank collectives on GPU 0 (`scripts/gpu-smoke.sh`).
//!
//! Without the variable the real-NCCL tests print a note and pass, except
//! under CI (`CI` set), where they fail rather than skip silently. The GPU test
//! uses the variable when set and the normal search otherwise.

use nccl::{Comm, DataType, Error, Group, ReduceOp, UniqueId, Version};
use std::sync::{Mutex, MutexGuard};

#[path = "../../nccl-sys/tests/common/mod.rs"]
mod common;

use common::{real_library, VAR};

/// Serialises the tests of this binary: the first one points the loader at the
/// test library by setting `COLLBENCH_NCCL_LIBRARY` (no other thread may be in
/// NCCL, which reads the environment, while it does), and NCCL calls of the
/// GPU test should not interleave with the others.
fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    let guard = LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(path) = std::env::var_os(VAR).filter(|v| !v.is_empty()) {
        std::env::set_var(nccl::sys::OVERRIDE_VAR, path);
    }
    guard
}

#[test]
fn loads_the_named_library_and_reads_its_version() {
    let _serial = serial();
    let Some(path) = real_library() else { return };
    let lib = nccl::library().unwrap();
    assert_eq!(lib.source(), &nccl::Candidate::Override(path));
    let version = nccl::version().unwrap();
    eprintln!("NCCL {version} from {}", lib.source());
    assert!(
        version >= Version::new(2, 18, 0),
        "NCCL {version} is older than 2.18"
    );
    assert!(
        version.major == 2 && version.minor < 100,
        "implausible NCCL version {version}"
    );
}

#[test]
fn unique_ids_need_no_gpu_and_differ() {
    let _serial = serial();
    if real_library().is_none() {
        return;
    }
    let a = UniqueId::new().unwrap();
    let b = UniqueId::new().unwrap();
    eprintln!("ids: {a:?} {b:?}");
    assert_ne!(a, b);
    assert_eq!(UniqueId::from_bytes(*a.as_bytes()), a);
}

#[test]
fn comm_init_without_a_gpu_is_a_one_line_error() {
    let _serial = serial();
    if real_library().is_none() {
        return;
    }
    // SAFETY: only asks whether libcuda can be loaded.
    if unsafe { cudarc::driver::sys::is_culib_present() } {
        eprintln!("note: a CUDA driver is present; the no-GPU error path cannot be checked here");
        return;
    }
    let id = UniqueId::new().unwrap();
    let err = Comm::init_rank(1, &id, 0).unwrap_err();
    let text = err.to_string();
    eprintln!("Comm::init_rank(1, id, 0) -> {text}");
    assert!(
        matches!(
            err,
            Error::Nccl {
                call: "ncclCommInitRank",
                ..
            }
        ),
        "{err:?}"
    );
    assert!(text.starts_with("ncclCommInitRank failed: "), "{text}");
    assert!(!text.contains('\n'), "not one line: {text:?}");
}

#[test]
fn an_empty_group_opens_and_closes() {
    let _serial = serial();
    if real_library().is_none() {
        return;
    }
    Group::start().unwrap().end().unwrap();
    nccl::group_start().unwrap();
    nccl::group_end().unwrap();
    let err = nccl::group_end().unwrap_err();
    eprintln!("unmatched ncclGroupEnd -> {err}");
    assert!(
        matches!(
            err,
            Error::Nccl {
                call: "ncclGroupEnd",
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
#[ignore = "needs a GPU"]
fn one_rank_collectives_on_gpu_0() {
    use cudarc::driver::{CudaContext, DevicePtr, DevicePtrMut};
    let _serial = serial();
    // SAFETY: only asks whether libcuda can be loaded; every other cudarc call
    // panics without it.
    assert!(
        unsafe { cudarc::driver::sys::is_culib_present() },
        "no CUDA driver (libcuda.so) on this machine; this test needs a GPU"
    );
    let ctx = CudaContext::new(0).unwrap();
    // SAFETY: before any allocation; we synchronize explicitly below.
    unsafe { ctx.disable_event_tracking() };
    let stream = ctx.new_stream().unwrap();
    let comm = Comm::init_rank(1, &UniqueId::new().unwrap(), 0).unwrap();
    assert_eq!((comm.count().unwrap(), comm.user_rank().unwrap()), (1, 0));
    assert_eq!(comm.cu_device().unwrap(), 0);

    let host = [1.5f32, -2.0, 3.25, 1e6];
    let send = stream.clone_htod(&host).unwrap();
    let mut recv = stream.alloc_zeros::<f32>(host.len()).unwrap();
    let mut bcast = stream.alloc_zeros::<f32>(host.len()).unwrap();
    // One output buffer each for reduce, all-gather, reduce-scatter, send/recv.
    let mut outputs: Vec<_> = (0..4)
        .map(|_| stream.alloc_zeros::<f32>(host.len()).unwrap())
        .collect();
    {
        let cu = stream.cu_stream();
        let n = host.len();
        let f32 = DataType::Float32;
        let (s, _s) = send.device_ptr(&stream);
        let (r, _r) = recv.device_ptr_mut(&stream);
        let (b, _b) = bcast.device_ptr_mut(&stream);
        let pointers: Vec<_> = outputs
            .iter_mut()
            .map(|o| o.device_ptr_mut(&stream))
            .collect();
        let o: Vec<_> = pointers.iter().map(|(p, _)| *p).collect();
        // SAFETY: every buffer holds host.len() f32 on this context and
        // outlives the synchronize below.
        unsafe {
            comm.all_reduce(s, r, n, f32, ReduceOp::Sum, cu).unwrap();
            let group = Group::start().unwrap();
            comm.all_reduce(r, r, n, f32, ReduceOp::Max, cu).unwrap();
            comm.broadcast(s, b, n, f32, 0, cu).unwrap();
            group.end().unwrap();
            comm.reduce(s, o[0], n, f32, ReduceOp::Sum, 0, cu).unwrap();
            comm.all_gather(s, o[1], n, f32, cu).unwrap();
            comm.reduce_scatter(s, o[2], n, f32, ReduceOp::Sum, cu)
                .unwrap();
            let group = Group::start().unwrap();
            comm.send(s, n, f32, 0, cu).unwrap();
            comm.recv(o[3], n, f32, 0, cu).unwrap();
            group.end().unwrap();
            // Out of range peers and roots are refused before NCCL sees them.
            assert!(comm.send(s, n, f32, usize::MAX, cu).is_err());
        }
        drop(pointers);
    }
    stream.synchronize().unwrap();
    comm.async_error().unwrap();
    // One rank: every reduction, gather and transfer gives back the input.
    assert_eq!(stream.clone_dtoh(&recv).unwrap(), host);
    assert_eq!(stream.clone_dtoh(&bcast).unwrap(), host);
    for output in &outputs {
        assert_eq!(stream.clone_dtoh(output).unwrap(), host);
    }
    comm.destroy().unwrap();
}

/// Without a GPU the newer entry points fail with an NCCL error, never a
/// crash: the bench relies on that to print one line and exit.
#[test]
fn memory_and_single_process_communicators_fail_cleanly_without_a_gpu() {
    let _serial = serial();
    if real_library().is_none() {
        return;
    }
    // SAFETY: only asks whether libcuda can be loaded.
    if unsafe { cudarc::driver::sys::is_culib_present() } {
        eprintln!("a CUDA driver is present; the GPU test covers these calls");
        return;
    }
    let memory = nccl::Memory::alloc(4096).unwrap_err();
    assert!(
        memory.to_string().starts_with("ncclMemAlloc failed"),
        "{memory}"
    );
    let comms = Comm::init_all(&[0]).unwrap_err();
    assert!(
        comms.to_string().starts_with("ncclCommInitAll failed"),
        "{comms}"
    );
}

#[test]
#[ignore = "needs a GPU"]
fn nccl_memory_registration_and_native_calls_on_gpu_0() {
    use cudarc::driver::CudaContext;
    let _serial = serial();
    let ctx = CudaContext::new(0).unwrap();
    ctx.bind_to_thread().unwrap();
    let stream = ctx.new_stream().unwrap();
    let mut comms = Comm::init_all(&[0]).unwrap();
    assert_eq!(comms.len(), 1);
    let mut comm = comms.pop().unwrap();
    assert_eq!((comm.count().unwrap(), comm.cu_device().unwrap()), (1, 0));

    let bytes = 1 << 20;
    let mut send = nccl::Memory::alloc(bytes).unwrap();
    let recv = nccl::Memory::alloc(bytes).unwrap();
    let mut zeros = vec![1u8; bytes];
    recv.read(0, &mut zeros).unwrap();
    assert!(
        zeros.iter().all(|&b| b == 0),
        "ncclMemAlloc memory is zeroed"
    );
    let data: Vec<u8> = (0..bytes).map(|i| (i % 251) as u8).collect();
    send.write(0, &data).unwrap();
    assert!(
        send.write(bytes - 1, &[0, 0]).is_err(),
        "writes past the end are refused"
    );
    // SAFETY: both allocations hold `bytes` on GPU 0 and outlive `comm`.
    unsafe {
        comm.register(send.device_ptr(), bytes).unwrap();
        comm.register(recv.device_ptr(), bytes).unwrap();
    }
    let version = nccl::version().unwrap();
    // Kept until after `comm.destroy()` below, which deregisters the window first.
    let window_buffer = (version >= Version::new(2, 27, 0)).then(|| {
        let mut memory = nccl::Memory::alloc(bytes).unwrap();
        memory.write(0, &data).unwrap();
        // SAFETY: as above; the window memory outlives `comm`.
        unsafe { comm.register_window(memory.device_ptr(), bytes) }.unwrap();
        memory
    });
    let cu = stream.cu_stream();
    // SAFETY: the buffers hold `bytes` on GPU 0 and outlive the synchronize.
    unsafe {
        comm.all_reduce(
            send.device_ptr(),
            recv.device_ptr(),
            bytes,
            DataType::Uint8,
            ReduceOp::Sum,
            cu,
        )
        .unwrap();
    }
    stream.synchronize().unwrap();
    let mut out = vec![0u8; bytes];
    recv.read(0, &mut out).unwrap();
    assert_eq!(out, data);
    if comm.has_native_all_to_all_gather_scatter() {
        let mut target = nccl::Memory::alloc(bytes).unwrap();
        target.write(0, &vec![0; bytes]).unwrap();
        // SAFETY: as above.
        unsafe {
            comm.all_to_all(
                send.device_ptr(),
                target.device_ptr(),
                bytes,
                DataType::Uint8,
                cu,
            )
            .unwrap();
        }
        stream.synchronize().unwrap();
        target.read(0, &mut out).unwrap();
        assert_eq!(out, data, "one rank's all-to-all copies its block");
    } else {
        eprintln!("NCCL {version} has no ncclAlltoAll; the grouped form is used");
    }
    comm.destroy().unwrap();
    drop(window_buffer);
}
