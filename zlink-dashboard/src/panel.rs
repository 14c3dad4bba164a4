//! Panels: an application's own view on the dashboard page. A [`Panel`] brings its own
//! routes (its page at `/`, and whatever API that page calls), served under
//! `/app/{name}/`, and the dashboard page shows that page in a frame of its own section.
//! The panel's `GET` and `HEAD` requests are open like the rest of the dashboard; every
//! other method is a control: `403` while the dashboard's controls are off, `401` without
//! the bearer token, and the panel's handler never runs.

use axum::extract::{Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::{Json, Router};
use serde::Serialize;

use crate::Dashboard;

/// The longest panel name.
pub const MAX_PANEL_NAME: usize = 32;

/// An application's panel: a name (its path, `/app/{name}/`), a title (its section's
/// heading) and its routes.
///
/// Its page runs inside a frame of the dashboard page and may call
/// `parent.zlinkDashboard.token()` for the bearer token the operator typed into the
/// dashboard, to send with its controls as `Authorization: Bearer TOKEN`.
#[derive(Clone)]
pub struct Panel {
    pub(crate) name: String,
    pub(crate) title: String,
    pub(crate) router: Router,
}

impl Panel {
    /// The panel `name` (1 to [`MAX_PANEL_NAME`] lowercase ASCII letters, digits and
    /// `-`), headed `title`, serving `router` (its page at `/`). `InvalidArgument` for
    /// another name.
    pub fn new(name: &str, title: &str, router: Router) -> zlink::Result<Panel> {
        let fits = (1..=MAX_PANEL_NAME).contains(&name.len())
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        if !fits {
            return Err(zlink::Error::InvalidArgument(format!(
                "a panel's name has 1 to {MAX_PANEL_NAME} lowercase letters, digits and '-', not {name:?}"
            )));
        }
        Ok(Panel {
            name: name.to_string(),
            title: title.to_string(),
            router,
        })
    }
}

/// One panel as the page lists it.
#[derive(Serialize)]
pub(crate) struct Listed<'a> {
    name: &'a str,
    title: &'a str,
    path: String,
}

pub(crate) async fn list(State(dashboard): State<Dashboard>) -> Response {
    let listed: Vec<Listed<'_>> = dashboard
        .panels
        .iter()
        .map(|panel| Listed {
            name: &panel.name,
            title: &panel.title,
            path: format!("app/{}/", panel.name),
        })
        .collect();
    Json(listed).into_response()
}

/// Lets reads through, and other methods only with the controls' token.
pub(crate) async fn guard(
    State(dashboard): State<Dashboard>,
    request: Request,
    next: Next,
) -> Response {
    if matches!(*request.method(), Method::GET | Method::HEAD) {
        return next.run(request).await;
    }
    match crate::controls::unlock(&dashboard, request.headers()) {
        Ok(_) => next.run(request).await,
        Err(refusal) => refusal.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panel_name_is_a_path_segment_of_lowercase_letters_digits_and_dashes() {
        assert!(Panel::new("zone-world", "Zone World", Router::new()).is_ok());
        for bad in [
            "",
            "Zone",
            "a/b",
            "../x",
            "a b",
            &"x".repeat(MAX_PANEL_NAME + 1),
        ] {
            let refused = Panel::new(bad, "t", Router::new());
            assert!(
                matches!(refused, Err(zlink::Error::InvalidArgument(_))),
                "{bad:?}"
            );
        }
    }
}
