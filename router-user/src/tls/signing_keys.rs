//! Private keys parsed once for every route certificate that carries them. A parsed RSA-2048 key is about 2 KB
//! of big numbers; routes whose certificates differ can still share a key (renewals that keep the key, one key
//! behind several certificates), and each such certificate would otherwise hold a copy.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use rustls::sign::SigningKey;
use rustls_pki_types::PrivateKeyDer;
use sha2::{Digest, Sha256};

use super::provider;

/// Keys by the SHA-256 of their DER, held weakly: a key lives as long as a certificate serving it does.
#[derive(Default)]
pub struct SigningKeys {
    parsed: Mutex<HashMap<[u8; 32], Weak<dyn SigningKey>>>,
}

impl SigningKeys {
    /// The serving key for `key`, parsed by the chosen provider unless a live certificate already holds it.
    pub fn get(&self, key: &PrivateKeyDer<'_>) -> Result<Arc<dyn SigningKey>, rustls::Error> {
        let digest: [u8; 32] = Sha256::digest(key.secret_der()).into();
        if let Some(known) = self.lock().get(&digest).and_then(Weak::upgrade) {
            return Ok(known);
        }
        let parsed = provider::chosen().signing_key(key)?;
        self.lock().insert(digest, Arc::downgrade(&parsed));
        Ok(parsed)
    }

    /// Forgets the keys no certificate holds any more.
    pub fn sweep(&self) {
        self.lock().retain(|_, key| key.strong_count() > 0);
    }

    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<[u8; 32], Weak<dyn SigningKey>>> {
        // Every change is a single insert or retain: the map stays whole if a holder panicked.
        self.parsed.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
