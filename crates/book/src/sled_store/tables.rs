//! The store's sled trees seen from outside: listed, counted and sized, for
//! what copies a store table by table and for the checks and statistics that
//! report on one.

use super::SledStore;
use crate::BookError;

impl SledStore {
    /// The names of the store's sled trees (its tables, see [`TABLES`]), sled's
    /// own default tree left out.
    ///
    /// # Errors
    /// A tree name that is not UTF-8 ([`BookError::Corrupt`]).
    ///
    /// [`TABLES`]: super::TABLES
    pub fn table_names(&self) -> Result<Vec<String>, BookError> {
        let mut names = Vec::new();
        for name in self.db.tree_names() {
            if name.as_ref() == b"__sled__default" {
                continue;
            }
            names.push(String::from_utf8(name.to_vec()).map_err(|_| {
                BookError::Corrupt(format!("a table name of {} bytes is not UTF-8", name.len()))
            })?);
        }
        Ok(names)
    }

    /// The entries of the table `name` (0 for a table the store does not have).
    ///
    /// # Errors
    /// Storage failure.
    pub fn table_len(&self, name: &str) -> Result<usize, BookError> {
        if !self
            .db
            .tree_names()
            .iter()
            .any(|n| n.as_ref() == name.as_bytes())
        {
            return Ok(0);
        }
        Ok(self.db.open_tree(name).map_err(|e| self.err(e))?.len())
    }

    /// The keys of the `meta` tree.
    ///
    /// # Errors
    /// Storage failure.
    pub fn meta_keys(&self) -> Result<Vec<Vec<u8>>, BookError> {
        self.meta
            .iter()
            .keys()
            .map(|k| k.map(|k| k.to_vec()).map_err(|e| self.err(e)))
            .collect()
    }

    /// Bytes sled reports on disk.
    ///
    /// # Errors
    /// Storage failure.
    pub fn size_on_disk(&self) -> Result<u64, BookError> {
        self.db.size_on_disk().map_err(|e| self.err(e))
    }
}
