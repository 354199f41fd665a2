//! What a run asks of the loaded NCCL beyond the basics, checked before any GPU is touched: each refusal one line naming the flag, the version found and the version needed.
use schema::Registration;

use crate::failure::Failure;

/// The NCCL feature `-R` needs, if any.
pub fn needed_by(registration: Registration) -> Option<nccl::Feature> {
    match registration {
        Registration::None => None,
        Registration::Local => Some(nccl::Feature::Register),
        Registration::Symmetric => Some(nccl::Feature::SymmetricWindows),
    }
}

/// Refuses `-R 1`/`-R 2` when the loaded NCCL is too old for them.
pub fn require(registration: Registration) -> anyhow::Result<()> {
    let Some(feature) = needed_by(registration) else {
        return Ok(());
    };
    feature.require().map_err(|err| {
        Failure::Environment.error(format!(
            "-R/--register {}: {err}",
            registration.flag_value()
        ))
    })
}

/// What the loaded NCCL gives a run, one clause per choice it decides:
/// the buffers' allocator, whether `-R 1`, `-R 2` and `--nccl-estimate`
/// can run, and how all-to-all, gather and scatter are called. For
/// `collbench info`.
pub fn summary() -> String {
    let lacks = |feature: nccl::Feature| format!("needs NCCL >= {}", feature.since());
    let buffers = match nccl::Allocator::preferred() {
        Ok(allocator) => format!("buffers from {}", allocator.name()),
        Err(err) => return format!("unknown ({err})"),
    };
    let register = |registration: Registration| {
        let feature = needed_by(registration).expect("a registration");
        let flag = registration.flag_value();
        if feature.available() {
            format!("-R {flag} yes")
        } else {
            format!("-R {flag} no ({})", lacks(feature))
        }
    };
    let simulate = nccl::Feature::GroupSimulate;
    let estimate = if simulate.available() {
        "--nccl-estimate yes".to_string()
    } else {
        format!("--nccl-estimate no ({})", lacks(simulate))
    };
    let native = nccl::Feature::NativeAllToAllGatherScatter;
    let calls = if native.available() {
        "all-to-all/gather/scatter: NCCL's own".to_string()
    } else {
        format!(
            "all-to-all/gather/scatter: grouped send/receive (NCCL's own {})",
            lacks(native)
        )
    };
    format!(
        "{buffers}; {}; {}; {estimate}; {calls}",
        register(Registration::Local),
        register(Registration::Symmetric)
    )
}

/// Whether the loaded NCCL knows `dtype` (for `-d all`; false when no
/// NCCL can be loaded, which the backend then reports).
pub fn has_dtype(dtype: schema::DataType) -> bool {
    match super::nccl_type(dtype).since() {
        None => true,
        Some(since) => nccl::version().is_ok_and(|found| found >= since),
    }
}

/// Refuses `-d` types the loaded NCCL does not know (the 8-bit floats
/// before 2.24), naming both versions.
pub fn require_dtype(dtype: schema::DataType) -> anyhow::Result<()> {
    let Some(since) = super::nccl_type(dtype).since() else {
        return Ok(());
    };
    let found = nccl::version().map_err(|e| Failure::Environment.error(e))?;
    if found >= since {
        return Ok(());
    }
    Err(Failure::Environment.error(format!(
        "-d/--dtype {dtype} needs NCCL >= {since} (ncclFloat8e4m3/ncclFloat8e5m2), but the loaded NCCL is {found}; use a newer NCCL or another -d"
    )))
}

/// Refuses `--nccl-estimate` when the loaded NCCL cannot simulate a group.
pub fn require_estimate() -> anyhow::Result<()> {
    nccl::Feature::GroupSimulate
        .require()
        .map_err(|err| Failure::Environment.error(format!("--nccl-estimate: {err}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_registration_needs_its_release() {
        assert_eq!(needed_by(Registration::None), None);
        let local = needed_by(Registration::Local).unwrap();
        let symmetric = needed_by(Registration::Symmetric).unwrap();
        assert_eq!(local.since(), nccl::Version::new(2, 19, 0));
        assert_eq!(symmetric.since(), nccl::Version::new(2, 27, 0));
    }
}
