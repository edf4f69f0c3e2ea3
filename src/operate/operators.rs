//! Named operators: registering, disabling, enabling and resetting one (the command line's
//! `edi-inbox operator …`), and checking a console sign-in. Each guess is counted before its
//! password is checked, on the operator's row (every replica sees it), or, from a browser that
//! signed in under the name before, on that device's row; past [`FREE_ATTEMPTS`] they are locked
//! and a guess is refused unread. Argon2id takes tens of milliseconds of one CPU, so at
//! most [`CHECKS_AT_ONCE`] checks run at a time, on the blocking pool, and [`CHECKS_WAITING`] wait:
//! a flood of sign-ins is refused as busy instead of taking the CPUs that deliveries need.

use chrono::Utc;
use tokio::sync::Semaphore;

use super::{Actor, Error, recorded};
use crate::operators::{FREE_ATTEMPTS, Operator, OperatorName, Role, hash, locked_until, verify};
use crate::store::{Guesses, Store};

/// Password checks running at once, whatever the number of sign-ins.
pub const CHECKS_AT_ONCE: usize = 2;
static CHECKS: Semaphore = Semaphore::const_new(CHECKS_AT_ONCE);
/// Password checks waiting for their turn at most; one more is refused as busy (429) at once, so
/// that a flood of sign-ins from many addresses holds a bounded number of requests.
const CHECKS_WAITING: usize = 32;
static WAITING: Semaphore = Semaphore::const_new(CHECKS_WAITING);

/// Registers an operator with its password (hashed here; never stored or logged as given).
pub async fn add(
    store: &Store,
    name: &OperatorName,
    role: Role,
    password: &str,
    actor: &Actor,
) -> Result<Operator, Error> {
    let hashed = hashed(password).await?;
    let Some(added) = store.add_operator(name, role, &hashed, Utc::now()).await? else {
        return Err(Error::Exists(format!("an operator named {name} exists already")));
    };
    recorded(store, actor, "operator.add", name, (None, role.as_str())).await;
    Ok(added)
}

/// Disables an operator: its sessions end at once, on every replica, and it cannot sign in.
pub async fn disable(store: &Store, name: &OperatorName, actor: &Actor) -> Result<Operator, Error> {
    let before = state(store, name).await?;
    let operator = found(store.set_operator_disabled(name, Some(Utc::now())).await?, name)?;
    recorded(store, actor, "operator.disable", name, (before, "disabled")).await;
    Ok(operator)
}

/// Lets a disabled operator sign in again.
pub async fn enable(store: &Store, name: &OperatorName, actor: &Actor) -> Result<Operator, Error> {
    let before = state(store, name).await?;
    let operator = found(store.set_operator_disabled(name, None).await?, name)?;
    recorded(store, actor, "operator.enable", name, (before, "enabled")).await;
    Ok(operator)
}

/// Gives an operator a new password: its sessions end and its failed sign-ins are forgotten.
pub async fn reset(
    store: &Store,
    name: &OperatorName,
    password: &str,
    actor: &Actor,
) -> Result<Operator, Error> {
    let hashed = hashed(password).await?;
    let operator = found(store.set_operator_password(name, &hashed, Utc::now()).await?, name)?;
    recorded(store, actor, "operator.reset", name, (None, "password changed")).await;
    Ok(operator)
}

/// The operator `name` and `password` sign in as: `None` for an unknown name, a wrong password, a
/// disabled operator or a locked name, all alike (the caller cannot tell which). `device` is the
/// id digest of a device cookie the browser proved for this name: its guesses count on it alone.
pub async fn sign_in(
    store: &Store,
    name: &str,
    password: &str,
    device: Option<&str>,
) -> Result<Option<Operator>, Error> {
    let found = match OperatorName::parse(name) {
        Ok(name) => store.operator_with_hash(&name).await?,
        Err(_) => None,
    };
    let password = password.to_owned();
    let Some((operator, hash)) = found else {
        checked(move || verify(None, &password)).await?;
        return Ok(None);
    };
    let from_device = device.map(|id_sha256| Guesses::Device { id_sha256, operator: &operator.name });
    let guesses = match from_device {
        Some(device) if store.sign_in_guesses(&device).await?.is_some() => device,
        _ => Guesses::Name(&operator.name),
    };
    if !counted(store, &guesses).await? {
        return Ok(None);
    }
    if !checked(move || verify(Some(&hash), &password)).await? {
        return Ok(None);
    }
    store.forget_guesses(&guesses).await?;
    Ok(operator.disabled_at.is_none().then_some(operator))
}

/// Tries at counting a guess before giving up (each lost only to another guess counted meanwhile).
const COUNT_TRIES: usize = 8;

/// Counts a guess on `guesses` before its password is checked, and locks them past
/// [`FREE_ATTEMPTS`] in the same statement; false when they are locked now, or when every try was
/// overtaken by other guesses: the guess is then refused unchecked. Thirty guesses sent at once
/// are thus five checked, not thirty.
async fn counted(store: &Store, guesses: &Guesses<'_>) -> Result<bool, Error> {
    for _ in 0..COUNT_TRIES {
        let now = Utc::now();
        let Some(seen) = store.sign_in_guesses(guesses).await? else { return Ok(false) };
        if seen.locked_until.is_some_and(|until| until > now) {
            return Ok(false);
        }
        let failures = seen.failed_sign_ins.saturating_add(1);
        if store.count_guess(guesses, seen.failed_sign_ins, locked_until(failures, now)).await? {
            if failures == FREE_ATTEMPTS {
                let on = match guesses {
                    Guesses::Name(_) => "name",
                    Guesses::Device { .. } => "device",
                };
                tracing::warn!(target: "edi_inbox::security", operator = %guesses.operator(), on, failures,
                    "console sign-in locked after wrong passwords");
            }
            return Ok(true);
        }
    }
    Ok(false)
}

async fn hashed(password: &str) -> Result<String, Error> {
    let password = password.to_owned();
    checked(move || hash(&password)).await?.map_err(Error::Invalid)
}

/// Runs a password hash or check on the blocking pool, at most [`CHECKS_AT_ONCE`] at a time.
async fn checked<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> Result<T, Error> {
    let _waiting = WAITING.try_acquire().map_err(|_| Error::Busy("too many sign-ins at once".into()))?;
    let _turn = CHECKS.acquire().await.map_err(|e| Error::Invalid(e.to_string()))?;
    tokio::task::spawn_blocking(work).await.map_err(|e| Error::Invalid(format!("password check failed: {e}")))
}

/// Whether an operator is `enabled` or `disabled` now (`None`: no such operator).
async fn state(store: &Store, name: &OperatorName) -> Result<Option<&'static str>, Error> {
    let operator = store.operator_with_hash(name).await?;
    Ok(operator.map(|(operator, _)| if operator.disabled_at.is_some() { "disabled" } else { "enabled" }))
}

fn found(operator: Option<Operator>, name: &OperatorName) -> Result<Operator, Error> {
    operator.ok_or_else(|| Error::NotFound(format!("no operator named {name}")))
}
