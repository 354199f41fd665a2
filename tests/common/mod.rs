//! What the integration tests share: the binary, scratch folders, mpirun
//! jobs run one at a time (in the foreground, or in the background to be
//! signalled and stopped), and the checks on exit codes and error lines.
#![allow(dead_code)] // each test binary uses a part

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// mpirun jobs share 2 cores: run them one at a time.
pub static MPI_JOBS: Mutex<()> = Mutex::new(());

/// The binary under test: cargo's, or `$COLLBENCH_TEST_BINARY` where the
/// test binaries were carried to another machine (scripts/gpu-smoke.sh),
/// on which cargo's absolute path does not exist.
pub fn binary() -> &'static str {
    static BINARY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    BINARY.get_or_init(|| {
        std::env::var("COLLBENCH_TEST_BINARY")
            .unwrap_or_else(|_| env!("CARGO_BIN_EXE_collbench").to_string())
    })
}

pub fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("collbench-test-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A scratch folder for a GPU test, under the system's temporary folder:
/// cargo's target folder may not exist where the test binaries were
/// carried (scripts/gpu-smoke.sh).
pub fn gpu_scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("collbench-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs the binary under Open MPI's mpirun with `ranks` processes.
pub fn mpirun(ranks: u32, args: &[&str]) -> Output {
    let _guard = MPI_JOBS.lock().unwrap_or_else(|e| e.into_inner());
    mpirun_holding_the_turn(ranks, args)
}

/// As [`mpirun`], for a caller that holds [`MPI_JOBS`] already (a test
/// that loads the CPU, which no other job may share).
pub fn mpirun_holding_the_turn(ranks: u32, args: &[&str]) -> Output {
    Command::new("mpirun")
        .args(["--oversubscribe", "-n", &ranks.to_string(), binary()])
        .args(args)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .output()
        .expect("mpirun (install openmpi-bin)")
}

/// Runs the binary alone (an MPI singleton).
pub fn alone(args: &[&str]) -> Output {
    let _guard = MPI_JOBS.lock().unwrap_or_else(|e| e.into_inner());
    Command::new(binary()).args(args).output().unwrap()
}

pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

pub fn assert_ok(output: &Output) {
    assert!(
        output.status.success(),
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        stderr(output)
    );
}

/// Expects failure with `code` and one stderr line containing `needle`.
pub fn assert_fails(output: &Output, code: i32, needle: &str) {
    let err = stderr(output);
    assert_eq!(output.status.code(), Some(code), "stderr: {err}");
    let lines: Vec<&str> = err.lines().filter(|l| l.contains("error:")).collect();
    assert_eq!(lines.len(), 1, "exactly one error line expected:\n{err}");
    assert!(lines[0].contains(needle), "{:?} lacks {needle:?}", lines[0]);
    assert!(!err.contains("panicked"), "{err}");
}

/// A job started in the background, in its own process group, its output
/// going to files; it holds the one-job-at-a-time lock while it lives.
pub struct Job {
    pub child: Child,
    pub stdout: PathBuf,
    pub stderr: PathBuf,
    _turn: MutexGuard<'static, ()>,
}

/// Starts `collbench <args>` under mpirun with `ranks` ranks (0 = alone,
/// without mpirun) in the background, in `dir`.
pub fn spawn(ranks: u32, dir: &Path, args: &[&str]) -> Job {
    use std::os::unix::process::CommandExt;
    let turn = MPI_JOBS.lock().unwrap_or_else(|e| e.into_inner());
    let (stdout, stderr) = (dir.join("stdout.txt"), dir.join("stderr.txt"));
    let mut command = if ranks == 0 {
        Command::new(binary())
    } else {
        let mut c = Command::new("mpirun");
        c.args(["--oversubscribe", "-n", &ranks.to_string(), binary()]);
        c
    };
    let child = command
        .args(args)
        .current_dir(dir)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&stdout).unwrap())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .process_group(0)
        .spawn()
        .expect("mpirun (install openmpi-bin)");
    Job {
        child,
        stdout,
        stderr,
        _turn: turn,
    }
}

impl Job {
    /// Waits for the job to end; a job still running after `limit` is a
    /// hang: its whole process group is killed and the test fails.
    pub fn wait(&mut self, limit: Duration) -> ExitStatus {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            if start.elapsed() > limit {
                self.kill_all();
                panic!(
                    "the job hung for {limit:?}; stderr:\n{}",
                    std::fs::read_to_string(&self.stderr).unwrap_or_default()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// Sends `signal` (`TERM`, `STOP`, …) to the launcher (or the lone rank).
    pub fn signal(&self, signal: &str) {
        send(signal, self.child.id());
    }

    /// The collbench processes of this job, by rank.
    pub fn ranks(&self) -> Vec<(u32, u32)> {
        let mut ranks = Vec::new();
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue;
            };
            // The parent's pid is the second field after the command.
            let after = stat.rsplit_once(") ").map_or("", |(_, rest)| rest);
            let parent: Option<u32> = after.split(' ').nth(1).and_then(|p| p.parse().ok());
            if parent != Some(self.child.id()) && pid != self.child.id() {
                continue;
            }
            let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
            let rank = environ
                .split(|&b| b == 0)
                .filter_map(|v| std::str::from_utf8(v).ok())
                .find_map(|v| v.strip_prefix("OMPI_COMM_WORLD_RANK="))
                .and_then(|r| r.parse().ok());
            if let Some(rank) = rank {
                ranks.push((rank, pid));
            }
        }
        ranks.sort();
        ranks
    }

    /// Sends `signal` to rank `rank`'s process.
    pub fn signal_rank(&self, rank: u32, signal: &str) {
        let pid = wait_until(Duration::from_secs(20), || {
            self.ranks()
                .into_iter()
                .find(|(r, _)| *r == rank)
                .map(|(_, p)| p)
        })
        .unwrap_or_else(|| panic!("rank {rank} never started"));
        send(signal, pid);
    }

    fn kill_all(&self) {
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.child.id())])
            .status();
    }
}

impl Drop for Job {
    /// Nothing a test started outlives it.
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            self.kill_all();
            let _ = self.child.wait();
        }
    }
}

/// Sends `signal` to `pid` with kill(1).
pub fn send(signal: &str, pid: u32) {
    let status = Command::new("kill")
        .args([&format!("-{signal}"), &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill -{signal} {pid}");
}

/// Polls `probe` every 20 ms until it gives a value or `limit` passes.
pub fn wait_until<T>(limit: Duration, mut probe: impl FnMut() -> Option<T>) -> Option<T> {
    let start = Instant::now();
    loop {
        if let Some(value) = probe() {
            return Some(value);
        }
        if start.elapsed() > limit {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
