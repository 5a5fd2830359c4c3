//! The store's secret: 32 random bytes in `meta`, made by the first coordinator
//! that asks, and kept with the store (backups carry it, so a restored store's
//! coordinator still knows its leases). A coordinator signs its lease ids with
//! it, so that a restarted coordinator can tell a lease it issued from one a
//! client made up, or one issued for another store.

use rand::Rng;

use crate::BookError;

use super::SledStore;

/// Key of the secret in `meta`.
pub(crate) const LEASE_SECRET: &[u8] = b"lease secret";

/// Bytes of the secret.
pub const SECRET_BYTES: usize = 32;

impl SledStore {
    /// The store's lease secret, made (and flushed) at the first call.
    ///
    /// # Errors
    /// Reading or writing the store fails; a secret of the wrong length is
    /// [`BookError::Corrupt`].
    pub fn lease_secret(&mut self) -> Result<[u8; SECRET_BYTES], BookError> {
        if let Some(found) = self.meta.get(LEASE_SECRET).map_err(|e| self.err(e))? {
            return <[u8; SECRET_BYTES]>::try_from(found.as_ref()).map_err(|_| {
                BookError::Corrupt(format!(
                    "the store's lease secret is {} bytes, not {SECRET_BYTES}",
                    found.len()
                ))
            });
        }
        let mut secret = [0u8; SECRET_BYTES];
        // ThreadRng: ChaCha seeded from the operating system.
        rand::rng().fill(&mut secret[..]);
        self.meta
            .insert(LEASE_SECRET, &secret[..])
            .map_err(|e| self.err(e))?;
        self.db.flush().map_err(|e| self.err(e))?;
        Ok(secret)
    }
}
