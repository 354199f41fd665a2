//! Waiting for GPU work against a deadline as nccl-tests does: poll, and give the core away between polls.
use std::time::Instant;

/// How a wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waited {
    Done,
    TimedOut,
}

/// Calls `poll` until it says done (`Ok(true)`), fails, or `deadline` has
/// passed (checked after each unfinished poll, so there is always one).
/// Between polls the thread yields: a rank bound to one core (Open MPI
/// binds to cores by default for up to two processes) shares it with
/// NCCL's proxy thread, which network transports need to progress; a
/// busy spin would leave it only what the scheduler's tick takes away.
pub fn until(
    deadline: Option<Instant>,
    mut poll: impl FnMut() -> anyhow::Result<bool>,
) -> anyhow::Result<Waited> {
    loop {
        if poll()? {
            return Ok(Waited::Done);
        }
        if deadline.is_some_and(|d| Instant::now() > d) {
            return Ok(Waited::TimedOut);
        }
        std::thread::yield_now();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn polls_until_done_without_a_deadline() {
        let mut polls = 0;
        let waited = until(None, || {
            polls += 1;
            Ok(polls == 1000)
        });
        assert_eq!(waited.unwrap(), Waited::Done);
        assert_eq!(polls, 1000);
    }

    #[test]
    fn a_passed_deadline_still_polls_once_and_then_times_out() {
        let past = Instant::now() - Duration::from_millis(1);
        let mut polls = 0;
        let waited = until(Some(past), || {
            polls += 1;
            Ok(false)
        });
        assert_eq!(waited.unwrap(), Waited::TimedOut);
        assert_eq!(polls, 1);
        // Done on that one poll wins over the deadline.
        assert_eq!(until(Some(past), || Ok(true)).unwrap(), Waited::Done);
    }

    #[test]
    fn a_deadline_ends_an_endless_wait_soon_after_it_passes() {
        let started = Instant::now();
        let deadline = started + Duration::from_millis(50);
        assert_eq!(
            until(Some(deadline), || Ok(false)).unwrap(),
            Waited::TimedOut
        );
        let took = started.elapsed();
        assert!(took >= Duration::from_millis(50), "{took:?}");
        assert!(took < Duration::from_secs(5), "{took:?}");
    }

    #[test]
    fn a_failed_poll_ends_the_wait_with_its_error() {
        let err = until(None, || anyhow::bail!("async error")).unwrap_err();
        assert_eq!(err.to_string(), "async error");
    }
}
