//! The timeline engine every training-step model runs on: tasks on streams
//! (one compute stream, one or more communication streams), each stream
//! running its tasks one at a time in the order they were issued, a task
//! starting once the tasks it depends on have started or ended. Compute and
//! communication that overlap slow each other by constant factors, and so
//! may compute tasks of different streams that overlap (ranks sharing one
//! machine's compute).
//!
//! DDP's backward pass ([`crate::timeline`]) and the sharded strategies
//! ([`crate::shard`]) are schedules built on this one simulator; a pipeline
//! schedule would be another. Tasks may also allocate and free memory when
//! they start and end, so a schedule's memory over time comes out of the
//! same run.
use std::fmt;

/// Index of a task in its [`Schedule`].
pub type TaskId = usize;

/// Index of a stream in its [`Schedule`].
pub type StreamId = usize;

/// What a task competes for while it overlaps others.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Runs F times slower while communication runs, and K times slower
    /// while a compute task of another stream runs.
    Compute,
    /// Runs G times slower while compute runs.
    Comm,
    /// Neither slows nor is slowed (e.g. DDP's copies back, modelled at
    /// their own measured speed).
    Quiet,
}

/// A task may start only after another has started, or ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dep {
    Start(TaskId),
    End(TaskId),
}

/// One block of work on one stream.
#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    pub stream: StreamId,
    pub class: Class,
    /// Stand-alone duration in seconds (nothing else running).
    pub work_s: f64,
    pub deps: Vec<Dep>,
    /// Bytes allocated when the task starts (negative: freed).
    pub memory_at_start: i64,
    /// Bytes allocated when the task ends (negative: freed).
    pub memory_at_end: i64,
}

impl Task {
    /// A task of `work_s` seconds on `stream`, depending on nothing and
    /// allocating nothing.
    pub fn new(stream: StreamId, class: Class, work_s: f64) -> Task {
        Task {
            stream,
            class,
            work_s,
            deps: Vec::new(),
            memory_at_start: 0,
            memory_at_end: 0,
        }
    }

    /// The same task depending on `deps` too.
    pub fn after(mut self, deps: impl IntoIterator<Item = Dep>) -> Task {
        self.deps.extend(deps);
        self
    }

    /// The same task allocating `at_start` bytes when it starts and
    /// `at_end` when it ends (negative: frees).
    pub fn memory(mut self, at_start: i64, at_end: i64) -> Task {
        // Saturating: a hostile profile may give bytes past 2^63.
        self.memory_at_start = self.memory_at_start.saturating_add(at_start);
        self.memory_at_end = self.memory_at_end.saturating_add(at_end);
        self
    }
}

/// How compute and communication slow each other while both run, and
/// compute tasks of different streams while they overlap.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interference {
    /// Compute runs this many times slower while communication runs (≥ 1).
    pub compute: f64,
    /// Communication runs this many times slower while compute runs (≥ 1).
    pub comm: f64,
    /// Compute runs this many times slower while a compute task of another
    /// stream runs (≥ 1): compute streams that share one machine's cores
    /// or one GPU (ranks of a CPU training job). 1 for schedules whose
    /// compute streams are separate devices. With communication running
    /// too, the two factors multiply.
    pub shared_compute: f64,
}

impl Interference {
    /// Nothing slows anything.
    pub const NONE: Interference = Interference {
        compute: 1.0,
        comm: 1.0,
        shared_compute: 1.0,
    };

    /// Compute and communication slow each other by `compute` and `comm`;
    /// compute streams do not share.
    pub fn overlap(compute: f64, comm: f64) -> Interference {
        Interference {
            compute,
            comm,
            ..Interference::NONE
        }
    }
}

/// When a task ran.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Span {
    pub start_s: f64,
    pub end_s: f64,
}

/// Why a schedule could not run.
#[derive(Debug, Clone, PartialEq)]
pub enum RunError {
    /// The tasks never all finish: this one, the first that could not
    /// start, waits on tasks that wait on it.
    Deadlock { task: TaskId },
    /// A task's stand-alone time is not a finite number of seconds ≥ 0.
    BadWork { task: TaskId, work_s: f64 },
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::Deadlock { task } => write!(
                f,
                "the schedule deadlocks: task {task} waits on tasks that wait on it"
            ),
            RunError::BadWork { task, work_s } => write!(
                f,
                "task {task} takes {work_s} s: not a finite time of 0 s or more"
            ),
        }
    }
}

/// Streams and the tasks issued to them, in issue order.
#[derive(Debug, Clone, Default)]
pub struct Schedule {
    stream_names: Vec<String>,
    tasks: Vec<Task>,
    by_stream: Vec<Vec<TaskId>>,
    /// Who waits on whom, made by the first run after the last push and
    /// kept for the next (a schedule run again with other times).
    waiters: std::cell::OnceCell<Waiters>,
}

impl Schedule {
    pub fn new() -> Schedule {
        Schedule::default()
    }

    /// Adds a stream named `name`.
    pub fn stream(&mut self, name: &str) -> StreamId {
        self.stream_names.push(name.to_string());
        self.by_stream.push(Vec::new());
        self.stream_names.len() - 1
    }

    /// Issues `task` on its stream, after every task issued there before.
    pub fn push(&mut self, task: Task) -> TaskId {
        self.waiters.take();
        let id = self.tasks.len();
        self.by_stream[task.stream].push(id);
        self.tasks.push(task);
        id
    }

    pub fn tasks(&self) -> &[Task] {
        &self.tasks
    }

    /// Gives task `id` (one of this schedule's) another stand-alone time:
    /// the same schedule run again with some tasks made free, as `plan`
    /// runs a step again with its sends free, without building it again.
    pub fn set_work_s(&mut self, id: TaskId, work_s: f64) {
        if let Some(task) = self.tasks.get_mut(id) {
            task.work_s = work_s;
        }
    }

    pub fn stream_names(&self) -> &[String] {
        &self.stream_names
    }

    /// Simulates the schedule: when each task starts and ends.
    ///
    /// Between events (a task starting or ending) every running task
    /// advances at its rate: compute at 1, divided by F while some
    /// communication runs and by K (`shared_compute`) while a compute task
    /// of another stream runs; communication at 1, or 1/G while some
    /// compute runs; quiet tasks at 1. Communication streams do not slow
    /// each other. A stream runs one task at a time, so two compute tasks
    /// running at once are always on two streams.
    pub fn run(&self, interference: Interference) -> Result<Vec<Span>, RunError> {
        if interference.compute == 1.0
            && interference.comm == 1.0
            && interference.shared_compute == 1.0
        {
            self.check_work()?;
            return self.run_unhindered();
        }
        self.run_events(interference)
    }

    /// Fails on a task whose time is NaN, infinite or negative.
    fn check_work(&self) -> Result<(), RunError> {
        match self
            .tasks
            .iter()
            .enumerate()
            .find(|(_, t)| !(t.work_s.is_finite() && t.work_s >= 0.0))
        {
            Some((task, t)) => Err(RunError::BadWork {
                task,
                work_s: t.work_s,
            }),
            None => Ok(()),
        }
    }

    /// The run when nothing slows anything (every rate 1): each task
    /// starts once its stream is free and its dependencies are met, so its
    /// times follow from theirs in one pass over the tasks and their
    /// dependencies, with no clock stepping event by event over every
    /// stream. The same spans as [`Self::run_events`] gives.
    fn run_unhindered(&self) -> Result<Vec<Span>, RunError> {
        let n = self.tasks.len();
        let waiters = self.waiters.get_or_init(|| Waiters::of(&self.tasks));
        let mut unmet: Vec<usize> = self.tasks.iter().map(|t| t.deps.len()).collect();
        // The latest time a met dependency allows each task to start.
        let mut ready_at = vec![0.0f64; n];
        let mut spans: Vec<Option<Span>> = vec![None; n];
        let mut cursor = vec![0usize; self.by_stream.len()];
        let mut free_at = vec![0.0f64; self.by_stream.len()];
        let mut to_visit: Vec<usize> = (0..self.by_stream.len()).collect();
        while let Some(s) = to_visit.pop() {
            let queue = &self.by_stream[s];
            while cursor[s] < queue.len() {
                let id = queue[cursor[s]];
                if unmet[id] > 0 {
                    break;
                }
                let start_s = free_at[s].max(ready_at[id]);
                let end_s = start_s + self.tasks[id].work_s;
                spans[id] = Some(Span { start_s, end_s });
                free_at[s] = end_s;
                cursor[s] += 1;
                for (kind, at) in [(Waiters::START, start_s), (Waiters::END, end_s)] {
                    for &waiter in waiters.of_task(kind, id) {
                        ready_at[waiter] = ready_at[waiter].max(at);
                        unmet[waiter] -= 1;
                        if unmet[waiter] == 0 {
                            to_visit.push(self.tasks[waiter].stream);
                        }
                    }
                }
            }
        }
        if let Some(id) = (0..n).find(|&id| spans[id].is_none()) {
            return Err(RunError::Deadlock { task: id });
        }
        Ok(spans.into_iter().flatten().collect())
    }

    /// The run stepped from event to event, every running task advancing
    /// at its rate (see [`Self::run`]).
    fn run_events(&self, interference: Interference) -> Result<Vec<Span>, RunError> {
        let n = self.tasks.len();
        // A NaN or infinite time would never end, or end everything at once.
        self.check_work()?;
        let mut start: Vec<Option<f64>> = vec![None; n];
        let mut end: Vec<Option<f64>> = vec![None; n];
        // Each task's dependencies not yet met, and who waits on each
        // task's start and end: a start or an end meets its waiters' in
        // constant time each, so a task waiting on thousands (the
        // optimizer step on every gradient collective) costs nothing while
        // it waits.
        let mut unmet: Vec<usize> = self.tasks.iter().map(|t| t.deps.len()).collect();
        let waiters = self.waiters.get_or_init(|| Waiters::of(&self.tasks));
        let mut cursor = vec![0usize; self.by_stream.len()];
        // Per stream: the task running and its stand-alone seconds left.
        let mut running: Vec<Option<(TaskId, f64)>> = vec![None; self.by_stream.len()];
        let mut t = 0.0f64;
        loop {
            // Start whatever can start now; a start may release others.
            let mut progressed = true;
            while progressed {
                progressed = false;
                for (s, queue) in self.by_stream.iter().enumerate() {
                    while running[s].is_none() && cursor[s] < queue.len() {
                        let id = queue[cursor[s]];
                        if unmet[id] > 0 {
                            break;
                        }
                        start[id] = Some(t);
                        waiters.meet(Waiters::START, id, &mut unmet);
                        cursor[s] += 1;
                        progressed = true;
                        let work = self.tasks[id].work_s;
                        if work > 0.0 {
                            running[s] = Some((id, work));
                        } else {
                            end[id] = Some(t);
                            waiters.meet(Waiters::END, id, &mut unmet);
                        }
                    }
                }
            }
            let count = |class: Class| {
                running
                    .iter()
                    .flatten()
                    .filter(|&&(id, _)| self.tasks[id].class == class)
                    .count()
            };
            let (computing, communicating) = (count(Class::Compute), count(Class::Comm) > 0);
            // Each compute task's slowdown: F while communication runs, K
            // while another compute task (on another stream) runs. With K
            // = 1 the product is F (or 1) exactly: the rates, and so every
            // span, are those of the engine without the factor, bit for bit.
            let compute_rate = 1.0
                / (if communicating {
                    interference.compute
                } else {
                    1.0
                } * if computing > 1 {
                    interference.shared_compute
                } else {
                    1.0
                });
            let rate = |class: Class| match class {
                Class::Compute => compute_rate,
                Class::Comm if computing > 0 => 1.0 / interference.comm,
                _ => 1.0,
            };
            // Seconds until the first running task ends.
            let Some(dt) = running
                .iter()
                .flatten()
                .map(|&(id, left)| left / rate(self.tasks[id].class))
                .min_by(f64::total_cmp)
            else {
                break;
            };
            t += dt;
            for slot in running.iter_mut() {
                let Some((id, left)) = *slot else { continue };
                let r = rate(self.tasks[id].class);
                if left / r <= dt * (1.0 + 1e-12) {
                    end[id] = Some(t);
                    waiters.meet(Waiters::END, id, &mut unmet);
                    *slot = None;
                } else {
                    *slot = Some((id, left - dt * r));
                }
            }
        }
        if let Some(id) = (0..n).find(|&id| end[id].is_none()) {
            return Err(RunError::Deadlock { task: id });
        }
        Ok(start
            .into_iter()
            .zip(end)
            .map(|(s, e)| Span {
                start_s: s.unwrap_or(0.0),
                end_s: e.unwrap_or(0.0),
            })
            .collect())
    }

    /// Memory over the run: the bytes allocated by tasks since the start
    /// (on top of whatever was resident before), as (time, bytes) after
    /// each change, frees at an instant taken before allocations there.
    pub fn memory_over_time(&self, spans: &[Span]) -> Vec<(f64, i64)> {
        let deltas: Vec<(i64, i64)> = self
            .tasks
            .iter()
            .map(|t| (t.memory_at_start, t.memory_at_end))
            .collect();
        levels_over_time(spans, &deltas)
    }
}

/// Who waits on each task's start and on its end, as two flat lists
/// indexed by task (offsets into one array each).
#[derive(Debug, Clone)]
struct Waiters {
    /// `[START]` and `[END]`: offsets per task, then the waiting tasks.
    offsets: [Vec<usize>; 2],
    tasks: [Vec<TaskId>; 2],
}

impl Waiters {
    const START: usize = 0;
    const END: usize = 1;

    /// The waiters of every task of `tasks`. A dependency on a task that
    /// does not exist is met by nothing, so its task never starts (a
    /// deadlock, reported as such).
    fn of(tasks: &[Task]) -> Waiters {
        let n = tasks.len();
        let on = |dep: &Dep| match *dep {
            Dep::Start(other) => (Waiters::START, other),
            Dep::End(other) => (Waiters::END, other),
        };
        let mut counts = [vec![0usize; n + 1], vec![0usize; n + 1]];
        for task in tasks {
            for (kind, other) in task.deps.iter().map(on) {
                if other < n {
                    counts[kind][other + 1] += 1;
                }
            }
        }
        for kind in [Waiters::START, Waiters::END] {
            for i in 0..n {
                counts[kind][i + 1] += counts[kind][i];
            }
        }
        let offsets = counts.clone();
        let mut next = counts;
        let mut waiting = [vec![0; offsets[0][n]], vec![0; offsets[1][n]]];
        for (id, task) in tasks.iter().enumerate() {
            for (kind, other) in task.deps.iter().map(on) {
                if other < n {
                    waiting[kind][next[kind][other]] = id;
                    next[kind][other] += 1;
                }
            }
        }
        Waiters {
            offsets,
            tasks: waiting,
        }
    }

    /// The tasks waiting on task `id`'s start (`kind` START) or end (END).
    fn of_task(&self, kind: usize, id: TaskId) -> &[TaskId] {
        &self.tasks[kind][self.offsets[kind][id]..self.offsets[kind][id + 1]]
    }

    /// Task `id` started (`kind` START) or ended (END): one dependency of
    /// each of its waiters is met.
    fn meet(&self, kind: usize, id: TaskId, unmet: &mut [usize]) {
        let range = self.offsets[kind][id]..self.offsets[kind][id + 1];
        for &waiter in &self.tasks[kind][range] {
            unmet[waiter] -= 1;
        }
    }
}

/// A level changed by `deltas[i]` (at start, at end) of each task `i` of a
/// run: (time, level) after each change. At one instant decreases are taken
/// before increases (one task's memory handed to the next), and the end of
/// a task that takes no time after both (what it allocates for its own
/// duration, such as the optimizer step's temporaries, is counted).
pub fn levels_over_time(spans: &[Span], deltas: &[(i64, i64)]) -> Vec<(f64, i64)> {
    // (time, order at that instant, delta)
    let mut events: Vec<(f64, u8, i64)> = Vec::new();
    for (span, &(at_start, at_end)) in spans.iter().zip(deltas) {
        let instant = span.end_s <= span.start_s;
        for (time, delta, is_end) in [(span.start_s, at_start, false), (span.end_s, at_end, true)] {
            let order = match (is_end && instant, delta > 0) {
                (true, _) => 2,
                (false, increase) => u8::from(increase),
            };
            if delta != 0 {
                events.push((time, order, delta));
            }
        }
    }
    events.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let mut level = 0i64;
    events
        .into_iter()
        .map(|(time, _, delta)| {
            level = level.saturating_add(delta);
            (time, level)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Schedules of every shape (streams, times of 0 included, deps on
    /// starts and ends of earlier tasks) run alike both ways when nothing
    /// slows anything, and a cycle is a deadlock both ways.
    #[test]
    fn the_one_pass_run_is_the_event_run_when_nothing_slows_anything() {
        // A small linear congruential generator: the same schedules every run.
        let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = |below: u64| {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            (seed >> 33) % below.max(1)
        };
        for _ in 0..200 {
            let mut s = Schedule::new();
            let streams: Vec<StreamId> = (0..1 + next(5))
                .map(|i| s.stream(&format!("{i}")))
                .collect();
            let n = 1 + next(40) as usize;
            for id in 0..n {
                let stream = streams[next(streams.len() as u64) as usize];
                let work = if next(4) == 0 {
                    0.0
                } else {
                    next(1000) as f64 * 1e-4
                };
                let deps: Vec<Dep> = (0..next(3))
                    .filter(|_| id > 0)
                    .map(|_| {
                        let other = next(id as u64) as usize;
                        if next(2) == 0 {
                            Dep::Start(other)
                        } else {
                            Dep::End(other)
                        }
                    })
                    .collect();
                s.push(Task::new(stream, Class::Compute, work).after(deps));
            }
            let events = s.run_events(Interference::NONE).unwrap();
            let one_pass = s.run(Interference::NONE).unwrap();
            for (a, b) in events.iter().zip(&one_pass) {
                assert!((a.start_s - b.start_s).abs() < 1e-9 && (a.end_s - b.end_s).abs() < 1e-9);
            }
        }
        // Task 1 waits on task 2, which its stream puts after it.
        let mut s = Schedule::new();
        let a = s.stream("a");
        s.push(Task::new(a, Class::Compute, 1.0));
        s.push(Task::new(a, Class::Compute, 1.0).after([Dep::End(2)]));
        s.push(Task::new(a, Class::Compute, 1.0));
        assert!(matches!(
            s.run(Interference::NONE),
            Err(RunError::Deadlock { .. })
        ));
        assert!(matches!(
            s.run_events(Interference::NONE),
            Err(RunError::Deadlock { .. })
        ));
    }

    #[test]
    fn streams_run_in_issue_order_and_wait_for_dependencies() {
        let mut s = Schedule::new();
        let compute = s.stream("compute");
        let comm = s.stream("comm");
        let a = s.push(Task::new(compute, Class::Compute, 1.0));
        let b = s.push(Task::new(compute, Class::Compute, 1.0));
        // Issued first on the comm stream, but waits for b's end.
        let x = s.push(Task::new(comm, Class::Comm, 0.5).after([Dep::End(b)]));
        // Starts with a, but queued behind x on its stream.
        let y = s.push(Task::new(comm, Class::Comm, 0.25).after([Dep::Start(a)]));
        let spans = s.run(Interference::NONE).unwrap();
        assert_eq!((spans[a].start_s, spans[a].end_s), (0.0, 1.0));
        assert_eq!((spans[b].start_s, spans[b].end_s), (1.0, 2.0));
        assert_eq!((spans[x].start_s, spans[x].end_s), (2.0, 2.5));
        assert_eq!((spans[y].start_s, spans[y].end_s), (2.5, 2.75));
    }

    #[test]
    fn overlap_slows_both_sides() {
        // F = 2, G = 4: 1 s of compute beside 1 s of communication. Both run
        // until compute ends at 2 s (it did 1 s at half speed); the
        // communication did 0.5 s of its work by then and ends at 2.5 s.
        let mut s = Schedule::new();
        let compute = s.stream("compute");
        let comm = s.stream("comm");
        let c = s.push(Task::new(compute, Class::Compute, 1.0));
        let m = s.push(Task::new(comm, Class::Comm, 1.0));
        let spans = s.run(Interference::overlap(2.0, 4.0)).unwrap();
        assert_eq!(spans[c].end_s, 2.0);
        assert!((spans[m].end_s - 2.5).abs() < 1e-12, "{spans:?}");
    }

    #[test]
    fn a_cycle_is_a_deadlock_not_a_hang() {
        let mut s = Schedule::new();
        let a = s.stream("a");
        let b = s.stream("b");
        s.push(Task::new(a, Class::Compute, 1.0).after([Dep::End(1)]));
        s.push(Task::new(b, Class::Comm, 1.0).after([Dep::End(0)]));
        let err = s.run(Interference::NONE).unwrap_err();
        assert_eq!(err, RunError::Deadlock { task: 0 });
        assert!(err.to_string().contains("deadlocks"));
        // A time that is not a number is refused, not run forever.
        let mut s = Schedule::new();
        let a = s.stream("a");
        s.push(Task::new(a, Class::Compute, f64::NAN));
        let err = s.run(Interference::NONE).unwrap_err();
        assert!(matches!(err, RunError::BadWork { task: 0, .. }), "{err}");
    }

    #[test]
    fn memory_frees_before_allocating_at_the_same_instant() {
        let mut s = Schedule::new();
        let c = s.stream("compute");
        let a = s.push(Task::new(c, Class::Compute, 1.0).memory(100, -100));
        s.push(
            Task::new(c, Class::Compute, 1.0)
                .after([Dep::End(a)])
                .memory(100, 0),
        );
        let spans = s.run(Interference::NONE).unwrap();
        let levels = s.memory_over_time(&spans);
        assert_eq!(levels, vec![(0.0, 100), (1.0, 0), (1.0, 100)]);
        assert_eq!(levels.iter().map(|l| l.1).max(), Some(100));
    }

    #[test]
    fn what_a_task_taking_no_time_holds_for_its_duration_counts() {
        let mut s = Schedule::new();
        let c = s.stream("compute");
        let a = s.push(Task::new(c, Class::Compute, 1.0).memory(100, 0));
        s.push(
            Task::new(c, Class::Compute, 0.0)
                .after([Dep::End(a)])
                .memory(50, -50),
        );
        let spans = s.run(Interference::NONE).unwrap();
        let levels = s.memory_over_time(&spans);
        assert_eq!(levels, vec![(0.0, 100), (1.0, 150), (1.0, 100)]);
    }

    #[test]
    fn zero_work_tasks_take_no_time() {
        let mut s = Schedule::new();
        let c = s.stream("compute");
        let a = s.push(Task::new(c, Class::Compute, 0.0));
        let b = s.push(Task::new(c, Class::Compute, 0.5).after([Dep::End(a)]));
        let spans = s.run(Interference::NONE).unwrap();
        assert_eq!(spans[a].end_s, 0.0);
        assert_eq!(spans[b].end_s, 0.5);
    }
}
