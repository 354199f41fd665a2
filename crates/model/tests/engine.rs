//! The timeline engine's compute sharing (`Interference::shared_compute`):
//! compute tasks of two streams that overlap run K times slower, spans
//! hand-computed; K = 1 is the run without it; tasks of one stream, quiet
//! tasks and communication do not count as sharing; with communication
//! running too, F and K multiply.
use model::engine::{Class, Dep, Interference, Schedule, Task};

fn shared(k: f64) -> Interference {
    Interference {
        shared_compute: k,
        ..Interference::NONE
    }
}

/// Two compute streams: `a` computes 1 s from 0; `b` waits 0.25 s (a
/// quiet task) and then computes 0.5 s.
fn two_streams() -> (Schedule, [usize; 3]) {
    let mut s = Schedule::new();
    let a = s.stream("rank 0");
    let b = s.stream("rank 1");
    let long = s.push(Task::new(a, Class::Compute, 1.0));
    let wait = s.push(Task::new(b, Class::Quiet, 0.25));
    let short = s.push(Task::new(b, Class::Compute, 0.5).after([Dep::End(wait)]));
    (s, [long, wait, short])
}

#[test]
fn overlapping_compute_of_two_streams_runs_k_times_slower() {
    let (s, [long, wait, short]) = two_streams();
    // K = 2: `a` alone until 0.25 s (0.75 s left); both at half speed
    // until `b`'s 0.5 s are done at 0.25 + 1 = 1.25 s (`a` did 0.5 s of
    // its work meanwhile, 0.25 s left); `a` alone again, ends at 1.5 s.
    let spans = s.run(shared(2.0)).unwrap();
    assert_eq!((spans[long].start_s, spans[long].end_s), (0.0, 1.5));
    assert_eq!((spans[wait].start_s, spans[wait].end_s), (0.0, 0.25));
    assert_eq!((spans[short].start_s, spans[short].end_s), (0.25, 1.25));
    // K = 1: each at its stand-alone time, bit for bit the unhindered run.
    let alone = s.run(shared(1.0)).unwrap();
    assert_eq!(alone, s.run(Interference::NONE).unwrap());
    assert_eq!((alone[long].start_s, alone[long].end_s), (0.0, 1.0));
    assert_eq!((alone[short].start_s, alone[short].end_s), (0.25, 0.75));
}

#[test]
fn one_streams_tasks_quiet_tasks_and_communication_do_not_share() {
    // Compute after compute on one stream, beside a quiet task and a
    // communication task on two others: nothing is slowed by K.
    let mut s = Schedule::new();
    let a = s.stream("compute");
    let q = s.stream("copies");
    let c = s.stream("comm");
    let first = s.push(Task::new(a, Class::Compute, 1.0));
    let second = s.push(Task::new(a, Class::Compute, 0.5));
    let quiet = s.push(Task::new(q, Class::Quiet, 2.0));
    let comm = s.push(Task::new(c, Class::Comm, 0.75));
    let spans = s.run(shared(4.0)).unwrap();
    assert_eq!(spans[first].end_s, 1.0);
    assert_eq!((spans[second].start_s, spans[second].end_s), (1.0, 1.5));
    assert_eq!(spans[quiet].end_s, 2.0);
    assert_eq!(spans[comm].end_s, 0.75);
}

#[test]
fn with_communication_running_too_the_factors_multiply() {
    // F = 2, K = 3, G = 1: two 1 s computes on two streams beside 1 s of
    // communication. Until the communication ends at 1 s the computes run
    // at 1/6 (1/6 s of work done, 5/6 left); then at 1/3 with each other:
    // 5/6 × 3 = 2.5 s more, ending at 3.5 s.
    let mut s = Schedule::new();
    let a = s.stream("rank 0");
    let b = s.stream("rank 1");
    let c = s.stream("comm");
    let x = s.push(Task::new(a, Class::Compute, 1.0));
    let y = s.push(Task::new(b, Class::Compute, 1.0));
    let m = s.push(Task::new(c, Class::Comm, 1.0));
    let spans = s
        .run(Interference {
            compute: 2.0,
            comm: 1.0,
            shared_compute: 3.0,
        })
        .unwrap();
    assert_eq!(spans[m].end_s, 1.0);
    for t in [x, y] {
        assert!((spans[t].end_s - 3.5).abs() < 1e-12, "{spans:?}");
    }
    // K = 1 with F and G: the overlap model alone (compute at 1/2 while
    // the communication runs, which runs at 1/4 beside it): compute ends
    // at 2 s, the communication, 0.5 s done by then, at 2.5 s.
    let spans = s.run(Interference::overlap(2.0, 4.0)).unwrap();
    assert_eq!(spans[x].end_s, 2.0);
    assert_eq!(spans[y].end_s, 2.0);
    assert!((spans[m].end_s - 2.5).abs() < 1e-12, "{spans:?}");
}
