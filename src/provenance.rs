//! Who made a report: the build (recorded by build.rs), the command line, the
//! environment variables that change collective behaviour, and UTC timestamps.
use schema::Tool;
use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

/// This binary's name, version and build provenance.
pub fn tool() -> Tool {
    let non_empty = |s: &str| (!s.is_empty()).then(|| s.to_string());
    Tool {
        name: "collbench".to_string(),
        version: Some(env!("CARGO_PKG_VERSION").to_string()),
        git_commit: non_empty(env!("COLLBENCH_GIT_COMMIT")),
        git_dirty: env!("COLLBENCH_GIT_DIRTY").parse().ok(),
        rustc: non_empty(env!("COLLBENCH_RUSTC")),
        profile: non_empty(env!("COLLBENCH_PROFILE")),
        features: env!("COLLBENCH_FEATURES")
            .split(',')
            .filter(|f| !f.is_empty())
            .map(String::from)
            .collect(),
    }
}

/// Variables worth keeping with a measurement: NCCL's knobs, the launcher's
/// and Slurm's view of the job, and which GPUs were visible — but not the
/// launcher's connection details (server URIs, transport keys), which mean
/// nothing later and should not end up in committed results.
pub fn relevant_env() -> BTreeMap<String, String> {
    std::env::vars()
        .filter(|(key, _)| is_relevant(key))
        .collect()
}

fn is_relevant(key: &str) -> bool {
    let kept = ["NCCL_", "SLURM_", "OMPI_", "PMI_", "PMIX_"]
        .iter()
        .any(|p| key.starts_with(p))
        || key == "CUDA_VISIBLE_DEVICES"
        || key == "COLLBENCH_NCCL_LIBRARY";
    let upper = key.to_ascii_uppercase();
    let private = [
        "URI",
        "TRANSPORTS",
        "SECURITY",
        "SERVER",
        "KEY",
        "TOKEN",
        "SECRET",
    ]
    .iter()
    .any(|word| upper.contains(word));
    kept && !private
}

/// The current time as RFC 3339 UTC, e.g. `2026-11-22T10:00:05Z`.
pub fn utc_now() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    format_utc(secs)
}

/// The current time as RFC 3339 UTC to the millisecond, e.g.
/// `2026-11-22T10:00:05.042Z`: when each row of a soak run was measured.
pub fn utc_now_precise() -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let seconds = format_utc(now.as_secs());
    format!(
        "{}.{:03}Z",
        seconds.trim_end_matches('Z'),
        now.subsec_millis()
    )
}

fn format_utc(secs: u64) -> String {
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_knobs_and_drops_connection_details() {
        for key in [
            "NCCL_DEBUG",
            "SLURM_JOB_ID",
            "OMPI_COMM_WORLD_SIZE",
            "PMI_RANK",
            "CUDA_VISIBLE_DEVICES",
        ] {
            assert!(is_relevant(key), "{key}");
        }
        for key in [
            "PMIX_SERVER_URI41",
            "OMPI_MCA_orte_precondition_transports",
            "PMIX_SECURITY_MODE",
            "HOME",
            "PATH",
        ] {
            assert!(!is_relevant(key), "{key}");
        }
    }

    #[test]
    fn formats_known_instants() {
        assert_eq!(format_utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(format_utc(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(format_utc(1_795_334_405), "2026-11-22T08:00:05Z");
    }
}
