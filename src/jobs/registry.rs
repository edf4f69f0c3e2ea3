//! Registry operations shared by the `edi-inbox partner` CLI and the admin API: they issue secrets,
//! store only what may be stored, and return the secrets once.

use chrono::Utc;
use uuid::Uuid;

use crate::partners::{
    CredentialKind, IssuedSecret, NewPartner, Partner, PartnerStatus, api_key_hash, new_api_key,
    new_webhook_secret,
};
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
        IssuedSecret { credential_id: key_id, kind: CredentialKind::ApiKey, secret: key },
        IssuedSecret { credential_id: secret_id, kind: CredentialKind::WebhookSecret, secret },
    ];
    Ok((partner, issued))
}

/// Issues an additional credential of `kind`; the existing ones stay valid until revoked.
pub async fn rotate(
    store: &Store,
    partner_id: &str,
    kind: CredentialKind,
) -> Result<IssuedSecret, AdminError> {
    store.partner(partner_id).await?.ok_or_else(|| AdminError::NoPartner(partner_id.to_owned()))?;
    let id = Uuid::now_v7();
    let (secret, stored) = match kind {
        CredentialKind::ApiKey => {
            let key = new_api_key();
            let hash = api_key_hash(&key);
            (key, hash)
        }
        CredentialKind::WebhookSecret => {
            let secret = new_webhook_secret();
            (secret.clone(), secret)
        }
    };
    store.add_credential(partner_id, kind, (id, &stored), Utc::now()).await?;
    Ok(IssuedSecret { credential_id: id, kind, secret })
}

pub async fn revoke(store: &Store, partner_id: &str, credential: Uuid) -> Result<(), AdminError> {
    if store.revoke_credential(partner_id, credential, Utc::now()).await? {
        Ok(())
    } else {
        Err(AdminError::NoCredential(partner_id.to_owned(), credential))
    }
}

pub async fn set_status(
    store: &Store,
    partner_id: &str,
    status: PartnerStatus,
) -> Result<Partner, AdminError> {
    if !store.set_partner_status(partner_id, status).await? {
        return Err(AdminError::NoPartner(partner_id.to_owned()));
    }
    store.partner(partner_id).await?.ok_or_else(|| AdminError::NoPartner(partner_id.to_owned()))
}
