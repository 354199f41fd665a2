//! The safe layer against the real NCCL named by `COLLBENCH_TEST_NCCL_LIBRARY`
//! (CI pip-installs the `nvidia-nccl-cu12` wheel for it), without a GPU; and,
//! `#[ignore]`d, one-rank collectives on GPU 0 (`scripts/gpu-smoke.sh`).
//!
//! Without the variable the real-NCCL tests print a note and pass, except
//! under CI (`CI` set), where they fail rather than skip silently. The GPU test
//! uses the variable when set and the normal search otherwise.

use nccl::{Comm, DataType, Error, Feature, Group, ReduceOp, UniqueId, Version};
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

/// `err` is the crate's refusal of `call` as misuse.
/// Every optional part is there exactly from the release the crate says
/// brought it, so that what collbench uses, falls back from or refuses
/// follows the version. CI runs this against the newest wheel and 2.18.3.
#[test]
fn features_follow_the_loaded_release() {
    let _serial = serial();
    if real_library().is_none() {
        return;
    }
    let lib = nccl::library().unwrap();
    let found = nccl::version().unwrap();
    eprintln!("NCCL {found}");
    for feature in Feature::ALL {
        let expected = found >= feature.since();
        assert_eq!(
            feature.in_library(lib),
            expected,
            "{feature:?} ({}) in NCCL {found}",
            feature.functions()
        );
        match feature.require() {
            Ok(()) => assert!(expected),
            Err(err) => {
                assert!(!expected);
                assert!(matches!(err, Error::Unsupported { .. }), "{err:?}");
                let text = err.to_string();
                assert_eq!(text.lines().count(), 1, "{text}");
                assert!(
                    text.contains(&format!("NCCL >= {}", feature.since())),
                    "{text}"
                );
                assert!(
                    text.ends_with(&format!("the loaded NCCL is {found}")),
                    "{text}"
                );
            }
        }
    }
    let allocator = nccl::Allocator::preferred().unwrap();
    if found >= Version::new(2, 19, 0) {
        assert_eq!(allocator, nccl::Allocator::NcclMemAlloc);
    } else {
        assert_eq!(allocator, nccl::Allocator::CuMemAlloc);
    }
}

fn assert_usage(err: &Error, call: &str) {
    assert!(
        matches!(err, Error::Usage { call: c, .. } if *c == call),
        "expected a usage error from {call}, got {err:?}"
    );
}

#[test]
fn groups_open_and_close_and_do_not_nest() {
    let _serial = serial();
    if real_library().is_none() {
        return;
    }
    Group::start().unwrap().end().unwrap();
    let outer = Group::start().unwrap();
    let err = Group::start().unwrap_err();
    eprintln!("a second group -> {err}");
    assert_usage(&err, "ncclGroupStart");
    // Collectives and captures are refused inside a group too, before any
    // buffer or GPU is looked at.
    let err = nccl::launch(|_| Ok(())).unwrap_err();
    assert_usage(&err, "nccl::launch");
    let err = nccl::capture(&[], |_| Ok(())).map(|_| ()).unwrap_err();
    assert_usage(&err, "nccl::capture");
    // Windows are registered in a group of their own: NCCL writes each
    // handle when that group ends.
    let err = Comm::register_windows(&mut []).unwrap_err();
    assert_usage(&err, "ncclCommWindowRegister");
    outer.end().unwrap();
    // With the group closed, an empty launch is an empty group.
    nccl::launch(|_| Ok(())).unwrap();
}

/// A GPU 0 context without cudarc's event tracking, and a stream of its own.
fn gpu_0() -> (
    std::sync::Arc<cudarc::driver::CudaContext>,
    std::sync::Arc<cudarc::driver::CudaStream>,
) {
    // SAFETY: only asks whether libcuda can be loaded; every other cudarc call
    // panics without it.
    assert!(
        unsafe { cudarc::driver::sys::is_culib_present() },
        "no CUDA driver (libcuda.so) on this machine; this test needs a GPU"
    );
    let ctx = cudarc::driver::CudaContext::new(0).unwrap();
    // SAFETY: before any allocation; every buffer here is used on one stream.
    unsafe { ctx.disable_event_tracking() };
    let stream = ctx.new_stream().unwrap();
    (ctx, stream)
}

#[test]
#[ignore = "needs a GPU"]
fn one_rank_collectives_on_gpu_0() {
    use nccl::Region;
    let _serial = serial();
    let (_ctx, stream) = gpu_0();
    let comm = Comm::init_rank(1, &UniqueId::new().unwrap(), 0).unwrap();
    assert_eq!((comm.count().unwrap(), comm.user_rank().unwrap()), (1, 0));
    assert_eq!(comm.cu_device().unwrap(), 0);

    let host = [1.5f32, -2.0, 3.25, 1e6];
    let bytes: Vec<u8> = host.iter().flat_map(|x| x.to_ne_bytes()).collect();
    let send = stream.clone_htod(&bytes).unwrap();
    let recv = stream.alloc_zeros::<u8>(bytes.len()).unwrap();
    let bcast = stream.alloc_zeros::<u8>(bytes.len()).unwrap();
    // One output buffer each for reduce, all-gather, reduce-scatter, send/recv.
    let outputs: Vec<_> = (0..4)
        .map(|_| stream.alloc_zeros::<u8>(bytes.len()).unwrap())
        .collect();
    let (n, f32) = (host.len(), DataType::Float32);
    let s = Region::of_cuda(&send).unwrap();
    let r = Region::of_cuda(&recv).unwrap();
    let b = Region::of_cuda(&bcast).unwrap();
    let o: Vec<_> = outputs
        .iter()
        .map(|o| Region::of_cuda(o).unwrap())
        .collect();
    nccl::launch(|calls| calls.all_reduce(&comm, s, r, n, f32, ReduceOp::Sum)).unwrap();
    nccl::launch(|calls| {
        calls.all_reduce(&comm, r, r, n, f32, ReduceOp::Max)?;
        calls.broadcast(&comm, s, b, n, f32, 0)
    })
    .unwrap();
    nccl::launch(|calls| {
        calls.reduce(&comm, s, o[0], n, f32, ReduceOp::Sum, 0)?;
        calls.all_gather(&comm, s, o[1], n, f32)?;
        calls.reduce_scatter(&comm, s, o[2], n, f32, ReduceOp::Sum)?;
        calls.send(&comm, s, n, f32, 0)?;
        calls.recv(&comm, o[3], n, f32, 0)
    })
    .unwrap();
    // Calls that would touch memory outside their regions, or a rank that
    // does not fit a C int, are refused before NCCL sees them.
    let refused = [
        nccl::launch(|calls| calls.all_reduce(&comm, s, r, n + 1, f32, ReduceOp::Sum)),
        nccl::launch(|calls| calls.all_reduce(&comm, s.skip(4)?, r, n, f32, ReduceOp::Sum)),
        nccl::launch(|calls| calls.recv(&comm, r, usize::MAX / 2, f32, 0)),
        nccl::launch(|calls| calls.send(&comm, s, n, f32, usize::MAX)),
    ];
    for err in refused {
        let err = err.unwrap_err();
        eprintln!("refused: {err}");
        assert!(matches!(err, Error::Argument { .. }), "{err:?}");
    }
    assert!(s.skip(bytes.len() + 1).is_err(), "regions do not grow");
    // A second stream's buffer cannot be paired with the first's.
    let other = stream.context().new_stream().unwrap();
    let elsewhere = other.alloc_zeros::<u8>(bytes.len()).unwrap();
    let err = nccl::launch(|calls| {
        let e = Region::of_cuda(&elsewhere)?;
        calls.all_reduce(&comm, s, e, n, f32, ReduceOp::Sum)
    })
    .unwrap_err();
    assert!(matches!(err, Error::Usage { .. }), "{err:?}");
    stream.synchronize().unwrap();
    comm.async_error().unwrap();
    // One rank: every reduction, gather and transfer gives back the input.
    assert_eq!(stream.clone_dtoh(&recv).unwrap(), bytes);
    assert_eq!(stream.clone_dtoh(&bcast).unwrap(), bytes);
    for output in &outputs {
        assert_eq!(stream.clone_dtoh(output).unwrap(), bytes);
    }
    comm.destroy().unwrap();
}

/// Without a GPU the newer entry points fail with an NCCL error, never a
/// crash: the bench relies on that to print one line and exit.
#[test]
fn single_process_communicators_fail_cleanly_without_a_gpu() {
    let _serial = serial();
    if real_library().is_none() {
        return;
    }
    // SAFETY: only asks whether libcuda can be loaded.
    if unsafe { cudarc::driver::sys::is_culib_present() } {
        eprintln!("a CUDA driver is present; the GPU test covers these calls");
        return;
    }
    let comms = Comm::init_all(&[0]).unwrap_err();
    assert!(
        comms.to_string().starts_with("ncclCommInitAll failed"),
        "{comms}"
    );
}

#[test]
#[ignore = "needs a GPU"]
fn nccl_memory_registration_native_calls_and_graphs_on_gpu_0() {
    let _serial = serial();
    let (_ctx, stream) = gpu_0();
    let mut comms = Comm::init_all(&[0]).unwrap();
    assert_eq!(comms.len(), 1);
    let mut comm = comms.pop().unwrap();
    assert_eq!((comm.count().unwrap(), comm.cu_device().unwrap()), (1, 0));

    let err = nccl::Memory::alloc(&stream, 0).unwrap_err();
    assert!(
        matches!(err, Error::Argument { what: "bytes", .. }),
        "{err:?}"
    );
    let bytes = 1 << 20;
    let send = nccl::Memory::alloc(&stream, bytes).unwrap();
    let recv = nccl::Memory::alloc(&stream, bytes).unwrap();
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
    comm.register(&send).unwrap();
    comm.register(&recv).unwrap();
    let version = nccl::version().unwrap();
    if version >= Version::new(2, 27, 0) {
        // Dropped at once: the communicator keeps the memory until it
        // deregisters the window in `destroy` below.
        let window = nccl::Memory::alloc(&stream, bytes).unwrap();
        comm.register_window(&window).unwrap();
    }
    let u8 = DataType::Uint8;
    let (s, r) = (send.region(), recv.region());
    nccl::launch(|calls| calls.all_reduce(&comm, s, r, bytes, u8, ReduceOp::Sum)).unwrap();
    let mut out = vec![0u8; bytes];
    recv.read(0, &mut out).unwrap();
    assert_eq!(out, data);
    // NCCL's own estimate, where it has one: none for a one-rank
    // communicator (NCCL runs no algorithm for it: its first GPU run, NCCL
    // 2.28.3 on an H100, gave none at every size) and for send/receive,
    // positive for a collective of several ranks; nothing run either way.
    // Several ranks' estimates are checked by gpu-smoke.sh's shared run.
    let estimated = nccl::estimate(|calls| calls.all_reduce(&comm, s, r, bytes, u8, ReduceOp::Sum));
    let p2p = nccl::estimate(|calls| {
        calls.send(&comm, s, bytes, u8, 0)?;
        calls.recv(&comm, r, bytes, u8, 0)
    });
    if nccl::Feature::GroupSimulate.available() {
        match estimated.unwrap() {
            Some(us) => assert!(us > 0.0 && us < 1e6, "{us}"),
            None => assert_eq!(comm.count().unwrap(), 1, "only one rank has no estimate"),
        }
        assert_eq!(p2p.unwrap(), None);
    } else {
        assert!(matches!(estimated, Err(Error::Unsupported { .. })));
    }
    // cuMemAlloc memory, what an NCCL older than 2.19 gets, works the same.
    let legacy = nccl::Memory::alloc_with(nccl::Allocator::CuMemAlloc, &stream, bytes).unwrap();
    assert_eq!(legacy.allocator(), nccl::Allocator::CuMemAlloc);
    nccl::launch(|calls| calls.all_reduce(&comm, s, legacy.region(), bytes, u8, ReduceOp::Sum))
        .unwrap();
    legacy.read(0, &mut out).unwrap();
    assert_eq!(out, data);
    if comm.has_native_all_to_all_gather_scatter() {
        let target = nccl::Memory::alloc(&stream, bytes).unwrap();
        nccl::launch(|calls| calls.all_to_all(&comm, s, target.region(), bytes, u8)).unwrap();
        target.read(0, &mut out).unwrap();
        assert_eq!(out, data, "one rank's all-to-all copies its block");
    } else {
        eprintln!("NCCL {version} has no ncclAlltoAll; the grouped form is used");
    }

    // A graph of two broadcasts, run three times; calls on the stream while
    // cudarc captures it outside nccl::capture are refused.
    let copy = nccl::Memory::alloc(&stream, bytes).unwrap();
    let graphs = nccl::capture(&[&stream], |capture| {
        for _ in 0..2 {
            capture.launch(|calls| calls.broadcast(&comm, s, copy.region(), bytes, u8, 0))?;
        }
        Ok(())
    })
    .unwrap();
    graphs.upload().unwrap();
    graphs.launch(3).unwrap();
    stream.synchronize().unwrap();
    copy.read(0, &mut out).unwrap();
    assert_eq!(out, data, "the captured broadcasts ran");
    drop(graphs);
    stream
        .begin_capture(
            cudarc::driver::sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
        )
        .unwrap();
    let err = nccl::launch(|calls| calls.broadcast(&comm, s, r, bytes, u8, 0)).unwrap_err();
    assert_usage(&err, "nccl::launch");
    // The launch made no NCCL call at all: the foreign capture goes on,
    // ends with a graph that holds nothing, and the communicator works.
    let graph = stream
        .end_capture(cudarc::driver::sys::CUgraphInstantiate_flags(0))
        .expect("the foreign capture was left intact");
    if let Some(graph) = graph {
        let mut nodes = 0usize;
        // SAFETY: the graph is live; with a null array the call only writes the count.
        unsafe {
            cudarc::driver::sys::cuGraphGetNodes(graph.cu_graph(), std::ptr::null_mut(), &mut nodes)
        }
        .result()
        .unwrap();
        assert_eq!(nodes, 0, "the foreign graph recorded no NCCL work");
    }
    copy.write(0, &vec![0u8; bytes]).unwrap();
    nccl::launch(|calls| calls.broadcast(&comm, s, copy.region(), bytes, u8, 0)).unwrap();
    copy.read(0, &mut out).unwrap();
    assert_eq!(out, data, "the communicator works after the refused launch");
    stream.synchronize().unwrap();
    comm.destroy().unwrap();
}
