//! Signing in to the console. The admin token (an operator) or the viewer token (read only), posted
//! once to `/console/sign-in`, becomes a session cookie: `{expiry}.{role}.{nonce}.{MAC}`, MACed with
//! a key derived from both tokens, so that every replica accepts it without shared state and a new
//! token ends every session. It is
//! `HttpOnly`, `SameSite=Strict`, `Secure` unless the console is reached on a loopback name, and
//! lives [`SESSION_TTL`]. Each session's CSRF token is a MAC of its nonce; every state-changing form
//! carries it, and a request another site started (`Sec-Fetch-Site` other than `same-origin`, or,
//! from a browser that does not send it, an `Origin` that is not this host) is refused before the
//! token is looked at. Signing out forgets the nonce
//! on this replica.

use std::collections::HashMap;
use std::sync::Mutex;

use axum::extract::FromRequestParts;
use axum::http::header::{COOKIE, HOST, ORIGIN};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue};
use chrono::Utc;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

use super::super::ApiContext;

/// How long a session lasts after signing in.
pub const SESSION_TTL: chrono::Duration = chrono::Duration::minutes(30);
const COOKIE_NAME: &str = "edi_inbox_console";

/// The console's sessions: the MAC key derived from the tokens (none: nobody can sign in), the
/// tokens' digests, and the nonces signed out before they expired.
pub struct Sessions {
    key: Option<[u8; 32]>,
    operator_digest: Option<[u8; 32]>,
    viewer_digest: Option<[u8; 32]>,
    signed_out: Mutex<HashMap<String, i64>>,
}

/// What a session may do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// Signed in with the admin token: every page and every button.
    Operator,
    /// Signed in with the viewer token: every page, no button.
    Viewer,
}

impl Role {
    fn mark(self) -> &'static str {
        match self {
            Role::Operator => "o",
            Role::Viewer => "v",
        }
    }

    fn from_mark(mark: &str) -> Option<Role> {
        [Role::Operator, Role::Viewer].into_iter().find(|role| role.mark() == mark)
    }
}

/// A signed-in session.
pub struct Session {
    nonce: String,
    pub role: Role,
    /// The token every form of this session carries.
    pub csrf: String,
}

/// Why a request of the console is not served.
#[derive(Debug)]
pub enum Refusal {
    /// No valid session: sign in.
    SignedOut,
    /// A state-changing request without this session's CSRF token, or started by another site.
    Forged,
    /// A viewer's session asked for an action.
    ReadOnly,
}

impl Sessions {
    pub fn new(admin_token: Option<&str>, viewer_token: Option<&str>) -> Sessions {
        let key = (admin_token.is_some() || viewer_token.is_some()).then(|| {
            Sha256::new()
                .chain_update(b"edi-inbox console session\0")
                .chain_update(admin_token.unwrap_or_default())
                .chain_update(b"\0")
                .chain_update(viewer_token.unwrap_or_default())
                .finalize()
                .into()
        });
        let digest = |token: &str| Sha256::digest(token.as_bytes()).into();
        Sessions {
            key,
            operator_digest: admin_token.map(digest),
            viewer_digest: viewer_token.map(digest),
            signed_out: Mutex::default(),
        }
    }

    /// Whether anyone can sign in (a token is configured).
    pub fn enabled(&self) -> bool {
        self.key.is_some()
    }

    fn mac(&self, parts: &[&[u8]]) -> Option<Hmac<Sha256>> {
        let mut mac = Hmac::<Sha256>::new_from_slice(self.key.as_ref()?).ok()?;
        for part in parts {
            mac.update(part);
            mac.update(b"\0");
        }
        Some(mac)
    }

    /// A new session's cookie value, valid for [`SESSION_TTL`].
    pub fn open(&self, role: Role) -> Option<String> {
        let expires = (Utc::now() + SESSION_TTL).timestamp().to_string();
        let mut nonce = [0u8; 16];
        getrandom::fill(&mut nonce).ok()?;
        let (nonce, role) = (hex(&nonce), role.mark());
        let mac = self
            .mac(&[b"session", expires.as_bytes(), role.as_bytes(), nonce.as_bytes()])?
            .finalize()
            .into_bytes();
        Some(format!("{expires}.{role}.{nonce}.{}", hex(&mac)))
    }

    /// The session a cookie value proves: well formed, MAC valid, not expired, not signed out.
    fn session(&self, value: &str) -> Option<Session> {
        let mut fields = value.splitn(4, '.');
        let (expires, mark, nonce, mac) = (fields.next()?, fields.next()?, fields.next()?, fields.next()?);
        let mac = unhex(mac)?;
        self.mac(&[b"session", expires.as_bytes(), mark.as_bytes(), nonce.as_bytes()])?
            .verify_slice(&mac)
            .ok()?;
        let role = Role::from_mark(mark)?;
        if expires.parse::<i64>().ok()? <= Utc::now().timestamp() {
            return None;
        }
        if self.signed_out.lock().ok()?.contains_key(nonce) {
            return None;
        }
        let csrf = hex(&self.mac(&[b"csrf", nonce.as_bytes()])?.finalize().into_bytes());
        Some(Session { nonce: nonce.to_owned(), role, csrf })
    }

    /// Forgets a session here; the nonces of expired sessions are dropped on the way.
    pub fn close(&self, session: &Session) {
        let now = Utc::now().timestamp();
        if let Ok(mut signed_out) = self.signed_out.lock() {
            signed_out.retain(|_, expires| *expires > now);
            signed_out.insert(session.nonce.clone(), (Utc::now() + SESSION_TTL).timestamp());
        }
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

impl Session {
    /// Refuses a viewer's action.
    pub fn may_act(&self) -> Result<(), Refusal> {
        match self.role {
            Role::Operator => Ok(()),
            Role::Viewer => Err(Refusal::ReadOnly),
        }
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
        parts
            .headers
            .get_all(COOKIE)
            .iter()
            .filter_map(|value| value.to_str().ok())
            .flat_map(|cookies| cookies.split(';'))
            .filter_map(|cookie| cookie.trim().strip_prefix(COOKIE_NAME)?.strip_prefix('='))
            .find_map(|value| ctx.console.session(value))
            .ok_or(Refusal::SignedOut)
    }
}

/// The `Set-Cookie` value of a session: `Secure` unless the browser reached us on a loopback name
/// (where there is no TLS to require).
pub fn cookie(value: &str, headers: &HeaderMap) -> String {
    let host = headers.get(HOST).and_then(|v| v.to_str().ok()).unwrap_or_default();
    let name = host
        .rsplit_once(':')
        .filter(|(_, port)| port.bytes().all(|b| b.is_ascii_digit()))
        .map_or(host, |(name, _)| name);
    let loopback = matches!(name, "localhost" | "127.0.0.1" | "[::1]") || name.ends_with(".localhost");
    let secure = if loopback { "" } else { "; Secure" };
    format!(
        "{COOKIE_NAME}={value}; Path=/console; HttpOnly; SameSite=Strict; Max-Age={}{secure}",
        SESSION_TTL.num_seconds()
    )
}

/// The `Set-Cookie` value that removes the session cookie.
pub fn removal() -> HeaderValue {
    HeaderValue::from_static("edi_inbox_console=; Path=/console; HttpOnly; SameSite=Strict; Max-Age=0")
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len()).step_by(2).map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_is_accepted_until_changed_or_signed_out_and_another_token_rejects_it() {
        let sessions = Sessions::new(Some("admin"), Some("viewer"));
        let value = sessions.open(Role::Operator).unwrap();
        let session = sessions.session(&value).expect("a fresh session");
        let mut forged = value.clone().into_bytes();
        let last = forged.len() - 1;
        forged[last] = if forged[last] == b'0' { b'1' } else { b'0' };
        assert!(sessions.session(std::str::from_utf8(&forged).unwrap()).is_none());
        let (_, rest) = value.split_once('.').unwrap();
        assert!(sessions.session(&format!("99999999999.{rest}")).is_none(), "a later expiry breaks the MAC");
        let viewer = value.replacen(".o.", ".v.", 1);
        assert!(
            sessions.session(&viewer).is_none(),
            "the role is MACed: a viewer's cookie cannot be made an operator's"
        );
        assert!(Sessions::new(Some("rotated"), Some("viewer")).session(&value).is_none());
        assert!(Sessions::new(Some("admin"), Some("rotated")).session(&value).is_none());
        assert!(Sessions::new(None, None).session(&value).is_none());
        assert_eq!(sessions.admits("viewer"), Some(Role::Viewer));
        assert_eq!(sessions.admits("admin"), Some(Role::Operator));
        assert_eq!(sessions.admits("guess"), None);
        sessions.close(&session);
        assert!(sessions.session(&value).is_none());
    }

    #[test]
    fn the_cookie_is_secure_off_loopback() {
        let parts = |host: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(HOST, HeaderValue::from_str(host).unwrap());
            headers
        };
        assert!(!cookie("v", &parts("127.0.0.1:8080")).contains("Secure"));
        assert!(!cookie("v", &parts("localhost:8080")).contains("Secure"));
        assert!(cookie("v", &parts("edi.example.com")).contains("; Secure"));
        assert!(cookie("v", &parts("10.0.0.5:8080")).contains("HttpOnly; SameSite=Strict"));
    }
}
