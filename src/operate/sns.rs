//! SNS subscription messages: an operator confirms one after visiting its `SubscribeURL` (this
//! service does not call AWS).

use chrono::Utc;
use uuid::Uuid;

use super::{Actor, Error, recorded};
use crate::store::{SnsSubscription, Store};

/// Marks a kept subscription message confirmed (confirming twice keeps the first time).
pub async fn confirm(store: &Store, id: Uuid, actor: &Actor) -> Result<SnsSubscription, Error> {
    let confirmed = store.confirm_sns(id, Utc::now()).await?;
    let confirmed = confirmed.ok_or_else(|| Error::NotFound(format!("no SNS subscription message {id}")))?;
    recorded(store, actor, "sns.confirm", &id, (None, "confirmed")).await;
    Ok(confirmed)
}
