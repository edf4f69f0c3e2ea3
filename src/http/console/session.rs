//! Console sessions. A named operator signs in with name and password, or anyone holding the admin
//! token (an operator) or the viewer token (read only) with the token, for automation and before
//! the first operator exists (`sign_in`). Each session is a row of `console_sessions`, so that
//! signing out, disabling an operator or changing a token ends it at once on every replica and
//! after a restart. The cookie is `{id}.{MAC}`: 32 random bytes and their HMAC-SHA256 under the
//! stored console key, so that a made-up cookie is refused without a query; the row is found by
//! the id's SHA-256. A session ends [`SESSION_TTL`] after its last use (sliding, written at most
//! once a minute) and [`SESSION_LIFETIME`] after signing in whatever the use. The cookie is
//! `HttpOnly`, `SameSite=Strict`, and `Secure` as `--console-cookie-secure` says (by default,
//! unless the console is reached on a loopback name).
//! Each session's CSRF token is a MAC of its id; every state-changing form carries it, and a
//! request another site started (`Sec-Fetch-Site` other than `same-origin`, or, from a browser
//! that does not send it, an `Origin` that is not this host) is refused before the token is looked
//! at.

use axum::extract::FromRequestParts;
use axum::http::header::{COOKIE, HOST, ORIGIN, REFERER};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Method, Uri};
use chrono::{DateTime, Duration, Utc};
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

use super::super::ApiContext;
use crate::config::CookieSecure;
use crate::operate::Actor;
use crate::operators::{OperatorName, Role};
use crate::store::{ConsoleSession, Store, StoreError};

/// How long a session lasts without being used.
pub const SESSION_TTL: Duration = Duration::minutes(30);
/// How long a session lasts at most, however it is used.
pub const SESSION_LIFETIME: Duration = Duration::hours(12);
/// How often a session in use has its expiry moved (one write a minute at most).
const SLIDE_EVERY: Duration = Duration::minutes(1);
const COOKIE_NAME: &str = "edi_inbox_console";

/// The console's signing-in material: the key that MACs cookies (the same on every replica), and
/// the tokens' digests.
pub struct Sessions {
    key: Vec<u8>,
    operator_digest: Option<[u8; 32]>,
    viewer_digest: Option<[u8; 32]>,
    secure: CookieSecure,
}

/// A signed-in session.
pub struct Session {
    id_sha256: [u8; 32],
    pub role: Role,
    /// Who signed in by name; `None` for a token's session.
    pub operator: Option<OperatorName>,
    /// The token every form of this session carries.
    pub csrf: String,
}

/// Why a request of the console is not served.
#[derive(Debug)]
pub enum Refusal {
    /// No valid session: sign in, then come back to this page (a GET's path and query, or the
    /// page an action was posted from) if any; `lost` when an action was not done.
    SignedOut { back: Option<String>, lost: bool },
    /// A state-changing request without this session's CSRF token, or started by another site.
    Forged,
    /// A viewer's session asked for an action.
    ReadOnly,
    /// The sessions cannot be read now.
    Unavailable(StoreError),
}

impl Sessions {
    /// The sessions of a server with this stored console key, these tokens and this cookie policy.
    pub fn new(
        key: Vec<u8>,
        admin_token: Option<&str>,
        viewer_token: Option<&str>,
        secure: CookieSecure,
    ) -> Sessions {
        let digest = |token: &str| Sha256::digest(token.as_bytes()).into();
        Sessions {
            key,
            operator_digest: admin_token.map(digest),
            viewer_digest: viewer_token.map(digest),
            secure,
        }
    }

    /// Whether a session cookie for this request is `Secure`: as `--console-cookie-secure` says,
    /// by default unless the browser reached us on a loopback name (where there is no TLS to
    /// require).
    pub fn secure_for(&self, headers: &HeaderMap) -> bool {
        match self.secure {
            CookieSecure::Always => true,
            CookieSecure::Never => false,
            CookieSecure::Auto => !loopback(headers),
        }
    }

    /// The `Set-Cookie` value of a session. The browser keeps it for a session's whole lifetime;
    /// the server ends it sooner when it is not used.
    pub fn cookie(&self, value: &str, headers: &HeaderMap) -> String {
        let secure = if self.secure_for(headers) { "; Secure" } else { "" };
        format!(
            "{COOKIE_NAME}={value}; Path=/console; HttpOnly; SameSite=Strict; Max-Age={}{secure}",
            SESSION_LIFETIME.num_seconds()
        )
    }

    /// Whether a token can sign in (named operators always can, once added).
    pub fn tokens_configured(&self) -> bool {
        self.operator_digest.is_some() || self.viewer_digest.is_some()
    }

    pub(super) fn mac(&self, parts: &[&[u8]]) -> Hmac<Sha256> {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.key).expect("HMAC takes a key of any length");
        for part in parts {
            mac.update(part);
            mac.update(b"\0");
        }
        mac
    }

    /// What a token's session stands on: a digest of the token (not the token), so that a new
    /// token ends every session the old one opened.
    fn token_credential(&self, role: Role) -> Option<String> {
        let digest = match role {
            Role::Operator => self.operator_digest?,
            Role::Viewer => self.viewer_digest?,
        };
        Some(format!("token:{}", hex(&self.mac(&[b"token", &digest]).finalize().into_bytes()[..16])))
    }

    /// Opens a session for a named operator (with its role) or for a token's role, and returns its
    /// cookie value.
    pub async fn open(
        &self,
        store: &Store,
        role: Role,
        operator: Option<OperatorName>,
    ) -> Result<String, StoreError> {
        let credential = match &operator {
            Some(name) => name.as_str().to_owned(),
            None => self.token_credential(role).ok_or_else(|| StoreError::Corrupt("no such token".into()))?,
        };
        let mut id = [0u8; 32];
        getrandom::fill(&mut id).map_err(|e| StoreError::Corrupt(format!("no randomness: {e}")))?;
        let now = Utc::now();
        let session =
            ConsoleSession { operator, role, credential, created_at: now, expires_at: now + SESSION_TTL };
        store.open_console_session(&Sha256::digest(id), &session).await?;
        let id = hex(&id);
        Ok(format!("{id}.{}", hex(&self.mac(&[b"session", id.as_bytes()]).finalize().into_bytes())))
    }

    /// The live session a cookie value proves, its expiry moved on when due.
    async fn session(&self, store: &Store, value: &str) -> Result<Option<Session>, StoreError> {
        let Some((id, mac)) = value.split_once('.') else { return Ok(None) };
        let Some(mac) = unhex(mac) else { return Ok(None) };
        if self.mac(&[b"session", id.as_bytes()]).verify_slice(&mac).is_err() {
            return Ok(None);
        }
        let Some(raw) = unhex(id) else { return Ok(None) };
        let id_sha256: [u8; 32] = Sha256::digest(&raw).into();
        let now = Utc::now();
        let Some(stored) = store.console_session(&id_sha256, now).await? else { return Ok(None) };
        if stored.operator.is_none()
            && self.token_credential(stored.role).as_ref() != Some(&stored.credential)
        {
            return Ok(None);
        }
        if let Some(expires_at) = slid(stored.created_at, stored.expires_at, now) {
            store.extend_console_session(&id_sha256, expires_at).await?;
        }
        let csrf = hex(&self.mac(&[b"csrf", id.as_bytes()]).finalize().into_bytes());
        Ok(Some(Session { id_sha256, role: stored.role, operator: stored.operator, csrf }))
    }

    /// The role `token` signs in as, if any; comparing digests keeps the timing independent of it.
    pub fn admits(&self, token: &str) -> Option<Role> {
        let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        if self.operator_digest == Some(digest) {
            Some(Role::Operator)
        } else if self.viewer_digest == Some(digest) {
            Some(Role::Viewer)
        } else {
            None
        }
    }
}

/// The new expiry of a session used at `now`, when a minute has passed since it was last moved:
/// [`SESSION_TTL`] from now, never past [`SESSION_LIFETIME`] after signing in.
fn slid(created_at: DateTime<Utc>, expires_at: DateTime<Utc>, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    let wanted = (now + SESSION_TTL).min(created_at + SESSION_LIFETIME);
    (wanted - expires_at >= SLIDE_EVERY).then_some(wanted)
}

impl Session {
    /// Refuses a viewer's action.
    pub fn may_act(&self) -> Result<(), Refusal> {
        match self.role {
            Role::Operator => Ok(()),
            Role::Viewer => Err(Refusal::ReadOnly),
        }
    }

    /// Who this session's actions are recorded as.
    pub fn actor(&self) -> Actor {
        Actor::Console(self.operator.clone())
    }

    /// Ends this session on every replica.
    pub async fn close(&self, store: &Store) -> Result<(), StoreError> {
        store.sign_out_console_session(&self.id_sha256, Utc::now()).await
    }

    /// Checks a state-changing request: not started by another site, and carrying this session's
    /// CSRF token.
    pub fn check(&self, headers: &HeaderMap, csrf: &str) -> Result<(), Refusal> {
        let header = |name| headers.get(name).and_then(|v| v.to_str().ok());
        match header("sec-fetch-site") {
            // What every current browser says; trusted over `Origin`, which a proxy's rewritten
            // `Host` would not match.
            Some("same-origin" | "none") => {}
            Some(_) => return Err(Refusal::Forged),
            None => {
                if let Some(origin) = header(ORIGIN.as_str()) {
                    let host = origin.split_once("://").map(|(_, host)| host);
                    if host.is_none() || host != header(HOST.as_str()) {
                        return Err(Refusal::Forged);
                    }
                }
            }
        }
        let expected = Sha256::digest(self.csrf.as_bytes());
        if Sha256::digest(csrf.as_bytes()) != expected {
            return Err(Refusal::Forged);
        }
        Ok(())
    }
}

impl FromRequestParts<ApiContext> for Session {
    type Rejection = Refusal;

    async fn from_request_parts(parts: &mut Parts, ctx: &ApiContext) -> Result<Session, Refusal> {
        for value in cookie_values(&parts.headers, COOKIE_NAME) {
            if let Some(session) =
                ctx.console.session(&ctx.store, value).await.map_err(Refusal::Unavailable)?
            {
                return Ok(session);
            }
        }
        // A GET comes back to itself; an action to the page it was posted from (its `Referer`,
        // sent within this origin: `Referrer-Policy: same-origin`), to be done again.
        let lost = parts.method != Method::GET;
        let back = if lost {
            let referer = parts.headers.get(REFERER).and_then(|value| value.to_str().ok());
            referer
                .and_then(|referer| Uri::try_from(referer).ok())
                .and_then(|uri| uri.path_and_query().cloned())
        } else {
            parts.uri.path_and_query().cloned()
        };
        Err(Refusal::SignedOut { back: back.map(|back| back.as_str().to_owned()), lost })
    }
}

/// The values of the cookie `name` a request carries, the first four at most.
pub(super) fn cookie_values<'h>(headers: &'h HeaderMap, name: &'h str) -> impl Iterator<Item = &'h str> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|cookies| cookies.split(';'))
        .filter_map(move |cookie| cookie.trim().strip_prefix(name)?.strip_prefix('='))
        .take(4)
}

/// Whether the browser reached us on a loopback name.
fn loopback(headers: &HeaderMap) -> bool {
    let host = headers.get(HOST).and_then(|v| v.to_str().ok()).unwrap_or_default();
    let name = host
        .rsplit_once(':')
        .filter(|(_, port)| port.bytes().all(|b| b.is_ascii_digit()))
        .map_or(host, |(name, _)| name);
    matches!(name, "localhost" | "127.0.0.1" | "[::1]") || name.ends_with(".localhost")
}

/// The `Set-Cookie` value that removes the session cookie.
pub fn removal() -> HeaderValue {
    HeaderValue::from_static("edi_inbox_console=; Path=/console; HttpOnly; SameSite=Strict; Max-Age=0")
}

pub(super) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub(super) fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) || text.len() > 128 {
        return None;
    }
    (0..text.len()).step_by(2).map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_slides_a_minute_at_a_time_and_never_past_its_lifetime() {
        let signed_in = Utc::now();
        let expires = signed_in + SESSION_TTL;
        assert_eq!(slid(signed_in, expires, signed_in + Duration::seconds(30)), None);
        let later = signed_in + Duration::minutes(2);
        assert_eq!(slid(signed_in, expires, later), Some(later + SESSION_TTL));
        let end = signed_in + SESSION_LIFETIME;
        assert_eq!(slid(signed_in, end, end - Duration::minutes(5)), None, "never past the lifetime");
        let last = end - Duration::minutes(10);
        assert_eq!(
            slid(signed_in, last - Duration::minutes(20), last - Duration::minutes(15)),
            Some(signed_in + SESSION_LIFETIME)
        );
    }

    #[test]
    fn the_cookie_is_secure_off_loopback_unless_told_otherwise() {
        let parts = |host: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(HOST, HeaderValue::from_str(host).unwrap());
            headers
        };
        let sessions = |secure| Sessions::new(vec![1; 32], None, None, secure);
        let auto = sessions(CookieSecure::Auto);
        assert!(!auto.cookie("v", &parts("127.0.0.1:8080")).contains("Secure"));
        assert!(!auto.cookie("v", &parts("localhost:8080")).contains("Secure"));
        assert!(auto.cookie("v", &parts("edi.example.com")).contains("; Secure"));
        assert!(auto.cookie("v", &parts("10.0.0.5:8080")).contains("HttpOnly; SameSite=Strict"));
        assert!(sessions(CookieSecure::Always).cookie("v", &parts("localhost")).contains("; Secure"));
        assert!(!sessions(CookieSecure::Never).cookie("v", &parts("edi.example.com")).contains("Secure"));
    }
}
