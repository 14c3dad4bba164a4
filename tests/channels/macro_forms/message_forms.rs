//! Message derive forms: tuple, unit, enum and generic types; JSON and custom codecs; name
//! overrides.

use zlink::{Bytes, Codec, Message};

#[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize, zlink::Message)]
#[message(name = "chat.line", codec = zlink::Json)]
struct Line {
    text: String,
}

#[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize, zlink::Message)]
enum Command {
    Start,
    Stop { reason: String },
}

#[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize, zlink::Message)]
struct Envelope<T>(T);

#[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize, zlink::Message)]
#[message(reply = Envelope<u32>)]
struct Wrap(u32);

/// Sends the UTF-8 text as raw bytes.
struct Raw;

impl Codec<Shout> for Raw {
    fn encode(value: &Shout) -> zlink::Result<Bytes> {
        Ok(Bytes::copy_from_slice(value.0.as_bytes()))
    }
    fn decode(bytes: &[u8]) -> zlink::Result<Shout> {
        String::from_utf8(bytes.to_vec())
            .map(Shout)
            .map_err(|e| zlink::Error::new(zlink::ErrorKind::ProtocolError, e.to_string()))
    }
}

#[derive(Debug, PartialEq, zlink::Message)]
#[message(codec = Raw)]
struct Shout(String);

fn takes_request<R: zlink::Request<Reply = Envelope<u32>>>() {}

#[test]
fn message_forms() {
    assert_eq!(Line::PACKET_NAME, "chat.line");
    let line = Line { text: "hi".into() };
    assert_eq!(&line.encode().unwrap()[..], br#"{"text":"hi"}"#);
    assert_eq!(Line::decode(br#"{"text":"hi"}"#).unwrap(), line);

    assert_eq!(Command::PACKET_NAME, "Command");
    let stop = Command::Stop {
        reason: "done".into(),
    };
    assert_eq!(Command::decode(&stop.encode().unwrap()).unwrap(), stop);
    assert_eq!(
        Command::decode(&Command::Start.encode().unwrap()).unwrap(),
        Command::Start
    );

    assert_eq!(<Envelope<u32>>::PACKET_NAME, "Envelope");
    assert_eq!(
        <Envelope<u32>>::decode(&Envelope(7u32).encode().unwrap()).unwrap(),
        Envelope(7)
    );
    takes_request::<Wrap>();

    assert_eq!(&Shout("HEY".into()).encode().unwrap()[..], b"HEY");
    assert!(Shout::decode(&[0xff])
        .unwrap_err()
        .is(zlink::ErrorKind::ProtocolError));
}
