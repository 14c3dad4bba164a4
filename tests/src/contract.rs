//! Contracts that hold for Spots and Actors alike, written once and run for each kind: the
//! probe message both kinds' test types handle, and the checks a test runs against an
//! owner and a caller on another node.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use zlink::object::{Context, Kind};
use zlink::{Call, ErrorKind, Reply, Request};

/// What a probe handler should do: fail with an ErrorKind code, fail on its argument, or
/// sleep this long first.
#[derive(Debug, Default, Serialize, Deserialize, zlink::Message)]
#[message(reply = Inspected)]
pub struct Inspect {
    pub fail: Option<u8>,
    pub fail_argument: bool,
    pub stall_ms: u64,
    /// Fail with a stale-route refusal, counting the run under this tag.
    pub refuse_as_stale: Option<String>,
}

/// How many times a probe handler refused as stale, by tag.
static STALE_REFUSALS: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

fn refusals_tagged(tag: &str) -> usize {
    let runs = STALE_REFUSALS.lock().unwrap_or_else(|p| p.into_inner());
    runs.iter().filter(|t| *t == tag).count()
}

/// What the probe handler saw: the metadata, and whether it had a deadline.
#[derive(Debug, PartialEq, Serialize, Deserialize, zlink::Message)]
pub struct Inspected {
    pub metadata: Vec<(String, String)>,
    pub has_deadline: bool,
}

/// The body of a probe handler of either kind.
pub async fn inspected<K: Kind>(inspect: Inspect, ctx: &Context<K>) -> zlink::Result<Inspected> {
    tokio::time::sleep(Duration::from_millis(inspect.stall_ms)).await;
    if let Some(tag) = inspect.refuse_as_stale {
        STALE_REFUSALS
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(tag);
        return Err(zlink::Error::refused(
            ErrorKind::Unavailable,
            zlink::Refusal::StaleRoute,
            "a refusal the handler heard on a call of its own",
        ));
    }
    if let Some(code) = inspect.fail {
        let kind = ErrorKind::from_code(code).expect("a kind");
        return Err(zlink::Error::new(
            kind,
            format!("the handler failed with {kind}"),
        ));
    }
    if inspect.fail_argument {
        return Err(zlink::Error::InvalidArgument(
            "the handler refused its argument".into(),
        ));
    }
    Ok(Inspected {
        metadata: ctx
            .metadata()
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        has_deadline: ctx.deadline().is_some(),
    })
}

/// One object addressed by ID, of either kind.
#[derive(Debug, Clone, Copy)]
pub enum ById {
    Spot(&'static str),
    Actor(&'static str),
}

impl ById {
    /// A request to the object from `rt`.
    pub fn request<'a, R: Request>(
        self,
        rt: &'a zlink::Handle,
        request: &R,
    ) -> Call<'a, Reply<R::Reply>> {
        match self {
            ById::Spot(id) => rt.spots().request(id, request),
            ById::Actor(id) => rt.actors().request(id, request),
        }
    }
}

/// What the probe saw of a plain request from `rt` carrying the traced metadata.
async fn traced_inspect(target: ById, rt: &zlink::Handle) -> Inspected {
    target
        .request(rt, &Inspect::default())
        .options(traced())
        .await
        .unwrap()
}

fn traced() -> zlink::CallOptions {
    zlink::CallOptions::new()
        .metadata("trace", "t-1")
        .unwrap()
        .metadata("tenant", "blue")
        .unwrap()
}

/// A caller on the owner's node and one on `other` see the same contract from `target`
/// (a probe whose handler is [`inspected`]): the same metadata reaches the handler and
/// none of it stays; a handler's error arrives as the same kind and detail; a handler that
/// outlives the call's deadline ends the call at the deadline; and its late reply is
/// discarded.
pub async fn a_local_owner_answers_like_a_remote_one(
    target: ById,
    owner: &zlink::Handle,
    other: &zlink::Handle,
) {
    let sent = vec![
        ("tenant".to_string(), "blue".to_string()),
        ("trace".to_string(), "t-1".to_string()),
    ];
    for rt in [owner, other] {
        let seen = traced_inspect(target, rt).await;
        let expected = Inspected {
            metadata: sent.clone(),
            has_deadline: true,
        };
        assert_eq!(seen, expected, "{target:?}, caller {}", rt.rid());
        let plain = target.request(rt, &Inspect::default()).await.unwrap();
        assert!(
            plain.metadata.is_empty(),
            "{target:?}, caller {}: {plain:?}",
            rt.rid()
        );
    }
    for kind in ErrorKind::ALL {
        let failing = Inspect {
            fail: Some(kind.code()),
            ..Inspect::default()
        };
        let local = target
            .request(owner, &failing)
            .options(traced())
            .await
            .unwrap_err();
        let remote = target
            .request(other, &failing)
            .options(traced())
            .await
            .unwrap_err();
        assert_eq!(local.kind(), Some(kind), "{target:?}, local: {local}");
        assert_eq!(remote.kind(), Some(kind), "{target:?}, remote: {remote}");
        assert_eq!(local, remote, "{target:?}");
    }
    let short = || zlink::CallOptions::new().timeout(Duration::from_millis(150));
    let stalled = Inspect {
        stall_ms: 600,
        ..Inspect::default()
    };
    for rt in [owner, other] {
        let started = tokio::time::Instant::now();
        let late = target
            .request(rt, &stalled)
            .options(short())
            .await
            .unwrap_err();
        assert!(
            late.is(ErrorKind::DeadlineExceeded),
            "{target:?}, caller {}: {late}",
            rt.rid()
        );
        let waited = started.elapsed();
        assert!(
            waited < Duration::from_millis(550),
            "{target:?}, caller {} waited for the handler: {waited:?}",
            rt.rid()
        );
    }
    // The late replies are discarded: the next requests get their own answers.
    for rt in [owner, other] {
        let seen = traced_inspect(target, rt).await;
        assert_eq!(seen.metadata, sent, "{target:?}, caller {}", rt.rid());
    }
}

/// A handler's refusal of its argument reaches a caller on the owner's node as the same
/// error kind as a caller on `other`.
pub async fn an_argument_error_reaches_a_local_caller_as_a_remote_one(
    target: ById,
    owner: &zlink::Handle,
    other: &zlink::Handle,
) {
    let refusing = Inspect {
        fail_argument: true,
        ..Inspect::default()
    };
    let local = target.request(owner, &refusing).await.unwrap_err();
    let remote = target.request(other, &refusing).await.unwrap_err();
    assert_eq!(
        local.kind(),
        remote.kind(),
        "{target:?}, local: {local}; remote: {remote}"
    );
}

/// A handler that fails with a framework refusal it heard on a call of its own (here, one
/// it makes up) runs once: its caller, on the owner's node or on `other`, hears the error
/// kind and detail without the refusal, so it does not resolve again and resend work that
/// already ran.
pub async fn a_refusal_a_handler_returns_is_not_its_callers(
    target: ById,
    owner: &zlink::Handle,
    other: &zlink::Handle,
) {
    for rt in [owner, other] {
        let tag = format!("{target:?} from {}", rt.rid());
        let refusing = Inspect {
            refuse_as_stale: Some(tag.clone()),
            ..Inspect::default()
        };
        let err = target.request(rt, &refusing).await.unwrap_err();
        assert!(err.is(ErrorKind::Unavailable), "{tag}: {err}");
        assert_eq!(err.refusal(), None, "{tag}: {err:?}");
        assert_eq!(refusals_tagged(&tag), 1, "{tag}: the handler ran again");
    }
}
