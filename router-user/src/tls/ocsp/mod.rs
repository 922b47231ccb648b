//! OCSP stapling (ROUTER_OCSP_STAPLING): for every certificate :443 serves whose leaf names an `http:` OCSP
//! responder and whose issuer is in its served chain, a response fetched in the background, verified, stapled to
//! the handshakes and refreshed before it expires; the last good one stays while the responder is down, a
//! revoked or unknown answer ends the stapling. Handshakes never wait for a fetch.

mod der;
mod fetch;
mod response;
mod schedule;
mod signature;
mod stapler;
mod target;
#[cfg(test)]
mod test_responses;
mod verify;

pub use stapler::Stapler;

use std::time::SystemTime;

use rustls_pki_types::CertificateDer;

/// For the fuzz target (`fuzzing::ocsp_response`): the status `response` verifies to for the leaf of `chain`
/// at `now`, or why it does not.
#[doc(hidden)]
pub fn check_response(chain: &[CertificateDer<'static>], response: &[u8], now: SystemTime) -> Result<String, String> {
    let target = target::target(chain)?;
    verify::verify(response, &target, now).map(|verified| schedule::describe(&verified.status))
}
