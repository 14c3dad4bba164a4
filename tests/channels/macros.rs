//! The macros' generated code at work: generated groups served over real TCP on 127.0.0.1
//! and called through generated clients.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use zlink::{CallOptions, ErrorKind, HandlerContext, Message, PeerSpec, Runtime};
use zlink_testkit::wait_until;
use zlink_tests::{node, start, stop, WAIT};

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = Balance)]
struct Deposit {
    cents: u64,
}

#[derive(Debug, PartialEq, Serialize, Deserialize, zlink::Message)]
struct Balance {
    cents: u64,
    tag: Option<String>,
    teller: String,
}

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(reply = Balance)]
struct Withdraw {
    cents: u64,
    hold_ms: u64,
}

#[derive(Debug, Serialize, Deserialize, zlink::Message)]
#[message(name = "bank.audit", codec = zlink::Json)]
struct Audit {
    note: String,
}

#[derive(Debug)]
enum BankError {
    Insufficient,
}

impl From<BankError> for zlink::Error {
    fn from(e: BankError) -> Self {
        match e {
            BankError::Insufficient => zlink::Error::new(ErrorKind::Rejected, "insufficient funds"),
        }
    }
}

/// A stateful group: clones share the balance and the audit count.
#[derive(Clone)]
struct Bank {
    teller: String,
    cents: Arc<AtomicU64>,
    audits: Arc<AtomicU64>,
}

#[zlink::channel(server, name = "bank")]
impl Bank {
    #[handler]
    async fn deposit(&self, d: Deposit, ctx: &HandlerContext) -> Result<Balance, BankError> {
        let cents = self.cents.fetch_add(d.cents, Ordering::SeqCst) + d.cents;
        Ok(self.balance(cents, ctx))
    }

    #[handler]
    async fn withdraw(&self, w: Withdraw, ctx: &HandlerContext) -> Result<Balance, BankError> {
        tokio::time::sleep(Duration::from_millis(w.hold_ms)).await;
        let now = self.cents.load(Ordering::SeqCst);
        if now < w.cents {
            return Err(BankError::Insufficient);
        }
        let cents = self.cents.fetch_sub(w.cents, Ordering::SeqCst) - w.cents;
        Ok(self.balance(cents, ctx))
    }

    #[handler]
    async fn audit(&self, _a: Audit, _ctx: &HandlerContext) -> zlink::Result<()> {
        self.audits.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    fn balance(&self, cents: u64, ctx: &HandlerContext) -> Balance {
        Balance {
            cents,
            tag: ctx.metadata().get("tag").map(str::to_string),
            teller: self.teller.clone(),
        }
    }
}

impl Bank {
    fn new(teller: &str) -> Self {
        Bank {
            teller: teller.into(),
            cents: Arc::default(),
            audits: Arc::default(),
        }
    }
}

/// A second group in the same crate, reusing a message type on another channel.
#[derive(Clone)]
struct Mirror;

#[zlink::channel(server)]
impl Mirror {
    #[handler]
    async fn deposit(&self, d: Deposit, _ctx: &HandlerContext) -> zlink::Result<Balance> {
        Ok(Balance {
            cents: d.cents,
            tag: None,
            teller: "mirror".into(),
        })
    }
}

async fn caller_of(server: &zlink::Handle, channels: &[&str]) -> Runtime {
    let mut builder =
        node("caller").peer(PeerSpec::new(server.endpoint()).expect_rid(server.rid()));
    for channel in channels {
        builder = builder.channel_client(*channel);
    }
    let caller = start(builder).await;
    caller
        .nodes()
        .wait_for(WAIT, |peers| peers.len() == 1)
        .await
        .expect("server ready");
    caller
}

#[tokio::test]
async fn generated_client_calls_a_generated_group_over_tcp() {
    let bank = Bank::new("teller-1");
    let server = start(node("bank-node").serve(bank.clone())).await;
    let caller = caller_of(&server, &["bank"]).await;
    let client = BankClient::on_default_channel(&caller);
    assert_eq!(client.channel_name(), "bank");

    let balance = client.deposit(&Deposit { cents: 500 }).await.unwrap();
    assert_eq!(
        balance,
        Balance {
            cents: 500,
            tag: None,
            teller: "teller-1".into()
        }
    );
    assert_eq!(
        bank.cents.load(Ordering::SeqCst),
        500,
        "the served clone shares state"
    );

    client
        .audit(&Audit {
            note: "checked".into(),
        })
        .await
        .unwrap();
    wait_until(WAIT, "audit handled", || async {
        bank.audits.load(Ordering::SeqCst) == 1
    })
    .await;
    stop([caller, server]).await;
}

#[tokio::test]
async fn generated_client_options_carry_timeout_and_metadata() {
    let server = start(node("bank-node").serve(Bank::new("t"))).await;
    let caller = caller_of(&server, &["bank"]).await;
    let client = BankClient::new(&caller, "bank");

    let tagged = CallOptions::new().metadata("tag", "t-42").unwrap();
    let balance = client
        .deposit(&Deposit { cents: 9 })
        .options(tagged)
        .await
        .unwrap();
    assert_eq!(balance.tag.as_deref(), Some("t-42"));

    let short = CallOptions::new().timeout(Duration::from_millis(100));
    let err = client
        .withdraw(&Withdraw {
            cents: 1,
            hold_ms: 1_000,
        })
        .options(short)
        .await
        .unwrap_err();
    assert!(err.is(ErrorKind::DeadlineExceeded), "{err}");
    stop([caller, server]).await;
}

#[tokio::test]
async fn handler_error_type_becomes_an_error_reply_with_its_kind() {
    let server = start(node("bank-node").serve(Bank::new("t"))).await;
    let caller = caller_of(&server, &["bank"]).await;
    let err = BankClient::on_default_channel(&caller)
        .withdraw(&Withdraw {
            cents: 1,
            hold_ms: 0,
        })
        .await
        .unwrap_err();
    assert!(err.is(ErrorKind::Rejected), "{err}");
    assert!(err.to_string().contains("insufficient funds"), "{err}");
    stop([caller, server]).await;
}

#[tokio::test]
async fn several_generated_groups_serve_their_own_channels_on_one_node() {
    let server = start(
        node("both")
            .serve(Bank::new("bank-teller"))
            .channel_server("mirror", Mirror),
    )
    .await;
    let caller = caller_of(&server, &["bank", "mirror"]).await;
    let bank = BankClient::on_default_channel(&caller);
    let mirror = MirrorClient::new(&caller, "mirror");
    let (a, b) = (
        bank.deposit(&Deposit { cents: 1 }).await.unwrap(),
        mirror.deposit(&Deposit { cents: 1 }).await.unwrap(),
    );
    assert_eq!(
        (a.teller.as_str(), b.teller.as_str()),
        ("bank-teller", "mirror")
    );
    stop([caller, server]).await;
}

#[tokio::test]
async fn generated_group_answers_unknown_packets_not_found_and_bad_payloads_protocol_error() {
    let server = start(node("mirror-node").channel_server("mirror", Mirror)).await;
    let caller = caller_of(&server, &["mirror"]).await;
    // Mirror has no Withdraw handler.
    let err = caller
        .channels()
        .request(
            "mirror",
            &Withdraw {
                cents: 1,
                hold_ms: 0,
            },
        )
        .await
        .unwrap_err();
    assert!(err.is(ErrorKind::NotFound), "{err}");
    // A message claiming Deposit's packet name with another shape fails to decode.
    #[derive(Serialize, Deserialize, zlink::Message)]
    #[message(name = "Deposit", reply = Balance)]
    struct FakeDeposit(String);
    let err = caller
        .channels()
        .request("mirror", &FakeDeposit("x".into()))
        .await
        .unwrap_err();
    assert!(err.is(ErrorKind::ProtocolError), "{err}");
    stop([caller, server]).await;
}

#[test]
fn derived_packet_names_and_codecs_are_what_the_wire_carries() {
    assert_eq!(Deposit::PACKET_NAME, "Deposit");
    assert_eq!(Audit::PACKET_NAME, "bank.audit");
    let json = Audit { note: "n".into() }.encode().unwrap();
    assert_eq!(&json[..], br#"{"note":"n"}"#);
    let cbor = Deposit { cents: 1 }.encode().unwrap();
    assert_eq!(&cbor[..], &[0xA1, 0x65, b'c', b'e', b'n', b't', b's', 0x01]);
    use zlink::{HandlerGroup, PacketKind};
    assert_eq!(
        Bank::new("t").packets(),
        vec![
            ("Deposit".to_string(), PacketKind::Request),
            ("Withdraw".to_string(), PacketKind::Request),
            ("bank.audit".to_string(), PacketKind::Send),
        ]
    );
}
