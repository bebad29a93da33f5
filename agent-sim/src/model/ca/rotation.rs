//! Root rotation (with or without cross-signing) and pruning of rotated-out roots.
//!
//! Roots-table writes follow Consul's state store: every root written in one operation gets
//! `ModifyIndex` = that operation's index (a new root also gets it as `CreateIndex`), and the
//! table index moves to it.

use std::time::Duration;

use rand::Rng;
use rcgen::KeyPair;
use time::OffsetDateTime;

use super::encoding::{base36_uid, cert_time};
use super::keys::KeyKind;
use super::root::{RootSpec, cross_sign, generate_root, import_root};
use super::{Ca, CaError, keys};

/// What a rotation installs: a key, and the operator's certificate for it (else one is
/// generated).
pub(crate) struct NewRoot<'a> {
    pub(crate) key: KeyPair,
    pub(crate) root_cert: Option<&'a str>,
}

impl Ca {
    /// Replaces the active root with a freshly generated one (new key, new ID), as a CA config
    /// change does. With `cross_sign` the old root signs a copy of the new one, which becomes the
    /// new root's only `IntermediateCerts` entry (valid now − 1 min for 7 days); without it the
    /// new root's `IntermediateCerts` is null. The old root stays listed, `Active:false`, until
    /// `prune` drops it. `index` becomes the roots index.
    pub fn rotate(
        &mut self,
        cross_sign: bool,
        now: OffsetDateTime,
        index: u64,
        rng: &mut impl Rng,
    ) -> Result<(), CaError> {
        let kind = self.settings.ca_kind();
        self.rotate_kind(kind, cross_sign, now, index, rng)
    }

    /// Like [`Ca::rotate`], onto a fresh key of `kind`, and the configuration follows (its
    /// `PrivateKeyType`/`PrivateKeyBits`; leaves keep EC P-256 keys, now signed by the new root), as a
    /// `PUT` of those keys would.
    pub fn rotate_kind(
        &mut self,
        kind: KeyKind,
        cross_sign: bool,
        now: OffsetDateTime,
        index: u64,
        rng: &mut impl Rng,
    ) -> Result<(), CaError> {
        let key = keys::generate_kind(kind)?;
        let root_ttl = self.settings.root_ttl;
        let new = NewRoot {
            key,
            root_cert: None,
        };
        self.rotate_to(new, root_ttl, cross_sign, now, index, rng)?;
        self.settings.set_key_kind(kind);
        Ok(())
    }

    /// Rotation onto a given key (and, if given, its operator-supplied certificate); nothing
    /// changes if it fails.
    pub(crate) fn rotate_to(
        &mut self,
        new: NewRoot<'_>,
        root_ttl: Duration,
        cross: bool,
        now: OffsetDateTime,
        index: u64,
        rng: &mut impl Rng,
    ) -> Result<(), CaError> {
        let now = cert_time(now);
        let before = self.clone();
        let old = self.active_root()?;
        // Two roots with one subject would make path building pick the wrong key, so never
        // reuse a name still in the table (a caller may hand in a freshly re-seeded rng).
        let mut uid = base36_uid(rng);
        for _ in 0..16 {
            if !self.roots.iter().any(|r| r.uid == uid) {
                break;
            }
            uid = base36_uid(rng);
        }
        let serial = self.next_serial;
        let spec = RootSpec {
            trust_domain: self.ca_san_trust_domain(),
            cluster_id: &self.cluster_id,
            uid: &uid,
            serial,
            now,
            ttl: root_ttl,
            index,
        };
        let mut root = match new.root_cert {
            Some(pem) => import_root(new.key, pem, serial, index)?,
            None => generate_root(new.key, &spec)?,
        };
        let mut used = 1;
        if cross {
            let cross_signed = cross_sign(&root, old, serial + 1, now)?;
            // Consul prepends it, ahead of any intermediates the new provider brings.
            root.intermediates.insert(0, cross_signed);
            used += 1;
        }
        self.next_serial += used;
        for r in &mut self.roots {
            if r.active {
                r.active = false;
                r.rotated_out_at = Some(now);
            }
            r.modify_index = index;
        }
        self.roots.push(root);
        if self.chain {
            let pos = self.roots.len() - 1;
            if let Err(e) = self.attach_intermediate(pos, now, rng) {
                *self = before;
                return Err(e);
            }
        }
        self.roots_index = index;
        Ok(())
    }

    /// Drops roots rotated out more than 2 × leaf TTL before `now` (Consul's leader job, which
    /// runs hourly; the caller decides when). Returns whether anything was dropped; if so the
    /// remaining roots and the roots index move to `index`.
    pub fn prune(&mut self, now: OffsetDateTime, index: u64) -> bool {
        let now = cert_time(now);
        let Ok(keep_for) = time::Duration::try_from(self.settings.leaf_ttl.saturating_mul(2))
        else {
            return false;
        };
        let before = self.roots.len();
        self.roots.retain(|r| match (r.active, r.rotated_out_at) {
            (false, Some(out)) => now - out <= keep_for,
            _ => true,
        });
        if self.roots.len() == before {
            return false;
        }
        for r in &mut self.roots {
            r.modify_index = index;
        }
        self.roots_index = index;
        true
    }

    /// Whether [`Ca::prune`] would drop anything now.
    pub fn prune_due(&self, now: OffsetDateTime) -> bool {
        let now = cert_time(now);
        let Ok(keep_for) = time::Duration::try_from(self.settings.leaf_ttl.saturating_mul(2))
        else {
            return false;
        };
        self.roots.iter().any(
            |r| matches!((r.active, r.rotated_out_at), (false, Some(out)) if now - out > keep_for),
        )
    }

    /// Renumbers every index to `index` (the store's index reset).
    pub fn reset_indexes(&mut self, index: u64) {
        for r in &mut self.roots {
            r.create_index = index;
            r.modify_index = index;
        }
        self.roots_index = index;
        self.settings.create_index = index;
        self.settings.modify_index = index;
    }
}
