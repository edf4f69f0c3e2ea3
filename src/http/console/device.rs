//! Device cookies (OWASP's defence against lockout by strangers): a browser that signed in under a
//! name gets a cookie `{id}.{MAC}`, 32 random bytes and their HMAC-SHA256 under the console key
//! bound to the operator's name. Signing in again from it, its wrong passwords count on its own row
//! (`console_devices`, found by the id's SHA-256), not on the name: five guesses from anywhere
//! else lock the name for browsers that never signed in under it, and the operator's own browser
//! still signs in. The cookie goes only to the sign-in form (`Path=/console/sign-in`).

use axum::http::HeaderMap;
use chrono::{Duration, Utc};
use hmac::Mac;
use sha2::{Digest, Sha256};

use super::session::{Sessions, cookie_values, hex, unhex};
use crate::operators::OperatorName;
use crate::store::{Store, StoreError};

const COOKIE_NAME: &str = "edi_inbox_device";
/// How long a device is remembered after its last sign-in.
const DEVICE_LIFETIME: Duration = Duration::days(180);

/// A device cookie this server made for an operator: its value, and its id's SHA-256 (hex).
pub struct Device<'h> {
    value: &'h str,
    pub id_sha256: String,
}

/// The device a sign-in's browser proves it signed in from under `name` before: its cookie, when
/// the cookie's MAC is this server's for that name.
pub fn proven<'h>(sessions: &Sessions, headers: &'h HeaderMap, name: &str) -> Option<Device<'h>> {
    cookie_values(headers, COOKIE_NAME).find_map(|value| {
        let (id, mac) = value.split_once('.')?;
        sessions.mac(&[b"device", name.as_bytes(), id.as_bytes()]).verify_slice(&unhex(mac)?).ok()?;
        Some(Device { value, id_sha256: hex(&Sha256::digest(unhex(id)?)) })
    })
}

/// Remembers the browser `operator` just signed in from for [`DEVICE_LIFETIME`] more, under the
/// cookie it brought (`device`), else under a new one; returns the `Set-Cookie` value.
pub async fn remember(
    sessions: &Sessions,
    store: &Store,
    headers: &HeaderMap,
    operator: &OperatorName,
    device: Option<Device<'_>>,
) -> Result<String, StoreError> {
    let device = match device {
        Some(device) => (device.value.to_owned(), device.id_sha256),
        None => {
            let mut id = [0u8; 32];
            getrandom::fill(&mut id).map_err(|e| StoreError::Corrupt(format!("no randomness: {e}")))?;
            let (digest, id) = (hex(&Sha256::digest(id)), hex(&id));
            let mac = sessions.mac(&[b"device", operator.as_str().as_bytes(), id.as_bytes()]);
            (format!("{id}.{}", hex(&mac.finalize().into_bytes())), digest)
        }
    };
    let (value, id_sha256) = device;
    store.keep_console_device(&id_sha256, operator, Utc::now() + DEVICE_LIFETIME).await?;
    let secure = if sessions.secure_for(headers) { "; Secure" } else { "" };
    Ok(format!(
        "{COOKIE_NAME}={value}; Path=/console/sign-in; HttpOnly; SameSite=Strict; Max-Age={}{secure}",
        DEVICE_LIFETIME.num_seconds()
    ))
}
