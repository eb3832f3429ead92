//! The credential trees and their sealed secrets: what they are sealed
//! under (read before a key is chosen), sealing what an older build left
//! plain, and rotating the master key. Each rewrite of the sealed values is
//! one sled transaction over the four trees, so after a crash they are all
//! under the old key or all under the new one.

use std::sync::{Arc, PoisonError};

use sled::transaction::ConflictableTransactionError;
use sled::{Db, IVec, Transactional};

use crate::encoding::codec::{decode, encode};
use crate::encoding::trees;
use crate::engine::sled::SledStore;
use crate::error::{StoreError, StoreResult};
use crate::secrets::sealing::{self, Keyring, MasterKey, Plain, SealedInventory, SecretFields};
use crate::traits::MasterKeys;

/// The secret fields of each tree's records. A new secret field must be
/// listed here too, or stores written before it would keep it plain.
pub(crate) fn secret_fields(tree: &str) -> SecretFields {
    match tree {
        trees::COMPANIES => &[("webhook_secret", Plain::Text)],
        trees::SOFTWARE => &[("pin", Plain::Text)],
        trees::RESOLUTIONS => &[("technical_key", Plain::Text)],
        trees::CERTIFICATES => &[("pkcs12_der", Plain::Bytes), ("password", Plain::Text)],
        _ => &[],
    }
}

/// The trees whose records hold secrets.
pub(crate) const SEALED_TREES: [&str; 4] = [
    trees::COMPANIES,
    trees::SOFTWARE,
    trees::RESOLUTIONS,
    trees::CERTIFICATES,
];

/// The master keys the stored secrets name, and how many are still plain.
pub(crate) fn survey_trees(db: &Db) -> StoreResult<SealedInventory> {
    let mut inventory = SealedInventory::default();
    for name in SEALED_TREES {
        for item in db.open_tree(name)?.iter() {
            let (_, v) = item?;
            let record: serde_json::Value = decode(name, &v)?;
            sealing::survey(name, secret_fields(name), &record, &mut inventory)?;
        }
    }
    Ok(inventory)
}

/// Refuses keys that cannot open what the store holds.
pub(crate) fn check_keys(inventory: &SealedInventory, keys: &Keyring) -> StoreResult<()> {
    let unknown: Vec<&str> = inventory
        .key_ids
        .iter()
        .map(String::as_str)
        .filter(|id| !keys.knows(id))
        .collect();
    if unknown.is_empty() {
        return Ok(());
    }
    Err(StoreError::MasterKey(format!(
        "the stored secrets are sealed under master key {}, not under the key given ({})",
        unknown.join(", "),
        keys.current().id()
    )))
}

impl MasterKeys for SledStore {
    fn keyring(&self) -> Arc<Keyring> {
        SledStore::keyring(self)
    }

    fn rotate_master_key(&self, new: MasterKey) -> StoreResult<usize> {
        SledStore::rotate_master_key(self, new)
    }
}

impl SledStore {
    /// Seals and unseals record fields with this store's keys while alive.
    pub(crate) fn sealing_scope(&self) -> sealing::Scope {
        let keys = self.keys.read().unwrap_or_else(PoisonError::into_inner);
        sealing::scope(Arc::clone(&keys))
    }

    /// The keys in use (the current one names new sealed values).
    pub fn keyring(&self) -> Arc<Keyring> {
        Arc::clone(&self.keys.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// What the credential trees hold now.
    pub fn sealed_inventory(&self) -> StoreResult<SealedInventory> {
        let mut inventory = SealedInventory::default();
        for (name, tree) in self.sealed_trees() {
            for item in tree.iter() {
                let (_, v) = item?;
                let record: serde_json::Value = decode(name, &v)?;
                sealing::survey(name, secret_fields(name), &record, &mut inventory)?;
            }
        }
        Ok(inventory)
    }

    fn sealed_trees(&self) -> [(&'static str, &sled::Tree); 4] {
        [
            (SEALED_TREES[0], &self.companies),
            (SEALED_TREES[1], &self.software),
            (SEALED_TREES[2], &self.resolutions),
            (SEALED_TREES[3], &self.certificates),
        ]
    }

    /// At open: seals what `inventory` found under a key other than the
    /// current one (a rotation that was interrupted; plain secrets are
    /// sealed by `rewrite` before this).
    pub(crate) fn seal_remaining(&self, inventory: &SealedInventory) -> StoreResult<()> {
        let keys = self.keyring();
        let current = keys.current().id();
        if inventory.plain == 0 && inventory.key_ids.iter().all(|id| id == current) {
            return Ok(());
        }
        let records = self.reseal_all(&keys)?;
        tracing::warn!(
            plain = inventory.plain,
            records,
            master_key = current,
            "secrets re-sealed under the current master key"
        );
        Ok(())
    }

    /// Re-seals every secret under `new` in one transaction, made durable
    /// before it returns; from then on the store seals under `new`.
    /// Returns the number of records rewritten.
    pub fn rotate_master_key(&self, new: MasterKey) -> StoreResult<usize> {
        let next = self.keyring().rotated(new);
        let records = self.reseal_all(&next)?;
        *self.keys.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(next);
        Ok(records)
    }

    /// Rewrites every record whose secrets are not all under `keys`'
    /// current key: one transaction, then a flush.
    fn reseal_all(&self, keys: &Keyring) -> StoreResult<usize> {
        let mut writes: Vec<(usize, IVec, Vec<u8>)> = Vec::new();
        for (i, (name, tree)) in self.sealed_trees().into_iter().enumerate() {
            for item in tree.iter() {
                let (k, v) = item?;
                let mut record: serde_json::Value = decode(name, &v)?;
                if sealing::reseal(name, secret_fields(name), &mut record, keys)? {
                    writes.push((i, k, encode(name, &record)?));
                }
            }
        }
        if writes.is_empty() {
            return Ok(0);
        }
        (
            &self.companies,
            &self.software,
            &self.resolutions,
            &self.certificates,
        )
            .transaction(|(companies, software, resolutions, certificates)| {
                for (i, k, v) in &writes {
                    let tree = match i {
                        0 => companies,
                        1 => software,
                        2 => resolutions,
                        _ => certificates,
                    };
                    tree.insert(k, v.as_slice())?;
                }
                Ok::<_, ConflictableTransactionError<StoreError>>(())
            })?;
        // The cached records are the same secrets; cleared all the same, so
        // nothing read before the rewrite outlives it.
        self.credentials_changed();
        self.flush_now()?;
        Ok(writes.len())
    }
}
