//! The sign-in and sign-out pages. A named operator gives name and password; the admin or viewer
//! token still signs in (automation, and the first run before any operator exists). Every wrong
//! attempt counts against its address as a wrong admin token does (429 past the limit, before
//! anything is compared), and a wrong password also against the name (locked on every replica past
//! five in a row), or, from a browser that signed in under the name before (its device cookie),
//! against that device alone. The answer is the same for an unknown name, a wrong password, a disabled
//! operator and a locked name. After signing in, the browser goes back to the page it was sent
//! away from (`next`, a console path only).

use std::net::SocketAddr;

use axum::extract::{ConnectInfo, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use maud::html;
use serde::Deserialize;

use super::device;
use super::session::{self, Refusal, Session};
use super::{Confirmed, Failure, bare};
use crate::http::ApiContext;
use crate::http::auth::{token_guesses_allowed, wrong_token};
use crate::http::problem::ApiError;
use crate::operate::operators;
use crate::operators::Role;

/// The sign-in form: a name and a password, or a token.
#[derive(Deserialize)]
pub struct SignIn {
    #[serde(default)]
    name: String,
    #[serde(default)]
    password: String,
    #[serde(default)]
    token: String,
    #[serde(default)]
    next: String,
}

/// Where a signed-out request is sent: the sign-in page, with the page it wanted.
pub fn to_sign_in(back: Option<&str>, lost: bool) -> Response {
    let mut query = form_urlencoded::Serializer::new(String::new());
    if let Some(next) = back.and_then(console_path).filter(|next| *next != "/console/") {
        query.append_pair("next", next);
    }
    if lost {
        query.append_pair("lost", "true");
    }
    match query.finish() {
        query if query.is_empty() => Redirect::to("/console/sign-in").into_response(),
        query => Redirect::to(&format!("/console/sign-in?{query}")).into_response(),
    }
}

/// `next` when it is a page of the console (a path on this host, not the sign-in page) that can
/// stand in a `Location` header as it is: visible ASCII only (a URL's other bytes are
/// percent-encoded), so that no control character reaches a redirect.
fn console_path(next: &str) -> Option<&str> {
    let visible = next.bytes().all(|b| b.is_ascii_graphic() && b != b'\\');
    let plain = next.len() <= 1024 && visible && !next.starts_with("//");
    let page = next.starts_with("/console/") && !next.starts_with("/console/sign-");
    (plain && page).then_some(next)
}

#[derive(Deserialize)]
pub struct Back {
    #[serde(default)]
    next: String,
    /// An action was refused for want of a session: nothing was done.
    #[serde(default)]
    lost: bool,
}

/// What the sign-in page says when an action was refused for want of a session.
const LOST: &str = "Your session had ended, so that action was not done: nothing changed. \
    Sign in to go back to the page, then do it again.";

pub async fn form(
    State(ctx): State<ApiContext>,
    Query(back): Query<Back>,
    session: Result<Session, Refusal>,
) -> Response {
    if session.is_ok() {
        return Redirect::to(console_path(&back.next).unwrap_or("/console/")).into_response();
    }
    page(&ctx, StatusCode::OK, back.lost.then_some(LOST), &back.next)
}

fn page(ctx: &ApiContext, status: StatusCode, error: Option<&str>, next: &str) -> Response {
    let next = console_path(next).unwrap_or_default();
    let body = bare(
        "Sign in",
        html! {
            main.sign-in {
                h1 { "edi-inbox console" }
                @if let Some(error) = error {
                    p.problem role="alert" { (error) }
                }
                form method="post" action="/console/sign-in" {
                    input type="hidden" name="next" value=(next);
                    label for="name" { "Name" }
                    input id="name" name="name" type="text" autocomplete="username" required;
                    label for="password" { "Password" }
                    input id="password" name="password" type="password" autocomplete="current-password" required;
                    button type="submit" { "Sign in" }
                }
                details {
                    summary { "Sign in with the admin or viewer token" }
                    @if !ctx.console.tokens_configured() {
                        p { "No token is configured (EDI_INBOX_ADMIN_TOKEN, EDI_INBOX_CONSOLE_VIEWER_TOKEN). \
                             Add an operator with " code { "edi-inbox operator add NAME" } "." }
                    }
                    form method="post" action="/console/sign-in" {
                        input type="hidden" name="next" value=(next);
                        label for="token" { "Token" }
                        input id="token" name="token" type="password" autocomplete="off" required;
                        button type="submit" { "Sign in with the token" }
                    }
                }
            }
        },
    );
    (status, body).into_response()
}

pub async fn sign_in(
    State(ctx): State<ApiContext>,
    ConnectInfo(remote): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    form: Result<axum::Form<SignIn>, axum::extract::rejection::FormRejection>,
) -> Response {
    let form = match form {
        Ok(axum::Form(form)) => form,
        // Too large (413), or not a form: nothing was compared.
        Err(rejection) => return page(&ctx, rejection.status(), Some("That was not a sign-in form."), ""),
    };
    if let Some(plain) = plain_http_origin(&ctx, &headers) {
        let message = format!(
            "This console was reached over plain HTTP ({plain}), where the browser drops the session \
             cookie, which is Secure. Reach it over HTTPS, or start the server with \
             --console-cookie-secure never (only on a network you trust)."
        );
        return page(&ctx, StatusCode::BAD_REQUEST, Some(&message), &form.next);
    }
    let remote = Some(remote.ip());
    if token_guesses_allowed(&ctx, remote).is_err() {
        let wait = Some("Too many failed sign-ins from this address: wait a minute before trying again.");
        return page(&ctx, StatusCode::TOO_MANY_REQUESTS, wait, &form.next);
    }
    let device = device::proven(&ctx.console, &headers, &form.name);
    let signed_in = if form.token.is_empty() {
        let device_id = device.as_ref().map(|device| device.id_sha256.as_str());
        match operators::sign_in(&ctx.store, &form.name, &form.password, device_id).await {
            Ok(operator) => operator.map(|operator| (operator.role, Some(operator.name))),
            Err(error) => return Failure::from(error).into_response(),
        }
    } else {
        ctx.console.admits(&form.token).map(|role: Role| (role, None))
    };
    let Some((role, operator)) = signed_in else {
        // Counted, not logged: a flood of guesses must not grow the log.
        wrong_token(&ctx, remote);
        let wrong = if form.token.is_empty() {
            "Wrong name or password, or too many wrong passwords for this name lately: wait and try again."
        } else {
            "That is neither the admin nor the viewer token."
        };
        return page(&ctx, StatusCode::UNAUTHORIZED, Some(wrong), &form.next);
    };
    let mut cookies = Vec::new();
    if let Some(name) = &operator {
        tracing::info!(target: "edi_inbox::operator", operator = %name, role = role.as_str(), "console sign-in");
    }
    match ctx.console.open(&ctx.store, role, operator.clone()).await {
        Ok(value) => cookies.push(ctx.console.cookie(&value, &headers)),
        Err(error) => return Failure::Api(ApiError::Store(error)).into_response(),
    }
    if let Some(name) = &operator {
        match device::remember(&ctx.console, &ctx.store, &headers, name, device).await {
            Ok(cookie) => cookies.push(cookie),
            Err(error) => return Failure::Api(ApiError::Store(error)).into_response(),
        }
    }
    let mut response = Redirect::to(console_path(&form.next).unwrap_or("/console/")).into_response();
    for cookie in cookies.iter().filter_map(|cookie| HeaderValue::from_str(cookie).ok()) {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
    response
}

/// The browser's origin when it is plain HTTP and the session cookie would be `Secure`: the browser
/// would drop the cookie, and every page would send it back to sign in, without a word.
fn plain_http_origin<'h>(ctx: &ApiContext, headers: &'h HeaderMap) -> Option<&'h str> {
    let origin = headers.get(header::ORIGIN)?.to_str().ok()?;
    (origin.starts_with("http://") && ctx.console.secure_for(headers)).then_some(origin)
}

pub async fn sign_out(State(ctx): State<ApiContext>, Confirmed(session): Confirmed) -> Response {
    if let Err(error) = session.close(&ctx.store).await {
        return Failure::Api(ApiError::Store(error)).into_response();
    }
    let mut response = Redirect::to("/console/sign-in").into_response();
    response.headers_mut().insert(header::SET_COOKIE, session::removal());
    response
}

#[cfg(test)]
mod tests {
    use super::console_path;

    #[test]
    fn only_console_pages_are_gone_back_to() {
        assert_eq!(console_path("/console/quarantine?status=held"), Some("/console/quarantine?status=held"));
        for elsewhere in [
            "https://evil.example/",
            "//evil.example/console/",
            "/v1/admin/partners",
            "/console/sign-in",
            "/console/\\x",
            "/console/\u{b}",
            "/console/\u{7f}",
            "/console/é",
            "/console/a b",
            "",
        ] {
            assert_eq!(console_path(elsewhere), None, "{elsewhere}");
        }
    }
}
