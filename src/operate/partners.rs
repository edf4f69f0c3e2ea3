//! The partner registry: register, issue and revoke credentials, suspend and activate. Secrets are
//! issued here, only what may be stored is stored, and the secrets are returned once.

use chrono::Utc;
use uuid::Uuid;

use super::{Actor, Error, recorded};
use crate::partners::{
    CredentialKind, IssuedSecret, NewPartner, Partner, PartnerChanges, PartnerStatus, api_key_hash,
    changed_settings, new_api_key, new_webhook_secret,
};
use crate::store::Store;

fn no_partner(id: &str) -> Error {
    Error::NotFound(format!("no partner {id:?}"))
}

/// Registers a partner with a first API key and signing secret, returned once.
pub async fn register(
    store: &Store,
    new: &NewPartner,
    actor: &Actor,
) -> Result<(Partner, Vec<IssuedSecret>), Error> {
    new.validate().map_err(Error::Invalid)?;
    let (key, secret) = (new_api_key(), new_webhook_secret());
    let (key_id, secret_id) = (Uuid::now_v7(), Uuid::now_v7());
    let hash = api_key_hash(&key);
    if !store.create_partner(new, (key_id, &hash), (secret_id, &secret), Utc::now()).await? {
        return Err(Error::Exists(format!(
            "partner {:?} or one of its sender identities exists already",
            new.id
        )));
    }
    let partner = store.partner(new.id.as_str()).await?.ok_or_else(|| no_partner(new.id.as_str()))?;
    let issued = vec![
        IssuedSecret { credential_id: key_id, kind: CredentialKind::ApiKey, secret: key },
        IssuedSecret { credential_id: secret_id, kind: CredentialKind::WebhookSecret, secret },
    ];
    recorded(store, actor, "partner.register", &partner.id, (None, partner.status.as_str())).await;
    Ok((partner, issued))
}

/// Changes a partner's settings (checked as a registration is) and audits what changed. Its
/// numbering (`invoice_numbers`) is fixed once it has booked an invoice: the keys its invoices were
/// booked under would no longer catch their resends.
pub async fn update(
    store: &Store,
    partner_id: &str,
    changes: PartnerChanges,
    actor: &Actor,
) -> Result<Partner, Error> {
    let before = store.partner(partner_id).await?.ok_or_else(|| no_partner(partner_id))?;
    let settings = changes.applied_to(&before);
    settings.validate().map_err(Error::Invalid)?;
    if settings.invoice_numbers != before.invoice_numbers
        && store.has_booked_invoices(&before.senders).await?
    {
        return Err(Error::Invalid(format!(
            "partner {partner_id:?} has booked invoices under {} numbering: their business keys hold it, \
             and a resend of one would be booked again under another",
            before.invoice_numbers.as_str()
        )));
    }
    if !store.update_partner(&settings).await? {
        return Err(Error::Exists(format!(
            "an identity of partner {partner_id:?} (sender, AS2 name, Pub/Sub account or SNS topic) \
             belongs to another partner"
        )));
    }
    let after = store.partner(partner_id).await?.ok_or_else(|| no_partner(partner_id))?;
    let (was, now) = changed_settings(&before, &after);
    if !now.is_empty() {
        recorded(store, actor, "partner.update", &partner_id, (Some(&was), &now)).await;
    }
    Ok(after)
}

/// Issues an additional credential of `kind`; the existing ones stay valid until revoked.
pub async fn rotate(
    store: &Store,
    partner_id: &str,
    kind: CredentialKind,
    actor: &Actor,
) -> Result<IssuedSecret, Error> {
    store.partner(partner_id).await?.ok_or_else(|| no_partner(partner_id))?;
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
    recorded(
        store,
        actor,
        "partner.credential.issue",
        &partner_id,
        (None, &format!("{} {id} issued", kind.as_str())),
    )
    .await;
    Ok(IssuedSecret { credential_id: id, kind, secret })
}

pub async fn revoke(store: &Store, partner_id: &str, credential: Uuid, actor: &Actor) -> Result<(), Error> {
    if store.revoke_credential(partner_id, credential, Utc::now()).await? {
        recorded(
            store,
            actor,
            "partner.credential.revoke",
            &partner_id,
            (Some(&format!("{credential} active")), &format!("{credential} revoked")),
        )
        .await;
        Ok(())
    } else {
        Err(Error::NotFound(format!("no active credential {credential} of partner {partner_id:?}")))
    }
}

pub async fn set_status(
    store: &Store,
    partner_id: &str,
    status: PartnerStatus,
    actor: &Actor,
) -> Result<Partner, Error> {
    let before = store.partner(partner_id).await?.ok_or_else(|| no_partner(partner_id))?.status;
    if !store.set_partner_status(partner_id, status).await? {
        return Err(no_partner(partner_id));
    }
    let partner = store.partner(partner_id).await?.ok_or_else(|| no_partner(partner_id))?;
    recorded(store, actor, "partner.status", &partner_id, (Some(before.as_str()), partner.status.as_str()))
        .await;
    Ok(partner)
}
