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
