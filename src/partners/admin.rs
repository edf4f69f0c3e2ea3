//! Registry operations shared by the `edi-inbox partner` CLI and the admin API: they issue secrets,
//! store only what may be stored, and return the secrets once.

use chrono::Utc;
use uuid::Uuid;

use super::{IssuedSecret, NewPartner, Partner, api_key_hash, new_api_key, new_webhook_secret};
use crate::store::{Store, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    #[error("{0}")]
    Invalid(String),
    #[error("partner {0:?} or one of its sender identities exists already")]
    Exists(String),
    #[error("no partner {0:?}")]
    NoPartner(String),
    #[error("no active credential {1} of partner {0:?}")]
    NoCredential(String, Uuid),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The kinds of credential a partner can hold.
pub const KINDS: [&str; 2] = ["api_key", "webhook_secret"];

/// Registers a partner with a first API key and signing secret, returned once.
pub async fn register(store: &Store, new: &NewPartner) -> Result<(Partner, Vec<IssuedSecret>), AdminError> {
    new.validate().map_err(AdminError::Invalid)?;
    let (key, secret) = (new_api_key(), new_webhook_secret());
    let (key_id, secret_id) = (Uuid::now_v7(), Uuid::now_v7());
    let hash = api_key_hash(&key);
    if !store.create_partner(new, (key_id, &hash), (secret_id, &secret), Utc::now()).await? {
        return Err(AdminError::Exists(new.id.clone()));
    }
    let partner = store.partner(&new.id).await?.ok_or_else(|| AdminError::NoPartner(new.id.clone()))?;
    let issued = vec![
        IssuedSecret { credential_id: key_id, kind: "api_key".into(), secret: key },
        IssuedSecret { credential_id: secret_id, kind: "webhook_secret".into(), secret },
    ];
    Ok((partner, issued))
}

/// Issues an additional credential of `kind`; the existing ones stay valid until revoked.
pub async fn rotate(store: &Store, partner_id: &str, kind: &str) -> Result<IssuedSecret, AdminError> {
    if !KINDS.contains(&kind) {
        return Err(AdminError::Invalid(format!(
            "credential kind must be api_key or webhook_secret, not {kind:?}"
        )));
    }
    store.partner(partner_id).await?.ok_or_else(|| AdminError::NoPartner(partner_id.to_owned()))?;
    let id = Uuid::now_v7();
    let secret = if kind == "api_key" { new_api_key() } else { new_webhook_secret() };
    let stored = if kind == "api_key" { api_key_hash(&secret) } else { secret.clone() };
    store.add_credential(partner_id, kind, (id, &stored), Utc::now()).await?;
    Ok(IssuedSecret { credential_id: id, kind: kind.to_owned(), secret })
}

pub async fn revoke(store: &Store, partner_id: &str, credential: Uuid) -> Result<(), AdminError> {
    if store.revoke_credential(partner_id, credential, Utc::now()).await? {
        Ok(())
    } else {
        Err(AdminError::NoCredential(partner_id.to_owned(), credential))
    }
}

/// `active` or `suspended`.
pub async fn set_status(store: &Store, partner_id: &str, status: &str) -> Result<Partner, AdminError> {
    if !store.set_partner_status(partner_id, status).await? {
        return Err(AdminError::NoPartner(partner_id.to_owned()));
    }
    store.partner(partner_id).await?.ok_or_else(|| AdminError::NoPartner(partner_id.to_owned()))
}
