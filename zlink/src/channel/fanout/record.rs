//! Fanout records on the wire.
//!
//! An event is three frames: the topic (its own first frame, so SUB prefix filtering works),
//! the envelope head (`5A 4D 01 28 00` + CBOR map with `"p"`: the packet name) and the
//! payload (the codec's bytes). The liveness beacon is two frames: the reserved topic
//! `01 5A 4C 46 31` and `5A 46 01 01`.

use bytes::Bytes;

use crate::link::zmtp::Record;
use crate::wire::{Command, Envelope, Header};

/// The reserved topic of the liveness beacon. Publishing on exactly this topic is refused.
pub const BEACON_TOPIC: &[u8] = &[0x01, 0x5A, 0x4C, 0x46, 0x31];
/// The beacon's only payload.
pub const BEACON_PAYLOAD: &[u8] = &[0x5A, 0x46, 0x01, 0x01];

/// The record of one event.
pub(crate) fn event(topic: Bytes, packet: &str, payload: Bytes) -> Record {
    let envelope = Envelope {
        command: Command::FanoutEvent,
        header: Header {
            packet: Some(packet.to_string()),
            ..Header::default()
        },
        metadata: None,
        payload: Some(payload),
    };
    let mut frames = vec![topic];
    frames.extend(envelope.encode());
    frames.into()
}

/// The beacon record.
pub(crate) fn beacon() -> Record {
    vec![
        Bytes::from_static(BEACON_TOPIC),
        Bytes::from_static(BEACON_PAYLOAD),
    ]
    .into()
}

/// What a subscriber received.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Inbound {
    Beacon,
    Event { packet: String, payload: Bytes },
}

/// Parses one received record; anything malformed (including a reserved-topic record
/// that is not an exact beacon) is a protocol error.
pub(crate) fn parse(frames: &[Bytes]) -> Result<Inbound, String> {
    let topic = frames.first().ok_or("empty record")?;
    if topic.as_ref() == BEACON_TOPIC {
        return match frames {
            [_, payload] if payload.as_ref() == BEACON_PAYLOAD => Ok(Inbound::Beacon),
            _ => Err("malformed liveness beacon".into()),
        };
    }
    let envelope = Envelope::decode(&frames[1..]).map_err(|e| e.reason)?;
    if envelope.command != Command::FanoutEvent {
        return Err(format!("{:?} is not a fanout event", envelope.command));
    }
    Ok(Inbound::Event {
        packet: envelope.header.packet.unwrap_or_default(),
        payload: envelope.payload.unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_and_beacons_round_trip_and_impostors_are_refused() {
        let record = event(
            Bytes::from_static(b"prices"),
            "PriceChanged",
            Bytes::from_static(b"\xa0"),
        );
        assert_eq!(record.len(), 3);
        assert_eq!(&record[1][..5], &[0x5A, 0x4D, 0x01, 40, 0x00]);
        assert_eq!(
            parse(&record),
            Ok(Inbound::Event {
                packet: "PriceChanged".into(),
                payload: Bytes::from_static(b"\xa0")
            })
        );
        assert_eq!(parse(&beacon()), Ok(Inbound::Beacon));
        let impostor = [Bytes::from_static(BEACON_TOPIC), Bytes::from_static(b"no")];
        assert!(parse(&impostor).is_err());
        let three = [beacon()[0].clone(), beacon()[1].clone(), Bytes::new()];
        assert!(parse(&three).is_err());
        assert!(parse(&[Bytes::from_static(b"t"), Bytes::from_static(b"junk")]).is_err());
    }
}
